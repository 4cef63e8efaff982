"""A script written for older releases: load_metric, transformers.AdamW, TFTrainer, tokenizer=,
evaluation_strategy=, and a metric loaded where the dataset was meant."""

import datasets
import evaluate
import numpy as np
import transformers
from datasets import load_metric
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    DataCollatorWithPadding,
    TFTrainer,
    Trainer,
    TrainingArguments,
)
from transformers.optimization import AdamW

raw = evaluate.load("rotten_tomatoes")
tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
tokenized = raw.map(lambda b: tokenizer(b["text"], truncation=True), batched=True)
model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
accuracy = load_metric("accuracy")
f1 = datasets.load_metric("f1")


def compute_metrics(eval_pred):
    logits, labels = eval_pred
    predictions = np.argmax(logits, axis=-1)
    scores = accuracy.compute(predictions=predictions, references=labels)
    scores.update(f1.compute(predictions=predictions, references=labels))
    return scores


optimizer = AdamW(model.parameters(), lr=2e-5)
scheduler_optimizer = transformers.AdamW(model.parameters(), lr=2e-5)
args = TrainingArguments("rt-bert", evaluation_strategy="epoch", save_strategy="epoch")
trainer = Trainer(
    model=model,
    args=args,
    train_dataset=tokenized["train"],
    eval_dataset=tokenized["validation"],
    data_collator=DataCollatorWithPadding(tokenizer),
    tokenizer=tokenizer,
    compute_metrics=compute_metrics,
    optimizers=(optimizer, None),
)
trainer.train()
tf_trainer = TFTrainer
