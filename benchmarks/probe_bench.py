"""Benchmark of the PyTorch probe. Prints numbers; asserts nothing.

    PYTHONPATH=src python benchmarks/probe_bench.py [--python PY] [--repeat N]

- the bare import time of torch + transformers + datasets in a fresh process (and with the Trainer
  and the Auto classes resolved, which transformers imports lazily), plus the tiny model's load time;
- the probe's wall time (``run_probe``: child start, script, checks, teardown) on the fixed course
  script with a 1 000-row CSV and with a 200 000-row CSV.

Targets: probe ≤ 1.5 × (import + model load); the 200k-row probe within 1.3 × of the 1k-row one
(the probe cuts load_dataset results before the script's .map()).
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

IMPORT_CODE = """
import time
t0 = time.perf_counter()
import torch, transformers, datasets
t1 = time.perf_counter()
from transformers import Trainer, TrainingArguments, AutoModelForSequenceClassification, AutoTokenizer
from datasets import load_dataset
t2 = time.perf_counter()
model = AutoModelForSequenceClassification.from_pretrained({ckpt!r}, num_labels=3)
tok = AutoTokenizer.from_pretrained({ckpt!r})
t3 = time.perf_counter()
print(t1 - t0, t2 - t0, t3 - t2)
"""


def fresh_import(python: str, ckpt: str) -> tuple[float, float, float]:
    out = subprocess.run([python, "-c", IMPORT_CODE.format(ckpt=ckpt)], capture_output=True, text=True, check=True,
                         env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    a, b, c = (float(x) for x in out.stdout.split()[-3:])
    return a, b, c


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=sys.executable, help="interpreter with torch/transformers/datasets")
    parser.add_argument("--repeat", type=int, default=2)
    ns = parser.parse_args()

    from fixtures import tiny_torch
    from probe.test_torch_probe import FIXED

    from trainlint.probe import ProbeOptions, run_probe

    work = Path(tempfile.mkdtemp(prefix="trainlint-bench-"))
    subprocess.run([ns.python, str(ROOT / "tests" / "fixtures" / "tiny_torch.py"), str(work / "tiny")], check=True,
                   capture_output=True)
    ckpt = str(work / "tiny" / "bert")
    csvs = {}
    for n in (1_000, 200_000):
        csvs[n] = tiny_torch.write_csv(work / f"mnli_{n}.csv", n)
    project = work / "project"
    project.mkdir()
    script = project / "train.py"
    script.write_text(FIXED, encoding="utf-8")

    # Interleaved (import, probe 1k, probe 200k) rounds, so that a busy machine slows all alike.
    os.environ["TINY_CKPT"] = ckpt
    imports = []
    runs: dict[int, list[float]] = {n: [] for n in csvs}
    for _ in range(ns.repeat):
        imports.append(fresh_import(ns.python, ckpt))
        for n, csv in csvs.items():
            os.environ["TINY_CSV"] = str(csv)
            t = time.perf_counter()
            report = run_probe(script, [], ProbeOptions(python=ns.python, timeout=600))
            runs[n].append(time.perf_counter() - t)
            assert report.outcome == "reached-training", (report.outcome, report.notes)
    bare = statistics.median(a for a, _, _ in imports)
    resolved = statistics.median(b for _, b, _ in imports)
    load = statistics.median(c for _, _, c in imports)
    print(f"fresh-process import torch+transformers+datasets: {bare:6.2f} s   (runs: {', '.join(f'{a:.2f}' for a, _, _ in imports)})")
    print(f"  ... with Trainer/Auto classes/load_dataset:     {resolved:6.2f} s   (runs: {', '.join(f'{b:.2f}' for _, b, _ in imports)})")
    print(f"tiny model + tokenizer load:                       {load:6.2f} s")
    times = {n: statistics.median(r) for n, r in runs.items()}
    for n, r in runs.items():
        print(f"probe wall time, {n:>7,} rows:                 {times[n]:6.2f} s   (runs: {', '.join(f'{x:.2f}' for x in r)})")
    base = resolved + load
    print(f"probe(1k) / (import + model load) = {times[1_000] / base:.2f}   (target ≤ 1.5)")
    print(f"probe(200k) / probe(1k)           = {times[200_000] / times[1_000]:.2f}   (target ≤ 1.3)")


if __name__ == "__main__":
    main()
