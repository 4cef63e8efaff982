"""Benchmark of the PyTorch probe. Prints numbers; asserts nothing.

    PYTHONPATH=src python benchmarks/probe_bench.py [--python PY] [--repeat N]

- the bare import time of torch + transformers + datasets in a fresh process (and with the Trainer
  and the Auto classes resolved, which transformers imports lazily), plus the tiny model's load time;
- the probe's wall time (``run_probe``: child start, script, checks, teardown) on the fixed course
  script with a 1 000-row CSV and with a 200 000-row CSV.

Targets: probe ≤ 1.5 × (import + model load); the 200k-row probe within 1.3 × of the 1k-row one
(the probe cuts load_dataset results before the script's .map()).

    PYTHONPATH=src python benchmarks/probe_bench.py --shapes [--keras-python PY] [--real-root DIR]

``--shapes``: for each real-script shape of tests/data/probe_real/ (run_glue, accelerate's nlp_example,
run_glue_no_trainer, run_clm_no_trainer, TF run_text_classification, keras-io's text classifier), the
time of (a) a fresh process importing the frameworks the script imports and loading the tiny model
(building it, for the Keras model trained from scratch) and (b) ``run_probe`` on our transcription,
and the ratio b / a. With ``--real-root DIR`` it also probes the real public scripts found under DIR
at their repository paths (``transformers/examples/...``, ``accelerate/examples/nlp_example.py``,
``keras-io/examples/nlp/...``: clones or materialised copies, e.g. in the gitignored
benchmarks/.probe-real/), adapted only by command-line arguments and environment variables, and
prints the outcome and the confirmed codes of each (a real script is all clear when it reaches
training with nothing confirmed and every check complete).
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
sys.path.insert(0, str(ROOT))
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


# ---------------------------------------------------------------- real-script shapes

TORCH_LOAD = """
import time
t0 = time.perf_counter()
import torch, transformers, datasets, accelerate
from transformers import {cls}, AutoTokenizer
from datasets import load_dataset
model = {cls}.from_pretrained({ckpt!r})
tok = AutoTokenizer.from_pretrained({ckpt!r})
print(time.perf_counter() - t0)
"""

TF_LOAD = """
import time
t0 = time.perf_counter()
import tensorflow as tf, transformers, datasets
from transformers import TFAutoModelForSequenceClassification, AutoTokenizer
from datasets import load_dataset
model = TFAutoModelForSequenceClassification.from_pretrained({ckpt!r}, num_labels=3)
tok = AutoTokenizer.from_pretrained({tok!r})
print(time.perf_counter() - t0)
"""

KERAS3_LOAD = """
import os, time
os.environ["KERAS_BACKEND"] = "tensorflow"
t0 = time.perf_counter()
import keras, tensorflow as tf
from keras import layers
inputs = keras.Input(shape=(None,), dtype="int64")
x = layers.Embedding(2000, 32)(inputs)
x = layers.Conv1D(32, 7, strides=3, activation="relu")(x)
x = layers.GlobalMaxPooling1D()(x)
model = keras.Model(inputs, layers.Dense(1, activation="sigmoid")(x))
model.compile(loss="binary_crossentropy", optimizer="adam")
print(time.perf_counter() - t0)
"""

#: (shape, transcription in tests/data/probe_real, the real script's path under --real-root, framework)
SHAPES = [
    ("Trainer + HfArgumentParser", "run_glue.py", "transformers/examples/pytorch/text-classification/run_glue.py",
     "torch"),
    ("accelerate loop", "nlp_example.py", "accelerate/examples/nlp_example.py", "torch"),
    ("no_trainer loop", "run_glue_no_trainer.py",
     "transformers/examples/pytorch/text-classification/run_glue_no_trainer.py", "torch"),
    ("causal LM loop", "run_clm_no_trainer.py",
     "transformers/examples/pytorch/language-modeling/run_clm_no_trainer.py", "torch"),
    ("TF transformers fit", "run_text_classification_tf.py",
     "transformers/examples/tensorflow/text-classification/run_text_classification.py", "tf"),
    ("plain Keras 3 fit", "text_classification_from_scratch.py",
     "keras-io/examples/nlp/text_classification_from_scratch.py", "keras3"),
]


def load_test_module():
    import importlib.util

    spec = importlib.util.spec_from_file_location("real_scripts", ROOT / "tests" / "probe" / "test_real_scripts.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # needs pytest importable (trainlint's test environment)
    return mod


def timed_load(python: str, code: str) -> float:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": "",
           "TF_CPP_MIN_LOG_LEVEL": "3"}
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True, env=env)
    return float(out.stdout.split()[-1])


def shape_summary(report) -> str:
    from trainlint.findings import ProbeStatus

    confirmed = sorted({f.code for f in report.findings if f.probe and f.probe.status is ProbeStatus.CONFIRMED})
    clear = report.outcome == "reached-training" and not confirmed and not report.incomplete
    if clear:
        return "all clear"
    why = report.incomplete[:1] or [n for n in report.notes if "raised" in n or "not" in n][:1]
    return f"{report.outcome}; confirmed {confirmed or '-'}" + (f"; {why[0][:160]}" if why else "")


def shapes(torch_python: str, keras_python: str, real_root: Path | None, repeat: int) -> None:
    from trainlint.probe import ProbeOptions, run_probe

    mod = load_test_module()
    work = Path(tempfile.mkdtemp(prefix="trainlint-bench-shapes-"))
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TF_CPP_MIN_LOG_LEVEL": "2", "HF_HUB_OFFLINE": "1"}
    subprocess.run([torch_python, str(ROOT / "tests" / "fixtures" / "tiny_torch.py"), str(work / "tiny")], check=True,
                   capture_output=True, env=env)
    subprocess.run([keras_python, str(ROOT / "tests" / "fixtures" / "tiny_tf.py"), str(work / "tiny_tf")], check=True,
                   capture_output=True, env=env)
    from fixtures import tiny_torch

    tiny, tiny_tf = work / "tiny", work / "tiny_tf"
    tiny_torch.write_csv(tiny_tf / "mnli.csv", 300)
    tiny_torch.write_csv(tiny_tf / "mnli_val.csv", 80, seed=1)
    os.environ.update(TINY_CKPT=str(tiny / "bert"), TINY_CSV=str(tiny / "mnli.csv"),
                      TINY_VAL_CSV=str(tiny / "mnli_val.csv"),
                      ACLIMDB_DIR=str(mod.write_imdb(work / "aclImdb")))
    project = work / "project"
    project.mkdir()
    print(f"{'shape':28} {'import+load':>11} {'probe':>7} {'ratio':>6}  result")
    rows = []
    for shape, name, _real, framework in SHAPES:
        python = torch_python if framework == "torch" else keras_python
        if framework == "torch":
            cls = "AutoModelForCausalLM" if "clm" in name else "AutoModelForSequenceClassification"
            code = TORCH_LOAD.format(cls=cls, ckpt=str(tiny / "bert"))
            args = mod.torch_args(name, tiny)
        elif framework == "tf":
            code = TF_LOAD.format(ckpt=str(tiny_tf / "bert"), tok=str(tiny_tf / "tokenizer"))
            args = mod.tf_args(tiny_tf)
        else:
            code, args = KERAS3_LOAD, ()
        script = project / name
        script.write_text((DATA / name).read_text(encoding="utf-8"), encoding="utf-8")
        # One untimed import + load first: both timings below then read the frameworks' files from a warm
        # page cache (else whichever runs first pays for the cold reads).
        timed_load(python, code)
        loads, probes, result = [], [], ""
        for _ in range(repeat):
            loads.append(timed_load(python, code))
            t = time.perf_counter()
            report = run_probe(script, [], ProbeOptions(python=python, timeout=600, script_args=args))
            probes.append(time.perf_counter() - t)
            result = shape_summary(report)
        a, b = statistics.median(loads), statistics.median(probes)
        rows.append((shape, a, b))
        print(f"{shape:28} {a:9.2f} s {b:5.2f} s {b / a:6.2f}  {result}", flush=True)
    if real_root is None:
        return
    print(f"\nreal scripts under {real_root}:")
    for shape, name, real, framework in SHAPES:
        path = real_root / real
        if not path.exists():
            print(f"{shape:28} {real}: not found")
            continue
        python = torch_python if framework == "torch" else keras_python
        if framework == "torch":
            args = mod.torch_args(name, tiny)
        elif framework == "tf":
            args = mod.tf_args(tiny_tf)
        else:
            args = ()
        t = time.perf_counter()
        report = run_probe(path, [], ProbeOptions(python=python, timeout=600, script_args=args))
        elapsed = time.perf_counter() - t
        print(f"{shape:28} {elapsed:6.2f} s  {real}: {shape_summary(report)}", flush=True)


DATA = ROOT / "tests" / "data" / "probe_real"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=sys.executable, help="interpreter with torch/transformers/datasets")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--shapes", action="store_true", help="the real-script shapes section only")
    parser.add_argument("--keras-python", default=os.environ.get("TRAINLINT_KERAS_PYTHON")
                        or str(ROOT / ".venv-tf" / "bin" / "python"), help="interpreter with TensorFlow (--shapes)")
    parser.add_argument("--real-root", type=Path, help="probe the real public scripts found under DIR (--shapes)")
    ns = parser.parse_args()
    if ns.shapes or ns.real_root:
        shapes(ns.python, ns.keras_python, ns.real_root, ns.repeat)
        return

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
