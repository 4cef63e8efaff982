"""GitHub Actions workflow commands: ``::error file=..,line=..,col=..::message``."""

from __future__ import annotations

from typing import TextIO

from trainlint.findings import Finding
from trainlint.formats import Run

_LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def _data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _prop(s: str) -> str:
    return _data(s).replace(":", "%3A").replace(",", "%2C")


def write(findings: list[Finding], out: TextIO, run: Run) -> None:
    for f in findings:
        level = _LEVEL[f.severity.value]
        props = (
            f"file={_prop(f.filename)},line={f.start.row},col={f.start.column},"
            f"endLine={f.end.row},endColumn={f.end.column},title={_prop(f.code + ' ' + f.name)}"
        )
        status = f" [probe: {f.probe.status.value}{': ' + f.probe.evidence if f.probe.evidence else ''}]" if f.probe else ""
        out.write(f"::{level} {props}::{_data(f.code + ' ' + f.message + status)}\n")
