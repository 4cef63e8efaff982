"""``path:line:col: CODE [severity] message`` — one line per finding (``CODE [*] [severity]`` when
``--fix`` can fix it), then a summary. The ``path:line:col: CODE`` prefix is the same as ruff's."""

from __future__ import annotations

from typing import TextIO

from trainlint.findings import Finding, ProbeStatus, Severity, fails_run
from trainlint.fixes import applicable
from trainlint.formats import Run


def location(f: Finding) -> str:
    cell = f"cell {f.cell}:" if f.cell is not None else ""
    return f"{f.filename}:{cell}{f.start.row}:{f.start.column}"


def write(findings: list[Finding], out: TextIO, run: Run) -> None:
    static = [f for f in findings if f.probe is None]
    probed = [f for f in findings if f.probe is not None]
    for f in static:
        fixable = " [*]" if applicable(f.fix, run.unsafe_fixes) else ""
        out.write(f"{location(f)}: {f.code}{fixable} [{f.severity.value}] {f.message}\n")
    if run.probed:
        write_probe_section(probed, out, run)
    out.write(summary(findings, run) + "\n")


def write_probe_section(probed: list[Finding], out: TextIO, run: Run) -> None:
    out.write("\nprobe:\n")
    for note in run.probe_notes:
        out.write(f"  {note}\n")
    for f in probed:
        if f.probe is None:
            continue
        evidence = f" — {f.probe.evidence}" if f.probe.evidence else ""
        out.write(f"{location(f)}: {f.code} [{f.probe.status.value}] {f.message}{evidence}\n")
    if run.verbose:
        for d in run.probe_details:
            out.write(d.rstrip("\n") + "\n")


def summary(findings: list[Finding], run: Run) -> str:
    fixed = f"Fixed {run.fixed} finding{'s' if run.fixed != 1 else ''}." if run.fixed else ""
    if not findings and run.probed and run.probe_incomplete:
        return f"No findings, but not all checks ran: {run.probe_incomplete}."
    if not findings:
        if fixed:
            return f"{fixed} All other checks passed!"
        if not run.files_checked:
            return "No files to check."
        if run.not_analysed >= run.files_checked:
            which = "the file names no" if run.files_checked == 1 else f"none of the {run.files_checked} files names an"
            return (f"No training code: {which} ML framework (torch, tensorflow, keras, transformers, "
                    "datasets, ...), so nothing was analysed.")
        if run.not_analysed:
            n = run.not_analysed
            return (f"All checks passed! ({n} of the {run.files_checked} files name{'s' if n == 1 else ''} no ML "
                    f"framework and {'was' if n == 1 else 'were'} not analysed.)")
        return "All checks passed!"
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.severity.value] = counts.get(f.severity.value, 0) + 1
    parts = ", ".join(f"{n} {sev}{'s' if n != 1 and sev != 'info' else ''}" for sev, n in sorted(counts.items(), key=lambda kv: Severity(kv[0]).rank))
    files = len({f.filename for f in findings})
    fixable = sum(1 for f in findings if applicable(f.fix, run.unsafe_fixes))
    hidden = sum(1 for f in findings if f.fix is not None and not applicable(f.fix, run.unsafe_fixes))
    command = "trainlint --fix --unsafe-fixes" if run.unsafe_fixes else "trainlint --fix"
    tail = f"\n[*] {fixable} fixable with `{command}`." if fixable else ""
    if hidden:
        tail += (f"\n({hidden} hidden fix{'es' if hidden != 1 else ''} can be enabled with the "
                 "`--unsafe-fixes` option.)")
    below = sum(1 for f in findings if not fails_run(f, run.fail_on)
                and (f.probe is None or f.probe.status is not ProbeStatus.NOT_REPRODUCED))
    if below:
        tail += (f"\n{below} finding{'s' if below != 1 else ''} below `fail-on = \"{run.fail_on.value}\"` "
                 f"({'do' if below != 1 else 'does'} not change the exit code).")
    unreproduced = sum(1 for f in findings if f.probe is not None and f.probe.status is ProbeStatus.NOT_REPRODUCED)
    if unreproduced:
        tail += (f"\n{unreproduced} finding{'s' if unreproduced != 1 else ''} not reproduced by the probe "
                 f"({'do' if unreproduced != 1 else 'does'} not change the exit code).")
    if run.probed and run.probe_incomplete:
        tail += f"\nNot all checks ran: {run.probe_incomplete}."
    if fixed:
        tail += f"\n{fixed}"
    return f"Found {len(findings)} finding{'s' if len(findings) != 1 else ''} ({parts}) in {files} file{'s' if files != 1 else ''}.{tail}"
