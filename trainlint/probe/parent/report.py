"""The probe's report (parent side): from what the parent saw of the child (its events, exit status and
clock: ``channel.Collected``) to a :class:`~trainlint.probe.ProbeReport`: how the run ended, the
probe status of every static finding, the findings only the run could see, the notes.
"""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path
from typing import Any

from trainlint.findings import Finding, Position, ProbeOutcome, ProbeStatus, Severity
from trainlint.probe import ProbeOptions, ProbeReport
from trainlint.probe.child.sandbox_init import SETUP_FAILED
from trainlint.probe.parent.channel import Collected

_OUTCOME_TEXT = {
    "timeout": "the probe timed out",
    "crashed": "the probe's child process died",
    "did-not-stop": "the script kept running after the probe stopped it",
    "asset-missing": "a model or dataset the script loads is not in the local cache",
}
#: Notes the parent writes itself: a line from the child that starts like one of them is marked as
#: the child's, so a script cannot print a fake isolation line or verdict.
_PARENT_WORDS = ("isolated", "not isolated", "sandbox", "probe wall time", "probe timed out", "the probe's child",
                 "the probe could not", "all checks", "trainlint")


def rule_info(code: str) -> tuple[str, Severity]:
    from trainlint.rule import get_rule

    rule = get_rule(code)
    if rule is not None:
        return rule.name, rule.severity
    return "probe", Severity.ERROR


def _clean(text: Any, limit: int = 2000) -> str:
    """A line from the child as the report shows it: one line, printable, bounded, and never looking
    like one of the parent's own notes."""
    line = " ".join(str(text).split())
    line = "".join(ch if ch.isprintable() else "?" for ch in line)
    if len(line) > limit:
        line = line[:limit] + " [...]"
    if line.lower().lstrip("[(*- ").startswith(_PARENT_WORDS):
        line = "(from the script's process) " + line
    return line


def _outcome(got: Collected) -> tuple[str, dict[str, Any] | None]:
    """How the run ended, from what the parent saw: the first `end` event, the exit status, the clock.
    An `end` is only believed when the process then exited on its own with status 0."""
    end = next((e for e in got.events if e.get("type") == "end"), None)
    if got.timed_out:
        return "timeout", end
    if got.lingered:
        return "did-not-stop", end
    if end is None:
        return "crashed", None
    outcome = str(end.get("outcome") or "crashed")
    if got.returncode != 0:
        return "crashed", end
    return outcome, end


def finish(script: Path, abs_script: Path, static_findings: list[Finding], options: ProbeOptions, got: Collected,
            isolation: str, isolated: bool, started: float) -> ProbeReport:
    outcome, end = _outcome(got)
    if got.sandbox is None and got.returncode == SETUP_FAILED and not got.events and isolated is not None:
        report = build_report(script, static_findings, [], "crashed", isolated)
        tail = got.stderr.tail(5, prefix="  ")
        report.notes[:0] = [isolation, "the sandbox could not be set up, the script did not run" +
                            (":\n" + tail if tail else "")]
        report.notes.append(f"probe wall time {time.monotonic() - started:.1f}s")
        return report
    report = build_report(script, static_findings, got.events, outcome, isolated)
    notes = [_isolation_note(isolation, got.sandbox)]
    versions: dict[str, str] = {}
    for e in got.events:
        if e.get("type") == "hello":
            versions["python"] = _clean(e.get("python", "?"), 40)
        if e.get("type") == "versions" and isinstance(e.get("versions"), dict):
            versions.update({_clean(k, 40): _clean(v, 40) for k, v in e["versions"].items()})
    if versions:
        notes.append("probe environment: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    last_phase = next((e.get("name") for e in reversed(got.events) if e.get("type") == "phase"), None)
    if outcome == "timeout":
        where = f" during the {_clean(last_phase, 60)} check" if last_phase else " while the script ran (before training)"
        at = _hung_at(got.stacks, abs_script)
        if at:
            where += f", at {script.name}:{at[0]}" + (f" (`{at[1]}`)" if at[1] else "")
        notes.append(f"probe timed out after {options.timeout:g}s{where}: the sandbox and every process in it were killed")
        stack = "\n".join(got.stacks.rstrip().splitlines()[-25:])
        if stack:
            report.details.append("stacks shortly before the timeout:\n" + stack)
        for name, ring in (("stdout", got.stdout), ("stderr", got.stderr)):
            tail = ring.tail(5)
            if tail and not options.verbose:
                report.details.append(f"script {name} (last lines):\n{tail}")
    elif outcome == "did-not-stop":
        notes.append(f"the script kept running after the probe stopped it at training (it reported its end but did "
                     f"not exit: was os._exit replaced?): killed; nothing of this run is trusted as all clear")
    elif outcome == "crashed":
        status = got.returncode
        why = f"exit status {status}" if status is None or status < 128 else f"killed by signal {status - 128}"
        if end is not None:
            notes.append(f"the probe's child process ended with {why} after reporting its result: not trusted")
        else:
            notes.append(f"the probe's child process died ({why}) without a result")
        if options.memory_mb:
            notes.append(f"(the probe's memory limit was {options.memory_mb} MB: --probe-memory)")
        tail = got.stderr.tail()
        if tail:
            report.details.append("script stderr (last lines):\n" + tail)
    elif end is not None and end.get("text"):
        notes.append(_clean(end["text"]))
    if got.forged:
        notes.append(f"{got.forged} line{'s' if got.forged != 1 else ''} on the probe's channel did not come from the "
                     "probe (ignored): the script wrote to it")
    if got.dropped:
        notes.append(f"{got.dropped} oversized event{'s' if got.dropped != 1 else ''} from the child dropped")
    for name, ring in (("stdout", got.stdout), ("stderr", got.stderr)):
        if ring.total > ring.limit:
            notes.append(f"the script wrote {ring.total / 1e6:.1f} MB to {name}; only the last "
                         f"{ring.limit / 1e6:.0f} MB were kept")
    report.notes[:0] = notes
    report.notes.append(f"probe wall time {time.monotonic() - started:.1f}s")
    if options.verbose:
        for name, ring in (("stdout", got.stdout), ("stderr", got.stderr)):
            tail = ring.tail()
            if tail:
                report.details.append(f"script {name} (last lines):\n{tail}")
    return report


def _isolation_note(isolation: str, sandbox: dict[str, Any] | None) -> str:
    """The isolation line, with what the sandbox's init reported it could not do."""
    if not isolation.startswith("isolated (unshare)") or sandbox is None:
        return isolation
    if not sandbox.get("pid_ns", True):
        isolation = isolation.replace("(unshare)", "(unshare, no PID namespace)")
    writable = [str(w) for w in sandbox.get("writable") or ()]
    if writable:
        isolation += "; still writable: " + ", ".join(writable[:10])
    return isolation


def _hung_at(text: str, script: Path) -> tuple[int, str] | None:
    """The line of the user's script in the main thread's stack dumped by faulthandler (the thread that
    runs the child's ``main``; else any thread in the script)."""
    blocks = [b for b in text.split("\n\n") if "most recent call first" in b]
    mains = [b for b in blocks if "in main" in b and os.path.join("child", "main.py") in b]
    main = next((b for b in mains + blocks if f'"{script}"' in b), "")
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


def build_report(script: Path, static_findings: list[Finding], events: list[dict[str, Any]], outcome: str,
            isolated: bool) -> ProbeReport:
    probe_findings = [e for e in events if e.get("type") == "finding"]
    checked: set[str] = set()
    for e in events:
        if e.get("type") == "checked":
            checked.update(e.get("codes") or ())
    incomplete: dict[str, str] = {}
    for e in events:
        if e.get("type") == "incomplete":
            for code in e.get("codes") or ():
                incomplete.setdefault(str(code), _clean(f"{e.get('check') or 'a check'}: {e.get('reason') or ''}"))
    end = next((e for e in events if e.get("type") == "end"), None)
    if outcome in _OUTCOME_TEXT:
        stop_text = _OUTCOME_TEXT[outcome]
    else:
        stop_text = _clean((end or {}).get("text") or "the run stopped before this point")
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
            evidence = _clean(e.get("evidence") or e.get("message", ""))
            # What the source could not tell (an info finding), the run has shown: the rule's own
            # severity applies, so a confirmed bug fails the run whatever `fail-on` says.
            severity = min(f.severity, rule_info(f.code)[1], key=lambda s: s.rank)
            out.append(dataclasses.replace(f, severity=severity,
                                           probe=ProbeOutcome(ProbeStatus.CONFIRMED, evidence)))
        elif f.code in incomplete:
            out.append(dataclasses.replace(f, probe=ProbeOutcome(ProbeStatus.NOT_REACHED,
                                                                 f"the check could not complete: {incomplete[f.code]}")))
        elif f.code in checked:
            out.append(dataclasses.replace(f, probe=ProbeOutcome(ProbeStatus.NOT_REPRODUCED, "the run got past this point")))
        elif outcome == "reached-training" and not _has_probe_check(f.code):
            # Training was reached: the probe did not stop before this point, it has no check for it.
            out.append(dataclasses.replace(f, probe=ProbeOutcome(ProbeStatus.NOT_CHECKED,
                                                                 "the run reached training; the probe has no check for this code")))
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
                message=_clean(e.get("message", "")),
                severity=severity,
                filename=filename,
                start=start,
                end=end_pos,
                probe=ProbeOutcome(ProbeStatus.CONFIRMED, _clean(e.get("evidence") or e.get("message", ""))),
            )
        )
    report = ProbeReport(findings=out, isolated=isolated, outcome=outcome)
    for e in events:
        if e.get("type") == "note":
            report.notes.append(_clean(e.get("text", "")))
        elif e.get("type") == "detail":
            report.details.append(_clean_block(e.get("text", "")))
        elif e.get("type") == "incomplete":
            line = _clean(f"{e.get('check') or 'a check'}: {e.get('reason') or 'no reason given'}")
            report.incomplete.append(line)
            report.notes.append(f"probe check could not complete: {line}")
    return report


def _has_probe_check(code: str) -> bool:
    from trainlint.rule import get_rule

    rule = get_rule(code)
    return rule is None or bool(rule.probe)


def _clean_block(text: Any, limit: int = 20000) -> str:
    """A multi-line detail from the child (a decoded example, a plot): bounded, printable lines."""
    lines = str(text)[:limit].splitlines()
    return "\n".join("".join(ch if ch.isprintable() or ch == "\t" else "?" for ch in line)[:1000] for line in lines)
