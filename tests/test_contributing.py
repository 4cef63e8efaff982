"""CONTRIBUTING.md's walk-through of adding a rule is what a new rule really needs: a rule with a static
check and a PyTorch probe check at an existing observation point (it reads the model, the batch and the
optimizer) is added to a copy of the repository by following the listed places, and the copy's
registry, documents, probe-check registry and README table pick it up, with no other file changed; in
the probe tier the copy's probe confirms it on a real Trainer."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from support import ROOT, need_modules

CODE = "TL599"
STAGE = "s5_optimizer"

TOY_RULE = '''


@register
class ToyZeroLearningRate(Rule):
    """A torch optimizer built with `lr=0`: the weights never move."""

    code = "TL599"
    name = "toy-zero-learning-rate"
    severity = Severity.ERROR
    probe = "One optimizer step on a real batch leaves the weights unchanged."
    gate = (("lr",), ("optim",))

    def visit_Call(self, node) -> None:
        from trainlint.facts import argument, literal
        from trainlint.facts.models import torch_optimizer

        if torch_optimizer(self.ctx.facts, node) and literal(argument(node, "lr")) == 0:
            self.report(node, "`lr=0`: the optimizer never moves the weights", hint="use a learning rate > 0")
'''

TOY_CHECK = '''


@check(TRAINER_BATCH, "TL599", order=510)
def check_zero_learning_rate(h: Harness, st: TrainerState) -> None:
    """TL599: one optimizer step on the training batch, at the optimizer's rate, leaves the weights as
    they were."""
    import torch

    if st.optimizer is None or st.inputs is None:
        return
    rates = [float(g["lr"]) for g in st.optimizer.param_groups]
    if any(rates):
        h.checked("TL599")
        return
    params = [(n, p) for n, p in st.model.named_parameters() if p.requires_grad][:8]
    before = [p.detach().clone() for _, p in params]
    st.optimizer.zero_grad()
    loss = st.trainer.compute_loss(st.model, dict(st.inputs))
    loss.mean().backward()
    st.optimizer.step()
    unchanged = [n for (n, p), b in zip(params, before) if torch.equal(b, p.detach())]
    if len(unchanged) == len(params):
        h.finding(
            "TL599",
            f"{type(st.optimizer).__name__} has learning rate 0: a step on the training batch changes no weight",
            evidence=f"batch keys {sorted(st.inputs)}, loss {float(loss.mean()):.4f}; lr {rates}; "
            f"{unchanged[:3]} unchanged after optimizer.step()",
            line=st.line,
        )
    else:
        h.checked("TL599")
'''

TOY_DOC = """# TL599 toy-zero-learning-rate

## What it catches
A torch optimizer built with `lr=0`.

## Why it hurts
The loss never moves.

## Example
```python
import torch

model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0)
```

## Use instead
```python
import torch

model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
```

## Probe
One optimizer step on a real batch leaves the weights unchanged.
"""

CHECK_IN_COPY = textwrap.dedent(
    f"""
    from trainlint.config import Settings
    from trainlint.docs import load_doc
    from trainlint.engine import lint_source
    from trainlint.probe.child import registry
    from trainlint.probe.child.points import TRAINER_BATCH
    from trainlint.rule import all_rules

    rule = all_rules()["{CODE}"]
    assert rule.stage().value == 5 and rule.probe and rule.has_static_check(), rule
    doc = load_doc("{CODE}")
    assert doc.bad and doc.good
    only = Settings(select=["{CODE}"])
    for ex in doc.bad:
        assert [f.code for f in lint_source(ex.code, "t.py", only)] == ["{CODE}"], ex.code
    for ex in doc.good:
        assert lint_source(ex.code, "t.py", only) == [], ex.code
    assert "{CODE}" in registry.declared_codes("torch")
    assert any("{CODE}" in c.codes for c in registry.checks_at(TRAINER_BATCH))
    print("ok")
    """
)


def _places() -> list[str]:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- places:start -->\n(.*?)<!-- places:end -->", text, re.S)
    assert block is not None, "CONTRIBUTING.md: the list of places is marked by <!-- places:start/end -->"
    items = re.findall(r"^\d+\. `([^`]+)`", block.group(1), re.M)
    assert len(items) == len(re.findall(r"^\d+\. ", block.group(1), re.M)), "each place starts with its path"
    return items


def _hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def copy_with_rule(tmp_path_factory) -> tuple[Path, set[str]]:
    """A copy of the repository with TL599 added by following CONTRIBUTING's places; the files changed."""
    copy = tmp_path_factory.mktemp("contributing") / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for d in ("trainlint", "rules", "scripts"):
        shutil.copytree(ROOT / d, copy / d, ignore=ignore)
    shutil.copy(ROOT / "README.md", copy / "README.md")
    before = _hashes(copy)

    # the walk-through, place by place
    (copy / "rules" / f"{CODE}.md").write_text(TOY_DOC, encoding="utf-8")
    for name, snippet in (("rules.py", TOY_RULE), ("probe.py", TOY_CHECK)):
        module = copy / "trainlint" / "stages" / STAGE / name
        module.write_text(module.read_text(encoding="utf-8") + snippet, encoding="utf-8")
    subprocess.run([sys.executable, "scripts/rule_table.py", "--write"], cwd=copy, check=True,
                   capture_output=True, text=True, env={"PYTHONPATH": str(copy), "PATH": ""})
    after = _hashes(copy)
    return copy, {p for p in after if before.get(p) != after[p]}


def test_adding_a_rule_touches_exactly_the_places_contributing_lists(copy_with_rule):
    copy, changed = copy_with_rule
    listed = {p.replace("TL599", CODE).replace("s5_optimizer", STAGE) for p in _places()}
    assert "tests/" in listed  # the rule's own tests, which this copy does not run
    assert len(listed) <= 5
    assert changed == listed - {"tests/"}, f"changed {sorted(changed)}, CONTRIBUTING.md lists {sorted(listed)}"

    # and in the copy, everything derives from those places
    proc = subprocess.run([sys.executable, "-c", CHECK_IN_COPY], cwd=copy, capture_output=True, text=True,
                          env={"PYTHONPATH": str(copy), "PATH": ""}, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr
    readme = (copy / "README.md").read_text(encoding="utf-8")
    assert f"| [{CODE}](rules/{CODE}.md) | toy-zero-learning-rate | optimizer | error | on | yes | yes | — |" in readme


TRAIN_WITH_LR_ZERO = textwrap.dedent("""
    import torch
    from datasets import Dataset
    from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

    config = BertConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=37,
                        vocab_size=60, max_position_embeddings=32, num_labels=3)
    model = BertForSequenceClassification(config)
    data = Dataset.from_dict({"input_ids": [[2, 5 + i % 40, 7, 3] for i in range(32)], "label": [i % 3 for i in range(32)]})
    optimizer = torch.optim.SGD(model.parameters(), lr=0)
    args = TrainingArguments("out", report_to="none", per_device_train_batch_size=8, use_cpu=True)
    trainer = Trainer(model, args, train_dataset=data, optimizers=(optimizer, None))
    trainer.train()
""")

PROBE_IN_COPY = textwrap.dedent(f"""
    import sys
    from pathlib import Path
    from trainlint.engine import lint_source
    from trainlint.findings import ProbeStatus
    from trainlint.probe import ProbeOptions, run_probe

    script = Path(sys.argv[1])
    static = [f for f in lint_source(script.read_text(), str(script)) if f.code == "{CODE}"]
    assert static, "the static check does not fire"
    report = run_probe(script, static, ProbeOptions(timeout=240))
    [f] = [f for f in report.findings if f.code == "{CODE}"]
    assert f.probe.status is ProbeStatus.CONFIRMED, (report.outcome, f.probe, report.notes)
    print(f.probe.evidence)
""")


@pytest.mark.probe
def test_the_new_probe_check_runs_at_its_point_without_any_other_change(copy_with_rule, tmp_path):
    """The copy's probe (its child imports the copy) runs the new check on a real Trainer: it reads the
    model, the batch and the optimizer the earlier stages left in the pipeline state."""
    need_modules("torch", "transformers", "datasets")
    copy, _ = copy_with_rule
    script = tmp_path / "train.py"
    script.write_text(TRAIN_WITH_LR_ZERO, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-c", PROBE_IN_COPY, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(copy)}, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "batch keys ['input_ids', 'labels']" in proc.stdout, proc.stdout
    assert "unchanged after optimizer.step()" in proc.stdout, proc.stdout
