"""A snippet as documentation and forum answers show it: the names are used without any import
(the reader is expected to have `from transformers import ...` / `from datasets import ...` already)."""

raw = load_dataset("glue", "mnli")
tokenizer = AutoTokenizer.from_pretrained("bert-base-cased")
encoded = raw.map(lambda b: tokenizer(b["premise"], b["hypothesis"], truncation=True), batched=True)
model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased")
trainer = Trainer(model=model, args=TrainingArguments("out"), train_dataset=encoded["train"])
trainer.train()
