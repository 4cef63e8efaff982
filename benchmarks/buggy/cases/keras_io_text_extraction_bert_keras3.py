# /// script
# dependencies = ["keras==3.0.0", "tensorflow==2.15.0", "transformers==4.35.0", "tokenizers", "numpy"]
# ///
# (the environment the conversion targets: Keras 3, which transformers' TF classes do not support)
# The keras.io example "BERT (from HuggingFace Transformers) for Text Extraction" converted to Keras 3:
# `from tensorflow import keras` becomes `import keras` (and lr= becomes learning_rate=), while the model
# built in create_model() (called under a TPU strategy scope) still wraps transformers' TFBertModel, a
# tf-keras (Keras 2) model, in a Keras 3 functional graph.
# evidence: keras-team/keras#18770 (the reviewer, on TFBertModel.from_pretrained: "That's not going to work
# with Keras 3, is it? The Transformers library is still on Keras 2"; the author: Keras 3 had not
# actually been the version installed when it ran)
import os
import json
import numpy as np
import tensorflow as tf
import keras
from keras import layers
from tokenizers import BertWordPieceTokenizer
from transformers import BertTokenizer, TFBertModel, BertConfig  # BUG TL811: transformers' TF classes are tf-keras (Keras 2) models; this script runs on Keras 3

max_len = 384
configuration = BertConfig()

slow_tokenizer = BertTokenizer.from_pretrained("bert-base-uncased")
save_path = "bert_base_uncased/"
if not os.path.exists(save_path):
    os.makedirs(save_path)
slow_tokenizer.save_pretrained(save_path)
tokenizer = BertWordPieceTokenizer("bert_base_uncased/vocab.txt", lowercase=True)

train_data_url = "https://rajpurkar.github.io/SQuAD-explorer/dataset/train-v1.1.json"
train_path = keras.utils.get_file("train.json", train_data_url)


def create_inputs_targets(raw_data):
    dataset_dict = {"input_ids": [], "token_type_ids": [], "attention_mask": [],
                    "start_token_idx": [], "end_token_idx": []}
    # (the example's SQuAD preprocessing, shortened)
    for key in dataset_dict:
        dataset_dict[key] = np.array(dataset_dict[key])
    x = [dataset_dict["input_ids"], dataset_dict["token_type_ids"], dataset_dict["attention_mask"]]
    y = [dataset_dict["start_token_idx"], dataset_dict["end_token_idx"]]
    return x, y


with open(train_path) as f:
    raw_train_data = json.load(f)
x_train, y_train = create_inputs_targets(raw_train_data)


def create_model():
    ## BERT encoder
    encoder = TFBertModel.from_pretrained("bert-base-uncased")

    ## QA Model
    input_ids = layers.Input(shape=(max_len,), dtype=tf.int32)
    token_type_ids = layers.Input(shape=(max_len,), dtype=tf.int32)
    attention_mask = layers.Input(shape=(max_len,), dtype=tf.int32)
    embedding = encoder(
        input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask
    )[0]

    start_logits = layers.Dense(1, name="start_logit", use_bias=False)(embedding)
    start_logits = layers.Flatten()(start_logits)

    end_logits = layers.Dense(1, name="end_logit", use_bias=False)(embedding)
    end_logits = layers.Flatten()(end_logits)

    start_probs = layers.Activation(keras.activations.softmax)(start_logits)
    end_probs = layers.Activation(keras.activations.softmax)(end_logits)

    model = keras.Model(
        inputs=[input_ids, token_type_ids, attention_mask],
        outputs=[start_probs, end_probs],
    )
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=False)
    optimizer = keras.optimizers.Adam(learning_rate=5e-5)
    model.compile(optimizer=optimizer, loss=[loss, loss])
    return model


use_tpu = True
if use_tpu:
    tpu = tf.distribute.cluster_resolver.TPUClusterResolver()
    tf.config.experimental_connect_to_cluster(tpu)
    tf.tpu.experimental.initialize_tpu_system(tpu)
    strategy = tf.distribute.experimental.TPUStrategy(tpu)
    with strategy.scope():
        model = create_model()
else:
    model = create_model()

model.fit(x_train, y_train, epochs=3, verbose=2, batch_size=64)
