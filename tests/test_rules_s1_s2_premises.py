"""Stages 1 and 2 (data, batching): each rule reports only on its premises, in the forms real code had.

The `## Premises` blocks of `rules/<CODE>.md` show each premise missing on the documents' own examples
(`test_catalog.py`); these tests keep the forms of the real files where a premise was missing and a rule
reported anyway, and the reworked rules' shape (class size, message length).
"""

from __future__ import annotations

import inspect
import textwrap

import pytest

from support import RELEASES
from trainlint.config import Settings
from trainlint.docs import parse_doc
from trainlint.engine import lint_source
from trainlint.rule import all_rules

from support import ROOT

REWORKED = ("TL206",)


def lint(source: str, select: str | None = None, filename: str = "train.py"):
    return lint_source(textwrap.dedent(source), filename,
                       Settings(select=[select] if select else None, target_versions=RELEASES))


def codes(source: str, select: str | None = None, filename: str = "train.py") -> list[str]:
    return [f.code for f in lint(source, select, filename)]


# ---------------------------------------------------------------------------------------------
# The reworked rules: measured from the next corpus round, small classes, short messages


@pytest.mark.parametrize("code", REWORKED)
def test_a_reworked_rule_is_small_and_measured_from_the_next_round(code):
    rule = all_rules()[code]
    assert rule.measured_from == 4
    assert len(inspect.getsource(rule).splitlines()) < 250


@pytest.mark.parametrize("code", REWORKED)
def test_a_reworked_rules_messages_are_short(code):
    """The concise message names the objects and the symptom; the details are in the hint."""
    doc = parse_doc(code, (ROOT / "rules" / f"{code}.md").read_text(encoding="utf-8"))
    found = [f for ex in doc.examples("Example") if not ex.probe_only
             for f in lint_source(ex.code, ex.filename, Settings(select=[code], target_versions=RELEASES))
             if f.code == code]
    assert found
    for f in found:
        assert len(f.message) <= 160, f.message
        assert f.hint


# ---------------------------------------------------------------------------------------------
# TL206 batchencoding-to-fit


def test_tl206_a_helper_named_like_a_tokenizer_returning_arrays_is_no_tokenizer():
    # a Kaggle notebook's own encoder: a function named like a tokenizer (or one that calls the real
    # tokenizer) returning numpy arrays, given to a Keras functional model's fit
    src = """
    import numpy as np
    import tensorflow as tf
    from transformers import AutoTokenizer, TFAutoModel

    tokenizer = AutoTokenizer.from_pretrained("jplu/tf-xlm-roberta-large")

    def regular_encode(texts, tokenizer, maxlen=512):
        enc_di = tokenizer.batch_encode_plus(texts, return_attention_mask=False, return_token_type_ids=False,
                                             pad_to_max_length=True, max_length=maxlen)
        return np.array(enc_di["input_ids"])

    def tokenize_texts(texts, maxlen=512):
        return np.array([[ord(c) for c in t[:maxlen]] for t in texts])

    def build_model(transformer, max_len=512):
        input_word_ids = tf.keras.layers.Input(shape=(max_len,), dtype=tf.int32, name="input_word_ids")
        sequence_output = transformer(input_word_ids)[0]
        out = tf.keras.layers.Dense(1, activation="sigmoid")(sequence_output[:, 0, :])
        model = tf.keras.Model(inputs=input_word_ids, outputs=out)
        model.compile(tf.keras.optimizers.Adam(lr=1e-5), loss="binary_crossentropy", metrics=["accuracy"])
        return model

    x_train = regular_encode(train.comment_text.values, tokenizer, maxlen=192)
    x_valid = tokenize_texts(valid.comment_text.values)
    model = build_model(TFAutoModel.from_pretrained("jplu/tf-xlm-roberta-large"), max_len=192)
    model.fit(x_train, y_train, validation_data=(x_valid, y_valid), epochs=2)
    """
    assert "TL206" not in codes(src, "TL206")
    # the same helper returning the tokenizer's output as it is: a BatchEncoding reaches fit
    bad = src.replace('return np.array(enc_di["input_ids"])', "return enc_di")
    [f] = lint(bad, "TL206")
    assert f.message.startswith("`x_train` is a tokenizer's `BatchEncoding`") and len(f.message) <= 160


def test_tl206_a_tokenizer_kept_on_the_instance():
    src = """
    import tensorflow as tf
    from transformers import BertTokenizer

    class Encoder:
        def __init__(self, name):
            self.tokenizer = BertTokenizer.from_pretrained(name)

        def __call__(self, texts):
            return self.tokenizer(texts, padding="max_length", max_length=64, truncation=True, return_tensors="tf")

    encode = Encoder("bert-base-uncased")
    model = tf.keras.Sequential([tf.keras.layers.Dense(2)])
    enc = encode.__call__(texts)
    model.fit(enc, labels)
    """
    assert codes(src, "TL206") == ["TL206"]
