"""TL604 where the Trainer comes from a helper in another module: only the receiver's name says
"trainer" (the file never names the Trainer class)."""
from my_project.training import build, load_test_set
from sklearn.metrics import f1_score

my_trainer_v2 = build()
test_set = load_test_set()  # a torch dataset
out = my_trainer_v2.predict(test_set)
y_pred = out.label_ids  # TL604
print(f1_score(test_set["label"], out[1], average="macro"))  # TL604
