# A Kaggle-style disaster-tweet classifier: a Keras functional model around TFBertModel (input_ids,
# token_type_ids, attention_mask inputs), trained with fit() on the tokenizer's output as it is.
# (The layers after the encoder are shortened; the data flow into fit() is the reporter's.)
# evidence: huggingface/transformers#5939 ("Can't use BatchEncoding in the fit function": x=X_train, a
# BatchEncoding, fails with "ValueError: too many values to unpack (expected 2)"; works with X_train.values()),
# the script in huggingface/transformers#5555; transformers later wrapped fit() for its own TF models
# because "Keras doesn't understand this [BatchEncoding] at all and fails to handle it when passed to fit()"
# (huggingface/transformers#28734)
import numpy as np
import pandas as pd

from sklearn.model_selection import train_test_split

import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers
from transformers import (
    BertTokenizer,
    TFBertForSequenceClassification,
    TFBertModel,
    BertConfig,
)

MAX_SEQUENCE_LENGTH = 255
PRETRAINED_MODEL_NAME = 'bert-base-uncased'
BATCH_SIZE = 32

df = pd.read_csv('train.csv')
data = df['text'].values
targets = df['target'].values


def create_model():
    bert_model = TFBertModel.from_pretrained(PRETRAINED_MODEL_NAME)

    input_ids = layers.Input(shape=(MAX_SEQUENCE_LENGTH,), dtype=tf.int32, name='input_ids')
    token_type_ids = layers.Input(shape=(MAX_SEQUENCE_LENGTH,), dtype=tf.int32, name='token_type_ids')
    attention_mask = layers.Input(shape=(MAX_SEQUENCE_LENGTH,), dtype=tf.int32, name='attention_mask')

    output = bert_model([input_ids, token_type_ids, attention_mask])[1]
    output = layers.Dense(1, activation='sigmoid')(output)
    model = keras.Model(inputs=[input_ids, token_type_ids, attention_mask], outputs=output)
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=2e-5), loss='binary_crossentropy',
                  metrics=['accuracy'])
    return model


tokenizer = BertTokenizer.from_pretrained(PRETRAINED_MODEL_NAME)
model = create_model()

X_train = tokenizer.batch_encode_plus(
    list(data),
    max_length=MAX_SEQUENCE_LENGTH,
    pad_to_max_length=True,
    return_tensors='tf',
)

model.fit(
    x=X_train,  # BUG TL206: the tokenizer's BatchEncoding given to Keras fit as x (use dict(X_train))
    y=targets,
    epochs=3,
)
