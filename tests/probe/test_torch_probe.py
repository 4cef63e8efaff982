"""The PyTorch runtime probe: each course bug confirmed with its evidence, a hand-written
loop without zero_grad, the fixed script all clear, and scripts that hang / exit / raise / never train
ending with a clear result. Each test runs one probe child (a few seconds: torch+transformers import).
"""

from __future__ import annotations

import json
import os
import random
import signal
import tempfile
import textwrap
from pathlib import Path

import pytest

from trainlint.findings import Finding, Position, ProbeStatus, Severity
from trainlint.probe import ProbeOptions, ProbeReport, run_probe

pytestmark = pytest.mark.probe

# The course script (chapter 8, "Debugging the training pipeline"), on transformers 5, fixed.
FIXED = '''\
import os

import numpy as np
from datasets import load_dataset
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    DataCollatorWithPadding,
    Trainer,
    TrainingArguments,
)

CKPT = os.environ["TINY_CKPT"]
raw_datasets = load_dataset("csv", data_files={"train": os.environ["TINY_CSV"], "validation": os.environ["TINY_VAL_CSV"]})
tokenizer = AutoTokenizer.from_pretrained(CKPT)


def preprocess_function(examples):
    return tokenizer(examples["premise"], examples["hypothesis"], truncation=True)


tokenized_datasets = raw_datasets.map(preprocess_function, batched=True)
model = AutoModelForSequenceClassification.from_pretrained(CKPT, num_labels=3)


def compute_metrics(eval_pred):
    predictions, labels = eval_pred
    predictions = np.argmax(predictions, axis=-1)
    return {"accuracy": float((predictions == labels).mean())}


args = TrainingArguments(
    "distilbert-finetuned-mnli",
    eval_strategy="epoch",
    save_strategy="epoch",
    learning_rate=2e-5,
    num_train_epochs=3,
    weight_decay=0.01,
    per_device_train_batch_size=8,
)
trainer = Trainer(
    model,
    args,
    train_dataset=tokenized_datasets["train"],
    eval_dataset=tokenized_datasets["validation"],
    data_collator=DataCollatorWithPadding(tokenizer),
    processing_class=tokenizer,
    compute_metrics=compute_metrics,
)
trainer.train()
'''


def variant(*replacements: tuple[str, str]) -> str:
    source = FIXED
    for old, new in replacements:
        assert old in source, old
        source = source.replace(old, new)
    return source


def line_of(source: str, text: str) -> int:
    for i, line in enumerate(source.splitlines(), 1):
        if text in line:
            return i
    raise AssertionError(text)


def static(script: Path, code: str, line: int) -> Finding:
    """A finding as the static pass reports it (the probe must confirm or refute it)."""
    return Finding(code=code, name="static", message=f"static {code}", severity=Severity.ERROR,
                   filename=str(script), start=Position(line, 1), end=Position(line, 2))


def write(tmp_path: Path, source: str, name: str = "train.py") -> Path:
    project = tmp_path / "project"
    project.mkdir(exist_ok=True)
    script = project / name
    script.write_text(textwrap.dedent(source), encoding="utf-8")
    return script


def probe(script: Path, statics: list[Finding] = (), **options) -> ProbeReport:
    options.setdefault("timeout", 120.0)
    return run_probe(script, list(statics), ProbeOptions(**options))


def by_code(report: ProbeReport, code: str) -> list[Finding]:
    return [f for f in report.findings if f.code == code]


def confirmed(report: ProbeReport) -> list[Finding]:
    return [f for f in report.findings if f.probe and f.probe.status is ProbeStatus.CONFIRMED]


def explain(report: ProbeReport) -> str:
    lines = [f"outcome={report.outcome}"]
    lines += [f"{f.code} {f.probe.status.value if f.probe else '-'} {f.message} :: {f.probe.evidence if f.probe else ''}"
              for f in report.findings]
    lines += report.notes + report.details[-3:]
    return "\n".join(lines)


# ---------------------------------------------------------------- the course bugs


def test_raw_dataset_to_trainer_confirmed(tiny_env, tmp_path):
    source = variant(('train_dataset=tokenized_datasets["train"]', 'train_dataset=raw_datasets["train"]'))
    script = write(tmp_path, source)
    report = probe(script, [static(script, "TL101", line_of(source, 'train_dataset=raw_datasets'))])
    assert report.outcome == "reached-training", explain(report)
    [f] = [f for f in by_code(report, "TL101") if f.message == "static TL101"]
    assert f.probe.status is ProbeStatus.CONFIRMED, explain(report)
    assert "input_ids" in f.probe.evidence and "premise" in f.probe.evidence
    # The static finding carries the evidence; the probe does not invent a second raw-train finding.
    assert not [x for x in by_code(report, "TL101") if "train_dataset" in x.message and x is not f]


def test_no_padding_collator_confirmed_with_lengths(tiny_env, tmp_path):
    source = variant(("    data_collator=DataCollatorWithPadding(tokenizer),\n    processing_class=tokenizer,\n", ""))
    script = write(tmp_path, source)
    report = probe(script, [static(script, "TL201", line_of(source, "trainer = Trainer("))])
    [f] = by_code(report, "TL201")
    assert f.probe.status is ProbeStatus.CONFIRMED, explain(report)
    assert "input_ids lengths in the batch: [" in f.probe.evidence
    lengths = json.loads(f.probe.evidence.split("lengths in the batch: ")[1].split("]")[0] + "]")
    assert len(lengths) == 8 and len(set(lengths)) > 1


def test_missing_num_labels_confirmed_over_whole_label_column(tiny_env, tmp_path):
    source = variant(("from_pretrained(CKPT, num_labels=3)", "from_pretrained(CKPT)"))
    script = write(tmp_path, source)
    report = probe(script, [static(script, "TL301", line_of(source, "AutoModelForSequenceClassification.from_pretrained"))])
    [f] = by_code(report, "TL301")
    assert f.probe.status is ProbeStatus.CONFIRMED, explain(report)
    # Whole column (600 training rows and 120 validation rows, before the 256-row cut), offending values and counts.
    assert "720 rows" in f.probe.evidence
    assert "0×240, 1×240, 2×240" in f.probe.evidence
    assert "num_labels = 2" in f.probe.evidence and "out of range: 2×240" in f.probe.evidence
    # The same observation is not reported twice (no separate TL106 when TL301 carries it).
    assert not by_code(report, "TL106"), explain(report)
    assert any("600 → 256 rows" in n for n in report.notes)


def test_compute_metrics_without_argmax_confirmed(tiny_env, tmp_path):
    source = variant(("    predictions = np.argmax(predictions, axis=-1)\n", ""))
    script = write(tmp_path, source)
    report = probe(script, [static(script, "TL601", line_of(source, "def compute_metrics"))])
    [f] = by_code(report, "TL601")
    assert f.probe.status is ProbeStatus.CONFIRMED, explain(report)
    assert "float32 array of shape (8, 3)" in f.probe.evidence
    assert "label_ids: int64 array of shape (8,)" in f.probe.evidence
    assert "could not be broadcast" in f.probe.evidence
    # The training side of the pipeline was probed and is fine.
    assert not [x for x in confirmed(report) if x.code != "TL601"], explain(report)


def test_trainer_tokenizer_argument_type_error_at_user_line(tiny_env, tmp_path):
    source = variant(("processing_class=tokenizer,", "tokenizer=tokenizer,"))
    script = write(tmp_path, source)
    statics = [static(script, "TL804", line_of(source, "tokenizer=tokenizer,")),
               static(script, "TL301", line_of(source, "from_pretrained(CKPT"))]
    report = probe(script, statics)
    assert report.outcome == "script-error", explain(report)
    [f] = by_code(report, "TL804")
    assert f.probe.status is ProbeStatus.CONFIRMED
    assert "TypeError" in f.probe.evidence and "tokenizer" in f.probe.evidence
    assert f"train.py:{line_of(source, 'trainer = Trainer(')}" in f.probe.evidence
    # The run stopped before the label check: not reached, not "not reproduced".
    [g] = by_code(report, "TL301")
    assert g.probe.status is ProbeStatus.NOT_REACHED
    assert not by_code(report, "TL707")


# ---------------------------------------------------------------- hand-written loop

LOOP = '''\
import os

import torch
from transformers import AutoModelForSequenceClassification

model = AutoModelForSequenceClassification.from_pretrained(os.environ["TINY_CKPT"])
optimizer = torch.optim.AdamW(model.parameters())
model.eval()

torch.manual_seed(0)
input_ids = torch.randint(5, 40, (4, 12))
labels = torch.tensor([0, 1, 0, 1])
for step in range(1000):
    outputs = model(input_ids=input_ids, labels=labels)
    loss = outputs.loss
    loss.backward()
    optimizer.step()
print("trained")
'''


def test_loop_without_zero_grad_and_in_eval_mode(tiny_env, tmp_path):
    script = write(tmp_path, LOOP)
    statics = [static(script, "TL701", line_of(LOOP, "for step")),
               static(script, "TL502", line_of(LOOP, "AdamW")),
               static(script, "TL705", line_of(LOOP, "model.eval()"))]  # a code the loop probe never checks
    report = probe(script, statics, tiny_model=True, overfit=10)
    assert report.outcome == "reached-training", explain(report)
    assert any("--overfit 10: the loop's batch of step 2" in n for n in report.notes), report.notes
    [f] = by_code(report, "TL701")
    assert f.probe.status is ProbeStatus.CONFIRMED, explain(report)
    assert "still hold step 1's gradients" in f.probe.evidence
    [m] = by_code(report, "TL702")
    assert m.probe.status is ProbeStatus.CONFIRMED and m.start.row == line_of(LOOP, "loss.backward()")
    assert "training == False" in m.probe.evidence
    [lr] = by_code(report, "TL502")
    assert lr.probe.status is ProbeStatus.CONFIRMED and "0.001" in lr.probe.evidence
    [other] = by_code(report, "TL705")
    # A code the loop probe has no check for is neither confirmed nor cleared by the run.
    assert other.probe.status not in (ProbeStatus.CONFIRMED, ProbeStatus.NOT_REPRODUCED)
    assert any("--tiny-model" in n for n in report.notes), report.notes
    assert any("two optimizer steps" in n for n in report.notes)


# ---------------------------------------------------------------- the fixed script


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*")}


def test_fixed_script_all_clear_and_writes_nothing(tiny_env, tmp_path, monkeypatch):
    script = write(tmp_path, FIXED)
    project = script.parent
    monkeypatch.chdir(project)  # `TrainingArguments("distilbert-finetuned-mnli")` is relative to here
    temp_root = tmp_path / "tmp"
    temp_root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp_root))  # where the runner makes its temp dir
    statics = [static(script, "TL201", line_of(FIXED, "trainer = Trainer(")),
               static(script, "TL301", line_of(FIXED, "from_pretrained(CKPT, num_labels")),
               static(script, "TL601", line_of(FIXED, "def compute_metrics")),
               static(script, "TL101", line_of(FIXED, "train_dataset=")),
               static(script, "TL805", line_of(FIXED, "eval_strategy"))]
    before_tree = _tree(project)
    report = probe(script, statics, verbose=True)
    assert report.outcome == "reached-training", explain(report)
    assert not confirmed(report), explain(report)
    assert {f.code: f.probe.status for f in report.findings} == dict.fromkeys(
        ("TL201", "TL301", "TL601", "TL101", "TL805"), ProbeStatus.NOT_REPRODUCED), explain(report)
    assert any("effective learning rate 2e-05" in n for n in report.notes)
    assert any("decoded" in d and "[CLS]" in d for d in report.details), report.details
    assert _tree(project) == before_tree  # no output_dir, no cache, no __pycache__ in the project
    assert list(temp_root.iterdir()) == []  # the probe's temporary directory is gone
    if report.isolated:
        assert any("read-only" in n for n in report.notes)
    else:
        assert any(n.startswith("not isolated") for n in report.notes)


@pytest.mark.parametrize("flag", ["bf16", "fp16"])
def test_precision_flags_of_a_gpu_run_are_all_clear(tiny_env, tmp_path, flag):
    """bf16=True (trl's default) and fp16=True are right on the cluster: on the probe's CPU they are turned
    off before TrainingArguments validates them ("Your setup doesn't support bf16/gpu"), and said."""
    source = variant(("    per_device_train_batch_size=8,\n", f"    per_device_train_batch_size=8,\n    {flag}=True,\n"))
    script = write(tmp_path, source)
    report = probe(script)
    assert report.outcome == "reached-training", explain(report)
    assert not confirmed(report) and not report.incomplete, explain(report)
    assert any(f"{flag}=True: {flag} " in n and "emulated in float32 on CPU" in n for n in report.notes), explain(report)


def test_both_precision_flags_are_still_the_scripts_error(tiny_env, tmp_path):
    source = variant(("    per_device_train_batch_size=8,\n", "    per_device_train_batch_size=8,\n    fp16=True,\n    bf16=True,\n"))
    script = write(tmp_path, source)
    report = probe(script)
    assert report.outcome == "script-error", explain(report)
    assert any("At most one of fp16 and bf16" in f.probe.evidence for f in confirmed(report)), explain(report)


def test_probabilities_into_the_loss_of_a_trainer(tiny_env, tmp_path):
    """A compute_loss_func that takes the softmax of the logits (kept from prediction code) before
    cross_entropy: the loss function is observed on the Trainer's path too, the finding placed at the
    softmax's line (a static TL403 there is confirmed, not left "not reached")."""
    source = variant(
        ("import numpy as np\n", "import numpy as np\nimport torch\n"),
        ("def compute_metrics(eval_pred):",
         "def loss_on_probabilities(outputs, labels, num_items_in_batch=None):\n"
         "    probs = torch.softmax(outputs.logits, dim=-1)\n"
         "    return torch.nn.functional.cross_entropy(probs, labels)\n\n\ndef compute_metrics(eval_pred):"),
        ("    compute_metrics=compute_metrics,\n)", "    compute_metrics=compute_metrics,\n"
         "    compute_loss_func=loss_on_probabilities,\n)"),
    )
    script = write(tmp_path, source)
    at = line_of(source, "probs = torch.softmax(")
    report = probe(script, [static(script, "TL403", at)])
    assert report.outcome == "reached-training", explain(report)
    [f] = by_code(report, "TL403")
    assert f.probe.status is ProbeStatus.CONFIRMED and f.start.row == at, explain(report)
    assert "SoftmaxBackward0" in f.probe.evidence and "ln(1 + 2/e)" in f.probe.evidence, explain(report)


def test_overfit_explodes_with_huge_learning_rate(tiny_env, tmp_path):
    source = variant(("learning_rate=2e-5", "learning_rate=50.0"))
    script = write(tmp_path, source)
    report = probe(script, overfit=6)
    [f] = by_code(report, "TL706")
    assert f.probe.status is ProbeStatus.CONFIRMED, explain(report)
    assert "explodes" in f.message and "learning rate too high" in f.message
    assert any("|" in d and "step 1" in d for d in report.details)  # the terminal plot


# ---------------------------------------------------------------- scripts that never get there


def test_hang_is_killed_at_the_timeout(tmp_path):
    token = f"600.{random.randrange(10**6, 10**7)}"  # a unique `sleep` argument to find the process by
    script = write(tmp_path, f'''\
        import subprocess
        import time

        child = subprocess.Popen(["sleep", {token!r}])
        print("started", child.pid)
        time.sleep(600)
        ''')
    report = probe(script, [static(script, "TL301", 1)], timeout=6.0)
    assert report.outcome == "timeout"
    assert any("timed out after 6s" in n and "train.py:6" in n for n in report.notes), report.notes
    assert by_code(report, "TL301")[0].probe.status is ProbeStatus.NOT_REACHED
    # The whole process group was killed, the script's own children too.
    survivors = _processes(["sleep", token])
    for pid in survivors:  # never leave one behind, even when the test fails
        os.kill(pid, signal.SIGKILL)
    assert not survivors


def _processes(argv: list[str]) -> list[int]:
    """Live (not zombie) processes with this command line."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if cmdline[: len(argv)] == [a.encode() for a in argv] and state != "Z":
            found.append(int(proc.name))
    return found


def test_sys_exit_before_training(tmp_path):
    script = write(tmp_path, "import sys\n\nif len(sys.argv) < 3:\n    sys.exit(2)\n")
    report = probe(script, [static(script, "TL201", 1)], timeout=30.0, script_args=("--epochs",))
    assert report.outcome == "exited"
    assert any("sys.exit(2) at train.py:4" in n for n in report.notes), report.notes
    assert by_code(report, "TL201")[0].probe.status is ProbeStatus.NOT_REACHED


def test_exception_before_training_at_the_users_line(tmp_path):
    script = write(tmp_path, 'import json\n\n\ndef load(path):\n    return json.load(open(path))\n\n\nconfig = load("missing.json")\n')
    report = probe(script, timeout=30.0)
    assert report.outcome == "script-error"
    [f] = by_code(report, "TL707")
    assert f.start.row == 5 and f.probe.status is ProbeStatus.CONFIRMED
    assert "FileNotFoundError" in f.message and "train.py:5" in f.probe.evidence


def test_script_that_never_reaches_training(tmp_path):
    script = write(tmp_path, 'print("preprocessing only")\n')
    report = probe(script, [static(script, "TL601", 1)], timeout=30.0)
    assert report.outcome == "finished"
    assert any("without reaching a training call" in n for n in report.notes)
    assert by_code(report, "TL601")[0].probe.status is ProbeStatus.NOT_REACHED


def test_model_not_available_offline_is_a_clear_result(tiny_env, tmp_path):
    source = 'from transformers import AutoModelForSequenceClassification\n\nmodel = AutoModelForSequenceClassification.from_pretrained("some-org/never-downloaded")\n'
    script = write(tmp_path, source)
    report = probe(script, [static(script, "TL301", 3)])
    # A missing asset is a probe status with instructions, never a finding against the script.
    assert report.outcome == "asset-missing", explain(report)
    assert not confirmed(report), explain(report)
    assert by_code(report, "TL301")[0].probe.status is ProbeStatus.NOT_REACHED
    assert any("'some-org/never-downloaded' is not in the local cache (at train.py:3)" in n
               and "trainlint probe --prefetch train.py" in n and "--tiny-model" in n for n in report.notes), report.notes


# ---------------------------------------------------------------- through the CLI


def test_cli_probe_json(tiny_env, tmp_path, cli):
    source = variant(("from_pretrained(CKPT, num_labels=3)", "from_pretrained(CKPT)"))
    script = write(tmp_path, source)
    result = cli("--probe", str(script), "--output-format", "json", "--probe-timeout", "120", cwd=script.parent)
    assert result.returncode == 1, result.stderr
    data = json.loads(result.stdout)
    items = data if isinstance(data, list) else data.get("findings", data)
    probed = [d for d in items if d.get("probe")]
    assert any(d["code"] in ("TL301", "TL106") and d["probe"]["status"] == "confirmed"
               and "out of range: 2×240" in d["probe"]["evidence"] for d in probed), result.stdout
