"""The program model (trainlint.facts.program): what each object of a script is, followed through the
file's functions, methods, containers and classes; unknown where the source does not say."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from trainlint.facts import FACT_TYPES, Facts, walk
from trainlint.facts.objects import Loader, Loss, Module, Number, Optimizer, Output, Tensor
from trainlint.facts.program import program


def _facts(source: str) -> Facts:
    module = cst.parse_module(textwrap.dedent(source))
    index, where = walk(module, FACT_TYPES | {"With"})
    return Facts(module, index, where)


def what(source: str, target: str, occurrence: int = -1):
    """What the expression ``target`` is at its ``occurrence``-th appearance as the argument of
    `probe(...)` in ``source``."""
    facts = _facts(source)
    probes = [c for c in facts.index["Call"] if isinstance(c.func, cst.Name) and c.func.value == "probe"]
    probes = [c for c in probes if facts.module.code_for_node(c.args[0].value) == target]
    assert probes, f"no probe({target})"
    call = probes[occurrence]
    return program(facts).of(call.args[0].value, call)


HEAD = """
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader
"""


# ---------------------------------------------------------------- modules and their layers


def test_a_class_of_the_file_has_the_layers_its_init_builds():
    m = what(HEAD + """
class Net(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc1 = nn.Linear(10, n)
        self.drop = nn.Dropout(0.5)
        self.fc2 = nn.Linear(n, 2)
        self.n = n

    def forward(self, x):
        return self.fc2(self.drop(F.relu(self.fc1(x))))

model = Net(32)
probe(model)
""", "model")
    assert isinstance(m, Module) and m.classdef is not None
    assert [layer.name for layer in m.layers] == ["Linear", "Dropout", "Linear"]
    assert m.mode_dependent is True
    assert m.output is Output.LOGITS


def test_a_model_without_dropout_or_batch_norm_computes_the_same_in_both_modes():
    m = what(HEAD + """
model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
probe(model)
""", "model")
    assert isinstance(m, Module) and m.mode_dependent is False and m.output is Output.LOGITS


def test_sequential_from_a_list_filled_by_append():
    source = HEAD + """
def build(n_layers, p):
    layers = [nn.Linear(4, 8)]
    for _ in range(n_layers):
        layers.append(nn.Linear(8, 8))
        layers.append(nn.BatchNorm1d(8))
    layers.append(nn.Softmax(dim=1))
    return nn.Sequential(*layers)

model = build(3, 0.1)
probe(model)
"""
    m = what(source, "model")
    assert isinstance(m, Module) and m.mode_dependent is True and m.output is Output.PROBABILITIES


def test_a_list_changed_in_a_way_the_file_does_not_show_leaves_the_layers_unknown():
    m = what(HEAD + """
layers = [nn.Linear(4, 8)]
layers.insert(0, make_layer())
model = nn.Sequential(*layers)
probe(model)
""", "model")
    assert isinstance(m, Module) and m.layers is None and m.mode_dependent is None


def test_dropout_rate_zero_is_not_mode_dependent_and_an_unknown_rate_is_unknown():
    assert what(HEAD + "m = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.0))\nprobe(m)\n", "m").mode_dependent is False
    assert what(HEAD + "m = nn.Sequential(nn.Linear(2, 2), nn.Dropout(p))\nprobe(m)\n", "m").mode_dependent is True
    assert what(HEAD + "m = nn.LSTM(4, 8)\nprobe(m)\n", "m").mode_dependent is False
    assert what(HEAD + "m = nn.LSTM(4, 8, dropout=rate)\nprobe(m)\n", "m").mode_dependent is None
    assert what(HEAD + "m = nn.TransformerEncoderLayer(8, 2)\nprobe(m)\n", "m").mode_dependent is True


def test_a_layer_of_unknown_kind_makes_the_module_unknown():
    m = what(HEAD + """
import timm
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = timm.create_model("resnet18")
        self.head = nn.Linear(512, 10)
    def forward(self, x):
        return self.head(self.backbone(x))
probe(Net())
""", "Net()")
    assert isinstance(m, Module) and m.mode_dependent is None


def test_submodules_given_to_the_constructor_are_followed_to_every_instantiation():
    source = HEAD + """
class Wrapper(nn.Module):
    def __init__(self, encoder, hidden):
        super().__init__()
        self.encoder = encoder
        self.hidden = hidden
        self.out = nn.Linear(hidden, 2)
    def forward(self, x):
        return self.out(self.encoder(x))

enc = nn.Sequential(nn.Linear(4, 8), nn.ReLU())
model = Wrapper(enc, 8)
probe(model)
"""
    m = what(source, "model")
    assert isinstance(m, Module) and m.mode_dependent is False
    dropout = source.replace("nn.ReLU()", "nn.Dropout(0.2)")
    assert what(dropout, "model").mode_dependent is True


def test_functional_dropout_with_the_training_flag_is_mode_dependent():
    m = what(HEAD + """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)
    def forward(self, x):
        return self.fc(F.dropout(x, 0.5, training=self.training))
probe(Net())
""", "Net()")
    assert m.mode_dependent is True


def test_subclass_inherits_the_layers_of_its_base_in_the_file():
    m = what(HEAD + """
class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm2d(3)
class Net(Base):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 2)
probe(Net())
""", "Net()")
    assert m.mode_dependent is True


def test_pretrained_transformers_models_have_dropout():
    m = what("""
from transformers import AutoModelForSequenceClassification
model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=3)
model = model.to("cuda")
probe(model)
""", "model")
    assert isinstance(m, Module) and m.framework == "transformers" and m.mode_dependent is True


def test_keras_sequential_output_is_its_last_activation():
    src = """
from tensorflow import keras
model = keras.Sequential([keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10, activation="softmax")])
probe(model)
"""
    m = what(src, "model")
    assert isinstance(m, Module) and m.framework == "keras" and m.output is Output.PROBABILITIES
    assert what(src.replace(', activation="softmax"', ""), "model").output is Output.LOGITS
    added = """
from tensorflow import keras
model = keras.Sequential()
model.add(keras.layers.Dense(64, activation="relu"))
model.add(keras.layers.Dense(1, activation="sigmoid"))
probe(model)
"""
    m = what(added, "model")
    assert m.output is Output.SIGMOID and m.layers[-1].units == 1


# ---------------------------------------------------------------- losses, loaders, optimizers


def test_losses_say_what_they_expect():
    assert what(HEAD + "c = nn.CrossEntropyLoss()\nprobe(c)\n", "c").expects is Output.LOGITS
    assert what(HEAD + "c = F.nll_loss\nprobe(c)\n", "c").expects is Output.LOG_PROBABILITIES
    src = "from tensorflow import keras\nl = keras.losses.SparseCategoricalCrossentropy({})\nprobe(l)\n"
    assert what(src.format(""), "l").expects is Output.PROBABILITIES
    assert what(src.format("from_logits=True"), "l").expects is Output.LOGITS
    assert what(src.format("from_logits=flag"), "l").expects is None
    assert what(src.format("True"), "l").expects is Output.LOGITS


def test_a_loss_kept_on_self_and_used_in_a_method():
    loss = what(HEAD + """
class Trainer:
    def __init__(self):
        self.criterion = nn.BCEWithLogitsLoss()
    def step(self, x, y):
        probe(self.criterion)
""", "self.criterion")
    assert isinstance(loss, Loss) and loss.expects is Output.LOGITS and loss.targets == "binary"


def test_loaders_and_optimizers():
    src = HEAD + """
def make_loader(ds, train):
    return DataLoader(ds, batch_size=8, shuffle=train)
train_loader = DataLoader(train_ds, batch_size=32, shuffle=True)
eval_loader = DataLoader(eval_ds, 32)
other = make_loader(ds, True)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
probe(train_loader); probe(eval_loader); probe(other); probe(opt)
"""
    assert what(src, "train_loader").shuffle is True
    assert what(src, "eval_loader").shuffle is False
    assert isinstance(what(src, "other"), Loader) and what(src, "other").shuffle is None
    opt = what(src, "opt")
    assert isinstance(opt, Optimizer) and opt.name == "AdamW"


# ---------------------------------------------------------------- tensors and numbers


def test_what_a_forward_returns_and_whether_it_carries_a_graph():
    src = HEAD + """
model = nn.Sequential(nn.Linear(4, 3), nn.Softmax(dim=1))
criterion = nn.CrossEntropyLoss()
for x, y in loader:
    out = model(x)
    loss = criterion(out, y)
    probe(out); probe(loss); probe(loss.item()); probe(loss.detach()); probe(loss.data)
with torch.no_grad():
    val = model(x)
    probe(val)
"""
    out = what(src, "out")
    assert isinstance(out, Tensor) and out.output is Output.PROBABILITIES and out.graph is True
    loss = what(src, "loss")
    assert isinstance(loss, Tensor) and loss.loss and loss.graph is True
    assert isinstance(what(src, "loss.item()"), Number)
    assert what(src, "loss.detach()").graph is False
    assert what(src, "loss.data").graph is False
    assert what(src, "val").graph is False


def test_a_function_called_only_under_no_grad_records_no_graph():
    src = HEAD + """
model = nn.Linear(4, 2)
def evaluate(batch):
    out = model(batch)
    probe(out)
    return out
with torch.no_grad():
    evaluate(x)
"""
    assert what(src, "out").graph is False
    uncalled = src.replace("with torch.no_grad():\n    evaluate(x)\n", "")
    assert what(uncalled, "out").graph is None


def test_volatile_variables_record_no_graph():
    src = HEAD + """
from torch.autograd import Variable
model = nn.Linear(4, 2)
x = Variable(images, volatile=True)
out = model(x)
probe(out)
"""
    assert what(src, "out").graph is False


def test_a_name_rebound_to_a_python_number_is_a_number():
    src = HEAD + """
total = 0.0
for x, y in loader:
    loss = criterion(model(x), y)
    total = total + loss.item()
probe(total)
"""
    assert isinstance(what(src, "total"), Number)


def test_a_helper_returning_a_number_or_a_detached_tensor():
    src = HEAD + """
model = nn.Linear(4, 2)
def step(x, y):
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    return loss.item()
def peek(x):
    return model(x).detach()
probe(step(x, y)); probe(peek(x))
"""
    assert isinstance(what(src, "step(x, y)"), Number)
    assert what(src, "peek(x)").graph is False


def test_softmax_through_a_method_of_the_model():
    src = HEAD + """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
    def forward(self, x):
        x = self.fc(x)
        return F.softmax(x, dim=1)
net = Net()
probe(net(inputs))
"""
    assert what(src, "net(inputs)").output is Output.PROBABILITIES


def test_a_parameter_the_callers_disagree_on_is_unknown():
    src = HEAD + """
def run(m):
    probe(m)
run(nn.Sequential(nn.Linear(2, 2)))
run(nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.1)))
"""
    m = what(src, "m")
    assert isinstance(m, Module) and m.mode_dependent is None


@pytest.mark.parametrize("expr", ["model", "criterion"])
def test_nothing_is_guessed_for_objects_the_file_does_not_make(expr):
    src = HEAD + f"""
def train(model, criterion):
    probe({expr})
"""
    assert what(src, expr) is None


# ---------------------------------------------------------------- tokenizers and what they return


TOK_HEAD = """
import numpy as np
from transformers import AutoTokenizer, BertTokenizer
"""


def test_a_transformers_tokenizer_call_returns_a_batch_encoding():
    from trainlint.facts.objects import Encoding, Tokenizer

    src = TOK_HEAD + """
tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
enc = tokenizer(texts, padding=True, return_tensors="np")
batch = BertTokenizer.from_pretrained("bert-base-uncased").batch_encode_plus(list(texts), return_tensors="tf")

class Data:
    def __init__(self):
        self.tok = AutoTokenizer.from_pretrained("gpt2")

    def encode(self, texts):
        return self.tok(texts)

def encode(texts):
    return tokenizer(texts, truncation=True)

probe(tokenizer)
probe(enc)
probe(batch)
probe(encode(texts))
data = Data()
probe(data.encode(texts))
"""
    assert isinstance(what(src, "tokenizer"), Tokenizer) and not what(src, "tokenizer").processor
    for target in ("enc", "batch", "encode(texts)", "data.encode(texts)"):
        assert isinstance(what(src, target), Encoding), target


def test_what_is_not_a_tokenizers_output_is_not_an_encoding():
    src = TOK_HEAD + """
from transformers import AutoProcessor
import tokenizers

def tokenizer_fn(texts):
    return np.array([[len(t)] for t in texts])

tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
enc = tokenizer(texts)
processor = AutoProcessor.from_pretrained("openai/clip-vit-base-patch32")
raw = tokenizers.Tokenizer.from_pretrained("bert-base-uncased")
probe(tokenizer_fn(texts))
probe(dict(enc))
probe(enc["input_ids"])
probe(processor(text=texts))
probe(raw.encode_batch(texts))
"""
    for target in ("tokenizer_fn(texts)", "dict(enc)", 'enc["input_ids"]', "processor(text=texts)",
                   "raw.encode_batch(texts)"):
        assert what(src, target) is None, target


# ---------------------------------------------------------------- widths, scores, labels and Keras losses

KERAS_HEAD = """
import numpy as np
import tensorflow as tf
from tensorflow import keras
from tensorflow.keras import layers
"""


def test_the_width_of_an_output_follows_the_last_layer_that_sets_it():
    src = HEAD + """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1), nn.ReLU(), nn.Dropout(0.1))

    def forward(self, x):
        return self.body(x)

model = Net()
fc = nn.Linear(16, 3)
probe(model)
probe(model(x))
probe(fc(x).float())
probe(fc(x).view(-1))
"""
    m = what(src, "model")
    assert isinstance(m, Module) and m.units == 1 and m.output is None  # the dropout last: values unknown
    assert what(src, "model(x)").units == 1
    assert what(src, "fc(x).float()").units == 3 and what(src, "fc(x).float()").output is Output.LOGITS
    assert what(src, "fc(x).view(-1)").units is None


def test_a_softmax_says_what_it_normalises_and_where_that_is_made():
    src = HEAD + """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(784, 10)

    def forward(self, x):
        x = F.relu(self.l1(x))
        return F.log_softmax(x, dim=1)

seq = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.LogSoftmax(dim=1))
model = Net()
fc = nn.Linear(16, 10)
probe(model(x))
probe(seq)
probe(F.softmax(fc(x), dim=-1))
"""
    t = what(src, "model(x)")
    assert isinstance(t, Tensor) and t.output is Output.LOG_PROBABILITIES and t.scores is Output.NON_NEGATIVE
    assert isinstance(t.scores_origin, cst.Call) and t.scores_origin.func.attr.value == "relu"
    seq = what(src, "seq")
    assert seq.scores is Output.NON_NEGATIVE and seq.output is Output.LOG_PROBABILITIES
    soft = what(src, "F.softmax(fc(x), dim=-1)")
    assert soft.output is Output.PROBABILITIES and soft.scores is Output.LOGITS and soft.units == 10


def test_keras_sequential_output_is_known_from_its_last_layer_when_earlier_ones_are_not():
    src = KERAS_HEAD + """
keras_alias = tf.keras
base = keras.applications.MobileNetV2(include_top=False)
head = keras_alias.layers.Dense(1)
model = keras.Sequential([base, layers.GlobalAveragePooling2D(), head])
probe(model)
"""
    m = what(src, "model")
    assert isinstance(m, Module) and m.layers is None
    assert m.output is Output.LOGITS and m.units == 1 and m.origin is not None


def test_keras_functional_layers_keep_the_width_and_the_scores():
    src = KERAS_HEAD + """
inputs = keras.Input(shape=(8,))
x = layers.Dense(1)(inputs)
outputs = layers.Activation("softmax")(x)
model = keras.Model(inputs, outputs)
probe(outputs)
probe(model)
"""
    t = what(src, "outputs")
    assert t.output is Output.PROBABILITIES and t.units == 1 and t.scores is Output.LOGITS
    assert what(src, "model").units == 1


def test_a_compiled_loss_given_as_a_string():
    facts = _facts(KERAS_HEAD + """
name = "categorical_crossentropy"
model.compile(loss="bce")
model.compile(loss=name)
model.compile(loss="mse")
model.compile(loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
""")
    p = program(facts)
    calls = [c for c in facts.index["Call"] if isinstance(c.func, cst.Attribute) and c.func.attr.value == "compile"]
    got = [p.compiled_loss(c.args[0].value, c) for c in calls]
    assert got[0].name == "binary_crossentropy" and got[0].expects is Output.SIGMOID and got[0].targets == "binary"
    assert got[1].name == "categorical_crossentropy" and got[1].expects is Output.PROBABILITIES
    assert got[2] is None
    assert got[3].expects is Output.LOGITS and got[3].targets == "class ids"


def test_tensorflow_activations_and_tuples_returned_by_a_helper():
    src = KERAS_HEAD + """
def heads(pred, classes):
    box, obj, cls = tf.split(pred, (4, 1, classes), axis=-1)
    cls = tf.sigmoid(cls)
    return box, tf.nn.softmax(obj), cls

box, obj, cls = heads(y_pred, 80)
probe(cls)
probe(obj)
probe(box)
"""
    assert what(src, "cls").output is Output.SIGMOID
    assert what(src, "obj").output is Output.PROBABILITIES
    assert what(src, "box") is None


def test_how_labels_are_encoded():
    src = KERAS_HEAD + """
from tensorflow.keras.datasets import mnist

(x_train, y_train), (x_test, y_test) = mnist.load_data()
y_onehot = keras.utils.to_categorical(y_train, 10)
rows = np.array([[0, 1], [1, 0]])
ids = np.array([0, 2, 1])
floats = np.array([[0.], [1.]])
probe(y_train)
probe(x_train)
probe(y_onehot)
probe(rows)
probe(ids)
probe(floats)
probe(np.argmax(y_onehot, axis=1))
"""
    assert what(src, "y_train").output is Output.CLASS_IDS
    assert what(src, "x_train") is None
    assert what(src, "y_onehot").output is Output.ONE_HOT
    assert what(src, "rows").output is Output.ONE_HOT
    assert what(src, "ids").output is Output.CLASS_IDS
    assert what(src, "floats") is None
    assert what(src, "np.argmax(y_onehot, axis=1)").output is Output.CLASS_IDS


def test_a_sequential_has_only_the_layers_added_while_its_name_holds_it():
    # a notebook that binds `model` to several models in turn: the adds of one are not the layers of another
    src = KERAS_HEAD + """
model = keras.models.Sequential()
model.add(layers.Dense(16, activation="relu"))
model.add(layers.Dense(1, activation="sigmoid"))
model.compile(loss="binary_crossentropy", optimizer="adam")
probe(model)

model = keras.models.Sequential([layers.Flatten(), layers.Dense(10, activation="softmax")])
model.compile(loss="sparse_categorical_crossentropy", optimizer="adam")
probe(model)
"""
    first, second = what(src, "model", 0), what(src, "model", 1)
    assert [layer.name for layer in first.layers] == ["Dense", "Dense"] and first.output is Output.SIGMOID
    assert [layer.name for layer in second.layers] == ["Flatten", "Dense"] and second.output is Output.PROBABILITIES
    assert second.units == 10


def test_a_linear_activation_passes_its_input_through():
    src = KERAS_HEAD + """
inputs = keras.Input(shape=(784,))
x = layers.Dense(10, activation="softmax")(inputs)
outputs = layers.Activation("linear", dtype="float32")(x)
model = keras.Model(inputs=inputs, outputs=outputs)
seq = keras.Sequential([layers.Dense(10, activation="softmax"), layers.Activation("linear")])
probe(model)
probe(seq)
"""
    assert what(src, "model").output is Output.PROBABILITIES
    assert what(src, "seq").output is Output.PROBABILITIES


def test_a_layer_with_its_own_softmax_normalises_its_own_scores():
    # whatever its width: `Dense(n_outputs, activation="softmax")` with `n_outputs` read from an environment
    src = KERAS_HEAD + """
n_outputs = env.action_space.n
model = keras.Sequential([layers.Dense(32, activation="relu"), layers.Dense(n_outputs, activation="softmax")])
stacked = keras.Sequential([layers.Dense(32, activation="relu"), layers.Activation("softmax")])
probe(model)
probe(stacked)
"""
    assert what(src, "model").output is Output.PROBABILITIES and what(src, "model").scores is Output.LOGITS
    assert what(src, "stacked").scores is Output.NON_NEGATIVE


def test_names_unpacked_from_a_method_of_the_file():
    src = HEAD + """
class Builder:
    def build(self):
        head = nn.Linear(8, 1)
        return nn.Sequential(nn.Linear(4, 8), nn.ReLU()), head

builder = Builder()
body, head = builder.build()
probe(head)
"""
    assert what(src, "head").units == 1
