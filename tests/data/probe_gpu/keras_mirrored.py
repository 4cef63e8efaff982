"""Multi-GPU Keras training with tf.distribute.MirroredStrategy over two GPUs, in the shape of the
TensorFlow tutorial "Distributed training with Keras" (tensorflow/docs site/en/tutorials/distribute/
keras.ipynb, Apache-2.0): the model built and compiled inside `strategy.scope()`, the global batch
size scaled by the number of replicas, a learning-rate schedule callback. Written for the trainlint
tests: synthetic 28x28 images of 10 classes instead of MNIST."""

import numpy as np
import tensorflow as tf

strategy = tf.distribute.MirroredStrategy(["/gpu:0", "/gpu:1"])
print(f"Number of devices: {strategy.num_replicas_in_sync}")

BUFFER_SIZE = 1024
BATCH_SIZE_PER_REPLICA = 32
BATCH_SIZE = BATCH_SIZE_PER_REPLICA * strategy.num_replicas_in_sync

rng = np.random.default_rng(0)
images = rng.random((1024, 28, 28, 1), dtype=np.float32)
labels = rng.integers(0, 10, size=(1024,))
train_dataset = tf.data.Dataset.from_tensor_slices((images, labels)).shuffle(BUFFER_SIZE).batch(BATCH_SIZE)

with strategy.scope():
    model = tf.keras.Sequential([
        tf.keras.layers.Input(shape=(28, 28, 1)),
        tf.keras.layers.Conv2D(8, 3, activation="relu"),
        tf.keras.layers.MaxPooling2D(),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(32, activation="relu"),
        tf.keras.layers.Dense(10),
    ])
    model.compile(
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        optimizer=tf.keras.optimizers.Adam(learning_rate=1e-3),
        metrics=["accuracy"],
    )


def decay(epoch):
    if epoch < 3:
        return 1e-3
    if 3 <= epoch < 7:
        return 1e-4
    return 1e-5


callbacks = [tf.keras.callbacks.LearningRateScheduler(decay)]
model.fit(train_dataset, epochs=12, callbacks=callbacks)
