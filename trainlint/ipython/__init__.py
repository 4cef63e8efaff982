"""trainlint in IPython and Jupyter: ``%load_ext trainlint`` (see docs/notebooks.md).

Each cell is linted before it runs, with the cells run before it (in the order they ran); ``%trainlint``
shows the session's findings and runs the live probe on the kernel's own objects
(``%trainlint probe trainer``).
"""

from __future__ import annotations

from typing import Any


def load_ipython_extension(shell: Any) -> None:
    from trainlint.ipython.extension import load

    load(shell)


def unload_ipython_extension(shell: Any) -> None:
    from trainlint.ipython.extension import unload

    unload(shell)
