"""`trainlint examples/` (the README's first command): each `*_buggy.py` reproduces the course's bugs and
gets exactly these codes; each `*_fixed.py` gets nothing."""

from __future__ import annotations

import json

import pytest
from support import ROOT, run_cli

EXAMPLES = ROOT / "examples"

#: the bugs of the course chapter "Debugging the training pipeline" each script reproduces
EXPECTED = {
    "mnli_trainer_buggy.py": {
        "TL101",  # the raw datasets passed to the Trainer
        "TL201",  # no tokenizer, so no padding collator
        "TL301",  # MNLI has 3 labels, the head 2
        "TL601",  # logits to the metric
        "TL805",  # evaluation_strategy= (gone since transformers 4.51)
    },
    "offline_trainer_buggy.py": {
        "TL201",  # no tokenizer, so no padding collator
        "TL301",  # no num_labels, and the labels it builds (`i % 3`) span 3 classes
    },
    "mnli_keras_buggy.py": {
        "TL301",  # the head has 2 outputs (and the "dataset" is a metric: the class count is unknown)
        "TL401",  # a Keras loss with the labels in the feature dict
        "TL402",  # a probability loss on logits
        "TL501",  # optimizer="adam": learning rate 1e-3
        "TL806",  # evaluate.load(...) used as the dataset
    },
}


@pytest.fixture(scope="module")
def report():
    proc = run_cli("examples/", "--output-format", "json")
    assert proc.returncode == 1, proc.stderr  # findings, and no internal error or usage error
    by_file: dict[str, set[str]] = {}
    for f in json.loads(proc.stdout):
        by_file.setdefault(f["filename"].replace("\\", "/").rsplit("/", 1)[-1], set()).add(f["code"])
    return by_file


def test_the_examples_are_the_expected_ones():
    buggy = sorted(p.name for p in EXAMPLES.glob("*_buggy.py"))
    assert buggy == sorted(EXPECTED), "a new buggy example needs its expected codes here"
    for name in buggy:
        assert (EXAMPLES / name.replace("_buggy", "_fixed")).is_file(), f"{name} has no fixed version"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_buggy_example_gets_exactly_its_codes(name, report):
    assert report.get(name, set()) == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("*_fixed.py")))
def test_fixed_example_gets_nothing(name, report):
    assert name not in report, f"{name}: {sorted(report[name])}"


def test_fixed_examples_exit_zero():
    proc = run_cli(*sorted(f"examples/{p.name}" for p in EXAMPLES.glob("*_fixed.py")))
    assert proc.returncode == 0, proc.stdout + proc.stderr
