# /// script
# requires-python = ">=3.10"
# dependencies = ["transformers<5", "tensorflow>=2.16", "tf-keras", "datasets", "evaluate"]
# ///
"""Keras fine-tuning with the labels outside the feature dict (`label_cols`) and a Keras loss
computed from logits."""

import os

# transformers 4 TF models are tf-keras (Keras 2) models: make `tensorflow.keras` tf-keras too.
os.environ["TF_USE_LEGACY_KERAS"] = "1"

import tensorflow as tf
from datasets import load_dataset
from transformers import AutoTokenizer, DataCollatorWithPadding, TFAutoModelForSequenceClassification


def build_datasets(tokenizer, batch_size=32):
    raw = load_dataset("ag_news")
    encoded = raw.map(lambda batch: tokenizer(batch["text"], truncation=True, max_length=256), batched=True)
    collator = DataCollatorWithPadding(tokenizer=tokenizer, return_tensors="np")
    train = encoded["train"].to_tf_dataset(
        columns=["input_ids", "attention_mask"],
        label_cols=["label"],
        shuffle=True,
        batch_size=batch_size,
        collate_fn=collator,
    )
    test = encoded["test"].to_tf_dataset(
        columns=["input_ids", "attention_mask"],
        label_cols=["label"],
        shuffle=False,
        batch_size=batch_size,
        collate_fn=collator,
    )
    return train, test


def main():
    checkpoint = "bert-base-uncased"
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    train_ds, test_ds = build_datasets(tokenizer)
    model = TFAutoModelForSequenceClassification.from_pretrained(checkpoint, num_labels=4)
    num_steps = len(train_ds) * 2
    schedule = tf.keras.optimizers.schedules.PolynomialDecay(
        initial_learning_rate=5e-5, end_learning_rate=0.0, decay_steps=num_steps
    )
    model.compile(
        optimizer=tf.keras.optimizers.Adam(learning_rate=schedule),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    model.fit(train_ds, validation_data=test_ds, epochs=2)


if __name__ == "__main__":
    main()
