# /// script
# dependencies = ["transformers==4.26.1", "ray[tune]", "scikit-learn", "pandas"]
# ///
# (the versions of the time, February 2023)
# Hyper-parameter search of a DistilRoBERTa classifier (11 classes) with Ray Tune's Population Based
# Training through `trainer.hyperparameter_search`: the best-model metric is "eval_f1", but the script's
# `compute_metrics` returns `macro_f1`, `macro_precision`, `macro_recall` and `balanced_accuracy`, so the
# Trainer fails at the first evaluation with KeyError: 'eval_f1'. (The search space and scheduler are
# written in the shape of the script; the data loading it does not show is stubbed.)
# evidence: huggingface/transformers#21659 (KeyError: 'eval_f1' when hyperparameter tuning DistilRoberta
# with RayTune and PBT; the maintainer: the metric used with `metric_for_best_model="eval_f1"` does not
# exist, compute_metrics only returns macro_f1, macro_precision, macro_recall, balanced_accuracy;
# `eval_macro_f1` would work)
import numpy as np
import pandas as pd
import torch
from ray import tune
from ray.tune.schedulers import PopulationBasedTraining
from sklearn.metrics import balanced_accuracy_score, f1_score, precision_score, recall_score
from transformers import (
    AutoConfig,
    AutoModelForSequenceClassification,
    AutoTokenizer,
    DataCollatorWithPadding,
    Trainer,
    TrainingArguments,
)

df = pd.read_csv("train.csv")
small_X_train, small_y_train = df["text"][:800].tolist(), df["label"][:800].tolist()
small_X_val, small_y_val = df["text"][800:1000].tolist(), df["label"][800:1000].tolist()

model_checkpoint = "distilroberta-base"
config = AutoConfig.from_pretrained(model_checkpoint, num_labels=11)
tokenizer = AutoTokenizer.from_pretrained(model_checkpoint)

small_X_val_tokenized = tokenizer(small_X_val, truncation=True)
small_X_train_tokenized = tokenizer(small_X_train, truncation=True)


class Dataset(torch.utils.data.Dataset):
    def __init__(self, encodings, labels):
        self.encodings = encodings
        self.labels = labels

    def __getitem__(self, idx):
        item = {key: torch.tensor(val[idx]) for key, val in self.encodings.items()}
        item["labels"] = torch.tensor(self.labels[idx])
        return item

    def __len__(self):
        return len(self.labels)


small_train_dataset = Dataset(small_X_train_tokenized, small_y_train)
small_val_dataset = Dataset(small_X_val_tokenized, small_y_val)

data_collator = DataCollatorWithPadding(tokenizer=tokenizer)


def model_init():
    return AutoModelForSequenceClassification.from_pretrained(model_checkpoint, config=config)


def compute_metrics(eval_pred):
    predictions, labels = eval_pred
    predictions = np.argmax(predictions, axis=1)
    macro_f1 = f1_score(labels, predictions, average="macro")
    macro_precision = precision_score(labels, predictions, average="macro")
    macro_recall = recall_score(labels, predictions, average="macro")
    acc = balanced_accuracy_score(labels, predictions)
    return {
        "macro_f1": macro_f1,
        "macro_precision": macro_precision,
        "macro_recall": macro_recall,
        "balanced_accuracy": acc,
    }


training_args = TrainingArguments(
    output_dir="./results",
    learning_rate=1e-5,
    per_device_train_batch_size=8,
    per_device_eval_batch_size=8,
    num_train_epochs=3,
    weight_decay=0.01,
    evaluation_strategy="epoch",
    save_strategy="epoch",
    load_best_model_at_end=True,
    metric_for_best_model="eval_f1",  # BUG TL606: compute_metrics returns macro_f1, not f1: KeyError 'eval_f1'
    report_to="none",
)

trainer = Trainer(
    model_init=model_init,
    args=training_args,
    train_dataset=small_train_dataset,
    eval_dataset=small_val_dataset,
    tokenizer=tokenizer,
    data_collator=data_collator,
    compute_metrics=compute_metrics,
)

scheduler = PopulationBasedTraining(
    time_attr="training_iteration",
    metric="eval_f1",
    mode="max",
    perturbation_interval=1,
    hyperparam_mutations={
        "weight_decay": tune.uniform(0.0, 0.3),
        "learning_rate": tune.uniform(1e-5, 5e-5),
        "per_device_train_batch_size": [8, 16, 32],
    },
)

best_run = trainer.hyperparameter_search(
    hp_space=lambda _: {},
    backend="ray",
    n_trials=4,
    scheduler=scheduler,
    direction="maximize",
)
