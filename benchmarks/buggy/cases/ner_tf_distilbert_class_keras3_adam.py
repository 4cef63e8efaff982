# /// script
# dependencies = ["tensorflow>=2.20", "tf-keras==2.20.1", "transformers<5", "pandas", "seqeval"]
# ///
# (the environment of the report: TensorFlow 2.20, whose tf.keras is Keras 3, with tf_keras 2.20.1 installed)
# A resume named-entity-recognition class (NameEntityRecognition.py): BuildTrainModel() loads
# TFDistilBertForTokenClassification into self._model and compiles it with an Adam imported from
# tensorflow.keras.optimizers, i.e. a Keras 3 optimizer for a tf-keras (Keras 2) model.
# evidence: keras-team/keras#21666 (".compile throws ValueError: Could not interpret optimizer identifier:
# <keras.src.optimizers.adam.Adam object>" from self._model.compile(optimizer=Adam(...)) with
# tf_keras==2.20.1); fixed by the author in khteh/pAIthon@a8aeca72c7b8c1793b58445906964601752af017 (the
# import switched to `from tf_keras.optimizers import Adam`, with a comment naming the issue)
import pandas as pd
import tensorflow as tf
from tensorflow.keras.optimizers import Adam
from transformers import DistilBertTokenizerFast, TFDistilBertForTokenClassification


class NameEntityRecognition():
    _model: TFDistilBertForTokenClassification = None

    def __init__(self, path: str, maxlen: int, learning_rate: float, batchsize: int, epochs: int):
        self._path = path
        self._maxlen = maxlen
        self._learning_rate = learning_rate
        self._batch_size = batchsize
        self._epochs = epochs
        self._tokenizer = DistilBertTokenizerFast.from_pretrained('tokenizer/')
        self._PrepareData()

    def BuildTrainModel(self, rebuild: bool = False):
        if self._model and not rebuild:
            return
        self._model = TFDistilBertForTokenClassification.from_pretrained('models/NameEntityRecognition', num_labels=len(self._unique_tags))
        self._model.compile(optimizer=Adam(learning_rate=self._learning_rate), loss=self._model.hf_compute_loss, metrics=['accuracy'])  # BUG TL808: a Keras 3 optimizer given to a tf-keras (Keras 2) transformers model
        history = self._model.fit(self._train.batch(self._batch_size), epochs=self._epochs, batch_size=self._batch_size)
        return history

    def _PrepareData(self):
        self._data = pd.read_json(self._path, lines=True)
        self._unique_tags = sorted({tag for tags in self._data["tags"] for tag in tags})
        self._tag2id = {tag: i for i, tag in enumerate(self._unique_tags)}
        encoded = self._tokenizer(self._data["content"].tolist(), truncation=True, padding="max_length",
                                  max_length=self._maxlen)
        labels = [[self._tag2id[t] for t in tags][:self._maxlen] + [-100] * (self._maxlen - len(tags))
                  for tags in self._data["tags"]]
        self._train = tf.data.Dataset.from_tensor_slices((encoded["input_ids"], labels))


if __name__ == "__main__":
    ner = NameEntityRecognition("data/ner.json", 512, 1e-5, 8, 3)
    ner.BuildTrainModel()
