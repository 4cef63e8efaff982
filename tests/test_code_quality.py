"""The project checks its own code: ruff and mypy pass with the configuration in pyproject.toml
(``[tool.ruff]``, ``[tool.mypy]``: strict on ``trainlint/facts/`` and on the probe, ``trainlint/probe/`` and
the stages' ``probe*.py``; mypy's defaults on the rest of the package). They run here, so ``./scripts/test``
runs them; both are in the ``test`` extra."""

from __future__ import annotations

import subprocess
import sys

from support import ROOT, need_modules


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_passes_on_the_projects_code():
    need_modules("ruff")
    proc = _run("ruff", "check", "--no-cache", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_passes_on_the_package():
    need_modules("mypy")
    proc = _run("mypy")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Success" in proc.stdout
