# /// script
# dependencies = ["transformers<5", "tensorflow", "tf-keras", "datasets"]
# ///
"""Keras names (`from keras.losses import ...`), the loss held in a variable, labels left
in the feature dict, and the model built in a helper inside main()."""

from datasets import load_dataset
from keras.losses import SparseCategoricalCrossentropy
from transformers import AdamWeightDecay, AutoTokenizer, TFAutoModelForSequenceClassification


def make_model(checkpoint):
    return TFAutoModelForSequenceClassification.from_pretrained(checkpoint, num_labels=6)


def main():
    checkpoint = "distilbert-base-uncased"
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    ds = load_dataset("emotion")
    ds = ds.map(lambda b: tokenizer(b["text"], padding="max_length", truncation=True), batched=True)
    feature_columns = ["input_ids", "attention_mask", "label"]
    train = ds["train"].to_tf_dataset(columns=feature_columns, batch_size=16, shuffle=True)
    model = make_model(checkpoint)
    loss_fn = SparseCategoricalCrossentropy()
    model.compile(optimizer=AdamWeightDecay(learning_rate=3e-5), loss=loss_fn)
    model.fit(train, epochs=3)


main()
