# /// script
# dependencies = ["tensorflow>=2.16", "transformers<5"]
# ///
# (the environment the bug was reported in: a Colab runtime with TensorFlow 2.16+, i.e. Keras 3)
# A fine-tuning notebook of an LLM fine-tuning tutorial collection: BERT for 3-class sequence
# classification compiled with tf.keras.optimizers.Adam.
# evidence: rohan-paul/LLM-FineTuning-Large-Language-Models#4 ("issue with model compilation":
# ValueError: Could not interpret optimizer identifier: <keras.src.optimizers.adam.Adam object> in Colab)
import tensorflow as tf
from transformers import TFAutoModelForSequenceClassification

model = TFAutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=3)
model.compile(
    optimizer=tf.keras.optimizers.Adam(learning_rate=5e-5),  # BUG TL808: a Keras 3 optimizer given to a tf-keras (Keras 2) transformers model
    loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=tf.metrics.SparseCategoricalAccuracy(),
)
