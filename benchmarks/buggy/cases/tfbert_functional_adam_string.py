# A Keras functional model around a pretrained TFBertModel (pooled output -> dropout -> dense ->
# sigmoid) compiled with optimizer='adam': Keras's default learning rate 1e-3 wrecks the pretrained
# encoder and the training loss does not decrease (the same data learns fine with Adam(2e-5)).
# evidence: huggingface/transformers#13547 ("train loss is not decreasing using TFBertModel")
import tensorflow as tf
from transformers import TFBertModel

SEQ_LEN = 128
bert = TFBertModel.from_pretrained("bert-base-uncased")
input_ids = tf.keras.layers.Input(shape=(SEQ_LEN,), name="input_ids", dtype="int32")
mask = tf.keras.layers.Input(shape=(SEQ_LEN,), name="attention_mask", dtype="int32")
embeddings = bert(input_ids, attention_mask=mask)[1]
X = tf.keras.layers.Dropout(0.1)(embeddings)
X = tf.keras.layers.Dense(128, activation="relu")(X)
y = tf.keras.layers.Dense(1, activation="sigmoid", name="outputs")(X)
bert_model = tf.keras.Model(inputs=[input_ids, mask], outputs=y)
bert_model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])  # BUG TL501: "adam" is Adam(1e-3), far too high for fine-tuning the pretrained encoder
