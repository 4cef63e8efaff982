"""Parent side of the probe: start the child (see PROTOCOL.md), enforce the timeout, read its events
and attach a probe outcome to every static finding.

Framework-neutral: the framework hooks are child-side plugins (``hooks_*.py`` of this package).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from trainlint.findings import Finding, Position, ProbeOutcome, ProbeStatus, Severity
from trainlint.probe import ProbeOptions, ProbeReport

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # .../trainlint

#: Name and severity of the codes the probe reports, used when the rule registry is not importable.
FALLBACK_RULES: dict[str, tuple[str, Severity]] = {
    "TL101": ("raw-dataset-to-trainer", Severity.ERROR),
    "TL103": ("label-sorted-slice", Severity.WARNING),
    "TL106": ("label-out-of-range", Severity.ERROR),
    "TL201": ("no-padding-collator", Severity.ERROR),
    "TL202": ("unpaddable-columns", Severity.ERROR),
    "TL207": ("batch-keys-not-in-forward", Severity.WARNING),
    "TL301": ("missing-num-labels", Severity.ERROR),
    "TL304": ("regression-head-on-classes", Severity.ERROR),
    "TL305": ("frozen-model", Severity.ERROR),
    "TL308": ("parameters-without-gradient", Severity.WARNING),
    "TL405": ("label-dtype-problem-type", Severity.ERROR),
    "TL406": ("non-finite-loss", Severity.ERROR),
    "TL407": ("unexpected-initial-loss", Severity.WARNING),
    "TL501": ("string-optimizer", Severity.WARNING),
    "TL502": ("torch-optimizer-default-lr", Severity.WARNING),
    "TL503": ("high-learning-rate", Severity.WARNING),
    "TL504": ("optimizer-on-replaced-model", Severity.ERROR),
    "TL506": ("step-does-not-move-weights", Severity.ERROR),
    "TL601": ("metrics-without-argmax", Severity.ERROR),
    "TL602": ("metrics-returns-none", Severity.ERROR),
    "TL603": ("preprocess-logits-returns-none", Severity.ERROR),
    "TL606": ("unknown-metric-for-best-model", Severity.ERROR),
    "TL607": ("compute-metrics-error", Severity.ERROR),
    "TL701": ("missing-zero-grad", Severity.ERROR),
    "TL702": ("wrong-train-eval-mode", Severity.WARNING),
    "TL706": ("cannot-overfit-batch", Severity.WARNING),
    "TL707": ("script-error-before-training", Severity.ERROR),
    "TL801": ("load-metric-removed", Severity.ERROR),
    "TL802": ("transformers-adamw-removed", Severity.ERROR),
    "TL804": ("trainer-tokenizer-argument", Severity.ERROR),
    "TL805": ("evaluation-strategy-argument", Severity.ERROR),
}

_OUTCOME_TEXT = {
    "timeout": "the probe timed out",
    "crashed": "the probe's child process died",
}


# ---------------------------------------------------------------- rules


def rule_info(code: str) -> tuple[str, Severity]:
    try:
        from trainlint.rule import get_rule

        rule = get_rule(code)
    except Exception:  # noqa: BLE001  # the registry is optional for the probe
        rule = None
    if rule is not None:
        return rule.name, rule.severity
    return FALLBACK_RULES.get(code, ("probe", Severity.ERROR))


# ---------------------------------------------------------------- sandbox


@dataclasses.dataclass(frozen=True)
class Sandbox:
    kind: str  # "bwrap", "unshare" or "" (none)
    why: str  # for the "not isolated" note
    pid_ns: bool = True  # a PID namespace (some containers refuse the /proc mount it needs)


def project_dir(script: Path) -> Path:
    """The nearest ancestor holding .git or pyproject.toml, else the script's directory."""
    start = script.resolve().parent
    for d in (start, *start.parents):
        if (d / ".git").exists() or (d / "pyproject.toml").exists():
            if d != Path(d.anchor) and d != Path.home():
                return d
            break
    return start


def detect_sandbox() -> Sandbox:
    """bwrap if it works here, else unprivileged namespaces via unshare, else none.
    ``TRAINLINT_PROBE_SANDBOX=bwrap|unshare|none`` restricts the choice (tests, debugging)."""
    return _detect_sandbox(os.environ.get("TRAINLINT_PROBE_SANDBOX", "").strip().lower())


@functools.lru_cache(maxsize=4)
def _detect_sandbox(mode: str) -> Sandbox:
    if mode == "none":
        return Sandbox("", "disabled by TRAINLINT_PROBE_SANDBOX=none")
    reasons = []
    test_dir = tempfile.mkdtemp(prefix="trainlint-sbx-")
    try:
        bwrap = shutil.which("bwrap") if mode in ("", "bwrap") else None
        if mode == "unshare":
            reasons.append("bwrap not wanted (TRAINLINT_PROBE_SANDBOX=unshare)")
        elif bwrap:
            for pid_ns in (True, False):
                cmd = [*_bwrap_prefix(bwrap, Path(test_dir), None, pid_ns),
                       "/bin/sh", "-c", f'! touch "{test_dir}/x" 2>/dev/null']
                if _quick(cmd):
                    return Sandbox("bwrap", "", pid_ns)
            reasons.append("bwrap cannot create namespaces here")
        else:
            reasons.append("no bwrap on PATH")
        unshare = shutil.which("unshare") if mode in ("", "unshare") else None
        if mode == "bwrap":
            reasons.append("unshare not wanted (TRAINLINT_PROBE_SANDBOX=bwrap)")
        elif unshare:
            inner = Path(test_dir) / "w"
            inner.mkdir()
            check = f'! touch "{test_dir}/x" 2>/dev/null && touch "{inner}/ok"'
            for pid_ns in (True, False):
                if _quick(_unshare_prefix(unshare, Path(test_dir), inner, pid_ns) + ["/bin/sh", "-c", check]):
                    return Sandbox("unshare", "", pid_ns)
            reasons.append("unprivileged user/mount/network namespaces unavailable")
        else:
            reasons.append("no unshare on PATH")
    finally:
        shutil.rmtree(test_dir, ignore_errors=True)
    return Sandbox("", ", ".join(reasons))


def _quick(cmd: list[str]) -> bool:
    try:
        return subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


# $1: the directory made read-only; $2 (may be empty): a directory inside it that stays writable.
_UNSHARE_SCRIPT = (
    'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" "$1" || exit 97; '
    'if [ -n "$2" ]; then mount --bind "$2" "$2" && mount -o remount,bind,rw "$2" "$2" || exit 97; fi; '
    'shift 2; exec "$@"'
)


def _unshare_prefix(unshare: str, readonly: Path, writable: Path | None = None, pid_ns: bool = True) -> list[str]:
    # A PID namespace too: when the child (its PID 1) dies, the kernel kills everything the script
    # started, even processes that left the process group with setsid().
    pid = ["--pid", "--fork", "--mount-proc"] if pid_ns else []
    return [unshare, "--net", "--mount", "--map-root-user", *pid, "--",
            "/bin/sh", "-c", _UNSHARE_SCRIPT, "sh", str(readonly), str(writable or "")]


def _bwrap_prefix(bwrap: str, readonly: Path, writable: Path | None, pid_ns: bool) -> list[str]:
    pid = ["--unshare-pid", "--proc", "/proc"] if pid_ns else []
    extra = ["--bind", str(writable), str(writable)] if writable else []
    return [bwrap, "--dev-bind", "/", "/", "--unshare-net", *pid, "--ro-bind", str(readonly), str(readonly),
            *extra, "--die-with-parent", "--"]


def _wrap(sandbox: Sandbox, cmd: list[str], readonly: Path, writable: Path) -> tuple[list[str], str]:
    if not sandbox.kind:
        return cmd, f"not isolated: {sandbox.why}; the script ran with network access and a writable project"
    # The probe's temporary directory stays writable even when it lies inside the project.
    inner = writable if writable.resolve().is_relative_to(readonly.resolve()) else None
    pids = "" if sandbox.pid_ns else " (no PID namespace)"
    if sandbox.kind == "bwrap":
        bwrap = shutil.which("bwrap") or "bwrap"
        return (
            [*_bwrap_prefix(bwrap, readonly, inner, sandbox.pid_ns), *cmd],
            f"isolated (bwrap{pids}): network off, {readonly} read-only",
        )
    unshare = shutil.which("unshare") or "unshare"
    return (
        _unshare_prefix(unshare, readonly, inner, sandbox.pid_ns) + cmd,
        f"isolated (unshare{pids}): network off, {readonly} read-only",
    )


# ---------------------------------------------------------------- run


def _plugins() -> list[str]:
    here = Path(__file__).resolve().parent
    return [f"trainlint.probe.{p.stem}" for p in sorted(here.glob("hooks_*.py"))]


def _child_env(tmp: Path, work: Path, shim: Path, config: Path, events: Path) -> dict[str, str]:
    env = dict(os.environ)
    for key in ("PYTHONHOME", "PYTHONSTARTUP", "PYTHONINSPECT"):
        env.pop(key, None)
    tmpdir = work / "tmp"
    tmpdir.mkdir(parents=True, exist_ok=True)
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
            "TRAINLINT_PROBE_CONFIG": str(config),
            "TRAINLINT_PROBE_EVENTS": str(events),
        }
    )
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(shim) + (os.pathsep + old if old else "")
    return env


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])


def _read_events(path: Path) -> list[dict[str, Any]]:
    events = []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    events.append(json.loads(line))
                except json.JSONDecodeError:
                    continue  # a line cut by the kill
    except OSError:
        pass
    return events


def run(script: Path, static_findings: list[Finding], options: ProbeOptions) -> ProbeReport:
    script = Path(script)
    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="trainlint-probe-"))
    try:
        return _run(script, static_findings, options, tmp, started)
    finally:
        if not os.environ.get("TRAINLINT_PROBE_KEEP"):
            shutil.rmtree(tmp, ignore_errors=True)


def _run(script: Path, static_findings: list[Finding], options: ProbeOptions, tmp: Path, started: float) -> ProbeReport:
    shim = tmp / "shim"
    shim.mkdir()
    (shim / "trainlint").symlink_to(PACKAGE_DIR, target_is_directory=True)
    work = tmp / "work"
    work.mkdir()
    config_path = tmp / "config.json"
    events_path = tmp / "events.jsonl"
    events_path.touch()
    abs_script = script.resolve()
    config = {
        "script": str(abs_script),
        "argv": [str(script), *options.script_args],
        "cwd": os.getcwd(),
        "rows": options.rows,
        "tiny_model": options.tiny_model,
        "overfit": options.overfit,
        "verbose": options.verbose,
        "workdir": str(work),
        "timeout": options.timeout,
        "stackfile": str(tmp / "stack.txt"),
        "plugins": _plugins(),
        "static_codes": sorted({f.code for f in static_findings}),
    }
    config_path.write_text(json.dumps(config), encoding="utf-8")
    python = options.python or sys.executable
    cmd = [python, "-m", "trainlint.probe.child"]
    readonly = project_dir(abs_script)
    sandbox = detect_sandbox()
    cmd, isolation = _wrap(sandbox, cmd, readonly, tmp)
    isolated = isolation.startswith("isolated")
    env = _child_env(tmp, work, shim, config_path, events_path)
    out_path, err_path = tmp / "stdout.txt", tmp / "stderr.txt"
    outcome = ""
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                                    start_new_session=True)
        except OSError as exc:
            report = _report(script, static_findings, [], "crashed", isolated)
            report.notes.insert(0, f"the probe could not start {python}: {exc}")
            return report
        try:
            rc = proc.wait(timeout=options.timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            rc = None
            outcome = "timeout"
        finally:
            _kill_group(proc)  # whatever the script left running in its process group
    events = _read_events(events_path)
    end = next((e for e in reversed(events) if e.get("type") == "end"), None)
    if outcome != "timeout":
        outcome = end.get("outcome", "") if end else "crashed"
    report = _report(script, static_findings, events, outcome, isolated)
    elapsed = time.monotonic() - started
    notes = [isolation]
    versions: dict[str, str] = {}
    for e in events:
        if e.get("type") in ("hello",):
            versions["python"] = e.get("python", "?")
        if e.get("type") == "versions":
            versions.update(e.get("versions") or {})
    if versions:
        notes.append("probe environment: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    last_phase = next((e.get("name") for e in reversed(events) if e.get("type") == "phase"), None)
    if outcome == "timeout":
        where = f" during the {last_phase} check" if last_phase else (" while the script ran (before training)")
        at = _hung_at(tmp / "stack.txt", abs_script)
        if at:
            where += f", at {script.name}:{at[0]}" + (f" (`{at[1]}`)" if at[1] else "")
        notes.append(f"probe timed out after {options.timeout:g}s{where}: the process group was killed")
        stack = _tail(tmp / "stack.txt", 25)
        if stack:
            report.details.append("stacks shortly before the timeout:\n" + stack)
        for name, path in (("stdout", out_path), ("stderr", err_path)):
            tail = _tail(path, 5)
            if tail and not options.verbose:
                report.details.append(f"script {name} (tail):\n{tail}")
    elif outcome == "crashed":
        notes.append(f"the probe's child process died (exit status {rc}) without a result")
        tail = _tail(err_path)
        if tail:
            report.details.append("stderr (tail):\n" + tail)
    elif end is not None and end.get("text"):
        notes.append(end["text"])
    report.notes[:0] = notes
    report.notes.append(f"probe wall time {elapsed:.1f}s")
    if options.verbose:
        for name, path in (("stdout", out_path), ("stderr", err_path)):
            tail = _tail(path)
            if tail:
                report.details.append(f"script {name} (tail):\n{tail}")
    return report


def _hung_at(stack_file: Path, script: Path) -> tuple[int, str] | None:
    """The line of the user's script in the main thread's stack dumped by faulthandler."""
    try:
        text = stack_file.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    blocks = text.split("\n\n")
    main = next((b for b in blocks if "most recent call first" in b and ("Current thread" in b or "Thread" in b)), text)
    for b in blocks:
        if b.lstrip().startswith("Current thread") or "MainThread" in b:
            main = b
    for line in main.splitlines():
        line = line.strip()
        if line.startswith("File ") and f'"{script}"' in line:
            try:
                lineno = int(line.split(", line ")[1].split()[0])
            except (IndexError, ValueError):
                continue
            src = ""
            try:
                src = script.read_text(encoding="utf-8").splitlines()[lineno - 1].strip()
            except (OSError, IndexError):
                pass
            return lineno, src
    return None


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, OSError):
        pass
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:
        pass


# ---------------------------------------------------------------- findings


def _position(script: Path, line: int | None) -> tuple[Position, Position]:
    row = int(line) if line else 1
    text = ""
    try:
        with open(script, encoding="utf-8") as f:
            for i, t in enumerate(f, 1):
                if i == row:
                    text = t.rstrip("\n")
                    break
    except OSError:
        pass
    start_col = len(text) - len(text.lstrip()) + 1 if text.strip() else 1
    return Position(row, start_col), Position(row, max(len(text) + 1, start_col))


def _report(script: Path, static_findings: list[Finding], events: list[dict[str, Any]], outcome: str,
            isolated: bool) -> ProbeReport:
    probe_findings = [e for e in events if e.get("type") == "finding"]
    checked: set[str] = set()
    for e in events:
        if e.get("type") == "checked":
            checked.update(e.get("codes") or ())
    end = next((e for e in reversed(events) if e.get("type") == "end"), None)
    stop_text = (end or {}).get("text") or _OUTCOME_TEXT.get(outcome, "the run stopped before this point")
    used: set[int] = set()

    def matches(f: Finding, e: dict[str, Any]) -> bool:
        return e.get("code") == f.code or f.code in (e.get("confirms") or ())

    # Pass 1: an observation on the static finding's own line; pass 2: any unused observation of its code.
    chosen: dict[int, int] = {}
    for k, f in enumerate(static_findings):
        for i, e in enumerate(probe_findings):
            if i not in used and matches(f, e) and e.get("line") == f.start.row:
                chosen[k] = i
                used.add(i)
                break
    for k, f in enumerate(static_findings):
        if k in chosen:
            continue
        for i, e in enumerate(probe_findings):
            if i not in used and matches(f, e):
                chosen[k] = i
                used.add(i)
                break
    out: list[Finding] = []
    for k, f in enumerate(static_findings):
        if k in chosen:
            e = probe_findings[chosen[k]]
            evidence = str(e.get("evidence") or e.get("message", ""))
            out.append(dataclasses.replace(f, probe=ProbeOutcome(ProbeStatus.CONFIRMED, evidence)))
        elif f.code in checked:
            out.append(dataclasses.replace(f, probe=ProbeOutcome(ProbeStatus.NOT_REPRODUCED, "the run got past this point")))
        else:
            out.append(dataclasses.replace(f, probe=ProbeOutcome(ProbeStatus.NOT_REACHED, stop_text)))
    filename = str(script)
    for i, e in enumerate(probe_findings):
        if i in used:
            continue
        code = str(e.get("code", "TL707"))
        name, severity = rule_info(code)
        if e.get("severity"):
            try:
                severity = Severity(e["severity"])
            except ValueError:
                pass
        start, end_pos = _position(script, e.get("line"))
        out.append(
            Finding(
                code=code,
                name=name,
                message=str(e.get("message", "")),
                severity=severity,
                filename=filename,
                start=start,
                end=end_pos,
                probe=ProbeOutcome(ProbeStatus.CONFIRMED, str(e.get("evidence") or e.get("message", ""))),
            )
        )
    report = ProbeReport(findings=out, isolated=isolated, outcome=outcome)
    for e in events:
        if e.get("type") == "note":
            report.notes.append(str(e.get("text", "")))
        elif e.get("type") == "detail":
            report.details.append(str(e.get("text", "")))
        elif e.get("type") == "incomplete":
            line = f"{e.get('check') or 'a check'}: {e.get('reason') or 'no reason given'}"
            report.incomplete.append(line)
            report.notes.append(f"probe check could not complete: {line}")
    return report
