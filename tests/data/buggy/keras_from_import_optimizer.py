# /// script
# dependencies = ["transformers<5", "tensorflow", "tf-keras", "datasets"]
# ///
"""`from tensorflow.keras.optimizers import Adam` is imported, but a string optimizer is compiled;
the loss is a string that expects probabilities; labels travel in the feature dict."""

from datasets import load_dataset
from tensorflow.keras.optimizers import Adam
from transformers import AutoTokenizer, DataCollatorWithPadding, TFAutoModelForSequenceClassification

raw = load_dataset("rotten_tomatoes")
tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
encoded = raw.map(lambda b: tokenizer(b["text"], truncation=True), batched=True)
collate = DataCollatorWithPadding(tokenizer, return_tensors="np")
train_set = encoded["train"].to_tf_dataset(
    columns=["input_ids", "attention_mask", "label"], batch_size=8, shuffle=True, collate_fn=collate
)
model = TFAutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
optimizer_name = "adam"
model.compile(optimizer=optimizer_name, loss="sparse_categorical_crossentropy")
model.fit(train_set)
