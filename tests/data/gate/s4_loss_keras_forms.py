# TL403 on a Keras Sequential whose last layer says "softmax" in a string only (no activation word
# in the code), TL401/TL402 with the loss given positionally, TL404 with an aliased module and a
# one-element `label_cols` list.
import tensorflow as tf
import transformers as tr
from datasets import load_dataset
from tensorflow import keras

clf = keras.Sequential([keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10, activation="softmax")])
clf.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))

raw = load_dataset("glue", "sst2")
model = tr.TFAutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
tf_train = raw["train"].to_tf_dataset(columns=["input_ids", "attention_mask", "label"], batch_size=8)
model.compile(tf.keras.optimizers.Adam(3e-5), "sparse_categorical_crossentropy")
model.fit(tf_train, epochs=1)

qa = tr.TFAutoModelForQuestionAnswering.from_pretrained("distilbert-base-cased")
qa_train = raw["train"].to_tf_dataset(columns=["input_ids", "attention_mask"], label_cols=["start_positions"])
qa.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
qa.fit(qa_train, epochs=1)
