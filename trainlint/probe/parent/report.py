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
from trainlint.probe import ProbeOptions, ProbeReport, protocol
from trainlint.probe.child.sandbox_init import SETUP_FAILED
from trainlint.probe.parent.channel import Collected

_OUTCOME_TEXT = {
    "timeout": "the probe timed out",
    "crashed": "the probe's child process died",
    "did-not-stop": "the script kept running after the probe stopped it",
    "asset-missing": "a model or dataset the script loads is not in the local cache",
    "protocol-mismatch": "the probe's child speaks another version of the probe protocol",
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


def _outcome(got: Collected) -> tuple[str, protocol.End | None]:
    """How the run ended, from what the parent saw: the first `end` event, the exit status, the clock.
    An `end` is only believed when the process then exited on its own with status 0."""
    end = next((e for e in got.events if isinstance(e, protocol.End)), None)
    if got.foreign_protocol is not None:
        return "protocol-mismatch", None
    if got.timed_out:
        return "timeout", end
    if got.lingered:
        return "did-not-stop", end
    if end is None:
        return "crashed", None
    outcome = end.outcome or "crashed"
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
    if outcome == "protocol-mismatch":
        report = build_report(script, static_findings, [], outcome, isolated)
        report.notes[:0] = [
            _isolation_note(isolation, got.sandbox),
            f"the probe's child speaks version {got.foreign_protocol} of the probe protocol, this trainlint "
            f"version {protocol.PROTOCOL_VERSION} (is another trainlint installed for {_clean(options.python or 'the interpreter', 200)}?): "
            "the run was stopped and nothing it reported is used"]
        report.notes.append(f"probe wall time {time.monotonic() - started:.1f}s")
        return report
    report = build_report(script, static_findings, got.events, outcome, isolated)
    notes = [_isolation_note(isolation, got.sandbox)]
    versions: dict[str, str] = {}
    for e in got.events:
        if isinstance(e, protocol.Hello):
            versions["python"] = _clean(e.python, 40)
        if isinstance(e, protocol.Versions):
            versions.update({_clean(k, 40): _clean(v, 40) for k, v in e.versions.items()})
    if versions:
        notes.append("probe environment: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    last_phase = next((e.name for e in reversed(got.events) if isinstance(e, protocol.Phase)), None)
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
        notes.append("the script kept running after the probe stopped it at training (it reported its end but did "
                     "not exit: was os._exit replaced?): killed; nothing of this run is trusted as all clear")
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
    elif end is not None and end.text:
        notes.append(_clean(end.text))
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


def _isolation_note(isolation: str, sandbox: protocol.Sandbox | None) -> str:
    """The isolation line, with what the sandbox's init reported it could not do."""
    if not isolation.startswith("isolated (unshare)") or sandbox is None:
        return isolation
    if not sandbox.pid_ns:
        isolation = isolation.replace("(unshare)", "(unshare, no PID namespace)")
    writable = list(sandbox.writable)
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


def build_report(script: Path, static_findings: list[Finding], events: list[protocol.Event], outcome: str,
                 isolated: bool) -> ProbeReport:
    """Every static finding with its probe status (the events that confirm, clear or leave it open),
    then the findings only the run could see, the notes, details and incomplete checks."""
    probe_findings = [e for e in events if isinstance(e, protocol.Finding)]
    checked: set[str] = set()
    for e in events:
        if isinstance(e, protocol.Checked):
            checked.update(e.codes)
    incomplete: dict[str, str] = {}
    for e in events:
        if isinstance(e, protocol.Incomplete):
            for code in e.codes:
                incomplete.setdefault(code, _clean(f"{e.check or 'a check'}: {e.reason}"))
    end = next((e for e in events if isinstance(e, protocol.End)), None)
    if outcome in _OUTCOME_TEXT:
        stop_text = _OUTCOME_TEXT[outcome]
    else:
        stop_text = _clean((end.text if end is not None else "") or "the run stopped before this point")
    used: set[int] = set()

    def matches(f: Finding, e: protocol.Finding) -> bool:
        return e.code == f.code or f.code in e.confirms

    # Pass 1: an observation on the static finding's own line; pass 2: any unused observation of its code.
    chosen: dict[int, int] = {}
    for k, f in enumerate(static_findings):
        for i, e in enumerate(probe_findings):
            if i not in used and matches(f, e) and e.line == f.start.row:
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
            evidence = _clean(e.evidence or e.message)
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
        code = e.code or "TL707"
        name, severity = rule_info(code)
        if e.severity:
            try:
                severity = Severity(e.severity)
            except ValueError:
                pass
        start, end_pos = _position(script, e.line)
        out.append(
            Finding(
                code=code,
                name=name,
                message=_clean(e.message),
                severity=severity,
                filename=filename,
                start=start,
                end=end_pos,
                probe=ProbeOutcome(ProbeStatus.CONFIRMED, _clean(e.evidence or e.message)),
            )
        )
    report = ProbeReport(findings=out, isolated=isolated, outcome=outcome)
    for ev in events:
        if isinstance(ev, protocol.Note):
            report.notes.append(_clean(ev.text))
        elif isinstance(ev, protocol.Detail):
            report.details.append(_clean_block(ev.text))
        elif isinstance(ev, protocol.Incomplete):
            line = _clean(f"{ev.check or 'a check'}: {ev.reason or 'no reason given'}")
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
