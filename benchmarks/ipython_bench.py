"""The IPython extension's work per cell on a long session. Prints numbers; asserts nothing.

    .venv/bin/python benchmarks/ipython_bench.py [--cells 200]

A session of ``--cells`` cells is made from the repository's PyTorch/transformers scripts
(``tests/data/correct/*.py``, ``examples/*.py``), cut at their top-level statements (three statements
per cell, and a ``%pip install`` cell now and then), and handed to the extension's ``pre_run_cell``
one by one, as IPython would before running each cell (the cells themselves are not run). Printed:
the time of each cell's work (lint of the cell with the earlier cells it depends on, findings shown)
at cell 1, 50, 100, ..., the median, 90th percentile and maximum over the last 50 cells, how many cells
each was linted with, and the total; then the time of ``%trainlint`` (the whole session), and
whether the findings under the cells are those of ``%trainlint``.
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import statistics
import sys
import time
import types
from contextlib import redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def session_cells(n: int) -> list[str]:
    cells: list[str] = []
    files = sorted((ROOT / "tests" / "data" / "correct").glob("*.py")) + sorted((ROOT / "examples").glob("*.py"))
    while len(cells) < n:
        for f in files:
            text = f.read_text(encoding="utf-8")
            if "keras" in f.name or "import tensorflow" in text:
                continue
            text = re.sub(r"(?m)^from __future__ import .*\n", "", text)
            lines = text.splitlines()
            body = ast.parse(text).body
            starts = [node.lineno - 1 - len(getattr(node, "decorator_list", [])) for node in body] + [len(lines)]
            for k in range(0, len(body), 3):
                chunk = "\n".join(lines[starts[k]:starts[min(k + 3, len(body))]]).strip("\n")
                if len(cells) % 17 == 5:
                    cells.append("%pip install -q transformers datasets")
                cells.append(chunk)
                if len(cells) >= n:
                    return cells
    return cells


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cells", type=int, default=200)
    args = ap.parse_args()
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    t0 = time.perf_counter()
    shell.run_cell("%load_ext trainlint", store_history=True)
    load = time.perf_counter() - t0
    from trainlint.ipython.extension import load as extension

    ext = extension(shell)
    cells = session_cells(args.cells)
    times: list[float] = []
    shown = 0
    for k, cell in enumerate(cells, 1):
        info = types.SimpleNamespace(raw_cell=cell, store_history=True, silent=False)
        shell.execution_count += 1
        out = io.StringIO()
        t = time.perf_counter()
        with redirect_stdout(out):
            ext.pre_run_cell(info)
        times.append(time.perf_counter() - t)
        shown += out.getvalue().count("\n  line ")
        if k == 1 or k % 50 == 0:
            print(f"cell {k:4d}: {times[-1] * 1000:7.1f} ms  ({sum(len(c.splitlines()) for c in cells[:k])} lines so far)")
    last = times[-50:]
    from trainlint.ipython.cells import depends

    sizes = [len(depends(ext.linter.cells[:k])) for k in range(len(ext.linter.cells) - 49, len(ext.linter.cells) + 1)]
    print(f"cells linted with each of the last 50 (the cell and those it depends on): median "
          f"{statistics.median(sizes):.0f}, max {max(sizes)}")
    print(f"per cell, last 50: 90th percentile {sorted(last)[int(0.9 * len(last))] * 1000:.1f} ms")
    print(f"%load_ext trainlint: {load * 1000:.0f} ms")
    print(f"cells: {len(cells)}, lines: {sum(len(c.splitlines()) for c in cells)}, findings shown: {shown}")
    print(f"per cell, last 50: median {statistics.median(last) * 1000:.1f} ms, max {max(last) * 1000:.1f} ms")
    print(f"per cell, all: median {statistics.median(times) * 1000:.1f} ms, max {max(times) * 1000:.1f} ms "
          f"(the first cell loads the rules)")
    print(f"total {sum(times):.2f} s")
    t = time.perf_counter()
    result = ext.linter.lint()
    print(f"%trainlint (all {len(result.cells)} cells as one module): {(time.perf_counter() - t) * 1000:.0f} ms, "
          f"{len(result.findings)} findings")
    # the same findings, cell by cell with the cells each depends on, as under the cells
    every = ext.linter.cells
    per_cell = {(k, f.code, f.start.row) for k in range(1, len(every) + 1)
                for f in ext.linter.lint(depends(every[:k])).last_cell()}
    whole = {(f.cell, f.code, f.start.row) for f in result.findings}
    print(f"findings under the cells vs %trainlint: {len(per_cell & whole)} in both, "
          f"{len(per_cell - whole)} only under the cells, {len(whole - per_cell)} only in %trainlint")


if __name__ == "__main__":
    main()
