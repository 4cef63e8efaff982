"""Run the probe (parent side): the temporary directory, the child's configuration and environment, the
sandboxed child started and read until it ends or the deadline (``sandbox.py``, ``channel.py``), then
the report (``report.py``). See PROTOCOL.md.

Framework-neutral: the framework hooks are child-side plugins (``child/frameworks/``).
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

from trainlint.findings import Finding
from trainlint.probe import ProbeOptions, ProbeReport
from trainlint.probe.protocol import Config
from trainlint.probe.child.frameworks import PLUGINS
from trainlint.probe.parent.channel import Child, make_tmp, signals_kill_children
from trainlint.probe.parent.report import build_report, finish
from trainlint.probe.parent.sandbox import Layout, command, detect_sandbox, project_dir, readable_paths

PACKAGE_DIR = Path(__file__).resolve().parents[2]  # .../trainlint


def _child_env(work: Path, shim: Path) -> dict[str, str]:
    env = dict(os.environ)
    for key in ("PYTHONHOME", "PYTHONSTARTUP", "PYTHONINSPECT"):
        env.pop(key, None)
    for key in [k for k in env if k.startswith("TRAINLINT_")]:
        env.pop(key)  # nothing of trainlint's own settings, and no path to its channel
    tmpdir = work / "tmp"
    env.update(
        {
            "CUDA_VISIBLE_DEVICES": "",
            "HF_HUB_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "HF_HUB_DISABLE_TELEMETRY": "1",
            "HF_HUB_DISABLE_PROGRESS_BARS": "1",
            "HF_DATASETS_CACHE": str(work / "hf-datasets"),
            "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
            "WANDB_DISABLED": "true",
            "WANDB_MODE": "disabled",
            "DISABLE_MLFLOW_INTEGRATION": "TRUE",
            "COMET_MODE": "DISABLED",
            "TOKENIZERS_PARALLELISM": "false",
            "TMPDIR": str(tmpdir),
            "TEMP": str(tmpdir),
            "TMP": str(tmpdir),
            "MPLCONFIGDIR": str(work / "matplotlib"),
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
        }
    )
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(shim) + (os.pathsep + old if old else "")
    return env


def run(script: Path, static_findings: list[Finding], options: ProbeOptions) -> ProbeReport:
    script = Path(script)
    started = time.monotonic()
    tmp = make_tmp()
    keep = bool(os.environ.get("TRAINLINT_PROBE_KEEP"))

    def cleanup() -> None:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)

    try:
        with signals_kill_children(cleanup):
            return _run(script, static_findings, options, tmp, started)
    finally:
        cleanup()


def _run(script: Path, static_findings: list[Finding], options: ProbeOptions, tmp: Path, started: float) -> ProbeReport:
    shim = tmp / "shim"
    shim.mkdir()
    (shim / "trainlint").symlink_to(PACKAGE_DIR, target_is_directory=True)
    work = tmp / "work"
    (work / "tmp").mkdir(parents=True)
    abs_script = script.resolve()
    sandbox = detect_sandbox()
    config = Config(
        script=str(abs_script),
        argv=[str(script), *options.script_args],
        workdir=str(work),
        cwd=os.getcwd(),
        launcher=options.launcher,
        rows=options.rows,
        tiny_model=options.tiny_model,
        overfit=options.overfit,
        verbose=options.verbose,
        timeout=options.timeout,
        # time.monotonic() when the parent kills the run (one clock for every process of the machine)
        deadline=started + options.timeout,
        plugins=list(PLUGINS),
        static_codes=sorted({f.code for f in static_findings}),
        memory_mb=options.memory_mb,
        # RLIMIT_NPROC counts per user namespace inside a sandbox; outside, it would count every
        # process of the user, so it is only set in one.
        max_processes=options.max_processes if sandbox.kind else 0,
    )
    python = options.python or sys.executable
    python = shutil.which(python) or python
    readonly = project_dir(abs_script)
    layout = Layout(tmp, work, Path.cwd(), [], project=readonly, work_size=f"{max(int(options.disk_mb), 16)}m")
    layout.readable = readable_paths(abs_script, python, options.script_args,
                                     [readonly, abs_script.parent, Path.cwd(), PACKAGE_DIR])
    argv = [python, "-m", "trainlint.probe.child", "{fds}"]
    _, isolation = command(sandbox, argv, layout, (0, 0, 0))
    isolated = bool(sandbox.kind)
    env = _child_env(work, shim)
    try:
        child = Child(lambda fds: command(sandbox, argv, layout, fds)[0], env, config, sandbox.kind or "none")
    except OSError as exc:
        report = build_report(script, static_findings, [], "crashed", isolated)
        report.notes[:0] = [isolation, f"the probe could not start {python}: {exc}"]
        return report
    remaining = max(options.timeout - (time.monotonic() - started), 1.0)
    got = child.collect(remaining)
    return finish(script, abs_script, static_findings, options, got, isolation, isolated, started)
