"""GitHub Actions workflow commands: ``::error file=..,line=..,col=..::message``.

GitHub shows an annotation on the line of the file it names (in a pull request, on that line of the
file's diff). A notebook finding's rows are rows of a cell, not lines of the ``.ipynb`` file, so its
annotation names the cell and the row in its title and message, and is placed on the line of the
notebook's JSON text that holds that row of the cell's source (its own line in an indented notebook;
line 1 of a notebook saved as one line of JSON, as Colab saves them), without a column: columns of the
cell are not columns of the JSON text.
"""

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
    rows: dict[str, dict[int, list[int]]] = {}  # notebook -> cell -> the file's line of each row
    for f in findings:
        level = _LEVEL[f.severity.value]
        title = f"{f.code} {f.name}"
        where = ""
        if f.cell is None:
            position = f"line={f.start.row},col={f.start.column},endLine={f.end.row},endColumn={f.end.column}"
        else:
            if f.filename not in rows:
                from trainlint.notebook import source_row_lines

                run.source_lines(f.filename)  # reads the file once
                rows[f.filename] = source_row_lines(run.sources.get(f.filename, ""))
            lines = rows[f.filename].get(f.cell, [])
            start = _line(lines, f.start.row)
            position = f"line={start},endLine={max(_line(lines, f.end.row), start)}"
            where = f"cell {f.cell}, line {f.start.row}"
            title += f" ({where})"
            where += ": "
        status = f" [probe: {f.probe.status.value}{': ' + f.probe.evidence if f.probe.evidence else ''}]" if f.probe else ""
        out.write(f"::{level} file={_prop(f.filename)},{position},title={_prop(title)}::"
                  f"{_data(f.code + ' ' + where + f.message + status)}\n")


def _line(lines: list[int], row: int) -> int:
    """The file's line of a cell's row (1 when the notebook's text is not at hand)."""
    if not lines:
        return 1
    return lines[min(max(row, 1), len(lines)) - 1]
