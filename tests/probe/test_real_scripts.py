"""The probe on real public training scripts of eleven shapes (tests/data/probe_real/).

Each script there is our own transcription of a public script it names in its header (transformers'
run_glue.py, run_glue_no_trainer.py, run_clm_no_trainer.py and TF run_text_classification.py,
accelerate's nlp_example.py, keras-io's text_classification_from_scratch.py, trl's sft.py, run_ner.py,
peft's LoRA sequence-classification example, pytorch/examples' mnist/main.py, Lightning's backbone_image_classifier.py): same structure, API calls,
argument parsing and data flow, shortened and pointed at the tiny local fixtures by command-line
arguments or environment variables, as a user would run the real one. Each correct script must be all
clear; each injected bug (a small text substitution, named after the real failure it reproduces) must
be confirmed under its code at the script's line. One probe child per test.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from support import keras_python, need_modules
from trainlint.findings import ProbeStatus
from trainlint.probe import ProbeOptions, run_probe

DATA = Path(__file__).resolve().parents[1] / "data" / "probe_real"
ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 180.0


def variant(name: str, *replacements: tuple[str, str]) -> str:
    source = (DATA / name).read_text(encoding="utf-8")
    for old, new in replacements:
        assert source.count(old) == 1, f"{old!r} is not once in {name}"
        source = source.replace(old, new)
    return source


def probe(tmp_path: Path, name: str, replacements=(), args: tuple[str, ...] = (), python: str | None = None,
          overfit: int = 0):
    text = variant(name, *replacements)
    script = tmp_path / name
    script.write_text(text, encoding="utf-8")
    report = run_probe(script, [], ProbeOptions(python=python, timeout=TIMEOUT, verbose=True, script_args=args,
                                                overfit=overfit))
    assert report.outcome != "timeout", explain(report)
    return report, text


def explain(report) -> str:
    lines = [f"{f.code} {f.probe.status.value if f.probe else '-'} @{f.start.row}: {f.message} | "
             f"{f.probe.evidence if f.probe else ''}" for f in report.findings]
    return "\n".join([f"outcome {report.outcome}", *lines, *report.notes, *report.incomplete, *report.details[-4:]])


def assert_all_clear(report) -> None:
    """Reached the training call, every check ran, nothing confirmed (a static finding the probe did not
    reproduce is allowed: it does not fail the run)."""
    assert report.outcome == "reached-training", explain(report)
    assert not report.incomplete, explain(report)
    bad = [f for f in report.findings if f.probe is None or f.probe.status is ProbeStatus.CONFIRMED]
    assert not bad, explain(report)


def line_of(text: str, marker: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if marker in line)


def assert_confirmed(report, text: str, code: str, at: str, *words: str):
    found = [f for f in report.findings if f.code == code and f.probe is not None
             and f.probe.status is ProbeStatus.CONFIRMED]
    assert found, explain(report)
    f = found[0]
    assert f.start.row == line_of(text, at), explain(report)
    for word in words:
        assert word in f.message + " " + f.probe.evidence, explain(report)
    return f


# ---------------------------------------------------------------- PyTorch: Trainer, accelerate, no_trainer


def glue_args(tiny: Path) -> tuple[str, ...]:
    return ("--model_name_or_path", str(tiny / "bert"), "--train_file", str(tiny / "mnli.csv"),
            "--validation_file", str(tiny / "mnli_val.csv"), "--output_dir", "out/glue")


RUN_GLUE = "run_glue.py"
SFT = "sft.py"
RUN_NER = "run_ner.py"
PEFT = "peft_lora_seq_cls.py"
MNIST = "mnist_main.py"
LIGHTNING = "lit_image_classifier.py"
GLUE_TRAINER_ARGS = ("--do_train", "--do_eval", "--max_seq_length", "64", "--per_device_train_batch_size", "16",
                     "--num_train_epochs", "1", "--report_to", "none")

# (test id, script, replacements, code, line marker, words in the message or evidence)
TORCH_BUGS = [
    # forum: "ValueError: expected sequence of length .. at dim 1" after switching to dynamic padding
    # while keeping default_data_collator
    ("run_glue-dynamic-padding-default-collator", RUN_GLUE,
     [('        padding = "max_length"', "        padding = False")], "TL201", "data_collator = default_data_collator",
     ("lengths",)),
    # num_labels left out of AutoConfig: a 2-way head for 3 classes; the script then writes a 3-entry
    # id2label on the config, so only the head's width tells the truth
    ("run_glue-num-labels-dropped", RUN_GLUE,
     [("        num_labels=num_labels,\n        cache_dir", "        cache_dir")], "TL106", "= trainer.train(",
     ("2 outputs",)),
    ("nlp_example-zero-grad-between-backward-and-step", "nlp_example.py",
     [("            accelerator.backward(loss)\n            if step", "            accelerator.backward(loss)\n"
       "            optimizer.zero_grad()\n            if step"),
      ("                lr_scheduler.step()\n                optimizer.zero_grad()\n", "                lr_scheduler.step()\n")],
     "TL506", "optimizer.zero_grad()", ("every p.grad is None",)),
    ("nlp_example-lr-zero", "nlp_example.py", [('"lr": 2e-5', '"lr": 0.0')], "TL506", "optimizer.step()",
     ("lr=0",)),
    ("nlp_example-num-labels-dropped", "nlp_example.py", [("num_labels=3, ", "")], "TL106",
     "outputs = model(**batch)", ("out of bounds",)),
    ("run_glue_no_trainer-default-collator-unpadded", "run_glue_no_trainer.py",
     [("data_collator = DataCollatorWithPadding(tokenizer, pad_to_multiple_of=None)",
       "data_collator = default_data_collator")], "TL201", "for step, batch in enumerate(train_dataloader):",
     ("different lengths",)),
    ("run_glue_no_trainer-labels-not-written", "run_glue_no_trainer.py",
     [('        if "label" in examples:', '        if "labels" in examples:')], "TL707",
     "loss = loss / args.gradient_accumulation_steps", ("returned no loss", "batch keys")),
    ("run_clm_no_trainer-group-texts-without-labels", "run_clm_no_trainer.py",
     [('        result["labels"] = result["input_ids"].copy()\n', "")], "TL707", "accelerator.backward(loss)",
     ("returned no loss",)),
    ("run_clm_no_trainer-group-texts-skipped", "run_clm_no_trainer.py",
     [('    train_dataset = lm_datasets["train"]', '    train_dataset = tokenized_datasets["train"]')], "TL201",
     "for step, batch in enumerate(train_dataloader):", ("different lengths",)),
    # the sequence-classification collator kept for token classification: it pads input_ids, not the
    # per-token labels (found at the collator's line, on the labels column)
    ("run_ner-padding-collator-for-token-labels", RUN_NER,
     [("    DataCollatorForTokenClassification,\n", "    DataCollatorWithPadding,\n"),
      ("data_collator = DataCollatorForTokenClassification(", "data_collator = DataCollatorWithPadding(")],
     "TL201", "data_collator = DataCollatorWithPadding(", ("`labels`", "DataCollatorForTokenClassification")),
    ("run_ner-num-labels-dropped", RUN_NER, [("        num_labels=num_labels,\n", "")], "TL106",
     "= trainer.train(", ("out of bounds",)),
    # the optimizer made before get_peft_model: it holds the base weights peft froze, not the adapters
    ("peft-optimizer-before-get-peft-model", PEFT,
     [("model = get_peft_model(model, peft_config)\nmodel.print_trainable_parameters()\n\n"
       "optimizer = AdamW(params=model.parameters(), lr=lr)\n",
       "optimizer = AdamW(params=model.parameters(), lr=lr)\nmodel = get_peft_model(model, peft_config)\n"
       "model.print_trainable_parameters()\n")],
     "TL504", "optimizer = AdamW(params=model.parameters(), lr=lr)",
     ("no .grad", "PeftModelForSequenceClassification")),
    ("peft-num-labels-dropped", PEFT, [("num_labels=3, ", "")], "TL106", "        outputs = model(**batch)",
     ("out of bounds",)),
    # softmax kept from inference code: nll_loss on probabilities is -p
    ("mnist-softmax-into-nll-loss", MNIST, [("output = F.log_softmax(x, dim=1)", "output = F.softmax(x, dim=1)")],
     "TL403", "output = F.softmax(x, dim=1)", ("SoftmaxBackward0", "between -1 and 0")),
    ("mnist-log-softmax-dropped", MNIST, [("output = F.log_softmax(x, dim=1)", "output = x")],
     "TL409", "loss = F.nll_loss(output, target)", ("logsumexp",)),
    # the LightningModule's forward made for predictions returns probabilities; training_step takes them
    ("lightning-softmax-in-forward", LIGHTNING,
     [("        return self.backbone(x)", "        return F.softmax(self.backbone(x), dim=-1)")],
     "TL403", "return F.softmax(self.backbone(x), dim=-1)", ("applied at lit_image_classifier.py:", "ln(1 + 9/e)")),
    ("lightning-learning-rate-zero", LIGHTNING, [('"--learning_rate", type=float, default=0.0001',
                                                  '"--learning_rate", type=float, default=0.0')],
     "TL506", "trainer.fit(model, datamodule=datamodule)", ("lr=0",)),
    ("run_clm_no_trainer-zero-grad-forgotten", "run_clm_no_trainer.py",
     [("                lr_scheduler.step()\n                optimizer.zero_grad()\n", "                lr_scheduler.step()\n")],
     "TL701", "accelerator.backward(loss)", ("still hold step 1's gradients",)),
]


def torch_args(name: str, tiny: Path) -> tuple[str, ...]:
    if name == RUN_GLUE:
        return glue_args(tiny) + GLUE_TRAINER_ARGS
    if name == "run_glue_no_trainer.py":
        return glue_args(tiny) + ("--per_device_train_batch_size", "16")
    if name == "run_clm_no_trainer.py":
        return ("--model_name_or_path", str(tiny / "bert"), "--train_file", str(tiny / "mnli.csv"),
                "--output_dir", "out/clm", "--block_size", "32", "--per_device_train_batch_size", "8")
    if name == RUN_NER:
        return ("--model_name_or_path", str(tiny / "bert"), "--train_file", str(tiny / "ner.json"),
                "--validation_file", str(tiny / "ner_val.json"), "--do_train", "--do_eval", "--output_dir", "out/ner",
                "--per_device_train_batch_size", "8", "--report_to", "none")
    if name == PEFT:
        return (str(tiny / "bert"), str(tiny / "mnli.csv"), str(tiny / "mnli_val.csv"))
    if name == MNIST:
        return ("--epochs", "1")
    if name == LIGHTNING:
        return ("--max_epochs", "1")
    if name == SFT:
        return ("--model_name_or_path", str(tiny / "gpt2"), "--dataset_name", str(tiny / "text"),
                "--output_dir", "out/sft", "--per_device_train_batch_size", "4", "--max_length", "64",
                "--eos_token", "[SEP]")
    return ()


#: the Python modules a script needs beyond torch, transformers and datasets
NEEDS = {SFT: ("trl",), PEFT: ("peft",), LIGHTNING: ("lightning",)}


@pytest.mark.probe
@pytest.mark.parametrize("name", [RUN_GLUE, "nlp_example.py", "run_glue_no_trainer.py", "run_clm_no_trainer.py", SFT,
                                  RUN_NER, PEFT, MNIST, LIGHTNING])
def test_correct_torch_script_is_all_clear(tiny_env, tmp_path, name):
    need_modules(*NEEDS.get(name, ()))
    report, _ = probe(tmp_path, name, args=torch_args(name, tiny_env))
    assert_all_clear(report)
    if name == SFT:
        # SFTConfig's bf16=True, turned off before TrainingArguments validates it; the loss of a fresh
        # language model is compared with ln(vocabulary), not ln(num_labels)
        assert any("bf16=True: bf16 emulated in float32 on CPU" in n for n in report.notes), explain(report)
    if name == LIGHTNING:
        # lightning_logs/ and its checkpoints in the working directory, redirected like --output_dir
        assert any("Lightning output redirected" in n and "default_root_dir" in n for n in report.notes), explain(report)
    if "--output_dir" in torch_args(name, tiny_env) and name != RUN_GLUE:
        # the script's own os.makedirs(args.output_dir) runs in the read-only sandbox
        assert any("output options redirected" in n and "--output_dir out/" in n for n in report.notes), explain(report)


@pytest.mark.probe
@pytest.mark.parametrize(("name", "replacements", "code", "at", "words"),
                         [pytest.param(*case[1:], id=case[0]) for case in TORCH_BUGS])
def test_injected_torch_bug_is_confirmed(tiny_env, tmp_path, name, replacements, code, at, words):
    need_modules(*NEEDS.get(name, ()))
    report, text = probe(tmp_path, name, replacements, args=torch_args(name, tiny_env))
    f = assert_confirmed(report, text, code, at, *words)
    if code == "TL201" and name == RUN_GLUE:
        # a tokenizer was given (processing_class): the collator named in the script is the culprit
        assert "no tokenizer given" not in f.message, explain(report)


# ---------------------------------------------------------------- TensorFlow / Keras


@pytest.fixture(scope="module")
def tf_tiny(tiny_tf) -> Path:
    """The tiny TF checkpoint and tokenizer (tests/fixtures/tiny_tf.py) and an MNLI-like CSV."""
    return tiny_tf


@pytest.fixture(scope="module")
def imdb_dir(tmp_path_factory) -> Path:
    return write_imdb(tmp_path_factory.mktemp("aclImdb"))


def write_imdb(root: Path) -> Path:
    """An aclImdb-shaped folder: train/{pos,neg} and test/{pos,neg} with short reviews."""
    rng = random.Random(0)
    good = ["great", "wonderful", "loved", "superb", "moving", "brilliant", "fun", "beautiful"]
    bad = ["awful", "boring", "hated", "terrible", "dull", "weak", "bad", "waste"]
    common = ["the", "movie", "film", "actors", "story", "was", "and", "plot", "really", "a", "<br />", "it"]
    for split, n in (("train", 40), ("test", 16)):
        for cls, words in (("pos", good), ("neg", bad)):
            folder = root / split / cls
            folder.mkdir(parents=True)
            for i in range(n):
                text = " ".join(rng.choice(common + words + words) for _ in range(rng.randint(20, 60)))
                (folder / f"{i}_{rng.randint(1, 10)}.txt").write_text(text + ".", encoding="utf-8")
    return root


TF_SCRIPT = "run_text_classification_tf.py"
KERAS_SCRIPT = "text_classification_from_scratch.py"


def tf_args(tiny: Path) -> tuple[str, ...]:
    return ("--model_name_or_path", str(tiny / "bert"), "--tokenizer_name", str(tiny / "tokenizer"),
            "--train_file", str(tiny / "mnli.csv"), "--validation_file", str(tiny / "mnli_val.csv"), "--do_train",
            "--do_eval", "--output_dir", "out/tf", "--max_seq_length", "48", "--per_device_train_batch_size", "16",
            "--num_train_epochs", "1")


KERAS_BUGS = [
    # the TF course chapter's first compile: a string optimizer on a pretrained model (lr 1e-3)
    ("run_text_classification-string-optimizer", TF_SCRIPT,
     [("model.compile(optimizer=optimizer, metrics=metrics)", 'model.compile(optimizer="adam", metrics=metrics)')],
     "TL501", "        model.compile(", ("learning_rate=0.001",)),
    # a Keras loss that expects probabilities on the logits of a transformers model
    ("run_text_classification-probabilities-loss-on-logits", TF_SCRIPT,
     [("model.compile(optimizer=optimizer, metrics=metrics)",
       'model.compile(optimizer=optimizer, loss="sparse_categorical_crossentropy", metrics=metrics)')],
     "TL402", "        model.compile(", ("from_logits=True",)),
    # from_logits=True over the sigmoid output layer
    ("text_classification-from-logits-on-sigmoid", KERAS_SCRIPT,
     [('model.compile(loss="binary_crossentropy",', "model.compile(loss=keras.losses.BinaryCrossentropy(from_logits=True),")],
     "TL403", "model.compile(loss=", ("sigmoid",)),
    # the raw string dataset given to fit (vectorize_text not mapped): fit raises in the forward pass
    ("text_classification-raw-strings-to-fit", KERAS_SCRIPT,
     [("train_ds = raw_train_ds.map(vectorize_text)", "train_ds = raw_train_ds")], "TL707", "model.fit(",
     ("forward pass",)),
    ("text_classification-lr-zero", KERAS_SCRIPT,
     [('optimizer="adam", metrics', "optimizer=keras.optimizers.Adam(learning_rate=0.0), metrics")], "TL506", "model.fit(",
     ("unchanged",)),
]


@pytest.mark.keras
@pytest.mark.probe
@pytest.mark.parametrize("name", [TF_SCRIPT, KERAS_SCRIPT])
def test_correct_keras_script_is_all_clear(tf_tiny, imdb_dir, monkeypatch, tmp_path, name):
    monkeypatch.setenv("ACLIMDB_DIR", str(imdb_dir))
    report, _ = probe(tmp_path, name, args=tf_args(tf_tiny) if name == TF_SCRIPT else (), python=keras_python())
    assert_all_clear(report)
    if name == KERAS_SCRIPT:
        # one sigmoid unit with binary_crossentropy: labels 0 and 1 are in range
        assert any("with a binary loss" in n for n in report.notes), explain(report)


@pytest.mark.keras
@pytest.mark.probe
@pytest.mark.parametrize(("name", "replacements", "code", "at", "words"),
                         [pytest.param(*case[1:], id=case[0]) for case in KERAS_BUGS])
def test_injected_keras_bug_is_confirmed(tf_tiny, imdb_dir, monkeypatch, tmp_path, name, replacements, code, at,
                                         words):
    monkeypatch.setenv("ACLIMDB_DIR", str(imdb_dir))
    report, text = probe(tmp_path, name, replacements, args=tf_args(tf_tiny) if name == TF_SCRIPT else (),
                         python=keras_python())
    assert_confirmed(report, text, code, at, *words)


@pytest.mark.keras
@pytest.mark.probe
def test_overfit_at_the_scripts_fine_tuning_rate_is_no_false_tl706(tf_tiny, tmp_path):
    """--overfit 20 on the correct script: PolynomialDecay from 5e-5 leaves a tiny random model's loss flat in
    20 steps; the same batch from the same weights with Adam at the reference rate decides (not TL706)."""
    report, _ = probe(tmp_path, TF_SCRIPT, args=tf_args(tf_tiny), python=keras_python(), overfit=20)
    assert report.outcome == "reached-training", explain(report)
    assert not [f for f in report.findings if f.code == "TL706"], explain(report)
    said = report.notes + report.incomplete
    assert any("Adam(lr=0.001) from the same initial weights" in t for t in said), explain(report)


# ---------------------------------------------------------------- writes outside the sandbox's temp dir


def test_output_options_point_into_the_work_directory():
    from trainlint.probe.child.main import redirect_output_args

    argv, changed = redirect_output_args(
        ["t.py", "--output_dir", "out", "--logging-dir=runs", "--train_file", "a.csv", "--save_path", "/w/x/m.pt",
         "--resume_from_checkpoint", "ckpt", "--output_dir", "-"], "/w/x")
    assert argv == ["t.py", "--output_dir", "/w/x/outputs/1", "--logging-dir=/w/x/outputs/2", "--train_file", "a.csv",
                    "--save_path", "/w/x/m.pt", "--resume_from_checkpoint", "ckpt", "--output_dir", "-"]
    assert changed == ["--output_dir out", "--logging-dir runs"]


@pytest.mark.probe
def test_a_write_the_sandbox_refuses_is_a_status_not_a_finding(tmp_path):
    script = tmp_path / "writes.py"
    script.write_text("import os\nos.makedirs('results/run1', exist_ok=True)\n", encoding="utf-8")
    report = run_probe(script, [], ProbeOptions(timeout=60))
    if not report.isolated:
        pytest.skip("no read-only sandbox on this machine: the write succeeds")
    assert report.outcome == "unsupported", explain(report)
    assert not report.findings, explain(report)
    assert any("read-only" in i and "results" in i for i in report.incomplete), explain(report)


@pytest.mark.probe
def test_a_script_error_is_not_called_before_training(cli, tmp_path):
    script = tmp_path / "fails.py"
    script.write_text("raise ValueError('boom')\n", encoding="utf-8")
    result = cli("--probe", "--probe-timeout", "60", str(script))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "the probe stopped at the script's error (script-error)" in result.stdout, result.stdout


@pytest.mark.probe
def test_a_download_the_offline_probe_cannot_make_is_asset_missing(tmp_path):
    # keras-io's examples start with keras.utils.get_file(origin=URL): offline, urlretrieve fails and
    # Keras re-raises a bare Exception("URL fetch failure on ...") from the URLError.
    script = tmp_path / "download.py"
    script.write_text(
        "import urllib.error, urllib.request\n"
        "try:\n"
        "    urllib.request.urlretrieve('https://data.invalid/aclImdb_v1.tar.gz', 'a.tgz')\n"
        "except urllib.error.URLError as e:\n"
        "    raise Exception('URL fetch failure on https://data.invalid/aclImdb_v1.tar.gz: None -- ' + str(e.reason))\n",
        encoding="utf-8")
    report = run_probe(script, [], ProbeOptions(timeout=60))
    assert report.outcome == "asset-missing", explain(report)
    assert not report.findings, explain(report)
