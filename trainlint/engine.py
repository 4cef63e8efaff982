"""The library API the CLI, the language server and the probe runner share: lint a source text, a
file (a script or a notebook), or files and directories (in worker processes, with a cache).

The layers, each importing only the ones above it:

- :mod:`trainlint.core`: one source text → findings (read → gates → parse once → walk once → rules);
- :mod:`trainlint.notebook`: a notebook's code cells as one module, through the core;
- :mod:`trainlint.parallel`: one file of either kind (:func:`lint_file`), many in worker processes;
  :mod:`trainlint.cache` keeps the results of unchanged files;
- this module: :func:`lint_paths` over discovered files.
"""

from __future__ import annotations

from pathlib import Path
from collections.abc import Iterable

from trainlint.cache import Cache
from trainlint.config import Settings
from trainlint.core import FRAMEWORK_RE, MAX_FILE_BYTES, FileResult, code_words, lint_source, lint_text, read_source
from trainlint.files import discover
from trainlint.parallel import lint_file, lint_files

__all__ = [
    "FRAMEWORK_RE", "MAX_FILE_BYTES", "FileResult", "code_words", "lint_file", "lint_paths", "lint_source",
    "lint_text", "read_source",
]


def lint_paths(paths: Iterable[Path | str], settings: Settings | None = None, jobs: int | None = 1,
               cache_dir: Path | str | None = None) -> list[FileResult]:
    """Lint files and directories. Results in a deterministic order (by path), the same for any
    ``jobs`` (worker processes; None or 0: all cores). ``cache_dir``: reuse the results of unchanged
    files from there (see :mod:`trainlint.cache`); None: no cache."""
    settings = settings or Settings()
    files = discover([Path(p) for p in paths], settings)
    cache = Cache(Path(cache_dir), settings) if cache_dir is not None else None
    return lint_files(files, settings, jobs, cache)
