"""Stable fingerprints of findings for review bots (SARIF ``partialFingerprints``, GitLab Code Quality
``fingerprint``): the rule, the file, and the text of the finding's first line with whitespace
normalised — not its line number, so a finding keeps its fingerprint when lines are added above it.
Two findings with the same key in one file are told apart by their order (``:1``, ``:2`` …), so every
fingerprint of a run is unique."""

from __future__ import annotations

import hashlib
from pathlib import PurePath

from trainlint.findings import Finding
from trainlint.formats import Run


def line_text(f: Finding, run: Run) -> str:
    if f.cell is not None:  # a notebook: rows are within the cell, not the file
        return f"cell {f.cell}: {f.message}"
    lines = run.source_lines(f.filename)
    return " ".join(lines[f.start.row - 1].split()) if 0 < f.start.row <= len(lines) else ""


def fingerprints(findings: list[Finding], run: Run) -> list[str]:
    """One fingerprint (64 hex digits) per finding, in the same order, unique within the run."""
    seen: dict[str, int] = {}
    out = []
    for f in findings:
        key = "\0".join((f.code, PurePath(f.filename).as_posix(), line_text(f, run)))
        n = seen.get(key, 0)
        seen[key] = n + 1
        out.append(hashlib.sha256(f"{key}\0{n}".encode()).hexdigest())
    return out
