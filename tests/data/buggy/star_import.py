"""MNLI with `from transformers import *` (the form of many older tutorials): every name the file uses
comes from the star import, so nothing is imported by name."""

from datasets import load_dataset
from transformers import *

raw = load_dataset("glue", "mnli")
tokenizer = AutoTokenizer.from_pretrained("bert-base-cased")


def tokenize(batch):
    return tokenizer(batch["premise"], batch["hypothesis"], truncation=True)


encoded = raw.map(tokenize, batched=True)
model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased")
args = TrainingArguments("mnli-bert", learning_rate=2e-5, num_train_epochs=3)
trainer = Trainer(model=model, args=args, train_dataset=encoded["train"], eval_dataset=encoded["validation_matched"])
trainer.train()
