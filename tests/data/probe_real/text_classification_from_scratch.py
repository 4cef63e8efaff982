"""Text sentiment classification from raw text files with plain Keras 3.

Our own transcription, for the trainlint probe tests, in the shape of keras-team/keras-io
examples/nlp/text_classification_from_scratch.py (Apache-2.0; read at commit
01ae2db402523e96f804c6fc3b0a59582e6a671e): `keras.utils.text_dataset_from_directory` with a
validation split, a custom standardization, `TextVectorization` adapted on the text-only dataset,
`vectorize_text` mapped over the datasets, an Embedding + Conv1D model with a sigmoid output,
`compile(loss="binary_crossentropy", optimizer="adam")`, `fit`. Adapted to local data: the aclImdb
folder (train/{pos,neg}, test/{pos,neg}) is the directory named by ACLIMDB_DIR (the real script
downloads it with `keras.utils.get_file`), and the model constants are smaller.
"""

import os

os.environ["KERAS_BACKEND"] = "tensorflow"

import re
import string

import keras
import tensorflow as tf
from keras import layers

dataset_dir = os.environ.get("ACLIMDB_DIR")
if not dataset_dir:
    dataset_url = "https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz"
    dataset_zip = keras.utils.get_file("aclImdb_v1.tar.gz", dataset_url, extract=True)
    dataset_dir = os.path.join(os.path.dirname(dataset_zip), "aclImdb")

batch_size = 32
train_dir = os.path.join(dataset_dir, "train")
test_dir = os.path.join(dataset_dir, "test")

raw_train_ds = keras.utils.text_dataset_from_directory(
    train_dir,
    batch_size=batch_size,
    validation_split=0.2,
    subset="training",
    seed=1337,
    class_names=["pos", "neg"],
)
raw_val_ds = keras.utils.text_dataset_from_directory(
    train_dir,
    batch_size=batch_size,
    validation_split=0.2,
    subset="validation",
    seed=1337,
    class_names=["pos", "neg"],
)
raw_test_ds = keras.utils.text_dataset_from_directory(test_dir, batch_size=batch_size)

print(f"Number of batches in raw_train_ds: {raw_train_ds.cardinality()}")
print(f"Number of batches in raw_val_ds: {raw_val_ds.cardinality()}")

for text_batch, label_batch in raw_train_ds.take(1):
    for i in range(2):
        print(text_batch.numpy()[i])
        print(label_batch.numpy()[i])


def custom_standardization(input_data):
    lowercase = tf.strings.lower(input_data)
    stripped_html = tf.strings.regex_replace(lowercase, "<br />", " ")
    return tf.strings.regex_replace(stripped_html, f"[{re.escape(string.punctuation)}]", "")


# Model constants (the real script: 20000, 128, 500).
max_features = 2000
embedding_dim = 32
sequence_length = 100

vectorize_layer = keras.layers.TextVectorization(
    standardize=custom_standardization,
    max_tokens=max_features,
    output_mode="int",
    output_sequence_length=sequence_length,
)

# Let's make a text-only dataset (no labels):
text_ds = raw_train_ds.map(lambda x, y: x)
vectorize_layer.adapt(text_ds)


def vectorize_text(text, label):
    text = tf.expand_dims(text, -1)
    return vectorize_layer(text), label


train_ds = raw_train_ds.map(vectorize_text)
val_ds = raw_val_ds.map(vectorize_text)
test_ds = raw_test_ds.map(vectorize_text)

train_ds = train_ds.cache().prefetch(buffer_size=10)
val_ds = val_ds.cache().prefetch(buffer_size=10)
test_ds = test_ds.cache().prefetch(buffer_size=10)

# A integer input for vocab indices.
inputs = keras.Input(shape=(None,), dtype="int64")
x = layers.Embedding(max_features, embedding_dim)(inputs)
x = layers.Dropout(0.5)(x)
# Conv1D + global max pooling
x = layers.Conv1D(embedding_dim, 7, padding="valid", activation="relu", strides=3)(x)
x = layers.Conv1D(embedding_dim, 7, padding="valid", activation="relu", strides=3)(x)
x = layers.GlobalMaxPooling1D()(x)
x = layers.Dense(embedding_dim, activation="relu")(x)
x = layers.Dropout(0.5)(x)
# We project onto a single unit output layer, and squash it with a sigmoid:
predictions = layers.Dense(1, activation="sigmoid", name="predictions")(x)

model = keras.Model(inputs, predictions)
model.compile(loss="binary_crossentropy", optimizer="adam", metrics=["accuracy"])

epochs = 3
model.fit(train_ds, validation_data=val_ds, epochs=epochs)

model.evaluate(test_ds)
