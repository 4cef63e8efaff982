"""The child's harness (see ../PROTOCOL.md): one :class:`Harness` per run, made by ``main.py``, handed to
every framework plugin and every check. It writes the events to the parent, runs post-import hooks,
finds the user's line in a stack or a traceback, and stops the run.

Runs inside the user's interpreter: standard library only. Nothing here imports a framework.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import os
import sys
import threading
import time
import traceback
import types
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any, NoReturn, TypeVar

from trainlint.probe import protocol

T = TypeVar("T")
#: ``hook(exc, line)``: a plugin's look at an exception of the script before it is classified (it may
#: stop the run with a status of its own, e.g. a CUDA feature the CPU emulation does not provide).
ExceptionHook = Callable[[BaseException, "int | None"], None]
ImportHook = Callable[[types.ModuleType], None]


class ProbeStop(BaseException):
    """Raised to stop the user's script once the probe has what it needs (not an Exception, so a
    script's ``except Exception`` does not swallow it)."""


def hide_fd(fd: int) -> int:
    """Move an inherited descriptor to a high number, close-on-exec (the script's subprocesses do not
    inherit it), and close the original."""
    import fcntl

    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 700 + int.from_bytes(os.urandom(1), "little"))
    os.close(fd)
    return high


_current: Harness | None = None


def current() -> Harness:
    """The harness of this run (the child has one; main.py makes it)."""
    if _current is None:
        raise RuntimeError("no probe harness in this process")
    return _current


class Harness:
    """The probe's side of the child process: the channel to the parent and the services the plugins and
    the checks share. ``sink`` replaces the channel (in-process tests record the events); ``strict``
    makes a bug of trainlint's own check raise instead of becoming a note or an incomplete check."""

    def __init__(self, config: protocol.Config, *, key: str = "", sink: Callable[[protocol.Event], None] | None = None,
                 strict: bool = False, exit_on_stop: bool = True) -> None:
        self.config = config
        #: the temporary directory for everything the script would write
        self.workdir = config.workdir
        #: absolute, resolved path of the user's script
        self.script_path = os.path.realpath(config.script) if config.script else ""
        #: codes reported by `finding` so far (a later stage can skip repeating the same failure)
        self.emitted: set[str] = set()
        #: plugins' looks at a script exception, before it is classified
        self.exception_hooks: list[ExceptionHook] = []
        self.strict = strict
        #: time.monotonic() when the child started (for the timings in the notes)
        self.started = time.monotonic()
        #: os._exit as it was before the script ran: a script that replaces os._exit cannot swallow the stop
        self.real_exit: Callable[[int], NoReturn] = os._exit
        self._exit_on_stop = exit_on_stop
        self._key = key
        self._sink = sink
        self._events: IO[str] | None = None
        self._lock = threading.Lock()
        self._busy_depth = 0
        self._ended = False
        self._end_hooks: list[Callable[[], None]] = []
        self._kept: dict[type, object] = {}
        self._imports = _PostImportFinder(self)

    # ------------------------------------------------------------ events

    def open_events(self, target: str | int) -> None:
        """The channel to the parent: an inherited pipe (its descriptor) or, for debugging, a file path."""
        if isinstance(target, int):
            self._events = os.fdopen(hide_fd(target), "w", encoding="utf-8", buffering=1)
        else:
            self._events = open(target, "a", encoding="utf-8", buffering=1)  # noqa: SIM115

    def emit(self, event: protocol.Event) -> None:
        if self._sink is not None:
            self._sink(event)
            return
        line = protocol.encode(event, self._key)
        with self._lock:
            if self._events is None:
                if sys.__stderr__ is not None:
                    sys.__stderr__.write("[trainlint-probe] " + line + "\n")
                return
            try:
                self._events.write(line + "\n")
                self._events.flush()
            except (OSError, ValueError):
                pass  # the parent is gone (it killed us) or the script closed the channel

    def finding(self, code: str, message: str, evidence: str = "", line: int | None = None,
                confirms: Iterable[str] = (), severity: str | None = None) -> None:
        """The run showed the failure of ``code`` (and of ``confirms``, by the same observation)."""
        confirms = tuple(confirms)
        self.emitted.add(code)
        self.emitted.update(confirms)
        self.emit(protocol.Finding(code, message, evidence or message, line, confirms, severity))

    def checked(self, *codes: str) -> None:
        """The run got past the point where these codes would fail."""
        self.emit(protocol.Checked(codes))

    def incomplete(self, check: str, reason: str, codes: Sequence[str] = ()) -> None:
        """This check could not complete (``reason``): the run is never reported as all clear, and static
        findings of ``codes`` are not counted as reproduced or not by it."""
        self.emit(protocol.Incomplete(check, reason, tuple(codes)))

    def note(self, text: str) -> None:
        self.emit(protocol.Note(text))

    def detail(self, text: str) -> None:
        self.emit(protocol.Detail(text))

    def phase(self, name: str) -> None:
        self.emit(protocol.Phase(name))

    def versions(self, **versions: str) -> None:
        self.emit(protocol.Versions(versions))

    def on_end(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once, just before the `end` event (a plugin's closing note). The callback
        registered last runs first."""
        self._end_hooks.insert(0, callback)

    def end(self, outcome: str, text: str = "", line: int | None = None) -> None:
        if self._ended:
            return
        for callback in self._end_hooks:
            callback()
        self._ended = True
        self.emit(protocol.End(outcome, text, line, round(time.monotonic() - self.started, 3)))

    def ended(self) -> bool:
        return self._ended

    def stop(self, outcome: str = "reached-training", text: str = "", line: int | None = None) -> None:
        """End the run: emit ``end`` and exit the child at once. Exiting (rather than raising
        :class:`ProbeStop` through the script) means a script's ``except BaseException:``/bare ``except:``
        around ``trainer.train()`` cannot swallow the stop and go on to train for real."""
        self.end(outcome, text, line)
        if self._exit_on_stop:
            for stream in (sys.stdout, sys.stderr):
                try:
                    stream.flush()
                except Exception:  # noqa: BLE001
                    pass
            self.real_exit(0)
        raise ProbeStop(text)

    # ------------------------------------------------------------ the user's line

    def is_user_file(self, filename: str) -> bool:
        if not filename or filename.startswith("<"):
            return False
        try:
            return os.path.realpath(filename) == self.script_path
        except (OSError, ValueError):
            return False

    def user_line(self, tb: types.TracebackType | None = None) -> int | None:
        """The line of the deepest frame in the user's script: in a traceback, or else in the current
        call stack."""
        if tb is not None:
            found = None
            for frame, lineno in traceback.walk_tb(tb):
                if self.is_user_file(frame.f_code.co_filename):
                    found = lineno
            return found
        user = self.user_frame()
        return user.f_lineno if user is not None else None

    def user_frame(self) -> types.FrameType | None:
        """The deepest frame of the current stack that runs the user's script."""
        frame: types.FrameType | None = sys._getframe(1)
        while frame is not None:
            if self.is_user_file(frame.f_code.co_filename):
                return frame
            frame = frame.f_back
        return None

    def user_source_line(self, line: int | None) -> str:
        if not line:
            return ""
        try:
            with open(self.script_path, encoding="utf-8") as f:
                for i, text in enumerate(f, 1):
                    if i == line:
                        return text.strip()
        except OSError:
            pass
        return ""

    def where(self, line: int | None) -> str:
        name = os.path.basename(self.script_path) or "script"
        return f"{name}:{line}" if line else name

    # ------------------------------------------------------------ busy: the probe's own work

    @contextlib.contextmanager
    def busy(self) -> Iterator[None]:
        """While active, the loop hooks (backward/step observers) ignore calls: they are the probe's."""
        self._busy_depth += 1
        try:
            yield
        finally:
            self._busy_depth -= 1

    def is_busy(self) -> bool:
        return self._busy_depth > 0

    # ------------------------------------------------------------ post-import hooks, guarded calls

    def when_imported(self, name: str, callback: ImportHook) -> None:
        """Run ``callback(module)`` once module ``name`` has been imported (at once if it already is).
        Nothing is imported early: a script that never imports torch never loads it."""
        self._imports.add(name, callback)

    def guarded(self, label: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
        """Run ``fn``; a bug in trainlint's own code becomes a note, never a crash of the run."""
        try:
            return fn(*args, **kwargs)
        except ProbeStop:
            raise
        except Exception as exc:  # noqa: BLE001
            if self.strict:
                raise
            self.note(f"probe check '{label}' could not run: {error_at(exc)}")
            return None

    def elapsed(self) -> float:
        """Seconds since the child started."""
        return time.monotonic() - self.started

    # ------------------------------------------------------------ what plugins record for checks

    def keep(self, record: T) -> T:
        """Keep ``record`` for the rest of the run, found by its type (a plugin's observations, e.g. the
        label columns ``load_dataset`` returned): one record per type."""
        self._kept[type(record)] = record
        return record

    def kept(self, kind: type[T]) -> T | None:
        """The record of type ``kind`` kept by a plugin, if any."""
        record = self._kept.get(kind)
        return record if isinstance(record, kind) else None


def error_at(exc: BaseException) -> str:
    """``KeyError: 'x' (file.py:12)``: an exception of trainlint's own code, with where it was raised."""
    tb = traceback.extract_tb(exc.__traceback__)[-1:]
    at = f" ({os.path.basename(tb[0].filename)}:{tb[0].lineno})" if tb else ""
    return f"{type(exc).__name__}: {exc}{at}"


def install(harness: Harness) -> None:
    """Make ``harness`` the one of this process (main.py, once)."""
    global _current
    _current = harness


# ---------------------------------------------------------------- post-import hooks


class _HookedLoader(importlib.abc.Loader):
    def __init__(self, loader: Any, finder: _PostImportFinder) -> None:
        self._loader = loader
        self._finder = finder

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        module: types.ModuleType | None = self._loader.create_module(spec)
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        spec = module.__spec__
        if spec is not None:
            spec.loader = self._loader
        module.__loader__ = self._loader
        self._loader.exec_module(module)
        self._finder.run_hooks(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class _PostImportFinder(importlib.abc.MetaPathFinder):
    """At the front of ``sys.meta_path``: when a module with hooks finishes executing (however it is
    imported: ``import x``, a lazy ``_LazyModule`` attribute, ``importlib.import_module``), its hooks run
    once."""

    def __init__(self, harness: Harness) -> None:
        self._harness = harness
        self._hooks: dict[str, list[ImportHook]] = {}
        self._resolving: set[str] = set()

    def add(self, name: str, callback: ImportHook) -> None:
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)
        mod = sys.modules.get(name)
        if mod is not None and getattr(getattr(mod, "__spec__", None), "_initializing", False) is False:
            try:
                callback(mod)
            except Exception as exc:
                self._harness.note(f"probe hook for {name} failed: {type(exc).__name__}: {exc}")
            return
        self._hooks.setdefault(name, []).append(callback)

    def run_hooks(self, module: types.ModuleType) -> None:
        for cb in self._hooks.pop(module.__name__, []):
            try:
                cb(module)
            except Exception as exc:  # a broken hook must never break the user's import
                self._harness.note(f"probe hook for {module.__name__} failed: {type(exc).__name__}: {exc}")

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self._hooks or fullname in self._resolving:
            return None
        self._resolving.add(fullname)
        try:
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec: importlib.machinery.ModuleSpec | None = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
            else:
                return None
        finally:
            self._resolving.discard(fullname)
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _HookedLoader(spec.loader, self)
        return spec
