# "Deep Learning with Python" (3rd edition), chapter 7 notebook, the PyTorch-backend version of a Keras
# model with a custom `train_step` (the notebook selects the backend with a `%%backend torch` cell magic;
# a script sets KERAS_BACKEND): `loss.backward()`, the gradients read from `v.value.grad`, and
# `self.optimizer.apply(...)`, but the module's gradients are never cleared, so every `fit` step adds the
# new gradients to all previous ones ("the results are terrible"). Keras' own guide for a torch train_step
# starts with `self.zero_grad()` ("to clear the leftover gradients").
# evidence: fchollet/deep-learning-with-python-notebooks#293 ("chapter 7 torch implementation of CustomModel
# forgets to zero_grad": the torch train_step implementations need self.zero_grad()); keras-team/keras
# guides/custom_train_step_in_torch.py (calls self.zero_grad() before the forward pass)
import os

os.environ["KERAS_BACKEND"] = "torch"

import keras
import torch
from keras import layers

loss_fn = keras.losses.SparseCategoricalCrossentropy()
loss_tracker = keras.metrics.Mean(name="loss")


class CustomModel(keras.Model):
    def train_step(self, data):
        inputs, targets = data
        predictions = self(inputs, training=True)
        loss = loss_fn(targets, predictions)

        loss.backward()
        trainable_weights = [v for v in self.trainable_weights]
        gradients = [v.value.grad for v in trainable_weights]

        with torch.no_grad():
            self.optimizer.apply(gradients, trainable_weights)  # BUG TL701: no self.zero_grad(): the .grad of every weight keeps growing

        loss_tracker.update_state(loss)
        return {"loss": loss_tracker.result()}

    @property
    def metrics(self):
        return [loss_tracker]


def get_custom_model():
    inputs = keras.Input(shape=(28 * 28,))
    features = layers.Dense(512, activation="relu")(inputs)
    features = layers.Dropout(0.5)(features)
    outputs = layers.Dense(10, activation="softmax")(features)
    model = CustomModel(inputs, outputs)
    model.compile(optimizer=keras.optimizers.Adam())
    return model


(images, labels), _ = keras.datasets.mnist.load_data()
images = images.reshape((60000, 28 * 28)).astype("float32") / 255
model = get_custom_model()
model.fit(images, labels, epochs=3)
