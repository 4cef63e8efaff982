"""How often each rule's gate opens on a corpus, and whether the gates lose a finding there.

    python scripts/gate_report.py [--codes TL301,TL302] [--check] [PATH ...]

Default corpus: the transformers source the benchmark downloads (benchmarks/.corpus/src, see
benchmarks/bench_static.py), else the installed transformers package. For each rule (or those of
--codes): how many training scripts (files that mention an ML framework) its gate opens, and their
size; then how many files LibCST must parse with every default rule's gate. ``--check`` also lints
the corpus with and without gates (``Settings(gate=False)``) for those codes and prints every
difference: a gate must never lose a finding.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from trainlint.config import Settings  # noqa: E402
from trainlint.engine import FRAMEWORK_RE, code_words, lint_paths  # noqa: E402
from trainlint.rule import all_rules, default_codes  # noqa: E402


def corpus_files(paths: list[str]) -> list[Path]:
    if not paths:
        src = ROOT / "benchmarks" / ".corpus" / "src"
        if not src.is_dir():
            import transformers  # only its location

            src = Path(transformers.__file__).parent
        paths = [str(src)]
    out: list[Path] = []
    for p in map(Path, paths):
        out.extend(sorted(p.rglob("*.py")) if p.is_dir() else [p])
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--codes", default="", help="comma-separated codes (default: every static rule)")
    ap.add_argument("--check", action="store_true", help="lint with and without gates and compare")
    args = ap.parse_args()

    rules = {c: r for c, r in all_rules().items() if r.has_static_check() and c[2] != "0"}
    codes = [c.strip().upper() for c in args.codes.split(",") if c.strip()] or list(rules)
    files = corpus_files(args.paths)
    scripts = []
    for f in files:
        text = f.read_text(encoding="utf-8", errors="replace")
        if FRAMEWORK_RE.search(text):
            scripts.append((f, len(text.encode()), code_words(text)))
    total_mb = sum(size for _, size, _ in scripts) / 1e6
    print(f"{len(files)} files, {len(scripts)} training scripts ({total_mb:.1f} MB)")
    print(f"{'code':7} {'files':>6} {'MB':>6}  gate")
    for code in codes:
        rule = rules[code]
        opened = [(f, size) for f, size, words in scripts if rule.gate_open(words)]
        print(f"{code:7} {len(opened):6d} {sum(s for _, s in opened) / 1e6:6.1f}  {rule.gate}")
    default = [rules[c] for c in default_codes() if c in rules]
    parsed = [(f, size) for f, size, words in scripts if any(r.gate_open(words) for r in default)]
    print(f"default rules: LibCST parses {len(parsed)} of {len(scripts)} training scripts "
          f"({sum(s for _, s in parsed) / 1e6:.1f} of {total_mb:.1f} MB)")
    if not args.check:
        return
    gated = {r.filename: r.findings for r in lint_paths(files, Settings(select=codes), jobs=0)}
    ungated = lint_paths(files, Settings(select=codes, gate=False), jobs=0)
    lost = 0
    for r in ungated:
        mine = [f for f in r.findings if f.code != "TL001"]
        theirs = [f for f in gated[r.filename] if f.code != "TL001"]
        if mine != theirs:
            lost += 1
            print(f"DIFFERS {r.filename}: gated {[f.code for f in theirs]} ungated {[f.code for f in mine]}")
    print(f"check: {len(ungated)} files, {lost} differ")
    sys.exit(1 if lost else 0)


if __name__ == "__main__":
    main()
