# /// script
# dependencies = ["tensorflow==2.17.0", "keras==3.6.0", "transformers==4.46.0", "keras-tuner"]
# ///
# (the environment of the report: TensorFlow 2.17 with Keras 3.6, transformers 4.46)
# A notebook tuning a BERT classifier with keras_tuner: the hypermodel's build function calls
# TFBertModel.from_pretrained("bert-base-uncased") and wires it to Keras 3 Input layers; under Keras 3
# transformers' TF classes (tf-keras models) fail ("Exception encountered when calling
# TFBertMainLayer.call()", 'NoneType' object has no attribute 'shape'); the same code worked on TF 2.11.
# (The report gives the traceback and versions, not the whole notebook: the build function and its
# from_pretrained call follow the traceback, where the failure is raised; the Input layers follow the
# maintainer's reply; the head is left minimal.)
# evidence: keras-team/keras#20393 (also tensorflow/tensorflow#77826; a maintainer: "in keras3 (tensorflow
# 2.16+) the Input layer gives output of KerasTensor not tf.Tensor", the TF BERT layer cannot take it)
import tensorflow as tf
import keras
import keras_tuner as kt
from keras.layers import Input, Dense
from transformers import TFBertModel  # BUG TL811: a transformers TF class (a tf-keras model) used under Keras 3 (TF 2.17)


def build_bert_model(hp):
    bert_model = TFBertModel.from_pretrained("bert-base-uncased")
    input_ids = Input(shape=(100,), dtype=tf.int32, name="input_ids")
    attention_mask = Input(shape=(100,), dtype=tf.int32, name="attention_mask")
    bert_output = bert_model(input_ids=input_ids, attention_mask=attention_mask)[1]
    outputs = Dense(1, activation="sigmoid")(bert_output)
    model = keras.Model(inputs=[input_ids, attention_mask], outputs=outputs)
    # (the notebook's compile with the tuned hyperparameters is not in the report)
    return model


tuner = kt.RandomSearch(build_bert_model, objective="val_accuracy", max_trials=5)
