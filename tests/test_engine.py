"""The engine and the shared facts: one parse, one walk, imports, dataflow, errors, isolation."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import libcst as cst
import pytest

from support import ROOT, codes, lint
from trainlint.config import Settings
from trainlint.engine import lint_text
from trainlint.facts import FACT_TYPES, DatasetValue, Facts, ModelValue, TFDatasetValue, walk


def facts_for(src: str) -> Facts:
    module = cst.parse_module(textwrap.dedent(src))
    index, where = walk(module, FACT_TYPES | {"Name", "Subscript"})
    return Facts(module, index, where)


def value_of_name(facts: Facts, name: str):
    """Value of the last use of `name` in the module."""
    uses = [n for n in facts.index["Name"] if n.value == name]
    call = facts.index["Call"][-1]
    return facts.value_of(uses[-1], call)


@pytest.mark.parametrize(
    "imports, expr",
    [
        ("import transformers as tr", "tr.Trainer"),
        ("from transformers import Trainer as T", "T"),
        ("import transformers", "transformers.Trainer"),
        ("from transformers.trainer import Trainer", "Trainer"),
    ],
)
def test_import_resolution_trainer(imports, expr):
    f = facts_for(f"{imports}\nx = {expr}(model)\n")
    assert f.callee(f.index["Call"][0]) == "transformers.Trainer"


@pytest.mark.parametrize(
    "imports, expr",
    [
        ("import tensorflow as tf", "tf.keras.optimizers.Adam"),
        ("from tensorflow.keras.optimizers import Adam", "Adam"),
        ("import keras", "keras.optimizers.Adam"),
        ("import tf_keras", "tf_keras.optimizers.Adam"),
        ("from tensorflow import keras", "keras.optimizers.Adam"),
    ],
)
def test_import_resolution_keras_flavours(imports, expr):
    f = facts_for(f"{imports}\nopt = {expr}(1e-5)\n")
    assert f.callee(f.index["Call"][0]) == "keras.optimizers.Adam"


def test_dataflow_inside_functions_and_through_subscripts():
    f = facts_for(
        """
        from datasets import load_dataset
        from transformers import AutoTokenizer, AutoModelForSequenceClassification

        def main():
            raw = load_dataset("glue", "mnli")
            tok = AutoTokenizer.from_pretrained("bert-base-cased")

            def encode(batch):
                return tok(batch["premise"], batch["hypothesis"], padding="max_length", truncation=True)

            encoded = raw.map(encode, batched=True)
            train = encoded["train"]
            model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=3)
            print(train, model)
        """
    )
    train = value_of_name(f, "train")
    assert isinstance(train, DatasetValue)
    assert train.tokenized and train.fixed_length and not train.unpadded
    assert train.split == "train" and train.info.num_labels == 3
    model = value_of_name(f, "model")
    assert isinstance(model, ModelValue)
    assert model.head == "sequence-classification" and model.pretrained and model.checkpoint == "bert-base-cased"


def test_group_texts_is_fixed_length():
    f = facts_for(
        """
        from datasets import load_dataset
        raw = load_dataset("wikitext", "wikitext-2-raw-v1")
        def tokenize(ex):
            return tokenizer(ex["text"])
        def group_texts(examples):
            concatenated = {k: sum(examples[k], []) for k in examples}
            total = len(concatenated["input_ids"])
            return {k: [t[i : i + 128] for i in range(0, total, 128)] for k, t in concatenated.items()}
        lm = raw.map(tokenize, batched=True).map(group_texts, batched=True)
        print(lm)
        """
    )
    lm = value_of_name(f, "lm")
    assert lm.tokenized and lm.fixed_length and not lm.unpadded


def test_to_tf_dataset_columns():
    f = facts_for(
        """
        tf_train = tokenized["train"].to_tf_dataset(columns=["input_ids", "labels"], batch_size=8)
        model.fit(tf_train)
        """
    )
    v = value_of_name(f, "tf_train")
    assert isinstance(v, TFDatasetValue) and v.columns == ["input_ids", "labels"] and v.label_cols is None


def test_files_without_ml_frameworks_are_not_parsed():
    # a syntax error proves the file was never parsed
    res = lint_text("def broken(:\n    pass\n", "x.py", Settings())
    assert res.findings == [] and not res.parsed
    res = lint_text("import torch\ndef broken(:\n    pass\n", "x.py", Settings())
    assert [f.code for f in res.findings] == ["TL001"]
    assert res.findings[0].start.row == 2


def test_syntax_error_is_one_finding():
    found = lint("import transformers\nx = (\n")
    assert [f.code for f in found] == ["TL001"]
    assert "cannot parse" in found[0].message


def test_rule_exception_is_an_internal_error_and_other_rules_still_report(monkeypatch):
    from trainlint.stages.s8_compat.rules import EvaluationStrategyArgument

    def boom(self, node):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(EvaluationStrategyArgument, "visit_Call", boom)
    src = textwrap.dedent(
        """
        from transformers import AutoModelForSequenceClassification, TrainingArguments
        from datasets import load_dataset
        raw = load_dataset("glue", "mnli")
        model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased")
        args = TrainingArguments("out", evaluation_strategy="epoch")
        """
    )
    res = lint_text(src, "t.py", Settings())
    assert res.internal_error
    got = {f.code for f in res.findings}
    assert got == {"TL003", "TL301"}
    tl003 = next(f for f in res.findings if f.code == "TL003")
    assert "TL805" in tl003.message and "kaboom" in tl003.message


def test_one_parse_one_walk(monkeypatch):
    import trainlint.core as engine

    calls = {"parse": 0, "walk": 0}
    real_parse, real_walk = engine.cst.parse_module, engine.walk

    def parse(src):
        calls["parse"] += 1
        return real_parse(src)

    def counting_walk(module, types):
        calls["walk"] += 1
        return real_walk(module, types)

    monkeypatch.setattr(engine.cst, "parse_module", parse)
    monkeypatch.setattr(engine, "walk", counting_walk)
    src = (ROOT / "examples" / "mnli_trainer_buggy.py").read_text()
    res = lint_text(src, "x.py", Settings(select=["ALL"]))
    assert len({f.code for f in res.findings}) >= 5
    assert calls == {"parse": 1, "walk": 1}


def test_static_mode_never_imports_frameworks_or_user_code(tmp_path):
    marker = tmp_path / "IMPORTED"
    pkg = tmp_path / "userpkg.py"
    pkg.write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    script = tmp_path / "train.py"
    script.write_text(
        "import userpkg\nimport torch, tensorflow, transformers, datasets\n"
        + (ROOT / "examples" / "mnli_trainer_buggy.py").read_text()
    )
    probe = textwrap.dedent(
        f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        from trainlint.engine import lint_paths
        from trainlint.config import Settings
        results = lint_paths([{str(script)!r}], Settings(select=["ALL"]))
        assert results[0].findings, "expected findings"
        bad = sorted(m for m in sys.modules if m.split(".")[0] in
                     ("torch", "tensorflow", "transformers", "datasets", "keras", "evaluate", "userpkg"))
        print("IMPORTED:", bad)
        """
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path, check=True)
    assert "IMPORTED: []" in out.stdout
    assert not marker.exists()


def test_positions_are_one_based_and_cover_the_node():
    (f,) = lint(
        """\
        from transformers import TrainingArguments
        args = TrainingArguments("out", evaluation_strategy="epoch")
        """
    )
    assert (f.start.row, f.start.column, f.end.row, f.end.column) == (2, 33, 2, 52)


def test_version_dependent_severity():
    src = "from transformers import TrainingArguments\nargs = TrainingArguments('o', evaluation_strategy='epoch')\n"
    (v5,) = lint(src, target_versions={"transformers": "5.1"})
    (v4,) = lint(src, target_versions={"transformers": "4.44.0"})
    assert v5.severity.value == "error" and "fails on transformers 4.51 and later" in v5.message
    assert v4.severity.value == "warning" and "deprecated" in v4.message


def test_default_selection_excludes_meta_nothing_else_needed():
    assert codes("import torch\n") == []


def test_installed_version_matches_importlib_metadata(tmp_path, monkeypatch):
    """The directory scan that replaces importlib.metadata (15 ms of a cold run) reads the same
    versions: installed, absent, normalised names, and an egg-info directory."""
    from importlib import metadata

    from trainlint.config import _scan_version

    for dist in ("libcst", "click", "pathspec", "typing_extensions", "typing-extensions", "no-such-dist"):
        try:
            expected = metadata.version(dist)
        except metadata.PackageNotFoundError:
            expected = None
        assert _scan_version(dist) == expected, dist
    (tmp_path / "Fancy_Pkg-1.2.3-py3.11.egg-info").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    assert _scan_version("fancy-pkg") == "1.2.3"
