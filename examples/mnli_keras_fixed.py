"""Fine-tune a BERT-style model on MNLI with Keras `fit`: the course script with every bug fixed."""

import os

# transformers 4 TF models are tf-keras (Keras 2) models; since TensorFlow 2.16 `tensorflow.keras` is
# Keras 3 unless this is set before tensorflow is imported (TL808).
os.environ["TF_USE_LEGACY_KERAS"] = "1"

from datasets import load_dataset
from tensorflow.keras.optimizers import Adam
from transformers import AutoTokenizer, DataCollatorWithPadding, TFAutoModelForSequenceClassification

CHECKPOINT = "distilbert-base-uncased"

raw_datasets = load_dataset("glue", "mnli")
tokenizer = AutoTokenizer.from_pretrained(CHECKPOINT)


def preprocess(examples):
    return tokenizer(examples["premise"], examples["hypothesis"], truncation=True)


tokenized = raw_datasets.map(preprocess, batched=True)
collator = DataCollatorWithPadding(tokenizer, return_tensors="np")
train_set = tokenized["train"].to_tf_dataset(
    columns=["input_ids", "attention_mask", "labels"], batch_size=16, shuffle=True, collate_fn=collator
)

model = TFAutoModelForSequenceClassification.from_pretrained(CHECKPOINT, num_labels=3)
# no `loss=`: the model computes its own loss from the labels in the inputs
model.compile(optimizer=Adam(learning_rate=5e-5))
model.fit(train_set)
