"""The command line as a user meets it: paths, options, config, suppression, formats, exit codes."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from support import ROOT, run_cli, validate_sarif

BUGGY = textwrap.dedent(
    """\
    from transformers import AutoModelForSequenceClassification, TrainingArguments
    from datasets import load_dataset

    raw = load_dataset("glue", "mnli")
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased")
    args = TrainingArguments("out", evaluation_strategy="epoch")
    """
)
LINE_RE = re.compile(r"^(?P<path>[^:]+):(?P<row>\d+):(?P<col>\d+): (?P<code>TL\d{3}) (?P<msg>.+)$")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(BUGGY)
    return tmp_path


def findings_of(proc) -> list[tuple[str, int, int, str]]:
    out = []
    for line in proc.stdout.splitlines():
        m = LINE_RE.match(line)
        if m:
            out.append((Path(m["path"]).name, int(m["row"]), int(m["col"]), m["code"]))
    return out


def test_concise_lines_summary_and_exit_code(project):
    proc = run_cli("train.py", cwd=project)
    assert proc.returncode == 1, proc.stderr
    assert findings_of(proc) == [("train.py", 5, 9, "TL301"), ("train.py", 6, 33, "TL805")]
    assert "Found 2 findings (2 errors) in 1 file." in proc.stdout.splitlines()


def test_clean_file_exits_zero(tmp_path):
    (tmp_path / "ok.py").write_text("import torch\nx = torch.zeros(3)\n")
    proc = run_cli("ok.py", cwd=tmp_path)
    assert proc.returncode == 0
    assert "All checks passed!" in proc.stdout


def test_python_dash_m_and_check_subcommand_are_the_same(project):
    a = run_cli("train.py", cwd=project)
    b = run_cli("check", "train.py", cwd=project)
    assert a.stdout == b.stdout and a.returncode == b.returncode == 1


def test_exit_zero(project):
    proc = run_cli("--exit-zero", "train.py", cwd=project)
    assert proc.returncode == 0 and "TL301" in proc.stdout


@pytest.mark.parametrize(
    "args, expected",
    [
        (["--select", "TL3"], {"TL301"}),
        (["--select", "TL805"], {"TL805"}),
        (["--select", "ALL"], {"TL301", "TL805"}),
        (["--ignore", "TL8"], {"TL301"}),
        (["--select", "TL3", "--extend-select", "TL805"], {"TL301", "TL805"}),
        (["--select", "tl301,TL805", "--ignore", "TL805"], {"TL301"}),
    ],
)
def test_selection(project, args, expected):
    proc = run_cli(*args, "train.py", cwd=project)
    assert {f[3] for f in findings_of(proc)} == expected


def test_unknown_selector_names_the_option(project):
    proc = run_cli("--select", "TL999", "train.py", cwd=project)
    assert proc.returncode == 2
    assert "--select: unknown rule selector 'TL999'" in proc.stderr
    assert "Usage:" not in proc.stderr


@pytest.mark.parametrize("key, toml", [
    ("select", 'select = ["TL3", "TL9x"]'),
    ("ignore", 'ignore = ["TL9x"]'),
    ("extend-select", 'extend-select = ["TL9x"]'),
    ("per-file-ignores", 'per-file-ignores = {"legacy/*.py" = ["TL9x"]}'),
])
def test_unknown_selector_in_pyproject_names_the_file_and_key(project, key, toml):
    (project / "pyproject.toml").write_text(f"[tool.trainlint]\n{toml}\n")
    proc = run_cli("train.py", cwd=project)
    assert proc.returncode == 2 and proc.stdout == ""
    assert f"{project / 'pyproject.toml'}: [tool.trainlint] `{key}`" in proc.stderr
    assert "unknown rule selector 'TL9x'" in proc.stderr
    assert "Usage:" not in proc.stderr


def test_malformed_pyproject_is_an_error_naming_the_file(project):
    """The project's own pyproject.toml, broken, is never skipped: its [tool.trainlint] would silently
    stop applying."""
    (project / "pyproject.toml").write_text('[tool.trainlint]\nignore = ["TL805"\n')
    proc = run_cli("train.py", cwd=project)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"trainlint: {project / 'pyproject.toml'}: invalid TOML: ")
    assert "(at " in proc.stderr  # the TOML error and where it is
    assert "Usage:" not in proc.stderr


def test_malformed_parent_pyproject_with_trainlint_table_is_an_error(project):
    sub = project / "pkg"
    sub.mkdir()
    (sub / "pyproject.toml").write_text('[project]\nname = "pkg"\n')  # valid, no [tool.trainlint]
    (sub / "train.py").write_text(BUGGY)
    (project / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.trainlint]\nignore = [TL805]\n')
    proc = run_cli("train.py", cwd=sub)
    assert proc.returncode == 2
    assert f"{project / 'pyproject.toml'}: invalid TOML" in proc.stderr and "Usage:" not in proc.stderr
    # a broken parent that holds no trainlint table is not trainlint's configuration: skipped
    (project / "pyproject.toml").write_text('[project\nname = "x"\n')
    proc = run_cli("train.py", cwd=sub)
    assert proc.returncode == 1 and {f[3] for f in findings_of(proc)} == {"TL301", "TL805"}


def test_config_errors_have_no_usage_banner(project):
    proc = run_cli("--config", str(project / "missing.toml"), "train.py", cwd=project)
    assert proc.returncode == 2 and "config file not found" in proc.stderr and "Usage:" not in proc.stderr
    (project / "pyproject.toml").write_text('[tool.trainlint]\nfail-on = "sometimes"\n')
    proc = run_cli("train.py", cwd=project)
    assert proc.returncode == 2 and "`fail-on` must be one of" in proc.stderr and "Usage:" not in proc.stderr


def test_pyproject_config_select_ignore_and_per_file_ignores(project):
    (project / "pyproject.toml").write_text(
        '[tool.trainlint]\nignore = ["TL805"]\nper-file-ignores = {"legacy/*.py" = ["TL3"]}\n'
    )
    (project / "legacy").mkdir()
    (project / "legacy" / "old.py").write_text(BUGGY)
    proc = run_cli(".", cwd=project)
    assert sorted(findings_of(proc)) == [("train.py", 5, 9, "TL301")]
    # the command line overrides the file
    proc = run_cli("--select", "TL805", "train.py", cwd=project)
    assert [f[3] for f in findings_of(proc)] == ["TL805"]


def test_config_exclude_and_default_excludes(project):
    for d in (".git", ".venv", "build", "node_modules", "generated"):
        (project / d).mkdir()
        (project / d / "train.py").write_text(BUGGY)
    (project / "pyproject.toml").write_text('[tool.trainlint]\nexclude = ["generated/"]\n')
    proc = run_cli(".", cwd=project)
    assert {Path(line.split(":")[0]).parts[0] for line in proc.stdout.splitlines() if LINE_RE.match(line)} == {"train.py"}


def test_force_exclude_applies_to_named_files(project):
    (project / "pyproject.toml").write_text('[tool.trainlint]\nexclude = ["train.py"]\n')
    assert run_cli("train.py", cwd=project).returncode == 1  # named explicitly: linted
    proc = run_cli("--force-exclude", "train.py", cwd=project)
    assert proc.returncode == 0 and "TL" not in proc.stdout


def test_explicit_config_file_and_bad_config(project, tmp_path):
    cfg = project / "strict.toml"
    cfg.write_text('[tool.trainlint]\nselect = ["TL8"]\n')
    proc = run_cli("--config", str(cfg), "train.py", cwd=project)
    assert [f[3] for f in findings_of(proc)] == ["TL805"]
    (project / "pyproject.toml").write_text("[tool.trainlint]\nselct = ['TL3']\n")
    proc = run_cli("train.py", cwd=project)
    assert proc.returncode == 2 and "unknown option" in proc.stderr
    (project / "pyproject.toml").write_text("[tool.trainlint\n")
    proc = run_cli("--config", str(project / "pyproject.toml"), "train.py", cwd=project)
    assert proc.returncode == 2 and "invalid TOML" in proc.stderr


@pytest.mark.parametrize(
    "comment, suppressed",
    [
        ("# noqa: TL301", {"TL301"}),
        ("# NOQA:tl301", {"TL301"}),
        ("# noqa: TL805, TL301", {"TL301"}),
        ("# noqa", {"TL301"}),
        ("# noqa: TL805", set()),
    ],
)
def test_noqa(tmp_path, comment, suppressed):
    src = BUGGY.replace('("bert-base-cased")', f'("bert-base-cased")  {comment}')
    (tmp_path / "t.py").write_text(src)
    got = {f[3] for f in findings_of(run_cli("t.py", cwd=tmp_path))}
    assert got == {"TL301", "TL805"} - suppressed


def test_file_wide_noqa(tmp_path):
    (tmp_path / "t.py").write_text("# trainlint: noqa\n" + BUGGY)
    proc = run_cli("t.py", cwd=tmp_path)
    assert proc.returncode == 0


def test_stdin_with_filename():
    proc = run_cli("-", "--stdin-filename", "nb/train.py", input=BUGGY)
    assert proc.returncode == 1
    assert [f[:1] + f[3:] for f in findings_of(proc)] == [("train.py", "TL301"), ("train.py", "TL805")]
    assert proc.stdout.startswith("nb/train.py:5:9: TL301")


_NOTEBOOK = json.dumps({"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                                    "source": BUGGY.splitlines(keepends=True)}],
                         "metadata": {"kernelspec": {"name": "python3", "language": "python"}},
                         "nbformat": 4, "nbformat_minor": 5})


@pytest.mark.parametrize("name, data", [
    ("binary.py", b"\x7fELF\x02\x01\x01\x00\x00\x00import torch\n"),
    ("latin1.py", "import torch\nname = 'Fran\u00e7ois'\n".encode("latin-1")),
    ("declared.py", "# -*- coding: latin-1 -*-\nimport torch\nname = 'Fran\u00e7ois'\n".encode("latin-1")),
    ("bom.py", b"\xef\xbb\xbf" + BUGGY.encode()),
    ("broken.py", b"import torch\ndef f(:\n"),
    ("broken_plain.py", b"def f(:\n    pass\n"),  # no framework word: not a training script
    ("plain.py", b"x = 1\n"),
    ("empty.py", b""),
    ("nb.ipynb", _NOTEBOOK.encode()),
    ("bad.ipynb", b"{not json"),
    ("crlf.py", BUGGY.replace("\n", "\r\n").encode()),
])
def test_stdin_is_linted_as_the_same_file_by_path(tmp_path, name, data):
    """`trainlint - --stdin-filename NAME` reports exactly what `trainlint NAME` reports for the file that
    holds the same bytes: binary and undecodable input is TL002, a .ipynb name is a notebook."""
    import subprocess
    import sys

    (tmp_path / name).write_bytes(data)
    by_path = run_cli("--no-cache", name, cwd=tmp_path)
    by_stdin = subprocess.run([sys.executable, "-m", "trainlint", "--no-cache", "-", "--stdin-filename", name],
                              cwd=tmp_path, input=data, capture_output=True, timeout=120)
    assert (by_stdin.returncode, by_stdin.stdout.decode(), by_stdin.stderr.decode()) == \
        (by_path.returncode, by_path.stdout, by_path.stderr)
    if name in ("binary.py", "latin1.py", "bad.ipynb"):
        assert f"{name}:1:1: TL002 [error] cannot read: " in by_path.stdout and by_path.returncode == 1


def test_fix_of_unreadable_stdin_gives_the_input_back_unchanged(tmp_path):
    import subprocess
    import sys

    data = b"import torch\x00\xff\n"
    proc = subprocess.run([sys.executable, "-m", "trainlint", "--fix", "-", "--stdin-filename", "x.py"],
                          cwd=tmp_path, input=data, capture_output=True, timeout=120)
    assert proc.stdout == data and b"TL002" in proc.stderr and proc.returncode == 1


def test_fix_of_a_notebook_on_stdin_edits_its_cells(tmp_path):
    proc = run_cli("--fix", "-", "--stdin-filename", "nb.ipynb", input=_NOTEBOOK, cwd=tmp_path)
    fixed = json.loads(proc.stdout)
    assert 'eval_strategy="epoch"' in "".join(fixed["cells"][0]["source"])
    assert "TL301" in proc.stderr and "TL805" not in proc.stderr


def test_files_that_name_no_framework_are_not_called_checked(tmp_path):
    """A file that names no ML framework is not analysed (not even its syntax, see TL001): the summary
    says so instead of "All checks passed!", by path and on stdin alike."""
    (tmp_path / "broken.py").write_text("def f(:\n    pass\n")
    (tmp_path / "ok.py").write_text("import torch\nx = torch.zeros(3)\n")
    proc = run_cli("broken.py", cwd=tmp_path)
    assert proc.returncode == 0 and "All checks passed" not in proc.stdout
    assert proc.stdout.startswith("No training code: the file names no ML framework (torch, ")
    proc = run_cli("-", "--stdin-filename", "broken.py", input="def f(:\n    pass\n", cwd=tmp_path)
    assert proc.stdout.startswith("No training code: the file names no ML framework (torch, ")
    proc = run_cli("ok.py", "broken.py", cwd=tmp_path)
    assert proc.stdout == "All checks passed! (1 of the 2 files names no ML framework and was not analysed.)\n"
    proc = run_cli("ok.py", cwd=tmp_path)
    assert proc.stdout == "All checks passed!\n"


def test_nonexistent_path_is_reported_and_other_files_still_linted(project):
    proc = run_cli("missing.py", "train.py", cwd=project)
    assert proc.returncode == 2
    assert "missing.py: no such file or directory" in proc.stderr
    assert len(findings_of(proc)) == 2


def test_no_paths_is_a_usage_error():
    proc = run_cli()
    assert proc.returncode == 2 and "no paths given" in proc.stderr


def test_statistics(project):
    proc = run_cli("--statistics", "train.py", cwd=project)
    rows = [line.split("\t") for line in proc.stdout.splitlines()]
    # [*]: fixable by a safe fix (TL805's rename); TL301's fix is unsafe
    assert rows == [["    1", "TL301", "missing-num-labels"], ["    1", "TL805", "[*] evaluation-strategy-argument"]]
    assert proc.returncode == 1


def test_quiet_prints_findings_only(project):
    proc = run_cli("-q", "train.py", cwd=project)
    assert [line.split(":")[3].split()[0] for line in proc.stdout.splitlines()] == ["TL301", "TL805"]


def test_full_format_has_excerpt_fix_hint_and_doc_link(project):
    out = run_cli("--output-format", "full", "train.py", cwd=project).stdout
    assert "5 |     model = AutoModelForSequenceClassification.from_pretrained" not in out  # no indentation in source
    assert "5 | model = AutoModelForSequenceClassification.from_pretrained(\"bert-base-cased\")" in out
    assert "  |         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ TL301" in out
    assert "= fix: pass `num_labels=3`" in out
    assert "= docs: https://" in out and "rules/TL301.md" in out


def test_json_format(project):
    proc = run_cli("--output-format", "json", "train.py", cwd=project)
    data = json.loads(proc.stdout)
    assert [d["code"] for d in data] == ["TL301", "TL805"]
    first = data[0]
    assert first["name"] == "missing-num-labels"
    assert first["severity"] == "error"
    assert first["filename"] == "train.py"
    assert first["location"] == {"row": 5, "column": 9}
    assert first["end_location"] == {"row": 5, "column": 59}
    assert first["url"].endswith("rules/TL301.md")
    assert "fix" in first and "num_labels=3" in first["hint"]


def test_github_format(project):
    lines = run_cli("--output-format", "github", "train.py", cwd=project).stdout.splitlines()
    assert lines[0].startswith("::error file=train.py,line=5,col=9,endLine=5,endColumn=59,title=TL301 missing-num-labels::TL301 ")


def test_sarif_validates_against_the_official_schema(project):
    proc = run_cli("--output-format", "sarif", "train.py", cwd=project)
    log = json.loads(proc.stdout)
    validate_sarif(log)
    run = log["runs"][0]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert set(rules) == {"TL301", "TL805"}
    assert rules["TL301"]["helpUri"].endswith("rules/TL301.md")
    assert rules["TL301"]["help"]["text"]
    res = run["results"][0]
    assert res["ruleId"] == "TL301" and res["level"] == "error"
    assert res["locations"][0]["physicalLocation"]["region"]["startLine"] == 5
    assert res["partialFingerprints"]


def test_rule_by_name_is_the_rule_by_code():
    by_code = run_cli("rule", "TL301")
    assert by_code.returncode == 0 and by_code.stdout.startswith("TL301 missing-num-labels\n")
    for name in ("missing-num-labels", "MISSING_NUM_LABELS"):
        assert run_cli("rule", name).stdout == by_code.stdout
    typo = run_cli("rule", "missing-num-label")
    assert typo.returncode == 2 and "did you mean missing-num-labels" in typo.stderr


def _on_a_terminal(*args: str, env: dict) -> str:
    """Run `trainlint ARGS` with its stdout on a pseudo-terminal; what the terminal received."""
    import os
    import pty
    import subprocess
    import sys

    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "trainlint", *args], stdin=subprocess.DEVNULL, stdout=slave,
                            stderr=slave, env={**os.environ, "COLUMNS": "80", **env})
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the other side is closed
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait(timeout=120) == 0
    return b"".join(chunks).decode().replace("\r\n", "\n")


def _recording_pager(tmp_path: Path) -> tuple[str, Path]:
    import shlex
    import sys

    record = tmp_path / "paged.txt"
    script = tmp_path / "pager.py"
    script.write_text("import sys\nopen(sys.argv[1], 'w').write(sys.stdin.read())\n")
    return shlex.join([sys.executable, str(script), str(record)]), record


def test_rule_on_a_terminal_goes_through_the_pager_with_colours(tmp_path):
    pager, record = _recording_pager(tmp_path)
    screen = _on_a_terminal("rule", "TL301", env={"PAGER": pager, "NO_COLOR": ""})
    paged = record.read_text()
    assert "What it catches" not in screen  # the document went to the pager, not to the terminal
    assert paged.startswith("\x1b[1mTL301 missing-num-labels\x1b[0m\n")
    assert "\x1b[1;4mWhat it catches\x1b[0m" in paged  # a heading, styled
    assert "\x1b[36mnum_labels\x1b[0m" in paged  # inline code, styled
    plain = re.sub(r"\x1b\[[0-9;]*m", "", paged)
    assert "```" not in plain and "## " not in plain
    prose = [line for line in plain.splitlines() if not line.startswith("    ") and "  " not in line.strip()]
    assert max(map(len, prose)) <= 80  # the terminal's width


def test_rule_on_a_terminal_without_pager_or_colour(tmp_path):
    pager, record = _recording_pager(tmp_path)
    screen = _on_a_terminal("rule", "--no-pager", "TL301", env={"PAGER": pager, "NO_COLOR": ""})
    assert not record.exists() and "\x1b[1;4mWhat it catches\x1b[0m" in screen
    _on_a_terminal("rule", "TL301", env={"PAGER": pager, "NO_COLOR": "1"})
    assert "\x1b[" not in record.read_text() and "What it catches\n---------------" in record.read_text()


def test_rule_into_a_pipe_is_plain_text_without_pager(tmp_path):
    pager, record = _recording_pager(tmp_path)
    proc = run_cli("rule", "TL301", env={"PAGER": pager})
    assert not record.exists()
    assert "\x1b[" not in proc.stdout and "What it catches\n---------------\n" in proc.stdout


def test_rule_and_rules_commands():
    proc = run_cli("rule", "tl301")
    assert proc.returncode == 0
    assert proc.stdout.startswith("TL301 missing-num-labels\n")
    assert "stage: 3 (model)" in proc.stdout
    proc = run_cli("rules")
    codes = re.findall(r"^(TL\d{3})\s", proc.stdout, re.M)
    assert "TL301" in codes and "TL501" in codes and "TL001" not in codes
    assert run_cli("rule", "TL999").returncode == 2
    listing = json.loads(run_cli("rules", "--output-format", "json").stdout)
    tl301 = next(r for r in listing if r["code"] == "TL301")
    assert tl301["stage"] == "model" and tl301["probe"] is True and tl301["default"] is True


def test_directory_recursion_sorted_and_deterministic(tmp_path):
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "z.py").write_text(BUGGY)
    (tmp_path / "a.py").write_text(BUGGY)
    (tmp_path / "notes.txt").write_text(BUGGY)
    proc = run_cli(".", cwd=tmp_path)
    paths = [line.split(":")[0] for line in proc.stdout.splitlines() if LINE_RE.match(line)]
    assert paths == ["a.py", "a.py", "b/z.py", "b/z.py"]


def test_version():
    proc = run_cli("--version")
    assert proc.returncode == 0 and "trainlint" in proc.stdout


def test_readme_starts_with_the_two_setup_commands_and_ci_runs_the_test_command():
    readme = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```(?:bash|sh|console)\n(.*?)```", readme, re.S)
    assert blocks, "README has no shell block"
    first = blocks[0]
    assert "trainlint examples/" in first and "pip install" in first
    assert "./scripts/test" in first
    # CI runs exactly the README's test command: the one command line of .ci/run that is not set-up
    (readme_command,) = [line for line in first.splitlines() if line.startswith("./scripts/test")]
    ci = [line for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.startswith(("#", "set ", "cd "))]
    assert ci == [readme_command]
    contributing = " ".join((ROOT / "CONTRIBUTING.md").read_text().split())
    assert f"CI (`.ci/run`) runs exactly `{readme_command}`" in contributing


def test_gitignore_is_respected_when_walking(project):
    import subprocess

    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / ".gitignore").write_text("corpus/\n*_generated.py\n")
    (project / "corpus").mkdir()
    (project / "corpus" / "train.py").write_text(BUGGY)
    (project / "x_generated.py").write_text(BUGGY)
    (project / "sub").mkdir()
    (project / "sub" / ".gitignore").write_text("local.py\n")
    (project / "sub" / "local.py").write_text(BUGGY)
    (project / "sub" / "kept.py").write_text(BUGGY)
    proc = run_cli(".", cwd=project)
    assert sorted({f[0] for f in findings_of(proc)}) == ["kept.py", "train.py"]
    # walking a subdirectory still honours the repository's top-level .gitignore
    proc = run_cli("corpus", cwd=project)
    assert findings_of(proc) == [] and proc.returncode == 0
    # a file named explicitly is linted, like ruff
    assert run_cli("x_generated.py", cwd=project).returncode == 1


def test_declared_source_encoding_is_honoured_and_kept_by_fix(tmp_path):
    src = ("# -*- coding: latin-1 -*-\n# entra\u00eene\n" + BUGGY).encode("latin-1")
    (tmp_path / "l1.py").write_bytes(src)
    proc = run_cli("--select", "TL805", "l1.py", cwd=tmp_path)
    assert [f[3] for f in findings_of(proc)] == ["TL805"]
    assert run_cli("--fix", "--select", "TL805", "l1.py", cwd=tmp_path).returncode == 0
    fixed = (tmp_path / "l1.py").read_bytes()
    assert b"entra\xeene" in fixed and b"eval_strategy=" in fixed
    (tmp_path / "nodecl.py").write_bytes(src.split(b"\n", 1)[1])
    proc = run_cli("nodecl.py", cwd=tmp_path)
    assert "TL002" in proc.stdout and "no encoding declared" in proc.stdout


def test_top_level_help_shows_the_lint_options():
    out = run_cli("--help").stdout
    assert "trainlint check --help" in out
    for option in ("--select", "--output-format", "--probe", "--fix", "--fail-on"):
        assert option in out
    commands = dict(re.findall(r"^  (check|rule|rules|server)\s+(.+)$", out, re.M))
    assert set(commands) == {"check", "rule", "rules", "server"}
    for name, summary in commands.items():
        assert summary.endswith(".") and not summary.endswith("..."), f"{name}: summary cut short: {summary!r}"
