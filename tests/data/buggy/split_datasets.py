"""Splits loaded separately with `split=`: the raw training split is given to the Trainer although
its tokenized version exists, and the evaluation data comes from `evaluate.load` by mistake."""

import evaluate
import numpy as np
from datasets import load_dataset
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    DataCollatorWithPadding,
    Trainer,
    TrainingArguments,
)

tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
train = load_dataset("glue", "sst2", split="train")
validation = evaluate.load("glue", "sst2")["validation"]


def encode(batch):
    return tokenizer(batch["sentence"], truncation=True)


train_enc = train.map(encode, batched=True)
validation_enc = validation.map(encode, batched=True)
model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
accuracy = evaluate.load("accuracy")


def compute_metrics(eval_pred):
    logits, labels = eval_pred
    return accuracy.compute(predictions=np.argmax(logits, axis=-1), references=labels)


trainer = Trainer(
    model=model,
    args=TrainingArguments("sst2", eval_strategy="epoch"),
    train_dataset=train,
    eval_dataset=validation_enc,
    data_collator=DataCollatorWithPadding(tokenizer),
    compute_metrics=compute_metrics,
)
trainer.train()
