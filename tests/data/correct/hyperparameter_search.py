"""Hyperparameter search with `model_init`, on IMDb padded to a fixed length (no collator needed)."""

import evaluate
import numpy as np
from datasets import load_dataset
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments

MODEL = "distilbert-base-uncased"
imdb = load_dataset("imdb")
tokenizer = AutoTokenizer.from_pretrained(MODEL)


def tokenize(examples):
    return tokenizer(examples["text"], padding="max_length", truncation=True, max_length=256)


tokenized_imdb = imdb.map(tokenize, batched=True)
train = tokenized_imdb["train"].shuffle(seed=42).select(range(5000))
test = tokenized_imdb["test"].shuffle(seed=42).select(range(1000))
accuracy = evaluate.load("accuracy")


def model_init(trial=None):
    return AutoModelForSequenceClassification.from_pretrained(MODEL, num_labels=2)


def compute_metrics(eval_pred):
    logits, labels = eval_pred
    return accuracy.compute(predictions=logits.argmax(axis=-1), references=labels)


def hp_space(trial):
    return {
        "learning_rate": trial.suggest_float("learning_rate", 1e-5, 1e-4, log=True),
        "per_device_train_batch_size": trial.suggest_categorical("per_device_train_batch_size", [16, 32]),
    }


trainer = Trainer(
    model_init=model_init,
    args=TrainingArguments("imdb-search", eval_strategy="epoch", num_train_epochs=1),
    train_dataset=train,
    eval_dataset=test,
    compute_metrics=compute_metrics,
)
best = trainer.hyperparameter_search(direction="maximize", backend="optuna", hp_space=hp_space, n_trials=10)
print(best)
