"""The label / activation / loss rules (TL312, TL408, TL409, TL410, TL412) and the hand-written accuracies
(TL609, TL610) on the forms real code gives them, each beside the correct twin the rule must leave alone.
The shapes come from the notebooks and scripts these rules were measured on (the corpus) and from the
buggy set."""

from __future__ import annotations

import textwrap

import pytest

from trainlint.config import Settings
from trainlint.engine import lint_source


def found(source: str, code: str) -> list[int]:
    """The rows ``code`` reports on ``source``."""
    findings = lint_source(textwrap.dedent(source), "train.py", Settings(select=[code]))
    return [f.start.row for f in findings if f.code == code]


def line_of(source: str, text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if text in line)


# -- TL312 ----------------------------------------------------------------------------------------

FUNCTIONAL_ONE_UNIT = """
from tensorflow import keras
from tensorflow.keras import layers

inputs = keras.Input(shape=(20,))
x = layers.Dense(64, activation="relu")(inputs)
x = layers.Dense({units})(x)
x = layers.Dropout(0.2)(x)
outputs = layers.Activation("softmax")(x)
model = keras.Model(inputs, outputs)
model.compile(optimizer="adam", loss="binary_crossentropy")
"""


@pytest.mark.parametrize("units,expected", [(1, True), (2, False)])
def test_a_softmax_layer_called_on_one_unit_in_the_functional_api(units, expected):
    src = FUNCTIONAL_ONE_UNIT.format(units=units)
    assert found(src, "TL312") == ([line_of(src, 'Activation("softmax")')] if expected else [])


SOFTMAX_MODULE_ON_SELF = """
import torch.nn as nn


class Head(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.fc = nn.Linear(hidden, 1)
        self.softmax = nn.Softmax({dim})

    def forward(self, x):
        return self.softmax(self.fc(x))


stack = nn.Sequential(nn.Flatten(), nn.Linear(784, 64), nn.ReLU(), nn.Linear(64, 1), nn.Softmax({dim}))
"""


def test_a_torch_softmax_over_one_unit_with_an_explicit_last_axis():
    src = SOFTMAX_MODULE_ON_SELF.format(dim="dim=-1")
    assert found(src, "TL312") == [line_of(src, "return self.softmax"), line_of(src, "stack =")]
    # dim=1 is the unit axis of the 2-D batch the Flatten makes; in the class the rank is not known
    src = SOFTMAX_MODULE_ON_SELF.format(dim="dim=1")
    assert found(src, "TL312") == [line_of(src, "stack =")]
    # no dim: the legacy implicit axis depends on the rank
    assert found(SOFTMAX_MODULE_ON_SELF.format(dim=""), "TL312") == []


def test_a_softmax_layer_of_unknown_width_after_one_unit_is_not_the_one_unit():
    src = """
    from tensorflow import keras

    n_outputs = env.action_space.n
    model = keras.models.Sequential([
        keras.layers.Dense(1, activation="relu", input_shape=[4]),
        keras.layers.Dense(n_outputs, activation="softmax"),
    ])
    """
    assert found(src, "TL312") == []


# -- TL408 ----------------------------------------------------------------------------------------

DIRECTORY_DATASET = """
import tensorflow as tf

train_ds = tf.keras.utils.image_dataset_from_directory("flowers", image_size=(180, 180), batch_size=32{mode})
train_ds = train_ds.cache().shuffle(1000).prefetch(buffer_size=tf.data.AUTOTUNE)
model = tf.keras.Sequential([
    tf.keras.layers.Rescaling(1.0 / 255),
    tf.keras.layers.Flatten(),
    tf.keras.layers.Dense(5, activation="softmax"),
])
model.compile(optimizer="adam", loss="categorical_crossentropy", metrics=["accuracy"])
model.fit(train_ds, epochs=10)
"""


def test_a_directory_dataset_gives_class_ids_unless_asked_for_one_hot_labels():
    src = DIRECTORY_DATASET.format(mode="")
    assert found(src, "TL408") == [line_of(src, "model.compile")]
    assert found(DIRECTORY_DATASET.format(mode=', label_mode="categorical"'), "TL408") == []


def test_the_labels_of_a_dataset_made_from_arrays():
    src = """
    import tensorflow as tf

    (x_train, y_train), _ = tf.keras.datasets.fashion_mnist.load_data()
    train_ds = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(10000).batch(32)
    mapped = train_ds.map(lambda x, y: (x, tf.one_hot(y, 10)))
    model = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(10, activation="softmax")])
    model.compile(optimizer="adam", loss="categorical_crossentropy", metrics=["accuracy"])
    model.fit({data}, epochs=5)
    """
    bad = src.replace("{data}", "train_ds")
    assert found(bad, "TL408") == [line_of(bad, "model.compile")]
    assert found(src.replace("{data}", "mapped"), "TL408") == []  # `map` may change the labels


def test_labels_of_another_model_are_not_this_models():
    src = """
    from tensorflow import keras

    (x_train, y_train), (x_test, y_test) = keras.datasets.cifar10.load_data()
    y_onehot = keras.utils.to_categorical(y_train, 10)
    model = keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(10, activation="softmax")])
    model.compile(optimizer="adam", loss="categorical_crossentropy")
    other = keras.Sequential([keras.layers.Flatten(), keras.layers.Dense(10, activation="softmax")])
    other.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    model.fit(x_train, y_onehot)
    other.fit(x_train, y_train)
    """
    assert found(src, "TL408") == []


def test_a_one_hot_target_cast_to_float_is_class_probabilities():
    src = """
    import torch.nn.functional as F

    for x, y in loader:
        loss = F.cross_entropy(model(x), F.one_hot(y, 5).float())
        bad = F.cross_entropy(model(x), F.one_hot(y, 5))
    """
    assert found(src, "TL408") == [line_of(src, "bad =")]


# -- TL409 ----------------------------------------------------------------------------------------

# a notebook binds `model` to several models in turn (ageron/handson-ml2, 13_loading_and_preprocessing_data):
# the `model.add(...)` of the last one are not the layers of the first
NOTEBOOK_MODELS = """
from tensorflow import keras

model = keras.models.Sequential([
    keras.layers.Flatten(input_shape=[28, 28, 1]),
    keras.layers.Dense(10, activation="softmax")])
model.compile(loss="sparse_categorical_crossentropy", optimizer="sgd", metrics=["accuracy"])
model.fit(mnist_train, steps_per_epoch=60000 // 32, epochs=5)

model = keras.models.Sequential()
model.add(keras.layers.Dense(100, activation="relu"))
model.add(keras.layers.Dense(1, activation="sigmoid"))
model.compile(loss="binary_crossentropy", optimizer="nadam", metrics=["accuracy"])
"""


def test_the_layers_added_to_a_later_model_of_the_same_name_do_not_count():
    for code in ("TL409", "TL410", "TL412", "TL312"):
        assert found(NOTEBOOK_MODELS, code) == [], code


def test_one_sigmoid_unit_into_a_categorical_loss():
    # in the shape of a book's skip-gram model (a subclassed model, one sigmoid unit, categorical loss)
    src = """
    import tensorflow as tf

    class SkipgramModel(tf.keras.Model):
        def __init__(self, vocab_sz, embed_sz):
            super().__init__()
            self.embedding = tf.keras.layers.Embedding(vocab_sz, embed_sz)
            self.merge = tf.keras.layers.Dot(axes=1)
            self.dense = tf.keras.layers.Dense(1, activation="sigmoid")

        def call(self, input):
            word, context = input
            x = self.merge([self.embedding(word), self.embedding(context)])
            return self.dense(x)

    model = SkipgramModel(5000, 300)
    model.compile(optimizer="adam", loss="{loss}", metrics=["accuracy"])
    """
    bad = src.replace("{loss}", "categorical_crossentropy")
    assert found(bad, "TL409") == [line_of(bad, "loss=")]
    assert found(src.replace("{loss}", "binary_crossentropy"), "TL409") == []


def test_a_linear_activation_after_the_softmax_keeps_the_softmax():
    # TensorFlow's mixed-precision guide: the float32 cast of the output is `Activation("linear")`
    src = """
    from tensorflow import keras
    from tensorflow.keras import layers

    inputs = keras.Input(shape=(784,))
    x = layers.Dense(64, activation="relu")(inputs)
    x = layers.Dense(10)(x)
    outputs = layers.Activation("softmax", dtype="float32")(x)
    outputs = layers.Activation("linear", dtype="float32")(outputs)
    model = keras.Model(inputs=inputs, outputs=outputs)
    model.compile(loss="sparse_categorical_crossentropy", optimizer="rmsprop", metrics=["accuracy"])
    """
    for code in ("TL409", "TL412"):
        assert found(src, code) == [], code


def test_sigmoid_scores_into_cross_entropy_loss_in_torch():
    src = """
    import torch
    import torch.nn as nn

    model = nn.Linear(20, 10)
    criterion = nn.CrossEntropyLoss()
    for x, y in loader:
        probs = torch.sigmoid(model(x))
        loss = criterion(probs, y)
        fine = criterion(model(x), y)
    """
    assert found(src, "TL409") == [line_of(src, "loss = criterion")]


# -- TL410 ----------------------------------------------------------------------------------------


def test_a_softmax_dense_layer_normalises_its_own_scores():
    # ageron/handson-ml2 18_reinforcement_learning: ReLU hidden layers, then `Dense(n, activation="softmax")`
    src = """
    from tensorflow import keras

    n_outputs = env.action_space.n
    model = keras.models.Sequential([
        keras.layers.Dense(32, activation="relu", input_shape=[4]),
        keras.layers.Dense(32, activation="relu"),
        keras.layers.Dense(n_outputs, activation="softmax"),
    ])
    model.compile(loss="sparse_categorical_crossentropy", optimizer="adam")
    """
    assert found(src, "TL410") == []


def test_a_relu_under_a_separate_softmax_layer_in_keras():
    src = """
    from tensorflow import keras

    model = keras.Sequential([
        keras.layers.Dense(64, activation="relu", input_shape=[20]),
        keras.layers.Dense(10, activation="relu"),
        keras.layers.Activation("softmax"),
    ])
    model.compile(loss="sparse_categorical_crossentropy", optimizer="adam")
    logits_model = keras.Sequential([keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10, activation="relu")])
    logits_model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    """
    assert found(src, "TL410") == [line_of(src, "keras.layers.Dense(10, activation=\"relu\"),"),
                                   line_of(src, "logits_model = ")]


# -- TL412 ----------------------------------------------------------------------------------------


def test_a_module_alias_of_tf_keras_and_a_model_whose_last_layer_is_unknown():
    src = """
    import tensorflow as tf

    keras = tf.keras
    head = keras.layers.Dense(1)
    model = tf.keras.Sequential([tf.keras.applications.MobileNetV2(include_top=False), head])
    model.compile(optimizer="rmsprop", loss="binary_crossentropy")
    custom = tf.keras.Sequential([keras.layers.Dense(8), MyHead()])
    custom.compile(optimizer="rmsprop", loss="binary_crossentropy")
    """
    assert found(src, "TL412") == [line_of(src, 'model.compile')]


def test_a_transformers_model_is_left_to_tl402():
    src = """
    from transformers import TFAutoModelForSequenceClassification

    model = TFAutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    """
    assert found(src, "TL412") == []


# -- TL609 / TL610 --------------------------------------------------------------------------------


def test_probabilities_compared_with_themselves_or_a_logit_threshold_of_zero():
    src = """
    import torch
    import torch.nn as nn

    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 10))
    criterion = nn.CrossEntropyLoss()
    for x, y in loader:
        logits = model(x)
        loss = criterion(logits, y)
        probs = torch.softmax(logits, dim=1)
        top = (probs == probs.max(dim=1, keepdim=True)[0]).sum()
        positive = (logits > 0).float().mean()
        wrong = (logits > 0.5).float().mean()
    """
    assert found(src, "TL609") == [line_of(src, "wrong =")]


def test_argmax_over_a_flattened_matrix_of_another_pair_is_not_reported():
    src = """
    import torch
    import torch.nn as nn

    loss_fn = nn.CrossEntropyLoss()
    logits = model(images)
    loss = loss_fn(logits, labels)
    other = model(more_images)
    acc = (torch.argmax(other) == labels).sum()
    bad = (logits.argmax() == labels).sum()
    """
    assert found(src, "TL610") == [line_of(src, "bad =")]
