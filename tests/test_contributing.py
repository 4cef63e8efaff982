"""CONTRIBUTING.md's walk-through of adding a rule is what a new rule really needs: a toy rule with a
static and a PyTorch probe check is added to a copy of the repository by following the listed places,
and the copy's registry, documents, probe-check registry and README table pick it up, with no other
file changed."""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from support import ROOT

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


from trainlint.probe.child.checks import probe_check as _toy_probe_check  # noqa: E402


@_toy_probe_check("TL599", framework="torch", path="trainer")
def toy_check_zero_lr(h, st) -> None:
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
    from trainlint.probe.child import checks
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
    assert "{CODE}" in checks.declared_codes("torch")
    assert any("{CODE}" in c.codes for c in checks.checks("torch", "trainer"))
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


def test_adding_a_rule_touches_exactly_the_places_contributing_lists(tmp_path):
    copy = tmp_path / "repo"
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
    changed = {p for p in after if before.get(p) != after[p]}
    listed = {p.replace("TL599", CODE).replace("s5_optimizer", STAGE) for p in _places()}
    assert "tests/" in listed  # the rule's own tests, which this copy does not run
    assert changed == listed - {"tests/"}, f"changed {sorted(changed)}, CONTRIBUTING.md lists {sorted(listed)}"

    # and in the copy, everything derives from those places
    proc = subprocess.run([sys.executable, "-c", CHECK_IN_COPY], cwd=copy, capture_output=True, text=True,
                          env={"PYTHONPATH": str(copy), "PATH": ""}, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr
    readme = (copy / "README.md").read_text(encoding="utf-8")
    assert f"| [{CODE}](rules/{CODE}.md) | toy-zero-learning-rate | optimizer | error | on | yes | yes | — |" in readme
