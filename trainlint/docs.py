"""The rule documents: ``rules/<CODE>.md`` (shipped in the wheel as ``trainlint/_rules``)."""

from __future__ import annotations

import dataclasses
import re
from functools import lru_cache
from pathlib import Path

DOCS_URL = "https://github.com/trainlint/trainlint/blob/main/rules/{code}.md"

_FENCE_RE = re.compile(r"^```(?P<info>[^\n]*)\n(?P<body>.*?)^```[ \t]*$", re.M | re.S)


def rule_url(code: str) -> str:
    return DOCS_URL.format(code=code)


@lru_cache(maxsize=1)
def docs_dir() -> Path | None:
    here = Path(__file__).resolve().parent
    for candidate in (here / "_rules", here.parent / "rules"):
        if candidate.is_dir():
            return candidate
    return None


def doc_path(code: str) -> Path | None:
    d = docs_dir()
    if d is None:
        return None
    p = d / f"{code.upper()}.md"
    return p if p.is_file() else None


def doc_text(code: str) -> str | None:
    p = doc_path(code)
    return p.read_text(encoding="utf-8") if p else None


@dataclasses.dataclass(frozen=True)
class Example:
    code: str  # the python source
    info: str  # the fence info string, e.g. "python" or "python probe"
    line: int  # line of the fence in the document

    @property
    def probe_only(self) -> bool:
        return "probe" in self.info.split()[1:]

    @property
    def premise(self) -> int | None:
        """The premise a block of `## Premises` leaves out (```python premise=2), else None."""
        m = re.search(r"\bpremise=(\d+)", self.info)
        return int(m.group(1)) if m else None

    @property
    def filename(self) -> str:
        m = re.search(r"filename=(\S+)", self.info)
        return m.group(1) if m else "example.py"


@dataclasses.dataclass(frozen=True)
class RuleDoc:
    code: str
    title: str
    sections: dict[str, str]

    def examples(self, section: str) -> list[Example]:
        body = self.sections.get(section, "")
        out = []
        for m in _FENCE_RE.finditer(body):
            info = m.group("info").strip()
            if info.split()[:1] == ["python"]:
                out.append(Example(m.group("body"), info, body[: m.start()].count("\n")))
        return out

    @property
    def bad(self) -> list[Example]:
        return self.examples("Example")

    @property
    def good(self) -> list[Example]:
        return self.examples("Use instead")

    @property
    def premises(self) -> list[str]:
        """The numbered items of `## Premises`: what each finding asserts (the text of each item)."""
        body = _FENCE_RE.sub("", self.sections.get("Premises", ""))
        items: list[str] = []
        for line in body.splitlines():
            m = re.match(r"^(\d+)\. (.*)", line)
            if m and int(m.group(1)) == len(items) + 1:
                items.append(m.group(2).strip())
            elif items and line.startswith("   ") and line.strip():
                items[-1] += " " + line.strip()
        return items


def parse_doc(code: str, text: str) -> RuleDoc:
    title = ""
    sections: dict[str, str] = {}
    current = None
    buf: list[str] = []
    in_fence = False
    for line in text.splitlines(keepends=True):
        if line.startswith("```"):
            in_fence = not in_fence
        if not in_fence and line.startswith("# ") and not title:
            title = line[2:].strip()
            continue
        if not in_fence and line.startswith("## "):
            if current is not None:
                sections[current] = "".join(buf)
            current, buf = line[3:].strip(), []
            continue
        buf.append(line)
    if current is not None:
        sections[current] = "".join(buf)
    return RuleDoc(code, title, sections)


def load_doc(code: str) -> RuleDoc | None:
    text = doc_text(code)
    return parse_doc(code, text) if text is not None else None
