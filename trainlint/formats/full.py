"""Each finding with a source excerpt, the fix hint and the link to the rule's document."""

from __future__ import annotations

from typing import TextIO

from trainlint.findings import Finding
from trainlint.formats import Run
from trainlint.formats.concise import location, summary, write_probe_section


def write(findings: list[Finding], out: TextIO, run: Run) -> None:
    for f in findings:
        if f.probe is not None:
            continue
        out.write(f"{location(f)}: {f.code} [{f.severity.value}] {f.message}\n")
        lines = run.source_lines(f.filename) if f.cell is None else []
        if lines and 1 <= f.start.row <= len(lines):
            first = max(1, f.start.row - 1)
            last = min(len(lines), max(f.start.row, min(f.end.row, f.start.row + 3)) + 1)
            width = len(str(last))
            pad = " " * width
            out.write(f"{pad} |\n")
            for n in range(first, last + 1):
                out.write(f"{n:>{width}} | {lines[n - 1].rstrip()}\n")
                if n == f.start.row:
                    end_col = f.end.column if f.end.row == f.start.row else len(lines[n - 1].rstrip()) + 1
                    carets = "^" * max(1, end_col - f.start.column)
                    out.write(f"{pad} | {' ' * (f.start.column - 1)}{carets} {f.code}\n")
            out.write(f"{pad} |\n")
        if f.hint:
            out.write(f"  = fix: {f.hint}\n")
        if f.fix is not None:
            out.write(f"  = autofix ({f.fix.applicability.value}): {f.fix.message}\n")
            if lines:
                from trainlint.fixes import preview

                for line in preview(f, run.sources.get(f.filename, "")):
                    out.write(f"    {line}\n")
        out.write(f"  = docs: {f.url}\n\n")
    if run.probed:
        write_probe_section([f for f in findings if f.probe is not None], out, run)
    out.write(summary(findings, run) + "\n")
