"""The IPython extension in an in-process IPython shell: each cell linted before it runs with the cells
run before it, findings under the cell (HTML and text), errors stopping the cell only when asked,
``%trainlint`` on the session, ``%trainlint off``/``on``."""

from __future__ import annotations

import pytest

from support import ipython_shell, need_modules, run_cell

need_modules("IPython")

SOFTMAX_TWICE = "out = torch.softmax(model(x), dim=-1)\nloss = loss_fn(out, y)\nran = True\n"
SETUP = ("import torch\nfrom torch import nn\nmodel = nn.Linear(4, 3)\nloss_fn = nn.CrossEntropyLoss()\n"
         "x = torch.randn(8, 4)\ny = torch.zeros(8, dtype=torch.long)\n")


@pytest.fixture
def shell():
    yield from ipython_shell()


run = run_cell


def bundles(cap) -> list[dict]:
    return [o.data for o in cap.outputs]


def test_a_cell_is_linted_with_the_cells_before_it_and_runs_by_default(shell):
    run(shell, "%load_ext trainlint")
    # the model and the loss are defined in another cell: the finding needs both cells
    result, cap = run(shell, "import torch\nfrom torch import nn\nmodel = nn.Linear(4, 3)\nloss_fn = nn.CrossEntropyLoss()")
    assert bundles(cap) == [] and result.success
    run(shell, "x = torch.randn(8, 4)\ny = torch.zeros(8, dtype=torch.long)")
    result, cap = run(shell, SOFTMAX_TWICE)
    assert result.success and shell.user_ns["ran"] is True  # shown, run anyway
    [data] = bundles(cap)
    assert "TL403" in data["text/plain"] and "line 1" in data["text/plain"]
    assert "https://github.com/trainlint/trainlint/blob/main/rules/TL403.md" in data["text/plain"]
    html = data["text/html"]
    assert "<a href='https://github.com/trainlint/trainlint/blob/main/rules/TL403.md'" in html
    assert "error" in html and "line 1" in html and "log-softmax" in html


def test_cells_run_before_the_extension_was_loaded_count(shell):
    run(shell, SETUP)
    run(shell, "%load_ext trainlint")
    _, cap = run(shell, SOFTMAX_TWICE)
    assert "TL403" in bundles(cap)[0]["text/plain"]


def test_execution_order_not_position(shell):
    """A cell redefining the loss as a NLLLoss makes the same softmax cell correct... almost: the rule
    reads the cells in the order they ran, so the latest definition counts."""
    run(shell, "%load_ext trainlint")
    run(shell, SETUP)
    run(shell, "loss_fn = nn.MSELoss()")
    _, cap = run(shell, SOFTMAX_TWICE)
    assert not any("TL403" in b["text/plain"] for b in bundles(cap))
    run(shell, "loss_fn = nn.CrossEntropyLoss()")
    _, cap = run(shell, SOFTMAX_TWICE)
    assert any("TL403" in b["text/plain"] for b in bundles(cap))


def test_errors_stop_the_cell_when_asked(shell):
    run(shell, "%load_ext trainlint")
    run(shell, SETUP)
    run(shell, "%trainlint errors stop")
    shell.user_ns.pop("ran", None)
    result, cap = run(shell, SOFTMAX_TWICE)
    assert not result.success and "ran" not in shell.user_ns
    assert type(result.error_before_exec).__name__ == "CellStopped"
    assert "not run" in bundles(cap)[0]["text/plain"]
    # a cell without an error still runs
    result, _ = run(shell, "z = 1")
    assert result.success and shell.user_ns["z"] == 1
    run(shell, "%trainlint errors run")
    result, _ = run(shell, SOFTMAX_TWICE)
    assert result.success and shell.user_ns["ran"] is True


def test_off_and_on(shell):
    run(shell, "%load_ext trainlint")
    run(shell, SETUP)
    run(shell, "%trainlint off")
    _, cap = run(shell, SOFTMAX_TWICE)
    assert bundles(cap) == []
    run(shell, "%trainlint on")
    _, cap = run(shell, SOFTMAX_TWICE)
    assert "TL403" in bundles(cap)[0]["text/plain"]


def test_trainlint_lints_the_session(shell):
    run(shell, "%load_ext trainlint")
    run(shell, SETUP)
    run(shell, "%trainlint off")
    run(shell, SOFTMAX_TWICE)
    _, cap = run(shell, "%trainlint")
    [data] = bundles(cap)
    # the cell is named by its execution count, the line is the cell's
    assert "In [4] line 1: TL403" in data["text/plain"]


def test_clean_session_says_so(shell):
    run(shell, "%load_ext trainlint")
    run(shell, SETUP)
    _, cap = run(shell, "%trainlint")
    assert "all checks passed" in cap.stdout


def test_magics_and_shell_lines_are_not_syntax_errors(shell):
    run(shell, "%load_ext trainlint")
    _, cap = run(shell, "import torch\n%time x = torch.zeros(2)\n!true")
    assert bundles(cap) == []


def test_slice_takes_the_cells_a_cell_depends_on():
    from trainlint.ipython.cells import Cell, depends

    cells = [Cell("1", "import torch\nimport numpy as np"), Cell("2", "%pip install torch==2.1"),
             Cell("3", "a = np.zeros(3)"), Cell("4", "model = torch.nn.Linear(2, 2)"), Cell("5", "model.eval()"),
             Cell("6", "def f(batch):\n    i = 0\n    return model(batch) + i"), Cell("7", "out = f(torch.ones(2))")]
    assert [c.label for c in depends(cells)] == ["1", "2", "4", "5", "6", "7"]


def test_unknown_arguments_are_a_usage_error(shell):
    run(shell, "%load_ext trainlint")
    result, _ = run(shell, "%trainlint frobnicate")
    assert not result.success and "unknown arguments" in str(result.error_in_exec)


def test_a_broken_configuration_is_named_and_the_defaults_used(tmp_path):
    from trainlint.ipython.cells import SessionLinter

    (tmp_path / "pyproject.toml").write_text('[tool.trainlint]\nfail-on = "sometimes"\n', encoding="utf-8")
    linter = SessionLinter(cwd=tmp_path)
    assert "fail-on" in (linter.config_error or ""), linter.config_error
    linter.add(SETUP, "In [1]")
    assert [f.code for f in linter.lint_next(SOFTMAX_TWICE, "In [2]")] == ["TL403"]
