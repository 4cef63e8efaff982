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
