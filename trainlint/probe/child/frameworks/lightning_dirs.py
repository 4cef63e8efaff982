"""Child-side plugin for PyTorch Lightning's output directories (see ../../PROTOCOL.md).

Lightning writes where the script runs: ``Trainer(default_root_dir=None)`` is the working directory, its
default logger makes ``lightning_logs/version_N`` there and the checkpoint callback
``lightning_logs/version_N/checkpoints``. In the probe's read-only sandbox those are redirected into the
probe's temporary directory, like ``--output_dir``, and said in a note: ``Trainer(default_root_dir=...)``,
``ModelCheckpoint(dirpath=...)`` and the ``save_dir`` of the CSV and TensorBoard loggers, for both package
names (``lightning.pytorch`` and ``pytorch_lightning``). A directory already inside the temporary
directory is left alone. The training loop itself is observed by the ``torch_loop`` plugin (Lightning
steps its optimizers with a closure).
"""

from __future__ import annotations

import functools
import inspect
import os
from typing import Any

from trainlint.probe.child.harness import Harness

#: (module under the package, class, the argument naming a directory it writes to)
WRITERS = (
    ("trainer.trainer", "Trainer", "default_root_dir"),
    ("callbacks.model_checkpoint", "ModelCheckpoint", "dirpath"),
    ("loggers.csv_logs", "CSVLogger", "save_dir"),
    ("loggers.tensorboard", "TensorBoardLogger", "save_dir"),
)
PACKAGES = ("lightning.pytorch", "pytorch_lightning")


def install(h: Harness) -> None:
    redirected: list[str] = []
    for package in PACKAGES:
        for module, cls, arg in WRITERS:
            h.when_imported(f"{package}.{module}", functools.partial(_on_module, h, cls, arg, redirected))


def _on_module(h: Harness, cls: str, arg: str, redirected: list[str], module: Any) -> None:
    _redirect_init(h, getattr(module, cls, None), arg, redirected)


def _redirect_init(h: Harness, klass: Any, arg: str, redirected: list[str]) -> None:
    if klass is None or getattr(klass.__init__, "_trainlint_redirects", None) == arg:
        return
    original = klass.__init__
    signature = inspect.signature(original)

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            bound = signature.bind_partial(self, *args, **kwargs)
        except TypeError:  # let the real __init__ say what is wrong with the call
            original(self, *args, **kwargs)
            return
        asked = bound.arguments.get(arg)
        target = h.guarded("lightning directories", _target, h, klass.__name__, arg, asked, redirected)
        if target is not None:
            bound.arguments[arg] = target
            original(*bound.args, **bound.kwargs)
        else:
            original(self, *args, **kwargs)

    __init__._trainlint_redirects = arg  # type: ignore[attr-defined]
    klass.__init__ = __init__


def _target(h: Harness, cls: str, arg: str, asked: Any, redirected: list[str]) -> str | None:
    """Where ``cls(arg=asked)`` writes in the probe, or None to leave it."""
    work = os.path.realpath(h.workdir)
    if asked is not None and not isinstance(asked, (str, os.PathLike)):
        return None
    if asked is not None and os.path.realpath(os.fspath(asked)).startswith(work + os.sep):
        return None
    if asked is None and cls != "Trainer":
        return None  # the logger's or callback's default follows the Trainer's root
    target = os.path.join(work, "output", "lightning", str(len(redirected) + 1))
    os.makedirs(target, exist_ok=True)
    shown = "the working directory" if asked is None else repr(os.fspath(asked))
    redirected.append(f"{cls}({arg}={shown})")
    h.note(f"Lightning output redirected into the probe's temporary directory: {cls}({arg}) was {shown}")
    return target
