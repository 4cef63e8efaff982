# TFBertForTokenClassification trained with Keras fit on GLUE SST-2 (one label per sentence), written
# with `from transformers import *`, in the shape of transformers' README TF 2.0 quick tour of the time.
# evidence: huggingface/transformers#2581 (Invalid argument: assertion failed ... [32 1] vs
# SparseSoftmaxCrossEntropyWithLogits: a token-classification model on a sentence-classification task)
import tensorflow as tf
import tensorflow_datasets
from transformers import *

tokenizer = BertTokenizer.from_pretrained("bert-base-uncased")
model = TFBertForTokenClassification.from_pretrained("bert-base-uncased")  # BUG TL302: a per-token head trained on one label per sentence (SST-2)
data = tensorflow_datasets.load("glue/sst2")

train_dataset = glue_convert_examples_to_features(data["train"], tokenizer, max_length=128, task="sst-2")
valid_dataset = glue_convert_examples_to_features(data["validation"], tokenizer, max_length=128, task="sst-2")
train_dataset = train_dataset.shuffle(100).batch(32).repeat(2)
valid_dataset = valid_dataset.batch(64)

optimizer = tf.keras.optimizers.Adam(learning_rate=3e-5, epsilon=1e-08, clipnorm=1.0)
loss = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
metric = tf.keras.metrics.SparseCategoricalAccuracy("accuracy")
model.compile(optimizer=optimizer, loss=loss, metrics=[metric])

history = model.fit(train_dataset, epochs=2, steps_per_epoch=115, validation_data=valid_dataset, validation_steps=7)
