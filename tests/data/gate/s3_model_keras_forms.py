# TL305 (Keras `trainable = False` on the whole model), TL307 (`from keras import mixed_precision`,
# a model built with `Sequential` first) and TL302 through a Keras `fit` on `to_tf_dataset`.
from datasets import load_dataset
from keras import mixed_precision
from tensorflow.keras import Sequential, layers
from transformers import TFAutoModelForTokenClassification


def build():
    net = Sequential([layers.Dense(16, activation="relu"), layers.Dense(2)])
    mixed_precision.set_global_policy("mixed_float16")
    return net


net = Sequential([layers.Dense(16, activation="relu"), layers.Dense(2)])
net.trainable = False
net.compile(optimizer="adam", loss="mse")
net.fit(x_train, y_train, epochs=2)

raw = load_dataset("imdb")
tagger = TFAutoModelForTokenClassification.from_pretrained("bert-base-cased", num_labels=2)
tf_train = raw["train"].to_tf_dataset(columns=["input_ids", "attention_mask"], label_cols="label", batch_size=8)
tagger.compile(optimizer="adam")
tagger.fit(tf_train, epochs=1)
