# /// script
# dependencies = ["tensorflow==2.0.0", "pandas", "matplotlib"]
# ///
# (the book's environment: TensorFlow 2.0 on Colab)
# A TensorFlow 2 book's wine-type classifier (chapter 5, examples 5.7-5.9), as printed: the labels are
# one-hot encoded with tf.keras.utils.to_categorical(num_classes=2) in one notebook cell, the softmax
# model is built and compiled in the next with loss='sparse_categorical_crossentropy', which expects
# integer class ids; fit fails on the label shape.
# evidence: wikibook/tf2#8 ("예제 5.8에 errata가 있네요": sparse_categorical_crossentropy does not take
# one-hot labels, categorical_crossentropy works; the publisher: "말씀주신대로 오타가 맞습니다" (it is a typo,
# as you say), corrected in the Colab/GitHub notebooks and the errata)
import pandas as pd
red = pd.read_csv('http://archive.ics.uci.edu/ml/machine-learning-databases/wine-quality/winequality-red.csv', sep=';')
white = pd.read_csv('http://archive.ics.uci.edu/ml/machine-learning-databases/wine-quality/winequality-white.csv', sep=';')

red['type'] = 0
white['type'] = 1
wine = pd.concat([red, white])

wine_norm = (wine - wine.min()) / (wine.max() - wine.min())

import numpy as np
wine_shuffle = wine_norm.sample(frac=1)
wine_np = wine_shuffle.to_numpy()

# 5.7
import tensorflow as tf
train_idx = int(len(wine_np) * 0.8)
train_X, train_Y = wine_np[:train_idx, :-1], wine_np[:train_idx, -1]
test_X, test_Y = wine_np[train_idx:, :-1], wine_np[train_idx:, -1]
train_Y = tf.keras.utils.to_categorical(train_Y, num_classes=2)
test_Y = tf.keras.utils.to_categorical(test_Y, num_classes=2)

# 5.8
import tensorflow as tf
model = tf.keras.Sequential([
    tf.keras.layers.Dense(units=48, activation='relu', input_shape=(12,)),
    tf.keras.layers.Dense(units=24, activation='relu'),
    tf.keras.layers.Dense(units=12, activation='relu'),
    tf.keras.layers.Dense(units=2, activation='softmax')
])

model.compile(optimizer=tf.keras.optimizers.Adam(lr=0.07), loss='sparse_categorical_crossentropy', metrics=['accuracy'])  # BUG TL408: the labels were one-hot encoded with to_categorical; the sparse loss expects integer class ids

model.summary()

# 5.9
history = model.fit(train_X, train_Y, epochs=25, batch_size=32, validation_split=0.25)
model.evaluate(test_X, test_Y)
