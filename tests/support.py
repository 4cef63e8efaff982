"""Shared test helpers: lint a snippet, run the CLI in a subprocess.

Import them with `from support import ...` (not from `conftest`: tests/probe has its own conftest.py,
and two modules named `conftest` shadow each other).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"


def lint(source: str, select: str | None = None, filename: str = "train.py", **settings):
    """Findings for a dedented snippet (default rules, or `select` e.g. "TL301" / "ALL")."""
    from trainlint.config import Settings
    from trainlint.engine import lint_source

    s = Settings(select=[select] if select else None, **settings)
    return lint_source(textwrap.dedent(source), filename, s)


def codes(source: str, select: str | None = None, **kw) -> list[str]:
    return [f.code for f in lint(source, select, **kw)]


def run_cli(*args: str, cwd: Path | None = None, input: str | None = None, env: dict | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess:
    """`python -m trainlint ARGS` in a fresh process (what a user runs)."""
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "trainlint", *args], cwd=cwd or ROOT, input=input,
                          capture_output=True, text=True, env=full_env, timeout=timeout)

