"""Sentence similarity as regression (GLUE STS-B): one output, an MSE loss, correlation metrics."""

import numpy as np
from datasets import load_dataset
from scipy.stats import pearsonr, spearmanr
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    DataCollatorWithPadding,
    Trainer,
    TrainingArguments,
)

checkpoint = "bert-base-uncased"
raw = load_dataset("glue", "stsb")
tokenizer = AutoTokenizer.from_pretrained(checkpoint)
tokenized = raw.map(lambda b: tokenizer(b["sentence1"], b["sentence2"], truncation=True), batched=True)
model = AutoModelForSequenceClassification.from_pretrained(checkpoint, num_labels=1)


def compute_metrics(eval_pred):
    predictions, labels = eval_pred
    predictions = np.squeeze(predictions)
    return {"pearson": pearsonr(predictions, labels)[0], "spearmanr": spearmanr(predictions, labels)[0]}


trainer = Trainer(
    model=model,
    args=TrainingArguments("stsb-bert", eval_strategy="epoch", learning_rate=2e-5, num_train_epochs=3),
    train_dataset=tokenized["train"],
    eval_dataset=tokenized["validation"],
    data_collator=DataCollatorWithPadding(tokenizer),
    compute_metrics=compute_metrics,
)
trainer.train()
