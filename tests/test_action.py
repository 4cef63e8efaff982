"""action.yml, the GitHub Action: its inputs are the CLI's options, and its lint step, run here on a
sample repository with a pull request's changes, reports what the CLI reports."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
import yaml

from trainlint.cli import check

ROOT = Path(__file__).resolve().parent.parent
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
RUN_SCRIPT = (ROOT / "scripts" / "action-run").read_text(encoding="utf-8")
BUGGY = (ROOT / "examples" / "mnli_trainer_buggy.py").read_text(encoding="utf-8")

#: the inputs that are trainlint options, and the option each becomes
CLI_INPUTS = {"select": "--select", "ignore": "--ignore", "extend-select": "--extend-select", "fail-on": "--fail-on",
              "config": "--config", "exit-zero": "--exit-zero"}
#: the inputs about the action itself (which files, which reports, how to install)
ACTION_INPUTS = {"paths", "changed-files-only", "base", "args", "annotations", "sarif", "sarif-file", "sarif-category",
                 "reviewdog", "reviewdog-reporter", "reviewdog-filter-mode", "github-token", "python-version"}


def cli_option(name: str) -> click.Option:
    return next(p for p in check.params if isinstance(p, click.Option) and name in p.opts)


def test_every_input_is_a_cli_option_or_about_the_action():
    inputs = set(ACTION["inputs"])
    assert inputs == set(CLI_INPUTS) | ACTION_INPUTS
    for name, option in CLI_INPUTS.items():
        opt = cli_option(option)  # StopIteration: the CLI has no such option any more
        assert f"{option} " in RUN_SCRIPT or f"{option})" in RUN_SCRIPT, f"the lint step never passes {option}"
        if opt.is_flag:
            assert ACTION["inputs"][name]["default"] == "false"
        if isinstance(opt.type, click.Choice):  # the values the input's description names are the CLI's
            described = set(re.findall(r"\b(error|warning|info)\b", ACTION["inputs"][name]["description"]))
            assert described == set(opt.type.choices), name
    # the report formats the action asks for exist
    formats = set(cli_option("--output-format").type.choices)
    assert set(re.findall(r"--output-format (?:\"\$format\"|(\w+))", RUN_SCRIPT)) - {""} <= formats
    assert {"github", "sarif", "rdjson", "json"} <= formats


def test_inputs_reach_the_lint_step():
    steps = ACTION["runs"]["steps"]
    lint = next(s for s in steps if s.get("id") == "lint")
    used = set(re.findall(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", (ROOT / "action.yml").read_text(encoding="utf-8")))
    assert used == set(ACTION["inputs"]), "every input is used, every input used is declared"
    for name in set(CLI_INPUTS) | {"paths", "changed-files-only", "base", "args", "annotations", "sarif",
                                   "sarif-file", "reviewdog"}:
        var = "INPUT_" + name.upper().replace("-", "_")
        assert lint["env"][var] == f"${{{{ inputs.{name} }}}}"
        assert var in RUN_SCRIPT
    assert ACTION["runs"]["using"] == "composite"


# ---------------------------------------------------------------------------------------------
# the lint step on a sample repository


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}).stdout


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """A repository whose main branch has a buggy script, and a pull request branch that adds another
    buggy script and a notebook, and leaves the first alone."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    (repo / "train").mkdir(parents=True)
    (repo / "train" / "old.py").write_text(BUGGY, encoding="utf-8")
    (repo / "README.md").write_text("sample\n", encoding="utf-8")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "main")
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "train" / "new.py").write_text(BUGGY.replace('"epoch",  # bug', '"steps",  # bug'), encoding="utf-8")
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": "from transformers import TrainingArguments\nargs = TrainingArguments('o', evaluation_strategy='epoch')"}]
    (repo / "train" / "nb.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                                         "nbformat_minor": 5}), encoding="utf-8")
    (repo / "notes.txt").write_text("not linted\n", encoding="utf-8")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "feature")
    return repo


def run_step(repo: Path, **inputs: str) -> tuple[subprocess.CompletedProcess, dict[str, str]]:
    """The action's lint step as the runner runs it: its env (the inputs, defaults where not given),
    GITHUB_OUTPUT, the action's directory; trainlint from this environment."""
    lint = next(s for s in ACTION["runs"]["steps"] if s.get("id") == "lint")
    env = {**os.environ, "GITHUB_ACTION_PATH": str(ROOT), "GITHUB_OUTPUT": str(repo.parent / "output"),
           "RUNNER_TEMP": str(repo.parent), "TRAINLINT": str(Path(sys.executable).parent / "trainlint"),
           "TRAINLINT_NO_CACHE": "1"}
    for var, expr in lint["env"].items():
        name = re.fullmatch(r"\$\{\{ inputs\.([\w-]+) \}\}", expr).group(1)  # type: ignore[union-attr]
        env[var] = inputs.get(name.replace("-", "_"), ACTION["inputs"][name]["default"])
    (repo.parent / "output").write_text("", encoding="utf-8")
    proc = subprocess.run(["bash", "-c", lint["run"]], cwd=repo, env=env, capture_output=True, text=True, timeout=300)
    outputs = dict(line.split("=", 1) for line in (repo.parent / "output").read_text().splitlines() if "=" in line)
    return proc, outputs


def cli(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "trainlint", *args, "--no-cache"], cwd=repo, capture_output=True,
                          text=True, timeout=300)


def test_pull_request_changes_get_the_clis_annotations_and_reports(sample: Path):
    proc, outputs = run_step(sample, base="main", sarif="true", reviewdog="true")
    assert proc.returncode == 0, proc.stderr  # the step itself never fails: the last step does
    changed = ["train/new.py", "train/nb.ipynb"]
    expected = cli(sample, *changed, "--force-exclude", "--output-format", "github")
    annotations = [line for line in proc.stdout.splitlines() if line.startswith("::")]
    assert annotations == [line for line in expected.stdout.splitlines() if line.startswith("::")]
    assert annotations and not any("old.py" in line for line in annotations)  # unchanged files are not linted
    assert outputs["exit-code"] == str(expected.returncode) == "1"
    json_findings = json.loads(cli(sample, *changed, "--output-format", "json").stdout)
    assert outputs["findings"] == str(len(json_findings))
    sarif = json.loads((sample / outputs["sarif-file"]).read_text())
    assert sarif == json.loads(cli(sample, *changed, "--force-exclude", "--output-format", "sarif").stdout)
    rdjson = json.loads(Path(outputs["rdjson-file"]).read_text())
    assert len(rdjson["diagnostics"]) == len(json_findings)


def test_inputs_become_options(sample: Path):
    proc, outputs = run_step(sample, paths="train", select="TL8", fail_on="error", annotations="false")
    expected = cli(sample, "train", "--force-exclude", "--select", "TL8", "--fail-on", "error")
    assert proc.stdout == expected.stdout and "TL805" in proc.stdout and "TL301" not in proc.stdout
    assert outputs["exit-code"] == "1" and "sarif-file" not in outputs
    proc, outputs = run_step(sample, paths="train/new.py", ignore="TL8,TL3", exit_zero="true")
    assert outputs["exit-code"] == "0" and "TL805" not in proc.stdout and "TL101" in proc.stdout


def test_no_changed_python_file_lints_nothing(sample: Path):
    git(sample, "checkout", "-q", "main")
    git(sample, "checkout", "-q", "-b", "docs")
    (sample / "README.md").write_text("more\n", encoding="utf-8")
    git(sample, "commit", "-q", "-am", "docs")
    proc, outputs = run_step(sample, base="main")
    assert outputs == {"exit-code": "0", "findings": "0"} and "nothing to lint" in proc.stdout


def test_the_ci_doc_lists_every_input():
    text = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
    section = text[text.index("## The GitHub Action"):text.index("## GitHub code scanning")]
    listed = {name for row in re.findall(r"^\| (`[^|]+) \|", section, re.M) for name in re.findall(r"`([\w-]+)`", row)}
    assert listed == set(ACTION["inputs"])
    assert "uses: trainlint/trainlint@" in section
