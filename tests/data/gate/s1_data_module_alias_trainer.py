"""TL101 through `import transformers as tr` / `import datasets as hfds`: the Trainer and load_dataset
are attribute names, not imported names."""
import datasets as hfds
import transformers as tr

raw = hfds.load_dataset("glue", "sst2")
tokenizer = tr.AutoTokenizer.from_pretrained("bert-base-uncased")


def encode(batch):
    return tokenizer(batch["sentence"], truncation=True)


tokenized = raw.map(encode, batched=True)
model = tr.AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
trainer = tr.Trainer(model=model, args=tr.TrainingArguments("out"), train_dataset=raw["train"],
                     processing_class=tokenizer)
trainer.train()
