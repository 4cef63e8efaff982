"""Reviewdog Diagnostic Format, JSON (``reviewdog -f=rdjson``): one ``DiagnosticResult`` with a
diagnostic per finding, its rule code and documentation URL, and the fix's edits as ``suggestions``
(reviewdog posts them as suggested changes on the pull request).

Reviewdog counts columns in UTF-8 bytes (1-based, end exclusive); trainlint counts characters, so
columns are converted with the file's text. Notebook findings carry the cell in the message and no
range (their rows are within a cell, not the ``.ipynb`` file) and no suggestions.
"""

from __future__ import annotations

import json
from typing import TextIO

from trainlint.docs import DOCS_URL
from trainlint.findings import Finding, Position
from trainlint.formats import Run

_SEVERITY = {"error": "ERROR", "warning": "WARNING", "info": "INFO"}
SOURCE = {"name": "trainlint", "url": DOCS_URL.split("/blob/", 1)[0]}


def _position(p: Position, lines: list[str]) -> dict:
    col = p.column
    if 0 < p.row <= len(lines):
        col = len(lines[p.row - 1][: p.column - 1].encode("utf-8")) + 1
    return {"line": p.row, "column": col}


def _range(start: Position, end: Position, lines: list[str]) -> dict:
    return {"start": _position(start, lines), "end": _position(end, lines)}


def diagnostic(f: Finding, run: Run) -> dict:
    message = f.message + (f" (fix: {f.hint})" if f.hint else "")
    d: dict = {
        "message": message if f.cell is None else f"cell {f.cell}, line {f.start.row}: {message}",
        "location": {"path": f.filename},
        "severity": _SEVERITY[f.severity.value],
        "source": SOURCE,
        "code": {"value": f.code, "url": f.url},
    }
    if f.cell is not None:
        return d
    lines = run.source_lines(f.filename)
    d["location"]["range"] = _range(f.start, f.end, lines)
    if f.fix is not None:
        d["suggestions"] = [{"range": _range(e.start, e.end, lines), "text": e.content} for e in f.fix.edits]
    return d


def write(findings: list[Finding], out: TextIO, run: Run) -> None:
    result = {
        "source": SOURCE,
        "severity": _SEVERITY[min((f.severity for f in findings), key=lambda s: s.rank).value] if findings else "INFO",
        "diagnostics": [diagnostic(f, run) for f in findings],
    }
    json.dump(result, out, indent=2, ensure_ascii=False)
    out.write("\n")
