"""Fixtures of the PyTorch probe tests: the tiny checkpoint + CSV, built once per session."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import need_modules

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture(scope="session")
def tiny_torch(tmp_path_factory) -> Path:
    """Directory with ``bert/`` (tiny encoder checkpoint + tokenizer) and ``mnli.csv`` (600 rows)."""
    need_modules("torch", "transformers", "datasets", "tokenizers")
    out = tmp_path_factory.mktemp("tiny_torch")
    # Build in a child process: the test process itself never imports torch.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    subprocess.run([sys.executable, str(FIXTURES / "tiny_torch.py"), str(out)], check=True, env=env,
                   capture_output=True, timeout=300)
    assert (out / "ok").exists()
    return out


@pytest.fixture
def tiny_env(tiny_torch, monkeypatch) -> Path:
    """The env vars the probe test scripts read: TINY_CKPT, TINY_CSV, TINY_VAL_CSV (inherited by the probe child)."""
    monkeypatch.setenv("TINY_CKPT", str(tiny_torch / "bert"))
    monkeypatch.setenv("TINY_CSV", str(tiny_torch / "mnli.csv"))
    monkeypatch.setenv("TINY_VAL_CSV", str(tiny_torch / "mnli_val.csv"))
    return tiny_torch
