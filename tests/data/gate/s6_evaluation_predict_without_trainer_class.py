"""TL604 where the Trainer comes from a helper of the file, under an alias: the call site never names the
Trainer class (only the import does), and the receiver's name says nothing."""
from my_project.training import load_test_set, model_and_args
from sklearn.metrics import f1_score
from transformers import Trainer as HFTrainer


def build():
    model, args = model_and_args()
    return HFTrainer(model=model, args=args)


runner = build()
test_set = load_test_set()  # a torch dataset
out = runner.predict(test_set)
y_pred = out.label_ids
print(f1_score(test_set["label"], out[1], average="macro"))  # TL604
print(f1_score(test_set["label"], y_pred, average="macro"))  # TL604
