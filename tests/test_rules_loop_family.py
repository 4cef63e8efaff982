"""The hand-written-loop family of rules (TL209, TL309, TL311, TL509, TL608, TL708): the forms their real cases
take (a sampler on one branch, a loader built by a helper and trained by a method, a parameter moved in a
subclass, an option spelt in camel case, a validation split built by the same call, a counter or a grad
scaler in the accumulation), each next to the correct twin that must stay quiet."""

from __future__ import annotations

import textwrap

from trainlint.config import Settings
from trainlint.engine import lint_source
from trainlint.findings import Severity
from trainlint.fixes import apply_fixes


def lint(source: str, code: str):
    return [f for f in lint_source(textwrap.dedent(source), "train.py", Settings(select=[code])) if f.code == code]


def rows(source: str, code: str) -> list[int]:
    return [f.start.row for f in lint(source, code)]


def row_of(source: str, text: str, occurrence: int = 0) -> int:
    """The 1-based line of the dedented ``source`` that holds ``text`` (its ``occurrence``-th time)."""
    return [i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if text in line][occurrence]


# -- TL209 ----------------------------------------------------------------------------------------------

SAMPLER_ON_ONE_BRANCH = """
import torch
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


class Trainer:
    def __init__(self, model, optimizer):
        self.model, self.optimizer = model, optimizer

    def run_epoch(self, loader):
        self.model.train()
        for x, y in loader:
            self.optimizer.zero_grad()
            torch.nn.functional.cross_entropy(self.model(x), y).backward()
            self.optimizer.step()

    def fit(self, dataset, args):
        sampler = DistributedSampler(dataset) if args.distributed else None
        loader = DataLoader(dataset, batch_size=32, shuffle=sampler is None, sampler=sampler)
        for epoch in range(args.epochs):
            self.run_epoch(loader)
"""


def test_tl209_sampler_on_one_branch_feeds_a_method_run_every_epoch():
    assert rows(SAMPLER_ON_ONE_BRANCH, "TL209") == [row_of(SAMPLER_ON_ONE_BRANCH, "sampler = DistributedSampler")]


def test_tl209_silent_once_the_epoch_is_set_through_the_loader():
    fixed = SAMPLER_ON_ONE_BRANCH.replace("            self.run_epoch(loader)",
                                          "            if sampler is not None:\n"
                                          "                loader.sampler.set_epoch(epoch)\n"
                                          "            self.run_epoch(loader)")
    assert rows(fixed, "TL209") == []


LOADER_FROM_HELPER = """
from torch.utils.data import DataLoader, DistributedSampler


def make_loader(dataset, batch_size):
    return DataLoader(dataset, batch_size=batch_size, sampler=DistributedSampler(dataset), num_workers=4)


def main(dataset, model, optimizer, epochs):
    loader = make_loader(dataset, 64)
    step = 0
    while step < 10000:
        for batch in loader:
            loss = model(**batch).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            step += 1
"""


def test_tl209_loader_returned_by_a_helper_and_iterated_in_a_while_loop():
    assert rows(LOADER_FROM_HELPER, "TL209") == [row_of(LOADER_FROM_HELPER, "DistributedSampler(dataset)")]


def test_tl209_silent_when_the_loader_goes_to_a_framework_or_runs_one_epoch():
    prepared = LOADER_FROM_HELPER.replace("    loader = make_loader(dataset, 64)\n",
                                          "    loader = accelerator.prepare(make_loader(dataset, 64))\n")
    assert rows(prepared, "TL209") == []
    one_epoch = LOADER_FROM_HELPER.replace("while step < 10000:", "for _ in range(1):")
    assert rows(one_epoch, "TL209") == []


# -- TL309 ----------------------------------------------------------------------------------------------

PARAMETERS = """
import torch
import torch.nn as nn


class Base(nn.Module):
    pass


class Layer(Base):
    def __init__(self, n, device):
        super().__init__()
        self.a = nn.Parameter(torch.randn(n)).cuda()
        self.b = nn.Parameter(torch.randn(n)).to(device)
        self.c = nn.Parameter(torch.Tensor(n, n).uniform_(-0.1, 0.1)).double()
        self.d = nn.Parameter(torch.zeros(n, device=device)).to(device)
        self.e = nn.Parameter(torch.zeros(n).to(device))
        self.f = nn.Parameter(torch.ones(n)).float()
"""


def test_tl309_moves_and_casts_of_a_parameter_on_a_subclass_of_the_files_module():
    found = lint(PARAMETERS, "TL309")
    assert [f.start.row for f in found] == [row_of(PARAMETERS, "self.a ="), row_of(PARAMETERS, "self.b ="),
                                            row_of(PARAMETERS, "self.c =")]
    assert "on a GPU" in found[1].message and "on a GPU" not in found[0].message


def test_tl309_silent_when_torch_makes_tensors_on_the_gpu_by_default():
    source = PARAMETERS.replace("import torch.nn as nn\n", "import torch.nn as nn\ntorch.set_default_device('cuda')\n")
    assert rows(source, "TL309") == []


# -- TL311 ----------------------------------------------------------------------------------------------

ATTENTION = """
import torch


class Attention(torch.nn.Module):
    def __init__(self, size):
        super().__init__()
        self.q = torch.nn.Linear(size, size)
        self.rate = 0.1

    def attend(self, x):
        scores = torch.softmax(self.q(x) @ x.t(), dim=-1)
        return torch.nn.functional.dropout(scores, self.rate)

    def forward(self, x):
        return self.attend(x) @ x

    def sample(self, x):
        return torch.nn.functional.dropout(x, 0.5)


class Noise(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.alpha_dropout(x, 0.1)
"""


def test_tl311_in_a_method_forward_calls_not_in_other_methods():
    assert rows(ATTENTION, "TL311") == [row_of(ATTENTION, "return torch.nn.functional.dropout(scores")]


# -- TL509 ----------------------------------------------------------------------------------------------

OPTIONS = """
import argparse

import torch

parser = argparse.ArgumentParser()
group = parser.add_argument_group("optimizer")
group.add_argument("--learningRate", type=int, default=0.01)
group.add_argument("-w", dest="weight_decay", type=int)
group.add_argument("--lr-decay-samples", type=int, default=None)
group.add_argument("--lr_drop", type=int, default=200)
group.add_argument("--momentum", type=int, choices=[0, 1])
args = parser.parse_args()
"""


def test_tl509_camel_case_option_and_dest_name():
    found = lint(OPTIONS, "TL509")
    assert [f.start.row for f in found] == [row_of(OPTIONS, "--learningRate"), row_of(OPTIONS, '"-w"')]
    assert "defaults to 0.01" in found[0].message and "weight decay" in found[1].message


def test_tl509_fix_declares_float():
    fixed, applied = apply_fixes(textwrap.dedent(OPTIONS), lint(OPTIONS, "TL509"))
    assert len(applied) == 2
    assert 'group.add_argument("--learningRate", type=float, default=0.01)' in fixed
    assert 'group.add_argument("--lr_drop", type=int, default=200)' in fixed


# -- TL608 ----------------------------------------------------------------------------------------------

KERAS_FIT = """
import numpy as np
import keras

x_train = np.load("x.npy")
y_train = np.load("y.npy")
x, y = x_train, y_train
model = keras.Sequential([keras.layers.Dense(10, activation="softmax")])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
model.fit(x_train, y_train, epochs=5, validation_data=(x, y))
model.fit(x_train, y_train, epochs=5, validation_data=(x, np.load("y_val.npy")))
"""


def test_tl608_keras_validation_data_is_the_training_arrays_through_aliases():
    assert rows(KERAS_FIT, "TL608") == [row_of(KERAS_FIT, "validation_data=(x, y)")]


SAME_SPLIT_KWARGS = """
import torch
from torch.utils.data import DataLoader
from torchvision import datasets


def loaders(root, tf, **dl_kwargs):
    train_set = datasets.MNIST(root, train=True, transform=tf)
    val_set = datasets.MNIST(root, train=True, transform=tf)
    train_dl = DataLoader(train_set, shuffle=True, **dl_kwargs)
    val_dl = DataLoader(val_set, shuffle=False, **dl_kwargs)
    return train_dl, val_dl
"""


def test_tl608_validation_set_built_like_the_training_set_then_loaded_whole():
    assert rows(SAME_SPLIT_KWARGS, "TL608") == [row_of(SAME_SPLIT_KWARGS, "val_set = datasets.MNIST")]


def test_tl608_silent_when_a_sampler_or_a_rebinding_makes_them_differ():
    sampled = SAME_SPLIT_KWARGS.replace("val_dl = DataLoader(val_set, shuffle=False, **dl_kwargs)",
                                        "val_dl = DataLoader(val_set, sampler=held_out, **dl_kwargs)")
    assert rows(sampled, "TL608") == []
    rebound = SAME_SPLIT_KWARGS.replace("    val_set = datasets.MNIST", "    root = root + '/val'\n    val_set = datasets.MNIST")
    assert rows(rebound, "TL608") == []


VALIDATION_UNDER_A_TEST = """
import torch
from torch.utils.data import DataLoader


class Model:
    def fit(self, dataset, val_dataset=None, epochs=10):
        if not isinstance(dataset, DataLoader):
            dataset = DataLoader(dataset, shuffle=True)
        if val_dataset is not None and not isinstance(val_dataset, DataLoader):
            val_dataset = DataLoader(val_dataset)
        optimizer = torch.optim.SGD(self._model.parameters(), lr=0.005)
        losses = []
        for epoch in range(epochs):
            for images, targets in dataset:
                total_loss = sum(self._model(images, targets).values())
                optimizer.zero_grad()
                total_loss.backward()
                optimizer.step()
            if val_dataset is not None:
                avg_loss = 0
                with torch.no_grad():
                    for images, targets in dataset:
                        avg_loss += sum(self._model(images, targets).values()).item()
                losses.append(avg_loss / len(val_dataset.dataset))
        return losses
"""


def test_tl608_validation_block_iterates_the_training_loader():
    found = lint(VALIDATION_UNDER_A_TEST, "TL608")
    assert [f.start.row for f in found] == [row_of(VALIDATION_UNDER_A_TEST, "for images, targets in dataset:", 1)]
    assert "`val_dataset`" in found[0].message


def test_tl608_silent_once_the_validation_block_iterates_the_validation_loader():
    fixed = VALIDATION_UNDER_A_TEST.replace("                    for images, targets in dataset:",
                                            "                    for images, targets in val_dataset:")
    assert rows(fixed, "TL608") == []


# -- TL708 ----------------------------------------------------------------------------------------------

SCALER_LOOP = """
import torch


def train(model, loader, optimizer, scaler, accum):
    for epoch in range(10):
        for i, (x, y) in enumerate(loader):
            with torch.autocast("cuda"):
                loss = torch.nn.functional.cross_entropy(model(x), y) / accum
            if scaler is not None:
                scaler.scale(loss).backward()
            else:
                loss.backward()
            if (i + 1) % accum == 0 or i + 1 == len(loader):
                if scaler is not None:
                    scaler.step(optimizer)
                    scaler.update()
                else:
                    optimizer.step()
            optimizer.zero_grad(set_to_none=True)
"""


def test_tl708_zero_grad_after_the_step_test_on_every_pass():
    found = lint(SCALER_LOOP, "TL708")
    assert [f.start.row for f in found] == [row_of(SCALER_LOOP, "optimizer.zero_grad(set_to_none=True)")]
    assert found[0].severity is Severity.ERROR


def test_tl708_silent_when_zero_grad_moves_under_the_test():
    fixed = SCALER_LOOP.replace("            optimizer.zero_grad(set_to_none=True)",
                                "                optimizer.zero_grad(set_to_none=True)")
    assert rows(fixed, "TL708") == []


UNDIVIDED_SGD = """
import torch
import torch.nn as nn

model = nn.Sequential(nn.Linear(784, 128), nn.ReLU(), nn.Linear(128, 10))
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
accumulation_steps = 8
for epoch in range(5):
    for step, (images, labels) in enumerate(train_loader):
        outputs = model(images)
        loss = criterion(outputs, labels)
        loss.backward()
        if (step + 1) % accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""


def test_tl708_undivided_loss_with_sgd_is_a_warning():
    found = lint(UNDIVIDED_SGD, "TL708")
    assert [f.start.row for f in found] == [row_of(UNDIVIDED_SGD, "loss.backward()")]
    assert found[0].severity is Severity.WARNING


def test_tl708_silent_when_the_loss_is_divided_or_the_optimizer_is_adam():
    divided = UNDIVIDED_SGD.replace("loss = criterion(outputs, labels)",
                                    "loss = criterion(outputs, labels)\n        loss = loss / accumulation_steps")
    assert rows(divided, "TL708") == []
    adam = UNDIVIDED_SGD.replace("torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)",
                                 "torch.optim.Adam(model.parameters(), lr=1e-3)")
    assert rows(adam, "TL708") == []


ALTERNATING = """
def train(generator, discriminator, loader, opt_g, opt_d, n_critic):
    for i, (real, _) in enumerate(loader):
        opt_d.zero_grad()
        d_loss = discriminator(generator.sample(len(real))).mean() - discriminator(real).mean()
        d_loss.backward()
        opt_d.step()
        if i % n_critic == 0:
            opt_g.zero_grad()
            g_loss = -discriminator(generator.sample(len(real))).mean()
            g_loss.backward()
            opt_g.step()
"""


def test_tl708_silent_on_alternating_updates():
    assert rows(ALTERNATING, "TL708") == []


def test_messages_of_the_real_cases_stay_concise():
    from pathlib import Path

    cases = Path(__file__).resolve().parents[1] / "benchmarks" / "buggy" / "cases"
    codes = ("TL209", "TL309", "TL311", "TL509", "TL608", "TL708")
    seen = 0
    for path in sorted(cases.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        if not any(f"BUG {c}" in text for c in codes):
            continue
        for f in lint_source(text, path.name, Settings(select=list(codes))):
            seen += 1
            assert len(f.message) <= 160, f.message
    assert seen >= 16


ACCELERATE_PLAIN_BACKWARD = """
import argparse

from accelerate import Accelerator


def main(model, optimizer, data_loader, diffusion, args):
    accelerator = Accelerator(gradient_accumulation_steps=args.gradient_accumulation_steps,
                              mixed_precision=args.mixed_precision)
    model, optimizer, data_loader = accelerator.prepare(model, optimizer, data_loader)
    for epoch in range(args.epochs):
        for (img, mask) in data_loader:
            with accelerator.accumulate(model):
                loss = diffusion(mask, img)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
"""


def test_tl708_plain_backward_under_accelerate_accumulate():
    found = lint(ACCELERATE_PLAIN_BACKWARD, "TL708")
    assert [f.start.row for f in found] == [row_of(ACCELERATE_PLAIN_BACKWARD, "loss.backward()")]
    assert found[0].severity is Severity.WARNING


def test_tl708_silent_when_the_loss_goes_through_accelerate_or_is_divided():
    through = ACCELERATE_PLAIN_BACKWARD.replace("loss.backward()", "accelerator.backward(loss)")
    assert rows(through, "TL708") == []
    divided = ACCELERATE_PLAIN_BACKWARD.replace("loss = diffusion(mask, img)",
                                                "loss = diffusion(mask, img) / args.gradient_accumulation_steps")
    assert rows(divided, "TL708") == []


def test_tl608_reads_the_eval_strategy_as_the_trainer_does():
    # the strategy as a literal in any case, or as the IntervalStrategy member: "no" means no evaluation runs
    source = """
from transformers import IntervalStrategy, Trainer, TrainingArguments

def train(model, ds):
    args = TrainingArguments("out", eval_strategy={})
    trainer = Trainer(model=model, args=args, train_dataset=ds, eval_dataset=ds)
    trainer.train()
"""
    for silent in ('"no"', "IntervalStrategy.NO"):
        assert not lint(source.format(silent), "TL608"), silent
    for reported in ('"epoch"', '"EPOCH"', "IntervalStrategy.STEPS"):
        assert lint(source.format(reported), "TL608"), reported
