"""Multi-label emotion classification: one sigmoid per label, a threshold in `compute_metrics`."""

import numpy as np
import torch
from datasets import load_dataset
from sklearn.metrics import f1_score, roc_auc_score
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments

CHECKPOINT = "roberta-base"
dataset = load_dataset("go_emotions", "simplified")
labels = dataset["train"].features["labels"].feature.names
tokenizer = AutoTokenizer.from_pretrained(CHECKPOINT)


def encode(batch):
    encoding = tokenizer(batch["text"], padding="max_length", truncation=True, max_length=64)
    multi_hot = np.zeros((len(batch["text"]), len(labels)), dtype=np.float32)
    for row, ids in enumerate(batch["labels"]):
        multi_hot[row, ids] = 1.0
    encoding["labels"] = multi_hot.tolist()
    return encoding


encoded = dataset.map(encode, batched=True, remove_columns=dataset["train"].column_names)
model = AutoModelForSequenceClassification.from_pretrained(
    CHECKPOINT,
    problem_type="multi_label_classification",
    num_labels=len(labels),
    id2label=dict(enumerate(labels)),
    label2id={name: i for i, name in enumerate(labels)},
)


def compute_metrics(eval_pred):
    logits, references = eval_pred
    probs = torch.sigmoid(torch.tensor(logits)).numpy()
    predictions = (probs >= 0.5).astype(int)
    return {
        "f1_micro": f1_score(references, predictions, average="micro"),
        "roc_auc": roc_auc_score(references, probs, average="micro"),
    }


trainer = Trainer(
    model=model,
    args=TrainingArguments("go-emotions", eval_strategy="epoch", learning_rate=2e-5, num_train_epochs=5),
    train_dataset=encoded["train"],
    eval_dataset=encoded["validation"],
    compute_metrics=compute_metrics,
)
trainer.train()
