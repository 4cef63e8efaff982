"""The language server driven as an editor drives it. Prints numbers; asserts nothing.

    .venv/bin/python benchmarks/server_bench.py [--file SCRIPT] [--quick]

A raw JSON-RPC client over stdio (``python -m trainlint server``) measures:

- ``initialize``: from starting the process to the initialize response (and to the first
  diagnostics of the script);
- ``codeAction`` latency with the editor idle (one request per cursor position, across the file);
- typing: 60 characters at 100 ms intervals with a ``codeAction`` request per keystroke (the
  editor's cursor-move request): each answer's latency, and how long after the last key the
  diagnostics of the final text arrive (also without the code-action requests);
- memory (RSS of the server and of its lint process) before and after 1 000 open/change/close
  cycles and 20 000 ``didChange`` keystrokes, and around a 5 MB document;
- a hover while a 450 kB document is being linted.

The script: by default one long module built from the repository's own training scripts
(``tests/data/correct/*.py`` and ``examples/*.py``, concatenated, 1 500+ lines), so the number of
findings and fixes is realistic; ``--file`` takes any other script (for instance an installed
library's source file).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def long_script() -> str:
    """The repository's torch/transformers scripts as one module (``from __future__`` lines hoisted)."""
    parts = []
    files = sorted((ROOT / "tests" / "data" / "correct").glob("*.py")) + sorted((ROOT / "examples").glob("*.py"))
    for f in files:
        text = f.read_text(encoding="utf-8")
        if "keras" in f.name or "import tensorflow" in text:
            continue
        text = re.sub(r"(?m)^from __future__ import .*\n", "", text)
        parts.append(f"# ---- {f.name} ----\n{text.rstrip()}\n\n")
    text = "from __future__ import annotations\n\n" + "".join(parts)
    compile(text, "long_script.py", "exec")
    return text


#: the synthetic 500-line script of the earlier re-lint benchmark (benchmarks/bench_static.py uses it)
LOOP_BLOCK = '''

def train_epoch_{i}(model, loader, optimizer, scheduler, device="cuda"):
    """One epoch of a hand-written PyTorch loop (variant {i})."""
    model.train()
    total = 0.0
    for step, batch in enumerate(loader):
        batch = {{k: v.to(device) for k, v in batch.items()}}
        outputs = model(**batch)
        loss = outputs.loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        total += loss.item()
        if step % 100 == 0:
            print(f"epoch {i} step {{step}} loss {{loss.item():.4f}}")
    return total / max(len(loader), 1)


def evaluate_{i}(model, loader, device="cuda"):
    model.eval()
    correct = 0
    seen = 0
    with torch.no_grad():
        for batch in loader:
            batch = {{k: v.to(device) for k, v in batch.items()}}
            logits = model(**batch).logits
            predictions = logits.argmax(dim=-1)
            correct += (predictions == batch["labels"]).sum().item()
            seen += len(predictions)
    return correct / max(seen, 1)
'''


def script(lines: int = 500) -> str:
    base = (ROOT / "examples" / "mnli_trainer_buggy.py").read_text(encoding="utf-8")
    head, tail = base.split('\n\nif __name__ == "__main__":', 1)
    text = "import torch\n" + head
    i = 0
    while text.count("\n") + LOOP_BLOCK.count("\n") < lines - 3:
        text += LOOP_BLOCK.format(i=i)
        i += 1
    text += '\n\nif __name__ == "__main__":' + tail
    while text.count("\n") < lines:
        text += "# padding\n"
    return text


class Client:
    """A minimal LSP client: framing, a reader thread, request ids, server requests answered."""

    def __init__(self, cwd: Path, debounce_ms: int | None = None) -> None:
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen([sys.executable, "-m", "trainlint", "server"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=cwd)
        self.responses: dict[int, tuple[float, dict]] = {}
        self.cond = threading.Condition()
        self.published: list[tuple[float, dict]] = []
        self.messages: list[dict] = []
        self.next_id = 0
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()
        self.debounce_ms = debounce_ms

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if not line.strip():
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            msg = json.loads(out.read(length))
            now = time.perf_counter()
            with self.cond:
                if "method" in msg and "id" in msg:  # a request from the server (registerCapability)
                    self.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
                elif "method" in msg:
                    if msg["method"] == "textDocument/publishDiagnostics":
                        self.published.append((now, msg["params"]))
                    else:
                        self.messages.append(msg)
                else:
                    self.responses[msg.get("id")] = (now, msg)
                self.cond.notify_all()

    def send(self, obj: dict) -> None:
        body = json.dumps(obj).encode()
        with self.lock:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.proc.stdin.flush()

    def request(self, method: str, params) -> int:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def notify(self, method: str, params) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait_response(self, msg_id: int, timeout: float = 120) -> tuple[float, dict]:
        with self.cond:
            if not self.cond.wait_for(lambda: msg_id in self.responses, timeout):
                raise TimeoutError(f"no response to {msg_id}")
            return self.responses.pop(msg_id)

    def wait_publish(self, uri: str, version: int, timeout: float = 120) -> float:
        with self.cond:
            def found():
                return any(p["uri"] == uri and p.get("version") == version for _, p in self.published)
            if not self.cond.wait_for(found, timeout):
                raise TimeoutError(f"no diagnostics for version {version}")
            return next(t for t, p in self.published if p["uri"] == uri and p.get("version") == version)

    def initialize(self, root: Path) -> float:
        opts = {} if self.debounce_ms is None else {"debounce": self.debounce_ms}
        t = self.request("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {
            "textDocument": {"codeAction": {"codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["quickfix"]}}}},
            "workspace": {"didChangeWatchedFiles": {"dynamicRegistration": True}}},
            "initializationOptions": opts})
        when, _ = self.wait_response(t)
        self.notify("initialized", {})
        return when - self.t0

    def open(self, uri: str, text: str, version: int = 1) -> None:
        self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": version,
                                                              "text": text}})

    def change(self, uri: str, version: int, line: int, char: int, text: str, delete: int = 0) -> None:
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [
            {"range": {"start": {"line": line, "character": char}, "end": {"line": line, "character": char + delete}},
             "text": text}]})

    def code_action(self, uri: str, line: int, char: int) -> int:
        pos = {"line": line, "character": char}
        return self.request("textDocument/codeAction", {"textDocument": {"uri": uri}, "range": {"start": pos, "end": pos},
                                                        "context": {"diagnostics": []}})

    def rss(self) -> tuple[float, float]:
        """(server, lint process) resident memory in MB."""
        def statm(pid: int) -> float:
            try:
                with open(f"/proc/{pid}/statm") as fh:
                    return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
            except OSError:
                return float("nan")
        try:
            with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as fh:
                children = [int(x) for x in fh.read().split()]
        except OSError:
            children = []
        def is_worker(pid: int) -> bool:  # not multiprocessing's resource tracker
            try:
                return b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                return False
        return statm(self.proc.pid), sum(statm(c) for c in children if is_worker(c))

    def close(self) -> int:
        t = self.request("shutdown", None)
        self.wait_response(t)
        self.notify("exit", None)
        return self.proc.wait(30)


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def show(name: str, xs: list[float]) -> None:
    print(f"  {name:<44} p50 {pct(xs, 0.5) * 1000:8.1f} ms   p95 {pct(xs, 0.95) * 1000:8.1f} ms   "
          f"max {max(xs) * 1000:8.1f} ms   (n={len(xs)})")


def typing_line(text: str) -> int:
    """A line inside a function body in the middle of the file, where typing a comment is harmless."""
    lines = text.splitlines()
    mid = len(lines) // 2
    for i in range(mid, len(lines)):
        if lines[i].startswith("    ") and lines[i].strip() and not lines[i].rstrip().endswith(("\\", ",", "(")):
            return i
    return mid


def bench_initialize(tmp: Path, text: str, runs: int) -> None:
    init, first = [], []
    for _ in range(runs):
        c = Client(tmp)
        init.append(c.initialize(tmp))
        uri = (tmp / "train.py").as_uri()
        t0 = time.perf_counter()
        c.open(uri, text)
        first.append(c.wait_publish(uri, 1) - t0)
        c.close()
    show("initialize (process start → response)", init)
    show("didOpen → first diagnostics (cold worker)", first)


def bench_session(tmp: Path, text: str, keys: int, cycles: int, changes: int) -> None:
    c = Client(tmp)
    c.initialize(tmp)
    uri = (tmp / "train.py").as_uri()
    c.open(uri, text)
    c.wait_publish(uri, 1)
    published = next(p for _, p in c.published if p.get("version") == 1)
    lines = text.splitlines()
    print(f"  {len(published['diagnostics'])} diagnostics on the script")
    # idle: one request per cursor position, on the diagnostics' lines and spread over the file
    positions = [(d["range"]["start"]["line"], d["range"]["start"]["character"]) for d in published["diagnostics"]]
    positions += [(i, 4) for i in range(0, len(lines), max(len(lines) // 80, 1))]
    idle = []
    for line, char in positions[:100]:
        t0 = time.perf_counter()
        when, msg = c.wait_response(c.code_action(uri, line, char))
        assert "result" in msg, msg
        idle.append(when - t0)
    show("codeAction, idle", idle)

    version = 1
    row = typing_line(text)
    col = len(lines[row])
    for with_actions in (True, False):
        c.change(uri, version + 1, row, col, "  # ")
        version += 1
        col += 4
        c.wait_publish(uri, version)
        sent = []
        for k in range(keys):
            version += 1
            c.change(uri, version, row, col, "abcdefghij"[k % 10])
            col += 1
            if with_actions:
                sent.append((time.perf_counter(), c.code_action(uri, row, col)))
            time.sleep(0.1)
        last_key = time.perf_counter() - 0.1
        final = c.wait_publish(uri, version) - last_key
        if with_actions:
            typing = []
            for t0, msg_id in sent:
                when, msg = c.wait_response(msg_id)
                assert "result" in msg, msg
                typing.append(when - t0)
            show(f"codeAction while typing ({keys} keys, 100 ms apart)", typing)
            print(f"  final diagnostics after the last key, with a codeAction per key: {final * 1000:7.1f} ms")
        else:
            print(f"  final diagnostics after the last key, without codeActions:      {final * 1000:7.1f} ms")

    before = c.rss()
    other = (tmp / "other.py").as_uri()
    small = "\n".join(lines[:200]) + "\n"
    for _ in range(cycles):
        c.open(other, small, 1)
        c.change(other, 2, 3, 0, "# edit\n")
        c.notify("textDocument/didClose", {"textDocument": {"uri": other}})
    c.wait_response(c.code_action(uri, 0, 0))  # all processed
    time.sleep(1.5)
    after_cycles = c.rss()
    t0 = time.perf_counter()
    for k in range(changes):
        version += 1
        if k % 2 == 0:
            c.change(uri, version, row, col, "x")
        else:
            c.change(uri, version, row, col, "", delete=1)
    c.wait_publish(uri, version, timeout=1800)
    print(f"  {changes} didChange sent at once: diagnostics of the last one after {time.perf_counter() - t0:.1f} s")
    time.sleep(1.5)
    after_changes = c.rss()
    print(f"  RSS server / lint process: start {before[0]:.1f} / {before[1]:.1f} MB; after {cycles} open/change/close "
          f"cycles {after_cycles[0]:.1f} / {after_cycles[1]:.1f} MB; after {changes} didChange "
          f"{after_changes[0]:.1f} / {after_changes[1]:.1f} MB")
    status = c.close()
    print(f"  shutdown + exit: status {status}")


def bench_large(tmp: Path, text: str) -> None:
    """Requests answered while a large document is being linted (the lint runs in another process),
    and memory given back once a 5 MB document is closed."""
    c = Client(tmp)
    c.initialize(tmp)
    small_uri = (tmp / "small.py").as_uri()
    c.open(small_uri, text)
    c.wait_publish(small_uri, 1)
    big = text * max(1, 450_000 // len(text))
    big_uri = (tmp / "big.py").as_uri()
    c.open(big_uri, big)
    time.sleep(0.05)
    t0 = time.perf_counter()
    when, msg = c.wait_response(c.request("textDocument/hover", {"textDocument": {"uri": small_uri},
                                                                 "position": {"line": 0, "character": 0}}))
    hover = when - t0
    done = c.wait_publish(big_uri, 1) - t0
    print(f"  hover while a {len(big) // 1000} kB document is linted: {hover * 1000:.1f} ms "
          f"(its lint ended {done * 1000:.0f} ms after the hover was sent)")
    c.notify("textDocument/didClose", {"textDocument": {"uri": big_uri}})
    before = c.rss()
    huge_uri = (tmp / "huge.py").as_uri()
    c.open(huge_uri, "import torch\n" + "x = 1  # padding padding padding padding padding\n" * 100_000)
    c.wait_publish(huge_uri, 1)
    peak = c.rss()
    c.notify("textDocument/didClose", {"textDocument": {"uri": huge_uri}})
    c.wait_response(c.code_action(small_uri, 0, 0))
    time.sleep(1.5)
    after = c.rss()
    print(f"  RSS server / lint process around a 5 MB document: before {before[0]:.1f} / {before[1]:.1f} MB, "
          f"open {peak[0]:.1f} / {peak[1]:.1f} MB, closed {after[0]:.1f} / {after[1]:.1f} MB")
    t0 = time.perf_counter()
    c.close()
    print(f"  shutdown + exit: {(time.perf_counter() - t0) * 1000:.0f} ms")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--file", type=Path, help="the script to edit (default: the repository's scripts as one module)")
    ap.add_argument("--quick", action="store_true", help="fewer runs and cycles")
    ap.add_argument("--only-memory", action="store_true", help="only the session (typing, cycles, keystrokes)")
    args = ap.parse_args()
    text = args.file.read_text(encoding="utf-8") if args.file else long_script()
    print(f"script: {args.file or 'tests/data/correct + examples, concatenated'}: {text.count(chr(10))} lines, "
          f"{len(text):,} characters")
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if not args.only_memory:
            bench_initialize(tmp, text, 2 if args.quick else 5)
        bench_session(tmp, text, keys=60, cycles=200 if args.quick else 1000, changes=2000 if args.quick else 20000)
        if not args.only_memory:
            bench_large(tmp, text)


if __name__ == "__main__":
    main()
