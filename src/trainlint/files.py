"""Which files a run lints: ``*.py`` and ``*.ipynb`` under the given paths, minus excludes."""

from __future__ import annotations

import dataclasses
import fnmatch
import os
from pathlib import Path

from trainlint.config import DEFAULT_EXCLUDE, Settings

LINTED_SUFFIXES = (".py", ".pyi", ".ipynb")


@dataclasses.dataclass(frozen=True)
class SourceFile:
    path: Path
    display: str  # the name printed in findings
    error: str | None = None  # e.g. "no such file or directory"


def _default_excluded(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pat) for pat in DEFAULT_EXCLUDE)


def discover(paths: list[Path], settings: Settings, force_exclude: bool = False) -> list[SourceFile]:
    """Files to lint, each once, in a deterministic order (sorted by display path).

    Explicitly named files are linted whatever their suffix, unless ``force_exclude`` (pre-commit
    passes file names: the config's ``exclude`` must still apply). Directories are walked without
    following symlinks (no loops); ``.git``, virtualenvs, ``build/`` … and ``exclude`` are skipped.
    """
    found: dict[str, SourceFile] = {}
    for p in paths:
        display = os.path.normpath(str(p))
        if not os.path.lexists(p):
            found.setdefault(display, SourceFile(p, display, "no such file or directory"))
            continue
        if p.is_dir():
            for f in _walk(p, settings):
                d = os.path.normpath(str(f))
                found.setdefault(d, SourceFile(f, d))
            continue
        if force_exclude and (settings.is_excluded(p) or any(_default_excluded(part) for part in p.parts[:-1])):
            continue
        if not p.exists():  # a dangling symlink
            found.setdefault(display, SourceFile(p, display, "broken symbolic link"))
            continue
        found.setdefault(display, SourceFile(p, display))
    return [found[k] for k in sorted(found)]


def _walk(root: Path, settings: Settings):
    def onerror(exc: OSError) -> None:  # unreadable directories are skipped, not fatal
        pass

    for dirpath, dirnames, filenames in os.walk(root, onerror=onerror):
        base = Path(dirpath)
        dirnames[:] = sorted(
            d for d in dirnames
            if not _default_excluded(d) and not settings.is_excluded(base / d) and not (base / d / "pyvenv.cfg").exists()
        )
        for name in sorted(filenames):
            if name.endswith(LINTED_SUFFIXES):
                f = base / name
                if not settings.is_excluded(f):
                    yield f
