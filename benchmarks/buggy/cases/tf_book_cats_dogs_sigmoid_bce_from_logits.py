# /// script
# dependencies = ["tensorflow==2.5.0", "numpy", "matplotlib"]
# ///
# (the environment of the report: Colab in July 2021, Python 3.7, TensorFlow 2.5)
# A book's cats-and-dogs notebook (Part 4/4.4_cats_and_dogs_data_processing.ipynb): the CNN comes from a
# build_model() helper and ends in Dense(1, activation='sigmoid'); the model, and a second one built by the
# same helper for the augmented run, are compiled with BinaryCrossentropy(from_logits=True), so the loss
# applies a second sigmoid to the probabilities (Keras warns: "`binary_crossentropy` received
# `from_logits=True`, but the `output` argument was produced by a sigmoid").
# evidence: lovedlim/tensorflow#2 (the book's author: with from_logits=True the output layer should not have
# had a sigmoid, "오류가 있는 점을 양해 부탁 드립니다" (apologies for the error); with a sigmoid or softmax output
# from_logits=False is right)
import tensorflow as tf
from tensorflow.keras.preprocessing.image import ImageDataGenerator

import numpy as np
import matplotlib.pylab as plt

extract_folder = "dataset/"
train_dir = extract_folder + "archive/training_set/training_set"
valid_dir = extract_folder + "archive/test_set/test_set"

image_gen = ImageDataGenerator(rescale=(1/255.))

train_gen = image_gen.flow_from_directory(train_dir,
                                          batch_size=32,
                                          target_size=(224, 224),
                                          classes=['cats', 'dogs'],
                                          class_mode='binary',
                                          seed=2020)

valid_gen = image_gen.flow_from_directory(valid_dir,
                                          batch_size=32,
                                          target_size=(224, 224),
                                          classes=['cats', 'dogs'],
                                          class_mode='binary',
                                          seed=2020)


def build_model():

    model = tf.keras.Sequential([
        tf.keras.layers.BatchNormalization(),
        tf.keras.layers.Conv2D(32, (3, 3), padding='same', activation='relu'),
        tf.keras.layers.MaxPooling2D((2, 2)),

        tf.keras.layers.BatchNormalization(),
        tf.keras.layers.Conv2D(64, (3, 3), padding='same', activation='relu'),
        tf.keras.layers.MaxPooling2D((2, 2)),

        tf.keras.layers.BatchNormalization(),
        tf.keras.layers.Conv2D(128, (3, 3), padding='same', activation='relu'),
        tf.keras.layers.MaxPooling2D((2, 2)),

        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(256, activation='relu'),
        tf.keras.layers.Dropout(0.3),
        tf.keras.layers.Dense(1, activation='sigmoid'),
    ])

    return model


model = build_model()

model.compile(optimizer=tf.optimizers.Adam(lr=0.001),
              loss=tf.keras.losses.BinaryCrossentropy(from_logits=True),  # BUG TL403: the model ends in a sigmoid; the loss reads its probabilities as logits
              metrics=['accuracy'])

history = model.fit(train_gen, validation_data=valid_gen, epochs=20)


def plot_loss_acc(history, epoch):
    loss, val_loss = history.history['loss'], history.history['val_loss']
    acc, val_acc = history.history['accuracy'], history.history['val_accuracy']
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    axes[0].plot(range(1, epoch + 1), loss, label='Training')
    axes[0].plot(range(1, epoch + 1), val_loss, label='Validation')
    axes[1].plot(range(1, epoch + 1), acc, label='Training')
    axes[1].plot(range(1, epoch + 1), val_acc, label='Validation')
    plt.show()


plot_loss_acc(history, 20)

image_gen_aug = ImageDataGenerator(rescale=1/255.,
                                   horizontal_flip=True,
                                   rotation_range=35,
                                   zoom_range=0.2)

train_gen_aug = image_gen_aug.flow_from_directory(train_dir,
                                                  batch_size=32,
                                                  target_size=(224, 224),
                                                  classes=['cats', 'dogs'],
                                                  class_mode='binary',
                                                  seed=2020)

valid_gen_aug = image_gen_aug.flow_from_directory(valid_dir,
                                                  batch_size=32,
                                                  target_size=(224, 224),
                                                  classes=['cats', 'dogs'],
                                                  class_mode='binary',
                                                  seed=2020)

model_aug = build_model()

model_aug.compile(optimizer=tf.optimizers.Adam(lr=0.001),
                  loss=tf.keras.losses.BinaryCrossentropy(from_logits=True),  # BUG TL403: the same helper's sigmoid model, the same logits loss
                  metrics=['accuracy'])

history_aug = model_aug.fit(train_gen_aug, validation_data=valid_gen_aug, epochs=40)
plot_loss_acc(history_aug, 40)
