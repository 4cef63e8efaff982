"""The VS Code extension in a real VS Code: code-server (from the npm registry) with the packaged
extension installed, driven by Playwright in Chromium (tests/e2e/vscode_driver.py). It opens a buggy
script and a buggy notebook, reads the Problems panel, applies a quick fix, and probes a script.

What it needs is installed by ./scripts/test under CI=true (.venv-e2e, Debian's chromium,
scripts/e2e-setup); elsewhere the test skips and says what is missing. Screenshots of the Problems
panel are kept in .e2e-artifacts/ (the path is printed)."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from trainlint.config import Settings
from trainlint.docs import rule_url

ROOT = Path(__file__).resolve().parent.parent
E2E_PYTHON = ROOT / ".venv-e2e" / "bin" / "python"
NODE_BIN = ROOT / ".venv-e2e" / "node-bin"
CODE_SERVER = ROOT / "editors" / "vscode" / "e2e" / "node_modules" / "code-server" / "out" / "node" / "entry.js"
ARTIFACTS = ROOT / ".e2e-artifacts"

pytestmark = [pytest.mark.slow, pytest.mark.e2e]


def _needs() -> dict:
    """The tools, or skip (fail where scripts/test installed them: TRAINLINT_E2E=1)."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    vsix = sorted(glob.glob(str(ROOT / "editors" / "vscode" / "trainlint-*.vsix")))
    missing = [what for what, ok in [
        ("the end-to-end environment .venv-e2e (constraints/e2e.txt)", E2E_PYTHON.exists()),
        ("Node.js 24 from .venv-e2e (scripts/e2e-setup)", (NODE_BIN / "node").exists()),
        ("code-server (scripts/e2e-setup)", CODE_SERVER.exists()),
        ("Chromium (apt-get install chromium)", chromium is not None),
        ("the extension's .vsix (scripts/build-vscode)", bool(vsix)),
    ] if not ok]
    if missing:
        reason = "needs " + "; ".join(missing) + " — `CI=true ./scripts/test` installs them"
        if os.environ.get("TRAINLINT_E2E") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return {"chromium": chromium, "vsix": vsix[-1]}


def _notebook() -> str:
    from test_server import NOTEBOOK, ipynb

    return ipynb(NOTEBOOK)


@pytest.fixture(scope="module")
def vscode_run(tmp_path_factory) -> dict:
    tools = _needs()
    workspace = tmp_path_factory.mktemp("project")
    for name in ("mnli_trainer_buggy.py", "offline_trainer_buggy.py"):
        shutil.copy(ROOT / "examples" / name, workspace / name)
    (workspace / "course.ipynb").write_text(_notebook(), encoding="utf-8")
    ARTIFACTS.mkdir(exist_ok=True)
    config = {
        "code_server": [str(NODE_BIN / "node"), str(CODE_SERVER)],
        "node_bin": str(NODE_BIN),
        "chromium": tools["chromium"],
        "vsix": tools["vsix"],
        "python": sys.executable,
        "bare_python": str(E2E_PYTHON),  # trainlint is not installed there
        "workspace": str(workspace),
        "state": str(tmp_path_factory.mktemp("code-server")),
        "artifacts": str(ARTIFACTS),
        "script": "mnli_trainer_buggy.py",
        "notebook": "course.ipynb",
        "probe_script": "offline_trainer_buggy.py",
    }
    config_file = workspace.parent / "e2e-config.json"
    config_file.write_text(json.dumps(config), encoding="utf-8")
    proc = subprocess.run([str(E2E_PYTHON), str(ROOT / "tests" / "e2e" / "vscode_driver.py"), str(config_file)],
                          capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-4000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "error" not in result, result["error"] + "\n" + (ARTIFACTS / "code-server.log").read_text()[-3000:]
    print(f"\nVS Code end to end: timings {result['timings']}; screenshots in {ARTIFACTS}")
    (ARTIFACTS / "result.json").write_text(json.dumps(result, indent=2), encoding="utf-8")
    result["workspace"] = workspace
    return result


def _shown(rows: list[str], name: str) -> list[tuple[str, int, int]]:
    """(code, line, column) of each problem the panel shows under the file ``name`` (a file's row reads
    `6 problems in file train.py ...`, then one row per problem: `... trainlint(TL301) [Ln 25, Col 13]`)."""
    found = []
    current = None
    for row in rows:
        head = re.match(r"\d+ problems? in file (\S+)", row)
        if head:
            current = head.group(1)
            continue
        m = re.search(r"\n(TL\d{3})\n\[Ln (\d+), Col (\d+)\]", row)
        if m and current == name:
            found.append((m.group(1), int(m.group(2)), int(m.group(3))))
    return sorted(found)


def _cli(path: Path) -> list[tuple[str, int, int]]:
    """(code, row, column) of what `trainlint PATH` reports (rows within their cell in a notebook)."""
    from trainlint.parallel import lint_file

    return sorted((f.code, f.start.row, f.start.column) for f in lint_file(path, Settings()).findings)


def _step(run: dict, name: str) -> dict:
    step = run["steps"].get(name)
    assert step is not None, f"step {name} did not run"
    assert "error" not in step, step["error"]
    return step


def test_script_findings_in_the_problems_panel(vscode_run):
    rows = _step(vscode_run, "script")["rows"]
    assert _shown(rows, "mnli_trainer_buggy.py") == _cli(ROOT / "examples" / "mnli_trainer_buggy.py")
    assert "without `num_labels`" in "\n".join(rows) and "generated by trainlint" in "\n".join(rows)
    links = dict(_step(vscode_run, "script")["links"])  # each code is a link to its rule document
    for code in ("TL101", "TL201", "TL301", "TL601", "TL805"):
        assert links[code] == rule_url(code)


def test_quick_fix_applies_whole(vscode_run):
    step = _step(vscode_run, "quick_fix")
    assert any(t.startswith("Fix TL805") for t in step["titles"]), step["titles"]
    saved = step["saved"]
    original = (ROOT / "examples" / "mnli_trainer_buggy.py").read_text(encoding="utf-8")
    assert saved == original.replace("evaluation_strategy=", "eval_strategy=")


def test_show_the_rule_document(vscode_run):
    """On TL301's problem the command opens the rule's document in a markdown preview."""
    step = _step(vscode_run, "rule_document")
    assert any("Preview TL301.md" in tab for tab in step["tabs"]), step["tabs"]
    if step["text"]:  # the preview's own text, where the webview's frame can be read
        assert "TL301 missing-num-labels" in step["text"] and "What it catches" in step["text"]


def test_notebook_findings_on_their_cells(vscode_run):
    """The notebook's problems are the CLI's, each on its own cell's line (`trainlint course.ipynb` says
    `cell 7:3:5: TL805`; VS Code shows TL805 at Ln 3, Col 5 of that cell)."""
    rows = _step(vscode_run, "notebook")["rows"]
    expected = _cli(vscode_run["workspace"] / "course.ipynb")
    assert {code for code, _, _ in expected} == {"TL101", "TL201", "TL301", "TL601", "TL805"}
    assert _shown(rows, "course.ipynb") == expected


def test_probe_this_file_confirms_both_bugs(vscode_run):
    step = _step(vscode_run, "probe")
    rows = "\n".join(step["rows"])
    assert rows.count("[confirmed]") >= 2
    assert "TL301" in rows and "TL201" in rows
    assert "probing" in step["status_bar"]


def test_says_when_trainlint_is_not_installed(vscode_run):
    text = _step(vscode_run, "not_installed")["text"]
    assert f"trainlint is not installed in {E2E_PYTHON}" in text
    assert "-m pip install" in text and "trainlint-dl[server]" in text
