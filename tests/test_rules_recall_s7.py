"""Stage 7, the training loop: forms of real bugs the loop rules follow through the file's own code (a local
that names `self.model`, the methods of a wrapper object, a loss tracker's method, a pytorch-ignite handler),
each next to the correct twin that must stay quiet."""

from __future__ import annotations

import textwrap

from trainlint.config import Settings
from trainlint.engine import lint_source


def lint(source: str, code: str):
    return lint_source(textwrap.dedent(source), "train.py", Settings(select=[code]))


def rows(source: str, code: str) -> list[int]:
    return [f.start.row for f in lint(source, code) if f.code == code]


def row_of(source: str, text: str) -> int:
    """The 1-based line of the dedented ``source`` that holds ``text``."""
    return next(i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if text in line)


# -- TL702: a periodic evaluation through a local alias of `self.model` ---------------------------------

TRAINER_ALIAS = """
import torch
from transformers import AutoModelForSequenceClassification

class Classifier:
    def __init__(self, name):
        self.model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)

    def train(self, loader, eval_loader, args):
        model = self.model
        optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
        global_step = 0
        model.train()
        for epoch in range(args.epochs):
            for batch in loader:
                loss = model(**batch).loss
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                global_step += 1
                if global_step % args.eval_steps == 0:
                    results = self.evaluate(eval_loader)
        return global_step

    def evaluate(self, eval_loader):
        model = self.model
        model.eval()
        total = 0.0
        with torch.no_grad():
            for batch in eval_loader:
                total += model(**batch).loss.item()
        return total / len(eval_loader)
"""


def test_tl702_periodic_evaluation_through_a_local_alias_of_self_model():
    assert rows(TRAINER_ALIAS, "TL702") == [row_of(TRAINER_ALIAS, "results = self.evaluate(eval_loader)")]
    # switched back right after the evaluation (through the alias too)
    fixed = TRAINER_ALIAS.replace("results = self.evaluate(eval_loader)\n",
                                  "results = self.evaluate(eval_loader)\n                    model.train()\n")
    assert rows(fixed, "TL702") == []
    # the evaluation leaves the model as it found it
    restoring = TRAINER_ALIAS.replace("        return total / len(eval_loader)",
                                      "        model.train()\n        return total / len(eval_loader)")
    assert rows(restoring, "TL702") == []


# -- TL702: a wrapper object whose methods set the mode of its encoders -----------------------------------

WRAPPER = """
import numpy as np
import torch
import torch.nn as nn

class Encoder(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.drop = nn.Dropout(0.2)

    def forward(self, x):
        return self.drop(self.fc(x))

class PairModel:
    def __init__(self, dim, lr):
        self.query_enc = Encoder(dim)
        self.doc_enc = Encoder(dim)
        params = list(self.query_enc.parameters()) + list(self.doc_enc.parameters())
        self.optimizer = torch.optim.Adam(params, lr=lr)

    def switch_to_train(self):
        self.query_enc.train()
        self.doc_enc.train()

    def switch_to_eval(self):
        self.query_enc.eval()
        self.doc_enc.eval()

    def embed(self, queries, docs):
        return self.query_enc(queries), self.doc_enc(docs)

    def update(self, queries, docs):
        q, d = self.embed(queries, docs)
        loss = -(q * d).sum(-1).mean()
        self.optimizer.zero_grad()
        loss.backward()
        self.optimizer.step()

def encode(pair_model, loader):
    pair_model.switch_to_eval()
    out = []
    with torch.no_grad():
        for queries, docs in loader:
            q, d = pair_model.embed(queries, docs)
            out.append((q * d).sum(-1).numpy())
    return np.concatenate(out)

def validate(pair_model, loader):
    return float(encode(pair_model, loader).mean())

def train_epoch(pair_model, loader, val_loader, every):
    pair_model.switch_to_train()
    for i, (queries, docs) in enumerate(loader):
        pair_model.update(queries, docs)
        if i % every == 0:
            validate(pair_model, val_loader)

def main(args):
    pair_model = PairModel(args.dim, args.lr)
    for epoch in range(args.epochs):
        train_epoch(pair_model, args.train_loader, args.val_loader, args.every)
        validate(pair_model, args.val_loader)
"""


def test_tl702_wrapper_methods_leave_its_encoders_in_eval_mode_mid_epoch():
    [f] = lint(WRAPPER, "TL702")
    assert f.start.row == row_of(WRAPPER, "            validate(pair_model, val_loader)")
    assert "pair_model.doc_enc" in f.message and "`pair_model.switch_to_train()` again" in f.hint
    # the wrapper is switched back after the mid-epoch validation
    fixed = WRAPPER.replace("            validate(pair_model, val_loader)\n",
                            "            validate(pair_model, val_loader)\n            pair_model.switch_to_train()\n")
    assert rows(fixed, "TL702") == []
    # the training step sets the mode itself
    step_sets = WRAPPER.replace("    def update(self, queries, docs):\n",
                                "    def update(self, queries, docs):\n        self.switch_to_train()\n")
    assert rows(step_sets, "TL702") == []


def test_tl702_wrapper_module_switched_back_by_its_own_train_and_end_of_pass_validation():
    # the wrapper is itself a module: `pair_model.train()` in the loop sets its encoders' mode too
    module = WRAPPER.replace("class PairModel:", "class PairModel(nn.Module):").replace(
        "    def __init__(self, dim, lr):\n        self.query_enc",
        "    def __init__(self, dim, lr):\n        super().__init__()\n        self.query_enc")
    assert rows(module, "TL702") == [row_of(module, "            validate(pair_model, val_loader)")]
    switched = module.replace("            validate(pair_model, val_loader)\n",
                              "            validate(pair_model, val_loader)\n            pair_model.train()\n")
    assert rows(switched, "TL702") == []
    # only the validation after the step loop, with the mode set again at the top of the next pass
    end = WRAPPER.replace("        if i % every == 0:\n            validate(pair_model, val_loader)\n", "")
    assert rows(end, "TL702") == []


# -- TL703: a loss tracker's method keeps the loss tensors -----------------------------------------------

TRACKER = """
import torch

class LossTrack:
    def __init__(self):
        self.sums = {}
        self.steps = 0

    def add(self, losses):
        for key in losses:
            if key not in self.sums:
                self.sums[key] = 0
            self.sums[key] += losses[key]
        self.steps += 1

def fit(model, optimizer, loader, epochs):
    track = LossTrack()
    for epoch in range(epochs):
        for batch in loader:
            losses = model.compute_losses(batch)
            optimizer.zero_grad()
            losses["total"].backward()
            optimizer.step()
            track.add(losses)
        print({k: v / track.steps for k, v in track.sums.items()})
"""


def test_tl703_tracker_method_sums_the_loss_tensors_it_is_handed():
    [f] = lint(TRACKER, "TL703")
    assert f.start.row == row_of(TRACKER, "self.sums[key] += losses[key]")
    assert "track.add(losses)" in f.message
    # the method keeps numbers
    assert rows(TRACKER.replace("+= losses[key]", "+= losses[key].item()"), "TL703") == []
    # the loop hands it numbers
    numbers = TRACKER.replace("            track.add(losses)",
                              "            track.add({k: v.item() for k, v in losses.items()})")
    assert rows(numbers, "TL703") == []
    # a tracker made for every step keeps one step's graph only
    per_step = TRACKER.replace("    track = LossTrack()\n", "").replace(
        "            track.add(losses)", "            track = LossTrack()\n            track.add(losses)").replace(
        "        print({k: v / track.steps for k, v in track.sums.items()})\n", "")
    assert rows(per_step, "TL703") == []


METER = """
import torch

class AverageMeter:
    def __init__(self):
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.sum += val * n
        self.count += n

class Trainer:
    def __init__(self, model, optimizer):
        self.model = model
        self.optimizer = optimizer
        self.losses = AverageMeter()

    def train_epoch(self, loader):
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(self.model(x), y)
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
            self.losses.update(loss, x.size(0))
"""


def test_tl703_meter_on_self_fed_the_loss_tensor():
    assert rows(METER, "TL703") == [row_of(METER, "self.sum += val * n")]
    assert rows(METER.replace("self.losses.update(loss, x.size(0))", "self.losses.update(loss.item(), x.size(0))"),
                "TL703") == []
    # the method converts what it is given first
    converting = METER.replace("    def update(self, val, n=1):\n",
                               "    def update(self, val, n=1):\n        val = float(val)\n")
    assert rows(converting, "TL703") == []


def test_tl703_items_of_the_loss_dict_and_a_history_list_on_the_object():
    src = """
    import torch

    class History:
        def __init__(self):
            self.totals = {}
            self.steps = []

        def record(self, out):
            for name, value in out.items():
                self.totals[name] = self.totals.get(name, 0)
            for name, value in out.items():
                self.totals[name] += value
            self.steps.append(out["loss"])

    history = History()
    for batch in loader:
        out = model(**batch)
        out["loss"].backward()
        optimizer.step()
        optimizer.zero_grad()
        history.record(out)
    """
    assert rows(src, "TL703") == [row_of(src, "self.totals[name] += value"), row_of(src, "self.steps.append")]
    detached = src.replace("        history.record(out)",
                           "        out = {k: v.detach() for k, v in out.items()}\n        history.record(out)")
    assert rows(detached, "TL703") == []


def test_tl703_total_the_method_resets_on_every_call_is_left_alone():
    src = """
    import torch

    class LastLoss:
        def __init__(self):
            self.value = 0

        def set(self, loss):
            self.value = 0
            self.value += loss

    last = LastLoss()
    for batch in loader:
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        last.set(loss)
    """
    assert rows(src, "TL703") == []
    summed = src.replace("        def set(self, loss):\n            self.value = 0\n", "        def set(self, loss):\n")
    assert rows(summed, "TL703") == [row_of(summed, "self.value += loss")]


# -- TL704: pytorch-ignite handlers that run before the optimizer steps ----------------------------------

IGNITE = """
import torch
from ignite.engine import Engine, Events

def make_trainer(model, optimizer, loss_fn):
    def _update(engine, batch):
        model.train()
        optimizer.zero_grad()
        x, y = batch
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        return loss.item()
    return Engine(_update)

def run(model, optimizer, scheduler, loss_fn, loader, epochs):
    trainer = make_trainer(model, optimizer, loss_fn)

    @trainer.on(Events.EPOCH_STARTED)
    def adjust_learning_rate(engine):
        scheduler.step()

    trainer.run(loader, max_epochs=epochs)
"""


def test_tl704_scheduler_stepped_in_an_ignite_epoch_started_handler():
    [f] = lint(IGNITE, "TL704")
    assert f.start.row == row_of(IGNITE, "        scheduler.step()")
    assert "Events.EPOCH_STARTED" in f.message and "Events.EPOCH_COMPLETED" in f.hint
    assert rows(IGNITE.replace("Events.EPOCH_STARTED", "Events.EPOCH_COMPLETED"), "TL704") == []
    # a step the handler guards (the first epoch skipped on purpose) is left alone
    guarded = IGNITE.replace("        scheduler.step()",
                             "        if engine.state.epoch > 1:\n            scheduler.step()")
    assert rows(guarded, "TL704") == []


def test_tl704_ignite_add_event_handler_lambda_and_filtered_event():
    src = """
    import torch
    from ignite.engine import Events, create_supervised_trainer

    trainer = create_supervised_trainer(model, optimizer, loss_fn)
    lr_scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, total_steps=10000)
    trainer.add_event_handler(Events.ITERATION_STARTED(every=1), lambda engine: lr_scheduler.step())
    trainer.run(loader, max_epochs=10)
    """
    assert rows(src, "TL704") == [row_of(src, "lambda engine: lr_scheduler.step()")]
    assert rows(src.replace("ITERATION_STARTED", "ITERATION_COMPLETED"), "TL704") == []
    # ignite's own scheduler is attached as the handler itself, at ITERATION_STARTED by design
    own = """
    from ignite.engine import Events, create_supervised_trainer
    from ignite.handlers import LRScheduler

    trainer = create_supervised_trainer(model, optimizer, loss_fn)
    lr_scheduler = LRScheduler(torch_lr_scheduler)
    trainer.add_event_handler(Events.ITERATION_STARTED, lr_scheduler)
    trainer.run(loader, max_epochs=10)
    """
    assert rows(own, "TL704") == []
