"""The LSP side of ``trainlint server`` (pygls 2 / lsprotocol): messages, documents, features.

See :mod:`trainlint.server` for what the editor gets; linting itself runs in the worker process
(:func:`trainlint.server.worker_main`).

Two pygls 2.1.1 behaviours are worked around here (2.1.1 is the newest release):

* ``JsonRPCProtocol._execute_handler`` keeps the future of every generator-based handler in
  ``_request_futures`` under a fresh UUID; for notifications (its own didOpen/didChange/didClose
  handlers are generators) nothing ever removes it: about 2 KB per message, forever.
  :class:`TrainlintProtocol` removes each future from the table when it completes.
* Its message loop structures a message inside ``json.loads`` (an ``object_hook``): a message that
  fails to parse or to structure is reported with a ``window/showMessage`` popup and the request
  gets no response. :meth:`TrainlintServer.receive` reads and validates each message itself and
  answers every request (-32700, -32600, -32601, -32602, -32002 before ``initialize``, -32600 after
  ``shutdown``); ``exit`` returns status 1 when ``shutdown`` did not come first.
"""

from __future__ import annotations

import asyncio
import json
import logging
import multiprocessing
import re
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, BinaryIO
from urllib.parse import unquote

import cattrs
from lsprotocol import types as lsp
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path

from trainlint import __version__, noqa
from trainlint.findings import Applicability, Finding, Position, Severity, fails_run
from trainlint.fixes import apply_fixes
from trainlint.server import (
    DEFAULT_DEBOUNCE,
    DEFAULT_MAX_CHARS,
    FIX_ALL_KIND,
    NOTEBOOK_CELL_SCHEMES,
    NOTEBOOK_FIX_ALL_KIND,
    PYTHON_SUFFIXES,
    SOURCE,
    Linted,
    Linter,
    LintResult,
    NotebookCell,
    NotebookLinted,
    carry_over,
    read_message,
    release_memory,
    split_lines,
    worker_main,
)

log = logging.getLogger("trainlint.server")

_SEVERITY = {
    Severity.ERROR: lsp.DiagnosticSeverity.Error,
    Severity.WARNING: lsp.DiagnosticSeverity.Warning,
    Severity.INFO: lsp.DiagnosticSeverity.Information,
}

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SERVER_NOT_INITIALIZED = -32002
#: Messages read from the client and not yet handled, at most (backpressure: the rest wait in the pipe).
READ_AHEAD = 64

_KEEPENDS_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")


class TrainlintProtocol(LanguageServerProtocol):
    def _execute_handler(self, msg_id, handler, callback, args=None, kwargs=None):
        """pygls's, with each handler's future taken out of the request table when it completes
        (the table otherwise keeps one per notification)."""

        def done(future, _id=msg_id, _callback=callback):
            if self._request_futures.get(_id) is future:
                del self._request_futures[_id]
            getattr(self._server, "request_docs", {}).pop(_id, None)
            _callback(future)

        super()._execute_handler(msg_id, handler, done, args, kwargs)


class WorkerError(Exception):
    """The lint process failed a job, or stopped."""


class LintWorker:
    """The lint process (spawned: no state inherited from this one) and its jobs' futures."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.proc: Any = None  # the worker's process and the pipe to it, once started
        self.conn: Any = None
        self.futures: dict[int, tuple[Any, Future]] = {}
        self.next_id = 0
        self.starts = 0

    def _start_locked(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=worker_main, args=(child,), daemon=True, name="trainlint-lint")
        proc.start()
        child.close()
        self.proc, self.conn = proc, parent
        self.starts += 1
        threading.Thread(target=self._read, args=(parent,), name="trainlint-worker-reader", daemon=True).start()

    def call(self, method: str, *args: Any) -> Future:
        fut: Future = Future()
        with self.lock:
            if self.conn is None:
                self._start_locked()
            self.next_id += 1
            job = self.next_id
            self.futures[job] = (self.conn, fut)
            try:
                self.conn.send((job, method, args))
            except (OSError, ValueError) as exc:
                self.futures.pop(job, None)
                fut.set_exception(WorkerError(f"the lint process stopped ({exc})"))
        return fut

    def _read(self, conn) -> None:
        while True:
            try:
                job, ok, value = conn.recv()
            except Exception:  # noqa: BLE001 - EOF, or the connection closed by stop() meanwhile
                break
            with self.lock:
                entry = self.futures.pop(job, None)
            if entry is None:
                continue
            if ok:
                entry[1].set_result(value)
            else:
                entry[1].set_exception(WorkerError(value))
        with self.lock:  # the process is gone: its jobs fail, the next call starts a new one
            if self.conn is conn:
                self.conn = None
                self.proc = None
            lost = [job for job, (c, _) in self.futures.items() if c is conn]
            entries = [self.futures.pop(job) for job in lost]
        for _, fut in entries:
            fut.set_exception(WorkerError("the lint process stopped (it crashed or was killed)"))

    @property
    def pid(self) -> int | None:
        proc = self.proc
        return proc.pid if proc is not None else None

    def stop(self) -> None:
        with self.lock:
            conn, proc = self.conn, self.proc
            self.conn = self.proc = None
        if proc is not None:  # nothing to save there: no need to wait for a lint to end
            proc.terminate()
            proc.join(timeout=2)
            if proc.is_alive():
                proc.kill()
        if conn is not None:
            conn.close()


def _internal_error_finding(name: str, message: str) -> Finding:
    pos = Position(1, 1)
    return Finding("TL003", "internal-error", message, Severity.ERROR, name, pos, pos)


class TrainlintServer(LanguageServer):
    def __init__(self, protocol_cls: type[LanguageServerProtocol] | None = None) -> None:
        super().__init__("trainlint", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
                         protocol_cls=protocol_cls or TrainlintProtocol,
                         notebook_document_sync=lsp.NotebookDocumentSyncOptions(notebook_selector=[
                             lsp.NotebookDocumentFilterWithNotebook(notebook="*", cells=[lsp.NotebookCellLanguage(language="python")])]))
        self.debounce = DEFAULT_DEBOUNCE
        self.max_chars = DEFAULT_MAX_CHARS
        #: uri → the last lint's findings (of the newest version linted so far)
        self.linted: dict[str, Linted] = {}
        #: uri → (the lint it was carried from, the carried-over lint of the current text)
        self.carried: dict[str, tuple[Linted, Linted]] = {}
        #: notebook uri → the last lint of the open notebook (of the newest version linted so far)
        self.notebooks: dict[str, NotebookLinted] = {}
        #: notebook uri → the cells it has published diagnostics for (cleared when they leave)
        self.published_cells: dict[str, set[str]] = {}
        self.pending: dict[str, asyncio.Task] = {}  # debounced lint runs
        self.inflight: dict[str, asyncio.Future] = {}  # lint jobs in the worker (one per document)
        self.waiters: dict[str, list[asyncio.Future]] = {}  # requests waiting for a document's first lint
        #: request id → the document's (text, version) when the request arrived: an async handler
        #: runs after the messages already read, which may have edited the document since
        self.request_docs: dict[Any, tuple[str, int | None]] = {}
        self.worker = LintWorker()
        self.local = Linter()  # in-process linting (tests, and `_lint_text`)
        self.initialized = False
        self.exit_code: int | None = None
        self._done: asyncio.Future | None = None
        self._trim: asyncio.TimerHandle | None = None
        self.received = 0  # messages read, and how many had been when memory was last released
        self.read_ahead = self.read_ahead_peak = 0  # messages read from stdin and not yet handled
        self.trimmed_at = 0

    # -- errors ------------------------------------------------------------------------------
    def report_server_error(self, error: Exception, source: Any) -> None:
        """pygls shows a popup for every error outside a request; a client's mistake or a bug
        here is a log line instead (requests carry their error in the response)."""
        log.warning("%s: %s", getattr(source, "__name__", source), error)

    # -- the message loop --------------------------------------------------------------------
    def serve(self, stdin: BinaryIO, stdout: BinaryIO, first: bytes | None = None, answered: dict | None = None) -> int:
        """Read messages until ``exit`` (or end of input); return the exit status."""
        self.protocol.set_writer(StdoutWriter(stdout))
        return asyncio.run(self._serve(stdin, first, answered))

    async def _serve(self, stdin: BinaryIO, first: bytes | None, answered: dict | None) -> int:
        loop = asyncio.get_running_loop()
        self._done = loop.create_future()
        self.worker.call("warm")  # start the lint process now: LibCST and the rules load meanwhile
        if first is not None:
            if answered is not None:
                self.replay_initialize(first, answered)
            else:
                self.receive(first)

        # At most READ_AHEAD messages read and not yet handled: a burst of edits waits in the pipe,
        # not in this process (20 000 queued keystrokes raised the heap's peak, which stayed).
        slots = threading.Semaphore(READ_AHEAD)
        count = threading.Lock()

        def handle(body: bytes) -> None:
            try:
                self.receive(body)
            finally:
                with count:
                    self.read_ahead -= 1
                slots.release()

        def reader() -> None:
            while True:
                slots.acquire()
                with count:
                    self.read_ahead += 1
                    self.read_ahead_peak = max(self.read_ahead_peak, self.read_ahead)
                try:
                    body = read_message(stdin)
                except (OSError, ValueError):
                    body = None
                try:
                    if body is None:
                        loop.call_soon_threadsafe(self._finish, 0 if self.protocol._shutdown else 1)
                        return
                    loop.call_soon_threadsafe(handle, body)
                except RuntimeError:  # the loop is closed: the server is exiting
                    return

        threading.Thread(target=reader, name="trainlint-stdin", daemon=True).start()
        code = await self._done
        for task in list(self.pending.values()):
            task.cancel()
        self.worker.stop()
        return code

    def _finish(self, code: int) -> None:
        if self._done is not None and not self._done.done():
            self.exit_code = code
            self._done.set_result(code)

    def send_error(self, msg_id: Any, code: int, message: str) -> None:
        self.protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}})

    def replay_initialize(self, body: bytes, answered: dict) -> None:
        """The ``initialize`` request already answered by :func:`trainlint.server_main.start`: set the
        workspace and run the handler as pygls would, without sending the result again."""
        data = json.loads(body)
        try:
            params = self.protocol._converter.structure(data["params"], lsp.InitializeParams)
        except Exception as exc:  # noqa: BLE001
            log.warning("initialize: %s; using default client capabilities", _describe(exc))
            params = lsp.InitializeParams(capabilities=lsp.ClientCapabilities())
        gen = self.protocol.lsp_initialize(params)
        try:
            value = None
            while True:
                handler, args, kwargs = gen.send(value)
                value = handler(*args, **(kwargs or {}))
        except StopIteration as stop:
            result = self.protocol._converter.unstructure(stop.value)
            if result != answered:
                log.warning("initialize answered with capabilities %s; pygls computes %s", answered, result)
        self.initialized = True

    def receive(self, body: bytes) -> None:
        """Handle one message's body: every request gets a response."""
        self.received += 1
        try:
            self._receive(body)
        except Exception as exc:  # noqa: BLE001 - a bug here must not stop the loop
            log.exception("handling a message failed")
            msg_id = _request_id(body)
            if msg_id is not None:
                self.send_error(msg_id, INTERNAL_ERROR, f"Internal error: {type(exc).__name__}: {exc}")

    def _receive(self, body: bytes) -> None:
        try:
            data = json.loads(body)
        except ValueError as exc:  # JSON errors and invalid UTF-8
            self.send_error(None, PARSE_ERROR, f"Parse error: {exc}")
            return
        if not isinstance(data, dict):
            self.send_error(None, INVALID_REQUEST, "Invalid Request: a message is a JSON object "
                            f"(got {type(data).__name__}; batches are not part of LSP)")
            return
        has_id = "id" in data
        msg_id = data.get("id")
        if has_id and (isinstance(msg_id, bool) or not isinstance(msg_id, (int, str))):
            self.send_error(None, INVALID_REQUEST, f"Invalid Request: the id must be a number or a string, got {msg_id!r}")
            return
        if data.get("jsonrpc") != "2.0":
            if has_id:
                self.send_error(msg_id, INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be "2.0"')
            else:
                log.warning("ignoring a message without \"jsonrpc\": \"2.0\"")
            return
        method = data.get("method")
        if method is None:
            if has_id and ("result" in data or "error" in data):  # a response to one of our requests
                try:
                    response = self.protocol.structure_message(data)
                except Exception as exc:  # noqa: BLE001 - a response is never answered
                    log.warning("ignoring a malformed response: %s", exc)
                    return
                self.protocol.handle_message(response)
            elif has_id:
                self.send_error(msg_id, INVALID_REQUEST, "Invalid Request: no method")
            else:
                log.warning("ignoring a message with neither a method nor an id")
            return
        if not isinstance(method, str):
            if has_id:
                self.send_error(msg_id, INVALID_REQUEST, "Invalid Request: the method must be a string")
            return
        if method == lsp.EXIT:
            self._finish(0 if self.protocol._shutdown else 1)
            return
        if has_id:
            self._request(msg_id, method, data)
        else:
            self._notification(method, data)

    def _request(self, msg_id: Any, method: str, data: dict) -> None:
        if self.protocol._shutdown:
            self.send_error(msg_id, INVALID_REQUEST, f"Invalid Request: {method} after shutdown")
            return
        if not self.initialized and method != lsp.INITIALIZE:
            self.send_error(msg_id, SERVER_NOT_INITIALIZED, f"Server not initialized: {method} before initialize")
            return
        if self.initialized and method == lsp.INITIALIZE:
            self.send_error(msg_id, INVALID_REQUEST, "Invalid Request: initialize was already received")
            return
        fm = self.protocol.fm
        msg_type = self.protocol.get_message_type(method)
        if msg_type is None or (method not in fm.builtin_features and method not in fm.features):
            self.send_error(msg_id, METHOD_NOT_FOUND, f"Method not found: {method}")
            return
        try:
            message = self.protocol._converter.structure(data, msg_type)
        except Exception as exc:  # noqa: BLE001 - cattrs' validation errors
            self.send_error(msg_id, INVALID_PARAMS, f"Invalid params for {method}: {_describe(exc)}")
            return
        if method == lsp.INITIALIZE:
            self.initialized = True
        elif method in (lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.TEXT_DOCUMENT_HOVER):
            snap = self.snapshot(message.params.text_document.uri)
            if snap is not None:
                self.request_docs[msg_id] = (snap[0], snap[1])
        self.protocol.handle_message(message)

    def _notification(self, method: str, data: dict) -> None:
        if method == lsp.CANCEL_REQUEST:
            params = data.get("params")
            target = params.get("id") if isinstance(params, dict) else None
            future = self.protocol._request_futures.get(target) if isinstance(target, (int, str)) else None
            if future is not None and not future.done():
                future.cancel()  # its response: RequestCancelled (-32800)
            return
        if self.protocol._shutdown:
            log.info("ignoring %s after shutdown", method)
            return
        if not self.initialized:
            log.warning("ignoring %s before initialize", method)
            return
        msg_type = self.protocol.get_message_type(method)
        fm = self.protocol.fm
        if msg_type is None or (method not in fm.builtin_features and method not in fm.features):
            log.debug("ignoring the notification %s", method)
            return
        try:
            message = self.protocol._converter.structure(data, msg_type)
        except Exception as exc:  # noqa: BLE001
            log.warning("ignoring %s: invalid params: %s", method, _describe(exc))
            return
        if method in (lsp.TEXT_DOCUMENT_DID_CHANGE, lsp.TEXT_DOCUMENT_DID_CLOSE):
            uri = message.params.text_document.uri
            if not self.is_open(uri):
                log.warning("ignoring %s for %s: the document is not open", method, uri)
                return
        if method in (lsp.NOTEBOOK_DOCUMENT_DID_CHANGE, lsp.NOTEBOOK_DOCUMENT_DID_CLOSE):
            uri = message.params.notebook_document.uri
            if not self.is_notebook(uri):
                log.warning("ignoring %s for %s: the notebook is not open", method, uri)
                return
        self.protocol.handle_message(message)

    # -- linting -----------------------------------------------------------------------------
    def is_open(self, uri: str) -> bool:
        # pygls keys its documents by the unquoted URI (`%20`, VS Code's `%3D` in cell URIs)
        try:
            return unquote(uri) in self.workspace.text_documents
        except RuntimeError:  # not initialized
            return False

    def is_notebook(self, uri: str) -> bool:
        try:
            return unquote(uri) in self.workspace.notebook_documents
        except RuntimeError:  # not initialized
            return False

    def notebook_of(self, cell_uri: str) -> str | None:
        """The uri of the open notebook a cell belongs to (synchronised as a notebook document)."""
        try:
            nb = self.workspace.get_notebook_document(cell_uri=cell_uri)
        except RuntimeError:
            return None
        return nb.uri if nb is not None else None

    def notebook_snapshot(self, uri: str) -> tuple[list[NotebookCell], str, str | None] | None:
        """(the cells, display name, file path) of an open notebook, else None."""
        try:
            nb = self.workspace.get_notebook_document(notebook_uri=uri)
        except RuntimeError:
            return None
        if nb is None:
            return None
        docs = self.workspace.text_documents
        cells = []
        for cell in nb.cells:
            doc = docs.get(unquote(cell.document))
            text = doc.source if doc is not None else ""
            code = cell.kind == lsp.NotebookCellKind.Code and (doc is None or _is_python(cell.document, doc.language_id))
            cells.append(NotebookCell(cell.document, code, text, doc.version if doc is not None else None))
        path = _fs_path(uri)
        return cells, path or uri, path

    def snapshot(self, uri: str) -> tuple[str, int | None, str, str | None] | None:
        """(text, version, display name, file path) of an open Python document, else None."""
        if not self.is_open(uri):
            return None
        doc = self.workspace.get_text_document(uri)
        if not _is_python(uri, doc.language_id):
            return None
        path = _fs_path(uri)
        return doc.source, doc.version, path or doc.path or uri, path

    def _root(self) -> str | None:
        try:
            return self.workspace.root_path
        except RuntimeError:
            return None

    def _lint_text(self, text: str, name: str, path: str | None) -> list[Finding]:
        """Lint in this process (no incremental parser)."""
        return self.local.lint(text, name, path, None, self.max_chars, self._root()).findings

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
            inflight = self.inflight.get(uri)
            if inflight is not None:  # one job per document: the latest text goes next
                await asyncio.wait([inflight])
            if self.is_notebook(uri):
                nb_snap = self.notebook_snapshot(uri)
                if nb_snap is None:
                    return
                await asyncio.wait([self.submit_notebook(uri, nb_snap)])
                nb_linted = self.notebooks.get(uri)
                now_nb = self.notebook_snapshot(uri)
                if now_nb is None or now_nb[0] != nb_snap[0] or nb_linted is None or nb_linted.cells != nb_snap[0]:
                    return  # closed, or edited meanwhile: a newer run is scheduled
                self.publish_notebook(uri, nb_linted)
            else:
                snap = self.snapshot(uri)
                if snap is None:
                    return
                job = self.submit(uri, snap)
                await asyncio.wait([job])
                linted = self.linted.get(uri)
                now = self.snapshot(uri)
                if now is None or now[1] != snap[1] or linted is None or linted.version != snap[1]:
                    return  # closed, or edited meanwhile: a newer run is scheduled
                self.publish(uri, linted)
            if self.received - self.trimmed_at > 5000:  # after a burst of messages: give the peak back
                self.trimmed_at = self.received
                release_memory()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("linting %s failed", uri)
        finally:
            if self.pending.get(uri) is asyncio.current_task():
                del self.pending[uri]

    def submit(self, uri: str, snap: tuple[str, int | None, str, str | None]) -> asyncio.Future:
        """Send one version to the worker; when it is linted, it becomes the document's cache."""
        text, version, name, path = snap

        def store(result: LintResult) -> bool:
            if not self.is_open(uri):
                return False
            self.linted[uri] = Linted(version, result.text, split_lines(result.text), result.findings,
                                      result.seconds, source=text, fail_on=result.fail_on)
            self.carried.pop(uri, None)
            return True

        return self._submit(uri, ("lint", text, name, path, uri, self.max_chars, self._root()), name, text, store)

    def submit_notebook(self, uri: str, snap: tuple[list[NotebookCell], str, str | None]) -> asyncio.Future:
        """Send one version of a notebook to the worker; when it is linted, it becomes its cache."""
        cells, name, path = snap

        def store(result: LintResult) -> bool:
            if not self.is_notebook(uri):
                return False
            self.notebooks[uri] = NotebookLinted.from_result(cells, result)
            return True

        sources = [("code" if c.code else "markdown", c.text) for c in cells]
        return self._submit(uri, ("lint_notebook", sources, name, path, uri, self.max_chars, self._root()), name, "",
                            store)

    def _submit(self, uri: str, job_args: tuple, name: str, text: str,
                store: Callable[[LintResult], bool]) -> asyncio.Future:
        """One lint job in the worker (one in flight per document); its result is ``store``d (False: the
        document was closed meanwhile), then the requests waiting for it go on."""
        job = asyncio.wrap_future(self.worker.call(*job_args))
        self.inflight[uri] = job

        def done(fut: asyncio.Future) -> None:
            if self.inflight.get(uri) is fut:
                del self.inflight[uri]
            if fut.cancelled():
                return
            exc = fut.exception()
            if exc is not None:
                log.warning("linting %s failed: %s", uri, exc)
                result = LintResult([_internal_error_finding(name, f"internal error: {exc}")], text)
            else:
                result = fut.result()
            if result is None:  # skipped: the document was closed
                return
            for message in result.messages:
                self.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning, message=message))
            if not store(result):
                return
            for waiter in self.waiters.pop(uri, []):
                if not waiter.done():
                    waiter.set_result(None)

        job.add_done_callback(done)
        return job

    async def findings_now(self, uri: str) -> Linted | None:
        """Findings for the document's text when the current request arrived, from the last lint
        (carried over to that text if they differ). Before the first lint, waits for it."""
        at = self.request_docs.pop(self.protocol.msg_id, None)
        nb_uri = self.notebook_of(uri)
        if nb_uri is not None:
            return await self._cell_findings_now(nb_uri, uri, at)
        while True:
            snap = self.snapshot(uri)
            if snap is None:
                return None
            text, version = at if at is not None else (snap[0], snap[1])
            cached = self.linted.get(uri)
            if cached is not None:
                if cached.version == version and cached.source == text:
                    return cached
                if not uri.startswith(NOTEBOOK_CELL_SCHEMES):  # a masked cell's offsets differ from its text
                    memo = self.carried.get(uri)
                    if memo is not None and memo[0] is cached and memo[1].version == version and memo[1].source == text:
                        return memo[1]
                    carried = carry_over(cached, text, version)
                    self.carried[uri] = (cached, carried)
                    return carried
                if snap[1] != version:
                    return None  # a request about a cell's outdated text: nothing to answer it from
            if uri not in self.pending and uri not in self.inflight:
                self.schedule(uri, delay=0.0)
            waiter = asyncio.get_running_loop().create_future()
            self.waiters.setdefault(uri, []).append(waiter)
            await waiter

    async def _cell_findings_now(self, nb_uri: str, uri: str, at: tuple[str, int | None] | None) -> Linted | None:
        """A notebook cell's findings, from the last lint of the notebook where the cell's text is the
        one of the request (edits in other cells do not move this cell's rows). Else waits for the lint
        of the current text."""
        while True:
            snap = self.snapshot(uri)
            if snap is None or self.notebook_of(uri) != nb_uri:
                return None
            if at is not None and snap[0] != at[0]:
                return None  # a request about a cell's outdated text: nothing to answer it from
            nb_linted = self.notebooks.get(nb_uri)
            found = nb_linted.find(uri) if nb_linted is not None else None
            if found is not None and found[1].source == snap[0]:
                return found[1]
            if nb_uri not in self.pending and nb_uri not in self.inflight:
                self.schedule(nb_uri, delay=0.0)
            waiter = asyncio.get_running_loop().create_future()
            self.waiters.setdefault(nb_uri, []).append(waiter)
            await waiter

    def config_changed(self) -> None:
        self.worker.call("forget", None)
        self.local.forget(None)
        for uri in [*self.linted, *self.notebooks]:
            self.schedule(uri, delay=0.0)

    def publish(self, uri: str, linted: Linted) -> None:
        diagnostics = [self.diagnostic(f, linted) for f in linted.findings]
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=linted.version))

    def publish_notebook(self, uri: str, nb_linted: NotebookLinted) -> None:
        """Each code cell's diagnostics; cells that left the notebook (or stopped being code) are cleared."""
        before = self.published_cells.get(uri, set())
        for cell_uri, linted in nb_linted.by_cell.items():
            self.publish(cell_uri, linted)
        for cell_uri in before - nb_linted.by_cell.keys():
            self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=cell_uri, diagnostics=[]))
        self.published_cells[uri] = set(nb_linted.by_cell)

    def clear(self, uri: str) -> None:
        """A closed document (or notebook: its cells) loses its state and its diagnostics."""
        task = self.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        self.linted.pop(uri, None)
        self.carried.pop(uri, None)
        self.notebooks.pop(uri, None)
        for waiter in self.waiters.pop(uri, []):
            if not waiter.done():
                waiter.set_result(None)
        self.worker.call("forget", uri)
        cells = self.published_cells.pop(uri, None)
        for cleared in cells if cells is not None else [uri]:
            self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=cleared, diagnostics=[]))
        if self._trim is not None:
            self._trim.cancel()
        self._trim = asyncio.get_running_loop().call_later(0.5, self._release)

    def _release(self) -> None:
        self.trimmed_at = self.received
        release_memory()

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

    def severity(self, f: Finding, fail_on: Any) -> lsp.DiagnosticSeverity:
        """The rule's severity; a hint when it is below the file's fail-on threshold."""
        if fail_on is not None and not fails_run(f, fail_on):
            return lsp.DiagnosticSeverity.Hint
        return _SEVERITY.get(f.severity, lsp.DiagnosticSeverity.Warning)

    def diagnostic(self, f: Finding, linted: Linted) -> lsp.Diagnostic:
        message = f.message + (f"\nhint: {f.hint}" if f.hint else "")
        data: dict[str, Any] = {"name": f.name}
        if f.fix is not None:
            data["fix"] = f.fix.applicability.value
        return lsp.Diagnostic(
            range=self.range(linted.lines, f.start, f.end),
            message=message,
            severity=self.severity(f, linted.fail_on),
            code=f.code,
            code_description=lsp.CodeDescription(href=f.url),
            source=SOURCE,
            data=data,
        )


def _describe(exc: BaseException) -> str:
    """cattrs' validation errors as "what @ where" lines."""
    if isinstance(exc, (cattrs.BaseValidationError, cattrs.ForbiddenExtraKeysError)):
        try:
            return "; ".join(cattrs.transform_error(exc, path="$"))
        except Exception:  # noqa: BLE001
            pass
    return f"{type(exc).__name__}: {exc}"


def _request_id(body: bytes) -> Any:
    try:
        data = json.loads(body)
    except ValueError:
        return None
    msg_id = data.get("id") if isinstance(data, dict) else None
    return msg_id if isinstance(msg_id, (int, str)) and not isinstance(msg_id, bool) else None


def _fs_path(uri: str) -> str | None:
    if uri.startswith(NOTEBOOK_CELL_SCHEMES):  # the notebook's own path: its config, its per-file-ignores
        from urllib.parse import urlparse

        nb = unquote(urlparse(uri).path)
        return nb if nb.startswith("/") or re.match(r"^/?[A-Za-z]:", nb) else None
    if not uri.startswith("file:"):
        return None
    return to_fs_path(uri) or None


def _is_python(uri: str, language_id: str | None) -> bool:
    if language_id:
        return language_id.lower() == "python"
    path = uri.split("?", 1)[0].split("#", 1)[0]
    return path.endswith(PYTHON_SUFFIXES)


def _overlaps(f_start: lsp.Position, f_end: lsp.Position, r: lsp.Range) -> bool:
    a = (f_start.line, f_start.character)
    b = (f_end.line, f_end.character)
    return a <= (r.end.line, r.end.character) and (r.start.line, r.start.character) <= b


def fix_all(linted: Linted, unsafe: bool = False) -> str:
    """The text with the safe fixes (and unsafe ones if asked) of the lint's findings applied, in
    one pass of :func:`trainlint.fixes.apply_fixes` (each fix whole or not at all): no re-lint (a fix
    that overlaps another waits for the next request)."""
    if not unsafe and linted.fix_all_text is not None:
        return linted.fix_all_text
    new = apply_fixes(linted.text, linted.findings, unsafe)[0]
    if not unsafe:
        linted.fix_all_text = new
    return new


def fix_edits(server: TrainlintServer, uri: str, linted: Linted, new: str) -> list[lsp.TextEdit]:
    """The document edit that turns the linted text into ``new`` (the linted text with fixes applied);
    in a notebook cell, whose fixes were made on the masked cell, with its magics put back."""
    old = linted.text
    if uri.startswith(NOTEBOOK_CELL_SCHEMES):
        from trainlint.notebook import unmask_magics

        old = linted.source if linted.source is not None else old
        new = unmask_magics(new, old) if new != linted.text else old
    return minimal_edit(server, old, new)


def fix_changes(server: TrainlintServer, uri: str, linted: Linted, i: int) -> dict[str, list[lsp.TextEdit]] | None:
    """The edits of the fix of ``linted.findings[i]`` (whole), by document; None when it cannot apply."""
    f = linted.findings[i]
    if f.fix is None:
        return None
    if linted.notebook is not None and linted.virtual is not None:
        return notebook_changes(server, linted.notebook, [linted.virtual[i]], unsafe=True)
    fixed, applied = apply_fixes(linted.text, [f], unsafe=True)
    return {uri: fix_edits(server, uri, linted, fixed)} if applied else None


def notebook_changes(server: TrainlintServer, nb_linted: NotebookLinted, findings: list[Finding],
                     unsafe: bool) -> dict[str, list[lsp.TextEdit]] | None:
    """The fixes of ``findings`` (in the notebook's virtual module) applied in one pass, as edits of the
    cells they change (a fix may add an import to another cell). None when nothing applies, or when a
    cell it changes was edited since the lint (its edit would undo that)."""
    from trainlint.notebook import NotebookError

    nb = nb_linted.notebook
    if nb is None:
        return None
    new, applied = apply_fixes(nb.source, findings, unsafe)
    if not applied:
        return None
    try:
        sources = nb.cell_sources(new)
    except NotebookError:
        return None
    changes: dict[str, list[lsp.TextEdit]] = {}
    for index, (text, _) in sources.items():
        cell = nb_linted.cells[index - 1]
        now = server.snapshot(cell.uri)
        if now is None or now[0] != cell.text:
            return None
        changes[cell.uri] = minimal_edit(server, cell.text, text)
    return changes or None


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
    m = noqa.find(line)
    codec = server.workspace.position_codec
    if m is not None:
        if not m.group("codes"):
            return None  # a bare noqa comment already silences everything
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


def create_server(protocol_cls: type[LanguageServerProtocol] | None = None) -> TrainlintServer:
    """The server with its features (``protocol_cls``: for tests, pygls's own protocol)."""
    server = TrainlintServer(protocol_cls)

    @server.feature(lsp.INITIALIZE)
    def initialize(ls: TrainlintServer, params: lsp.InitializeParams) -> None:
        opts = params.initialization_options if isinstance(params.initialization_options, dict) else {}
        if isinstance(opts.get("debounce"), (int, float)) and opts["debounce"] >= 0:
            ls.debounce = opts["debounce"] / 1000.0
        if isinstance(opts.get("maxChars"), int) and opts["maxChars"] > 0:
            ls.max_chars = opts["maxChars"]
        if isinstance(opts.get("settings"), dict):
            ls.worker.call("configure", opts["settings"])
            ls.local.configure(opts["settings"])

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
        uri = params.text_document.uri
        ls.linted.pop(uri, None)  # reopened: the old findings are not this text's
        ls.carried.pop(uri, None)
        ls.schedule(uri, delay=0.0)

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

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_OPEN)
    def notebook_did_open(ls: TrainlintServer, params: lsp.DidOpenNotebookDocumentParams) -> None:
        uri = params.notebook_document.uri
        ls.notebooks.pop(uri, None)
        ls.schedule(uri, delay=0.0)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def notebook_did_change(ls: TrainlintServer, params: lsp.DidChangeNotebookDocumentParams) -> None:
        ls.schedule(params.notebook_document.uri)

    @server.feature(lsp.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def notebook_did_close(ls: TrainlintServer, params: lsp.DidCloseNotebookDocumentParams) -> None:
        ls.clear(params.notebook_document.uri)

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def did_change_watched_files(ls: TrainlintServer, params: lsp.DidChangeWatchedFilesParams) -> None:
        if any(c.uri.endswith("pyproject.toml") for c in params.changes):
            ls.config_changed()

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    async def hover(ls: TrainlintServer, params: lsp.HoverParams) -> lsp.Hover | None:
        from trainlint.docs import doc_text

        linted = await ls.findings_now(params.text_document.uri)
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
            doc = doc_text(f.code) or f"# {f.code} {f.name}\n\n{f.message}\n"
            parts.append(f"{doc.rstrip()}\n\n[{f.code} documentation]({f.url})")
        if not parts:
            return None
        return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value="\n\n---\n\n".join(parts)))

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(
        code_action_kinds=[lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.SourceFixAll, FIX_ALL_KIND,
                           "notebook.source.fixAll", NOTEBOOK_FIX_ALL_KIND]))
    async def code_action(ls: TrainlintServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction] | None:
        uri = params.text_document.uri
        linted = await ls.findings_now(uri)
        if linted is None:
            return None
        only = params.context.only
        want_quickfix = not only or any(lsp.CodeActionKind.QuickFix.startswith(k) or k == "quickfix" for k in only)
        want_fix_all = only is not None and any(FIX_ALL_KIND.startswith(k) for k in only if k)
        nb_linted = linted.notebook
        actions: list[lsp.CodeAction] = []
        if want_quickfix:
            for i, f in enumerate(linted.findings):
                r = ls.range(linted.lines, f.start, f.end)
                if not _overlaps(r.start, r.end, params.range):
                    continue
                diag = ls.diagnostic(f, linted)
                changes = fix_changes(ls, uri, linted, i)
                if f.fix is not None and changes is not None:
                    safe = f.fix.applicability == Applicability.SAFE
                    actions.append(lsp.CodeAction(
                        title=f"Fix {f.code}: {f.fix.message} ({'safe' if safe else 'unsafe'} fix)",
                        kind=lsp.CodeActionKind.QuickFix,
                        diagnostics=[diag],
                        is_preferred=safe,
                        edit=lsp.WorkspaceEdit(changes=changes),
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
        if nb_linted is not None:
            # in a notebook: fix all in this cell (FIX_ALL_KIND, run per cell by `notebook.codeActionsOnSave`), and in
            # the whole notebook (NOTEBOOK_FIX_ALL_KIND)
            want_nb_fix_all = only is not None and any(NOTEBOOK_FIX_ALL_KIND.startswith(k) for k in only if k)
            found = nb_linted.find(uri)
            in_cell = [f for f in nb_linted.findings if found is not None and nb_linted.cell_of(f) == found[0]]
            if want_fix_all or (not only and safe_fixable):
                actions.append(lsp.CodeAction(
                    title="trainlint: fix all safe fixes in the cell", kind=FIX_ALL_KIND,
                    edit=lsp.WorkspaceEdit(changes=notebook_changes(ls, nb_linted, in_cell, unsafe=False) or {})))
            if want_nb_fix_all or (not only and safe_fixable):
                actions.append(lsp.CodeAction(
                    title="trainlint: fix all safe fixes in the notebook", kind=NOTEBOOK_FIX_ALL_KIND,
                    edit=lsp.WorkspaceEdit(changes=notebook_changes(ls, nb_linted, nb_linted.findings, unsafe=False)
                                           or {})))
        elif want_fix_all or (not only and safe_fixable):
            actions.append(lsp.CodeAction(
                title="trainlint: fix all safe fixes in the file",
                kind=FIX_ALL_KIND,
                edit=lsp.WorkspaceEdit(changes={uri: fix_edits(ls, uri, linted, fix_all(linted))}),
            ))
        return actions

    @server.feature(lsp.SHUTDOWN)
    def shutdown(ls: TrainlintServer, params: Any = None) -> None:
        for task in ls.pending.values():
            task.cancel()

    return server
