"""The `.pre-commit-hooks.yaml` hook, run by real pre-commit against a temporary git repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from support import ROOT, missing, need_modules

BUGGY = textwrap.dedent(
    """\
    from transformers import TrainingArguments
    args = TrainingArguments("out", evaluation_strategy="epoch")
    """
)


def git(*args, cwd):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env=env)


def _documented_revs() -> list[tuple[str, str]]:
    """(file, rev) of each pre-commit configuration of trainlint's repository in the docs."""
    import re

    out = []
    for name in ("README.md", "docs/ci.md"):
        text = (ROOT / name).read_text(encoding="utf-8")
        for m in re.finditer(r"repo: https://github\.com/trainlint/trainlint\n\s+rev: (\S+)", text):
            out.append((name, m.group(1)))
    return out


def _git_out(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)


def test_documented_rev_is_in_the_history_and_has_the_hook():
    """The `rev` a user copies must exist in this repository's history (a tag or a commit), and its
    .pre-commit-hooks.yaml must be today's: the same hook, the same documented behaviour."""
    need_modules("yaml")
    import yaml

    revs = _documented_revs()
    assert {name for name, _ in revs} == {"README.md", "docs/ci.md"}
    if shutil.which("git") is None or _git_out("rev-parse", "--git-dir").returncode != 0:
        pytest.skip("not a git checkout: the history the rev is checked against is not here")
    (current,) = [h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text()) if h["id"] == "trainlint"]
    for name, rev in revs:
        commit = _git_out("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
        if commit.returncode != 0 and _git_out("rev-parse", "--is-shallow-repository").stdout.strip() == "true":
            pytest.skip(f"a shallow clone: {rev} may be in the history it lacks")
        assert commit.returncode == 0, f"{name}: rev {rev} is neither a tag nor a commit of this repository"
        assert _git_out("merge-base", "--is-ancestor", commit.stdout.strip(), "HEAD").returncode == 0, \
            f"{name}: rev {rev} is not in the history of this branch"
        hooks = _git_out("show", f"{commit.stdout.strip()}:.pre-commit-hooks.yaml")
        assert hooks.returncode == 0, f"{name}: rev {rev} has no .pre-commit-hooks.yaml"
        pinned = [h for h in yaml.safe_load(hooks.stdout) if h.get("id") == "trainlint"]
        assert pinned == [current], f"{name}: the trainlint hook at rev {rev} is not the hook of today's .pre-commit-hooks.yaml"
        # not older than the last change of the hook's file (its documented behaviour included): a change
        # to .pre-commit-hooks.yaml moves the documented rev along
        assert hooks.stdout == (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"), \
            f"{name}: rev {rev} predates the last change of .pre-commit-hooks.yaml: pin a newer commit"


def test_hook_definition_is_static_only():
    need_modules("yaml")
    import yaml

    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    (hook,) = [h for h in hooks if h["id"] == "trainlint"]
    assert "--probe" not in hook["entry"]
    assert "python" in hook.get("types", []) + hook.get("types_or", [])
    assert hook["language"] == "python"


@pytest.mark.slow
def test_real_pre_commit_runs_the_hook(tmp_path):
    repo = tmp_path / "project"
    repo.mkdir()
    git("init", "-q", cwd=repo)
    (repo / "train.py").write_text(BUGGY)
    (repo / "clean.py").write_text("import torch\n")
    (repo / "README.txt").write_text("evaluation_strategy=\n")
    git("add", ".", cwd=repo)
    pre_commit = Path(sys.executable).with_name("pre-commit")
    pre_commit = str(pre_commit) if pre_commit.exists() else shutil.which("pre-commit")
    if pre_commit is None:
        missing("pre-commit is not installed")
    cmd = [pre_commit, "try-repo", str(ROOT),
           "trainlint", "--all-files", "--verbose"]
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    proc = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, env=env, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "train.py:2:33: TL805" in out
    assert "clean.py:" not in out and "README.txt" not in out
    # fixed file: the hook passes
    (repo / "train.py").write_text(BUGGY.replace("evaluation_strategy", "eval_strategy"))
    git("add", ".", cwd=repo)
    proc = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
