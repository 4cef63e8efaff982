"""TL206 through `tf_keras` (an aliased `Sequential`), `from tensorflow import keras` (`keras.Model`),
`validation_data=(encoding, labels)` and `train_on_batch`."""
import tensorflow as tf
from tensorflow import keras
from tf_keras import Sequential as Seq
from transformers import AutoTokenizer

tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
texts, labels = ["a", "b"], [0, 1]
model = Seq([tf.keras.layers.Dense(2)])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
enc = tokenizer(texts, padding=True, return_tensors="np")
model.fit(enc, labels, validation_data=(tokenizer(texts, padding=True, return_tensors="np"), labels))
inputs = keras.Input(shape=(8,), dtype="int32", name="input_ids")
functional = keras.Model(inputs=inputs, outputs=keras.layers.Dense(2)(inputs))
functional.train_on_batch(tokenizer(texts, padding="max_length", max_length=8, return_tensors="np"), labels)
