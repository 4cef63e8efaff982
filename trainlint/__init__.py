"""trainlint: find the bugs of a deep-learning training script before the run.

The public API is small and import-light (importing :mod:`trainlint` does not import libcst):

- :func:`trainlint.lint_source` lints one source string,
- :func:`trainlint.lint_paths` lints files and directories,
- :class:`trainlint.Settings` holds the rule selection and configuration,
- :class:`trainlint.Finding` is what every check, static or probe, reports.

``%load_ext trainlint`` in IPython or Jupyter loads the notebook extension (:mod:`trainlint.ipython`).
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["Finding", "Settings", "lint_paths", "lint_source", "__version__"]


def load_ipython_extension(shell) -> None:  # noqa: ANN001  # `%load_ext trainlint`
    from trainlint.ipython import load_ipython_extension as load

    load(shell)


def unload_ipython_extension(shell) -> None:  # noqa: ANN001
    from trainlint.ipython import unload_ipython_extension as unload

    unload(shell)


def __getattr__(name: str):  # PEP 562: keep `import trainlint` cheap for the probe child.
    if name in ("lint_source", "lint_paths", "lint_file"):
        from trainlint import engine

        return getattr(engine, name)
    if name == "Settings":
        from trainlint.config import Settings

        return Settings
    if name == "Finding":
        from trainlint.findings import Finding

        return Finding
    raise AttributeError(f"module 'trainlint' has no attribute {name!r}")
