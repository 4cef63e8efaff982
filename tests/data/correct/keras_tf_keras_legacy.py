# /// script
# requires-python = ">=3.10"
# dependencies = ["transformers<5", "tensorflow>=2.16", "tf-keras", "datasets", "evaluate"]
# ///
"""transformers 4.x TF models under Keras 3 need the legacy `tf_keras` package: optimizer and loss
come from it, with an explicit learning rate and `from_logits=True`."""

import os

os.environ["TF_USE_LEGACY_KERAS"] = "1"

import tf_keras
from datasets import load_dataset
from transformers import AutoTokenizer, TFAutoModelForSequenceClassification

tokenizer = AutoTokenizer.from_pretrained("distilbert-base-uncased")
ds = load_dataset("rotten_tomatoes")
ds = ds.map(lambda b: tokenizer(b["text"], padding="max_length", truncation=True, max_length=128), batched=True)
train = ds["train"].to_tf_dataset(
    columns=["input_ids", "attention_mask"], label_cols="label", batch_size=16, shuffle=True
)
val = ds["validation"].to_tf_dataset(columns=["input_ids", "attention_mask"], label_cols="label", batch_size=16)
model = TFAutoModelForSequenceClassification.from_pretrained("distilbert-base-uncased", num_labels=2)
model.compile(
    optimizer=tf_keras.optimizers.Adam(learning_rate=3e-5),
    loss=tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=[tf_keras.metrics.SparseCategoricalAccuracy("accuracy")],
)
model.fit(train, validation_data=val, epochs=2)
