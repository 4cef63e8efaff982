"""Child-side harness of the probe (see PROTOCOL.md): events to the parent, post-import hooks, the
user's line, the stop exception.

Runs inside the user's interpreter: standard library only. Nothing here imports a framework.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import os
import sys
import threading
import time
import traceback
import types
from typing import Any, Callable, Iterator, Sequence

from trainlint.probe import protocol

#: The configuration (protocol.Config as a dict, set by main).
options: dict[str, Any] = {}
#: The temporary directory for everything the script would write.
workdir: str = ""
#: Absolute, resolved path of the user's script.
script_path: str = ""
#: Functions ``(exc, line) -> (code, message, evidence[, confirms]) | None`` mapping a script exception
#: to a code (``confirms``: further codes the same observation confirms, as in the `finding` event).
exception_mappers: list[Callable[[BaseException, "int | None"], "tuple | None"]] = []
#: Free-form state shared between hooks and checks of the child (e.g. recorded label columns).
state: dict[str, Any] = {}
#: Codes reported by `finding` so far (a later stage can skip repeating the same failure).
emitted: set[str] = set()

_events_file = None
#: The key the parent gave this run: an event without it is not believed (see PROTOCOL.md).
_key = ""
#: os._exit as it was before the script ran: a script that replaces os._exit cannot swallow the stop.
_real_exit = os._exit
#: time.monotonic() when the child started (for the timings in the notes).
started = 0.0
_lock = threading.Lock()
_busy_depth = 0
_ended = False


class ProbeStop(BaseException):
    """Raised to stop the user's script once the probe has what it needs (not an Exception, so a
    script's ``except Exception`` does not swallow it)."""


# ---------------------------------------------------------------- events


def hide_fd(fd: int) -> int:
    """Move an inherited descriptor to a high number, close-on-exec (the script's subprocesses do not
    inherit it), and close the original."""
    import fcntl

    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 700 + int.from_bytes(os.urandom(1), "little"))
    os.close(fd)
    return high


def open_events(target: "str | int", key: str = "") -> None:
    """The channel to the parent: an inherited pipe (its descriptor) or, for tests, a file path."""
    global _events_file, _key
    _key = key
    if isinstance(target, int):
        _events_file = os.fdopen(hide_fd(target), "w", encoding="utf-8", buffering=1)
    else:
        _events_file = open(target, "a", encoding="utf-8", buffering=1)  # noqa: SIM115


def emit(event: protocol.Event) -> None:
    line = protocol.encode(event, _key)
    with _lock:
        if _events_file is None:
            sys.__stderr__.write("[trainlint-probe] " + line + "\n")
            return
        try:
            _events_file.write(line + "\n")
            _events_file.flush()
        except (OSError, ValueError):
            pass  # the parent is gone (it killed us) or the script closed the channel


def finding(
    code: str,
    message: str,
    evidence: str = "",
    line: int | None = None,
    confirms: tuple[str, ...] | list[str] = (),
    severity: str | None = None,
) -> None:
    emitted.add(code)
    emitted.update(confirms)
    emit(protocol.Finding(code, message, evidence or message, line, tuple(confirms), severity))


def checked(*codes: str) -> None:
    emit(protocol.Checked(codes))


def incomplete(check: str, reason: str, codes: Sequence[str] = ()) -> None:
    """This check could not complete (``reason``): the run is never reported as all clear, and static
    findings of ``codes`` are not counted as reproduced or not by it."""
    emit(protocol.Incomplete(check, reason, tuple(codes)))


def note(text: str) -> None:
    emit(protocol.Note(text))


def detail(text: str) -> None:
    emit(protocol.Detail(text))


def phase(name: str) -> None:
    emit(protocol.Phase(name))


def versions(**v: str) -> None:
    emit(protocol.Versions(v))


def end(outcome: str, text: str = "", line: int | None = None) -> None:
    global _ended
    if _ended:
        return
    _ended = True
    emit(protocol.End(outcome, text, line, round(time.monotonic() - started, 3)))


def ended() -> bool:
    return _ended


def stop(outcome: str = "reached-training", text: str = "", line: int | None = None) -> None:
    """End the run: emit ``end`` and exit the child at once. Exiting (rather than raising
    :class:`ProbeStop` through the script) means a script's ``except BaseException:``/bare ``except:``
    around ``trainer.train()`` cannot swallow the stop and go on to train for real."""
    end(outcome, text, line)
    if options.get("exit_on_stop", True):
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        _real_exit(0)
    raise ProbeStop(text)


# ---------------------------------------------------------------- the user's line


def _is_user_file(filename: str) -> bool:
    if not filename or filename.startswith("<"):
        return False
    try:
        return os.path.realpath(filename) == script_path
    except (OSError, ValueError):
        return False


def user_line(tb: types.TracebackType | None = None) -> int | None:
    """The line of the deepest frame in the user's script: in a traceback, or else in the current
    call stack."""
    if tb is not None:
        found = None
        for frame, lineno in traceback.walk_tb(tb):
            if _is_user_file(frame.f_code.co_filename):
                found = lineno
        return found
    frame = sys._getframe(1)
    while frame is not None:
        if _is_user_file(frame.f_code.co_filename):
            return frame.f_lineno
        frame = frame.f_back
    return None


def user_frame() -> types.FrameType | None:
    """The deepest frame of the current stack that runs the user's script."""
    frame = sys._getframe(1)
    while frame is not None:
        if _is_user_file(frame.f_code.co_filename):
            return frame
        frame = frame.f_back
    return None


def user_source_line(line: int | None) -> str:
    if not line:
        return ""
    try:
        with open(script_path, encoding="utf-8") as f:
            for i, text in enumerate(f, 1):
                if i == line:
                    return text.strip()
    except OSError:
        pass
    return ""


def where(line: int | None) -> str:
    name = os.path.basename(script_path) or "script"
    return f"{name}:{line}" if line else name


# ---------------------------------------------------------------- busy: the probe's own work


@contextlib.contextmanager
def busy() -> Iterator[None]:
    """While active, the loop hooks (backward/step observers) ignore calls: they are the probe's."""
    global _busy_depth
    _busy_depth += 1
    try:
        yield
    finally:
        _busy_depth -= 1


def is_busy() -> bool:
    return _busy_depth > 0


# ---------------------------------------------------------------- post-import hooks

_hooks: dict[str, list[Callable[[types.ModuleType], None]]] = {}
_resolving: set[str] = set()


def _run_hooks(module: types.ModuleType) -> None:
    for cb in _hooks.pop(module.__name__, []):
        try:
            cb(module)
        except Exception as exc:  # a broken hook must never break the user's import
            note(f"probe hook for {module.__name__} failed: {type(exc).__name__}: {exc}")


class _HookedLoader(importlib.abc.Loader):
    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec):  # noqa: ANN001
        return self._loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        spec = module.__spec__
        if spec is not None:
            spec.loader = self._loader
        module.__loader__ = self._loader
        self._loader.exec_module(module)
        _run_hooks(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class _PostImportFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path, target=None):  # noqa: ANN001
        if fullname not in _hooks or fullname in _resolving:
            return None
        _resolving.add(fullname)
        try:
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
            else:
                return None
        finally:
            _resolving.discard(fullname)
        if spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _HookedLoader(spec.loader)
        return spec


_finder = _PostImportFinder()


def when_imported(name: str, callback: Callable[[types.ModuleType], None]) -> None:
    """Run ``callback(module)`` once module ``name`` has been imported (at once if it already is)."""
    if _finder not in sys.meta_path:
        sys.meta_path.insert(0, _finder)
    mod = sys.modules.get(name)
    if mod is not None and getattr(getattr(mod, "__spec__", None), "_initializing", False) is False:
        try:
            callback(mod)
        except Exception as exc:
            note(f"probe hook for {name} failed: {type(exc).__name__}: {exc}")
        return
    _hooks.setdefault(name, []).append(callback)


def guarded(label: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run one probe check; a bug in trainlint's check becomes a note, never a crash of the run."""
    try:
        return fn(*args, **kwargs)
    except ProbeStop:
        raise
    except Exception as exc:  # noqa: BLE001
        tb = traceback.extract_tb(exc.__traceback__)[-1:]
        at = f" ({os.path.basename(tb[0].filename)}:{tb[0].lineno})" if tb else ""
        note(f"probe check '{label}' could not run: {type(exc).__name__}: {exc}{at}")
        return None


def elapsed() -> float:
    """Seconds since the child started."""
    return time.monotonic() - started
