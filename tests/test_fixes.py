"""Autofixes: every fixable rule-doc example and the bundled buggy examples are fixed into code that
parses, a second `--fix` changes nothing, safe fixes silence their rule, only the edited lines change,
files are written atomically, `--diff` writes nothing, unsafe fixes need `--unsafe-fixes`."""

from __future__ import annotations

import ast
import difflib
import json
import os
import shutil
import stat
import textwrap

import libcst as cst
import pytest

from support import ROOT, run_cli
from trainlint.config import Settings
from trainlint.docs import load_doc
from trainlint.engine import lint_text
from trainlint.findings import Applicability, Edit, Finding, Fix, Position, Severity
from trainlint.fixes import apply_fixes, fix_file, fix_source, to_unified_diff, write_atomic
from trainlint.rule import all_rules

FIXABLE = {code: rule for code, rule in all_rules().items() if rule.fix is not None}
#: the course chapter's scripts (the offline probe example has no safe fix: its bugs need decisions)
BUGGY = sorted((ROOT / "examples").glob("mnli_*_buggy.py"))


def _doc_examples():
    for code in sorted(FIXABLE):
        doc = load_doc(code)
        if doc is None:
            continue
        for i, ex in enumerate(doc.bad):
            # only examples that get a fix; test_every_fixable_rule_shows_a_fix_in_its_doc makes sure
            # each fixable rule has at least one
            if not ex.probe_only and _gets_a_fix(code, ex.code, ex.filename):
                yield pytest.param(code, ex.code, ex.filename, id=f"{code}-example{i + 1}")


def _gets_a_fix(code: str, source: str, filename: str) -> bool:
    return any(f.code == code and f.fix is not None
               for f in lint_text(source, filename, Settings(select=[code])).findings)


DOC_EXAMPLES = list(_doc_examples())


def _parses(source: str) -> None:
    ast.parse(source)
    cst.parse_module(source)


def _changed_rows_only(old: str, new: str, fixed: list[Finding]) -> None:
    """Lines of ``old`` outside the rows the fixes' edits cover come through unchanged, in order."""
    rows: set[int] = set()
    for f in fixed:
        for e in f.fix.edits:
            last = e.end.row if e.end.column > 1 or e.end.row == e.start.row else e.end.row - 1
            rows.update(range(e.start.row, last + 1))
    a, b = old.splitlines(), new.splitlines()
    for tag, i1, i2, _, _ in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):
            touched = set(range(i1 + 1, i2 + 1))
            assert touched <= rows, f"lines {sorted(touched - rows)} changed but no edit covers them"


# ---------------------------------------------------------------------------------------------
# Every fixable example of the catalog.


def test_every_fixable_rule_shows_a_fix_in_its_doc():
    missing = []
    for code in sorted(FIXABLE):
        doc = load_doc(code)
        if doc is None:
            continue
        offered = False
        for ex in doc.bad:
            if ex.probe_only:
                continue
            res = lint_text(ex.code, ex.filename, Settings(select=[code]))
            offered |= any(f.code == code and f.fix is not None for f in res.findings)
        if not offered:
            missing.append(code)
    assert not missing, f"rules with a `fix` attribute whose doc examples get no fix: {missing}"


def test_fix_applicability_matches_the_rule_attribute():
    """As the rule declares, except that a safe fix importing a module the script does not provide (neither
    imported, nor needed by an API it uses, nor named by its install evidence) is unsafe (TL801's `import
    evaluate` in these examples)."""
    for code, ex_code, filename in (p.values for p in DOC_EXAMPLES):
        for f in lint_text(ex_code, filename, Settings(select=[code])).findings:
            if f.code == code and f.fix is not None:
                imports_new = any(line.lstrip().startswith(("import ", "from ")) and line.split()[1].split(".")[0]
                                  not in ex_code for e in f.fix.edits for line in e.content.splitlines())
                downgraded = FIXABLE[code].fix is Applicability.SAFE and f.fix.applicability is Applicability.UNSAFE
                assert f.fix.applicability is FIXABLE[code].fix or (downgraded and imports_new), (code, f.fix)


@pytest.mark.parametrize("code,source,filename", DOC_EXAMPLES)
def test_doc_example_fix(code, source, filename):
    settings = Settings(select=[code])
    before = lint_text(source, filename, settings).findings
    fixes = [f for f in before if f.code == code and f.fix is not None]
    assert fixes
    unsafe = any(f.fix.applicability is Applicability.UNSAFE for f in fixes)
    # one pass: only the edited lines change
    one, applied = apply_fixes(source, before, unsafe=unsafe)
    assert applied
    _changed_rows_only(source, one, applied)
    # to the end: code that parses, the rule silenced, idempotent
    result = fix_source(source, filename, settings, unsafe=unsafe)
    assert result.error is None
    assert result.source != source
    _parses(result.source)
    assert not [f for f in result.remaining if f.code == code and f.fix is not None]
    if not unsafe:
        assert code not in [f.code for f in result.remaining], result.source
    again = fix_source(result.source, filename, settings, unsafe=unsafe)
    assert again.source == result.source and not again.fixed
    # with every rule on too
    everything = fix_source(source, filename, Settings(select=["ALL"]), unsafe=True)
    _parses(everything.source)
    assert fix_source(everything.source, filename, Settings(select=["ALL"]), unsafe=True).source == everything.source


@pytest.mark.parametrize("code,source,filename", [p for p in DOC_EXAMPLES
                                                  if FIXABLE[p.values[0]].fix is Applicability.UNSAFE])
def test_unsafe_doc_fixes_are_not_applied_without_unsafe_fixes(code, source, filename):
    result = fix_source(source, filename, Settings(select=[code]), unsafe=False)
    assert result.source == source and not result.fixed


# ---------------------------------------------------------------------------------------------
# The bundled course scripts, through the CLI.


@pytest.mark.parametrize("path", BUGGY, ids=[p.name for p in BUGGY])
def test_buggy_example_fix_through_the_cli(path, tmp_path):
    target = tmp_path / path.name
    shutil.copy(path, target)
    original = target.read_text()

    diff = run_cli("--diff", "--unsafe-fixes", target.name, cwd=tmp_path)
    assert diff.returncode == 1, diff.stderr
    assert diff.stdout.startswith(f"--- a/{target.name}\n+++ b/{target.name}\n")
    assert target.read_text() == original  # --diff writes nothing

    safe = run_cli("--fix", target.name, cwd=tmp_path)
    assert safe.returncode in (0, 1), safe.stderr
    after_safe = target.read_text()
    assert "Fixed" in safe.stdout
    _parses(after_safe)
    relint = lint_text(after_safe, target.name, Settings())
    assert not [f for f in relint.findings if f.fix is not None and f.fix.applicability is Applicability.SAFE]
    # unsafe fixes were left for --unsafe-fixes
    assert [f for f in relint.findings if f.fix is not None and f.fix.applicability is Applicability.UNSAFE]

    full = run_cli("--fix", "--unsafe-fixes", target.name, cwd=tmp_path)
    assert full.returncode in (0, 1), full.stderr
    fixed = target.read_text()
    _parses(fixed)
    assert not [f for f in lint_text(fixed, target.name, Settings()).findings if f.fix is not None]
    # idempotent: a second run changes nothing
    again = run_cli("--fix", "--unsafe-fixes", target.name, cwd=tmp_path)
    assert target.read_text() == fixed
    assert "Fixed" not in again.stdout
    nodiff = run_cli("--diff", "--unsafe-fixes", target.name, cwd=tmp_path)
    assert nodiff.returncode == 0 and nodiff.stdout == ""


def test_trainer_example_fixes_in_detail(tmp_path):
    target = tmp_path / "train.py"
    shutil.copy(ROOT / "examples" / "mnli_trainer_buggy.py", target)
    proc = run_cli("--fix", "--unsafe-fixes", "train.py", cwd=tmp_path)
    assert proc.returncode == 1  # TL101 (raw datasets) has no fix and remains
    text = target.read_text()
    assert 'eval_strategy="epoch"' in text and "evaluation_strategy" not in text
    assert "from_pretrained(CHECKPOINT, num_labels=3)" in text
    assert "accuracy.compute(predictions=np.argmax(logits, axis=-1), references=labels)" in text
    assert "import numpy as np\n" in text
    assert "        data_collator=DataCollatorWithPadding(tokenizer),\n    )" in text
    assert "from transformers import DataCollatorWithPadding\n" in text
    assert [line for line in proc.stdout.splitlines() if " TL" in line and "TL101" not in line] == []


def test_keras_example_fixes_in_detail(tmp_path):
    target = tmp_path / "train.py"
    shutil.copy(ROOT / "examples" / "mnli_keras_buggy.py", target)
    run_cli("--fix", "train.py", cwd=tmp_path)
    text = target.read_text()
    assert "loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)" in text
    assert 'optimizer="adam"' in text  # unsafe: needs --unsafe-fixes
    run_cli("--fix", "--unsafe-fixes", "train.py", cwd=tmp_path)
    text = target.read_text()
    assert "optimizer=tf.keras.optimizers.Adam(learning_rate=5e-5)" in text
    assert 'load_dataset("glue", "mnli")' in text


# ---------------------------------------------------------------------------------------------
# Individual fixes.


def _fixed(source: str, select: str = "ALL", unsafe: bool = True) -> str:
    source = textwrap.dedent(source)
    result = fix_source(source, "train.py", Settings(select=[select]), unsafe=unsafe)
    assert result.error is None
    _parses(result.source)
    return result.source


def test_load_metric_import_and_calls():
    out = _fixed("""\
        from datasets import load_dataset, load_metric

        metric = load_metric("glue", "mrpc")
        """, "TL801")
    assert out == 'from datasets import load_dataset\nimport evaluate\n\nmetric = evaluate.load("glue", "mrpc")\n'


def test_load_metric_alone_and_aliased_and_attribute():
    out = _fixed("""\
        import datasets
        from datasets import load_metric as lm

        a = lm("accuracy")
        b = datasets.load_metric("f1")
        """, "TL801")
    assert out == 'import datasets\nimport evaluate\n\na = evaluate.load("accuracy")\nb = evaluate.load("f1")\n'


def test_load_metric_with_evaluate_already_imported():
    out = _fixed("""\
        import evaluate
        from datasets import load_metric
        m = load_metric("accuracy")
        """, "TL801")
    assert out == 'import evaluate\nm = evaluate.load("accuracy")\n'


def test_load_metric_not_fixed_when_passed_around():
    src = "from datasets import load_metric\nloader = load_metric\n"
    assert _fixed(src, "TL801") == src


def test_transformers_adamw_keeps_its_defaults():
    out = _fixed("""\
        from transformers import AdamW, get_scheduler

        opt = AdamW(model.parameters(), lr=5e-5)
        opt2 = AdamW(
            model.parameters(),
            lr=5e-5,
            weight_decay=0.01,
        )
        """, "TL802")
    assert out == textwrap.dedent("""\
        from transformers import get_scheduler
        from torch.optim import AdamW

        opt = AdamW(model.parameters(), lr=5e-5, eps=1e-6, weight_decay=0.0)
        opt2 = AdamW(
            model.parameters(),
            lr=5e-5,
            weight_decay=0.01,
            eps=1e-6,
        )
        """)


def test_transformers_adamw_attribute_and_parenthesized_import():
    # the import is fixed first; the attribute then uses the new import
    out = _fixed("""\
        import transformers
        from transformers import (
            Trainer,
            AdamW
        )
        a = transformers.AdamW(params, 1e-3, (0.9, 0.999), 1e-8, 0.0)
        b = AdamW(params, eps=1e-8, weight_decay=0.1)
        """, "TL802")
    assert out == textwrap.dedent("""\
        import transformers
        from transformers import (
            Trainer
        )
        from torch.optim import AdamW
        a = AdamW(params, 1e-3, (0.9, 0.999), 1e-8, 0.0)
        b = AdamW(params, eps=1e-8, weight_decay=0.1)
        """)


def test_adamw_correct_bias_is_not_fixed():
    src = "from transformers import AdamW\nopt = AdamW(params, correct_bias=False)\n"
    assert _fixed(src, "TL802") == src


def test_renamed_keywords_keep_the_layout():
    out = _fixed("""\
        from transformers import Trainer, TrainingArguments
        args = TrainingArguments(
            "out",
            evaluation_strategy = "epoch",  # keep this comment
        )
        trainer = Trainer(model, args, tokenizer=tok)
        dup = Trainer(model, args, tokenizer=tok, processing_class=tok)
        """, "TL8")
    assert 'eval_strategy = "epoch",  # keep this comment' in out
    assert "Trainer(model, args, processing_class=tok)" in out
    assert "Trainer(model, args, tokenizer=tok, processing_class=tok)" in out  # not offered: duplicate keyword


@pytest.mark.parametrize("imports,expected", [
    ("import tensorflow as tf\n", "tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)"),
    ("from tensorflow import keras\n", "keras.losses.SparseCategoricalCrossentropy(from_logits=True)"),
    ("import keras\n", "keras.losses.SparseCategoricalCrossentropy(from_logits=True)"),
    ("from tensorflow.keras import losses\n", "losses.SparseCategoricalCrossentropy(from_logits=True)"),
])
def test_from_logits_follows_the_files_keras_spelling(imports, expected):
    out = _fixed(imports + textwrap.dedent("""\
        from transformers import TFAutoModelForSequenceClassification
        model = TFAutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
        model.compile(optimizer=opt, loss="sparse_categorical_crossentropy")
        """), "TL402")
    assert f"loss={expected})" in out
    assert out.startswith(imports)
    assert out.count("import") == 2  # nothing added


def test_from_logits_added_to_a_loss_object():
    out = _fixed("""\
        import tensorflow as tf
        from transformers import TFAutoModelForSequenceClassification
        model = TFAutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
        loss_fn = tf.keras.losses.SparseCategoricalCrossentropy()
        model.compile(optimizer=opt, loss=loss_fn)
        model.compile(optimizer=opt, loss=tf.keras.losses.CategoricalCrossentropy(from_logits=False))
        """, "TL402")
    assert "loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)" in out
    assert "loss=tf.keras.losses.CategoricalCrossentropy(from_logits=True))" in out


def test_string_optimizer_is_unsafe_and_sets_the_rate():
    src = textwrap.dedent("""\
        from tensorflow import keras
        from transformers import TFAutoModelForSequenceClassification
        model = TFAutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
        model.compile(optimizer="sgd")
        """)
    assert _fixed(src, "TL501", unsafe=False) == src
    assert 'model.compile(optimizer=keras.optimizers.SGD(learning_rate=5e-5))' in _fixed(src, "TL501")


def test_argmax_uses_the_files_numpy_name():
    out = _fixed("""\
        import numpy
        import evaluate
        from transformers import Trainer
        metric = evaluate.load("accuracy")

        def compute_metrics(eval_pred):
            return metric.compute(predictions=eval_pred.predictions, references=eval_pred.label_ids)

        trainer = Trainer(model=model, args=args, compute_metrics=compute_metrics)
        """, "TL601")
    assert "predictions=numpy.argmax(eval_pred.predictions, axis=-1)" in out
    assert "import numpy as np" not in out


def test_data_collator_takes_the_place_of_an_explicit_none():
    out = _fixed("""\
        from datasets import load_dataset
        from transformers import AutoTokenizer, Trainer
        tok = AutoTokenizer.from_pretrained("bert-base-cased")
        ds = load_dataset("glue", "sst2")
        enc = ds.map(lambda b: tok(b["sentence"], truncation=True), batched=True)
        trainer = Trainer(model, args, None, enc["train"])
        """, "TL201")
    assert "trainer = Trainer(model, args, DataCollatorWithPadding(tok), enc[\"train\"])" in out
    assert "from transformers import DataCollatorWithPadding\n" in out


def test_num_labels_replaces_a_wrong_literal():
    out = _fixed("""\
        from datasets import load_dataset
        from transformers import AutoModelForSequenceClassification, Trainer
        ds = load_dataset("glue", "mnli")
        model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
        trainer = Trainer(model=model, train_dataset=ds["train"])
        """, "TL301")
    assert 'from_pretrained("bert-base-cased", num_labels=3)' in out


# ---------------------------------------------------------------------------------------------
# Applying edits.


def _finding(*edits, applicability=Applicability.SAFE, row=1) -> Finding:
    p = Position(row, 1)
    return Finding("TL805", "x", "m", Severity.ERROR, "t.py", p, p,
                   fix=Fix(applicability, "m", tuple(Edit(Position(*a), Position(*b), c) for a, b, c in edits)))


def test_overlapping_fixes_wait_for_the_next_pass():
    src = "abcdef\n"
    first = _finding(((1, 2), (1, 5), "X"))
    second = _finding(((1, 4), (1, 6), "Y"))
    out, applied = apply_fixes(src, [second, first])
    assert out == "aXef\n" and applied == [first]


def test_identical_edits_count_once_and_a_fix_is_all_or_nothing():
    imp = ((2, 1), (2, 1), "import evaluate\n")
    a = _finding(((1, 1), (1, 2), "y"), imp)
    b = _finding(((3, 1), (3, 2), "z"), imp)
    c = _finding(((1, 1), (1, 3), "q"), ((3, 2), (3, 3), "w"))  # overlaps a: not applied at all
    out, applied = apply_fixes("x = 1\n\nx\n", [a, b, c])
    assert out == "y = 1\nimport evaluate\n\nz\n" and applied == [a, b]


def test_unsafe_fixes_only_when_asked():
    f = _finding(((1, 1), (1, 2), "y"), applicability=Applicability.UNSAFE)
    assert apply_fixes("x\n", [f]) == ("x\n", [])
    assert apply_fixes("x\n", [f], unsafe=True) == ("y\n", [f])


def test_inserted_lines_take_the_files_line_endings():
    f = _finding(((2, 1), (2, 1), "import evaluate\n"), ((1, 1), (1, 2), "y"))
    out, _ = apply_fixes("x = 1\r\nz = 2\r\n", [f])
    assert out == "y = 1\r\nimport evaluate\r\nz = 2\r\n"


def test_columns_count_characters():
    f = _finding(((1, 11), (1, 12), "β"))
    out, _ = apply_fixes('s = "é😀"; a\n', [f])
    assert out == 's = "é😀"; β\n'


def test_unified_diff():
    assert to_unified_diff("a\n", "a\n", "f.py") == ""
    d = to_unified_diff("a\nb", "a\nc", "f.py")
    assert d.splitlines() == ["--- a/f.py", "+++ b/f.py", "@@ -1,2 +1,2 @@", " a", "-b",
                              "\\ No newline at end of file", "+c", "\\ No newline at end of file"]


def test_a_fix_that_breaks_the_code_is_dropped(monkeypatch):
    import trainlint.fixes as fixes

    bad = _finding(((1, 1), (1, 1), "def ("))
    src = "import transformers\nx = 1\n"
    result = fixes.fix_source(src, "t.py", Settings(), findings=[bad])
    assert result.source == src and result.error and "does not parse" in result.error


# ---------------------------------------------------------------------------------------------
# Files.

SCRIPT = ('from transformers import TrainingArguments\n'
          'args = TrainingArguments("out", evaluation_strategy="epoch")\n')


def test_fix_writes_atomically_and_keeps_mode_bom_and_line_endings(tmp_path):
    p = tmp_path / "train.py"
    p.write_bytes(b"\xef\xbb\xbf" + SCRIPT.replace("\n", "\r\n").encode())
    p.chmod(0o640)
    inode = p.stat().st_ino
    ff = fix_file(p, Settings())
    assert ff.written
    data = p.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    assert data[3:].decode() == SCRIPT.replace("evaluation_strategy", "eval_strategy").replace("\n", "\r\n")
    assert stat.S_IMODE(p.stat().st_mode) == 0o640
    assert p.stat().st_ino != inode  # a new file replaced the old one (os.replace)
    assert sorted(x.name for x in tmp_path.iterdir()) == ["train.py"]  # no temporary file left


def test_a_failed_write_leaves_the_original_untouched(tmp_path, monkeypatch):
    p = tmp_path / "train.py"
    p.write_text(SCRIPT)

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        write_atomic(p, "partial")
    assert p.read_text() == SCRIPT
    assert sorted(x.name for x in tmp_path.iterdir()) == ["train.py"]


def test_fix_through_a_symlink_rewrites_the_target(tmp_path):
    real = tmp_path / "real.py"
    real.write_text(SCRIPT)
    link = tmp_path / "link.py"
    link.symlink_to(real)
    fix_file(link, Settings())
    assert link.is_symlink() and "eval_strategy" in real.read_text()


def test_cli_diff_writes_nothing_and_exits_1(tmp_path):
    p = tmp_path / "train.py"
    p.write_text(SCRIPT)
    mtime = p.stat().st_mtime_ns
    proc = run_cli("--diff", "train.py", cwd=tmp_path)
    assert proc.returncode == 1
    assert '-args = TrainingArguments("out", evaluation_strategy="epoch")' in proc.stdout
    assert '+args = TrainingArguments("out", eval_strategy="epoch")' in proc.stdout
    assert "Would fix 1 finding." in proc.stderr
    assert p.read_text() == SCRIPT and p.stat().st_mtime_ns == mtime
    p.write_text("import torch\nx = 1\n")
    proc = run_cli("--diff", "train.py", cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout == ""


def test_cli_fix_reports_what_remains(tmp_path):
    p = tmp_path / "train.py"
    p.write_text(SCRIPT + "from transformers import TFTrainer\n")  # TL803: no fix
    proc = run_cli("--fix", "train.py", cwd=tmp_path)
    assert proc.returncode == 1
    assert "TL805" not in proc.stdout and "TL803" in proc.stdout
    assert "Fixed 1 finding." in proc.stdout
    p.write_text(SCRIPT)
    proc = run_cli("--fix", "train.py", cwd=tmp_path)
    assert proc.returncode == 0 and "Fixed 1 finding." in proc.stdout


def test_cli_unsafe_fixes_alone_only_shows_them(tmp_path):
    src = ("from transformers import TFAutoModelForSequenceClassification\n"
           "model = TFAutoModelForSequenceClassification.from_pretrained('bert-base-cased', num_labels=2)\n"
           "model.compile(optimizer='adam')\n")
    p = tmp_path / "train.py"
    p.write_text(src)
    plain = run_cli("train.py", cwd=tmp_path)
    assert "TL501 [*]" not in plain.stdout and "1 hidden fix can be enabled with the `--unsafe-fixes` option" in plain.stdout
    shown = run_cli("--unsafe-fixes", "train.py", cwd=tmp_path)
    assert "TL501 [*]" in shown.stdout and "fixable with `trainlint --fix --unsafe-fixes`" in shown.stdout
    assert p.read_text() == src
    run_cli("--fix", "train.py", cwd=tmp_path)
    assert p.read_text() == src
    run_cli("--fix", "--unsafe-fixes", "train.py", cwd=tmp_path)
    assert "optimizer=AdamWeightDecay(learning_rate=5e-5)" in p.read_text()


def test_cli_stdin_fix_prints_the_fixed_source(tmp_path):
    proc = run_cli("--fix", "-", input=SCRIPT, cwd=tmp_path)
    assert proc.stdout == SCRIPT.replace("evaluation_strategy", "eval_strategy")
    assert "Fixed 1 finding." in proc.stderr
    clean = "import torch\n"
    assert run_cli("--fix", "-", input=clean, cwd=tmp_path).stdout == clean
    d = run_cli("--diff", "--stdin-filename", "t.py", "-", input=SCRIPT, cwd=tmp_path)
    assert d.returncode == 1 and d.stdout.startswith("--- a/t.py\n+++ b/t.py\n")


def test_cli_fix_notebook_keeps_outputs_and_metadata(tmp_path):
    nb = {
        "cells": [
            {"cell_type": "markdown", "metadata": {}, "source": ["# Fine-tuning"]},
            {"cell_type": "code", "execution_count": 1, "metadata": {"tags": ["setup"]},
             "outputs": [{"output_type": "stream", "name": "stdout", "text": ["ok\n"]}],
             "source": ["!pip install transformers\n", "from transformers import TrainingArguments"]},
            {"cell_type": "code", "execution_count": 2, "metadata": {}, "outputs": [],
             "source": ['args = TrainingArguments("out", evaluation_strategy="epoch")']},
        ],
        "metadata": {"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}},
        "nbformat": 4, "nbformat_minor": 5,
    }
    p = tmp_path / "train.ipynb"
    p.write_text(json.dumps(nb, indent=1) + "\n")
    before = p.read_text()
    d = run_cli("--diff", "train.ipynb", cwd=tmp_path)
    assert d.returncode == 1 and "eval_strategy" in d.stdout and p.read_text() == before
    proc = run_cli("--fix", "train.ipynb", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    after = json.loads(p.read_text())
    assert after["cells"][2]["source"] == ['args = TrainingArguments("out", eval_strategy="epoch")']
    assert after["cells"][1] == nb["cells"][1] and after["metadata"] == nb["metadata"]
    assert run_cli("--fix", "train.ipynb", cwd=tmp_path).returncode == 0
    assert json.loads(p.read_text()) == after


def test_probe_with_fix_is_a_usage_error(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    proc = run_cli("--probe", "--fix", "train.py", cwd=tmp_path)
    assert proc.returncode == 2 and "--probe cannot be combined" in proc.stderr


def test_transformers_adamw_attribute_adds_import_torch():
    out = _fixed("import transformers\nopt = transformers.AdamW(model.parameters(), lr=1e-5)\n", "TL802")
    assert out == ("import transformers\nimport torch\n"
                   "opt = torch.optim.AdamW(model.parameters(), lr=1e-5, eps=1e-6, weight_decay=0.0)\n")


def test_an_added_import_goes_below_the_shebang_and_the_docstring():
    out = _fixed('#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n"""Train."""\nimport evaluate, transformers\n\n'
                 "def compute_metrics(p):\n    return metric.compute(predictions=p.predictions, references=p.label_ids)\n\n"
                 'metric = evaluate.load("accuracy")\n'
                 "trainer = transformers.Trainer(model, compute_metrics=compute_metrics)\n", "TL601")
    assert out.startswith('#!/usr/bin/env python\n# -*- coding: utf-8 -*-\n"""Train."""\nimport evaluate, transformers\n'
                          "import numpy as np\n")
    # no imports at the top: below the header comments, or below the docstring
    out = _fixed("#!/usr/bin/env python\n# a header\nfrom_pretrained = 1\nimport transformers\n"
                 "x = transformers.AdamW(p)\n", "TL802")
    assert out.startswith("#!/usr/bin/env python\n# a header\nimport torch\nfrom_pretrained = 1\n")
    out = _fixed('"""Doc."""\nx = 1\nimport transformers\nopt = transformers.AdamW(p)\n', "TL802")
    assert out.startswith('"""Doc."""\nimport torch\nx = 1\n')


def test_rules_listing_and_rule_document_show_fix_applicability():
    listing = run_cli("rules").stdout.splitlines()
    assert listing[0].split()[-1] == "fix"
    rows = {line.split()[0]: line.split()[-1] for line in listing[1:]}
    for code, rule in FIXABLE.items():
        if code in rows:
            assert rows[code] == rule.fix.value
    assert rows["TL803"] == "-"
    assert "autofix: safe" in run_cli("rule", "TL805").stdout
    assert "autofix: unsafe" in run_cli("rule", "TL501").stdout
    listed = {r["code"]: r["fix"] for r in json.loads(run_cli("rules", "--output-format", "json").stdout)}
    assert listed["TL805"] == "safe" and listed["TL601"] == "unsafe" and listed["TL803"] is None


@pytest.mark.parametrize("opt,expected", [
    ("adam", "optimizer=AdamWeightDecay(learning_rate=5e-5)"),
    ("rmsprop", "optimizer=tf_keras.optimizers.RMSprop(learning_rate=5e-5)"),
])
def test_string_optimizer_fix_under_keras_3_does_not_make_a_tl808(opt, expected):
    src = ("# /// script\n# dependencies = [\"tensorflow>=2.16\", \"tf-keras\", \"transformers<5\"]\n# ///\n"
           "import tensorflow as tf\n"
           "from transformers import TFAutoModelForSequenceClassification\n"
           "model = TFAutoModelForSequenceClassification.from_pretrained('bert-base-cased', num_labels=2)\n"
           f"model.compile(optimizer='{opt}')\n")
    out = _fixed(src)
    assert expected in out
    assert "TL808" not in [f.code for f in lint_text(out, "train.py", Settings(select=["ALL"])).findings]
    # the same file's spelling without Keras 3
    plain = _fixed(src.split("# ///\n", 1)[1])
    assert f"optimizer=tf.keras.optimizers.{'Adam' if opt == 'adam' else 'RMSprop'}(learning_rate=5e-5)" in plain


def _good_examples():
    for code in sorted(FIXABLE):
        doc = load_doc(code)
        for i, ex in enumerate(doc.good if doc else []):
            if not ex.probe_only:
                yield pytest.param(code, ex.code, ex.filename, id=f"{code}-good{i + 1}")


@pytest.mark.parametrize("code,source,filename", list(_good_examples()))
def test_use_instead_examples_are_left_alone(code, source, filename):
    result = fix_source(source, filename, Settings(select=[code]), unsafe=True)
    assert result.source == source and not result.fixed


@pytest.mark.parametrize("path", BUGGY, ids=[p.name for p in BUGGY])
def test_buggy_example_edits_touch_only_their_lines(path):
    source = path.read_text()
    settings = Settings(select=["ALL"])
    current = source
    for _ in range(5):  # pass by pass, as --fix does
        findings = lint_text(current, path.name, settings).findings
        new, applied = apply_fixes(current, findings, unsafe=True)
        if not applied:
            break
        _changed_rows_only(current, new, applied)
        current = new
    assert current != source


def test_full_format_previews_each_fix(tmp_path):
    (tmp_path / "train.py").write_text(SCRIPT)
    out = run_cli("--output-format", "full", "train.py", cwd=tmp_path).stdout
    assert "  = autofix (safe): Rename `evaluation_strategy=` to `eval_strategy=`\n    @@ -2 +2 @@\n" in out
    assert '    -args = TrainingArguments("out", evaluation_strategy="epoch")\n' in out
    assert '    +args = TrainingArguments("out", eval_strategy="epoch")\n' in out


def test_fixes_that_do_not_converge_change_nothing(monkeypatch):
    import trainlint.engine as engine
    import trainlint.fixes as fixes

    class Result:
        def __init__(self, findings):
            self.findings = findings

    # a rule whose fix never silences it: every pass would add the same line again
    monkeypatch.setattr(engine, "lint_text", lambda src, name, settings: Result([_finding(((1, 1), (1, 1), "# x\n"))]))
    result = fixes.fix_source("import torch\n", "t.py", Settings(), max_passes=4)
    assert result.source == "import torch\n" and not result.fixed
    assert "did not converge after 4 passes" in result.error
