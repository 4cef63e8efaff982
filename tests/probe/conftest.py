"""Fixtures of the PyTorch probe tests: the tiny checkpoint + CSV, built once per session."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from support import built_once, keras_python, need_modules

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture(scope="session")
def tiny_torch(tmp_path_factory) -> Path:
    """Directory with ``bert/`` (tiny encoder checkpoint + tokenizer) and ``mnli.csv`` (600 rows); built
    once per test run, shared by the pytest-xdist workers."""
    need_modules("torch", "transformers", "datasets", "tokenizers")

    def build(out: Path) -> None:
        # Build in a child process: the test process itself never imports torch.
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
        subprocess.run([sys.executable, str(FIXTURES / "tiny_torch.py"), str(out)], check=True, env=env,
                       capture_output=True, timeout=300)

    out = built_once(tmp_path_factory, "tiny_torch", build)
    assert (out / "ok").exists()
    return out


@pytest.fixture(scope="session")
def tiny_tf(tmp_path_factory) -> Path:
    """The tiny TF checkpoint and tokenizer (tests/fixtures/tiny_tf.py, built with the TF environment's
    interpreter) and an MNLI-like ``mnli.csv`` (300 rows); built once per test run, shared by the workers."""
    kpy = keras_python()

    def build(out: Path) -> None:
        proc = subprocess.run([kpy, str(FIXTURES / "tiny_tf.py"), str(out)], capture_output=True, text=True,
                              timeout=300, env={**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "2"})
        if proc.returncode != 0 or not (out / "ok").exists():
            pytest.fail(f"building the TF fixtures with {kpy} failed (is .venv-tf complete? run ./scripts/test):\n"
                        + proc.stderr[-3000:], pytrace=False)
        sys.path.insert(0, str(FIXTURES.parent))
        from fixtures import tiny_torch as builders  # its CSV writer is pure Python

        builders.write_csv(out / "mnli.csv", 300)
        builders.write_csv(out / "mnli_val.csv", 80, seed=1)  # evaluation data apart from the training data

    return built_once(tmp_path_factory, "tiny_tf", build)


@pytest.fixture
def tiny_env(tiny_torch, monkeypatch) -> Path:
    """The env vars the probe test scripts read: TINY_CKPT, TINY_CSV, TINY_VAL_CSV (inherited by the probe child)."""
    monkeypatch.setenv("TINY_CKPT", str(tiny_torch / "bert"))
    monkeypatch.setenv("TINY_CSV", str(tiny_torch / "mnli.csv"))
    monkeypatch.setenv("TINY_VAL_CSV", str(tiny_torch / "mnli_val.csv"))
    return tiny_torch
