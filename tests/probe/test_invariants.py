"""Probe invariants that find a bug whatever the source looks like, with no static finding to confirm:
each on a correct script (all clear) and on a buggy one written as real scripts write it (found, with
its code, at the user's line), on the Trainer, a hand-written loop and Keras where it applies. One probe
child per script."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from support import need_modules
from trainlint.findings import ProbeStatus
from trainlint.probe import ProbeOptions, ProbeReport, run_probe

pytestmark = pytest.mark.probe


def _probe(tmp_path: Path, source: str, **options) -> ProbeReport:
    script = tmp_path / "train.py"
    script.write_text(source, encoding="utf-8")
    options.setdefault("timeout", 180.0)
    return run_probe(script, [], ProbeOptions(**options))


def _line(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


def _explain(report: ProbeReport) -> str:
    return "\n".join([f"outcome={report.outcome}"] + [
        f"{f.code}@{f.start.row} {f.probe.status.value if f.probe else '-'} {f.message} :: "
        f"{f.probe.evidence if f.probe else ''}" for f in report.findings] + report.notes + report.incomplete)


def _found(report: ProbeReport, code: str, source: str, at: str):
    found = [f for f in report.findings if f.code == code]
    assert len(found) == 1, _explain(report)
    assert found[0].probe.status is ProbeStatus.CONFIRMED, _explain(report)
    assert found[0].start.row == _line(source, at), _explain(report)
    return found[0]


def _clear(report: ProbeReport, besides: tuple[str, ...] = ()) -> None:
    assert report.outcome == "reached-training", _explain(report)
    assert [f for f in report.findings if f.code not in besides] == [], _explain(report)
    assert report.complete, _explain(report)


def _fix(source: str, bug: str, fixed: str) -> str:
    assert bug in source
    return source.replace(bug, fixed)


# ---------------------------------------------------------------- TL311: dropout on in evaluation

LOOP_DROPOUT = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(20, 64)
        self.fc2 = nn.Linear(64, 3)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.dropout(x, p=0.5)
        return self.fc2(x)


torch.manual_seed(0)
X = torch.randn(64, 20)
y = torch.randint(0, 3, (64,))
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
for epoch in range(10):
    model.train()
    for i in range(0, 64, 16):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(X[i:i + 16]), y[i:i + 16])
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        accuracy = (model(X).argmax(-1) == y).float().mean()
'''

TRAINER_DROPOUT = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F
from datasets import Dataset
from transformers import Trainer, TrainingArguments


class Classifier(nn.Module):
    def __init__(self, vocab=50, dim=32, classes=3):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, input_ids, labels=None):
        pooled = self.embed(input_ids).mean(1)
        pooled = F.dropout(pooled, p=0.3)
        logits = self.head(pooled)
        loss = F.cross_entropy(logits, labels) if labels is not None else None
        return {"loss": loss, "logits": logits}


torch.manual_seed(0)
rows = [{"input_ids": [(i * 7 + j) % 50 for j in range(8)], "labels": i % 3} for i in range(96)]
train = Dataset.from_list(rows[:64])
test = Dataset.from_list(rows[64:])
args = TrainingArguments("out", per_device_train_batch_size=8, learning_rate=1e-3, num_train_epochs=1,
                         eval_strategy="epoch", report_to="none")
trainer = Trainer(model=Classifier(), args=args, train_dataset=train, eval_dataset=test)
trainer.train()
'''


@pytest.fixture(scope="module")
def torch_ready():
    need_modules("torch", "transformers", "datasets")


def test_loop_functional_dropout_at_eval(torch_ready, tmp_path):
    report = _probe(tmp_path, LOOP_DROPOUT)
    f = _found(report, "TL311", LOOP_DROPOUT, "F.dropout(x, p=0.5)")
    assert "differ by up to" in f.probe.evidence and "dropout" in f.probe.evidence


def test_loop_functional_dropout_with_the_flag_is_clear(torch_ready, tmp_path):
    _clear(_probe(tmp_path, _fix(LOOP_DROPOUT, "p=0.5)", "p=0.5, training=self.training)")))


def test_trainer_functional_dropout_at_eval(torch_ready, tmp_path):
    report = _probe(tmp_path, TRAINER_DROPOUT)
    f = _found(report, "TL311", TRAINER_DROPOUT, "F.dropout(pooled, p=0.3)")
    assert "trainer.evaluate()" in f.message


def test_trainer_functional_dropout_with_the_flag_is_clear(torch_ready, tmp_path):
    _clear(_probe(tmp_path, _fix(TRAINER_DROPOUT, "p=0.3)", "p=0.3, training=self.training)")))


# ---------------------------------------------------------------- TL608: evaluation on the training data

TRAINER_CLEAN = _fix(TRAINER_DROPOUT, "p=0.3)", "p=0.3, training=self.training)")


def test_trainer_evaluates_on_its_training_data(torch_ready, tmp_path):
    source = _fix(TRAINER_CLEAN, "eval_dataset=test)", "eval_dataset=train)")
    f = _found(_probe(tmp_path, source), "TL608", source, "trainer.train()")
    assert "the same dataset object" in f.probe.evidence


def test_trainer_evaluates_on_a_selection_of_its_training_data(torch_ready, tmp_path):
    source = _fix(TRAINER_CLEAN, "test = Dataset.from_list(rows[64:])", "test = train.shuffle(seed=1).select(range(16))")
    f = _found(_probe(tmp_path, source), "TL608", source, "trainer.train()")
    assert "each of the first 16 evaluation examples is a training example" in f.probe.evidence


LOOP_LOADERS = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset, random_split

torch.manual_seed(0)
data = TensorDataset(torch.randn(200, 20), torch.randint(0, 3, (200,)))
train_ds, val_ds = random_split(data, [160, 40])
train_loader = DataLoader(train_ds, batch_size=16, shuffle=True)
val_loader = DataLoader(val_ds, batch_size=16)
model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 3))
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(5):
    model.train()
    for x, y in train_loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        correct = sum((model(x).argmax(-1) == y).sum().item() for x, y in val_loader)
'''


def test_loop_validates_on_the_training_set(torch_ready, tmp_path):
    source = _fix(LOOP_LOADERS, "DataLoader(val_ds, batch_size=16)", "DataLoader(train_ds, batch_size=16)")
    f = _found(_probe(tmp_path, source), "TL608", source, "optimizer.step()")
    assert "`val_loader` evaluates on the training data" in f.message


def test_loop_with_a_held_out_split_is_clear(torch_ready, tmp_path):
    _clear(_probe(tmp_path, LOOP_LOADERS))


# ---------------------------------------------------------------- Keras: TL311, TL608

KERAS = '''\
import numpy as np
import tensorflow as tf
from tensorflow import keras


class NoisyDense(keras.layers.Layer):
    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(units, activation="relu")

    def call(self, x):
        return tf.nn.dropout(self.dense(x), rate=0.3)


rng = np.random.default_rng(0)
x_train = rng.normal(size=(256, 20)).astype("float32")
y_train = rng.integers(0, 3, 256)
x_val = rng.normal(size=(64, 20)).astype("float32")
y_val = rng.integers(0, 3, 64)
model = keras.Sequential([keras.Input((20,)), NoisyDense(32), keras.layers.Dense(3)])
model.compile(optimizer=keras.optimizers.Adam(1e-3),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
model.fit(x_train, y_train, validation_data=(x_val, y_val), epochs=3, batch_size=32)
'''
KERAS_FIXED = _fix(_fix(KERAS, "    def call(self, x):\n        return tf.nn.dropout(self.dense(x), rate=0.3)",
                        "    def call(self, x, training=None):\n        return self.drop(self.dense(x), training=training)"),
                   '        self.dense = keras.layers.Dense(units, activation="relu")\n',
                   '        self.dense = keras.layers.Dense(units, activation="relu")\n'
                   '        self.drop = keras.layers.Dropout(0.3)\n')


@pytest.fixture(scope="module")
def keras_python() -> str:
    configured = os.environ.get("TRAINLINT_KERAS_PYTHON")
    path = Path(configured) if configured else Path(__file__).resolve().parents[2] / ".venv-tf" / "bin" / "python"
    if not path.exists():
        pytest.skip(f"no TensorFlow environment at {path} (TRAINLINT_KERAS_PYTHON)")
    return str(path)


@pytest.mark.keras
def test_keras_dropout_called_whatever_training_is(keras_python, tmp_path):
    report = _probe(tmp_path, KERAS, python=keras_python)
    f = _found(report, "TL311", KERAS, "tf.nn.dropout(self.dense(x)")
    assert "tf.nn.dropout" in f.probe.evidence


@pytest.mark.keras
def test_keras_validates_on_its_training_arrays(keras_python, tmp_path):
    source = _fix(KERAS_FIXED, "validation_data=(x_val, y_val)", "validation_data=(x_train, y_train)")
    f = _found(_probe(tmp_path, source, python=keras_python), "TL608", source, "model.fit(")
    assert "the same object" in f.probe.evidence


@pytest.mark.keras
def test_keras_correct_script_is_clear(keras_python, tmp_path):
    _clear(_probe(tmp_path, KERAS_FIXED, python=keras_python))


# ---------------------------------------------------------------- TL208: the EOS labels masked with the padding

CLM = '''\
import torch
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import (
    DataCollatorForLanguageModeling,
    GPT2Config,
    GPT2LMHeadModel,
    PreTrainedTokenizerFast,
    Trainer,
    TrainingArguments,
)

words = "the a cat dog sat ran on under mat log and then".split()
vocab = {w: i for i, w in enumerate(["<unk>", "<eos>", "<pad>"] + words)}
backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
backend.pre_tokenizer = pre_tokenizers.Whitespace()
tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="<unk>", eos_token="<eos>")
tokenizer.pad_token = tokenizer.eos_token


def tokenize(batch):
    ids = tokenizer(batch["text"])["input_ids"]
    return {"input_ids": [x + [tokenizer.eos_token_id] for x in ids]}


texts = [" ".join(words[(i + j) % len(words)] for j in range(3 + i % 5)) for i in range(64)]
train = Dataset.from_dict({"text": texts}).map(tokenize, batched=True, remove_columns=["text"])
torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(vocab_size=len(vocab), n_positions=32, n_embd=32, n_layer=1, n_head=2,
                                   bos_token_id=1, eos_token_id=1))
collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)
'''
CLM_TRAINER = CLM + '''\
args = TrainingArguments("out", per_device_train_batch_size=8, num_train_epochs=1, learning_rate=5e-4, report_to="none")
trainer = Trainer(model=model, args=args, train_dataset=train, data_collator=collator)
trainer.train()
'''
CLM_LOOP = CLM + '''\
loader = torch.utils.data.DataLoader(train, batch_size=8, shuffle=True, collate_fn=collator)
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-4)
model.train()
for epoch in range(3):
    for batch in loader:
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
'''
PAD_FIX = ("tokenizer.pad_token = tokenizer.eos_token", 'tokenizer.pad_token = "<pad>"')


def test_trainer_masks_every_eos_label(torch_ready, tmp_path):
    f = _found(_probe(tmp_path, CLM_TRAINER), "TL208", CLM_TRAINER, "trainer.train()")
    assert "DataCollatorForLanguageModeling" in f.message and "pad_token_id = 1" in f.probe.evidence


def test_trainer_with_its_own_pad_token_is_clear(torch_ready, tmp_path):
    # TL407 takes a language model's config.num_labels (2 by default) for a classification head: the
    # initial-loss expectation is not what this test is about
    _clear(_probe(tmp_path, _fix(CLM_TRAINER, *PAD_FIX)), besides=("TL407",))


def test_loop_masks_every_eos_label(torch_ready, tmp_path):
    f = _found(_probe(tmp_path, CLM_LOOP), "TL208", CLM_LOOP, "loss.backward()")
    assert "every one of its labels is -100" in f.probe.evidence


def test_loop_with_its_own_pad_token_is_clear(torch_ready, tmp_path):
    _clear(_probe(tmp_path, _fix(CLM_LOOP, *PAD_FIX)))


# ---------------------------------------------------------------- TL406: a first loss of 0, or from no label

PROMPTS = CLM.replace("tokenizer.pad_token = tokenizer.eos_token", 'tokenizer.pad_token = "<pad>"').replace(
    "collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)\n", "") + '''\
from transformers import DataCollatorForSeq2Seq

MAX_LENGTH = 8


def with_answer(example):
    prompt = tokenizer(example["prompt"])["input_ids"]
    answer = tokenizer(example["answer"])["input_ids"] + [tokenizer.eos_token_id]
    return {"input_ids": (prompt + answer)[:MAX_LENGTH],
            "labels": ([-100] * len(prompt) + answer)[:MAX_LENGTH]}


pairs = Dataset.from_dict({"prompt": [t + " and then the cat sat on the mat" for t in texts],
                           "answer": [t.split()[0] for t in texts]})
train = pairs.map(with_answer, remove_columns=["prompt", "answer"])
args = TrainingArguments("out", per_device_train_batch_size=8, num_train_epochs=1, learning_rate=5e-4, report_to="none")
trainer = Trainer(model=model, args=args, train_dataset=train, data_collator=DataCollatorForSeq2Seq(tokenizer))
trainer.train()
'''


def test_trainer_labels_all_ignored_after_truncation(torch_ready, tmp_path):
    f = _found(_probe(tmp_path, PROMPTS), "TL406", PROMPTS, "trainer.train()")
    assert "every label of the training batch is -100" in f.message


def test_trainer_labels_that_keep_the_answer_are_clear(torch_ready, tmp_path):
    _clear(_probe(tmp_path, _fix(PROMPTS, "MAX_LENGTH = 8", "MAX_LENGTH = 32")), besides=("TL407",))


LOOP_ONE_LOGIT = '''\
import torch
import torch.nn as nn

torch.manual_seed(0)
X = torch.randn(128, 20)
y = (X[:, 0] > 0).float().unsqueeze(1)
model = nn.Sequential(nn.Linear(20, 16), nn.ReLU(), nn.Linear(16, 1))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
for epoch in range(20):
    for i in range(0, 128, 32):
        optimizer.zero_grad()
        loss = criterion(model(X[i:i + 32]), y[i:i + 32])
        loss.backward()
        optimizer.step()
'''


def test_loop_loss_exactly_zero(torch_ready, tmp_path):
    f = _found(_probe(tmp_path, LOOP_ONE_LOGIT), "TL406", LOOP_ONE_LOGIT, "loss.backward()")
    assert "exactly 0" in f.message


def test_loop_binary_loss_on_one_logit_is_clear(torch_ready, tmp_path):
    _clear(_probe(tmp_path, _fix(LOOP_ONE_LOGIT, "nn.CrossEntropyLoss()", "nn.BCEWithLogitsLoss()")))


KERAS_ONE_UNIT = '''\
import numpy as np
from tensorflow import keras

rng = np.random.default_rng(0)
x = rng.normal(size=(256, 10)).astype("float32")
y = (x[:, 0] > 0).astype("float32").reshape(-1, 1)
model = keras.Sequential([keras.Input((10,)), keras.layers.Dense(16, activation="relu"),
                          keras.layers.Dense(1, activation="softmax")])
model.compile(optimizer="adam", loss="categorical_crossentropy", metrics=["accuracy"])
model.fit(x, y, epochs=5, batch_size=32)
'''


@pytest.mark.keras
def test_keras_loss_exactly_zero(keras_python, tmp_path):
    f = _found(_probe(tmp_path, KERAS_ONE_UNIT, python=keras_python), "TL406", KERAS_ONE_UNIT, "model.fit(")
    assert "exactly 0 for every sample" in f.message


@pytest.mark.keras
def test_keras_sigmoid_unit_with_binary_loss_is_clear(keras_python, tmp_path):
    source = _fix(_fix(KERAS_ONE_UNIT, "activation=\"softmax\"", "activation=\"sigmoid\""),
                  "loss=\"categorical_crossentropy\"", "loss=\"binary_crossentropy\"")
    _clear(_probe(tmp_path, source, python=keras_python))


# ---------------------------------------------------------------- TL504: parameters replaced after the optimizer

LOOP_NEW_HEAD = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Net(nn.Module):
    def __init__(self, classes=2):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(20, 32), nn.ReLU())
        self.head = nn.Linear(32, classes)

    def forward(self, x):
        return self.head(self.body(x))


torch.manual_seed(0)
X = torch.randn(128, 20)
y = torch.randint(0, 5, (128,))
model = Net()
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
model.head = nn.Linear(32, 5)
for epoch in range(10):
    for i in range(0, 128, 32):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(X[i:i + 32]), y[i:i + 32])
        loss.backward()
        optimizer.step()
'''
HEAD_FIRST = ("optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)\nmodel.head = nn.Linear(32, 5)\n",
              "model.head = nn.Linear(32, 5)\noptimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)\n")


def test_loop_optimizer_built_before_the_head_was_replaced(torch_ready, tmp_path):
    report = _probe(tmp_path, LOOP_NEW_HEAD)
    f = _found(report, "TL504", LOOP_NEW_HEAD, "optimizer.step()")
    assert "['head.weight', 'head.bias']" in f.message
    assert [f.code for f in report.findings] == ["TL504"]  # not TL308 for the old head's tensors


def test_loop_optimizer_built_after_the_head_is_clear(torch_ready, tmp_path):
    _clear(_probe(tmp_path, _fix(LOOP_NEW_HEAD, *HEAD_FIRST)))


TRAINER_NEW_HEAD = TRAINER_CLEAN.replace(
    "trainer = Trainer(model=Classifier(), args=args, train_dataset=train, eval_dataset=test)\n", '''\
model = Classifier(classes=2)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
model.head = nn.Linear(32, 3)
trainer = Trainer(model=model, args=args, train_dataset=train, eval_dataset=test, optimizers=(optimizer, None))
''')
TRAINER_HEAD_FIRST = ("optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)\nmodel.head = nn.Linear(32, 3)\n",
                      "model.head = nn.Linear(32, 3)\noptimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)\n")


def test_trainer_optimizer_built_before_the_head_was_replaced(torch_ready, tmp_path):
    assert "optimizers=(optimizer, None)" in TRAINER_NEW_HEAD
    f = _found(_probe(tmp_path, TRAINER_NEW_HEAD), "TL504", TRAINER_NEW_HEAD, "trainer.train()")
    assert "head.weight" in f.message


def test_trainer_optimizer_built_after_the_head_is_clear(torch_ready, tmp_path):
    _clear(_probe(tmp_path, _fix(TRAINER_NEW_HEAD, *TRAINER_HEAD_FIRST)))


# ---------------------------------------------------------------- TL308: trainable parameters without a gradient

LOOP_CHECKPOINTED = '''\
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


class Encoder(nn.Module):
    def __init__(self, vocab=50, dim=32, classes=3):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.blocks = nn.ModuleList([nn.Linear(dim, dim) for _ in range(2)])
        self.head = nn.Linear(dim, classes)

    def forward(self, ids):
        x = self.embed(ids)
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=True)
        return self.head(x.mean(1))


torch.manual_seed(0)
ids = torch.randint(0, 50, (64, 12))
y = torch.randint(0, 3, (64,))
model = Encoder()
model.embed.weight.requires_grad_(False)  # pretrained embeddings stay frozen
optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3)
for epoch in range(5):
    for i in range(0, 64, 16):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(ids[i:i + 16]), y[i:i + 16])
        loss.backward()
        optimizer.step()
'''


# transformers' own models turn on the inputs' gradients with checkpointing (5.x): a model of the script's own
TRAINER_CHECKPOINTED = LOOP_CHECKPOINTED.split("torch.manual_seed(0)")[0].replace(
    "    def forward(self, ids):\n        x = self.embed(ids)",
    "    def forward(self, input_ids, labels=None):\n        x = self.embed(input_ids)").replace(
    "        return self.head(x.mean(1))",
    "        logits = self.head(x.mean(1))\n        return {\"loss\": F.cross_entropy(logits, labels), \"logits\": logits}") + '''\
from datasets import Dataset
from transformers import Trainer, TrainingArguments

torch.manual_seed(0)
rows = [{"input_ids": [(i * 7 + j) % 50 for j in range(8)], "labels": i % 3} for i in range(96)]
model = Encoder()
model.embed.weight.requires_grad_(False)  # pretrained embeddings stay frozen
args = TrainingArguments("out", per_device_train_batch_size=8, learning_rate=1e-3, num_train_epochs=1, report_to="none")
trainer = Trainer(model=model, args=args, train_dataset=Dataset.from_list(rows[:64]),
                  eval_dataset=Dataset.from_list(rows[64:]))
trainer.train()
'''


CHECKPOINTED = [(LOOP_CHECKPOINTED, "loss.backward()"), (TRAINER_CHECKPOINTED, "trainer.train()")]


@pytest.mark.parametrize(("source", "at"), CHECKPOINTED, ids=["loop", "trainer"])
def test_reentrant_checkpoint_over_frozen_embeddings(torch_ready, tmp_path, source, at):
    f = _found(_probe(tmp_path, source), "TL308", source, at)
    assert "4 of 6 trainable parameters got no gradient" in f.message and "blocks.0.weight" in f.message


@pytest.mark.parametrize(("source", "at"), CHECKPOINTED, ids=["loop", "trainer"])
def test_non_reentrant_checkpoint_is_clear(torch_ready, tmp_path, source, at):
    _clear(_probe(tmp_path, _fix(source, "use_reentrant=True", "use_reentrant=False")))
