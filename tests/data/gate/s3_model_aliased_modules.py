# TL301 and TL303 through module aliases and an `as` import: `tr.AutoModelForSequenceClassification`
# is an attribute, `hf.load_dataset` too, and `Clf` is a local name for the classifier class.
import datasets as hf
import transformers as tr
from transformers import AutoModelForSequenceClassification as Clf

raw = hf.load_dataset("glue", "mnli")
tokenizer = tr.AutoTokenizer.from_pretrained("bert-base-cased")
tokenized = raw.map(lambda b: tokenizer(b["premise"], b["hypothesis"], truncation=True), batched=True)
model = tr.AutoModelForSequenceClassification.from_pretrained("bert-base-cased")
trainer = tr.Trainer(model=model, args=tr.TrainingArguments("out"), train_dataset=tokenized["train"])
trainer.train()

decoder = Clf.from_pretrained("gpt2", num_labels=3)
