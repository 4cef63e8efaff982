"""Child-side entry point of the probe: ``python -m trainlint.probe.child`` (see PROTOCOL.md).

Reads the config, installs the framework plugins' post-import hooks, runs the user's script as
``__main__`` and turns the way it ends into an ``end`` event. Standard library only.
"""

from __future__ import annotations

import faulthandler
import importlib
import json
import os
import platform
import runpy
import sys
import time
import traceback

from trainlint.probe import harness as h


def _install_plugins(names: list[str]) -> None:
    for name in names:
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        install = getattr(mod, "install", None)
        if install is not None:
            install(h)


def _classify(exc: BaseException, line: int | None) -> tuple:
    for mapper in h.exception_mappers:
        try:
            got = mapper(exc, line)
        except Exception:  # noqa: BLE001
            got = None
        if got:
            return got
    text = f"{type(exc).__name__}: {exc}".strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    if len(first) > 300:
        first = first[:297] + "..."
    return (
        "TL707",
        f"the script raised {first} at {h.where(line)} before training",
        f"{first} at {h.where(line)}" + (f": `{h.user_source_line(line)}`" if line else ""),
    )


def _report_exception(exc: BaseException) -> None:
    line = h.user_line(exc.__traceback__)
    code, message, evidence, *rest = _classify(exc, line)
    h.finding(code, message, evidence=evidence, line=line, confirms=tuple(rest[0]) if rest else ())
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-6:])
    h.detail("script traceback (last frames):\n" + tb.rstrip())
    h.end("script-error", message, line)


def main() -> int:
    config_path = os.environ.get("TRAINLINT_PROBE_CONFIG", "")
    with open(config_path, encoding="utf-8") as f:
        config = json.load(f)
    h.started = time.monotonic()
    h.options = config
    h.workdir = config["workdir"]
    h.script_path = os.path.realpath(config["script"])
    h.open_events(os.environ["TRAINLINT_PROBE_EVENTS"])
    h.emit("hello", python=sys.version.split()[0], implementation=platform.python_implementation())
    # Shortly before the parent's kill, dump every thread's stack: where the script hung.
    timeout = float(config.get("timeout") or 0)
    if timeout > 1 and config.get("stackfile"):
        stack_file = open(config["stackfile"], "w", encoding="utf-8")  # noqa: SIM115
        faulthandler.dump_traceback_later(max(timeout - 1.0, timeout * 0.85), exit=False, file=stack_file)

    # Exception mapping of known API breaks (TL804, TL805, ...), from the compat stage.
    try:
        from trainlint.stages.s8_compat.probe import classify_exception

        h.exception_mappers.append(classify_exception)
    except ImportError:
        pass
    _install_plugins(list(config.get("plugins", ())))

    sys.argv = list(config.get("argv") or [config["script"]])
    script_dir = os.path.dirname(h.script_path)
    # As `python script.py` would: the script's directory first on sys.path; drop the shim's entry
    # point (-m) directory that Python put there.
    if sys.path and sys.path[0] in ("", os.getcwd()):
        sys.path[0] = script_dir
    else:
        sys.path.insert(0, script_dir)

    code = 0
    try:
        runpy.run_path(config["script"], run_name="__main__")
    except h.ProbeStop:
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
            _report_exception(exc)
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


if __name__ == "__main__":
    rc = main()
    # Skip interpreter teardown (framework atexit handlers, thread joins): the parent has the events.
    os._exit(rc)
