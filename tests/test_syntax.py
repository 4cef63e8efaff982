"""Syntax the interpreter accepts is never lost: code some Python accepts is no TL001, and code CPython
compiles but LibCST's tokenizer refuses is analysed all the same, its findings on the original columns."""

from __future__ import annotations

import dataclasses
import json

import pytest

from trainlint import notebook
from trainlint.config import Settings
from trainlint.core import lint_text
from trainlint.notebook import lint_notebook_text
from trainlint.syntax import respace_indentation, syntax_error

ALL = Settings(select=["ALL"])

#: a loop that never clears the gradients (TL701), the rest of the file in the shape under test
LOOP = "for batch in loader:\n{i}loss = model(batch)\n{i}loss.backward()\n{i}optimizer.step()\n"


def codes(findings) -> list[str]:
    return [f.code for f in findings]


def test_pep_701_f_strings_are_python_3_12_not_a_syntax_error():
    # nested quotes of the same kind: Python 3.12 accepts them (the Colab runtime of today), 3.11 does not
    source = 'import torch\nnames = ["a", "b"]\nprint(f"{", ".join(names)}")\n' + LOOP.format(i="    ")
    result = lint_text(source, "train.py", ALL)
    assert "TL001" not in codes(result.findings)
    assert "TL701" in codes(result.findings)  # and the file is analysed


def test_pep_701_in_a_script_no_rule_opens_is_no_syntax_error_either():
    source = 'import torch\nx = 1\nprint(f"{"\\n".join(map(str, [x]))}")\n'
    assert lint_text(source, "train.py", Settings()).findings == []


def test_mixed_tabs_and_spaces_that_python_compiles_are_analysed_on_the_original_columns():
    # a tab and a space, then two tabs and a space: CPython accepts it, LibCST's tokenizer does not
    source = "import torch\ndef setup(x):\n\t with x:\n\t\t pass\n\n" + LOOP.format(i="\t ")
    compile(source, "train.py", "exec")
    result = lint_text(source, "train.py", ALL)
    (f,) = [f for f in result.findings if f.code == "TL701"]
    line = source.splitlines()[f.start.row - 1]
    assert line[f.start.column - 1:].startswith("optimizer.step()")
    assert f.fix is None
    assert "TL001" not in codes(result.findings)


def test_code_python_compiles_and_libcst_cannot_read_is_a_note_not_a_syntax_error():
    source = "import torch\ndef e():\n r\n\\\ndef r():\n p\n" + LOOP.format(i="    ")
    compile(source, "train.py", "exec")
    result = lint_text(source, "train.py", ALL)
    assert result.findings == [] and result.note and result.note.startswith("not analysed")


def test_a_real_syntax_error_is_still_reported():
    source = "import torch\nmodel = torch.nn.Linear(2, 2\nprint(model)\n"
    assert codes(lint_text(source, "train.py", ALL).findings) == ["TL001"]
    assert syntax_error("x = (1,\n") is not None


def test_respacing_counts_tabs_as_cpython_does():
    r = respace_indentation("if a:\n\t x = '''\n\tkept'''\n")
    assert r is not None
    assert r.source == "if a:\n         x = '''\n\tkept'''\n"  # the string's line is left as it is
    assert r.rows == {2: (2, 9)}
    assert r.column(2, 10) == 3 and r.column(1, 4) == 4
    assert respace_indentation("if a:\n    x = 1\n") is None


def _notebook(*cells: str) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "source": c, "metadata": {}, "outputs": [],
                                  "execution_count": None} for c in cells],
                       "metadata": {"kernelspec": {"language": "python"}}, "nbformat": 4, "nbformat_minor": 5})


def test_a_notebook_cell_in_python_3_12_syntax_is_linted():
    nb = _notebook("import torch", 'print(f"{"-".join(["a", "b"])}")', LOOP.format(i="    "))
    found = codes(lint_notebook_text(nb, "nb.ipynb", ALL).findings)
    assert "TL001" not in found and "TL701" in found


@pytest.mark.parametrize("ipython", [True, False], ids=["with IPython", "without IPython"])
def test_a_cell_pasted_with_a_leading_space_runs_as_ipython_runs_it(ipython, monkeypatch):
    if not ipython:
        monkeypatch.setattr(notebook, "_ipython", lambda: None)
    else:
        pytest.importorskip("IPython")
    cell = "".join(" " + line + "\n" for line in LOOP.format(i="    ").splitlines())
    found = codes(lint_notebook_text(_notebook("import torch", cell), "nb.ipynb", ALL).findings)
    assert "TL001" not in found and "TL701" in found


# A script in the percent format runs cell by cell in IPython (VS Code's interactive window, Jupytext).

PERCENT = (
    "# %%\n"
    "!pip install transformers\n"
    "%matplotlib inline\n"
    "# %%\n"
    "from transformers import TrainingArguments\n"
    "args = TrainingArguments('out', evaluation_strategy='epoch')\n"
)


def test_ipython_lines_of_a_percent_format_script_are_no_syntax_error():
    findings = lint_text(PERCENT, "train.py", ALL).findings
    assert "TL001" not in codes(findings)
    (f,) = [f for f in findings if f.code == "TL805"]  # the file is analysed, on its own rows
    assert f.start.row == 6
    assert f.fix is not None  # a fix that does not touch an IPython line is kept


def test_a_fix_that_would_edit_an_ipython_line_is_dropped(monkeypatch):
    from trainlint import core
    from trainlint.findings import Applicability, Edit, Fix, Position

    def edits_row(row):
        return Fix(Applicability.SAFE, "x", (Edit(Position(row, 1), Position(row, 5), "y"),))

    result = core.FileResult("train.py", [])
    monkeypatch.setattr(core, "lint_text", lambda *a, **k: result)
    result.findings = [core.meta_finding("TL805", "train.py", "m", 2, 1), core.meta_finding("TL805", "train.py", "m", 6, 1)]
    result.findings = [dataclasses.replace(result.findings[0], fix=edits_row(2)),
                       dataclasses.replace(result.findings[1], fix=edits_row(6))]
    out = core._ipython_script(("", frozenset({2, 3})), PERCENT, "train.py", ALL, raise_errors=False)
    assert [f.fix is None for f in out.findings] == [True, False]


def test_ipython_lines_outside_the_percent_format_are_a_syntax_error():
    # `python train.py` runs it: `!pip` is a SyntaxError there
    source = PERCENT.replace("# %%\n", "")
    assert codes(lint_text(source, "train.py", ALL).findings)[:1] == ["TL001"]


def test_a_real_syntax_error_in_a_percent_format_script_is_still_reported():
    source = PERCENT + "# %%\nmodel = foo(1, 2\n"
    assert "TL001" in codes(lint_text(source, "train.py", ALL).findings)
