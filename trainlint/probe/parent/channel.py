"""The run of the probe's child (parent side): start the sandboxed command with pipes for the
configuration, the events, the stack dump and the script's output; read them into bounded buffers
until the child exits or the deadline; kill everything the probe started, also when trainlint itself is
stopped (SIGTERM/SIGINT/SIGHUP) or dies.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import secrets
import selectors
import signal
import subprocess
import tempfile
import time
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from trainlint.probe import protocol
from trainlint.probe.child.sandbox_init import PR_SET_PDEATHSIG, prctl

#: The script's stdout and stderr are each kept in a ring buffer of this many bytes (the last ones).
OUTPUT_LIMIT = 2 * 1024 * 1024
#: A line of the script's output shown in the report is cut at this many characters.
LINE_LIMIT = 400
#: One event line on the channel longer than this is dropped; in all, at most EVENTS_LIMIT bytes.
EVENT_LINE_LIMIT = 1024 * 1024
EVENTS_LIMIT = 32 * 1024 * 1024
#: Seconds the child may keep running after it reported the end of the run before it is killed.
END_GRACE = 10.0


class Ring:
    """The last ``limit`` bytes of a stream, and how many bytes there were in all."""

    def __init__(self, limit: int = OUTPUT_LIMIT) -> None:
        self.limit = limit
        self.buf = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        self.buf += data
        if len(self.buf) > 2 * self.limit:
            del self.buf[: len(self.buf) - self.limit]

    def tail(self, lines: int = 15, prefix: str = "  | ") -> str:
        """The last lines, each cut at LINE_LIMIT characters and prefixed (visibly the script's)."""
        data = bytes(self.buf[-self.limit:])
        text = data.decode("utf-8", errors="replace")
        out = []
        for line in text.rstrip().splitlines()[-lines:]:
            line = "".join(ch if ch.isprintable() or ch == "\t" else "?" for ch in line)
            if len(line) > LINE_LIMIT:
                line = line[:LINE_LIMIT] + f" [... {len(line) - LINE_LIMIT} more characters]"
            out.append(prefix + line)
        dropped = self.total - len(data)
        if dropped > 0 and out:
            out.insert(0, f"{prefix}[... {dropped} earlier bytes not kept]")
        return "\n".join(out)


@dataclasses.dataclass
class Collected:
    events: list[protocol.Event]
    stdout: Ring
    stderr: Ring
    stacks: str
    returncode: int | None
    timed_out: bool = False
    lingered: bool = False  # it reported its end but did not exit: killed
    sandbox: protocol.Sandbox | None = None  # the init's report (first line of the channel only)
    forged: int = 0  # lines on the channel without the run's key
    dropped: int = 0  # event lines too long, or beyond EVENTS_LIMIT
    #: the protocol version of a child that does not speak this trainlint's (its run was stopped)
    foreign_protocol: int | None = None


_LIVE: set[Child] = set()


class Child:
    """The sandboxed child: started at once, read with :meth:`collect`, killed by :meth:`kill`."""

    def __init__(self, build: Callable[[tuple[int, int, int]], list[str]], env: dict[str, str],
                 config: protocol.Config, kind: str) -> None:
        self.key = secrets.token_hex(16)
        self.kind = kind
        config = dataclasses.replace(config, key=self.key)
        cfg_r, cfg_w = os.pipe()
        ev_r, ev_w = os.pipe()
        st_r, st_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        payload = config.to_json().encode()
        with contextlib.suppress(OSError):
            fcntl.fcntl(cfg_w, 1031, max(len(payload) + 1, 65536))  # F_SETPIPE_SZ
        os.write(cfg_w, payload)
        os.close(cfg_w)
        fds = (cfg_r, ev_w, st_w)
        cmd = build(fds)
        self._read = {ev_r: "events", st_r: "stacks", out_r: "stdout", err_r: "stderr"}
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out_w, stderr=err_w, env=env,
                                         pass_fds=fds, start_new_session=True, preexec_fn=_die_with_parent)
        except BaseException:
            for fd in (*self._read, *fds, out_w, err_w):
                os.close(fd)
            raise
        for fd in (*fds, out_w, err_w):
            os.close(fd)
        _LIVE.add(self)

    def kill(self) -> None:
        """Kill the sandbox and everything in it. In a PID namespace, the kernel kills every process of
        the namespace when its init dies; without one, the subreaper init kills what is below it."""
        proc = self.proc
        if proc.poll() is None and self.kind == "none":
            with contextlib.suppress(OSError):
                os.kill(proc.pid, signal.SIGTERM)  # the init kills every descendant, then exits
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=3)
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
        _LIVE.discard(self)

    def collect(self, timeout: float) -> Collected:
        """Read the pipes until the child exits, or until the deadline (then kill it): in bounded
        buffers, whatever the script prints."""
        started = time.monotonic()
        deadline = started + timeout
        rings = {"stdout": Ring(), "stderr": Ring(), "stacks": Ring(256 * 1024)}
        events: list[protocol.Event] = []
        got = Collected(events, rings["stdout"], rings["stderr"], "", None)
        partial = bytearray()
        skipping = False
        events_bytes = 0
        first = True
        end_at: float | None = None
        exited_at: float | None = None
        sel = selectors.DefaultSelector()
        for fd in self._read:
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)

        def feed_events(data: bytes) -> None:
            nonlocal skipping, events_bytes, first, end_at
            partial.extend(data)
            while True:
                nl = partial.find(b"\n")
                if nl < 0:
                    if len(partial) > EVENT_LINE_LIMIT:
                        partial.clear()
                        skipping = True
                    return
                line = bytes(partial[:nl])
                del partial[: nl + 1]
                if skipping:
                    skipping = False
                    got.dropped += 1
                    continue
                events_bytes += len(line)
                if events_bytes > EVENTS_LIMIT:
                    got.dropped += 1
                    continue
                try:
                    data = json.loads(line)
                except ValueError:
                    got.forged += 1
                    continue
                if not isinstance(data, dict):
                    got.forged += 1
                    continue
                if first and data.get("type") == "sandbox" and "k" not in data:
                    sandbox = protocol.decode(data)
                    got.sandbox = sandbox if isinstance(sandbox, protocol.Sandbox) else None
                    first = False
                    continue
                first = False
                if data.pop("k", None) != self.key:
                    got.forged += 1
                    continue
                event = protocol.decode(data)
                if event is None or isinstance(event, protocol.Sandbox):
                    continue
                if isinstance(event, protocol.Hello) and event.protocol != protocol.PROTOCOL_VERSION:
                    got.foreign_protocol = event.protocol  # nothing it says can be read: stop it now
                    end_at = time.monotonic() - END_GRACE
                events.append(event)
                if isinstance(event, protocol.End) and end_at is None:
                    end_at = time.monotonic()

        killed = False
        while sel.get_map():
            now = time.monotonic()
            limit = deadline if end_at is None else min(deadline, end_at + END_GRACE)
            if exited_at is not None:
                limit = min(limit, exited_at + 1.0)  # something outside the sandbox kept a pipe open
            if now >= limit:
                if exited_at is None:
                    got.timed_out = end_at is None or now >= deadline
                    got.lingered = not got.timed_out
                    self.kill()
                    killed = True
                    deadline = now + 1.0  # drain what is left, briefly
                    end_at = None
                    exited_at = now
                    continue
                break
            for key, _ in sel.select(timeout=min(0.25, max(limit - now, 0.0))):
                fd = key.fd
                try:
                    data = os.read(fd, 1 << 16)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    sel.unregister(fd)
                    continue
                name = self._read[fd]
                if name == "events":
                    feed_events(data)
                else:
                    rings[name].feed(data)
            if exited_at is None and self.proc.poll() is not None:
                exited_at = time.monotonic()
        sel.close()
        for fd in self._read:
            with contextlib.suppress(OSError):
                os.close(fd)
        if not killed and self.proc.poll() is None:
            self.kill()
        else:
            self.kill()  # the process group: whatever is left of it
        got.returncode = self.proc.returncode
        got.stacks = bytes(rings["stacks"].buf).decode("utf-8", errors="replace")
        return got


def _die_with_parent() -> None:
    # The sandbox (bwrap, unshare, or the init without isolation) is killed when trainlint dies.
    with contextlib.suppress(OSError, AttributeError):
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


@contextlib.contextmanager
def signals_kill_children(cleanup: Callable[[], None] | None = None) -> Iterator[None]:
    """While active, SIGTERM/SIGINT/SIGHUP to trainlint first kill every live probe child and run
    ``cleanup`` (remove the temp dir), then take their usual course."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous: dict[int, Any] = {}

    def handler(signum: int, frame: types.FrameType | None) -> None:
        for child in list(_LIVE):
            child.kill()
        if cleanup is not None:
            with contextlib.suppress(Exception):
                cleanup()
        old = previous.get(signum, signal.SIG_DFL)
        signal.signal(signum, old)
        if callable(old):
            old(signum, frame)
        else:
            signal.raise_signal(signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        try:
            previous[sig] = signal.signal(sig, handler)
        except (OSError, ValueError):
            continue
    try:
        yield
    finally:
        for number, old in previous.items():
            with contextlib.suppress(OSError, ValueError, TypeError):
                signal.signal(number, old if old is not None else signal.SIG_DFL)


def make_tmp() -> Path:
    return Path(tempfile.mkdtemp(prefix="trainlint-probe-"))
