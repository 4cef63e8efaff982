"""The training-loop rules (TL701–TL705) report only on premises the source establishes: the forms that code
nobody tuned them on showed, each in the shape it was found in, next to the twin that must be reported."""

from __future__ import annotations

import textwrap
import warnings

from trainlint.config import Settings
from trainlint.engine import lint_source
from trainlint.findings import Severity


def lint(source: str, code: str):
    return [f for f in lint_source(textwrap.dedent(source), "train.py", Settings(select=[code])) if f.code == code]


def rows(source: str, code: str) -> list[int]:
    return [f.start.row for f in lint(source, code)]


def row_of(source: str, text: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(source).splitlines(), 1) if text in line)


# -- TL702: modes set on the branches of one loop body ---------------------------------------------------

# in the shape of YutaroOgawa/pytorch_advanced's 1-3_transfer_learning.ipynb (cell 21)
PHASE_LOOP = """
import torch
import torch.nn as nn
from torchvision import models

net = models.vgg16(pretrained=True)
net.classifier[6] = nn.Linear(in_features=4096, out_features=2)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(net.parameters(), lr=0.001, momentum=0.9)

def train_model(net, dataloaders_dict, criterion, optimizer, num_epochs):
    for epoch in range(num_epochs):
        for phase in ['train', 'val']:
            if phase == 'train':
                net.train()
            else:
                net.eval()
            epoch_loss = 0.0
            for inputs, labels in dataloaders_dict[phase]:
                optimizer.zero_grad()
                with torch.set_grad_enabled(phase == 'train'):
                    outputs = net(inputs)
                    loss = criterion(outputs, labels)
                    _, preds = torch.max(outputs, 1)
                    if phase == 'train':
                        loss.backward()
                        optimizer.step()
                    epoch_loss += loss.item() * inputs.size(0)

train_model(net, dataloaders_dict, criterion, optimizer, num_epochs=2)
"""


def test_tl702_modes_set_on_the_branches_of_the_phase_loop():
    assert rows(PHASE_LOOP, "TL702") == []
    # without the `train()` branch the training phase runs after the evaluation phase's eval()
    broken = PHASE_LOOP.replace("            if phase == 'train':\n                net.train()\n            else:\n"
                                "                net.eval()\n", "            if phase == 'val':\n                net.eval()\n")
    assert rows(broken, "TL702") == [row_of(broken, "net.eval()")]


def test_tl702_evaluation_every_tenth_epoch_and_continue_in_the_other_branch():
    # 2-7_SSD_training.ipynb: `else: if (epoch + 1) % 10 == 0: net.eval() else: continue`
    ssd = PHASE_LOOP.replace("            else:\n                net.eval()\n",
                             "            else:\n                if ((epoch + 1) % 10 == 0):\n                    net.eval()\n"
                             "                else:\n                    continue\n")
    assert ssd != PHASE_LOOP and rows(ssd, "TL702") == []


# in the shape of JJGO/shrinkbench's TrainingExperiment.run_epoch (experiment/train.py)
RUN_EPOCH = """
import torch
import torchvision

class TrainingExperiment:
    def __init__(self, train_dl, val_dl):
        self.model = torchvision.models.resnet18()
        self.optim = torch.optim.SGD(self.model.parameters(), lr=1e-3, momentum=0.9)
        self.loss_func = torch.nn.CrossEntropyLoss()
        self.train_dl, self.val_dl = train_dl, val_dl

    def run_epochs(self, epochs):
        for epoch in range(epochs):
            self.run_epoch(True, epoch)
            self.run_epoch(False, epoch)

    def run_epoch(self, train, epoch=0):
        if train:
            self.model.train()
            dl = self.train_dl
        else:
            dl = self.val_dl
            self.model.eval()
        with torch.set_grad_enabled(train):
            for i, (x, y) in enumerate(dl, start=1):
                yhat = self.model(x)
                loss = self.loss_func(yhat, y)
                if train:
                    loss.backward()
                    self.optim.step()
                    self.optim.zero_grad()
"""


def test_tl702_a_flag_that_chooses_the_mode_and_the_step():
    assert rows(RUN_EPOCH, "TL702") == []
    # the training branch forgets train(): from the second epoch on the evaluation's eval() reaches the step
    forgot = RUN_EPOCH.replace("            self.model.train()\n", "")
    assert rows(forgot, "TL702") == [row_of(forgot, "self.run_epoch(False, epoch)")]


# -- TL702: the memory finding needs a value that holds a graph ------------------------------------------

# in the shape of wkentaro/pytorch-fcn's validate() (PyTorch 0.3: `Variable(volatile=True)`, `loss.data[0]`)
EVAL_KEEPS = """
import torch
from torch.autograd import Variable
from transformers import AutoModelForSequenceClassification

model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
model.eval()
val_loss = 0
kept = []
for data, target in val_loader:
    data = Variable(data, volatile=True)
    score = model(data)
    KEEP
"""


def test_tl702_evaluation_keeping_values_without_a_graph():
    for keep in ("val_loss += float(score.loss.data[0])", "kept.append(score.loss.item())",
                 "kept.append(mean_iou(score.logits, target))"):
        assert rows(EVAL_KEEPS.replace("KEEP", keep), "TL702") == [], keep
    # `volatile=True` was that era's `no_grad`: the kept logits hold no graph either
    assert rows(EVAL_KEEPS.replace("KEEP", "kept.append(score.logits)"), "TL702") == []
    fresh = EVAL_KEEPS.replace("    data = Variable(data, volatile=True)\n", "")
    assert rows(fresh.replace("KEEP", "kept.append(score.logits)"), "TL702") == [row_of(fresh, "for data, target")]


def test_tl702_messages_stay_short():
    for src in (PHASE_LOOP.replace("net.train()", "pass"), RUN_EPOCH.replace("            self.model.train()\n", "")):
        for f in lint(src, "TL702"):
            assert len(f.message) <= 160 and f.hint
            assert f.severity is Severity.WARNING


# -- TL703: a sum that keeps no graph --------------------------------------------------------------------

# in the shape of allenai/open-instruct's dpo_tune_cache.py (the metrics summed under no_grad)
METRICS = """
import torch

local_metrics = {"train_loss": torch.tensor(0.0)}
for batch in train_dataloader:
    with accelerator.accumulate(model):
        loss = model(**batch).loss
        accelerator.backward(loss)
        optimizer.step()
        optimizer.zero_grad()
        with torch.no_grad():
            local_metrics["train_loss"] += loss
"""


def test_tl703_sum_under_no_grad_keeps_no_graph():
    assert rows(METRICS, "TL703") == []
    # the same sum with gradients on keeps every step's graph: reported, naming the total
    grads_on = METRICS.replace("        with torch.no_grad():\n            local_metrics", "        local_metrics")
    [f] = lint(grads_on, "TL703")
    assert '`local_metrics["train_loss"]` keeps' in f.message and "None" not in f.message


def test_tl703_a_total_of_python_numbers():
    src = """
    import torch
    running = 0.0
    total = 0
    for batch in train_loader:
        loss = model(**batch).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        SUM
    """
    for number in ("total = total + loss.item()", "running += float(loss)", "loss = loss.item()\n        total += loss"):
        assert rows(src.replace("SUM", number), "TL703") == [], number
    assert rows(src.replace("SUM", "total = total + loss"), "TL703") == [row_of(src, "SUM")]


# -- TL701: the step, the backward and the clearing in methods ------------------------------------------

# in the shape of meta-pytorch/torchforge's apps/sft/main.py before its fix (#71)
FORGE = """
import torch

class ForgeSFTRecipe(ForgeEngine):
    def forward_backward(self, input_dict, labels):
        loss = self.loss_fn(self.model_parts[0](input_dict["tokens"]), labels)
        loss.backward()
        return loss

    def train_step(self, batch):
        labels = batch.pop("labels")
        loss = self.forward_backward(batch, labels)
        self.optimizers.step()
        self.lr_schedulers.step()

    def train(self):
        dataloader = iter(self.train_dataloader)
        self.optimizers.zero_grad()
        while self.current_step < self.num_training_steps:
            batch = next(dataloader)
            self.train_step(batch)
            self.current_step += 1
"""


def test_tl701_cleared_once_before_a_while_loop_whose_step_is_a_method():
    assert rows(FORGE, "TL701") == [row_of(FORGE, "self.optimizers.step()")]
    # the merged fix: clear after each step, in the method
    fixed = FORGE.replace("        self.optimizers.step()\n", "        self.optimizers.step()\n        self.optimizers.zero_grad()\n")
    assert rows(fixed, "TL701") == []
    # one step after the loop over the batches: premise 1 (a step every pass) is missing
    once = FORGE.replace("            self.train_step(batch)\n", "            self.forward_backward(batch, batch.pop('labels'))\n"
                         ).replace("            self.current_step += 1\n", "            self.current_step += 1\n"
                                   "        self.optimizers.step()\n")
    assert rows(once, "TL701") == []


# -- TL704: the scheduler of another optimizer ----------------------------------------------------------

def test_tl704_scheduler_built_on_another_optimizer():
    src = """
    import torch
    d_sched = torch.optim.lr_scheduler.StepLR(d_opt, step_size=10)
    for batch in loader:
        d_sched.step()
        g_loss(batch).backward()
        g_opt.step()
        g_opt.zero_grad()
    """
    assert rows(src, "TL704") == []
    assert rows(src.replace("StepLR(d_opt", "StepLR(g_opt"), "TL704") == [row_of(src, "d_sched.step()")]


def test_messages_of_the_loop_rules_stay_short_and_details_go_to_the_hint():
    from pathlib import Path

    codes = ["TL203", "TL701", "TL702", "TL703", "TL704", "TL705"]
    root = Path(__file__).resolve().parent.parent
    sources = [p.read_text() for p in sorted((root / "benchmarks" / "buggy" / "cases").glob("*.py"))]
    sources += [FORGE, METRICS.replace("        with torch.no_grad():\n            local_metrics", "        local_metrics")]
    seen = set()
    for src in sources:
        with warnings.catch_warnings():  # (a case's invalid escape sequence, as its author wrote it)
            warnings.simplefilter("ignore", DeprecationWarning)
            found = lint_source(src, "train.py", Settings(select=codes))
        for f in found:
            if f.code in codes:
                seen.add(f.code)
                assert len(f.message) <= 160, f.message
                assert f.hint, f.message
    assert {"TL203", "TL701", "TL702", "TL703", "TL704"} <= seen
