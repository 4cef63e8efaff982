#!/usr/bin/env python3
"""Print the README's rule table from the catalog; `--write` updates README.md in place.

tests/test_readme.py checks that the README's table is exactly this output.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
START, END = "<!-- rules:start -->", "<!-- rules:end -->"


def table() -> str:
    sys.path.insert(0, str(ROOT))
    from trainlint.rule import all_rules

    rows = ["| code | name | stage | severity | default | static | probe | autofix |",
            "|---|---|---|---|---|---|---|---|"]
    for code, r in all_rules().items():
        if r.stage().value == 0:
            continue
        rows.append(
            f"| [{code}](rules/{code}.md) | {r.name} | {r.stage().label} | {r.severity.value} | "
            f"{'on' if r.default else 'off'} | {'yes' if r.has_static_check() else '—'} | "
            f"{'yes' if r.probe else '—'} | {r.fix.value if r.fix else '—'} |"
        )
    return "\n".join(rows)


def main() -> None:
    text = table()
    if "--write" in sys.argv:
        readme = ROOT / "README.md"
        content = readme.read_text()
        new = re.sub(re.escape(START) + ".*?" + re.escape(END), f"{START}\n{text}\n{END}", content, flags=re.S)
        readme.write_text(new)
    else:
        print(text)


if __name__ == "__main__":
    main()
