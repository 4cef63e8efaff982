"""Linting files: one of either kind (:func:`lint_file`: a script, or a notebook through
:mod:`trainlint.notebook`), and many: the result cache, then worker processes for what is left.

``lint_files`` is what ``lint_paths`` and the CLI call. The output does not depend on ``jobs``:
results come back in the order of the input (discovery sorts by path), whatever finished first.

- Cache: the parent hashes each file and takes unchanged results from :mod:`trainlint.cache`.
- Workers: the misses are cut into chunks of about equal size (largest files first, so one big file
  does not finish last) and linted in a process pool (``fork`` where there is one: the children
  inherit the loaded rules and start in milliseconds). Few or small files stay in this process:
  a pool costs more than it saves there.
- A file that makes a worker die (a crash in native code) is linted again alone, and reported as
  an internal error if it kills that worker too; the other files' findings are all kept.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from collections.abc import Sequence

from trainlint.core import MAX_FILE_BYTES, FileResult, decode_source, meta_finding, lint_text, read_source

#: Below this many files, or this many bytes, a pool costs more than it saves.
MIN_PARALLEL_FILES = 8
MIN_PARALLEL_BYTES = 256 * 1024


def lint_file(path: Path, settings, display: str | None = None) -> FileResult:
    """Lint one file: a notebook (``.ipynb``) or a script."""
    name = display or str(path)
    text, err = read_source(path)
    return lint_decoded(text, err, name, settings, notebook=path.suffix == ".ipynb")


def lint_bytes(data: bytes, name: str, settings) -> FileResult:
    """Lint a file's bytes given without the file (stdin): exactly as :func:`lint_file` lints the file
    ``name`` holding them (binary or undecodable bytes are TL002, a ``.ipynb`` name is a notebook)."""
    text, err = decode_source(data)
    return lint_decoded(text, err, name, settings, notebook=name.endswith(".ipynb"))


def lint_decoded(text: str | None, err: str | None, name: str, settings, notebook: bool) -> FileResult:
    if text is None:
        return FileResult(name, [meta_finding("TL002", name, f"cannot read: {err}", 1, 1)])
    if notebook:
        from trainlint.notebook import lint_notebook_text

        if not text.strip():
            return FileResult(name, [meta_finding("TL002", name, "cannot read: empty file, not a notebook", 1, 1)])
        return lint_notebook_text(text, name, settings)
    if not text.strip():
        return FileResult(name, [], note="empty file, nothing to lint")
    return lint_text(text, name, settings)


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - macOS, Windows
        return max(1, os.cpu_count() or 1)


def lint_files(files: Sequence, settings, jobs: int | None = None, cache=None) -> list:
    """FileResults for ``files`` (``trainlint.files.SourceFile``), in the same order.

    ``jobs``: worker processes (None or 0: all cores; 1: serial). ``cache``: a
    :class:`trainlint.cache.Cache` or None.
    """
    jobs = default_jobs() if not jobs or jobs < 0 else jobs
    results: list = [None] * len(files)
    todo: list[tuple[int, str, str, int]] = []  # (index, path, display, size)
    keys: dict[int, str] = {}
    for i, f in enumerate(files):
        if f.error is not None:
            results[i] = FileResult(f.display, [meta_finding("TL002", f.display, f"cannot read: {f.error}", 1, 1)])
            continue
        size = 0
        if cache is not None:
            data = _cacheable_bytes(Path(f.path))  # None: lint_file reports why
            if data is not None:
                size = len(data)
                key = cache.key(data, f.display)
                hit = cache.get(key, f.display)
                if hit is not None:
                    results[i] = hit
                    continue
                keys[i] = key
        else:
            try:
                size = os.stat(f.path).st_size
            except OSError:
                size = 0
        todo.append((i, str(f.path), f.display, size))

    total = sum(t[3] for t in todo)
    if jobs > 1 and len(todo) >= MIN_PARALLEL_FILES and total >= MIN_PARALLEL_BYTES:
        done = _run_pool(todo, settings, jobs, total)
    else:
        done = {i: _lint_one(path, display, settings) for i, path, display, _ in todo}
    for i, res in done.items():
        results[i] = res
        if cache is not None and i in keys:
            cache.put(keys[i], res)
    return results


def _cacheable_bytes(path: Path) -> bytes | None:
    """The bytes of a regular file small enough to lint; None otherwise (never opens a FIFO)."""
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
            return None
        return path.read_bytes()
    except OSError:
        return None


def _lint_one(path: str, display: str, settings):
    try:
        return lint_file(Path(path), settings, display)
    except Exception as exc:  # lint_file catches rule errors; anything else is still one file's problem
        res = FileResult(display, [meta_finding("TL003", display, f"internal error: {type(exc).__name__}: {exc}", 1, 1)])
        res.internal_error = True
        return res


# ---------------------------------------------------------------------------------------------
# The pool.

_SETTINGS = None


def _init_worker(settings) -> None:
    global _SETTINGS
    _SETTINGS = settings


def _work(chunk: list[tuple[int, str, str]]) -> list[tuple[int, object]]:
    return [(i, _lint_one(path, display, _SETTINGS)) for i, path, display in chunk]


def _chunks(todo, jobs: int, total: int) -> list[list[tuple[int, str, str]]]:
    """Largest files first, cut into chunks of about total/(jobs*8) bytes (at most 64 files)."""
    target = max(total // (jobs * 8), 1)
    chunks: list[list[tuple[int, str, str]]] = []
    cur: list[tuple[int, str, str]] = []
    size = 0
    for i, path, display, n in sorted(todo, key=lambda t: -t[3]):
        cur.append((i, path, display))
        size += n
        if size >= target or len(cur) >= 64:
            chunks.append(cur)
            cur, size = [], 0
    if cur:
        chunks.append(cur)
    return chunks


def _context():
    import multiprocessing

    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else None)


def _run_pool(todo, settings, jobs: int, total: int) -> dict[int, object]:
    done: dict[int, object] = {}
    left = _pool_round(_chunks(todo, jobs, total), settings, jobs, done)
    if left:  # a worker died: the unfinished files again, one task each, then each alone
        left = _pool_round([[t] for t in left], settings, jobs, done)
        for i, path, display in left:
            done[i] = _isolated(path, display, settings)
    return done


def _pool_round(chunks, settings, jobs: int, done: dict) -> list[tuple[int, str, str]]:
    """Run ``chunks``; fill ``done``; the tasks of chunks whose worker died."""
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    left: list[tuple[int, str, str]] = []
    with ProcessPoolExecutor(max_workers=max(1, min(jobs, len(chunks))), mp_context=_context(),
                             initializer=_init_worker, initargs=(settings,)) as pool:
        futures = [(pool.submit(_work, c), c) for c in chunks]
        for fut, chunk in futures:
            try:
                done.update(fut.result())
            except BrokenProcessPool:
                left.extend(t for t in chunk if t[0] not in done)
    return left


def _isolated(path: str, display: str, settings):
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    try:
        with ProcessPoolExecutor(max_workers=1, mp_context=_context(), initializer=_init_worker,
                                 initargs=(settings,)) as pool:
            return pool.submit(_work, [(0, path, display)]).result()[0][1]
    except BrokenProcessPool:
        res = FileResult(display, [meta_finding(
            "TL003", display, "internal error: the parser crashed on this file (too deeply nested?)", 1, 1)])
        res.internal_error = True
        return res
