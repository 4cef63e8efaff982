"""Every Trainer argument given by position: `Trainer(model, args, collator, train_ds, eval_ds)`."""

from datasets import load_dataset
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments

tokenizer = AutoTokenizer.from_pretrained("distilbert-base-uncased")
raw = load_dataset("yelp_review_full")
tokenized = raw.map(lambda batch: tokenizer(batch["text"], truncation=True), batched=True)
model = AutoModelForSequenceClassification.from_pretrained("distilbert-base-uncased", num_labels=5)
args = TrainingArguments("yelp")

# raw text as the training set, and no collator (an explicit None is no collator)
trainer = Trainer(model, args, None, raw["train"], tokenized["test"])
trainer.train()
