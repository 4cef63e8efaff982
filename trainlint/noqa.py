"""Suppression comments, read in one place: ``# noqa`` (every code on the line), ``# noqa: TL301, TL805``
(those codes) and ``# trainlint: noqa`` (the whole file). The engine drops suppressed findings with
:func:`noqa_lines`; the language server's "disable for this line" action extends a line's comment with
:func:`find`. Standard library only (the language server imports it before any heavy module)."""

from __future__ import annotations

import re

NOQA_RE = re.compile(r"#\s*noqa(?::\s?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
FILE_NOQA_RE = re.compile(r"#\s*trainlint\s*:\s*noqa\b(?!\s*:)", re.IGNORECASE)


def find(line: str) -> re.Match[str] | None:
    """The ``# noqa`` comment of one line (its ``codes`` group: the codes as written, or None for a
    bare ``# noqa``)."""
    return NOQA_RE.search(line) if "#" in line else None


def codes_of(m: re.Match[str]) -> frozenset[str]:
    """The codes a ``# noqa`` comment names (empty: a bare ``# noqa``, which suppresses every code)."""
    codes = m.group("codes")
    return frozenset(c.upper() for c in re.split(r"[,\s]+", codes) if c) if codes else frozenset()


def noqa_lines(source: str) -> dict[int, frozenset[str]]:
    """line → codes suppressed on it (empty set: all)."""
    out: dict[int, frozenset[str]] = {}
    if "noqa" not in source and "NOQA" not in source.upper():
        return out
    for i, line in enumerate(source.splitlines(), 1):
        m = find(line)
        if m is not None:
            out[i] = codes_of(m)
    return out


def suppressed(codes: frozenset[str] | None, code: str) -> bool:
    """Whether a line's ``# noqa`` (``codes`` from :func:`noqa_lines`; None: no comment) silences ``code``."""
    return codes is not None and (not codes or code in codes)


def file_noqa(source: str) -> bool:
    """The file says ``# trainlint: noqa``: nothing in it is reported."""
    return FILE_NOQA_RE.search(source) is not None
