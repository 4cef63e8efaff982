"""Catalog breadth, stages 1–4: tricky variants and correct code that must stay quiet.

The `rules/<CODE>.md` examples are run by `test_catalog.py`; these cover what the documents do not.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from trainlint.config import Settings
from trainlint.engine import lint_source
from trainlint.notebook import lint_notebook_text


def lint(source: str, select: str | None = None):
    """Findings for a dedented snippet (every rule, on by default or not, or `select`)."""
    return lint_source(textwrap.dedent(source), "train.py", Settings(select=[select or "ALL"]))


def codes(source: str, select: str | None = None) -> list[str]:
    return [f.code for f in lint(source, select)]


def codes_by_default(source: str) -> list[str]:
    """The codes found with the default selection."""
    return [f.code for f in lint_source(textwrap.dedent(source), "train.py", Settings())]

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


TFDS_TPL = """
import tensorflow as tf
import tensorflow_datasets
from transformers import *
tokenizer = BertTokenizer.from_pretrained("bert-base-uncased")
model = {cls}.from_pretrained("bert-base-uncased")
data = tensorflow_datasets.load({name})
train_dataset = glue_convert_examples_to_features(data["train"], tokenizer, max_length=128, task="sst-2")
train_dataset = train_dataset.shuffle(100).batch(32).repeat(2)
model.compile(optimizer=tf.keras.optimizers.Adam(3e-5), loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit({fit}, epochs=2, steps_per_epoch=115)
"""


def test_tl302_star_import_tfds_and_glue_features_to_fit():
    # huggingface/transformers#2581: the README's TF 2.0 quick tour with a token-classification head
    bad = TFDS_TPL.format(cls="TFBertForTokenClassification", name='"glue/sst2"', fit="train_dataset")
    [f] = [f for f in lint(bad) if f.code == "TL302"]
    assert f.start.row == 6 and "glue/sst2 has one label per example" in f.message
    assert "TL302" in codes(TFDS_TPL.format(cls="TFBertForTokenClassification", name='"glue/sst2:1.0.0"',
                                            fit="train_dataset"))
    # the sentence head; another dataset; a tuple with the info; data the link does not reach
    for cls, name, fit in (("TFBertForSequenceClassification", '"glue/sst2"', "train_dataset"),
                           ("TFBertForTokenClassification", '"conll2003"', "train_dataset"),
                           ("TFBertForTokenClassification", '"glue/sst2", with_info=True', "train_dataset"),
                           ("TFBertForTokenClassification", '"glue/sst2"', "other_data")):
        assert "TL302" not in codes(TFDS_TPL.format(cls=cls, name=name, fit=fit), select="ALL"), (cls, name, fit)


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


TL303_TRAINED = """
    trainer = Trainer(model=model, args=TrainingArguments("out"), train_dataset=train_ds)
    trainer.train()
    """


def test_tl303_gpt2_without_pad():
    src = """
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments
    tok = AutoTokenizer.from_pretrained("gpt2")
    model = AutoModelForSequenceClassification.from_pretrained("gpt2", num_labels=2)
    """ + TL303_TRAINED
    [f] = [f for f in lint(src) if f.code == "TL303"]
    assert "Cannot handle batch sizes > 1" in f.hint and "no pad token in its config" in f.message


def test_tl303_tokenizer_pad_only_still_fires():
    src = """
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments
    ckpt = "openai-community/gpt2"
    tok = AutoTokenizer.from_pretrained(ckpt)
    tok.pad_token = tok.eos_token
    model = AutoModelForSequenceClassification.from_pretrained(ckpt, num_labels=2)
    """ + TL303_TRAINED
    [f] = [f for f in lint(src) if f.code == "TL303"]
    assert "tokenizer.pad_token` alone" in f.hint


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
    from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments
    model = AutoModelForSequenceClassification.from_pretrained("meta-llama/Llama-3.2-1B", num_labels=2)
    """ + TL303_TRAINED
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


LIPFD = """
import torch
import torch.nn as nn
class Trainer(nn.Module):
    def __init__(self, opt):
        self.model = build_model(opt.arch)
        if opt.fix_encoder:
            for name, p in self.model.named_parameters():
                if name.split(".")[0] in ["encoder"]:
                    p.requires_grad = False
                else:
                    p.requires_grad = ELSE
            params = self.model.parameters()
        self.optimizer = torch.optim.AdamW(params, lr=opt.lr)
"""


def test_tl305_both_branches_freeze():
    # AaronComo/LipFD#18: the `else` branch was meant to keep the rest trainable
    [f] = lint(LIPFD.replace("ELSE", "False"), "TL305")
    assert f.start.row == 12 and "both branches" in f.message and "`self.model`" in f.message
    assert codes(LIPFD.replace("ELSE", "True"), "TL305") == []
    # a loop that freezes on one branch only, and one whose `if` has no `else`
    one = LIPFD.replace("                else:\n                    p.requires_grad = ELSE\n", "")
    assert codes(one, "TL305") == []
    # a head added after the loop: something is left to train
    head = LIPFD.replace("ELSE", "False").replace("            params =", "            self.model.head = nn.Linear(8, 2)\n"
                                                 "            params =")
    assert codes(head, "TL305") == []


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


def test_tl305_words_that_contain_lora_do_not_silence_it():
    """"exploration", "colorado": only a name that starts with peft/lora/adapter means adapters."""
    src = """
    # a quick exploration of the colorado data
    import torch
    from transformers import AutoModelForSequenceClassification
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
    for param in model.parameters():
        param.requires_grad = False
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    """
    assert codes(src, select="TL305") == ["TL305"]


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


# ---------------------------------------------------------------------------------------------
# TL102 unknown-dataset-column


def test_tl102_map_function_wrong_column_with_suggestion():
    src = """
    from datasets import load_dataset
    raw = load_dataset("glue", "sst2")
    def tokenize(examples):
        return tokenizer(examples["text"], truncation=True)
    tokenized = raw.map(tokenize, batched=True)
    """
    [f] = lint(src, select="TL102")
    assert "glue/sst2 has no column 'text'" in f.message and "'sentence'" in f.hint


def test_tl102_lambda_on_split_and_remove_columns():
    src = """
    from datasets import load_dataset
    raw = load_dataset("nyu-mll/glue", "mrpc", split="train")
    a = raw.map(lambda x: tok(x["sentence"], x["sentence2"]), batched=True)
    b = raw.map(lambda x: tok(x["sentence1"], x["sentence2"]), remove_columns=["sentence", "idx"])
    """
    assert codes(src, select="TL102") == ["TL102", "TL102"]


def test_tl102_column_subscript():
    src = """
    from datasets import load_dataset
    raw = load_dataset("imdb")
    texts = raw["train"]["sentence"]
    ok = raw["train"]["text"]
    """
    assert codes(src, select="TL102") == ["TL102"]


def test_tl102_another_owners_copy_of_a_dataset_is_not_that_dataset():
    # the real form (huggingface/setfit notebooks): `SetFit/sst2` is SetFit's copy of SST-2 with a `text`
    # column; GLUE's SST-2 (`glue`/`sst2`, `stanfordnlp/sst2`) has `sentence`
    src = """
    from datasets import load_dataset
    import torch
    dataset = load_dataset("{name}")
    test_dataset = dataset["validation"]
    texts = test_dataset["text"][:2]
    """
    assert codes(src.format(name="SetFit/sst2"), select="TL102") == []
    assert codes(src.format(name="sst2"), select="TL102") == ["TL102"]
    assert codes(src.format(name="stanfordnlp/sst2"), select="TL102") == ["TL102"]
    assert codes(src.replace('"{name}"', '"glue", "sst2"'), select="TL102") == ["TL102"]


def test_tl102_quiet_after_rename_map_or_assignment():
    src = """
    from datasets import load_dataset
    raw = load_dataset("glue", "sst2")
    renamed = raw.rename_column("sentence", "text")
    a = renamed.map(lambda x: tok(x["text"]))
    tok_ds = raw.map(lambda x: tok(x["sentence"]), batched=True)
    b = tok_ds.map(lambda x: {"n": len(x["input_ids"])})
    def add(ex):
        ex["text"] = ex["sentence"].lower()
        return {"len": len(ex["text"])}
    c = raw.map(add)
    d = raw["train"]["label"]
    unknown = load_dataset("my_org/my_data")
    e = unknown.map(lambda x: tok(x["whatever"]))
    """
    assert "TL102" not in codes(src, select="ALL")


def test_tl102_lambda_on_a_review_dataset_without_a_text_column():
    # huggingface/datasets#6287: amazon_reviews_multi keeps its text in `review_body`
    src = """
    from datasets import load_dataset
    from transformers import AutoTokenizer
    dataset = load_dataset(NAME)
    tokenizer = AutoTokenizer.from_pretrained("bert-base-cased")
    tokenized = dataset.map(lambda x: tokenizer(x[COL]), batched=True)
    """
    bad = src.replace("NAME", '"amazon_reviews_multi"').replace("COL", '"text"')
    [f] = lint(bad, select="TL102")
    assert "amazon_reviews_multi has no column 'text'" in f.message and f.start.row == 6
    assert codes(bad.replace('"amazon_reviews_multi"', '"amazon_reviews_multi", "en"'), "TL102") == ["TL102"]
    # the right column; a copy of the dataset under another owner, with other columns
    assert codes(src.replace("NAME", '"amazon_reviews_multi"').replace("COL", '"review_body"'), "TL102") == []
    assert codes(src.replace("NAME", '"mteb/amazon_reviews_multi"').replace("COL", '"text"'), "TL102") == []


def test_tl102_multiple_splits_in_dict_quiet():
    # raw["train"] is a split name, not a column
    src = """
    from datasets import load_dataset
    raw = load_dataset("glue", "mnli")
    val = raw["validation_matched"]
    """
    assert "TL102" not in codes(src, select="ALL")


# ---------------------------------------------------------------------------------------------
# TL103 label-sorted-slice


def test_tl103_percent_and_last_rows():
    src = """
    from datasets import load_dataset
    a = load_dataset("imdb", split="train[:10%]")
    b = load_dataset("imdb", split="test[-500:]")
    c = load_dataset("imdb", split="train[:80%]")
    """
    found = lint(src, select="TL103")
    assert [f.severity.value for f in found] == ["error", "error", "warning"]


def test_tl103_select_and_take():
    src = """
    from datasets import load_dataset
    raw = load_dataset("rotten_tomatoes")
    small = raw["train"].select(range(1000))
    tokenized = raw.map(lambda b: tok(b["text"]), batched=True)
    few = tokenized["validation"].filter(lambda x: len(x["text"]) > 5).take(100)
    """
    assert codes(src, select="TL103") == ["TL103", "TL103"]


def test_tl103_quiet_when_shuffled_or_unsorted():
    src = """
    from datasets import load_dataset
    raw = load_dataset("imdb")
    a = raw["train"].shuffle(seed=42).select(range(1000))
    split = raw["train"].train_test_split(test_size=0.1)
    b = split["train"].select(range(1000))
    c = load_dataset("imdb", split="train[:50%]+train[-50%:]")
    d = load_dataset("yelp_review_full", split="train[:1000]")
    e = load_dataset("imdb", split="train")
    f = raw["train"].select([1, 5, 7])
    """
    assert "TL103" not in codes(src, select="ALL")


# ---------------------------------------------------------------------------------------------
# TL104 misaligned-labels


def test_tl104_numpy_shuffle_one_array():
    src = """
    import numpy as np
    import tensorflow as tf
    X = np.load("features.npy")
    y = np.load("labels.npy")
    np.random.shuffle(X)
    model.fit(X, y, epochs=3)
    """
    [f] = lint(src, select="TL104")
    assert "shuffles `X` but not `y`" in f.message


def test_tl104_quiet_for_labels_copied_to_be_randomised():
    # Deep Learning with Python, chapter 5: fitting randomly shuffled labels, on purpose
    src = """
    import numpy as np
    from tensorflow import keras
    (train_images, train_labels), _ = keras.datasets.mnist.load_data()
    random_train_labels = train_labels{copy}
    np.random.shuffle(random_train_labels)
    model.fit(train_images, random_train_labels, epochs=100)
    """
    for copy in ("[:]", ".copy()"):
        assert codes(src.format(copy=copy), "TL104") == [], copy
    # the labels themselves shuffled: misaligned
    direct = src.format(copy="[:]").replace("    random_train_labels = train_labels[:]\n", "").replace(
        "random_train_labels", "train_labels")
    assert codes(direct, "TL104") == ["TL104"]


def test_tl104_rng_shuffle_and_tensor_dataset():
    src = """
    import numpy as np
    import torch
    from torch.utils.data import TensorDataset
    def build(texts, labels):
        rng = np.random.default_rng(0)
        rng.shuffle(texts)
        return TensorDataset(texts, labels)
    """
    assert codes(src, select="TL104") == ["TL104"]


def test_tl104_shuffles_together_quiet():
    src = """
    import random
    import numpy as np
    import torch
    from sklearn.utils import shuffle
    X = np.load("features.npy")
    y = np.load("labels.npy")
    X, y = shuffle(X, y, random_state=0)
    idx = np.random.permutation(len(X))
    X2, y2 = X[idx], y[idx]
    pairs = list(zip(texts, labels))
    random.shuffle(pairs)
    texts, labels = zip(*pairs)
    np.random.seed(0); np.random.shuffle(X)
    np.random.seed(0); np.random.shuffle(y)
    model.fit(X, y)
    """
    assert "TL104" not in codes(src, select="ALL")


def test_tl104_shuffled_then_labels_derived_quiet():
    src = """
    import random
    import torch
    files = [f"data/{i}.txt" for i in range(100)]
    random.shuffle(files)
    labels = [int(f.split("_")[0]) for f in files]
    ds = torch.utils.data.TensorDataset(files, labels)
    """
    assert "TL104" not in codes(src, select="ALL")


DREXEL = """
import csv
import random
import math
from keras.preprocessing import sequence
from keras.models import Sequential
x = []
y = []
for record in csv.reader(open("gac_data.csv")):
    x.append(hash_words(record[2]))
    y.append(one_hot(record[3]))
SHUFFLE
x = sequence.pad_sequences(x, maxlen=25)
split_point = math.floor(len(x) * 0.5)
x_test = x[:split_point]
x_train = x[split_point:]
y_test = y[:split_point]
y_train = y[split_point:]
model = Sequential()
model.compile(optimizer="rmsprop", loss="categorical_crossentropy")
model.fit(x_train, y_train, validation_data=(x_test, y_test), epochs=8)
"""


def test_tl104_shuffle_reaches_the_pairing_through_derived_arrays():
    # DrexelChatbotGroup/DrexelChatbot#15: only the questions are shuffled, then padded and split
    [f] = lint(DREXEL.replace("SHUFFLE", "random.shuffle(x)"), "TL104")
    assert f.start.row == 12 and "shuffles `x` but not `y`" in f.message


def test_tl104_derived_arrays_quiet_forms():
    quiet = [
        DREXEL.replace("SHUFFLE", "pairs = list(zip(x, y))"),  # no shuffle
        # both in one permutation; labels rebuilt from the shuffled questions
        DREXEL.replace("SHUFFLE", "idx = list(range(len(x)))\nrandom.shuffle(idx)\nx = [x[i] for i in idx]\n"
                                  "y = [y[i] for i in idx]"),
        DREXEL.replace("SHUFFLE", "random.shuffle(x)\ny = []\nfor q in x:\n    y.append(label_of(q))"),
        # shuffled after the split: the training arrays were taken before
        DREXEL.replace("SHUFFLE", "").replace('model.fit(', 'random.shuffle(x)\nmodel.fit('),
    ]
    for src in quiet:
        assert codes(src, "TL104") == [], src


FASTDIT = """
import os
import numpy as np
import torch
from torch.utils.data import Dataset
class CustomDataset(Dataset):
    def __init__(self, features_dir, labels_dir):
        self.features_dir = features_dir
        self.labels_dir = labels_dir
        self.features_files = FEATURES
        self.labels_files = os.listdir(labels_dir)
    def __len__(self):
        return len(self.features_files)
    def __getitem__(self, idx):
        feature_file = self.features_files[idx]
        label_file = self.labels_files[IDX]
        features = np.load(os.path.join(self.features_dir, feature_file))
        labels = np.load(os.path.join(self.labels_dir, label_file))
        return torch.from_numpy(features), torch.from_numpy(labels)
"""


def test_tl104_dataset_class_pairs_two_listings_by_index():
    # chuanyangjin/fast-DiT#4: features and labels listed by two os.listdir calls, paired by position
    [f] = lint(FASTDIT.replace("FEATURES", "os.listdir(features_dir)").replace("IDX", "idx"), "TL104")
    assert f.start.row == 10 and f.severity.value == "warning" and "self.labels_files[idx]" in f.message
    quiet = [
        FASTDIT.replace("FEATURES", "sorted(os.listdir(features_dir))").replace("IDX", "idx"),
        FASTDIT.replace("FEATURES", "os.listdir(features_dir)").replace("IDX", "idx").replace(
            "    def __len__", "        self.features_files.sort()\n        self.labels_files.sort()\n    def __len__"),
        FASTDIT.replace("FEATURES", "os.listdir(features_dir)").replace("IDX", "0"),
        FASTDIT.replace("FEATURES", "[f for f in names]").replace("IDX", "idx"),
    ]
    for src in quiet:
        assert codes(src, "TL104") == [], src


def test_tl104_chunks_of_a_shuffled_array_paired_with_split_names_quiet():
    # the real form (a traffic-sign tutorial notebook): each class's file list is shuffled, cut into
    # train/val/test chunks by np.split, and the chunks are zipped with the split names
    src = """
    import shutil
    from glob import glob
    import numpy as np
    import torch
    DATASETS = ["train", "val", "test"]
    for i, cls_index in enumerate(class_indices):
        image_paths = np.array(glob(f"{train_folders[cls_index]}/*.ppm"))
        np.random.shuffle(image_paths)
        ds_split = np.split(image_paths, indices_or_sections=[int(.8 * len(image_paths)), int(.9 * len(image_paths))])
        dataset_data = zip(DATASETS, ds_split)
        for ds, images in dataset_data:
            for img_path in images:
                shutil.copy(img_path, f"data/{ds}/{class_names[i]}/")
    """
    assert codes(src, select="TL104") == []
    # the same shuffle, then the files paired one by one with labels that kept their order
    paired = src.replace("dataset_data = zip(DATASETS, ds_split)", "dataset_data = zip(image_paths, labels)")
    assert codes("labels = np.load('labels.npy')\n" + textwrap.dedent(paired), select="TL104") == ["TL104"]


def test_tl104_two_unsorted_globs():
    src = """
    import glob
    import torch
    images = glob.glob("data/images/*.png")
    masks = glob.glob("data/masks/*.png")
    pairs = list(zip(images, masks))
    """
    [f] = lint(src, select="TL104")
    assert f.severity.value == "warning" and "(both of them)" in f.hint


def test_tl104_listdir_comprehension_with_csv_labels():
    src = """
    import os
    import pandas as pd
    from datasets import Dataset
    paths = [os.path.join("imgs", f) for f in os.listdir("imgs")]
    labels = pd.read_csv("labels.csv")["label"].tolist()
    ds = Dataset.from_dict({"image": paths, "label": labels})
    """
    assert codes(src, select="TL104") == ["TL104"]


def test_tl104_sorted_or_derived_listings_quiet():
    src = """
    import glob
    import os
    from pathlib import Path
    import torch
    images = sorted(glob.glob("data/images/*.png"))
    masks = sorted(glob.glob("data/masks/*.png"))
    a = list(zip(images, masks))
    files = os.listdir("data")
    labels = [0 if "cat" in f else 1 for f in files]
    b = list(zip(files, labels))
    paths = list(Path("x").glob("*.jpg"))
    paths.sort()
    ys = load_labels()
    c = list(zip(paths, ys))
    others = glob.glob("y/*")
    ls = []
    for f in others:
        ls.append(label_of(f))
    d = list(zip(others, ls))
    """
    assert "TL104" not in codes(src, select="ALL")


# ---------------------------------------------------------------------------------------------
# TL105 unseeded-multiprocess-data


def test_tl105_fires_in_a_script_that_keeps_an_accelerator():
    src = """
    import random
    from accelerate import Accelerator
    from datasets import load_dataset
    accelerator = Accelerator()
    raw = load_dataset("imdb")
    splits = raw["train"].train_test_split(test_size=0.1)
    random.shuffle(extra)
    for batch in loader:
        accelerator.backward(model(**batch).loss)
    """
    assert codes(src) == ["TL105", "TL105"]
    # a script that only generates or evaluates: each process's order is only what it reads
    assert codes(src.replace("accelerator.backward(model(**batch).loss)", "outputs = model.generate(**batch)")) == []


def test_tl105_a_torchrun_script_reading_its_rank():
    # the real form (lm-sys/FastChat#1522): a Trainer script launched with torchrun splits with an unseeded
    # permutation; it knows its rank only through `training_args.local_rank`
    src = """
    import json
    import numpy as np
    import transformers

    def make_data_module(data_path):
        raw_data = json.load(open(data_path))
        perm = np.random.permutation(len(raw_data))
        split = int(len(perm) * 0.98)
        return [raw_data[i] for i in perm[:split]], [raw_data[i] for i in perm[split:]]

    def train():
        global local_rank
        parser = transformers.HfArgumentParser((transformers.TrainingArguments,))
        (training_args,) = parser.parse_args_into_dataclasses()
        local_rank = training_args.local_rank
        train_data, eval_data = make_data_module("data.json")
        trainer = transformers.Trainer(model=model, args=training_args, train_dataset=train_data)
        trainer.train()

    if __name__ == "__main__":
        train()
    """
    [f] = lint(src)
    assert f.code == "TL105" and "`np.random.permutation`" in f.message and "unseeded" in f.message
    assert "TL105" not in codes(src.replace("local_rank = training_args.local_rank", "local_rank = 0"))
    assert "TL105" not in codes(src.replace("perm = np.random", "np.random.seed(0)\n        perm = np.random"))


TL105_PER_RANK = """
import random
import accelerate
import numpy as np
import torch

def set_seed(seed, accelerator=None):
    if seed is not None and accelerator is not None:
        seed += accelerator.process_index * 12345
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if accelerator:
        from accelerate.utils import set_seed
        set_seed(seed)

def train(cfg, dataset):
    accelerator = accelerate.Accelerator()
    set_seed(cfg.seed, accelerator=accelerator)
    train_dataset, val_dataset = torch.utils.data.random_split(dataset, [0.9, 0.1]{generator})
    for batch in torch.utils.data.DataLoader(train_dataset, shuffle=True):
        accelerator.backward(policy(batch))

if __name__ == "__main__":
    train(load_config(), load_data())
"""


def test_tl105_a_seed_offset_by_the_process_index_is_no_common_seed():
    # the real form (TensorAuto/OpenTau#498): the file's own set_seed() offsets the seed per process, and
    # its body imports accelerate's set_seed (which is not what `set_seed(cfg.seed, ...)` calls)
    [f] = lint(TL105_PER_RANK.format(generator=""))
    assert f.code == "TL105" and "seed += accelerator.process_index * 12345" in f.message
    gen = ", generator=torch.Generator().manual_seed(42)"
    assert "TL105" not in codes(TL105_PER_RANK.format(generator=gen))
    common = TL105_PER_RANK.format(generator="").replace("seed += accelerator.process_index * 12345", "pass")
    assert "TL105" not in codes(common)


def test_tl105_notebooks_and_a_device_only_accelerator_run_as_one_process():
    src = """
    from accelerate import Accelerator
    from datasets import load_dataset
    device = Accelerator().device
    raw = load_dataset("imdb")
    splits = raw["train"].train_test_split(test_size=0.1)
    trainer.train()
    """
    assert "TL105" not in codes(src)
    kept = src.replace("device = Accelerator().device", "accelerator = Accelerator()")
    assert codes(kept) == ["TL105"]
    def notebook(code: str) -> list[str]:
        cell = {"cell_type": "code", "metadata": {}, "execution_count": 1, "outputs": [],
                "source": textwrap.dedent(code).strip("\n")}
        nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        return [f.code for f in lint_notebook_text(json.dumps(nb), "train.ipynb", Settings(select=["ALL"])).findings]

    assert notebook(kept) == []
    launched = kept + "notebook_launcher(training_function, num_processes=2)\n"
    assert notebook(launched.replace("import Accelerator", "import Accelerator, notebook_launcher")) == ["TL105"]


def test_tl105_a_module_of_definitions_leaves_seeding_to_the_script_that_imports_it():
    # the real form (microsoft/DeepSpeedExamples, a BERT pre-training dataset provider): the class reads
    # args.local_rank and shuffles its batches; deepspeed_train.py imports it after seeding random
    src = """
    import random
    import torch.distributed as dist
    from torch.utils.data import DataLoader

    class BertDatasetProvider:
        def __init__(self, args):
            self.local_rank = args.local_rank
            self.global_rank = dist.get_rank()

        def get_shard(self, index, shuffle=True):
            dataset_batches = [i for i, n in enumerate(self.counts) for _ in range(n)]
            if shuffle:
                random.shuffle(dataset_batches)
            return dataset_batches

        def train_epoch(self, model, optimizer):
            for batch in self.get_shard(0):
                model(batch).loss.backward()
                optimizer.step()
    """
    assert codes(src, select="TL105") == []
    run = src + """
    if __name__ == "__main__":
        provider = BertDatasetProvider(parse_args())
        provider.get_shard(0)
    """
    assert codes(run, select="TL105") == ["TL105"]


def test_tl105_a_seeding_helper_imported_from_the_project():
    # the real form (microsoft/DeepSpeedExamples, DeepSpeed-Chat): `set_random_seed` from the project's
    # utils seeds random, numpy and torch before the experience lists are shuffled
    src = """
    import random
    import torch
    from dschat.utils.utils import set_random_seed

    def main():
        args = parse_args()
        torch.distributed.init_process_group(backend="nccl")
        set_random_seed({seed})
        exp_dataset, unsup_dataset = collect(args)
        random.shuffle(exp_dataset)
        for batch in exp_dataset:
            engine.backward(actor(batch).loss)

    if __name__ == "__main__":
        main()
    """
    assert codes(src.format(seed="args.seed"), select="TL105") == []
    [f] = lint(src.format(seed="args.seed + args.local_rank"), select="TL105")
    assert "args.seed + args.local_rank" in f.message
    assert codes(src.format(seed="args.seed").replace("set_random_seed(args.seed)", "get_seed()"),
                 select="TL105") == ["TL105"]


def test_tl105_a_draw_in_a_models_forward_is_not_data_preparation():
    # the real form (microsoft/DeepSpeedExamples, progressive layer drop): np.random.choice decides in
    # forward() whether a layer runs; each process drawing its own is the method, not a data split
    src = """
    import numpy as np
    import torch
    from torch import nn

    class Encoder(nn.Module):
        def forward(self, hidden_states, theta):
            p = 1.0
            for layer in self.layer:
                action = np.random.choice([1, 0], p=[p, 1 - p])
                hidden_states = layer(hidden_states, action)
            return hidden_states

    def main():
        torch.distributed.init_process_group(backend="nccl")
        order = np.random.choice(len(train_examples), len(train_examples), replace=False)
        for i in order:
            model(train_examples[i]).sum().backward()

    if __name__ == "__main__":
        main()
    """
    [f] = lint(src, select="TL105")
    assert "np.random.choice" in f.message and f.start.row == 16


def test_tl105_quiet_with_set_seed_or_single_process():
    seeded = """
    import random
    from accelerate import Accelerator
    from accelerate.utils import set_seed
    from datasets import load_dataset
    set_seed(42)
    accelerator = Accelerator()
    raw = load_dataset("imdb")
    splits = raw["train"].train_test_split(test_size=0.1)
    random.shuffle(extra)
    """
    single = """
    import random
    from datasets import load_dataset
    raw = load_dataset("imdb")
    splits = raw["train"].train_test_split(test_size=0.1)
    """
    with_seed = """
    from accelerate import Accelerator
    from datasets import load_dataset
    accelerator = Accelerator()
    raw = load_dataset("imdb")
    splits = raw["train"].train_test_split(test_size=0.1, seed=0)
    s = raw["train"].shuffle(seed=1)
    """
    for src in (seeded, single, with_seed):
        assert "TL105" not in codes(src, select="TL105")


# ---------------------------------------------------------------------------------------------
# TL202 unpaddable-columns

TL202_BASE = """
from datasets import load_dataset
from transformers import AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer, TrainingArguments
raw = load_dataset("glue", "sst2")
tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
tokenized = raw.map(lambda b: tokenizer(b["sentence"], truncation=True), batched=True{remove})
model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
args = TrainingArguments("out", remove_unused_columns={ruc})
trainer = Trainer(model=model, args=args, train_dataset=tokenized["train"], {coll})
"""


def test_tl202_default_collator_from_processing_class():
    src = TL202_BASE.format(remove="", ruc="False", coll="processing_class=tokenizer")
    [f] = lint(src, select="TL202")
    assert "'sentence'" in f.message and "the default `DataCollatorWithPadding`" in f.message


def test_tl202_an_explicit_none_collator_is_the_default_one():
    src = TL202_BASE.format(remove="", ruc="False", coll="data_collator=None, processing_class=tokenizer")
    assert codes(src, select="TL202") == ["TL202"]
    src = TL202_BASE.format(remove="", ruc="False", coll="data_collator=None, processing_class=None")
    assert codes(src, select="TL202") == []


def test_tl202_quiet_when_removed_or_kept_by_default():
    for remove, ruc, coll in (
        (', remove_columns=["sentence", "idx"]', "False", "data_collator=DataCollatorWithPadding(tokenizer)"),
        ("", "True", "data_collator=DataCollatorWithPadding(tokenizer)"),
        ("", "False", "data_collator=default_collate"),
    ):
        src = TL202_BASE.format(remove=remove, ruc=ruc, coll=coll)
        assert "TL202" not in codes(src, select="ALL"), (remove, ruc, coll)


TL202_DIRECT = """
from datasets import load_dataset
from torch.utils.data import DataLoader
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, DataCollatorForSeq2Seq
books = load_dataset("csv", data_files="reviews.csv")
books = books.filter(lambda x: len(x["review_title"].split()) > 2)
tokenizer = AutoTokenizer.from_pretrained("google/mt5-small")
def preprocess_function(examples):
    model_inputs = tokenizer(examples["review_body"], max_length=512, truncation=True)
    labels = tokenizer(examples["review_title"], max_length=30, truncation=True)
    model_inputs["labels"] = labels["input_ids"]
    return model_inputs
tokenized = books.map(preprocess_function, batched=True MAP)
model = AutoModelForSeq2SeqLM.from_pretrained("google/mt5-small")
data_collator = DataCollatorForSeq2Seq(tokenizer, model=model)
USE
"""
_DIRECT_CALL = 'features = [tokenized["train"][i] for i in range(2)]\ndata_collator(features)'


def test_tl202_collator_called_on_examples_that_kept_the_text():
    # the course's chapter 7 summarization notebook (huggingface/notebooks#130, huggingface/transformers#15505)
    src = TL202_DIRECT.replace(" MAP", "").replace("USE", _DIRECT_CALL)
    [f] = lint(src, "TL202")
    assert f.start.row == 17 and "'review_body'" in f.message and "'review_title'" in f.message
    loader = TL202_DIRECT.replace(" MAP", "").replace(
        "USE", 'loader = DataLoader(tokenized["train"], shuffle=True, batch_size=8, collate_fn=data_collator)')
    assert codes(loader, "TL202") == ["TL202"]
    listed = TL202_DIRECT.replace(" MAP", "").replace("USE", 'data_collator([tokenized["train"][0], tokenized["train"][1]])')
    assert codes(listed, "TL202") == ["TL202"]


def test_tl202_collator_called_on_examples_quiet_forms():
    quiet = [
        TL202_DIRECT.replace(" MAP", ', remove_columns=books["train"].column_names').replace("USE", _DIRECT_CALL),
        TL202_DIRECT.replace(" MAP", "").replace("USE", 'tokenized = tokenized.remove_columns(["review_body", '
                                                  '"review_title"])\n' + _DIRECT_CALL),
        TL202_DIRECT.replace(" MAP", "").replace("USE", 'tokenized.set_format("torch", columns=["input_ids", '
                                                  '"attention_mask", "labels"])\n' + _DIRECT_CALL),
        TL202_DIRECT.replace(" MAP", "").replace("USE", 'data_collator(tokenized["train"]["input_ids"])'),
        TL202_DIRECT.replace(" MAP", "").replace("DataCollatorForSeq2Seq(tokenizer, model=model)",
                                                 "default_data_collator").replace("USE", _DIRECT_CALL),
    ]
    for src in quiet:
        assert "TL202" not in codes(src, "ALL"), src


def test_tl202_custom_collator_class_reads_dropped_column():
    src = """
    import torch
    from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments
    class Collator:
        def __init__(self, tokenizer):
            self.tokenizer = tokenizer
        def __call__(self, features):
            texts = [f["text"] for f in features]
            batch = self.tokenizer(texts, padding=True, return_tensors="pt")
            batch["labels"] = torch.tensor([f["label"] for f in features])
            return batch
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
    trainer = Trainer(model=model, args=TrainingArguments("out"), train_dataset=train, data_collator=Collator(tok))
    """
    [f] = lint(src, select="TL202")
    assert "KeyError: 'text'" in f.message


def test_tl202_custom_collator_quiet_when_kept_or_model_inputs_only():
    src = """
    import torch
    from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments
    def collate(batch):
        return {"input_ids": torch.stack([b["input_ids"] for b in batch]), "labels": torch.tensor([b["label"] for b in batch])}
    def collate_text(batch):
        return tok([b["text"] for b in batch], return_tensors="pt")
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
    Trainer(model=model, args=TrainingArguments("out"), train_dataset=train, data_collator=collate)
    Trainer(model=model, args=TrainingArguments("out", remove_unused_columns=False), train_dataset=train,
            data_collator=collate_text)
    """
    assert "TL202" not in codes(src, select="ALL")


# ---------------------------------------------------------------------------------------------
# TL203 train-loader-not-shuffled / TL204 eval-loader-shuffled (off by default)

LOADERS = """
import torch
from torch.utils.data import DataLoader, DistributedSampler
train_loader = DataLoader(train_dataset, batch_size=32)
train_loader2 = DataLoader(tokenized["train"], batch_size=32, shuffle=False)
ok_train = DataLoader(train_dataset, batch_size=32, shuffle=True)
ok_sampler = DataLoader(train_dataset, sampler=DistributedSampler(train_dataset))
eval_loader = DataLoader(eval_dataset, batch_size=64, shuffle=True)
ok_eval = DataLoader(eval_dataset, batch_size=64)
test_loader = DataLoader(tokenized["test"], 64, True)
for epoch in range(3):
    for batch in ok_train:
        model(**batch).loss.backward()
        optimizer.step()
    for batch in ok_sampler:
        model(**batch).loss.backward()
        optimizer.step()
    for batch in train_loader:
        model(**batch).loss.backward()
    for batch in train_loader2:
        optimizer.step()
"""


def test_tl204_and_tl203_off_by_default():
    found = codes_by_default(LOADERS)
    assert "TL204" not in found and "TL203" not in found
    assert codes(LOADERS).count("TL203") == 2 and codes(LOADERS).count("TL204") == 2


def test_tl203_tl204_selected():
    found = lint(LOADERS, select="TL20")
    assert [(f.code, f.start.row) for f in found if f.code in ("TL203", "TL204")] == [
        ("TL203", 4), ("TL203", 5), ("TL204", 8), ("TL204", 10)]


TL203_HELPERS = """
import torch
from torch.utils.data import DataLoader, random_split

def get_dataset(full, batch_size=2):
    train_subset, val_subset = random_split(full, [0.95, 0.05])
    train_dataloader = DataLoader(train_subset, batch_size=batch_size)
    val_dataloader = DataLoader(val_subset, batch_size=batch_size)
    return train_subset, train_dataloader, val_subset, val_dataloader

def train(model, train_dataloader, optimizers, epochs):
    for epoch in range(epochs):
        for step, batch in enumerate(train_dataloader):
            loss = model(batch)
            loss.backward()
            for optim in optimizers:
                optim.step()

def main(full, model):
    _, train_dataloader, _, _ = get_dataset(full)
    train(model, train_dataloader, [torch.optim.Adam(model.parameters())], 10)
"""


def test_tl203_a_loader_built_in_a_helper_trained_in_another():
    # the real form (jacarvalho/mpd-public#6): the loader is returned by one function and iterated by another
    [f] = lint(TL203_HELPERS, select="TL203")
    assert f.start.row == 7 and "for ... in enumerate(train_dataloader)" in f.message and "shuffle=True" in f.hint


def test_tl203_through_a_nested_step_function_and_self_attributes():
    src = """
    import torch
    from torch.utils.data import DataLoader

    class Search:
        def __init__(self, model, dataset_train, dataset_valid, optimizer):
            self.model, self.optimizer = model, optimizer
            self.train_loader = torch.utils.data.DataLoader(dataset_train, batch_size=64, num_workers=4)
            self.valid_loader = torch.utils.data.DataLoader(dataset_valid, batch_size=64)

        def _train_one_epoch(self):
            def step(x, y):
                self.optimizer.zero_grad()
                torch.nn.functional.cross_entropy(self.model(x), y).backward()
                self.optimizer.step()
            for x, y in self.train_loader:
                step(x, y)
    """
    [f] = lint(src, select="TL203")
    assert f.start.row == 8 and "self.train_loader" in f.message


def test_tl203_quiet_without_a_training_use():
    # one batch to look at, a loader a helper takes for a pass without training, a parameter the file's
    # callers fill with another loader
    src = """
    import torch
    from torch.utils.data import DataLoader
    small_loader = DataLoader(train_set, batch_size=256, shuffle=False)
    imgs, labels = next(iter(small_loader))
    embed_loader = DataLoader(dataset["train"], batch_size=8)
    state = get_eva_state_dict(model, embed_loader)
    dataloader = DataLoader(train_dataset, batch_size=4, shuffle=False)
    batch = next(iter(dataloader))

    def train(dataloader):
        for x, y in dataloader:
            loss_fn(model(x), y).backward()
            optimizer.step()

    train_dl = DataLoader(train_dataset, batch_size=32, shuffle=True)
    train(train_dl)
    """
    assert "TL203" not in codes(src)


TL203_RANDOM = """
import torch
from torch.utils.data import DataLoader, Dataset, TensorDataset

class RandomDataset(Dataset):
    def __init__(self, size, length):
        self.data = torch.randn(length, size)
    def __getitem__(self, i):
        return self.data[i]
    def __len__(self):
        return len(self.data)

class Noise(Dataset):
    def __init__(self, n):
        self.x = torch.rand(n, 4)
    def __getitem__(self, i):
        return self.x[i]
    def __len__(self):
        return len(self.x)

x = torch.randn(64, 4)
train_loader = DataLoader({dataset}, batch_size={size})
for epoch in range(10):
    for batch in train_loader:
        model(batch).sum().backward()
        optimizer.step()
"""


@pytest.mark.parametrize("dataset, size", [
    ("RandomDataset(32, 64)", "2"),
    ("TensorDataset(x, torch.randint(0, 2, (64,)))", "8"),
    ("Noise(64)", "8"),
    ("train_examples", "len(train_examples)"),
])
def test_tl203_quiet_on_random_data_and_one_batch(dataset, size):
    assert "TL203" not in codes(TL203_RANDOM.format(dataset=dataset, size=size))
    # the same loop over stored data (in batches) is reported
    assert "TL203" in codes(TL203_RANDOM.format(dataset="train_examples", size="8"))


def test_tl203_quiet_on_iterable_datasets():
    src = TL203_RANDOM.format(dataset='load_dataset("c4", split="train", streaming=True)', size="8")
    assert "TL203" not in codes(src)


LIGHTNING_TL203 = """
import lightning as L
from torch.utils.data import DataLoader, random_split
from torchvision.datasets import MNIST

class MNISTDataModule(L.LightningDataModule):
    def setup(self, stage=None):
        self.mnist_train, self.mnist_val = random_split(MNIST("data", train=True), [55000, 5000])

    def train_dataloader(self):
        return DataLoader(self.mnist_train, batch_size=128)

    def val_dataloader(self):
        return DataLoader(self.mnist_val, batch_size=128)

trainer = L.Trainer(max_epochs=2, accelerator="auto", {devices})
trainer.fit(model, datamodule=MNISTDataModule())
"""


def test_tl203_lightning_on_one_device():
    [f] = lint(LIGHTNING_TL203.format(devices="devices=1"), select="TL203")
    assert f.start.row == 11 and "train_dataloader()" in f.message and "one device" in f.message


def test_tl203_lightning_on_several_devices_shuffles_for_the_loader():
    # Lightning's data connector gives the training loader a DistributedSampler(shuffle=True) when the run
    # is distributed, whatever the loader's own `shuffle`
    for devices in ("devices=4", 'strategy="ddp"', "devices=-1", "num_nodes=2"):
        assert "TL203" not in codes(LIGHTNING_TL203.format(devices=devices)), devices
    # a strategy object bound to a name first (pytorch-lightning's fp8 example), or one the source does not
    # show: the loader may get a DistributedSampler, so quiet
    named = LIGHTNING_TL203.replace("trainer = L.Trainer(", "mp = L.pytorch.strategies.ModelParallelStrategy()\n"
                                    "trainer = L.Trainer(")
    for devices in ("strategy=mp", "strategy=args.strategy"):
        assert "TL203" not in codes(named.format(devices=devices)), devices
    # DataParallel is one process: the loader keeps its order
    assert "TL203" in codes(LIGHTNING_TL203.format(devices='strategy="dp", devices=2'))


def test_tl203_a_loader_given_to_fit():
    src = """
    import lightning as L
    from torch.utils.data import DataLoader
    train_loader = DataLoader(train_ds, batch_size=64)
    trainer = L.Trainer(devices=1)
    trainer.fit(model, train_loader)
    """
    [f] = lint(src, select="TL203")
    assert "`trainer.fit(...)` trains on it" in f.message


def test_tl203_through_accelerate_prepare():
    src = """
    from accelerate import Accelerator
    from torch.utils.data import DataLoader
    accelerator = Accelerator()
    train_dl = DataLoader(tokenized["train"], batch_size=16, collate_fn=collator)
    model, optimizer, dl = accelerator.prepare(model, optimizer, train_dl)
    for epoch in range(num_epochs):
        for batch in dl:
            accelerator.backward(model(**batch).loss)
            optimizer.step()
    """
    [f] = lint(src, select="TL203")
    assert f.start.row == 5


TL203_STATS_LOADER = """
import numpy as np
import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

train_dataset = datasets.MNIST("data", train=True, transform=transforms.ToTensor())
train_loader = DataLoader(dataset=train_dataset, batch_size=128, shuffle=False)
means = [np.mean(images.numpy(), axis=(0, 2, 3)) for images, _ in train_loader]

train_dataset = datasets.MNIST("data", train=True, transform=transforms.Normalize(np.mean(means), 1.0))
train_loader = DataLoader(dataset=train_dataset, batch_size=128, shuffle={shuffle})

def train(model, loader):
    for features, targets in loader:
        loss = torch.nn.functional.cross_entropy(model(features), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

for epoch in range(10):
    {train}
"""


@pytest.mark.parametrize("train", [
    "train(model, train_loader)",
    "for batch_idx, (features, targets) in enumerate(train_loader):\n"
    "        torch.nn.functional.cross_entropy(model(features), targets).backward()\n"
    "        optimizer.step()",
])
def test_tl203_a_loader_for_statistics_rebound_to_the_shuffled_training_loader(train):
    # a first unshuffled loader over the training set computes the normalisation statistics; the name is
    # then rebound to the loader the loop trains on: only that one counts
    assert "TL203" not in codes(TL203_STATS_LOADER.format(shuffle="True", train=train))
    [f] = lint(TL203_STATS_LOADER.format(shuffle="False", train=train), select="TL203")
    assert f.start.row == 12


def test_tl203_a_loader_rebound_before_fit():
    src = """
    import lightning as L
    from torch.utils.data import DataLoader
    train_loader = DataLoader(train_ds, batch_size=len(train_ds) // 10)
    mean = sum(x.mean() for x, _ in train_loader) / len(train_loader)
    train_loader = DataLoader(train_ds, batch_size=64, shuffle={shuffle})
    L.Trainer(devices=1).fit(model, train_loader)
    """
    assert "TL203" not in codes(src.format(shuffle="True"))
    [f] = lint(src.format(shuffle="False"), select="TL203")
    assert f.start.row == 6


def test_tl203_a_loader_rebound_in_one_branch_only_still_counts():
    src = """
    import torch
    from torch.utils.data import DataLoader
    train_loader = DataLoader(train_dataset, batch_size=128)
    if args.shuffle:
        train_loader = DataLoader(train_dataset, batch_size=128, shuffle=True)
    for epoch in range(args.epochs):
        for x, y in train_loader:
            loss_fn(model(x), y).backward()
            optimizer.step()
    """
    [f] = lint(src, select="TL203")
    assert f.start.row == 4


# ---------------------------------------------------------------------------------------------
# TL205 tf-dataset-no-attention-mask

TL205_BASE = """
from datasets import load_dataset
from transformers import AutoTokenizer, DataCollatorWithPadding, TFAutoModelForSequenceClassification
raw = load_dataset("glue", "sst2")
tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
tokenized = raw.map(lambda b: tokenizer(b["sentence"], truncation=True{pad}), batched=True)
train_set = tokenized["train"].to_tf_dataset(columns={cols}, label_cols="label", batch_size=16{coll})
model = {model}
model.compile(optimizer="adam")
model.fit(train_set)
"""
TF_MODEL = 'TFAutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)'


def test_tl205_max_length_padding_without_collator():
    src = TL205_BASE.format(pad=', padding="max_length"', cols='["input_ids"]', coll="", model=TF_MODEL)
    [f] = lint(src, select="TL205")
    assert "padding=\"max_length\"" in f.message and "'attention_mask'" in f.hint


def test_tl205_quiet_variants():
    variants = [
        # mask kept
        {"pad": "", "cols": '["input_ids", "attention_mask"]',
         "coll": ", collate_fn=DataCollatorWithPadding(tokenizer, return_tensors='np')", "model": TF_MODEL},
        # no padding at all (the default collator would fail differently)
        {"pad": "", "cols": '["input_ids"]', "coll": "", "model": TF_MODEL},
        # a plain Keras model that masks itself (mask_zero=True)
        {"pad": ', padding="max_length"', "cols": '["input_ids"]', "coll": "",
         "model": "tf.keras.Sequential([tf.keras.layers.Embedding(30522, 64, mask_zero=True)])"},
    ]
    for v in variants:
        src = "import tensorflow as tf\n" + TL205_BASE.format(**v)
        assert "TL205" not in codes(src, select="ALL"), v


# ---------------------------------------------------------------------------------------------
# TL206 batchencoding-to-fit


def test_tl206_functional_model_fit_and_validation_data_with_fix():
    src = """
    import tensorflow as tf
    from transformers import AutoTokenizer, TFAutoModel
    tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
    bert = TFAutoModel.from_pretrained("bert-base-uncased")
    ids = tf.keras.Input(shape=(128,), dtype="int32", name="input_ids")
    mask = tf.keras.Input(shape=(128,), dtype="int32", name="attention_mask")
    out = tf.keras.layers.Dense(2)(bert(ids, attention_mask=mask).pooler_output)
    model = tf.keras.Model(inputs={"input_ids": ids, "attention_mask": mask}, outputs=out)
    train_enc = tokenizer(train_texts, padding="max_length", max_length=128, truncation=True, return_tensors="tf")
    val_enc = tokenizer(val_texts, padding="max_length", max_length=128, truncation=True, return_tensors="tf")
    model.fit(train_enc, train_labels, validation_data=(val_enc, val_labels), epochs=2)
    """
    found = lint(src, select="TL206")
    assert len(found) == 2
    assert found[0].fix.edits[0].content == "dict(train_enc)"


def test_tl206_quiet_for_dict_and_transformers_models():
    src = """
    import tensorflow as tf
    from transformers import AutoTokenizer, TFAutoModelForSequenceClassification
    tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
    model = TFAutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
    enc = tokenizer(texts, padding=True, return_tensors="tf")
    model.fit(enc, labels)
    keras_model = tf.keras.Model(inputs=inp, outputs=out)
    keras_model.fit(dict(enc), labels)
    """
    assert "TL206" not in codes(src, select="ALL")


def test_tl206_transformers_tf_model_before_4_38():
    # huggingface/transformers#20709 / #20732: the TF example of the training docs, with transformers 4.25
    src = """
    # /// script
    # dependencies = ["transformers==VERSION", "tensorflow==2.11.0"]
    # ///
    import numpy as np
    from transformers import AutoTokenizer, TFAutoModelForSequenceClassification
    from tensorflow.keras.optimizers import Adam
    tokenizer = AutoTokenizer.from_pretrained("bert-base-cased")
    tokenized_data = tokenizer(sentences, return_tensors="np", padding=True)
    model = TFAutoModelForSequenceClassification.from_pretrained("bert-base-cased")
    model.compile(optimizer=Adam(3e-5))
    model.fit(DATA, labels)
    """
    [f] = lint(src.replace("VERSION", "4.25.1").replace("DATA", "tokenized_data"), select="TL206")
    assert "only from transformers 4.38" in f.message and "transformers==4.25.1" in f.message
    assert f.fix.edits[0].content == "dict(tokenized_data)"
    # converted by the model itself (4.38 and later), or a dict already
    assert codes(src.replace("VERSION", "4.38.0").replace("DATA", "tokenized_data"), "TL206") == []
    assert codes(src.replace("VERSION", "4.25.1").replace("DATA", "dict(tokenized_data)"), "TL206") == []


# ---------------------------------------------------------------------------------------------
# TL403 activation-before-loss


def test_tl403_variants():
    src = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    criterion = nn.CrossEntropyLoss()
    def step(model, x, y):
        logits = model(x)
        probs = F.softmax(logits, dim=-1)
        a = criterion(probs, y)
        b = F.cross_entropy(logits.softmax(-1), y)
        c = nn.BCEWithLogitsLoss()(torch.sigmoid(logits), y.float())
        d = F.nll_loss(torch.softmax(logits, 1), y)
        return a + b + c + d
    net = nn.Sequential(nn.Linear(10, 3), nn.Softmax(dim=1))
    e = criterion(net(x), y)
    """
    assert codes(src, select="TL403") == ["TL403"] * 5


def test_tl403_correct_uses_quiet():
    src = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    criterion = nn.CrossEntropyLoss()
    def step(model, teacher, x, y, T=2.0):
        logits = model(x)
        a = criterion(logits, y)
        b = F.nll_loss(F.log_softmax(logits, dim=1), y)
        # distillation: probabilities as soft *targets* are fine
        c = F.cross_entropy(logits / T, F.softmax(teacher(x) / T, dim=-1))
        d = F.binary_cross_entropy(torch.sigmoid(logits), y.float())
        probs = F.softmax(logits, dim=-1)
        probs = torch.log(probs)
        e = F.nll_loss(probs, y)
        preds = logits.softmax(-1).argmax(-1)
        return a + b + c + d + e
    """
    assert "TL403" not in codes(src, select="ALL")


def test_tl403_keras_softmax_layer_with_from_logits():
    src = """
    import tensorflow as tf
    model = tf.keras.Sequential([
        tf.keras.layers.Dense(64, activation="relu"),
        tf.keras.layers.Dense(10, activation="softmax"),
    ])
    model.compile(optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    ok = tf.keras.Sequential([tf.keras.layers.Dense(10)])
    ok.compile(optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    ok2 = tf.keras.Sequential([tf.keras.layers.Dense(10, activation="softmax")])
    ok2.compile(optimizer="adam", loss=tf.keras.losses.SparseCategoricalCrossentropy())
    """
    found = lint(src, select="TL403")
    assert [f.start.row for f in found] == [7]


# ---------------------------------------------------------------------------------------------
# TL404 single-loss-multi-output

TL404_BASE = """
import tensorflow as tf
from transformers import TFAutoModelForQuestionAnswering
model = TFAutoModelForQuestionAnswering.from_pretrained("distilbert-base-cased")
train_set = tokenized["train"].to_tf_dataset(columns=["input_ids", "attention_mask"], label_cols={labels},
                                             batch_size=16, shuffle=True, collate_fn=collator)
model.compile(optimizer=tf.keras.optimizers.Adam(3e-5), {loss})
model.fit(train_set, epochs=2)
"""


def test_tl404_single_label_column():
    for labels in ('"start_positions"', '["start_positions"]'):
        src = TL404_BASE.format(labels=labels, loss="loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)")
        [f] = lint(src, select="TL404")
        assert "end_logits` never gets a loss" in f.message


def test_tl404_quiet_with_both_labels_or_internal_loss():
    for labels, loss in (
        ('["start_positions", "end_positions"]', "loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)"),
        ('"start_positions"', 'metrics=["accuracy"]'),
    ):
        assert "TL404" not in codes(TL404_BASE.format(labels=labels, loss=loss), select="ALL")


def test_tl403_module_forward_and_self_attributes():
    src = """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(784, 10)
            self.act = nn.Softmax(dim=1)

        def forward(self, x):
            return self.act(self.fc(x))

    class Good(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(784, 10)

        def forward(self, x):
            if self.training:
                return self.fc(x)
            return F.softmax(self.fc(x), dim=1)

    class Loop:
        def __init__(self):
            self.criterion = nn.CrossEntropyLoss()

        def step(self, model, x, y):
            return self.criterion(torch.softmax(model(x), -1), y)

    model = Net().to("cpu")
    good = Good()
    criterion = nn.CrossEntropyLoss()
    loss = criterion(model(x), y)
    loss2 = criterion(good(x), y)
    """
    found = lint(src, select="TL403")
    assert [f.start.row for f in found] == [13, 30]
    assert "(through `model(x)`)" in found[0].message


def test_tl304_own_data_besides_a_hub_dataset_quiet():
    src = """
    from datasets import load_dataset
    from transformers import AutoModelForSequenceClassification
    imdb = load_dataset("imdb")
    scores = load_dataset("csv", data_files="scores.csv")
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=1)
    """
    assert "TL304" not in codes(src, select="ALL")


def test_tl103_slice_across_the_class_boundary_is_a_warning():
    src = """
    from datasets import load_dataset
    a = load_dataset("imdb", split="train[40%:60%]")
    b = load_dataset("imdb", split="train[10%:20%]")
    c = load_dataset("imdb", split="train[12000:13000]")
    d = load_dataset("imdb", split="train[60%:]")
    """
    assert [f.severity.value for f in lint(src, select="TL103")] == ["warning", "error", "warning", "error"]


# ---------------------------------------------------------------------------------------------
# TL201: batches of one example, and a split padded as one batch

TL201_TPL = """
from datasets import load_dataset
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments
raw = load_dataset("imdb")
tokenizer = AutoTokenizer.from_pretrained("bert-base-cased")
def tokenize(batch):
    return tokenizer(batch["text"], truncation=True, padding=True)
ds = raw.map(tokenize, batched=True{map_args})
model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
args = TrainingArguments("out"{args})
trainer = Trainer(model=model, args=args, train_dataset=ds["train"]{eval})
trainer.train()
"""


def test_tl201_quiet_with_one_example_per_batch():
    one = TL201_TPL.format(map_args="", args=", per_device_train_batch_size=1", eval="")
    assert codes(one, "TL201") == []
    # the evaluation batches still hold 8 examples
    with_eval = TL201_TPL.format(map_args="", args=", per_device_train_batch_size=1", eval=', eval_dataset=ds["test"]')
    [f] = lint(with_eval, "TL201")
    assert '`ds["test"]`' in f.message
    both = TL201_TPL.format(map_args="", args=", per_device_train_batch_size=1, per_device_eval_batch_size=1",
                            eval=', eval_dataset=ds["test"]')
    assert codes(both, "TL201") == []
    assert codes(TL201_TPL.format(map_args="", args=", per_device_train_batch_size=4", eval=""), "TL201") == ["TL201"]


def test_tl201_quiet_when_the_whole_split_is_padded_as_one_batch():
    # `padding=True` pads to the longest sequence of the batch the map function sees: the whole split here
    for map_args in (", batch_size=None", ", batch_size=-1", ', batch_size=len(raw["train"])'):
        assert codes(TL201_TPL.format(map_args=map_args, args="", eval=""), "TL201") == [], map_args
    # several processes: one batch per shard, each padded to its own longest
    for map_args in ("", ", batch_size=1000", ", batch_size=None, num_proc=4"):
        assert codes(TL201_TPL.format(map_args=map_args, args="", eval=""), "TL201") == ["TL201"], map_args


TL201_LOADER = """
from datasets import load_dataset
from torch.utils.data import DataLoader
from transformers import AutoTokenizer, default_data_collator
tokenizer = AutoTokenizer.from_pretrained("intfloat/e5-mistral-7b-instruct")
dataset = load_dataset("json", data_files={"train": "train.jsonl"})
def preprocess(examples):
    result = tokenizer(examples["query"], PAD max_length=512, truncation=True)
    result["labels"] = examples["label"]
    return result
processed = dataset.map(preprocess, batched=True MAP, remove_columns=dataset["train"].column_names)
train_dataset = processed["train"]
loader = DataLoader(train_dataset, LOADER, collate_fn=default_data_collator, pin_memory=True)
"""


def _loader_case(pad="padding=True,", map_args="", loader="shuffle=True, batch_size=8"):
    return TL201_LOADER.replace("PAD", pad).replace(" MAP", map_args).replace("LOADER", loader)


def test_tl201_dataloader_over_data_padded_per_map_batch():
    # kamalkraj/e5-mistral-7b-instruct#11, in the shape of peft's peft_lora_embedding_semantic_search.py
    [f] = lint(_loader_case(), "TL201")
    assert f.start.row == 13 and "padding=True" in f.message and "DataCollatorWithPadding" in f.hint
    assert codes(_loader_case(pad='padding="longest",'), "TL201") == ["TL201"]
    # in order, but a loader batch of 6 crosses the map batches of 1000
    assert codes(_loader_case(loader="batch_size=6"), "TL201") == ["TL201"]
    assert codes(_loader_case(loader="shuffle=True, batch_size=8, collate_fn=DefaultDataCollator()").replace(
        ", collate_fn=default_data_collator", "").replace("default_data_collator", "DefaultDataCollator"),
        "TL201") == ["TL201"]


def test_tl201_dataloader_quiet_forms():
    quiet = [
        _loader_case(pad='padding="max_length",'),  # fixed length
        _loader_case(pad=""),  # no padding in the tokenizer call: the function may pad by hand (peft's CLM examples)
        _loader_case(map_args=", batch_size=None"),  # the whole split is one map batch
        _loader_case(loader="shuffle=True"),  # the DataLoader's default batch size is 1
        _loader_case(loader="shuffle=True, batch_size=1"),
        _loader_case(loader="batch_size=8"),  # in order: every loader batch lies inside one map batch of 1000
        _loader_case().replace("collate_fn=default_data_collator", "collate_fn=DataCollatorWithPadding(tokenizer)"),
        _loader_case().replace('    result["labels"]', '    result["input_ids"] = [x + [tokenizer.pad_token_id] '
                               '* (512 - len(x)) for x in result["input_ids"]]\n    result["labels"]'),
    ]
    for src in quiet:
        assert codes(src, "TL201") == [], src


# ---------------------------------------------------------------------------------------------
# TL103: the labels of a label-sorted dataset that is not trained on its labels


def test_tl103_quiet_when_a_language_model_learns_the_text():
    # in the shape of the course's "fine-tuning a masked language model" on IMDb (and GPT-2 on IMDb):
    # the reviews are the training target, their sorted labels never reach the model
    clm = """
    from datasets import load_dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling, Trainer, TrainingArguments
    raw = load_dataset("imdb", split="train[:2000]")
    tokenizer = AutoTokenizer.from_pretrained("gpt2")
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    ds = raw.map(lambda b: tokenizer(b["text"], truncation=True), batched=True)
    trainer = Trainer(model=model, args=TrainingArguments("out"), train_dataset=ds,
                      data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False))
    """
    assert codes(clm, "TL103") == []
    # a classifier in the same file: the labels are a target again
    both = clm.replace("model = AutoModelForCausalLM", "clf = AutoModelForSequenceClassification.from_pretrained(\"gpt2\")\n"
                       "    model = AutoModelForCausalLM").replace("import AutoModelForCausalLM",
                                                                   "import AutoModelForSequenceClassification, AutoModelForCausalLM")
    assert codes(both, "TL103") == ["TL103"]


def test_tl103_quiet_when_the_label_column_is_dropped():
    tpl = """
    from datasets import load_dataset
    imdb = load_dataset("imdb")
    small = imdb["train"].select(range(1000))
    tokenized = small.map(lambda b: tok(b["text"]), batched=True, remove_columns={cols})
    """
    assert codes(tpl.format(cols='["text", "label"]'), "TL103") == []
    assert codes(tpl.format(cols="small.column_names"), "TL103") == []
    assert codes(tpl.format(cols='["text"]'), "TL103") == ["TL103"]
    dropped = """
    from datasets import load_dataset
    texts = load_dataset("imdb", split="train[:1000]").remove_columns("label")
    """
    assert codes(dropped, "TL103") == []


# ---------------------------------------------------------------------------------------------
# TL301 on models that already have their head


def test_tl301_quiet_for_a_fine_tuned_checkpoint_loaded_for_inference():
    # in the shape of an evaluation script over MNLI with a fine-tuned checkpoint whose name says nothing
    src = """
    from datasets import load_dataset
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    ds = load_dataset("glue", "mnli", split="validation_matched")
    tok = AutoTokenizer.from_pretrained("{ckpt}")
    model = AutoModelForSequenceClassification.from_pretrained("{ckpt}")
    preds = [model(**tok(p, h, return_tensors="pt")).logits.argmax(-1) for p, h in zip(ds["premise"], ds["hypothesis"])]
    """
    assert codes(src.format(ckpt="textattack/bert-base-uncased-MNLI"), "TL301") == []
    assert codes(src.format(ckpt="./outputs/best"), "TL301") == []
    # a base checkpoint has no head yet: the random 2-output head is wrong whatever the script does with it
    assert codes(src.format(ckpt="bert-base-uncased"), "TL301") == ["TL301"]
    # the same unnamed checkpoint, trained here on MNLI without num_labels
    trained = src.format(ckpt="my-org/roberta-v2").replace(
        "preds = ", "from transformers import Trainer, TrainingArguments\n"
        "    Trainer(model=model, args=TrainingArguments('o'), train_dataset=ds)\n    preds = ")
    assert codes(trained, "TL301") == ["TL301"]


def test_tl301_quiet_for_the_directory_the_script_saved():
    src = """
    from datasets import load_dataset
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments
    raw = load_dataset("glue", "mnli")
    tok = AutoTokenizer.from_pretrained("bert-base-cased")
    ds = raw.map(lambda b: tok(b["premise"], b["hypothesis"], truncation=True), batched=True)
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=3)
    args = TrainingArguments(output_dir="mnli-out")
    trainer = Trainer(model=model, args=args, train_dataset=ds["train"], processing_class=tok)
    trainer.train()
    trainer.save_model("./mnli-final")
    again = Trainer(model=AutoModelForSequenceClassification.from_pretrained({ckpt}), args=args,
                    train_dataset=ds["train"], processing_class=tok)
    again.train()
    """
    for ckpt in ('"./mnli-final"', '"mnli-out/checkpoint-500"', "args.output_dir", 'f"{args.output_dir}/checkpoint-500"'):
        assert codes(src.format(ckpt=ckpt), "TL301") == [], ckpt
    assert codes(src.format(ckpt='"bert-base-cased"'), "TL301") == ["TL301"]


TL301_LOOP = """
import torch
{data}
from transformers import AutoModelForSequenceClassification
model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased")
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
for batch in loader:
    {labels}
    model(**batch, labels=labels).loss.backward()
    optimizer.step()
    optimizer.zero_grad()
"""


def test_tl301_binary_evidence_from_the_metric_tfds_and_the_labels():
    labels = 'labels = batch.pop("label")'
    # nothing says how many classes: no static finding (`--probe` reads the label column)
    assert codes(TL301_LOOP.format(data="", labels=labels), "TL301") == []
    for data in ('import evaluate\nmetric = evaluate.load("glue", "mrpc")',
                 'import tensorflow_datasets as tfds\ndata = tfds.load("glue/mrpc")',
                 'from sklearn.metrics import f1_score\nf1 = lambda p, y: f1_score(y, p, average="binary")'):
        assert codes(TL301_LOOP.format(data=data, labels=labels), "TL301") == [], data
    for dummy in ("labels = torch.zeros(8, dtype=torch.long)", "labels = torch.randint(0, 2, (8,))",
                  "labels = torch.randint(2, (8,))"):
        assert codes(TL301_LOOP.format(data="", labels=dummy), "TL301") == [], dummy
    [f] = lint(TL301_LOOP.format(data="", labels="labels = torch.randint(0, 5, (8,))"), "TL301")
    assert f.severity.value == "warning" and "go up to 4" in f.message
    built = TL301_LOOP.format(data="labels_list = []\nfor i in range(120):\n    labels_list.append(i % 3)", labels=labels)
    assert codes(built, "TL301") == ["TL301"]
    # the metric names a three-class task: that is the data's class count
    [f] = lint(TL301_LOOP.format(data='import tensorflow_datasets as tfds\ndata = tfds.load("glue/mnli")', labels=labels),
               "TL301")
    assert f.severity.value == "error" and "3 classes" in f.message


def test_tl303_quiet_for_an_inference_only_model():
    # in the shape of accelerate's examples/inference/pippy/gpt2.py: a latency benchmark, never trained
    src = """
    import torch
    from transformers import AutoModelForSequenceClassification
    model = AutoModelForSequenceClassification.from_pretrained("gpt2")
    model.eval()
    with torch.no_grad():
        output = model(torch.randint(0, 50257, (1, 1024)))
    """
    assert codes(src, "TL303") == []
    trained = src + """
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    for batch in loader:
        model(**batch).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    """
    assert codes(trained, "TL303") == ["TL303"]


# ---------------------------------------------------------------------------------------------
# names no import binds: star imports and snippets


def test_star_imports_resolve_transformers_shaped_names_to_transformers():
    from pathlib import Path

    src = (Path(__file__).parent / "data" / "correct" / "star_import_trainer.py").read_text()
    assert codes(src) == []
    # two star imports: `Trainer`, `AutoTokenizer`... come from transformers, not from the last star import
    no_collator = src.replace(",\n                  data_collator=DataCollatorWithPadding(tokenizer))", ")")
    assert no_collator != src and codes(no_collator, "TL201") == ["TL201"]
    # a name the file binds itself is its own, star import or not
    own = "class Trainer:\n    def __init__(self, **kw):\n        pass\n\n\n" + no_collator
    assert codes(own, "TL201") == []


def test_snippet_names_without_imports():
    src = """
    raw = load_dataset("glue", "mnli")
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased")
    trainer = Trainer(model=model, args=TrainingArguments("out"), train_dataset=raw["train"])
    """
    assert codes(src, "TL301") == ["TL301"]
    # `np` and `torch` are the conventional aliases; `Trainer` of a Lightning import is not transformers'
    lightning = """
    from lightning import Trainer
    raw = load_dataset("glue", "mnli")
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=3)
    Trainer(max_epochs=1).fit(model)
    """
    assert codes(lightning) == []


def test_tl203_a_loop_the_script_runs_once_has_no_epoch_to_repeat():
    # the real form (huggingface/computer-vision-course, model optimisation notebooks): `epochs = 1`, one
    # pass over MNIST in stored order before exporting the model
    src = """
    import torch
    from torch.utils.data import DataLoader
    epochs = {epochs}
    train_loader = torch.utils.data.DataLoader(train_dataset, 32)
    for epoch in range(1, epochs + 1):
        for batch_idx, (data, target) in enumerate(train_loader):
            optimizer.zero_grad()
            loss_fn(model(data), target).backward()
            optimizer.step()
    """
    assert codes(src.format(epochs=1), select="TL203") == []
    assert codes(src.format(epochs=10), select="TL203") == ["TL203"]
    assert codes(src.format(epochs="args.epochs"), select="TL203") == ["TL203"]
    # a function of the file with the loop: one pass when every call runs once, several when a loop calls it
    helper = """
    import torch
    from torch.utils.data import DataLoader
    train_loader = DataLoader(train_dataset, 32)

    def train_one_epoch(loader):
        for x, y in loader:
            loss_fn(model(x), y).backward()
            optimizer.step()
            optimizer.zero_grad()

    {call}
    """
    assert codes(helper.format(call="train_one_epoch(train_loader)"), select="TL203") == []
    assert codes(helper.format(call="for epoch in range(5):\n        train_one_epoch(train_loader)"),
                 select="TL203") == ["TL203"]
