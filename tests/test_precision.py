"""Precision and recall on whole scripts.

- `tests/data/correct/*.py`: realistic, correct training scripts (in the spirit of the transformers
  examples `run_glue.py`, `run_ner.py`, `run_clm.py`, `run_mlm.py`, `run_summarization.py`, the
  `no_trainer` loops, the Keras examples, and the course's fixed scripts). With every rule selected
  (on by default or not) trainlint must report nothing at all on them. TensorFlow ones declare `transformers<5` in a PEP 723
  block, as such a script must.
- `tests/data/buggy/<name>.py`: scripts with known bugs, written in the variations the facts must follow
  (aliased imports, `def main():`, `ds["train"]`, `functools.partial`, a tokenizer called by a helper or a
  callable class, Trainer subclasses, positional Trainer arguments, `tf.keras` / `keras` / `tf_keras`).
  The sibling `<name>.txt` lists the expected findings with every rule selected (a rule off by default
  keeps its cases), one `line:col CODE` a line (TorchFix style); the test compares the exact set. After changing a rule, review the diff the failure
  shows, then update the `.txt`.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support import ROOT

from trainlint.config import Settings
from trainlint.engine import lint_file

DATA = ROOT / "tests" / "data"
CORRECT = sorted((DATA / "correct").glob("*.py"))
BUGGY = sorted((DATA / "buggy").glob("*.py"))


def findings(path: Path):
    result = lint_file(path, Settings(select=["ALL"]))
    assert not result.internal_error, [f.message for f in result.findings if f.code == "TL003"]
    assert result.parsed, f"{path.name} was not parsed"
    return result.findings


def test_the_corpora_are_there():
    assert len(CORRECT) >= 10 and len(BUGGY) >= 10


@pytest.mark.parametrize("path", CORRECT, ids=lambda p: p.stem)
def test_correct_script_has_no_findings(path):
    compile(path.read_text(encoding="utf-8"), str(path), "exec")
    found = findings(path)
    assert not found, "\n".join(f"{path.name}:{f.start.row}:{f.start.column}: {f.code} {f.message}" for f in found)


def expected(path: Path) -> set[str]:
    txt = path.with_suffix(".txt")
    assert txt.is_file(), f"{path.name} has no sibling {txt.name} of expected `line:col CODE` lines"
    lines = [line.split("#", 1)[0].strip() for line in txt.read_text(encoding="utf-8").splitlines()]
    return {line for line in lines if line}


@pytest.mark.parametrize("path", BUGGY, ids=lambda p: p.stem)
def test_buggy_script_has_exactly_the_expected_findings(path):
    compile(path.read_text(encoding="utf-8"), str(path), "exec")
    want = expected(path)
    assert want, f"{path.with_suffix('.txt').name} expects nothing: put the script in tests/data/correct"
    found = findings(path)
    got = {f"{f.start.row}:{f.start.column} {f.code}" for f in found}
    messages = {f"{f.start.row}:{f.start.column} {f.code}": f.message for f in found}
    missing, unexpected = sorted(want - got), sorted(got - want)
    assert not missing and not unexpected, (
        f"{path.name}\n  missing:    {missing}\n  unexpected: "
        + "".join(f"\n    {u}  {messages[u]}" for u in unexpected)
    )


def test_every_expectation_file_has_its_script():
    for txt in (DATA / "buggy").glob("*.txt"):
        assert txt.with_suffix(".py").is_file(), f"{txt.name} has no script"
