"""TL202 (string columns) through `import transformers as tr`: `remove_unused_columns=False` held by a
name, the tokenizer as `processing_class` (the default padding collator's)."""
import datasets
import transformers as tr

KEEP = False
raw = datasets.load_dataset("glue", "mrpc")
tokenizer = tr.AutoTokenizer.from_pretrained("bert-base-uncased")
tokenized = raw.map(lambda b: tokenizer(b["sentence1"], b["sentence2"], truncation=True), batched=True)
model = tr.AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
args = tr.TrainingArguments("out", remove_unused_columns=KEEP)
trainer = tr.Trainer(model, args, train_dataset=tokenized["train"], processing_class=tokenizer)
