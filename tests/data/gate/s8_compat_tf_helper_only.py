# /// script
# dependencies = ["transformers>=5", "tensorflow"]
# ///
"""A transformers TensorFlow helper read on the module: no `TF…` name in the file."""
import tensorflow as tf
import transformers as tr

optimizer, schedule = tr.create_optimizer(3e-5, num_train_steps=100, num_warmup_steps=10)
model = tf.keras.Sequential([tf.keras.layers.Dense(2)])
