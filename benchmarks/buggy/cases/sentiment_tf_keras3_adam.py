# /// script
# dependencies = ["tensorflow>=2.16", "transformers<5", "pandas"]
# ///
# (the environment the bug was reported in: TensorFlow 2.16+, i.e. Keras 3)
# A 6-class sentiment classifier: DistilBERT from transformers compiled with
# tensorflow.keras.optimizers.Adam, inputs tokenized to tensors up front.
# evidence: tensorflow/tensorflow#64250 (comment of 2025-06-14: "Could not interpret optimizer identifier:
# <keras.src.optimizers.adam.Adam object>" with TFDistilBertForSequenceClassification)
import pandas as pd
from transformers import TFDistilBertForSequenceClassification, DistilBertTokenizer
from tensorflow.keras.optimizers import Adam
from tensorflow.keras.callbacks import EarlyStopping

train_data = pd.read_csv("train.csv")
test_data = pd.read_csv("test.csv")
model_name = "distilbert-base-uncased"
tokenizer = DistilBertTokenizer.from_pretrained(model_name)
model = TFDistilBertForSequenceClassification.from_pretrained(model_name, num_labels=6)

X_train_enc = tokenizer(train_data["text"].tolist(), padding=True, truncation=True, max_length=200, return_tensors="tf")
X_test_enc = tokenizer(test_data["text"].tolist(), padding=True, truncation=True, max_length=200, return_tensors="tf")

model.compile(optimizer=Adam(learning_rate=1e-5), loss="sparse_categorical_crossentropy", metrics=["accuracy"])  # BUG TL808: a Keras 3 optimizer given to a tf-keras (Keras 2) transformers model
early_stopping = EarlyStopping(monitor="val_loss", patience=3, restore_best_weights=True)
model.fit(
    {"input_ids": X_train_enc["input_ids"], "attention_mask": X_train_enc["attention_mask"]},
    train_data["label"].values,
    validation_data=({"input_ids": X_test_enc["input_ids"], "attention_mask": X_test_enc["attention_mask"]}, test_data["label"].values),
    epochs=10,
    batch_size=16,
    callbacks=[early_stopping],
)
