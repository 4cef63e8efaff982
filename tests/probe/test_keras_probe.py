"""Runtime probes for TensorFlow/Keras ``model.fit``.

trainlint runs here (the main test venv); the probe child runs in the TF virtualenv given by
``TRAINLINT_KERAS_PYTHON`` (exported by ``scripts/test``; default ``.venv-tf/bin/python``), exactly
as a user runs ``trainlint --probe --python /path/to/tf-env/bin/python train_tf.py``.

The scripts follow the TensorFlow course chapter (``shared/seeds/003_*``): its three bugs (a Keras
loss while the labels are in the feature dict, no ``num_labels`` with labels 0..2, ``optimizer="adam"``)
each confirmed, the fixed script clear, and plain Keras 3 / tf-keras models with the label mistake.
Few probe runs on purpose: each starts TensorFlow (~3 s) in a fresh process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from support import keras_python
from trainlint.findings import Finding, Position, ProbeStatus, Severity
from trainlint.probe import ProbeOptions, run_probe


def keras_probe(fn):
    """Marks of the tests that run a probe in the TF virtualenv."""
    return pytest.mark.keras(pytest.mark.probe(fn))


ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 240.0


@pytest.fixture(scope="module")
def kpy() -> str:
    return keras_python()


@pytest.fixture(scope="module")
def tf_fixtures(tiny_tf: Path) -> Path:
    return tiny_tf


# ---------------------------------------------------------------- scripts

DATA = """\
import json
from datasets import Dataset, DatasetDict

FIX = {fix!r}
raw_datasets = DatasetDict({{k: Dataset.from_dict(v) for k, v in json.load(open(f"{{FIX}}/mnli.json")).items()}})
"""

# The course script (seed 003), offline: load_dataset on local JSON lines instead of the hub's
# glue/mnli, a tiny BERT encoder and tokenizer, padding to a fixed length.
COURSE = """\
from datasets import load_dataset

FIX = {fix!r}
raw_datasets = load_dataset(
    "json", data_files={{s: f"{{FIX}}/mnli_{{s}}.jsonl" for s in ("train", "validation_matched")}}
)
from transformers import AutoTokenizer, TFAutoModelForSequenceClassification

tokenizer = AutoTokenizer.from_pretrained(f"{{FIX}}/tokenizer")


def preprocess_function(examples):
    return tokenizer(examples["premise"], examples["hypothesis"], truncation=True, padding="max_length", max_length=32)


tokenized_datasets = raw_datasets.map(preprocess_function, batched=True)
train_dataset = tokenized_datasets["train"].to_tf_dataset(
    columns=["input_ids", "labels"], batch_size=16, shuffle=True
)
model = TFAutoModelForSequenceClassification.from_pretrained(f"{{FIX}}/bert")
model.compile(loss="sparse_categorical_crossentropy", optimizer="adam")
model.fit(train_dataset)
"""

# The course's final version: internal loss, num_labels=3, Adam(5e-5) (from tf_keras: with Keras 3
# installed, `tensorflow.keras` is Keras 3 until transformers' TF code loads), and the attention mask.
FIXED = DATA + """\
from transformers import AutoTokenizer, TFAutoModelForSequenceClassification
from tf_keras.optimizers import Adam

tokenizer = AutoTokenizer.from_pretrained(f"{{FIX}}/tokenizer")


def preprocess_function(examples):
    return tokenizer(examples["premise"], examples["hypothesis"], truncation=True, padding="max_length", max_length=32)


tokenized_datasets = raw_datasets.map(preprocess_function, batched=True)
train_dataset = tokenized_datasets["train"].to_tf_dataset(
    columns=["input_ids", "attention_mask", "labels"], batch_size=16, shuffle=True
)
model = TFAutoModelForSequenceClassification.from_pretrained(f"{{FIX}}/bert", num_labels=3)
model.compile(optimizer=Adam(5e-5))
model.fit(train_dataset)
"""

# A plain Keras model (no transformers): labels left inside the feature dict; `--fixed` gives the
# corrected pipeline ((features, labels) pairs, from_logits=True, lr warming up to 1e-2).
PLAIN = """\
import sys
import numpy as np
import tensorflow as tf
import {keras} as keras

fixed = "--fixed" in sys.argv
keras.utils.set_random_seed(0)
rng = np.random.default_rng(0)
x = rng.normal(size=(64, 8)).astype("float32")
y = (x[:, 0] > 0).astype("int64") + (x[:, 1] > 0)
if fixed:
    ds = tf.data.Dataset.from_tensor_slices(({{"features": x}}, y)).batch(16)
else:
    ds = tf.data.Dataset.from_tensor_slices({{"features": x, "labels": y}}).batch(16)
inp = keras.Input(shape=(8,), name="features")
out = keras.layers.Dense(3)(keras.layers.Dense(32, activation="relu")(inp))
model = keras.Model(inp, out)
if fixed:  # with a warmup from 0 (a first step at lr 0 would move nothing)
    lr = keras.optimizers.schedules.CosineDecay(0.0, decay_steps=1000, warmup_target=1e-2, warmup_steps=4)
    model.compile(optimizer=keras.optimizers.Adam(lr), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
else:
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
model.fit(ds, epochs=3)
"""


def line_of(text: str, needle: str) -> int:
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return i
    raise AssertionError(f"{needle!r} not in the script")


def static(code: str, name: str, row: int) -> Finding:
    """A static finding as the engine would report it (the probe matches code and line)."""
    return Finding(code=code, name=name, message=f"static {code}", severity=Severity.ERROR, filename="train_tf.py",
                   start=Position(row, 1), end=Position(row, 2))


def probe(tmp_path: Path, kpy: str, text: str, static_findings=(), overfit: int = 0, args=(), rows: int = 256):
    script = tmp_path / "train_tf.py"
    script.write_text(text, encoding="utf-8")
    options = ProbeOptions(python=kpy, timeout=TIMEOUT, overfit=overfit, verbose=True, script_args=tuple(args),
                           rows=rows)
    report = run_probe(script, list(static_findings), options)
    return report, {f.code: f for f in report.findings}


def stopped_at_fit(report) -> bool:
    return any("stopped at model.fit()" in n for n in report.notes)


def explain(report) -> str:
    lines = [f"{f.code} {f.probe.status.value if f.probe else '-'}: {f.message} | "
             f"{f.probe.evidence if f.probe else ''}" for f in report.findings]
    return "\n".join(lines + report.notes + report.details[-3:])


# ---------------------------------------------------------------- the course script, three bugs


@pytest.fixture(scope="module")
def course(kpy: str, tf_fixtures: Path, tmp_path_factory: pytest.TempPathFactory):
    text = COURSE.format(fix=str(tf_fixtures))
    compile_line = line_of(text, "model.compile(")
    findings = [
        static("TL401", "keras-loss-with-labels-in-features", compile_line),
        static("TL402", "loss-expects-probabilities", compile_line),
        static("TL301", "missing-num-labels", line_of(text, "from_pretrained(f\"{FIX}/bert\")")),
        static("TL501", "string-optimizer", compile_line),
    ]
    # --probe-rows 48: load_dataset is cut to 48 of the 96 training rows; the label range still
    # covers the whole column (recorded before the cut).
    report, by_code = probe(tmp_path_factory.mktemp("course"), kpy, text, findings, rows=48)
    return report, by_code


@keras_probe
def test_course_script_reaches_fit_and_stops(course):
    report, _ = course
    assert stopped_at_fit(report), explain(report)
    assert any("TFBertForSequenceClassification on tf-keras" in n for n in report.notes), explain(report)


@keras_probe
def test_labels_in_features_with_keras_loss_confirmed(course):
    report, by_code = course
    f = by_code["TL401"]
    assert f.probe.status is ProbeStatus.CONFIRMED, explain(report)
    ev = f.probe.evidence
    # transformers no longer raises: train_step moves the labels and the loss runs on the logits.
    assert "'labels' inside" in ev and "train_step" in ev and "fit raises nothing" in ev, ev
    assert "the model's own loss would be" in ev, ev
    f402 = by_code["TL402"]
    assert f402.probe.status is ProbeStatus.CONFIRMED, explain(report)
    assert "from_logits=False" in f402.probe.evidence and "from_logits=True" in f402.probe.evidence


@keras_probe
def test_missing_num_labels_confirmed_with_offending_labels(course):
    report, by_code = course
    f = by_code["TL301"]
    assert f.probe.status is ProbeStatus.CONFIRMED, explain(report)
    ev = f.probe.evidence
    # The whole label column of both splits (96 + 32 rows, labels i % 3), recorded before the row cut.
    assert "{0: 43, 1: 43, 2: 42}" in ev and "num_labels = 2" in ev, ev
    assert "128 rows, read before the probe's row cut" in ev and "in the first batch at positions" in ev, ev
    assert "Received a label value of 2 which is outside the valid range of [0, 2)" in ev, ev
    assert "TL106" not in by_code  # the same observation, attached to the static TL301


@keras_probe
def test_string_optimizer_shows_default_learning_rate(course):
    report, by_code = course
    f = by_code["TL501"]
    assert f.probe.status is ProbeStatus.CONFIRMED, explain(report)
    assert "Adam (tf-keras), learning_rate=0.001" in f.probe.evidence, f.probe.evidence


@keras_probe
def test_padded_batch_without_attention_mask_found_by_the_run(course):
    report, by_code = course
    f = by_code["TL205"]  # probe-only here: no static finding was given
    assert f.probe.status is ProbeStatus.CONFIRMED, explain(report)
    assert "no attention_mask" in f.message and "pad_token_id 0" in f.probe.evidence


# ---------------------------------------------------------------- the fixed script


@keras_probe
def test_fixed_course_script_is_clear(kpy: str, tf_fixtures: Path, tmp_path: Path):
    text = FIXED.format(fix=str(tf_fixtures))
    compile_line = line_of(text, "model.compile(")
    findings = [
        static("TL501", "string-optimizer", compile_line),
        static("TL301", "missing-num-labels", line_of(text, "from_pretrained(")),
        static("TL401", "keras-loss-with-labels-in-features", compile_line),
    ]
    report, by_code = probe(tmp_path, kpy, text, findings)
    assert stopped_at_fit(report), explain(report)
    for code in ("TL501", "TL301", "TL401"):
        assert by_code[code].probe.status is ProbeStatus.NOT_REPRODUCED, explain(report)
    confirmed = [f.code for f in report.findings if f.probe and f.probe.status is ProbeStatus.CONFIRMED]
    assert confirmed == [], explain(report)
    notes = "\n".join(report.notes)
    assert "learning_rate=5.00e-5" in notes and "num_labels = 3" in notes, notes
    assert "trainable variables moved" in notes, notes  # TL506: one train_step moves the weights


@keras_probe
def test_course_fix_with_tensorflow_keras_optimizer_is_tl808(kpy: str, tf_fixtures: Path, tmp_path: Path):
    """The course's own fix, `from tensorflow.keras.optimizers import Adam`, imported before transformers'
    TF code loads: a Keras 3 optimizer for a tf-keras model; compile raises, mapped to TL808."""
    text = FIXED.format(fix=str(tf_fixtures)).replace(
        "from tf_keras.optimizers import Adam", "from tensorflow.keras.optimizers import Adam"
    )
    report, by_code = probe(tmp_path, kpy, text)
    f = by_code["TL808"]
    assert f.probe.status is ProbeStatus.CONFIRMED, explain(report)
    assert "Could not interpret optimizer identifier" in f.probe.evidence, f.probe.evidence
    assert f.start.row == line_of(text, "model.compile("), explain(report)
    assert "TL707" not in by_code, explain(report)


# ---------------------------------------------------------------- plain Keras models


@keras_probe
def test_keras3_labels_in_features_raises_and_is_confirmed(kpy: str, tmp_path: Path):
    text = PLAIN.format(keras="keras")
    report, by_code = probe(tmp_path, kpy, text, [static("TL401", "keras-loss-with-labels-in-features",
                                                         line_of(text, "model.compile(optimizer=\"adam\""))],
                            overfit=6)
    assert any("on Keras 3" in n for n in report.notes), explain(report)
    f = by_code["TL401"]
    assert f.probe.status is ProbeStatus.CONFIRMED, explain(report)
    assert "None values not supported" in f.probe.evidence, f.probe.evidence
    # The probe carries on with (features, labels): a from_logits=False loss on logits cannot fit.
    assert by_code["TL402"].probe.status is ProbeStatus.CONFIRMED, explain(report)
    # --overfit ran on the corrected batch and the curve was plotted and classified.
    plot = next(d for d in report.details if d.startswith("overfit one batch (16 rows), 6 steps"))
    assert "likely causes:" in plot, plot


@keras_probe
def test_fixed_keras3_pipeline_overfits_one_batch(kpy: str, tmp_path: Path):
    report, by_code = probe(tmp_path, kpy, PLAIN.format(keras="keras"), overfit=40, args=["--fixed"])
    assert stopped_at_fit(report), explain(report)
    assert [f.code for f in report.findings] == [], explain(report)
    # --overfit runs at the schedule's peak (warmup_target 1e-2 at step 4), not its current value.
    assert any(n.startswith("overfit at the schedule's peak learning_rate 0.01") and ": pass" in n
               for n in report.notes), explain(report)
    assert any("schedule starts at 0 (warmup)" in n for n in report.notes), explain(report)
    assert "TL506" not in by_code, explain(report)
    plot = next(d for d in report.details if d.startswith("overfit one batch"))
    assert "*" in plot and "step 1" in plot


# A Keras 3 model whose input does not match the data: fit would raise in the forward pass. The probe
# must report it (a finding at the fit line), never "all clear".
SHAPE_MISMATCH = """\
import numpy as np
import keras

x = np.random.default_rng(0).normal(size=(64, 5)).astype("float32")
y = (x[:, 0] > 0).astype("int64")
inp = keras.Input(shape=(8,))
model = keras.Model(inp, keras.layers.Dense(2)(inp))
model.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x, y, batch_size=16)
"""


@keras_probe
def test_keras3_forward_error_is_a_finding_not_all_clear(kpy: str, tmp_path: Path):
    report, by_code = probe(tmp_path, kpy, SHAPE_MISMATCH)
    f = by_code.get("TL707")
    assert f is not None and f.probe.status is ProbeStatus.CONFIRMED, explain(report)
    assert "forward pass on one batch raises" in f.message and "model.fit() would fail" in f.message
    assert f.start.row == line_of(SHAPE_MISMATCH, "model.fit("), explain(report)


@keras_probe
def test_head_width_wins_over_a_reassigned_num_labels(kpy: str, tf_fixtures: Path, tmp_path: Path):
    """id2label reassigned after a 2-output head was built: config.num_labels says 3, the logits have 2
    columns; labels 0..2 are out of range of the head, and the evidence says why."""
    text = FIXED.format(fix=str(tf_fixtures)).replace(
        'from_pretrained(f"{FIX}/bert", num_labels=3)',
        'from_pretrained(f"{FIX}/bert", num_labels=2)\n'
        'model.config.id2label = {0: "entailment", 1: "neutral", 2: "contradiction"}',
    )
    assert "num_labels=2" in text
    report, by_code = probe(tmp_path, kpy, text)
    f = by_code.get("TL106")
    assert f is not None and f.probe.status is ProbeStatus.CONFIRMED, explain(report)
    assert "outside [0, 2)" in f.message and "model.config.num_labels = 3" in f.message, f.message


# A hand-written GradientTape loop (Keras 3); without --fixed the forward pass runs outside the tape:
# every gradient is None and the weights never move.
TAPE_LOOP = """\
import sys
import numpy as np
import tensorflow as tf
import keras

x = np.random.default_rng(0).normal(size=(32, 8)).astype("float32")
y = (x[:, 0] > 0).astype("int64")
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(2)])
optimizer = keras.optimizers.Adam(1e-2)
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


def train_step(x, y):
    if "--fixed" in sys.argv:
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
    else:
        logits = model(x, training=True)
        with tf.GradientTape() as tape:
            loss = loss_fn(y, logits)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    return loss


if "--traced" in sys.argv:  # the keras-io custom training loop guide's form
    train_step = tf.function(train_step)
for step in range(100):
    loss = train_step(x, y)
"""


@keras_probe
@pytest.mark.parametrize("fixed, traced", [(False, False), (True, False), (False, True), (True, True)])
def test_gradient_tape_loop_weights_must_move(kpy: str, tmp_path: Path, fixed: bool, traced: bool):
    args = (["--fixed"] if fixed else []) + (["--traced"] if traced else [])
    report, by_code = probe(tmp_path, kpy, TAPE_LOOP, args=args)
    if fixed:
        assert [f.code for f in report.findings] == [], explain(report)
        assert any("stopped the GradientTape loop after observing two optimizer steps" in n
                   for n in report.notes), explain(report)
        return
    f = by_code.get("TL506")
    assert f is not None and f.probe.status is ProbeStatus.CONFIRMED, explain(report)
    assert "no gradient reached any of the 2 variables" in f.message and "outside" in f.probe.evidence
    # Eager: the line of apply_gradients; traced: the body runs as AutoGraph's copy, the call of the step.
    assert f.start.row == line_of(TAPE_LOOP, "loss = train_step(x, y)" if traced else "optimizer.apply_gradients("), \
        explain(report)
    assert report.outcome == "reached-training", explain(report)


@keras_probe
@pytest.mark.parametrize("traced", [False, True])
def test_gradient_tape_loop_softmax_into_a_logits_loss_is_tl403(kpy: str, tmp_path: Path, traced: bool):
    """A custom training step's loss_fn(from_logits=True) given a softmax layer's output: found by the run
    (the traced Softmax op, or eager rows that sum to 1), not left "not reached"."""
    text = TAPE_LOOP.replace("keras.layers.Dense(2)]", 'keras.layers.Dense(2, activation="softmax")]')
    report, by_code = probe(tmp_path, kpy, text, args=["--fixed"] + (["--traced"] if traced else []))
    f = by_code.get("TL403")
    assert f is not None and f.probe.status is ProbeStatus.CONFIRMED, explain(report)
    assert ("traced op" in f.probe.evidence and "Softmax" in f.probe.evidence) if traced \
        else "sum to 1" in f.probe.evidence, explain(report)
    if not traced:
        assert f.start.row == line_of(text, "loss = loss_fn(y, model(x, training=True))"), explain(report)


# ---------------------------------------------------------------- through the CLI


@keras_probe
def test_cli_probe_tf_keras_labels_in_features_target_data_missing(kpy: str, tmp_path: Path):
    """`trainlint --probe --python TF_ENV/bin/python`: trainlint lives here, the script runs there."""
    if not (ROOT / "trainlint" / "cli.py").exists():
        pytest.fail("trainlint/cli.py is missing")
    script = tmp_path / "train_keras.py"
    script.write_text(PLAIN.format(keras="tf_keras"), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "trainlint", "--probe", "--python", kpy, "--output-format", "json", str(script)],
        capture_output=True, text=True, timeout=TIMEOUT + 60, cwd=tmp_path,
    )
    assert proc.returncode in (0, 1), proc.stderr[-3000:]
    by_code = {d["code"]: d for d in json.loads(proc.stdout)}
    assert "TL401" in by_code, proc.stdout
    probe_result = by_code["TL401"]["probe"]
    assert probe_result["status"] == "confirmed", proc.stdout
    # Keras 2 (tf-keras) raises on the missing targets; the evidence quotes it.
    assert "Target data is missing" in probe_result["evidence"], probe_result


# ---------------------------------------------------------------- the shared loss-curve classifier (no TF)


@pytest.mark.parametrize(
    ("losses", "kind"),
    [
        ([1.1, 0.7, 0.3, 0.05, 0.01, 0.005], "pass"),
        ([1.1, 1.3, 1.8, 2.5, 3.0], "goes up"),
        ([1.1, 2.0, float("nan")], "explodes"),
        ([1.0, 2.0, 50.0, 3000.0], "explodes"),
        ([1.0, 1.5, 0.8, 1.6, 0.7, 1.5, 0.9, 1.4], "oscillates"),
        ([1.1, 1.098, 1.1, 1.099, 1.097, 1.098], "plateaus"),
        ([8.134, 8.081, 7.491, 7.218, 7.15, 7.099, 7.08, 7.07], "plateaus"),
        ([1.1, 1.0, 0.9, 0.8, 0.7, 0.6], "slow"),
    ],
)
def test_curve_classifier(losses, kind):
    from trainlint.probe.child import curve

    verdict = curve.classify(losses)
    assert verdict.kind == kind, verdict
    assert verdict.ok == (kind in ("pass", "slow"))
    text = curve.plot(losses)
    assert text.count("\n") >= 8 and "step 1" in text
