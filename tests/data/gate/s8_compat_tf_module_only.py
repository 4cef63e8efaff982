# /// script
# dependencies = ["transformers>=5", "tensorflow"]
# ///
"""A TensorFlow module of transformers whose imported name is not a `TF…` class."""
import tensorflow as tf
from transformers.tf_utils import shape_list

print(shape_list(tf.zeros((2, 3))))
