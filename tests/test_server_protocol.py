"""The language server as a JSON-RPC peer: the initialize fast path, malformed messages, exit
status, the request-table leak workaround, and carrying findings over to an edited text.

The raw tests speak JSON-RPC over a pipe (a pytest-lsp client cannot send malformed messages);
tests/test_server.py has the ones with a real LSP client."""

from __future__ import annotations

import asyncio
import io
import json
import os
import select
import subprocess
import sys
import time
from concurrent.futures import Future
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pygls.protocol import LanguageServerProtocol, default_converter
from pytest_lsp import client_capabilities

from trainlint.findings import Applicability, Edit, Finding, Fix, Position, Severity
from trainlint.server import Linted, LintResult, carry_over, split_lines, static_initialize_result
from trainlint.server_lsp import READ_AHEAD, TrainlintServer, create_server

ROOT = Path(__file__).resolve().parent.parent
BUGGY = (ROOT / "examples" / "mnli_trainer_buggy.py").read_text(encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# a raw client


class Raw:
    def __init__(self, cwd: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "trainlint", "server"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd)
        self.buf = b""

    def send(self, obj=None, raw: bytes | None = None) -> None:
        body = raw if raw is not None else json.dumps(obj).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def recv(self, timeout: float = 60) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            head, sep, rest = self.buf.partition(b"\r\n\r\n")
            if sep:
                length = int(next(line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length"))
                             .split(b":")[1])
                if len(rest) >= length:
                    self.buf = rest[length:]
                    return json.loads(rest[:length])
            ready, _, _ = select.select([self.proc.stdout], [], [], max(deadline - time.monotonic(), 0))
            if not ready:
                raise TimeoutError("no message from the server")
            chunk = os.read(self.proc.stdout.fileno(), 65536)
            if not chunk:
                raise EOFError("the server closed its output")
            self.buf += chunk

    def recv_response(self, timeout: float = 60) -> dict:
        """The next response (notifications before it are kept in ``self.notes``)."""
        while True:
            msg = self.recv(timeout)
            if "method" not in msg:
                return msg
            self.notes.append(msg)

    notes: list

    def initialize(self, root: Path, options: dict | None = None) -> dict:
        self.notes = []
        self.send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                   "params": {"processId": None, "rootUri": root.as_uri(), "capabilities": {},
                              **({"initializationOptions": options} if options is not None else {})}})
        response = self.recv_response()
        self.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return response

    def finish(self, timeout: float = 30) -> tuple[int, str]:
        self.proc.stdin.close()
        status = self.proc.wait(timeout)
        return status, self.proc.stderr.read().decode()


@pytest.fixture
def raw(tmp_path: Path):
    client = Raw(tmp_path)
    yield client
    if client.proc.poll() is None:
        client.proc.kill()
        client.proc.wait()


def hover(msg_id, uri: str, **params):
    return {"jsonrpc": "2.0", "id": msg_id, "method": "textDocument/hover",
            "params": {"textDocument": {"uri": uri}, **params}}


# ---------------------------------------------------------------------------------------------
# malformed messages and the exit status


def test_every_malformed_message_gets_an_error_response(raw: Raw, tmp_path: Path):
    assert "capabilities" in raw.initialize(tmp_path)["result"]
    uri = (tmp_path / "train.py").as_uri()
    cases = [
        (b'{"jsonrpc": "2.0", "id": 2, "meth', None, -32700),  # truncated JSON
        (b"[1, 2, 3]", None, -32600),  # a batch (not part of LSP)
        (b"42", None, -32600),
        (b'{"jsonrpc": "2.0", "id": 3}', 3, -32600),  # no method
        (b'{"jsonrpc": "2.0", "id": 4, "method": "textDocument/hover", "params": {"x": "\xff"}}', None, -32700),
        (b'{"jsonrpc": "1.0", "id": 5, "method": "shutdown"}', 5, -32600),
        (b'{"jsonrpc": "2.0", "id": [6], "method": "shutdown"}', None, -32600),
        (b'{"jsonrpc": "2.0", "id": 7, "method": 12}', 7, -32600),
        (b'{"jsonrpc": "2.0", "id": 8, "method": "textDocument/doesNotExist", "params": {}}', 8, -32601),
    ]
    for body, msg_id, code in cases:
        raw.send(raw=body)
        response = raw.recv_response()
        assert response["id"] == msg_id and response["error"]["code"] == code, (body, response)
        assert response["error"]["message"]
    # invalid params: -32602, with what is wrong and where
    raw.send(hover(10, uri))
    error = raw.recv_response()["error"]
    assert error["code"] == -32602 and "$.params.position" in error["message"]
    raw.send({"jsonrpc": "2.0", "id": 11, "method": "textDocument/codeAction", "params": None})
    assert raw.recv_response()["error"]["code"] == -32602
    # notifications with a mistake: a log line, no response, no popup
    raw.send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
        "textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": "x = 1\n"}]}})  # never opened
    raw.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {"uri": uri}}})
    raw.send(raw=b'{"jsonrpc": "2.0", "method": "textDocument/didClose"')
    raw.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 999}})
    # still answering, in order
    raw.send(hover(12, uri, position={"line": 0, "character": 0}))
    parse_error = raw.recv_response()  # the truncated didClose: -32700 with id null
    assert parse_error["id"] is None and parse_error["error"]["code"] == -32700
    assert raw.recv_response() == {"jsonrpc": "2.0", "id": 12, "result": None}
    raw.send({"jsonrpc": "2.0", "id": 13, "method": "shutdown"})
    assert raw.recv_response() == {"jsonrpc": "2.0", "id": 13, "result": None}
    raw.send(hover(14, uri, position={"line": 0, "character": 0}))
    after = raw.recv_response()
    assert after["id"] == 14 and after["error"]["code"] == -32600 and "shutdown" in after["error"]["message"]
    raw.send({"jsonrpc": "2.0", "method": "exit"})
    status, stderr = raw.finish()
    assert status == 0
    assert not [n for n in raw.notes if n["method"] in ("window/showMessage", "window/showMessageRequest")]
    assert "Traceback" not in stderr
    assert "not open" in stderr  # the didChange for a document never opened is a log line


def test_editor_settings_apply_where_no_pyproject_configures(raw: Raw, tmp_path: Path):
    """The editor's settings (initializationOptions.settings) configure the files that no pyproject.toml
    with [tool.trainlint] configures; where one does, it wins."""
    raw.initialize(tmp_path, {"settings": {"select": ["TL3", "TL8"], "ignore": ["TL805"], "fail-on": "error"}})

    def diagnostics_of(path: Path) -> list[str]:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(BUGGY, encoding="utf-8")
        raw.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": path.as_uri(), "languageId": "python", "version": 1, "text": BUGGY}}})
        while True:
            msg = raw.recv()
            if msg.get("method") == "textDocument/publishDiagnostics" and msg["params"]["uri"] == path.as_uri():
                return sorted(d["code"] for d in msg["params"]["diagnostics"])

    assert diagnostics_of(tmp_path / "train.py") == ["TL301"]
    (tmp_path / "configured" / "pyproject.toml").parent.mkdir()
    (tmp_path / "configured" / "pyproject.toml").write_text('[tool.trainlint]\nselect = ["TL8"]\n', encoding="utf-8")
    assert diagnostics_of(tmp_path / "configured" / "train.py") == ["TL805"]
    raw.send({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
    raw.recv_response()
    raw.send({"jsonrpc": "2.0", "method": "exit"})
    assert raw.finish()[0] == 0


def test_exit_without_shutdown_exits_1_quietly(raw: Raw, tmp_path: Path):
    raw.initialize(tmp_path)
    uri = (tmp_path / "train.py").as_uri()
    raw.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "python", "version": 1, "text": BUGGY}}})
    raw.send({"jsonrpc": "2.0", "method": "exit"})
    status, stderr = raw.finish()
    assert status == 1
    assert "Traceback" not in stderr and "Error" not in stderr


def test_requests_before_initialize_are_refused(raw: Raw, tmp_path: Path):
    raw.notes = []
    raw.send(hover(1, (tmp_path / "x.py").as_uri(), position={"line": 0, "character": 0}))
    response = raw.recv_response()
    assert response["id"] == 1 and response["error"]["code"] == -32002
    assert "capabilities" in raw.initialize(tmp_path)["result"]
    raw.send({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"capabilities": {}}})
    assert raw.recv_response()["error"]["code"] == -32600  # only once


# ---------------------------------------------------------------------------------------------
# initialize: answered before the LSP library is imported, with pygls's capabilities


@pytest.mark.parametrize("client", ["visual-studio-code", "neovim", "emacs", None, "with-notebooks"])
def test_fast_initialize_result_is_what_pygls_computes(client):
    if client == "with-notebooks":  # a client that synchronises notebook documents (VS Code since 1.70)
        caps = client_capabilities("visual-studio-code")
        caps.notebook_document = lsp.NotebookDocumentClientCapabilities(
            synchronization=lsp.NotebookDocumentSyncClientCapabilities(dynamic_registration=True))
    else:
        caps = client_capabilities(client) if client else lsp.ClientCapabilities()
    converter = default_converter()
    request = json.loads(json.dumps(converter.unstructure(lsp.InitializeParams(capabilities=caps, root_uri="file:///w"))))
    server = create_server()
    gen = server.protocol.lsp_initialize(converter.structure(request, lsp.InitializeParams))
    handler, args, kwargs = next(gen)
    handler(*args)
    with pytest.raises(StopIteration) as stop:
        gen.send(None)
    result = converter.unstructure(stop.value.value)
    assert static_initialize_result(request) == result
    assert ("notebookDocumentSync" in result["capabilities"]) == (client == "with-notebooks")


def test_initialize_is_answered_before_the_lsp_library_loads():
    """The initialize response is written before pygls, lsprotocol or LibCST are imported."""
    code = """
import io, json, os, sys
import trainlint.server_main as s
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}).encode()
seen = []
class Out(io.BytesIO):
    def flush(self):
        seen.append(sorted(m for m in sys.modules if m.split(".")[0] in ("pygls", "lsprotocol", "libcst")))
        seen.append(self.getvalue())
real_exit = os._exit
def report(status):
    print(json.dumps({"loaded": seen[0], "answer": seen[1].decode(), "status": status}))
    sys.stdout.flush()
    real_exit(0)
os._exit = report
s.start(io.BytesIO(b"Content-Length: %d\\r\\n\\r\\n" % len(body) + body), Out())
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    out = json.loads(proc.stdout)
    assert out["loaded"] == []
    assert '"id":1,"result":{"capabilities"' in out["answer"]
    assert out["status"] == 1  # end of input without shutdown


# ---------------------------------------------------------------------------------------------
# pygls's request table: one future per notification, never removed (pygls 2.1.1)


class _NoWorker:
    def call(self, method, *args):
        fut: Future = Future()
        fut.set_result(LintResult([], args[0]) if method == "lint" else None)
        return fut

    def stop(self):
        pass


def _notifications(n: int) -> list[bytes]:
    uri = "file:///w/train.py"
    out = [json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}).encode()]
    for k in range(n):
        out.append(json.dumps({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": "import torch\n"}}}).encode())
        out.append(json.dumps({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": f"import torch\nx = {k}\n"}]}}).encode())
        out.append(json.dumps({"jsonrpc": "2.0", "method": "textDocument/didClose", "params": {
            "textDocument": {"uri": uri}}}).encode())
    return out


@pytest.mark.parametrize("fixed", [True, False])
def test_notifications_leave_no_futures_in_the_request_table(fixed: bool):
    """With pygls's own protocol the table grows by one future per didOpen/didChange/didClose (the
    day this part fails, pygls is fixed and TrainlintProtocol can go)."""
    server = create_server() if fixed else create_server(protocol_cls=LanguageServerProtocol)
    server.worker = _NoWorker()
    server.protocol.set_writer(io.BytesIO())

    async def run():
        for body in _notifications(50):
            server.receive(body)
            await asyncio.sleep(0)
        await asyncio.sleep(0.05)

    asyncio.run(run())
    if fixed:
        assert server.protocol._request_futures == {}
    else:
        assert len(server.protocol._request_futures) >= 150


def test_a_burst_of_edits_waits_in_the_pipe_not_in_the_server():
    """The reader stays at most READ_AHEAD messages ahead of the handler: 20 000 queued keystrokes
    used to be read at once, and the heap kept their peak (RSS +6 MB, never given back)."""
    server = create_server()
    server.worker = _NoWorker()
    handled = []
    receive = server.receive

    def slow(body: bytes) -> None:
        time.sleep(0.0005)
        handled.append(len(body))
        receive(body)

    server.receive = slow
    bodies = _notifications(300)
    stdin = io.BytesIO(b"".join(b"Content-Length: %d\r\n\r\n" % len(b) + b for b in bodies))
    code = server.serve(stdin, io.BytesIO())
    assert code == 1  # end of input without shutdown
    assert len(handled) == len(bodies)
    assert 1 <= server.read_ahead_peak <= READ_AHEAD < len(bodies)


# ---------------------------------------------------------------------------------------------
# findings carried over to an edited text


def _finding(code: str, start: tuple[int, int], end: tuple[int, int], fix_at: tuple[int, int] | None = None) -> Finding:
    fix = None
    if fix_at is not None:
        fix = Fix(Applicability.SAFE, "rename", (Edit(Position(*fix_at), Position(fix_at[0], fix_at[1] + 3), "new"),))
    return Finding(code, "x", "m", Severity.ERROR, "t.py", Position(*start), Position(*end), fix)


def test_carry_over_moves_findings_around_the_edit_and_drops_the_touched_ones():
    old = "a = 1\nold(x)\nb = 2\nold(y)\nc = 3\n"
    findings = [_finding("TL1", (2, 1), (2, 7), (2, 1)),  # before the edit
                _finding("TL2", (3, 1), (3, 6)),  # the edited line
                _finding("TL3", (4, 1), (4, 7), (4, 1))]  # after: moves down one line and right
    linted = Linted(1, old, split_lines(old), findings, source=old)
    new = old.replace("b = 2\n", "b = 22\nextra = 0\n")
    moved = carry_over(linted, new, 2)
    assert moved.version == 2 and moved.source == new and moved.carried
    assert [f.code for f in moved.findings] == ["TL1", "TL3"]
    tl1, tl3 = moved.findings
    assert (tl1.start, tl1.end) == (Position(2, 1), Position(2, 7))
    assert (tl3.start, tl3.end) == (Position(5, 1), Position(5, 7))
    assert tl3.fix.edits[0].start == Position(5, 1)
    lines = new.split("\n")
    assert lines[4][tl3.start.column - 1:tl3.end.column - 1] == "old(y)"
    # an edit inside a finding's range (typing in its argument) drops it; at its end too
    typed = old.replace("old(x)", "old(xy)")
    assert [f.code for f in carry_over(linted, typed, 3).findings] == ["TL2", "TL3"]
    typed = old.replace("old(x)", "old(x)z")
    assert [f.code for f in carry_over(linted, typed, 3).findings] == ["TL2", "TL3"]
    # a fix whose edit lies in the edited region goes with it
    far = [_finding("TL4", (4, 1), (4, 7), (2, 4))]
    assert carry_over(Linted(1, old, split_lines(old), far, source=old), typed, 3).findings == []


def test_severity_below_fail_on_is_a_hint():
    server = TrainlintServer()
    warning = Finding("TL1", "x", "m", Severity.WARNING, "t.py", Position(1, 1), Position(1, 2))
    info = Finding("TL1", "x", "m", Severity.INFO, "t.py", Position(1, 1), Position(1, 2))
    error = _finding("TL1", (1, 1), (1, 2))
    assert server.severity(error, Severity.ERROR) == lsp.DiagnosticSeverity.Error
    assert server.severity(warning, Severity.ERROR) == lsp.DiagnosticSeverity.Hint
    assert server.severity(warning, Severity.WARNING) == lsp.DiagnosticSeverity.Warning
    assert server.severity(info, Severity.WARNING) == lsp.DiagnosticSeverity.Hint
    assert server.severity(info, Severity.INFO) == lsp.DiagnosticSeverity.Information
    assert server.severity(info, None) == lsp.DiagnosticSeverity.Information  # no threshold known


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="finds the lint process in /proc")
def test_a_killed_lint_process_is_restarted(raw: Raw, tmp_path: Path):
    import signal

    raw.initialize(tmp_path)
    uri = (tmp_path / "train.py").as_uri()
    raw.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
        "uri": uri, "languageId": "python", "version": 1, "text": BUGGY}}})

    def diagnostics(version: int) -> list[dict]:
        while True:
            msg = raw.recv()
            if msg.get("method") == "textDocument/publishDiagnostics" and msg["params"].get("version") == version:
                return msg["params"]["diagnostics"]

    assert len(diagnostics(1)) == 6
    with open(f"/proc/{raw.proc.pid}/task/{raw.proc.pid}/children") as fh:
        children = [int(pid) for pid in fh.read().split()]
    (worker,) = [pid for pid in children if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    os.kill(worker, signal.SIGKILL)
    time.sleep(0.2)
    raw.send({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
        "textDocument": {"uri": uri, "version": 2}, "contentChanges": [{"text": BUGGY + "\n"}]}})
    assert sorted(d["code"] for d in diagnostics(2)) == ["TL101", "TL101", "TL201", "TL301", "TL601", "TL805"]
    raw.send({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
    assert raw.recv_response()["id"] == 2
    raw.send({"jsonrpc": "2.0", "method": "exit"})
    assert raw.finish()[0] == 0


def test_an_internal_failure_is_an_internal_error_response():
    server = create_server()
    server.worker = _NoWorker()
    out = io.BytesIO()
    server.protocol.set_writer(out)

    async def broken(uri):
        raise RuntimeError("a bug")

    server.findings_now = broken

    async def run():
        server.receive(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                   "params": {"capabilities": {}}}).encode())
        server.receive(json.dumps(hover(2, "file:///w/x.py", position={"line": 0, "character": 0})).encode())
        await asyncio.sleep(0.05)

    asyncio.run(run())
    bodies = [json.loads(part[part.index(b"{"):]) for part in out.getvalue().split(b"Content-Length")[1:]]
    (error,) = [b for b in bodies if b.get("id") == 2]
    assert error["error"]["code"] == -32603 and "a bug" in error["error"]["message"]
    assert not [b for b in bodies if b.get("method") == "window/showMessage"]


def test_a_notebook_whose_lint_failed_shows_the_error_on_its_first_code_cell():
    from trainlint.server import NotebookCell, NotebookLinted

    cells = [NotebookCell("cell:1", False, "# title", 1), NotebookCell("cell:2", True, "import torch\n", 1),
             NotebookCell("cell:3", True, "x = 1\n", 1)]
    error = Finding("TL003", "internal-error", "internal error: the lint process stopped", Severity.ERROR, "nb.ipynb",
                    Position(1, 1), Position(1, 1))
    linted = NotebookLinted.from_result(cells, LintResult([error], ""))
    assert [f.code for f in linted.by_cell["cell:2"].findings] == ["TL003"]
    assert linted.by_cell["cell:3"].findings == [] and "cell:1" not in linted.by_cell
    assert linted.find("cell%3A2") == (2, linted.by_cell["cell:2"])  # any quoting of the uri
