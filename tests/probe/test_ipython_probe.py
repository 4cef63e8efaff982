"""The live probe in an in-process IPython shell: ``%trainlint probe trainer`` on the course's Trainer built
in the kernel (a tiny local checkpoint), ``%trainlint probe model --loader --optimizer --loss`` on a
hand-written loop's objects; the findings confirmed with the sandboxed probe's codes and evidence, and
the user's objects left as they were."""

from __future__ import annotations

from pathlib import Path

import pytest

from support import ipython_shell, need_modules, run_cell

pytestmark = pytest.mark.probe

need_modules("IPython", "torch", "transformers", "datasets")

COURSE_CELLS = [
    "import os\nimport numpy as np\nfrom datasets import load_dataset\n"
    "from transformers import AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer, "
    "TrainingArguments",
    'CKPT = os.environ["TINY_CKPT"]\nraw_datasets = load_dataset("csv", data_files={"train": os.environ["TINY_CSV"], '
    '"validation": os.environ["TINY_VAL_CSV"]})\ntokenizer = AutoTokenizer.from_pretrained(CKPT)',
    'def preprocess_function(examples):\n    return tokenizer(examples["premise"], examples["hypothesis"], truncation=True)\n\n'
    "tokenized_datasets = raw_datasets.map(preprocess_function, batched=True)",
    "model = AutoModelForSequenceClassification.from_pretrained(CKPT, num_labels=3)",
    "def compute_metrics(eval_pred):\n    predictions, labels = eval_pred\n    predictions = np.argmax(predictions, axis=-1)\n"
    '    return {"accuracy": float((predictions == labels).mean())}',
    'args = TrainingArguments(OUT, eval_strategy="epoch", learning_rate=2e-5, per_device_train_batch_size=8, '
    'report_to="none")',
    'trainer = Trainer(\n    model,\n    args,\n    train_dataset=tokenized_datasets["train"],\n'
    '    eval_dataset=tokenized_datasets["validation"],\n    data_collator=DataCollatorWithPadding(tokenizer),\n'
    "    processing_class=tokenizer,\n    compute_metrics=compute_metrics,\n)",
]


def buggy_cells() -> list[str]:
    cells = list(COURSE_CELLS)
    cells[3] = cells[3].replace(", num_labels=3", "")
    cells[6] = cells[6].replace("    data_collator=DataCollatorWithPadding(tokenizer),\n    processing_class=tokenizer,\n", "")
    return cells


@pytest.fixture
def shell(tiny_env, tmp_path):
    for sh in ipython_shell():
        sh.user_ns["OUT"] = str(tmp_path / "out")
        yield sh


def run(sh, source):
    result, cap = run_cell(sh, source)
    assert result.error_in_exec is None and result.error_before_exec is None, (source, cap.stdout, cap.stderr)
    return [o.data for o in cap.outputs]


def state_of(sh):
    """What the probe must leave as it was, by value."""
    import random

    import numpy as np
    import torch

    tr = sh.user_ns["trainer"]
    return {
        "params": {k: v.detach().clone() for k, v in tr.model.state_dict().items()},
        "modes": [m.training for m in tr.model.modules()],
        "optimizer": tr.optimizer,
        "scheduler": tr.lr_scheduler,
        "torch_rng": torch.random.get_rng_state().clone(),
        "np_rng": np.random.get_state()[1].copy(),
        "py_rng": random.getstate(),
        "global_step": tr.state.global_step,
        "log_history": list(tr.state.log_history),
        "trainer_attrs": sorted(vars(tr)),
        "accelerate": (tr.accelerator.gradient_state.active_dataloader,
                       list(tr.accelerator.gradient_state.dataloader_references), list(tr.accelerator._dataloaders)),
        "grads": [p.grad for p in tr.model.parameters()],
        "output_dir": sorted(str(p) for p in Path(tr.args.output_dir).rglob("*")) if Path(tr.args.output_dir).exists()
        else None,
    }


def assert_same(before, after):
    import numpy as np
    import torch

    assert before["params"].keys() == after["params"].keys()
    for k, v in before["params"].items():
        assert torch.equal(v, after["params"][k]), k
    assert before["modes"] == after["modes"]
    assert after["optimizer"] is before["optimizer"] and after["scheduler"] is before["scheduler"]
    assert torch.equal(before["torch_rng"], after["torch_rng"])
    assert np.array_equal(before["np_rng"], after["np_rng"])
    assert before["py_rng"] == after["py_rng"]
    assert before["global_step"] == after["global_step"] and before["log_history"] == after["log_history"]
    assert before["trainer_attrs"] == after["trainer_attrs"]
    assert before["accelerate"] == after["accelerate"]
    assert all(g is None for g in after["grads"])
    assert before["output_dir"] == after["output_dir"]  # nothing written to the output directory


def probe_text(outputs) -> str:
    [data] = [o for o in outputs if "trainlint probe" in o.get("text/plain", "")]
    return data["text/plain"]


def test_buggy_course_trainer_confirmed_live_and_left_as_it_was(shell, tmp_path):
    run(shell, "%load_ext trainlint")
    cells = buggy_cells()
    shown = [run(shell, c) for c in cells]
    # the static finding of the Trainer cell is shown under it as it runs
    assert any("TL201" in b["text/plain"] for b in shown[-1]), shown[-1]
    before = state_of(shell)
    shell.user_ns["trainer"].model.eval()  # a mode the probe must give back
    before["modes"] = [m.training for m in shell.user_ns["trainer"].model.modules()]
    out = run(shell, "%trainlint probe trainer")
    text = probe_text(out)
    # the same codes and evidence as `trainlint --probe` (tests/probe/test_torch_probe.py)
    assert "TL201 [confirmed]" in text and "input_ids lengths in the batch: [" in text, text
    # labels against the head, over the whole label column (TL106, which also confirms a static TL301)
    assert "TL106 [confirmed]" in text and "num_labels = 2" in text and "out of range: 2×200" in text, text
    assert "whole label column of the Trainer's train_dataset, 600 rows: 0×200, 1×200, 2×200" in text
    assert "confirmed by the live probe" in text
    html = [o for o in out if "trainlint probe" in o.get("text/plain", "")][0]["text/html"]
    assert "TL106" in html and "confirmed" in html
    assert_same(before, state_of(shell))


def test_fixed_course_trainer_all_clear_live_with_overfit(shell, tmp_path):
    run(shell, "%load_ext trainlint")
    shown = [run(shell, c) for c in COURSE_CELLS]
    assert not any(b for outs in shown for b in outs), shown
    run(shell, "trainer.create_optimizer()\ntrainer.create_scheduler(10, trainer.optimizer)")
    before = state_of(shell)
    opt_state = {k: v for k, v in before["optimizer"].state_dict().items() if k != "state"}
    text = probe_text(run(shell, "%trainlint probe trainer"))
    assert "[confirmed]" not in text and "All checks passed on the live objects." in text, text
    assert_same(before, state_of(shell))
    # --overfit: 3 steps at the Trainer's lr 2e-5 do not move the loss of the tiny model; the check's own
    # reference run (Adam from the same weights) is what tells, and the objects are restored after both
    text = probe_text(run(shell, "%trainlint probe trainer --overfit 3"))
    assert "--overfit 3: one batch" in text and "from the same initial weights" in text, text
    after = state_of(shell)
    assert_same(before, after)
    assert not after["optimizer"].state  # the probe's steps left no optimizer state
    assert {k: v for k, v in after["optimizer"].state_dict().items() if k != "state"} == opt_state


def test_hand_written_loop_live(shell):
    run(shell, "%load_ext trainlint")
    run(shell, "import torch\nfrom torch import nn\nfrom torch.utils.data import DataLoader, TensorDataset\n"
               "torch.manual_seed(0)\nmodel = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))\n"
               "ds = TensorDataset(torch.randn(32, 4), torch.randint(0, 3, (32,)))\n"
               "dl = DataLoader(ds, batch_size=8, shuffle=True)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
               "loss_fn = nn.CrossEntropyLoss()")
    import torch

    model = shell.user_ns["model"]
    params = [p.detach().clone() for p in model.parameters()]
    rng = torch.random.get_rng_state().clone()
    text = probe_text(run(shell, "%trainlint probe model --loader dl --optimizer opt --loss loss_fn"))
    assert "All checks passed on the live objects." in text, text
    assert all(torch.equal(a, b) for a, b in zip(params, model.parameters()))
    assert torch.equal(rng, torch.random.get_rng_state()) and not shell.user_ns["opt"].state
    # a frozen model: the loop's own check names it
    run(shell, "model.requires_grad_(False)")
    text = probe_text(run(shell, "%trainlint probe model --loader dl --optimizer opt --loss loss_fn"))
    assert "TL305 [confirmed]" in text or "TL308 [confirmed]" in text, text
    assert not any(p.requires_grad for p in model.parameters())


def test_probe_usage_errors(shell):
    run(shell, "%load_ext trainlint")
    result, _ = run_cell(shell, "%trainlint probe trainer")
    assert "no Trainer in the namespace" in str(result.error_in_exec)
    run(shell, "import torch\nm = torch.nn.Linear(2, 2)")
    result, _ = run_cell(shell, "%trainlint probe m")
    assert "--loader NAME --optimizer NAME --loss NAME" in str(result.error_in_exec)


# ---------------------------------------------------------------- Keras (in the TF virtualenv)

KERAS_SCRIPT = '''
import json, sys
import numpy as np
import tensorflow as tf
import keras
from trainlint.ipython.live import ProbeRequest, run_live_probe

keras.utils.set_random_seed(0)
x = np.random.rand(64, 6).astype("float32")
ds = tf.data.Dataset.from_tensor_slices((x, (np.arange(64) % int(sys.argv[1])).astype("int64"))).batch(8)
model = keras.Sequential([keras.Input((6,)), keras.layers.Dense(8, activation="relu"), keras.layers.Dense(2)])
model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
clean = tf.data.Dataset.from_tensor_slices((x, (np.arange(64) % 2).astype("int64"))).batch(8)
model.fit(clean, epochs=1, verbose=0)  # the optimizer has state now
weights = model.get_weights()
slots = [v.numpy().copy() for v in model.optimizer.variables]
rng = np.random.get_state()[1].copy()
report = run_live_probe(ProbeRequest("model", data="ds"), {"model": model, "ds": ds}, [])
same = (all(np.array_equal(a, b) for a, b in zip(weights, model.get_weights()))
        and all(np.array_equal(a, v.numpy()) for a, v in zip(slots, model.optimizer.variables))
        and np.array_equal(rng, np.random.get_state()[1]))
print("RESULT " + json.dumps({"unchanged": bool(same), "complete": report.complete, "findings": [
    [f.code, f.probe.status.value, f.probe.evidence] for f in report.findings]}))
'''


@pytest.mark.keras
@pytest.mark.parametrize("classes", [3, 2])
def test_keras_model_live_in_the_tf_environment(tmp_path, classes):
    """The Keras live probe (no IPython needed: the extension's probe function) in the TF environment,
    with trainlint's own dependencies from this one."""
    import importlib.util
    import json
    import os
    import subprocess

    from test_keras_probe import ROOT, keras_python

    deps = tmp_path / "deps"
    deps.mkdir()
    for name in ("libcst", "yaml"):
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.submodule_search_locations
        (deps / name).symlink_to(list(spec.submodule_search_locations)[0])
    script = tmp_path / "live_keras.py"
    script.write_text(KERAS_SCRIPT, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{deps}", "TF_CPP_MIN_LOG_LEVEL": "3"}
    proc = subprocess.run([keras_python(), str(script), str(classes)], capture_output=True, text=True, env=env,
                          timeout=300)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line is not None, proc.stdout[-2000:] + proc.stderr[-3000:]
    got = json.loads(line[7:])
    assert got["unchanged"] and got["complete"], got
    if classes == 3:
        [(code, status, evidence)] = got["findings"]
        assert (code, status) == ("TL106", "confirmed")
        assert "labels over all 64 rows of the tf.data.Dataset" in evidence and "output width 2" in evidence
    else:
        assert got["findings"] == []
