"""What the probe's sandbox costs: wall time of `run_probe` on a script that exits at once, per sandbox
path available here, against starting the same interpreter bare. Prints numbers; asserts nothing.

    python benchmarks/sandbox_bench.py [--repeat 7]

The difference between a path and the bare interpreter is the cost of the isolation and of the
probe's harness (namespaces, mounts, pipes, the child's imports), paid once per probe whatever the
script does; a real probe adds the script's own imports and model loading on top.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _bare(repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import sys; sys.exit(2)"], check=False)
        out.append(time.perf_counter() - t)
    return out


def _probe(mode: str, script: Path, repeat: int) -> tuple[list[float], str]:
    from trainlint.probe import ProbeOptions, run_probe
    from trainlint.probe.parent.sandbox import _detect_sandbox

    os.environ["TRAINLINT_PROBE_SANDBOX"] = mode
    found = _detect_sandbox(mode)
    if mode != "none" and found.kind != mode:
        return [], f"unavailable: {found.why}"
    out, note = [], ""
    for _ in range(repeat):
        t = time.perf_counter()
        report = run_probe(script, [], ProbeOptions(timeout=60))
        out.append(time.perf_counter() - t)
        note = report.notes[0]
    return out, note


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        script = Path(d) / "exit.py"
        script.write_text("import sys\nsys.exit(2)\n")
        rows = [("bare interpreter", _bare(args.repeat), "")]
        for mode in ("none", "unshare", "bwrap"):
            times, note = _probe(mode, script, args.repeat)
            rows.append((f"probe, sandbox={mode}", times, note))
    print(f"{'':28} {'median':>8} {'min':>8}   (seconds, {args.repeat} runs)")
    for name, times, note in rows:
        if times:
            print(f"{name:28} {statistics.median(times):8.3f} {min(times):8.3f}   {note[:70]}")
        else:
            print(f"{name:28} {'-':>8} {'-':>8}   {note}")


if __name__ == "__main__":
    main()
