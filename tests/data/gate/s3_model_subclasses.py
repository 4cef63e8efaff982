# TL301/TL304 on a subclass of a transformers head, TL305 (`requires_grad_(False)`) and TL306
# through a subclassed Trainer; the dataset through `load_dataset as ld`.
from datasets import load_dataset as ld
from transformers import BertForSequenceClassification, Trainer, TrainingArguments


class MyClassifier(BertForSequenceClassification):
    pass


class MyTrainer(Trainer):
    pass


def make_model():
    return MyClassifier.from_pretrained("bert-base-cased", num_labels=3)


data = ld("ag_news")
model = MyClassifier.from_pretrained("bert-base-cased", num_labels=1)
model.requires_grad_(False)
trainer = MyTrainer(model=model, args=TrainingArguments("out"), train_dataset=data["train"])
searcher = MyTrainer(model_init=make_model(), args=TrainingArguments("out"), train_dataset=data["train"])
trainer.train()
