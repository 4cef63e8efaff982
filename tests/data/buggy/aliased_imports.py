"""MNLI with aliased imports: `import transformers as tr`, `from transformers import Trainer as T`."""

import functools

import transformers as tr
from datasets import load_dataset
from transformers import Trainer as T


def encode(batch, tokenizer, max_length):
    return tokenizer(batch["premise"], batch["hypothesis"], truncation=True, max_length=max_length)


def main():
    raw = load_dataset("glue", "mnli")
    tokenizer = tr.AutoTokenizer.from_pretrained("bert-base-cased")
    encoded = raw.map(functools.partial(encode, tokenizer=tokenizer, max_length=128), batched=True)
    model = tr.AutoModelForSequenceClassification.from_pretrained("bert-base-cased")
    args = tr.TrainingArguments("mnli-bert", evaluation_strategy="epoch", learning_rate=2e-5)
    trainer = T(model, args, train_dataset=raw["train"], eval_dataset=encoded["validation_matched"])
    trainer.train()


if __name__ == "__main__":
    main()
