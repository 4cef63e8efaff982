"""Reviewdog Diagnostic Format, JSON (``reviewdog -f=rdjson``): one ``DiagnosticResult`` with a
diagnostic per finding, its rule code and documentation URL, and the fix as a line-based
``suggestion`` (reviewdog posts it as a suggested change on the pull request).

Reviewdog counts columns in UTF-8 bytes (1-based, end exclusive); trainlint counts characters, so
columns are converted with the file's text. Notebook findings carry the cell in the message and no
range (their rows are within a cell, not the ``.ipynb`` file) and no suggestions.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import TextIO

from trainlint.docs import DOCS_URL
from trainlint.findings import Edit, Finding, Position
from trainlint.fixes import apply_fixes
from trainlint.formats import Run

#: edits at most this many lines apart make one suggestion
_NEAR = 3

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
        suggestion, elsewhere = _suggestion(f, run.sources.get(f.filename, ""))
        if suggestion is not None:
            d["suggestions"] = [suggestion]
        if elsewhere:
            d["message"] += f" (the fix also {'; '.join(elsewhere)}: `trainlint --fix` applies it whole)"
    return d


def _rows(e: Edit) -> tuple[int, int]:
    """The lines an edit replaces (an edit ending at column 1 ends with the line before)."""
    last = e.end.row - 1 if e.end.column == 1 and e.end.row > e.start.row else e.end.row
    return e.start.row, max(last, e.start.row)


def _describe(e: Edit) -> str:
    text = e.content.strip()
    if e.start == e.end and text and "\n" not in text:
        return f"adds `{text}` at line {e.start.row}"
    if not e.content and e.start.column == 1 and e.end.column == 1:
        return f"deletes line {e.start.row}" if e.end.row == e.start.row + 1 else f"deletes lines {e.start.row}-{e.end.row - 1}"
    return f"edits line {e.start.row}"


def _suggestion(f: Finding, source: str) -> tuple[dict | None, list[str]]:
    """One line-based suggestion: the lines the fix's edits near the finding cover, as they read once
    fixed. Reviewdog's GitHub reporter posts a suggestion only when its lines are those of the
    comment, so a fix is one suggestion; edits far from the finding (an import at the top) are named
    in the message instead. Returns the suggestion and what the edits left out do."""
    if f.fix is None:
        return None, []
    fix = f.fix
    edits = sorted(fix.edits, key=lambda e: (e.start, e.end))
    groups: list[list[Edit]] = []
    for e in edits:  # edits within a few lines of each other form one block
        if groups and _rows(e)[0] - _rows(groups[-1][-1])[1] <= _NEAR:
            groups[-1].append(e)
        else:
            groups.append([e])
    near = min(groups, key=lambda g: 0 if _rows(g[0])[0] <= f.start.row <= _rows(g[-1])[1]
               else min(abs(_rows(e)[0] - f.start.row) for e in g))
    elsewhere = [_describe(e) for g in groups if g is not near for e in g]
    first, last = _rows(near[0])[0], max(_rows(e)[1] for e in near)
    partial = dataclasses.replace(f, fix=dataclasses.replace(fix, edits=tuple(near)))
    new, applied = apply_fixes(source, [partial], unsafe=True)
    if not applied:
        return None, elsewhere
    starts = [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", source)]
    begin = starts[first - 1] if first - 1 < len(starts) else len(source)
    stop = starts[last] if last < len(starts) else len(source)
    text = new[begin: stop + len(new) - len(source)]
    text = re.sub(r"(\r\n|\r|\n)$", "", text)
    return {"range": {"start": {"line": first}, "end": {"line": last}}, "text": text}, elsewhere


def write(findings: list[Finding], out: TextIO, run: Run) -> None:
    result = {
        "source": SOURCE,
        "severity": _SEVERITY[min((f.severity for f in findings), key=lambda s: s.rank).value] if findings else "INFO",
        "diagnostics": [diagnostic(f, run) for f in findings],
    }
    json.dump(result, out, indent=2, ensure_ascii=False)
    out.write("\n")
