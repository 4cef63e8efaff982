"""A JSON list of findings (``code``, ``name``, ``message``, ``severity``, ``filename``,
``location``/``end_location`` {row, column} 1-based, ``url``, ``fix``, and ``probe`` when probed)."""

from __future__ import annotations

import json
from typing import TextIO

from trainlint.findings import Finding
from trainlint.formats import Run


def write(findings: list[Finding], out: TextIO, run: Run) -> None:
    json.dump([f.to_json() for f in findings], out, indent=2, ensure_ascii=False)
    out.write("\n")
