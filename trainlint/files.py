"""Which files a run lints: ``*.py`` and ``*.ipynb`` under the given paths, minus excludes."""

from __future__ import annotations

import dataclasses
import fnmatch
import os
from pathlib import Path
from typing import TYPE_CHECKING

from trainlint.config import DEFAULT_EXCLUDE, Settings

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

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


def _gitignore_spec(directory: Path) -> GitIgnoreSpec | None:
    """The `.gitignore` of ``directory`` as a pathspec matcher, or None."""
    gi = directory / ".gitignore"
    try:
        lines = gi.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines(lines)


def _ancestor_specs(root: Path) -> list[tuple[Path, GitIgnoreSpec]]:
    """`.gitignore` files of the directories above ``root``, up to the git repository's top."""
    specs: list[tuple[Path, GitIgnoreSpec]] = []
    try:
        here = root.resolve()
    except OSError:
        return specs
    for d in (here, *here.parents):
        if d != here:
            spec = _gitignore_spec(d)
            if spec is not None:
                specs.append((d, spec))
        if (d / ".git").exists():
            break
    else:
        return []  # not in a git repository: .gitignore files above the root do not apply
    return specs


def _ignored(path: Path, is_dir: bool, specs: list[tuple[Path, GitIgnoreSpec]]) -> bool:
    for base, spec in specs:
        try:
            rel = path.relative_to(base).as_posix()
        except ValueError:
            continue
        if spec.match_file(rel + ("/" if is_dir else "")):
            return True
    return False


def _walk(root: Path, settings: Settings):
    """Like ruff, respects `.gitignore` files (of the walked tree and of its parents in the repo)."""

    def onerror(exc: OSError) -> None:  # unreadable directories are skipped, not fatal
        pass

    resolved_root = root.resolve()
    specs_by_dir: dict[Path, list[tuple[Path, GitIgnoreSpec]]] = {resolved_root: _ancestor_specs(resolved_root)}
    for dirpath, dirnames, filenames in os.walk(root, onerror=onerror):
        base = Path(dirpath)
        rbase = resolved_root / base.relative_to(root)
        specs = specs_by_dir.pop(rbase, None)
        if specs is None:
            specs = specs_by_dir.get(rbase.parent, [])
        own = _gitignore_spec(rbase)
        if own is not None:
            specs = [*specs, (rbase, own)]
        dirnames[:] = sorted(
            d for d in dirnames
            if not _default_excluded(d) and not settings.is_excluded(base / d)
            and not (base / d / "pyvenv.cfg").exists() and not _ignored(rbase / d, True, specs)
        )
        for d in dirnames:
            specs_by_dir[rbase / d] = specs
        for name in sorted(filenames):
            if name.endswith(LINTED_SUFFIXES):
                f = base / name
                if not settings.is_excluded(f) and not _ignored(rbase / name, False, specs):
                    yield f
