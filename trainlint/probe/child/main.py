"""The probe's child process, ``python -m trainlint.probe.child`` (see ../PROTOCOL.md).

Reads the configuration, makes the run's :class:`~trainlint.probe.child.harness.Harness`, installs the
framework plugins (their post-import hooks), runs the user's script as ``__main__`` and turns the way it
ends into an ``end`` event: an exception is classified at the point ``script.exception``. Standard
library only.
"""

from __future__ import annotations

import faulthandler
import importlib
import os
import platform
import re
import runpy
import sys
import time
import traceback

from trainlint.probe.child import harness, registry
from trainlint.probe.child.harness import Harness, ProbeStop
from trainlint.probe.child.offline import offline_resource
from trainlint.probe.child.points import SCRIPT_EXCEPTION, ScriptError
from trainlint.probe.protocol import PROTOCOL_VERSION, Config, Hello


def _install_plugins(h: Harness, names: list[str]) -> None:
    for name in names:
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        install = getattr(mod, "install", None)
        if install is not None:
            install(h)


def _report_exception(h: Harness, exc: BaseException) -> None:
    """The script raised before training: the plugins look first (one may end the run with a status of
    its own), then the classifiers of ``script.exception`` name its code."""
    line = h.user_line(exc.__traceback__)
    for hook in list(h.exception_hooks):
        try:
            hook(exc, line)
        except ProbeStop:
            raise
        except Exception:  # noqa: BLE001  # a broken hook must not hide the script's error
            pass
    got = registry.classify(h, SCRIPT_EXCEPTION, ScriptError(exc, line))
    message = got.message if got is not None else f"the script raised {type(exc).__name__} before training"
    if got is not None:
        h.finding(got.code, got.message, evidence=got.evidence, line=line, confirms=got.confirms)
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-6:])
    h.detail("script traceback (last frames):\n" + tb.rstrip())
    h.end("script-error", message, line)


def _read_all(fd: int) -> bytes:
    chunks = []
    while True:
        data = os.read(fd, 1 << 16)
        if not data:
            break
        chunks.append(data)
    os.close(fd)
    return b"".join(chunks)


def _limits(h: Harness, config: Config) -> None:
    """The probe's resource limits, set before the script runs (inherited by what it starts)."""
    import resource

    memory = config.memory_mb
    if memory > 0:
        resource.setrlimit(resource.RLIMIT_AS, (memory << 20, memory << 20))
    procs = config.max_processes
    if procs > 0:
        # RLIMIT_NPROC counts threads too (and never applies to root): generous; the watchdog below
        # counts processes in the sandbox's PID namespace, for every user.
        soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
        limit = procs * 8 if hard == resource.RLIM_INFINITY else min(procs * 8, hard)
        resource.setrlimit(resource.RLIMIT_NPROC, (limit, limit))
        _process_watchdog(h, procs)


def _process_watchdog(h: Harness, limit: int) -> None:
    """Stop the run when the PID namespace holds more than ``limit`` processes."""
    import threading

    try:
        if os.readlink("/proc/self") != str(os.getpid()):
            return  # this /proc is not the one of a PID namespace of the probe's own
    except OSError:
        return

    def watch() -> None:
        while True:
            time.sleep(0.2)
            try:
                n = sum(1 for e in os.listdir("/proc") if e.isdigit())
            except OSError:
                continue
            if n > limit:
                h.end("resource-limit", f"the script started more than {limit} processes, the probe's limit "
                      f"of {limit} processes (--probe-processes): stopped")
                h.real_exit(0)

    threading.Thread(target=watch, daemon=True, name="trainlint-process-limit").start()


#: Where a model or dataset is missing from the local cache and the network would be needed.
_ASSET_WORDS = ("we couldn't connect", "couldn't reach", "offlinemodeisenabled", "localentrynotfounderror",
                "on the hugging face hub", "huggingface.co", "offline mode", "is not available offline",
                "outgoing traffic has been disabled", "url fetch failure", "temporary failure in name resolution",
                "name or service not known", "network is unreachable", "urlopen error")


def _asset_problem(exc: BaseException) -> str | None:
    """A model/dataset the script loads is not in the local cache: a probe status, not a finding."""
    chain, seen = [], set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        chain.append(e)
        e = e.__cause__ or e.__context__
    names = {type(c).__name__ for c in chain}
    text = " ".join(f"{type(c).__name__} {c}" for c in chain).lower()
    net = {"LocalEntryNotFoundError", "OfflineModeIsEnabled", "ConnectionError", "HfHubHTTPError",
           "DatasetNotFoundError", "ConnectTimeout", "MaxRetryError", "NewConnectionError", "URLError", "gaierror"}
    if not (names & net or any(w in text for w in _ASSET_WORDS)):
        return None
    if not isinstance(exc, (OSError, ConnectionError, ValueError, RuntimeError, FileNotFoundError)) and not names & net:
        return None
    what = ""
    try:
        found = offline_resource(exc)
        if found is not None:
            what = f"{found[0]} {found[1]!r}"
    except Exception:  # noqa: BLE001
        pass
    return what


def _resource_limit(exc: BaseException, config: Config) -> str | None:
    import errno

    if isinstance(exc, MemoryError) and config.memory_mb:
        return f"the script ran out of the probe's memory limit ({config.memory_mb} MB, --probe-memory)"
    if isinstance(exc, OSError) and exc.errno == errno.EAGAIN and config.max_processes:
        return (f"the script hit the probe's limit of {config.max_processes} processes "
                f"({type(exc).__name__}: {exc}): --probe-processes raises it")
    return None


#: Options that name where a script writes (`--output_dir out`, `--logging-dir=runs`, `--save_path m.pt`).
_OUTPUT_OPTION = re.compile(r"^--?(output|out|save|logging|log)[_-]?(dir|directory|path|folder)$", re.IGNORECASE)


def redirect_output_args(argv: list[str], workdir: str) -> tuple[list[str], list[str]]:
    """Point the script's output options into the work directory, the only writable place of the
    sandbox (a script's own ``os.makedirs(args.output_dir)`` would fail there). Returns the new
    argv and a description of each change."""
    out, changed = list(argv), list[str]()
    root = os.path.join(workdir, "outputs")
    i = 1
    while i < len(out):
        arg = out[i]
        name, eq, value = arg.partition("=")
        at = i if eq else i + 1
        if not eq:
            value = out[i + 1] if i + 1 < len(out) else ""
        if (_OUTPUT_OPTION.match(name) and value and not value.startswith("-")
                and not os.path.abspath(value).startswith(workdir + os.sep)):
            target = os.path.join(root, str(len(changed) + 1))
            out[at] = f"{name}={target}" if eq else target
            changed.append(f"{name} {value}")
        i = at + 1
    return out, changed


def _read_only_write(exc: BaseException) -> str | None:
    """The path of a write the read-only sandbox refused (EROFS), else None."""
    import errno

    e: BaseException | None = exc
    seen: set[int] = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if isinstance(e, OSError) and e.errno == errno.EROFS:
            return str(e.filename) if e.filename is not None else "?"
        e = e.__cause__ or e.__context__
    return None


def main() -> int:
    if len(sys.argv) > 1:
        # The parent's pipes: config (read once), events, stacks; none of them is named in the environment.
        cfg_fd, events_fd, stacks_fd = (int(x) for x in sys.argv[1].split(","))
        config = Config.from_json(_read_all(cfg_fd))
    else:  # by hand, for debugging: the config file and an events file named in the environment
        with open(os.environ["TRAINLINT_PROBE_CONFIG"], encoding="utf-8") as f:
            config = Config.from_json(f.read())
        events_fd, stacks_fd = -1, -1
    key, config.key = config.key, ""  # the script runs in this process: it does not get to read the key
    h = Harness(config, key=key)
    harness.install(h)
    h.open_events(events_fd if events_fd >= 0 else os.environ["TRAINLINT_PROBE_EVENTS"])
    h.emit(Hello(sys.version.split()[0], platform.python_implementation(), PROTOCOL_VERSION))
    # Shortly before the parent's kill, dump every thread's stack: where the script hung.
    timeout = config.timeout
    if stacks_fd >= 0:
        stack_file = os.fdopen(harness.hide_fd(stacks_fd), "w", encoding="utf-8")
        deadline = config.deadline or h.started + timeout
        delay = deadline - time.monotonic() - min(1.5, 0.15 * timeout)
        if timeout > 1 and delay > 0:
            faulthandler.dump_traceback_later(delay, exit=False, file=stack_file)
    try:
        _limits(h, config)
    except (ValueError, OSError) as exc:
        h.note(f"the probe's resource limits could not be set: {exc}")

    _install_plugins(h, config.plugins)

    sys.argv = list(config.argv or [config.script])
    sys.argv, redirected = redirect_output_args(sys.argv, os.path.realpath(h.workdir))
    if redirected:
        h.note(f"output options redirected into the probe's temporary directory: {', '.join(redirected)}")
    script_dir = os.path.dirname(h.script_path)
    # As `python script.py` would: the script's directory first on sys.path; drop the shim's entry
    # point (-m) directory that Python put there.
    if sys.path and sys.path[0] in ("", os.getcwd()):
        sys.path[0] = script_dir
    else:
        sys.path.insert(0, script_dir)

    code = 0
    try:
        runpy.run_path(config.script, run_name="__main__")
    except ProbeStop:
        pass
    except SystemExit as exc:
        line = h.user_line(exc.__traceback__)
        status = exc.code if exc.code is not None else 0
        if not h.ended():
            h.end(
                "exited",
                f"the script called sys.exit({status!r}) at {h.where(line)} before reaching training",
                line,
            )
    except KeyboardInterrupt:
        h.end("exited", "the script was interrupted")
    except BaseException as exc:  # noqa: BLE001  # the user's error: report it, do not crash
        if not h.ended():
            limit = _resource_limit(exc, config)
            asset = None if limit else _asset_problem(exc)
            refused = None if limit or asset is not None else _read_only_write(exc)
            line = h.user_line(exc.__traceback__)
            if limit:
                h.end("resource-limit", f"{limit} at {h.where(line)}", line)
            elif refused is not None:
                # The sandbox, not the script: outside its temporary directory the file system is read-only.
                reason = (f"the script writes to {refused!r} (at {h.where(line)}), outside the probe's temporary "
                          "directory, where the probe's file system is read-only: pass that path as an output "
                          "option (--output_dir ...: the probe redirects it) or under $TMPDIR; the script itself "
                          "is not at fault")
                h.incomplete("file system", reason)
                h.end("unsupported", f"not probed: {reason}", line)
            elif asset is not None:
                first = (str(exc).strip().splitlines() or [""])[0][:200]
                h.detail(f"{type(exc).__name__}: {first}")
                what = (f"{asset} is not in the local cache" if asset else
                        f"the script needs the network ({type(exc).__name__}: {first[:120]})")
                h.end("asset-missing",
                      f"{what} (at {h.where(line)}) and the probe runs offline: "
                      f"fetch what the probe needs first with `trainlint probe --prefetch {os.path.basename(h.script_path)}`"
                      f" (or download it once, e.g. run the script without --probe), or use --tiny-model for a hub "
                      f"model; the script itself is not at fault", line)
            else:
                _report_exception(h, exc)
    else:
        if not h.ended():
            h.end(
                "finished",
                "the script finished without reaching a training call "
                "(no Trainer.train/evaluate/predict, optimizer.step or fit): nothing to probe",
            )
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except Exception:  # noqa: BLE001
            pass
    return code


def exit_now(code: int) -> None:
    """Exit at once, through the ``os._exit`` taken before the script ran (a script may replace it)."""
    harness.current().real_exit(code)
