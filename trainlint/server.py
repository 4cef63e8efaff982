"""``trainlint server``: the language server (LSP over stdio).

What the editor gets:

* diagnostics on open, on change (debounced; the latest version wins) and on save, cleared on close.
  Each has ``code``, ``source: "trainlint"``, the exact range, ``codeDescription.href`` (the rule doc)
  and a severity: error → Error, warning → Warning, info → Information, except that findings below the
  configured ``fail-on`` threshold are shown as Hint (shown, not failing);
* code actions: apply a finding's fix (the title says safe or unsafe), fix all safe fixes in the
  file (``source.fixAll.trainlint``), add ``# noqa: CODE`` on the line;
* hover on a finding: the rule document (markdown);
* notebooks (LSP 3.17 notebook documents): the code cells linted together, in order, as
  ``trainlint notebook.ipynb`` does (:class:`NotebookLinted`); each cell gets its own findings on its
  own rows, code actions per cell (a fix's edits go to the cells they touch), fix all per cell
  (``source.fixAll.trainlint``) or for the whole notebook (``notebook.source.fixAll.trainlint``);
* the nearest ``pyproject.toml`` with ``[tool.trainlint]`` configures each file, re-read when it
  changes (``workspace/didChangeWatchedFiles``, or its mtime on the next lint).

How it keeps up with an editor:

* ``initialize`` is answered (:mod:`trainlint.server_main`) before the LSP library is imported (the
  capabilities are static; ``tests/test_server_protocol.py`` checks them against what pygls
  computes), then the rest loads; the lint worker process starts as soon as the server does.
* Linting runs in a worker process (:func:`worker_main`), never on the message loop: LibCST's parser
  holds the GIL, so a thread would stall every request while a large document parses. One job per
  document is in flight; a result for an outdated version updates the cache but is not published.
* Code actions and hovers are answered from the findings of the last lint, never by re-linting.
  When the document changed since, the findings are carried over to the current text
  (:func:`carry_over`): those before or after the edited region move with the text, those touching
  it are left out until the next lint. A request that arrives before the first lint of a document
  waits for it, and ``$/cancelRequest`` cancels it.
* Every request gets a response: -32700/-32600 for malformed messages, -32602 for invalid params,
  -32603 for an internal failure, -32600 after ``shutdown``; a client's mistake in a notification
  is a log line on stderr, never a popup. ``exit`` without ``shutdown`` exits with status 1.

The server lints the text it is sent, statically: it never runs a probe and never imports or executes
the user's code. A document it cannot lint (syntax error mid-edit, NUL bytes, lone surrogates, a
huge file, a bug in a rule, a crash of the worker) gets one TL00x diagnostic; the server stays up.

Initialization options (all optional): ``{"debounce": 150}`` (milliseconds), ``{"maxChars": N}``,
``{"settings": {"select": [...], "ignore": [...], "fail-on": "error"}}``: the editor's settings, a
``[tool.trainlint]`` table used for the files that no ``pyproject.toml`` with ``[tool.trainlint]``
configures (where one does, it wins).

This module imports only the standard library at import time: it is what the worker process and the
``initialize`` fast path load. The LSP side (pygls, lsprotocol) is :mod:`trainlint.server_lsp`;
:func:`trainlint.server_main.start` serves.
"""

from __future__ import annotations

import bisect
import dataclasses
import json
import logging
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from trainlint.textdiff import common_prefix, common_suffix

#: the packages of the ``server`` extra (pyproject.toml), named when they are missing
SERVER_REQUIREMENTS = ("pygls>=2.0,<3", "lsprotocol>=2025.0.0")
SERVER_MODULES = ("pygls", "lsprotocol", "cattrs", "attrs")


def missing_server_packages(name: str | None) -> str:
    """What to run when the LSP packages are missing: the install into *this* interpreter, which works
    however trainlint was installed (no release of it is on a package index)."""
    reqs = " ".join(f"'{r}'" for r in SERVER_REQUIREMENTS)
    return (f"trainlint server needs pygls and lsprotocol ({name} is missing): install them into this "
            f"environment with `{sys.executable} -m pip install {reqs}` (or, in a clone of trainlint, "
            "`pip install '.[server]'`)")

if TYPE_CHECKING:
    from trainlint.findings import Finding, Position

log = logging.getLogger("trainlint.server")

SOURCE = "trainlint"
FIX_ALL_KIND = "source.fixAll.trainlint"
#: the safe fixes of a whole notebook (VS Code's `notebook.codeActionsOnSave`); FIX_ALL_KIND on a cell fixes that cell
NOTEBOOK_FIX_ALL_KIND = "notebook.source.fixAll.trainlint"
DEFAULT_DEBOUNCE = 0.15  # seconds
DEFAULT_MAX_CHARS = 500_000  # ~15 000 lines
PYTHON_SUFFIXES = (".py", ".pyi")
#: the URIs editors give notebook cells sent as text documents (VS Code, Jupyter-LSP)
NOTEBOOK_CELL_SCHEMES = ("vscode-notebook-cell:", "vscode-notebook-cell-")
LINT_THREAD_STACK = 256 * 1024 * 1024

_LINE_RE = re.compile(r"\r\n|\r|\n")
_HEADER_RE = re.compile(rb"^content-length:\s*(\d+)\s*$", re.IGNORECASE)


def split_lines(text: str) -> list[str]:
    """Lines as LSP counts them (``\\n``, ``\\r\\n`` and ``\\r`` end a line)."""
    return _LINE_RE.split(text)


def line_starts(text: str) -> list[int]:
    """Offsets of the first character of each line (LSP's line breaks)."""
    starts = [0]
    starts.extend(m.end() for m in _LINE_RE.finditer(text))
    return starts


# ---------------------------------------------------------------------------------------------
# The lint of one version of one document, and carrying its findings over to a newer text.


@dataclasses.dataclass
class Linted:
    """The findings of one version of one document.

    ``text`` is what was linted (a notebook cell's magics masked), ``source`` the document's text
    at that version; ``fail_on`` the file's threshold (findings below it are shown as hints)."""

    version: int | None
    text: str
    lines: list[str]
    findings: list[Finding]
    seconds: float = 0.0
    source: str | None = None
    fail_on: Any = None
    carried: bool = False  # carried over from an older version (see carry_over)
    #: memo of the "fix all" edit, per text (computed once per version)
    fix_all_text: str | None = dataclasses.field(default=None, repr=False)
    #: a cell of an open notebook: the notebook's lint, and each finding in its virtual module
    notebook: NotebookLinted | None = dataclasses.field(default=None, repr=False)
    virtual: list[Finding] | None = dataclasses.field(default=None, repr=False)


@dataclasses.dataclass
class NotebookCell:
    """One cell of an open notebook as it was linted."""

    uri: str
    code: bool  # a Python code cell (the others only count for the cells' positions)
    text: str
    version: int | None


@dataclasses.dataclass
class NotebookLinted:
    """The lint of an open notebook (its code cells linted together, as ``trainlint notebook.ipynb``
    does): the notebook (:class:`trainlint.notebook.Notebook`), the findings in its virtual module,
    and per code cell a :class:`Linted` with that cell's findings on the cell's own rows."""

    cells: list[NotebookCell]
    notebook: Any
    findings: list[Finding]
    by_cell: dict[str, Linted]

    @classmethod
    def from_result(cls, cells: list[NotebookCell], result: LintResult) -> NotebookLinted:
        nb = result.notebook
        code = [i for i, c in enumerate(cells, 1) if c.code]
        per_cell: dict[int, list[tuple[Finding, Finding]]] = {}
        for f in result.findings:
            # without the notebook (the lint process failed) a finding goes to the first code cell
            mapped = nb.map_finding(f) if nb is not None else dataclasses.replace(f, cell=code[0] if code else 1)
            per_cell.setdefault(mapped.cell or 1, []).append((mapped, f))
        self = cls(cells, nb, list(result.findings), {})
        for i, cell in enumerate(cells, 1):
            if not cell.code:
                continue
            pairs = sorted(per_cell.get(i, []), key=lambda pair: pair[0].sort_key())
            self.by_cell[cell.uri] = Linted(cell.version, cell.text, split_lines(cell.text), [p[0] for p in pairs],
                                            result.seconds, cell.text, result.fail_on, notebook=self,
                                            virtual=[p[1] for p in pairs])
        return self

    def find(self, uri: str) -> tuple[int, Linted] | None:
        """(index among all cells, its findings) of a code cell, given its uri in any quoting."""
        from urllib.parse import unquote

        key = unquote(uri)
        for i, cell in enumerate(self.cells, 1):
            if cell.code and unquote(cell.uri) == key:
                return i, self.by_cell[cell.uri]
        return None

    def cell_of(self, f: Finding) -> int | None:
        """The cell (index among all cells, 1-based) that each edit of a virtual finding's fix lies in,
        or None when its edits lie in several cells."""
        if self.notebook is None or f.fix is None:
            return None
        cells = {self.notebook.locate(e.start)[0] for e in f.fix.edits} | {
            self.notebook.locate(e.end)[0] for e in f.fix.edits}
        return cells.pop() if len(cells) == 1 else None


def carry_over(linted: Linted, source: str, version: int | None) -> Linted:
    """``linted``'s findings moved onto ``source``, a newer text of the same document.

    The edits between the two texts lie in one region (common prefix and suffix): a finding whose
    range or fix touches it is left out (its text changed, its fix may no longer apply); the others
    keep their place relative to the text around them. No parsing: a few milliseconds on a long file."""
    from trainlint.findings import Edit, Fix, Position

    old = linted.source if linted.source is not None else linted.text
    if old == source:
        return dataclasses.replace(linted, version=version, carried=True, fix_all_text=None)
    p = common_prefix(old, source)
    s = common_suffix(old, source, min(len(old), len(source)) - p)
    old_end = len(old) - s
    delta = len(source) - len(old)
    old_starts = line_starts(old)
    new_starts = line_starts(source)

    def offset(pos: Position) -> int | None:
        row = pos.row - 1
        return old_starts[row] + pos.column - 1 if row < len(old_starts) else None

    def to_pos(off: int) -> Position:
        row = bisect.bisect_right(new_starts, off) - 1
        return Position(row + 1, off - new_starts[row] + 1)

    def move(a_pos: Position, b_pos: Position) -> tuple[Position, Position] | None:
        """The span [a, b] in the new text, if it lies wholly before or wholly after the edits."""
        a, b = offset(a_pos), offset(b_pos)
        if a is None or b is None:
            return None
        if b < p:
            return a_pos, b_pos
        if a > old_end:
            return to_pos(a + delta), to_pos(b + delta)
        return None

    kept = []
    for f in linted.findings:
        span = move(f.start, f.end)
        if span is None:
            continue
        fix = f.fix
        if fix is not None:
            moved = [(m, e.content) for e in fix.edits if (m := move(e.start, e.end)) is not None]
            if len(moved) != len(fix.edits):
                continue
            fix = Fix(fix.applicability, fix.message, tuple(Edit(m[0], m[1], c) for m, c in moved))
        kept.append(dataclasses.replace(f, start=span[0], end=span[1], fix=fix))
    return Linted(version, source, split_lines(source), kept, linted.seconds, source, linted.fail_on, carried=True)


# ---------------------------------------------------------------------------------------------
# The worker side: runs in the lint process (or in process, for tests). No LSP library here.


@dataclasses.dataclass
class LintResult:
    findings: list
    text: str  # the text linted (a notebook cell's magics masked)
    fail_on: Any = None
    messages: list[str] = dataclasses.field(default_factory=list)
    seconds: float = 0.0
    notebook: Any = None  # a notebook's lint: its trainlint.notebook.Notebook (the findings are in its virtual module)


class Linter:
    """Settings per directory (keyed on the candidate pyproject.toml files' mtimes), one incremental
    parser per open document, and the lint itself."""

    def __init__(self) -> None:
        self.settings: dict[tuple, Any] = {}
        self.config_errors: set[str] = set()
        self.parsers: dict[str, Any] = {}
        #: the editor's settings (a ``[tool.trainlint]`` table) for files no pyproject.toml configures
        self.editor_table: dict[str, Any] | None = None

    def configure(self, table: dict[str, Any] | None) -> None:
        self.editor_table = table or None
        self.forget(None)

    def settings_for(self, path: Path | None, root: str | None, messages: list[str]):
        from trainlint.config import ConfigError, Settings, find_config, load_settings, settings_from_table

        start = path.parent if path is not None else Path(root or os.getcwd())
        key_parts = []
        try:
            for d in (start, *start.parents):
                candidate = d / "pyproject.toml"
                try:
                    st = candidate.stat()
                except OSError:
                    continue
                key_parts.append((str(candidate), st.st_mtime_ns, st.st_size))
        except OSError:
            pass
        key = tuple(key_parts)
        cached = self.settings.get(key)
        if cached is not None:
            return cached
        try:
            start = start if start.is_dir() else Path.cwd()
            if self.editor_table is not None and find_config(start) is None:
                settings = settings_from_table(self.editor_table, Path("the editor's trainlint settings"))
            else:
                settings = load_settings(None, start=start)
        except ConfigError as exc:
            msg = f"trainlint: {exc}; using the default rules until it is fixed"
            if msg not in self.config_errors:
                self.config_errors.add(msg)
                messages.append(msg)
            settings = Settings()
        self.settings[key] = settings
        return settings

    def forget(self, uri: str | None = None) -> None:
        """Drop a closed document's parser (``uri``), or the settings cache (None)."""
        if uri is None:
            self.settings.clear()
            self.config_errors.clear()
        else:
            self.parsers.pop(uri, None)
        release_memory()

    def lint(self, text: str, name: str, path: str | None, uri: str | None = None, max_chars: int = DEFAULT_MAX_CHARS,
             root: str | None = None) -> LintResult:
        from trainlint.core import lint_text

        if uri is not None and uri.startswith(NOTEBOOK_CELL_SCHEMES) and ("%" in text or "!" in text or "?" in text):
            from trainlint.notebook import mask_magics

            text = mask_magics(text)  # `!pip install ...`, `%%time`: not Python, not a syntax error
        return self._lint(text, name, path, uri, max_chars, root,
                          lambda settings, parse, positions: lint_text(text, name, settings, parse=parse,
                                                                       positions=positions).findings)

    def lint_notebook(self, cells: list[tuple[str, str]], name: str, path: str | None, uri: str | None = None,
                      max_chars: int = DEFAULT_MAX_CHARS, root: str | None = None) -> LintResult:
        """Lint an open notebook's cells (``(cell type, source)`` in order) together, as
        ``trainlint notebook.ipynb`` does. The findings are in the coordinates of the virtual module
        (``LintResult.notebook``, a :class:`trainlint.notebook.Notebook`, maps them to cells)."""
        from trainlint.notebook import lint_virtual_module, notebook_from_cells

        nb = notebook_from_cells(cells)
        result = self._lint(nb.source, name, path, uri, max_chars, root,
                            lambda settings, parse, positions: lint_virtual_module(nb, name, settings, parse,
                                                                                   positions).findings)
        result.notebook = nb
        return result

    def _lint(self, text: str, name: str, path: str | None, uri: str | None, max_chars: int, root: str | None,
              run: Callable[[Any, Any, Any], list]) -> LintResult:
        """``run(settings, parse, positions)`` → the findings of ``text``, unless the text cannot be linted
        (too large, binary, not UTF-8: one TL002) or the file is excluded; a failure is one TL003."""
        from trainlint.core import meta_finding

        t0 = time.perf_counter()
        messages: list[str] = []
        fs_path = Path(path) if path else None
        fail_on = None
        findings: list
        if len(text) > max_chars:
            findings = [meta_finding("TL002", name, f"too large for the language server ({len(text):,} characters, "
                                      f"limit {max_chars:,}): run `trainlint {name}` in a terminal", 1, 1)]
        elif "\x00" in text:
            row = text.count("\n", 0, text.index("\x00")) + 1
            findings = [meta_finding("TL002", name, f"cannot read: binary content (a NUL character on line {row})",
                                      row, 1)]
        else:
            try:
                text.encode("utf-8")
                bad = None
            except UnicodeEncodeError as exc:
                bad = text.count("\n", 0, exc.start) + 1
            if bad is not None:
                findings = [meta_finding("TL002", name, f"cannot read: not valid UTF-8 (a lone surrogate on line {bad})",
                                          bad, 1)]
            else:
                try:
                    settings = self.settings_for(fs_path, root, messages)
                    fail_on = getattr(settings, "fail_on", None)
                    if fs_path is not None and settings.is_excluded(fs_path):
                        findings = []
                    else:
                        parse = positions = None
                        if uri is not None:
                            parser = self.parsers.get(uri)
                            if parser is None:
                                from trainlint.incremental import IncrementalParser

                                parser = self.parsers[uri] = IncrementalParser()
                            parse, positions = parser.parse, parser.positions
                        findings = run(settings, parse, positions)
                except Exception as exc:  # a bug in trainlint must not take the editor's linter down
                    log.exception("linting %s failed", name)
                    findings = [meta_finding("TL003", name, f"internal error: {type(exc).__name__}: {exc}", 1, 1)]
        return LintResult(findings, text, fail_on, messages, time.perf_counter() - t0)


def release_memory() -> None:
    """Collect garbage and give freed heap pages back to the system (glibc keeps them otherwise:
    RSS stayed at its peak after large documents were closed)."""
    import gc

    gc.collect()
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL("libc.so.6").malloc_trim(0)
        except (OSError, AttributeError):
            pass


def _big_stack_pool():
    """A one-thread pool whose thread has a large stack: the native parser recurses deeply on
    pathological text (the pages are only reserved)."""
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trainlint-lint")
    try:
        previous = threading.stack_size(LINT_THREAD_STACK)
    except (ValueError, RuntimeError):
        return pool
    try:
        pool.submit(lambda: None).result()  # start the thread now, with that stack
    finally:
        threading.stack_size(previous)
    return pool


def worker_main(conn) -> None:
    """The lint process: jobs ``(id, method, args)`` in, ``(id, ok, value)`` out, on ``conn``.
    Jobs run one at a time on a large-stack thread; this thread keeps reading, so the server never
    blocks sending a large document."""
    os.dup2(2, 1)  # nothing printed here may reach the LSP stream on the server's stdout
    sys.stdout = sys.stderr
    logging.basicConfig(level=os.environ.get("TRAINLINT_LOG", "WARNING").upper(),
                        format="trainlint-lint %(levelname)s %(name)s: %(message)s")
    linter = Linter()
    pool = _big_stack_pool()
    send_lock = threading.Lock()
    closed: dict[str, int] = {}  # uri → the id of its last "forget" job (set on arrival, not when run)

    def run(job_id: int, method: str, args: tuple) -> None:
        try:
            if method in ("lint", "lint_notebook") and closed.get(args[3], -1) > job_id:
                value: Any = None  # the document was closed meanwhile: its result would be dropped
            elif method == "lint":
                value = linter.lint(*args)
            elif method == "lint_notebook":
                value = linter.lint_notebook(*args)
            elif method == "forget":
                linter.forget(*args)
                value = None
            elif method == "configure":
                linter.configure(*args)
                value = None
            elif method == "warm":
                import trainlint.engine  # noqa: F401  (rules, LibCST: before the first document arrives)
                from trainlint.rule import all_rules

                all_rules()
                value = os.getpid()
            elif method == "rss":
                value = rss_bytes()
            else:
                raise ValueError(f"unknown job {method!r}")
            reply = (job_id, True, value)
        except BaseException as exc:  # noqa: BLE001 - reported to the server, which shows TL003
            reply = (job_id, False, f"{type(exc).__name__}: {exc}")
        with send_lock:
            try:
                conn.send(reply)
            except (OSError, ValueError):
                os._exit(0)

    while True:
        try:
            job_id, method, args = conn.recv()
        except (EOFError, OSError):
            os._exit(0)  # the server is gone
        if method == "forget" and args and args[0] is not None:
            closed[args[0]] = job_id
        pool.submit(run, job_id, method, args)


def rss_bytes(pid: int | None = None) -> int:
    """Resident set size of a process (Linux: /proc; else the peak from getrusage)."""
    try:
        with open(f"/proc/{pid or 'self'}/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


# ---------------------------------------------------------------------------------------------
# Reading LSP messages, and the initialize fast path.


def read_message(stream: BinaryIO) -> bytes | None:
    """The body of the next message (``Content-Length`` framed); None at end of input. Headers
    without a usable Content-Length are skipped up to the next blank line."""
    while True:
        length = None
        while True:
            line = stream.readline()
            if not line:
                return None
            if not line.strip():
                if length is not None:
                    break
                continue  # a blank line with no header before it
            m = _HEADER_RE.match(line.strip())
            if m:
                length = int(m.group(1))
        body = stream.read(length) if length else b""
        if length and len(body) < length:
            return None  # end of input in the middle of a body
        return body


#: the capabilities pygls computes for this server (TextDocumentSyncKind.Incremental = 2)
_CODE_ACTION_KINDS = ["quickfix", "source.fixAll", FIX_ALL_KIND, "notebook.source.fixAll", NOTEBOOK_FIX_ALL_KIND]
#: LSP 3.17 notebook synchronisation: the Python cells of any notebook (offered to clients that support it;
#: ``"notebook": "*"`` spelled out: lsprotocol's clients cannot read a filter with only ``cells``)
_NOTEBOOK_SYNC = {"notebookSelector": [{"notebook": "*", "cells": [{"language": "python"}]}]}
_ENCODINGS = ("utf-8", "utf-16", "utf-32")


def _object(value: Any) -> dict[str, Any]:
    """A JSON object of the request, or {} for anything else."""
    return value if isinstance(value, dict) else {}


def static_initialize_result(params: dict[str, Any]) -> dict[str, Any]:
    """The ``initialize`` result, computed from the request's JSON without the LSP library (which
    takes most of a second to import). Must equal what pygls computes from the same request."""
    from trainlint import __version__

    caps = _object(params.get("capabilities"))
    encoding = "utf-16"
    general = _object(caps.get("general"))
    offered = general.get("positionEncodings")
    if isinstance(offered, list):
        for enc in offered:
            if enc in _ENCODINGS:
                encoding = enc
                break
    sync: dict[str, Any] = {"openClose": True, "change": 2}
    td = _object(caps.get("textDocument"))
    synchronization = _object(td.get("synchronization"))
    for key in ("willSave", "willSaveWaitUntil"):
        if synchronization.get(key) is not None:
            sync[key] = False
    sync["save"] = {"includeText": False}
    capabilities: dict[str, Any] = {
        "positionEncoding": encoding,
        "textDocumentSync": sync,
        "hoverProvider": True,
        "codeActionProvider": {"codeActionKinds": list(_CODE_ACTION_KINDS)},
        "executeCommandProvider": {"commands": []},
        "workspace": {"workspaceFolders": {"supported": True, "changeNotifications": True},
                      "fileOperations": {}},
    }
    if isinstance(caps.get("notebookDocument"), dict):
        capabilities["notebookDocumentSync"] = json.loads(json.dumps(_NOTEBOOK_SYNC))
    return {"capabilities": capabilities, "serverInfo": {"name": "trainlint", "version": __version__}}


def write_message(stream: BinaryIO, payload: dict) -> None:
    body = json.dumps(payload, separators=(",", ":")).encode("utf-8")
    stream.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stream.flush()
