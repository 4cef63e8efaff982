"""What the IPython extension shows under a cell: one MIME bundle per output, ``text/html`` for the front
ends that render it (JupyterLab, Notebook, VS Code, Colab) and ``text/plain`` for the others (the
terminal IPython). Both say the same: code, severity, the line in the cell, the message, the rule's
link; for the live probe, the status of each finding and its evidence, as ``trainlint --probe`` says it.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trainlint.findings import Finding
    from trainlint.probe import ProbeReport

_COLOURS = {"error": "#c62828", "warning": "#b26a00", "info": "#1565c0"}
_STATUS_COLOURS = {"confirmed": "#c62828", "not reproduced": "#2e7d32", "not reached": "#6d6d6d",
                   "not checked": "#6d6d6d"}
_STYLE = "font-family:var(--jp-code-font-family,monospace);font-size:90%;border-collapse:collapse;margin:2px 0"
_CELL = "padding:1px 8px 1px 0;text-align:left;vertical-align:top"


def _where(f: Finding, label: Callable[[Finding], str] | None) -> str:
    where = f"line {f.start.row}"
    return f"{label(f)} {where}" if label is not None else where


def findings_bundle(findings: list[Finding], title: str, label: Callable[[Finding], str] | None = None,
                    footer: str = "") -> dict[str, str]:
    """The findings of a cell (``label`` None: rows are lines of the cell) or of the session."""
    lines = [title]
    for f in findings:
        lines.append(f"  {_where(f, label)}: {f.code} [{f.severity.value}] {f.message}  ({f.url})")
    if footer:
        lines.append(footer)
    rows = []
    for f in findings:
        colour = _COLOURS.get(f.severity.value, "inherit")
        rows.append(
            f"<tr><td style='{_CELL}'><a href='{html.escape(f.url, quote=True)}' target='_blank' rel='noopener'>"
            f"{html.escape(f.code)}</a></td>"
            f"<td style='{_CELL};color:{colour}'>{html.escape(f.severity.value)}</td>"
            f"<td style='{_CELL};white-space:nowrap'>{html.escape(_where(f, label))}</td>"
            f"<td style='{_CELL}'>{html.escape(f.message)}</td></tr>"
        )
    body = (f"<div class='trainlint-findings'><div><b>{html.escape(title)}</b></div>"
            f"<table style='{_STYLE}'>{''.join(rows)}</table>"
            + (f"<div>{html.escape(footer)}</div>" if footer else "") + "</div>")
    return {"text/plain": "\n".join(lines), "text/html": body}


def probe_bundle(report: ProbeReport, title: str, label: Callable[[Finding], str] | None = None) -> dict[str, str]:
    """A live probe's report: the notes, then each finding with its probe status and evidence."""
    lines = [title]
    lines += [f"  {n}" for n in report.notes]
    rows = []
    for f in report.findings:
        status = f.probe.status.value if f.probe is not None else "static"
        evidence = f.probe.evidence if f.probe is not None else ""
        where = _where(f, label) if f.cell is not None else "probe"
        lines.append(f"  {where}: {f.code} [{status}] {f.message}" + (f" — {evidence}" if evidence else "")
                     + f"  ({f.url})")
        colour = _STATUS_COLOURS.get(status, "inherit")
        rows.append(
            f"<tr><td style='{_CELL}'><a href='{html.escape(f.url, quote=True)}' target='_blank' rel='noopener'>"
            f"{html.escape(f.code)}</a></td><td style='{_CELL};color:{colour};white-space:nowrap'>"
            f"{html.escape(status)}</td><td style='{_CELL};white-space:nowrap'>{html.escape(where)}</td>"
            f"<td style='{_CELL}'>{html.escape(f.message)}"
            + (f"<br><span style='opacity:.75'>{html.escape(evidence)}</span>" if evidence else "")
            + "</td></tr>"
        )
    verdict = probe_verdict(report)
    lines.append(verdict)
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in report.notes)
    body = (f"<div class='trainlint-probe'><div><b>{html.escape(title)}</b></div>"
            + (f"<ul style='margin:2px 0'>{notes}</ul>" if notes else "")
            + (f"<table style='{_STYLE}'>{''.join(rows)}</table>" if rows else "")
            + f"<div><b>{html.escape(verdict)}</b></div></div>")
    return {"text/plain": "\n".join(lines), "text/html": body}


def probe_verdict(report: ProbeReport) -> str:
    confirmed = [f for f in report.findings if f.probe is not None and f.probe.status.value == "confirmed"]
    if confirmed:
        codes = ", ".join(dict.fromkeys(f.code for f in confirmed))
        return f"{len(confirmed)} confirmed by the live probe: {codes}."
    if not report.complete:
        why = "; ".join(report.incomplete) or report.outcome
        return f"Nothing confirmed, but not all checks ran: {why}."
    return "All checks passed on the live objects."
