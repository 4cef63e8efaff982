"""``trainlint server``: the language server (LSP over stdio, pygls 2 / lsprotocol).

What the editor gets:

* diagnostics on open, on change (debounced: a new edit cancels the pending run, a result for an
  older version is dropped) and on save, cleared on close. Each has ``code``, ``source:
  "trainlint"``, the rule's severity, the exact range and ``codeDescription.href`` (the rule doc);
* code actions: apply a finding's fix (the title says safe or unsafe), fix all safe fixes in the
  file (``source.fixAll.trainlint``), add ``# noqa: CODE`` on the line;
* hover on a finding: the rule document (markdown);
* the nearest ``pyproject.toml`` with ``[tool.trainlint]`` configures each file, re-read when it
  changes (``workspace/didChangeWatchedFiles``, or its mtime on the next lint).

The server lints the text it is sent, statically: it never runs a probe and never imports or executes
the user's code. A document it cannot lint (syntax error mid-edit, NUL bytes, lone surrogates, a
huge file, a bug in a rule) gets one TL00x diagnostic; the server stays up and answering.

Initialization options (all optional): ``{"debounce": 150}`` (milliseconds), ``{"maxChars": N}``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterable
from urllib.parse import unquote

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from trainlint import __version__
from trainlint.config import ConfigError, Settings, load_settings
from trainlint.findings import Applicability, Edit, Finding, Position, Severity
from trainlint.incremental import IncrementalParser

log = logging.getLogger("trainlint.server")

SOURCE = "trainlint"
FIX_ALL_KIND = "source.fixAll.trainlint"
DEFAULT_DEBOUNCE = 0.15  # seconds
DEFAULT_MAX_CHARS = 500_000  # ~15 000 lines; LibCST holds the GIL while it parses (~1 s here)
PYTHON_SUFFIXES = (".py", ".pyi")
#: the URIs editors give notebook cells sent as text documents (VS Code, Jupyter-LSP)
NOTEBOOK_CELL_SCHEMES = ("vscode-notebook-cell:", "vscode-notebook-cell-")

_SEVERITY = {
    Severity.ERROR: lsp.DiagnosticSeverity.Error,
    Severity.WARNING: lsp.DiagnosticSeverity.Warning,
    Severity.INFO: lsp.DiagnosticSeverity.Information,
}
_LINE_RE = re.compile(r"\r\n|\r|\n")
_KEEPENDS_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_NOQA_RE = re.compile(r"#\s*noqa(?::\s?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)


@dataclasses.dataclass
class Linted:
    """The findings of one version of one document, and the text they were computed on."""

    version: int | None
    text: str
    lines: list[str]
    findings: list[Finding]
    seconds: float = 0.0


LINT_THREAD_STACK = 256 * 1024 * 1024


def _lint_pool() -> ThreadPoolExecutor:
    """A one-thread pool whose thread has a large stack: the native parser recurses deeply on
    pathological text, and the server must not die of it (the pages are only reserved)."""
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


def split_lines(text: str) -> list[str]:
    """Lines as LSP counts them (``\\n``, ``\\r\\n`` and ``\\r`` end a line)."""
    return _LINE_RE.split(text)


class TrainlintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("trainlint", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental)
        self.debounce = DEFAULT_DEBOUNCE
        self.max_chars = DEFAULT_MAX_CHARS
        self.linted: dict[str, Linted] = {}
        self.pending: dict[str, asyncio.Task] = {}
        self._settings: dict[tuple, Settings] = {}
        self._config_errors: set[str] = set()
        self._messages: list[str] = []
        #: uri → its incremental parser (used from the lint thread only)
        self.parsers: dict[str, IncrementalParser] = {}
        # one lint at a time, off the event loop: requests keep being answered during a long lint
        self.lint_pool = _lint_pool()

    # -- settings ----------------------------------------------------------------------------
    def settings_for(self, path: Path | None) -> Settings:
        """The settings of the nearest pyproject.toml, cached until one of the candidate files
        changes (keyed on their mtimes: a changed config is picked up even without a watcher)."""
        if path is not None:
            start = path.parent
        else:  # an untitled buffer or a notebook cell: the workspace's configuration
            try:
                root = self.workspace.root_path
            except RuntimeError:  # not initialized
                root = None
            start = Path(root or os.getcwd())
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
        cached = self._settings.get(key)
        if cached is not None:
            return cached
        try:
            settings = load_settings(None, start=start if start.is_dir() else Path.cwd())
        except ConfigError as exc:
            msg = f"trainlint: {exc}; using the default rules until it is fixed"
            if msg not in self._config_errors:
                self._config_errors.add(msg)
                self._messages.append(msg)
            settings = Settings()
        self._settings[key] = settings
        return settings

    def config_changed(self) -> None:
        self._settings.clear()
        self._config_errors.clear()
        for uri in list(self.linted):
            self.schedule(uri, delay=0.0)

    # -- linting -----------------------------------------------------------------------------
    def is_open(self, uri: str) -> bool:
        # pygls keys its documents by the unquoted URI (`%20`, VS Code's `%3D` in cell URIs)
        return unquote(uri) in self.workspace.text_documents

    def snapshot(self, uri: str) -> tuple[str, int | None, str, Path | None] | None:
        """(text, version, display name, file path) of an open Python document, else None."""
        if not self.is_open(uri):
            return None
        doc = self.workspace.get_text_document(uri)
        if not _is_python(uri, doc.language_id):
            return None
        path = _fs_path(uri)
        text = doc.source
        if uri.startswith(NOTEBOOK_CELL_SCHEMES) and ("%" in text or "!" in text or "?" in text):
            from trainlint.notebook import mask_magics

            text = mask_magics(text)  # `!pip install ...`, `%%time`: not Python, not a syntax error
        return text, doc.version, str(path) if path is not None else doc.path or uri, path

    def lint_snapshot(self, snap: tuple[str, int | None, str, Path | None], uri: str | None = None) -> Linted:
        """Lint a snapshot. With ``uri`` (only from the lint thread), the document's incremental
        parser re-parses only the statements the edits touched."""
        text, version, name, path = snap
        t0 = time.perf_counter()
        parser = None
        if uri is not None:
            parser = self.parsers.get(uri)
            if parser is None:
                parser = self.parsers[uri] = IncrementalParser()
        findings = self._lint_text(text, name, path, parser.parse if parser is not None else None)
        return Linted(version, text, split_lines(text), findings, time.perf_counter() - t0)

    def _lint_text(self, text: str, name: str, path: Path | None, parse=None) -> list[Finding]:
        from trainlint.core import _meta_finding, lint_text

        if len(text) > self.max_chars:
            return [_meta_finding("TL002", name, f"too large for the language server ({len(text):,} characters, "
                                  f"limit {self.max_chars:,}): run `trainlint {name}` in a terminal", 1, 1)]
        if "\x00" in text:
            row = text.count("\n", 0, text.index("\x00")) + 1
            return [_meta_finding("TL002", name, f"cannot read: binary content (a NUL character on line {row})", row, 1)]
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            row = text.count("\n", 0, exc.start) + 1
            return [_meta_finding("TL002", name, f"cannot read: not valid UTF-8 (a lone surrogate on line {row})", row, 1)]
        try:
            settings = self.settings_for(path)
            if path is not None and settings.is_excluded(path):
                return []
            return lint_text(text, name, settings, parse=parse).findings
        except Exception as exc:  # a bug in trainlint must not take the editor's linter down
            log.exception("linting %s failed", name)
            return [_meta_finding("TL003", name, f"internal error: {type(exc).__name__}: {exc}", 1, 1)]

    def current(self, uri: str) -> Linted | None:
        """Findings for the document's current version (linting now if the cache is stale)."""
        snap = self.snapshot(uri)
        if snap is None:
            return None
        cached = self.linted.get(uri)
        if cached is not None and cached.version == snap[1] and cached.text == snap[0]:
            return cached
        result = self.lint_snapshot(snap)
        self.flush_messages()
        self.linted[uri] = result
        return result

    def schedule(self, uri: str, delay: float | None = None) -> None:
        """(Re)start the debounced lint of ``uri``: a pending run for an older version is cancelled."""
        old = self.pending.pop(uri, None)
        if old is not None and not old.done():
            old.cancel()
        self.pending[uri] = asyncio.ensure_future(self._run(uri, self.debounce if delay is None else delay))

    async def _run(self, uri: str, delay: float) -> None:
        try:
            if delay > 0:
                await asyncio.sleep(delay)
            snap = self.snapshot(uri)
            if snap is None:
                return
            loop = asyncio.get_running_loop()
            result = await loop.run_in_executor(self.lint_pool, self.lint_snapshot, snap, uri)
            self.flush_messages()
            now = self.snapshot(uri)
            if now is None or now[1] != snap[1]:
                return  # closed, or edited meanwhile: a newer run is scheduled
            self.linted[uri] = result
            self.publish(uri, result)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("linting %s failed", uri)
        finally:
            if self.pending.get(uri) is asyncio.current_task():
                del self.pending[uri]

    def flush_messages(self) -> None:
        """Show the config errors found while linting (from the event loop, not the lint thread)."""
        while self._messages:
            self.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning, message=self._messages.pop(0)))

    def publish(self, uri: str, linted: Linted) -> None:
        diagnostics = [self.diagnostic(f, linted.lines) for f in linted.findings]
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=linted.version))

    def clear(self, uri: str) -> None:
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        self.linted.pop(uri, None)
        self.parsers.pop(uri, None)
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    # -- conversions -------------------------------------------------------------------------
    def position(self, lines: list[str], p: Position) -> lsp.Position:
        """trainlint's 1-based row/column (characters) → LSP's 0-based line/character in the
        negotiated encoding (UTF-16 code units unless the client chose another)."""
        line = max(p.row - 1, 0)
        if line >= len(lines):
            return lsp.Position(line=len(lines), character=0)
        col = max(p.column - 1, 0)
        return lsp.Position(line=line, character=self.workspace.position_codec.client_num_units(lines[line][:col]))

    def range(self, lines: list[str], start: Position, end: Position) -> lsp.Range:
        if end <= start:  # a point (TL00x): underline the rest of the line
            row_text = lines[start.row - 1] if 0 < start.row <= len(lines) else ""
            if start.column > len(row_text):
                start = Position(start.row, 1)
            end = Position(start.row, len(row_text) + 1)
        return lsp.Range(start=self.position(lines, start), end=self.position(lines, end))

    def diagnostic(self, f: Finding, lines: list[str]) -> lsp.Diagnostic:
        message = f.message + (f"\nhint: {f.hint}" if f.hint else "")
        data: dict[str, Any] = {"name": f.name}
        if f.fix is not None:
            data["fix"] = f.fix.applicability.value
        return lsp.Diagnostic(
            range=self.range(lines, f.start, f.end),
            message=message,
            severity=_SEVERITY.get(f.severity, lsp.DiagnosticSeverity.Warning),
            code=f.code,
            code_description=lsp.CodeDescription(href=f.url),
            source=SOURCE,
            data=data,
        )

    def text_edits(self, lines: list[str], edits: Iterable[Edit]) -> list[lsp.TextEdit]:
        return [lsp.TextEdit(range=lsp.Range(start=self.position(lines, e.start), end=self.position(lines, e.end)),
                             new_text=e.content) for e in edits]


def _doc_fallback(f: Finding) -> str:
    from trainlint.rule import get_rule

    rule = get_rule(f.code)
    summary = rule.summary() if rule is not None else ""
    return f"# {f.code} {f.name}\n\n{summary}\n"


def _fs_path(uri: str) -> Path | None:
    if uri.startswith(NOTEBOOK_CELL_SCHEMES):  # the notebook's own path: its config, its per-file-ignores
        from urllib.parse import urlparse

        nb = unquote(urlparse(uri).path)
        return Path(nb) if nb.startswith("/") or re.match(r"^/?[A-Za-z]:", nb) else None
    if not uri.startswith("file:"):
        return None
    p = to_fs_path(uri)
    return Path(p) if p else None


def _is_python(uri: str, language_id: str | None) -> bool:
    if language_id:
        return language_id.lower() == "python"
    path = uri.split("?", 1)[0].split("#", 1)[0]
    return path.endswith(PYTHON_SUFFIXES)


def _overlaps(f_start: lsp.Position, f_end: lsp.Position, r: lsp.Range) -> bool:
    a = (f_start.line, f_start.character)
    b = (f_end.line, f_end.character)
    return a <= (r.end.line, r.end.character) and (r.start.line, r.start.character) <= b


# ---------------------------------------------------------------------------------------------
# Fixes: applied on the text, as the CLI's --fix does.


def apply_edits(text: str, edits: Iterable[Edit]) -> tuple[str, bool]:
    """``text`` with the non-overlapping ``edits`` applied (later overlapping ones are skipped).
    Returns (new text, whether an edit was skipped)."""
    starts = [0]
    for m in _LINE_RE.finditer(text):
        starts.append(m.end())

    def offset(p: Position) -> int:
        if p.row - 1 >= len(starts):
            return len(text)
        return min(starts[p.row - 1] + p.column - 1, len(text))

    spans = sorted({(offset(e.start), offset(e.end), e.content) for e in edits})
    kept: list[tuple[int, int, str]] = []
    skipped = False
    for a, b, content in spans:
        if kept and (a < kept[-1][1] or a == b == kept[-1][0] == kept[-1][1]):
            skipped = True  # overlaps (or inserts at the same point as) an edit kept: next round
            continue
        kept.append((a, b, content))
    out = []
    pos = 0
    for a, b, content in kept:
        out.append(text[pos:a])
        out.append(content)
        pos = b
    out.append(text[pos:])
    return "".join(out), skipped


def fix_all(server: TrainlintServer, text: str, name: str, path: Path | None, unsafe: bool = False,
            rounds: int = 10) -> str:
    """Apply every safe fix (and unsafe ones if asked), re-linting between rounds until stable."""
    if not any(f.fix is not None for f in server._lint_text(text, name, path)):
        return text  # nothing fixable (also: excluded files, unreadable text)
    try:  # the CLI's fixer, when it is there (same behaviour as `trainlint --fix`)
        from trainlint import fixes as _fixes  # type: ignore[attr-defined]

        fixer = getattr(_fixes, "fix_text", None)
    except ImportError:
        fixer = None
    if fixer is not None:
        try:
            result = fixer(text, name, server.settings_for(path), unsafe=unsafe)
            return result if isinstance(result, str) else getattr(result, "text", text)
        except Exception:
            log.exception("trainlint.fixes.fix_text failed; falling back to the server's fixer")
    for _ in range(rounds):
        findings = server._lint_text(text, name, path)
        edits = [e for f in findings if f.fix is not None
                 and (unsafe or f.fix.applicability == Applicability.SAFE) for e in f.fix.edits]
        if not edits:
            break
        new, _ = apply_edits(text, edits)
        if new == text:
            break
        text = new
    return text


def minimal_edit(server: TrainlintServer, old: str, new: str) -> list[lsp.TextEdit]:
    """One edit replacing only the lines that differ between ``old`` and ``new``."""
    if old == new:
        return []
    a = _KEEPENDS_RE.findall(old)  # lines as LSP counts them (not str.splitlines: \x0c, \u2028)
    b = _KEEPENDS_RE.findall(new)
    pre = 0
    while pre < min(len(a), len(b)) and a[pre] == b[pre]:
        pre += 1
    suf = 0
    while suf < min(len(a), len(b)) - pre and a[-1 - suf] == b[-1 - suf]:
        suf += 1
    old_lines = split_lines(old)
    start = lsp.Position(line=pre, character=0)
    end_line = len(a) - suf
    if end_line >= len(old_lines):  # up to the end of a text without a final newline
        last = len(old_lines) - 1
        end = lsp.Position(line=last, character=server.workspace.position_codec.client_num_units(old_lines[last]))
    else:
        end = lsp.Position(line=end_line, character=0)
    return [lsp.TextEdit(range=lsp.Range(start=start, end=end), new_text="".join(b[pre:len(b) - suf]))]


def noqa_edit(server: TrainlintServer, lines: list[str], row: int, code: str) -> lsp.TextEdit | None:
    """The edit adding ``code`` to the line's ``# noqa`` comment, or a new ``# noqa: CODE``."""
    if not 0 < row <= len(lines):
        return None
    line = lines[row - 1]
    m = _NOQA_RE.search(line) if "#" in line else None
    codec = server.workspace.position_codec
    if m is not None:
        if not m.group("codes"):
            return None  # a bare `# noqa` already silences everything
        at = m.end("codes")
        pos = lsp.Position(line=row - 1, character=codec.client_num_units(line[:at]))
        return lsp.TextEdit(range=lsp.Range(start=pos, end=pos), new_text=f", {code}")
    body = line.rstrip()
    if body.endswith("\\"):
        return None  # a comment after a line continuation would break the statement
    start = lsp.Position(line=row - 1, character=codec.client_num_units(body))
    end = lsp.Position(line=row - 1, character=codec.client_num_units(line))
    return lsp.TextEdit(range=lsp.Range(start=start, end=end), new_text=f"  # noqa: {code}")


# ---------------------------------------------------------------------------------------------
# The LSP features.


def create_server() -> TrainlintServer:
    server = TrainlintServer()

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: TrainlintServer, params: lsp.InitializeParams) -> None:
        opts = params.initialization_options if isinstance(params.initialization_options, dict) else {}
        if isinstance(opts.get("debounce"), (int, float)) and opts["debounce"] >= 0:
            ls.debounce = opts["debounce"] / 1000.0
        if isinstance(opts.get("maxChars"), int) and opts["maxChars"] > 0:
            ls.max_chars = opts["maxChars"]

    @server.feature(lsp.INITIALIZED)
    async def initialized(ls: TrainlintServer, params: lsp.InitializedParams) -> None:
        caps = ls.client_capabilities
        dynamic = (caps.workspace is not None and caps.workspace.did_change_watched_files is not None
                   and caps.workspace.did_change_watched_files.dynamic_registration)
        if not dynamic:
            return  # the settings are still re-read when a pyproject.toml's mtime changes
        options = lsp.DidChangeWatchedFilesRegistrationOptions(
            watchers=[lsp.FileSystemWatcher(glob_pattern="**/pyproject.toml")])
        try:
            await ls.client_register_capability_async(lsp.RegistrationParams(registrations=[lsp.Registration(
                id="trainlint-config", method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES, register_options=options)]))
        except Exception as exc:
            log.info("the client did not register the pyproject.toml watcher: %s", exc)

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: TrainlintServer, params: lsp.DidOpenTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, delay=0.0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: TrainlintServer, params: lsp.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE, lsp.SaveOptions(include_text=False))
    def did_save(ls: TrainlintServer, params: lsp.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri.endswith("pyproject.toml"):
            ls.config_changed()
        elif ls.is_open(uri):
            ls.schedule(uri, delay=0.0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: TrainlintServer, params: lsp.DidCloseTextDocumentParams) -> None:
        ls.clear(params.text_document.uri)

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls: TrainlintServer, params: lsp.DidChangeWatchedFilesParams) -> None:
        if any(c.uri.endswith("pyproject.toml") for c in params.changes):
            ls.config_changed()

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    def hover(ls: TrainlintServer, params: lsp.HoverParams) -> lsp.Hover | None:
        from trainlint.docs import doc_text

        linted = ls.current(params.text_document.uri)
        if linted is None:
            return None
        p = params.position
        parts = []
        seen = set()
        for f in linted.findings:
            r = ls.range(linted.lines, f.start, f.end)
            if not _overlaps(r.start, r.end, lsp.Range(start=p, end=p)) or f.code in seen:
                continue
            seen.add(f.code)
            doc = doc_text(f.code) or _doc_fallback(f)
            parts.append(f"{doc.rstrip()}\n\n[{f.code} documentation]({f.url})")
        if not parts:
            return None
        return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value="\n\n---\n\n".join(parts)))

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(
        code_action_kinds=[lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.SourceFixAll, FIX_ALL_KIND]))
    def code_action(ls: TrainlintServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction] | None:
        uri = params.text_document.uri
        linted = ls.current(uri)
        if linted is None:
            return None
        only = params.context.only
        want_quickfix = not only or any(lsp.CodeActionKind.QuickFix.startswith(k) or k == "quickfix" for k in only)
        want_fix_all = bool(only) and any(FIX_ALL_KIND.startswith(k) for k in only if k)
        actions: list[lsp.CodeAction] = []
        if want_quickfix:
            for f in linted.findings:
                r = ls.range(linted.lines, f.start, f.end)
                if not _overlaps(r.start, r.end, params.range):
                    continue
                diag = ls.diagnostic(f, linted.lines)
                if f.fix is not None:
                    safe = f.fix.applicability == Applicability.SAFE
                    actions.append(lsp.CodeAction(
                        title=f"Fix {f.code}: {f.fix.message} ({'safe' if safe else 'unsafe'} fix)",
                        kind=lsp.CodeActionKind.QuickFix,
                        diagnostics=[diag],
                        is_preferred=safe,
                        edit=lsp.WorkspaceEdit(changes={uri: ls.text_edits(linted.lines, f.fix.edits)}),
                    ))
                if not f.code.startswith("TL00"):
                    edit = noqa_edit(ls, linted.lines, f.start.row, f.code)
                    if edit is not None:
                        actions.append(lsp.CodeAction(
                            title=f"Disable {f.code} for this line (# noqa: {f.code})",
                            kind=lsp.CodeActionKind.QuickFix,
                            diagnostics=[diag],
                            edit=lsp.WorkspaceEdit(changes={uri: [edit]}),
                        ))
        safe_fixable = any(f.fix is not None and f.fix.applicability == Applicability.SAFE for f in linted.findings)
        if want_fix_all or (not only and safe_fixable):
            path = _fs_path(uri)
            new = fix_all(ls, linted.text, str(path) if path is not None else uri, path)
            old = linted.text
            if uri.startswith(NOTEBOOK_CELL_SCHEMES):  # the fixes were made on the masked cell
                from trainlint.notebook import unmask_magics

                old = ls.workspace.get_text_document(uri).source
                new = unmask_magics(new, old) if new != linted.text else old
            actions.append(lsp.CodeAction(
                title="trainlint: fix all safe fixes in the file",
                kind=FIX_ALL_KIND,
                edit=lsp.WorkspaceEdit(changes={uri: minimal_edit(ls, old, new)}),
            ))
        return actions

    @server.feature(lsp.SHUTDOWN)
    def shutdown(ls: TrainlintServer, params: Any = None) -> None:
        for task in ls.pending.values():
            task.cancel()
        ls.lint_pool.shutdown(wait=False, cancel_futures=True)

    return server


def start() -> None:
    """Serve LSP on stdin/stdout until the client says exit. Logs go to stderr."""
    logging.basicConfig(level=os.environ.get("TRAINLINT_LOG", "WARNING").upper(),
                        format="trainlint-server %(levelname)s %(name)s: %(message)s")
    create_server().start_io()
