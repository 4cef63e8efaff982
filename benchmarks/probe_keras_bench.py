"""Keras probe wall time next to the bare import time of TensorFlow (numbers, not a timed test).

    python benchmarks/probe_keras_bench.py [--python /path/to/tf-env/bin/python] [--repeat 3]

Runs in trainlint's environment; the probe child and the import timings run in the TF environment
(``--python``, else ``$TRAINLINT_KERAS_PYTHON``, else ``.venv-tf/bin/python``), as
``trainlint --probe --python ...`` does. Builds the tiny offline fixtures first
(``tests/fixtures/tiny_tf.py``). Reports medians over ``--repeat`` fresh processes:

- ``import tensorflow`` alone, and the imports the course script pays before ``fit``
  (tensorflow + transformers' TF BERT + datasets);
- the probe of the plain Keras 3 script (labels in the feature dict) and of the TF course script
  (tiny BERT, its three bugs), without and with ``--overfit 20``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def tf_python(arg: str | None) -> str:
    path = arg or os.environ.get("TRAINLINT_KERAS_PYTHON") or str(ROOT / ".venv-tf" / "bin" / "python")
    if not Path(path).exists():
        sys.exit(f"no TF interpreter at {path}: run ./scripts/test (builds .venv-tf) or pass --python")
    return path


def timed_import(python: str, code: str) -> float:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "3"}
    t0 = time.perf_counter()
    subprocess.run([python, "-c", code], check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0


def load_scripts():
    spec = importlib.util.spec_from_file_location("keras_probe_scripts", ROOT / "tests" / "probe" / "test_keras_probe.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # needs pytest importable (trainlint's test environment)
    return mod


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", help="interpreter of the TF environment")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    py = tf_python(args.python)

    from trainlint.probe import ProbeOptions, run_probe

    scripts = load_scripts()
    work = Path(tempfile.mkdtemp(prefix="trainlint-keras-bench-"))
    fix = work / "fixtures"
    subprocess.run([py, str(ROOT / "tests" / "fixtures" / "tiny_tf.py"), str(fix)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env={**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "3"})

    rows: list[tuple[str, float, str]] = []

    def median_of(fn) -> tuple[float, str]:
        values, extra = [], ""
        for _ in range(args.repeat):
            v, extra = fn()
            values.append(v)
        return statistics.median(values), extra

    def imp(code: str):
        return lambda: (timed_import(py, code), "")

    t, _ = median_of(imp("import tensorflow"))
    rows.append(("import tensorflow (fresh process)", t, ""))
    t, _ = median_of(imp("import tensorflow, datasets\nfrom transformers import TFBertForSequenceClassification"))
    rows.append(("import tensorflow + transformers TF BERT + datasets", t, ""))
    t, _ = median_of(imp("import keras, tensorflow"))
    rows.append(("import keras (3) + tensorflow", t, ""))

    cases = [
        ("probe: plain Keras 3, labels in features", scripts.PLAIN.format(keras="keras"), 0),
        ("probe: TF course script (tiny BERT, 3 bugs)", scripts.COURSE.format(fix=str(fix)), 0),
        ("probe: TF course script, --overfit 20", scripts.COURSE.format(fix=str(fix)), 20),
        ("probe: fixed course script, --overfit 20", scripts.FIXED.format(fix=str(fix)), 20),
    ]
    for i, (name, text, overfit) in enumerate(cases):
        script = work / f"case{i}" / "train_tf.py"
        script.parent.mkdir()
        script.write_text(text, encoding="utf-8")

        def one(script=script, overfit=overfit):
            t0 = time.perf_counter()
            report = run_probe(script, [], ProbeOptions(python=py, timeout=600, overfit=overfit))
            codes = ",".join(sorted({f.code for f in report.findings})) or "clear"
            return time.perf_counter() - t0, codes

        t, codes = median_of(one)
        rows.append((name, t, codes))

    base = rows[0][1]
    width = max(len(r[0]) for r in rows)
    print(f"TF interpreter: {py}; median of {args.repeat} fresh processes; {os.cpu_count()} CPUs")
    print(f"{'what':<{width}}  {'seconds':>8}  {'x import tf':>11}  findings")
    for name, t, extra in rows:
        print(f"{name:<{width}}  {t:8.2f}  {t / base:11.2f}  {extra}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
