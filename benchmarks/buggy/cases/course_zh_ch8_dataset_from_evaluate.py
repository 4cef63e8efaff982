# /// script
# dependencies = ["transformers<4.46", "datasets<3", "evaluate", "numpy"]
# ///
# (the versions of the time: `evaluation_strategy` and `Trainer(tokenizer=)` were current)
# The Chinese translation of the course's chapter 8 "Debugging the training pipeline" (PyTorch), its last,
# fully debugged script: DistilBERT on GLUE MNLI with the Trainer. When the course moved from
# `datasets.load_metric` to `evaluate.load`, the translation's dataset line was rewritten too, so the script
# loads the GLUE metric and then calls `.map` on it ('Glue' object has no attribute 'map'); the English
# original of the same script (chapters/en/chapter8/4.mdx) loads it with `load_dataset("glue", "mnli")`.
# evidence: huggingface/course@ae1b02da2a69b1183eff5c561ccf3ebf2c76adb3 (chapters/zh-CN/chapter8/4.mdx:
# `-raw_datasets = load_dataset("glue", "mnli")` / `+raw_datasets = evaluate.load("glue", "mnli")`, next to
# the intended `metric = load_metric(...)` -> `evaluate.load(...)` change; still so in the current course)
import numpy as np
from datasets import load_dataset
import evaluate
from transformers import (
    AutoTokenizer,
    AutoModelForSequenceClassification,
    DataCollatorWithPadding,
    TrainingArguments,
    Trainer,
)

raw_datasets = evaluate.load("glue", "mnli")  # BUG TL806: a metric module, not the dataset: `.map` fails

model_checkpoint = "distilbert-base-uncased"
tokenizer = AutoTokenizer.from_pretrained(model_checkpoint)


def preprocess_function(examples):
    return tokenizer(examples["premise"], examples["hypothesis"], truncation=True)


tokenized_datasets = raw_datasets.map(preprocess_function, batched=True)
model = AutoModelForSequenceClassification.from_pretrained(model_checkpoint, num_labels=3)

args = TrainingArguments(
    f"distilbert-finetuned-mnli",
    evaluation_strategy="epoch",
    save_strategy="epoch",
    learning_rate=2e-5,
    num_train_epochs=3,
    weight_decay=0.01,
)

metric = evaluate.load("glue", "mnli")


def compute_metrics(eval_pred):
    predictions, labels = eval_pred
    predictions = np.argmax(predictions, axis=1)
    return metric.compute(predictions=predictions, references=labels)


data_collator = DataCollatorWithPadding(tokenizer=tokenizer)

trainer = Trainer(
    model,
    args,
    train_dataset=tokenized_datasets["train"],
    eval_dataset=tokenized_datasets["validation_matched"],
    compute_metrics=compute_metrics,
    data_collator=data_collator,
    tokenizer=tokenizer,
)
trainer.train()
