"""Writes benchmarks/buggy/expected.jsonl from the cases: every ``# BUG TLxxx: reason`` marker is one
expected finding on its line; the evidence is the case's ``# evidence:`` header comment (continued on
the following comment lines).

    python benchmarks/buggy/build_expected.py [--check] [--found]

``--check`` exits 1 when expected.jsonl differs from what the cases say. ``--found`` also lints the
cases and rewrites ``found.txt``: the expected findings trainlint reports today (``path:line:code``),
which tests/test_buggy_set.py keeps found. The cases are linted with every rule selected (``ALL``), so
that a rule off by default keeps the cases it finds when it is selected.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"
SOURCE = "cases"
MARK = re.compile(r"#\s*BUG\s+(TL\d{3}):\s*([^#]*)")


def evidence(lines: list[str]) -> str:
    out = []
    for i, line in enumerate(lines):
        s = line.strip()
        if s.startswith("# evidence:"):
            out.append(s[len("# evidence:"):].strip())
            for cont in lines[i + 1:]:
                if not cont.startswith("#"):
                    break
                out.append(cont.lstrip("#").strip())
            break
    return " ".join(out)


def rows() -> list[dict]:
    out = []
    for path in sorted(CASES.glob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        ev = evidence(lines)
        for n, line in enumerate(lines, 1):
            for code, reason in MARK.findall(line):
                out.append({"source": SOURCE, "path": path.name, "code": code, "line": n, "cell": None,
                            "evidence": ev, "reason": reason.strip()})
    return out


def found(expected: list[dict] | None = None) -> list[str]:
    """``path:line:code`` of the expected findings reported on that line, with every rule selected: the
    rule that can find a case runs whether or not it is on by default."""
    from trainlint.config import Settings
    from trainlint.parallel import lint_file

    expected = rows() if expected is None else expected
    seen = set()
    every_rule = Settings(select=["ALL"])
    for path in sorted(CASES.glob("*.py")):
        for f in lint_file(path, every_rule, path.name).findings:
            seen.add((path.name, f.start.row, f.code))
    return [f"{e['path']}:{e['line']}:{e['code']}" for e in expected if (e["path"], e["line"], e["code"]) in seen]


def render() -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows())


def main(argv: list[str]) -> int:
    target = HERE / "expected.jsonl"
    text = render()
    if "--check" in argv:
        same = target.exists() and target.read_text(encoding="utf-8") == text
        if not same:
            print("expected.jsonl is out of date: run python benchmarks/buggy/build_expected.py")
        return 0 if same else 1
    target.write_text(text, encoding="utf-8")
    if "--found" in argv:
        hits = found()
        (HERE / "found.txt").write_text("".join(h + "\n" for h in hits), encoding="utf-8")
        print(f"found today: {len(hits)}")
    print(f"{len(text.splitlines())} expected findings in {len(list(CASES.glob('*.py')))} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
