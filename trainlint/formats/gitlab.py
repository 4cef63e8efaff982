"""GitLab Code Quality report (``artifacts: reports: codequality``): a JSON list of issues with
``description``, ``check_name``, ``fingerprint`` (unique, stable when lines move), ``severity``
(``info``/``minor``/``major``/``critical``/``blocker``) and ``location.path`` / ``location.lines``.
Paths are as given on the command line: run trainlint from the repository root."""

from __future__ import annotations

import json
from pathlib import PurePath
from typing import TextIO

from trainlint.findings import Finding
from trainlint.formats import Run
from trainlint.formats.fingerprint import fingerprints

#: error: the run crashes or certainly trains wrong; warning: likely wrong; info: `--probe` decides
SEVERITY = {"error": "critical", "warning": "major", "info": "info"}


def write(findings: list[Finding], out: TextIO, run: Run) -> None:
    issues = []
    for f, fp in zip(findings, fingerprints(findings, run)):
        where = f"cell {f.cell}, line {f.start.row}: " if f.cell is not None else ""
        issues.append({
            "type": "issue",
            "check_name": f.code,
            "description": f"{where}{f.code} {f.message}",
            "content": {"body": (f"Fix: {f.hint}\n\n" if f.hint else "") + f"See {f.url}"},
            "categories": ["Bug Risk"],
            "severity": SEVERITY[f.severity.value],
            "fingerprint": fp,
            "location": {
                "path": PurePath(f.filename).as_posix(),
                # a notebook finding: rows are within a cell, so the issue points at the file's top
                "lines": {"begin": f.start.row if f.cell is None else 1,
                          "end": f.end.row if f.cell is None else 1},
            },
        })
    json.dump(issues, out, indent=2, ensure_ascii=False)
    out.write("\n")
