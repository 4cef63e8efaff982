"""`fail-on`: findings below it are shown but do not change the exit code; the concise format shows
every finding's severity."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest
import yaml

from support import ROOT, run_cli

#: one `info` finding: TL201 cannot tell whether `tokenized` is padded to a fixed length (`--probe` decides)
INFO = textwrap.dedent(
    """\
    from datasets import load_dataset
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments

    tokenizer = AutoTokenizer.from_pretrained("bert-base-cased")
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
    raw = load_dataset("glue", "mrpc")


    def encode(batch):
        return tokenizer(batch["sentence1"], batch["sentence2"], truncation=True, padding=PADDING)


    tokenized = raw.map(encode, batched=True)
    trainer = Trainer(model=model, args=TrainingArguments("out"), train_dataset=tokenized["train"])
    trainer.train()
    """
)
#: one `warning` finding: TL805 on a script pinned to a transformers where `evaluation_strategy` is
#: deprecated, not yet removed (4.41 to 4.50)
WARNING = textwrap.dedent(
    """\
    # /// script
    # dependencies = ["transformers<4.51"]
    # ///
    from transformers import TrainingArguments

    args = TrainingArguments("out", evaluation_strategy="epoch")
    """
)
#: one `error` finding: TL805 on transformers 5
ERROR = WARNING.replace("transformers<4.51", "transformers>=5")

LINE_RE = re.compile(r"^(?P<path>[^:]+):(?P<row>\d+):(?P<col>\d+): (?P<code>TL\d{3})(?: \[\*\])? \[(?P<sev>\w+)\] (?P<msg>.+)$")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    for name, text in (("info.py", INFO), ("warning.py", WARNING), ("error.py", ERROR)):
        (tmp_path / name).write_text(text)
    return tmp_path


def severities(stdout: str) -> list[tuple[str, str, str]]:
    return [(m["path"], m["code"], m["sev"]) for m in map(LINE_RE.match, stdout.splitlines()) if m]


def test_the_concise_format_shows_each_findings_severity(project):
    proc = run_cli("--no-cache", "info.py", "warning.py", "error.py", cwd=project)
    assert severities(proc.stdout) == [("error.py", "TL805", "error"), ("info.py", "TL201", "info"),
                                       ("warning.py", "TL805", "warning")]


@pytest.mark.parametrize(
    "files, option, code",
    [
        (["info.py"], None, 0),  # the default is `warning`: an info finding is shown, the run passes
        (["info.py"], "info", 1),
        (["warning.py"], None, 1),
        (["warning.py"], "error", 0),
        (["error.py"], "error", 1),
        (["info.py", "warning.py"], "error", 0),
    ],
)
def test_exit_code_follows_fail_on(project, files, option, code):
    args = ["--no-cache", *files] + (["--fail-on", option] if option else [])
    proc = run_cli(*args, cwd=project)
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert len(severities(proc.stdout)) == len(files)  # shown whatever the exit code


def test_the_summary_says_which_findings_do_not_fail_the_run(project):
    out = run_cli("--no-cache", "info.py", "error.py", cwd=project).stdout
    assert '1 finding below `fail-on = "warning"` (does not change the exit code).' in out
    assert "below" not in run_cli("--no-cache", "--fail-on", "info", "info.py", cwd=project).stdout


def test_quiet_lines_carry_the_severity_too(project):
    proc = run_cli("--no-cache", "-q", "info.py", cwd=project)
    assert severities(proc.stdout) == [("info.py", "TL201", "info")] and proc.returncode == 0


def test_config_key_and_command_line_override(project):
    (project / "pyproject.toml").write_text('[tool.trainlint]\nfail-on = "info"\n')
    assert run_cli("--no-cache", "info.py", cwd=project).returncode == 1
    assert run_cli("--no-cache", "--fail-on", "warning", "info.py", cwd=project).returncode == 0
    (project / "pyproject.toml").write_text('[tool.trainlint]\nfail-on = "never"\n')
    proc = run_cli("--no-cache", "info.py", cwd=project)
    assert proc.returncode == 2 and "fail-on" in proc.stderr


def test_an_unknown_level_on_the_command_line_is_a_usage_error(project):
    proc = run_cli("--fail-on", "fatal", "info.py", cwd=project)
    assert proc.returncode == 2 and "fail-on" in proc.stderr


@pytest.mark.parametrize("fmt", ["json", "sarif", "github", "gitlab", "rdjson", "junit", "full"])
def test_every_output_format_exits_by_fail_on_and_keeps_the_finding(project, fmt):
    below = run_cli("--no-cache", "--output-format", fmt, "info.py", cwd=project)
    assert below.returncode == 0, below.stderr
    assert "TL201" in below.stdout
    at = run_cli("--no-cache", "--output-format", fmt, "--fail-on", "info", "info.py", cwd=project)
    assert at.returncode == 1
    if fmt != "full":  # the machine formats are the same; `full` says in its summary what did not count
        assert at.stdout == below.stdout


def test_json_and_sarif_carry_the_severity(project):
    data = json.loads(run_cli("--no-cache", "--output-format", "json", "info.py", cwd=project).stdout)
    assert [(f["code"], f["severity"]) for f in data] == [("TL201", "info")]
    sarif = json.loads(run_cli("--no-cache", "--output-format", "sarif", "info.py", cwd=project).stdout)
    assert [r["level"] for r in sarif["runs"][0]["results"]] == ["note"]


def test_the_pre_commit_hook_uses_the_configured_fail_on(project):
    """The hook passes no --fail-on of its own: a commit is blocked by warnings and errors, not by
    info findings, unless the project's `fail-on` says otherwise."""
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    (hook,) = [h for h in hooks if h["id"] == "trainlint"]
    entry = hook["entry"].split()
    assert "--fail-on" not in entry and "--exit-zero" not in entry
    assert run_cli(*entry[1:], "info.py", cwd=project).returncode == 0
    assert run_cli(*entry[1:], "warning.py", cwd=project).returncode == 1
    (project / "pyproject.toml").write_text('[tool.trainlint]\nfail-on = "info"\n')
    assert run_cli(*entry[1:], "info.py", cwd=project).returncode == 1
