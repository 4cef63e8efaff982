"""The probe on hand-written PyTorch loops: weights that never move whatever the cause, the learning rate
judged from what the optimizer really got, and crashes inside the loop reported with their cause and
step. One probe child per script (a tiny checkpoint from the session fixture)."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainlint.findings import ProbeStatus
from trainlint.probe import ProbeOptions, ProbeReport, run_probe

pytestmark = pytest.mark.probe

HEAD = '''\
import os

import torch
from transformers import AutoModelForSequenceClassification

model = AutoModelForSequenceClassification.from_pretrained(os.environ["TINY_CKPT"], num_labels=2)
model.train()
torch.manual_seed(0)
'''


def _probe(tmp_path: Path, source: str, **options) -> ProbeReport:
    script = tmp_path / "train.py"
    script.write_text(source, encoding="utf-8")
    options.setdefault("timeout", 120.0)
    return run_probe(script, [], ProbeOptions(**options))


def _line(source: str, text: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


def _explain(report: ProbeReport) -> str:
    return "\n".join([f"outcome={report.outcome}"] + [
        f"{f.code} {f.probe.status.value if f.probe else '-'} {f.message} :: {f.probe.evidence if f.probe else ''}"
        for f in report.findings] + report.notes)


def _one(report: ProbeReport, code: str):
    found = [f for f in report.findings if f.code == code]
    assert len(found) == 1, _explain(report)
    assert found[0].probe.status is ProbeStatus.CONFIRMED, _explain(report)
    return found[0]


# zero_grad() between backward() and step(): every gradient is None at the step (the shape of the
# bug in the run of a no_trainer loop). AdamW at 1e-3 on a pretrained model: TL503 from the rate
# the optimizer holds, with no static finding to confirm.
ZERO_GRAD_MISPLACED = HEAD + '''\
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
input_ids = torch.randint(5, 40, (4, 12))
labels = torch.tensor([0, 1, 0, 1])
for step in range(100):
    loss = model(input_ids=input_ids, labels=labels).loss
    loss.backward()
    optimizer.zero_grad()
    optimizer.step()
'''


def test_zero_grad_between_backward_and_step_weights_never_move(tiny_env, tmp_path):
    report = _probe(tmp_path, ZERO_GRAD_MISPLACED)
    assert report.outcome == "reached-training", _explain(report)
    f = _one(report, "TL506")
    assert "never move" in f.message
    assert f"zero_grad() at train.py:{_line(ZERO_GRAD_MISPLACED, 'optimizer.zero_grad()')}" in f.probe.evidence
    assert f.start.row == _line(ZERO_GRAD_MISPLACED, "optimizer.zero_grad()")
    lr = _one(report, "TL503")
    assert "0.001" in lr.message and "from_pretrained" in lr.probe.evidence


DETACHED = HEAD + '''\
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
input_ids = torch.randint(5, 40, (4, 12))
labels = torch.tensor([0, 1, 0, 1])
for step in range(100):
    optimizer.zero_grad()
    loss = model(input_ids=input_ids, labels=labels).loss
    loss = torch.tensor(loss.item(), requires_grad=True)  # "fixes" a dtype warning, cuts the graph
    loss.backward()
    optimizer.step()
'''


def test_detached_loss_weights_never_move(tiny_env, tmp_path):
    report = _probe(tmp_path, DETACHED)
    f = _one(report, "TL506")
    assert "no gradient reached" in f.probe.evidence and "detached" in f.probe.evidence
    assert not [x for x in report.findings if x.code == "TL503"], _explain(report)


# The second batch cannot be collated (different lengths, default_collate): a DataLoader crash after
# one step is TL201 with the lengths, "at step 2", not a TL707 "before training".
COLLATE_AT_STEP_2 = HEAD + '''\
from torch.utils.data import DataLoader

rows = [{"input_ids": [2, 7, 8, 3], "labels": i % 2} for i in range(4)]
rows += [{"input_ids": [2] + [9] * (i + 3) + [3], "labels": i % 2} for i in range(4)]
loader = DataLoader(rows, batch_size=4)
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
for batch in loader:
    input_ids = torch.stack(batch["input_ids"], dim=1)
    loss = model(input_ids=input_ids, labels=batch["labels"]).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
'''


def test_collation_failure_inside_the_loop_is_tl201_at_step_2(tiny_env, tmp_path):
    report = _probe(tmp_path, COLLATE_AT_STEP_2)
    assert report.outcome == "script-error", _explain(report)
    f = _one(report, "TL201")
    assert "at step 2" in f.message and "before training" not in f.message
    assert "lengths in the batch: [5, 6, 7, 8]" in f.probe.evidence
    assert not [x for x in report.findings if x.code == "TL707"], _explain(report)


# The dataset lost its label column: the model returns no loss, `loss.backward()` raises AttributeError.
NO_LABELS = HEAD + '''\
batch = {"input_ids": torch.randint(5, 40, (4, 12)), "attention_mask": torch.ones(4, 12, dtype=torch.long)}
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
for step in range(10):
    outputs = model(**batch)
    loss = outputs.loss
    loss.backward()
    optimizer.step()
'''


def test_loss_none_because_the_batch_has_no_labels(tiny_env, tmp_path):
    report = _probe(tmp_path, NO_LABELS)
    f = _one(report, "TL707")
    assert "no labels" in f.message and "['input_ids', 'attention_mask']" in f.message
    assert f.start.row == _line(NO_LABELS, "loss.backward()")


FROZEN = HEAD + '''\
model.requires_grad_(False)  # meant to freeze the encoder only
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
input_ids = torch.randint(5, 40, (4, 12))
labels = torch.tensor([0, 1, 0, 1])
for step in range(10):
    optimizer.zero_grad()
    loss = model(input_ids=input_ids, labels=labels).loss
    loss.backward()
    optimizer.step()
'''


def test_frozen_model_in_a_loop_is_tl305_at_the_backward_line(tiny_env, tmp_path):
    report = _probe(tmp_path, FROZEN)
    f = _one(report, "TL305")
    assert "`model`" in f.message and "frozen" in f.message and "before training" not in f.message
    assert f.start.row == _line(FROZEN, "loss.backward()")
