"""Tokenization by a callable class (`ds.map(Preprocessor(tokenizer))`), a dataset loaded by a helper
with `split=`, and a Trainer without tokenizer or collator."""

from datasets import load_dataset
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments


class Preprocessor:
    def __init__(self, tokenizer, max_length=256):
        self.tokenizer = tokenizer
        self.max_length = max_length

    def __call__(self, batch):
        return self.tokenizer(batch["text"], truncation=True, max_length=self.max_length)


def load_split(split, tokenizer):
    ds = load_dataset("imdb", split=split)
    return ds.map(Preprocessor(tokenizer), batched=True)


def main():
    tokenizer = AutoTokenizer.from_pretrained("distilbert-base-uncased")
    train = load_split("train", tokenizer)
    test = load_split("test", tokenizer)
    model = AutoModelForSequenceClassification.from_pretrained("distilbert-base-uncased", num_labels=2)
    trainer = Trainer(model=model, args=TrainingArguments("imdb"), train_dataset=train, eval_dataset=test)
    trainer.train()


if __name__ == "__main__":
    main()
