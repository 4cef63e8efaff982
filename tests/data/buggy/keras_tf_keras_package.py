# /// script
# dependencies = ["transformers<5", "tensorflow", "tf-keras", "datasets"]
# ///
"""The legacy `tf_keras` package: `from_logits=False` spelled out, a positional string optimizer."""

import tf_keras
from datasets import load_dataset
from transformers import AutoTokenizer, TFAutoModelForSequenceClassification

tokenizer = AutoTokenizer.from_pretrained("distilbert-base-uncased")
imdb = load_dataset("imdb")
imdb = imdb.map(lambda b: tokenizer(b["text"], padding="max_length", truncation=True, max_length=256), batched=True)
train = imdb["train"].to_tf_dataset(
    columns=["input_ids", "attention_mask"], label_cols="label", batch_size=16, shuffle=True
)
model = TFAutoModelForSequenceClassification.from_pretrained("distilbert-base-uncased", num_labels=2)
model.compile("rmsprop", tf_keras.losses.SparseCategoricalCrossentropy(from_logits=False), metrics=["accuracy"])
model.fit(train, epochs=1)
