"""Catalog breadth (issue 6), stages 1–4: tricky variants and correct code that must stay quiet.

The `rules/<CODE>.md` examples are run by `test_catalog.py`; these cover what the documents do not.
"""

from __future__ import annotations

import textwrap

from trainlint.config import Settings
from trainlint.engine import lint_source


def lint(source: str, select: str | None = None):
    """Findings for a dedented snippet (default rules, or `select`)."""
    return lint_source(textwrap.dedent(source), "train.py", Settings(select=[select] if select else None))


def codes(source: str, select: str | None = None) -> list[str]:
    return [f.code for f in lint(source, select)]

# ---------------------------------------------------------------------------------------------
# TL302 head-task-mismatch

TRAINER_TPL = """
from datasets import load_dataset
from transformers import {cls}, AutoTokenizer, Trainer, TrainingArguments
raw = load_dataset({ds})
tok = AutoTokenizer.from_pretrained("bert-base-cased")
def f(b):
    return tok(b["{col}"], truncation=True{extra})
data = raw.map(f, batched=True)
model = {cls}.from_pretrained("bert-base-cased", num_labels={n})
trainer = Trainer(model=model, args=TrainingArguments("out"), train_dataset=data["train"], processing_class=tok)
trainer.train()
"""


def test_tl302_token_head_on_sentence_labels():
    src = TRAINER_TPL.format(cls="AutoModelForTokenClassification", ds='"imdb"', col="text", extra="", n=2)
    assert "TL302" in codes(src)


def test_tl302_sequence_head_on_ner():
    src = TRAINER_TPL.format(cls="AutoModelForSequenceClassification", ds='"conll2003"', col="tokens",
                             extra=", is_split_into_words=True", n=9)
    assert "TL302" in codes(src)


def test_tl302_matching_heads_quiet():
    for cls, ds, col, extra, n in (
        ("AutoModelForTokenClassification", '"conll2003"', "tokens", ", is_split_into_words=True", 9),
        ("AutoModelForSequenceClassification", '"glue", "sst2"', "sentence", "", 2),
    ):
        assert "TL302" not in codes(TRAINER_TPL.format(cls=cls, ds=ds, col=col, extra=extra, n=n), select="ALL")


def test_tl302_needs_the_trainer_link():
    # the file loads conll2003 but trains the classifier on something else
    src = """
    from datasets import load_dataset, Dataset
    from transformers import AutoModelForSequenceClassification, Trainer
    ner = load_dataset("conll2003")
    mine = Dataset.from_dict({"text": ["a"], "label": [0]})
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
    Trainer(model=model, train_dataset=mine).train()
    """
    assert "TL302" not in codes(src, select="ALL")


# ---------------------------------------------------------------------------------------------
# TL303 decoder-without-pad-token


def test_tl303_gpt2_without_pad():
    src = """
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    tok = AutoTokenizer.from_pretrained("gpt2")
    model = AutoModelForSequenceClassification.from_pretrained("gpt2", num_labels=2)
    """
    [f] = [f for f in lint(src) if f.code == "TL303"]
    assert "Cannot handle batch sizes > 1" in f.message


def test_tl303_tokenizer_pad_only_still_fires():
    src = """
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    ckpt = "openai-community/gpt2"
    tok = AutoTokenizer.from_pretrained(ckpt)
    tok.pad_token = tok.eos_token
    model = AutoModelForSequenceClassification.from_pretrained(ckpt, num_labels=2)
    """
    [f] = [f for f in lint(src) if f.code == "TL303"]
    assert "tokenizer.pad_token` alone" in f.message


def test_tl303_pad_token_id_in_kwargs_or_config_quiet():
    for line in ('model = AutoModelForSequenceClassification.from_pretrained("gpt2", num_labels=2, pad_token_id=50256)',
                 'model = AutoModelForSequenceClassification.from_pretrained("gpt2", num_labels=2)\n'
                 "model.config.pad_token_id = model.config.eos_token_id"):
        src = "from transformers import AutoModelForSequenceClassification\n" + line + "\n"
        assert "TL303" not in codes(src, select="ALL")


def test_tl303_encoder_and_causal_lm_quiet():
    src = """
    from transformers import AutoModelForSequenceClassification, AutoModelForCausalLM
    a = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
    b = AutoModelForCausalLM.from_pretrained("gpt2")
    c = AutoModelForSequenceClassification.from_pretrained("facebook/opt-350m", num_labels=2)
    """
    assert "TL303" not in codes(src, select="ALL")


def test_tl303_llama_is_a_warning():
    src = """
    from transformers import AutoModelForSequenceClassification
    model = AutoModelForSequenceClassification.from_pretrained("meta-llama/Llama-3.2-1B", num_labels=2)
    """
    [f] = [f for f in lint(src) if f.code == "TL303"]
    assert f.severity.value == "warning"


# ---------------------------------------------------------------------------------------------
# TL304 regression-head-on-classes


def test_tl304_not_doubled_by_tl301():
    src = TRAINER_TPL.format(cls="AutoModelForSequenceClassification", ds='"imdb"', col="text", extra="", n=1)
    found = codes(src, select="ALL")
    assert "TL304" in found and "TL301" not in found


def test_tl304_regression_dataset_quiet():
    src = TRAINER_TPL.format(cls="AutoModelForSequenceClassification", ds='"glue", "stsb"', col="sentence1",
                             extra="", n=1)
    assert "TL304" not in codes(src, select="ALL")


def test_tl304_problem_type_quiet():
    src = TRAINER_TPL.format(cls="AutoModelForSequenceClassification", ds='"imdb"', col="text", extra="",
                             n='1, problem_type="multi_label_classification"')
    assert "TL304" not in codes(src, select="ALL")


def test_tl304_unknown_dataset_quiet():
    src = """
    from transformers import AutoModelForSequenceClassification
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=1)
    """
    assert "TL304" not in codes(src, select="ALL")


# ---------------------------------------------------------------------------------------------
# TL305 frozen-model


def test_tl305_named_parameters_with_trainer():
    src = """
    from transformers import AutoModelForSequenceClassification, Trainer
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
    for name, param in model.named_parameters():
        param.requires_grad = False
    trainer = Trainer(model=model)
    trainer.train()
    """
    assert codes(src, select="TL305") == ["TL305"]


def test_tl305_requires_grad_underscore_call():
    src = """
    import torch
    from transformers import AutoModel
    model = AutoModel.from_pretrained("bert-base-cased")
    model.requires_grad_(False)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-5)
    """
    assert codes(src, select="TL305") == ["TL305"]


def test_tl305_partial_freezing_quiet():
    variants = [
        # only the encoder
        "for p in model.base_model.parameters():\n    p.requires_grad = False\n",
        # conditional on the name
        "for n, p in model.named_parameters():\n    if 'classifier' not in n:\n        p.requires_grad = False\n",
        # everything, then the head again
        "for p in model.parameters():\n    p.requires_grad = False\nfor p in model.classifier.parameters():\n    p.requires_grad = True\n",
        # everything, then a new head
        "for p in model.parameters():\n    p.requires_grad = False\nmodel.classifier = torch.nn.Linear(768, 2)\n",
        # behind a flag
        "if args.freeze:\n    for p in model.parameters():\n        p.requires_grad = False\n",
    ]
    for v in variants:
        src = ("import torch\nfrom transformers import AutoModelForSequenceClassification, Trainer\n"
               "model = AutoModelForSequenceClassification.from_pretrained('bert-base-cased', num_labels=2)\n"
               + v + "Trainer(model=model).train()\n")
        assert "TL305" not in codes(src, select="ALL"), v


def test_tl305_frozen_teacher_quiet():
    src = """
    import torch
    from transformers import AutoModelForSequenceClassification
    teacher = AutoModelForSequenceClassification.from_pretrained("bert-large-cased", num_labels=2)
    student = AutoModelForSequenceClassification.from_pretrained("distilbert-base-cased", num_labels=2)
    for p in teacher.parameters():
        p.requires_grad = False
    opt = torch.optim.AdamW(student.parameters(), lr=5e-5)
    """
    assert "TL305" not in codes(src, select="ALL")


def test_tl305_peft_quiet():
    src = """
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, Trainer
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    for p in model.parameters():
        p.requires_grad = False
    model = get_peft_model(model, LoraConfig(r=8))
    Trainer(model=model).train()
    """
    assert "TL305" not in codes(src, select="ALL")


def test_tl305_typo_has_unsafe_fix():
    src = """
    import torch
    for p in model.bert.parameters():
        p.require_grad = False
    """
    [f] = lint(src, select="TL305")
    assert "requires_grad" in f.hint and f.fix is not None and f.fix.applicability.value == "unsafe"


def test_tl305_keras_trainable_false():
    src = """
    from transformers import TFAutoModelForSequenceClassification
    model = TFAutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
    model.trainable = False
    model.compile(optimizer="adam")
    model.fit(train_set)
    """
    assert "TL305" in codes(src, select="TL305")


def test_tl305_keras_base_frozen_quiet():
    src = """
    import tensorflow as tf
    from transformers import TFAutoModelForSequenceClassification
    model = TFAutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
    model.layers[0].trainable = False
    model.compile(optimizer=tf.keras.optimizers.Adam(3e-5))
    model.fit(train_set)
    """
    assert "TL305" not in codes(src, select="ALL")


# ---------------------------------------------------------------------------------------------
# TL306 model-init-called


def test_tl306_fix_and_closure_factory():
    src = """
    from transformers import AutoModelForSequenceClassification, Trainer
    def model_init():
        return AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
    trainer = Trainer(model_init=model_init(), args=args)
    """
    [f] = lint(src, select="TL306")
    assert f.fix is not None and f.fix.edits[0].content == "model_init"


def test_tl306_factory_returning_function_quiet():
    src = """
    import functools
    from transformers import AutoModelForSequenceClassification, Trainer
    def make_init(ckpt):
        def init():
            return AutoModelForSequenceClassification.from_pretrained(ckpt, num_labels=2)
        return init
    def make_partial(ckpt):
        return functools.partial(AutoModelForSequenceClassification.from_pretrained, ckpt)
    Trainer(model_init=make_init("bert-base-cased"), args=args)
    Trainer(model_init=make_partial("bert-base-cased"), args=args)
    """
    assert "TL306" not in codes(src, select="ALL")


def test_tl306_from_pretrained_directly():
    src = """
    from transformers import AutoModelForSequenceClassification, Trainer
    Trainer(model_init=AutoModelForSequenceClassification.from_pretrained("bert-base-cased"), args=args)
    """
    assert codes(src, select="TL306") == ["TL306"]


# ---------------------------------------------------------------------------------------------
# TL307 late-mixed-precision


def test_tl307_policy_before_model_quiet_and_float32_quiet():
    src = """
    from tensorflow.keras import mixed_precision
    from transformers import TFAutoModelForSequenceClassification
    mixed_precision.set_global_policy("mixed_float16")
    model = TFAutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
    mixed_precision.set_global_policy("float32")
    """
    assert "TL307" not in codes(src, select="ALL")


def test_tl307_keras3_dtype_policy():
    src = """
    import keras
    model = keras.Sequential([keras.layers.Dense(10)])
    keras.config.set_dtype_policy("mixed_bfloat16")
    model.compile(optimizer="adam", loss="mse")
    """
    assert codes(src, select="TL307") == ["TL307"]


def test_tl307_rebuilt_after_quiet():
    src = """
    import tensorflow as tf
    model = tf.keras.Sequential([tf.keras.layers.Dense(10)])
    tf.keras.mixed_precision.set_global_policy("mixed_float16")
    model = tf.keras.Sequential([tf.keras.layers.Dense(10)])
    """
    assert "TL307" not in codes(src, select="ALL")
