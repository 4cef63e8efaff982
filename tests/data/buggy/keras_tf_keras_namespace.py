# /// script
# dependencies = ["transformers<5", "tensorflow", "tf-keras", "datasets"]
# ///
"""Keras through `tf.keras`: a probability loss object on logits and a string optimizer."""

import tensorflow as tf
from datasets import load_dataset
from transformers import AutoTokenizer, DataCollatorWithPadding, TFAutoModelForSequenceClassification

checkpoint = "bert-base-cased"
dataset = load_dataset("ag_news")
tokenizer = AutoTokenizer.from_pretrained(checkpoint)
tokenized = dataset.map(lambda b: tokenizer(b["text"], truncation=True), batched=True)
collator = DataCollatorWithPadding(tokenizer, return_tensors="np")
tf_train = tokenized["train"].to_tf_dataset(
    columns=["input_ids", "attention_mask"], label_cols=["label"], batch_size=32, shuffle=True, collate_fn=collator
)
model = TFAutoModelForSequenceClassification.from_pretrained(checkpoint, num_labels=4)
model.compile(
    optimizer="adamw",
    loss=tf.keras.losses.SparseCategoricalCrossentropy(),
    metrics=["accuracy"],
)
model.fit(tf_train, epochs=2)
