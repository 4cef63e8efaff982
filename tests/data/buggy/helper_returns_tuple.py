"""The datasets come back from a helper as a tuple (`train_ds, test_ds = build_datasets(tok)`), tokenized
without padding, and the Trainer gets neither the tokenizer nor a collator."""

from datasets import load_dataset
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments


def build_datasets(tokenizer, max_length=256):
    raw = load_dataset("ag_news")
    encoded = raw.map(lambda b: tokenizer(b["text"], truncation=True, max_length=max_length), batched=True)
    return encoded["train"], encoded["test"]


def build_model(checkpoint):
    return AutoModelForSequenceClassification.from_pretrained(checkpoint)


def main():
    checkpoint = "bert-base-uncased"
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    train_ds, test_ds = build_datasets(tokenizer)
    model = build_model(checkpoint)
    trainer = Trainer(model=model, args=TrainingArguments("ag-news"), train_dataset=train_ds, eval_dataset=test_ds)
    trainer.train()


if __name__ == "__main__":
    main()
