"""Stages 2-3 on real forms the rules used to miss: each test has the buggy form (the finding on the right
line) and its correct twin right next to it (no finding)."""

from __future__ import annotations

import textwrap

from trainlint.config import Settings
from trainlint.engine import lint_source
from trainlint.fixes import apply_fixes


def lint(source: str, select: str):
    return lint_source(textwrap.dedent(source), "train.py", Settings(select=[select]))


def lines(source: str, select: str) -> list[int]:
    return [f.start.row for f in lint(source, select)]


def line_of(source: str, text: str) -> int:
    """The 1-based row of the first line of the dedented ``source`` that contains ``text``."""
    for i, line in enumerate(textwrap.dedent(source).splitlines(), 1):
        if text in line:
            return i
    raise AssertionError(text)


# ---------------------------------------------------------------------------------------------
# TL202: a custom collator reads a column that the dataset's own `.map` adds


WWM = """
import collections
import numpy as np
from datasets import load_dataset
from transformers import AutoModelForMaskedLM, AutoTokenizer, Trainer, TrainingArguments, default_data_collator

tokenizer = AutoTokenizer.from_pretrained("distilbert-base-uncased")
model = AutoModelForMaskedLM.from_pretrained("distilbert-base-uncased")
raw = load_dataset("imdb")

def tokenize(examples):
    out = tokenizer(examples["text"], truncation=True, max_length=128, padding="max_length")
    out["word_ids"] = [out.word_ids(i) for i in range(len(out["input_ids"]))]
    out["labels"] = [list(ids) for ids in out["input_ids"]]
    return out

def whole_word_collator(features):
    for feature in features:
        word_ids = feature.pop("word_ids")
        mapping = collections.defaultdict(list)
        for idx, w in enumerate(word_ids):
            if w is not None:
                mapping[w].append(idx)
        for w in np.where(np.random.binomial(1, 0.2, (len(mapping),)))[0]:
            for idx in mapping[w.item()]:
                feature["input_ids"][idx] = tokenizer.mask_token_id
    return default_data_collator(features)

data = raw.map(tokenize, batched=True, remove_columns=["text", "label"])
args = TrainingArguments("out"{extra})
trainer = Trainer(model=model, args=args, train_dataset=data["train"], data_collator=whole_word_collator)
trainer.train()
"""


def test_tl202_collator_pops_a_column_the_map_added():
    src = WWM.format(extra="")
    [f] = lint(src, "TL202")
    assert f.start.row == line_of(src, 'feature.pop("word_ids")') and "KeyError: 'word_ids'" in f.message
    # the column is kept for the collator: it reaches it
    assert lines(WWM.format(extra=", remove_unused_columns=False"), "TL202") == []


COLLATOR_CLASS = """
import torch
from datasets import load_dataset
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments

tok = AutoTokenizer.from_pretrained("bert-base-uncased")
model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)

def encode(batch):
    enc = tok(batch["sentence"], truncation=True)
    return {{"input_ids": enc["input_ids"], "n_tokens": [len(x) for x in enc["input_ids"]], "labels": batch["label"]}}

class LengthSortedCollator:
    def __call__(self, features):
        longest = max(f["n_tokens"] for f in features)
        ids = [f["input_ids"] + [0] * (longest - len(f["input_ids"])) for f in features]
        return {{"input_ids": torch.tensor(ids), "labels": torch.tensor([f["labels"] for f in features])}}

data = load_dataset("glue", "sst2").map(encode, batched=True){after}
Trainer(model=model, args=TrainingArguments("out"), train_dataset=data["train"],
        data_collator=LengthSortedCollator()).train()
"""


def test_tl202_collator_class_reads_a_column_a_returned_dict_adds():
    src = COLLATOR_CLASS.format(after="")
    [f] = lint(src, "TL202")
    assert f.start.row == line_of(src, 'f["n_tokens"]') and "'n_tokens'" in f.message
    # the data is given its final columns by hand afterwards: nothing says `n_tokens` is still there
    assert lines(COLLATOR_CLASS.format(after='.select_columns(["input_ids", "labels"])'), "TL202") == []


OWN_MODEL = """
import torch
from datasets import load_dataset
from transformers import AutoTokenizer, BertModel, BertPreTrainedModel, Trainer, TrainingArguments

tok = AutoTokenizer.from_pretrained("bert-base-uncased")

class LengthAwareModel(BertPreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.bert = BertModel(config)
        self.head = torch.nn.Linear(config.hidden_size + 1, 2)

    def forward(self, input_ids, labels=None{params}):
        pooled = self.bert(input_ids).pooler_output
        return self.head(pooled)

def encode(batch):
    enc = tok(batch["sentence"], truncation=True, padding="max_length", max_length=64)
    enc["n_tokens"] = [sum(m) for m in enc["attention_mask"]]
    return enc

def collate(features):
    lengths = torch.tensor([f["n_tokens"] for f in features])
    return {{"input_ids": torch.tensor([f["input_ids"] for f in features]), "n_tokens": lengths,
            "labels": torch.tensor([f["label"] for f in features])}}

model = LengthAwareModel.from_pretrained("bert-base-uncased")
data = load_dataset("glue", "sst2").map(encode, batched=True)
Trainer(model=model, args=TrainingArguments("out"), train_dataset=data["train"], data_collator=collate).train()
"""


def test_tl202_a_model_class_of_the_file_keeps_what_its_forward_takes():
    src = OWN_MODEL.format(params="")
    [f] = lint(src, "TL202")
    assert f.start.row == line_of(src, 'f["n_tokens"]') and "`LengthAwareModel.forward`" in f.message
    assert lines(OWN_MODEL.format(params=", n_tokens=None"), "TL202") == []
    assert lines(OWN_MODEL.format(params=", **kwargs"), "TL202") == []


# ---------------------------------------------------------------------------------------------
# TL301: trained with `num_labels`, its weights reloaded into a model built without it


RELOAD = """
import argparse
import os
import torch
from pytorch_pretrained_bert.modeling import BertForSequenceClassification
from pytorch_pretrained_bert.optimization import BertAdam

parser = argparse.ArgumentParser()
parser.add_argument("--bert_model", default="bert-base-uncased")
parser.add_argument("--task", default="mnli")
args = parser.parse_args()
num_labels = {{"cola": 2, "mnli": 3, "sst-5": 5}}[args.task]

model = BertForSequenceClassification.from_pretrained(args.bert_model, num_labels={trained})
optimizer = BertAdam(list(model.parameters()), lr=2e-5)
model.train()
for input_ids, segment_ids, input_mask, label_ids in loader:
    loss = model(input_ids, segment_ids, input_mask, label_ids)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
torch.save(model.state_dict(), os.path.join("out", "pytorch_model.bin"))

state = torch.load(os.path.join("out", "pytorch_model.bin"))
model = BertForSequenceClassification.from_pretrained(args.bert_model, state_dict=state{reload})
model.eval()
"""


def test_tl301_weights_reloaded_without_the_trained_num_labels():
    src = RELOAD.format(trained="num_labels", reload="")
    [f] = lint(src, "TL301")
    assert f.start.row == line_of(src, "state_dict=state") and f.severity.value == "warning"
    assert "`num_labels=num_labels`" in f.message
    # a count the source knows: an error
    [f] = lint(RELOAD.format(trained="3", reload=""), "TL301")
    assert f.severity.value == "error"
    # the same count when reloading, or a binary model: the head fits its weights
    assert lines(RELOAD.format(trained="num_labels", reload=", num_labels=num_labels"), "TL301") == []
    assert lines(RELOAD.format(trained="2", reload=""), "TL301") == []


def fixed(source: str, select: str) -> str:
    src = textwrap.dedent(source)
    return apply_fixes(src, lint_source(src, "train.py", Settings(select=[select])), unsafe=True)[0]


def test_tl301_reload_fix_passes_the_same_count():
    assert "state_dict=state, num_labels=num_labels)" in fixed(RELOAD.format(trained="num_labels", reload=""), "TL301")


LOAD_STATE = """
import pandas as pd
import torch
from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments

df = pd.read_csv("reviews.csv")
classes = sorted(df["category"].unique())
model = AutoModelForSequenceClassification.from_pretrained("roberta-base", num_labels=len(classes))
Trainer(model=model, args=TrainingArguments("out"), train_dataset=train_ds).train()
torch.save(model.state_dict(), "best.pt")

best = AutoModelForSequenceClassification.from_pretrained("roberta-base"{reload})
best.load_state_dict(torch.load("best.pt"))
"""


def test_tl301_load_state_dict_into_a_model_built_without_the_count():
    src = LOAD_STATE.format(reload="")
    [f] = lint(src, "TL301")
    assert f.start.row == line_of(src, "best = ") and "load_state_dict" in f.message
    assert lines(LOAD_STATE.format(reload=", num_labels=len(classes)"), "TL301") == []


# ---------------------------------------------------------------------------------------------
# TL302: a language-modelling head trained on one class id per example


FOLDER = """
from pathlib import Path
import torch
from sklearn.model_selection import train_test_split
from transformers import AutoTokenizer, {cls}, Trainer, TrainingArguments

tokenizer = AutoTokenizer.from_pretrained("bert-base-multilingual-cased")
model = {cls}.from_pretrained("bert-base-multilingual-cased"{extra})

def read_split(split_dir):
    texts, labels = [], []
    for label_dir in ["pos", "neg"]:
        for f in (Path(split_dir) / label_dir).iterdir():
            texts.append(f.read_text())
            labels.append(1 if label_dir == "pos" else 0)
    return texts, labels

texts, labels = read_split("reviews/train")
train_texts, val_texts, train_labels, val_labels = train_test_split(texts, labels, test_size=0.2)

class ReviewDataset(torch.utils.data.Dataset):
    def __init__(self, encodings, labels):
        self.encodings = encodings
        self.labels = labels

    def __getitem__(self, idx):
        item = {{key: torch.tensor(val[idx]) for key, val in self.encodings.items()}}
        item["labels"] = torch.tensor(self.labels[idx])
        return item

    def __len__(self):
        return len(self.labels)

train_dataset = ReviewDataset(tokenizer(train_texts, truncation=True, padding=True), train_labels)
trainer = Trainer(model=model, args=TrainingArguments("out"), train_dataset=train_dataset)
trainer.train()
"""


def test_tl302_lm_head_on_class_ids_of_a_dataset_class():
    src = FOLDER.format(cls="AutoModelWithLMHead", extra="")
    [f] = lint(src, "TL302")
    assert f.start.row == line_of(src, "model = AutoModelWithLMHead") and "one class id" in f.message
    masked = FOLDER.format(cls="AutoModelForMaskedLM", extra="")
    assert lines(masked, "TL302") == [line_of(masked, "model = AutoModelForMaskedLM")]
    # the head of the task
    assert lines(FOLDER.format(cls="AutoModelForSequenceClassification", extra=", num_labels=2"), "TL302") == []


TOPICS = """
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments

label2id = {{"sports": 0, "politics": 1, "science": 2}}
tokenizer = AutoTokenizer.from_pretrained("gpt2")
tokenizer.pad_token = tokenizer.eos_token
model = AutoModelForCausalLM.from_pretrained("gpt2")

class TopicDataset(torch.utils.data.Dataset):
    def __init__(self, texts, targets):
        self.enc = tokenizer(texts, truncation=True, padding="max_length", max_length=64)
        self.targets = targets

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, i):
        ids = torch.tensor(self.enc["input_ids"][i])
        return {{"input_ids": ids, "attention_mask": torch.tensor(self.enc["attention_mask"][i]),
                "labels": {labels}}}

train = TopicDataset([r["text"] for r in rows], [label2id[r["topic"]] for r in rows])
Trainer(model=model, args=TrainingArguments("out"), train_dataset=train).train()
"""


def test_tl302_causal_lm_on_class_ids_from_a_label_table():
    src = TOPICS.format(labels="torch.tensor(self.targets[i])")
    assert lines(src, "TL302") == [line_of(src, "model = AutoModelForCausalLM")]
    # language modelling: the labels are the token ids
    assert lines(TOPICS.format(labels="ids.clone()"), "TL302") == []


def test_tl302_quiet_when_a_trainer_subclass_computes_its_own_loss():
    src = FOLDER.format(cls="AutoModelForMaskedLM", extra="")
    assert lines(src, "TL302") == [line_of(src, "model = AutoModelForMaskedLM")]
    # prompt-based classification: the loss reads the LM logits at the mask for the verbalizer's tokens
    verbalizer = src.replace("trainer = Trainer(", "trainer = PromptTrainer(").replace(
        "class ReviewDataset", "class PromptTrainer(Trainer):\n"
        "    def compute_loss(self, model, inputs, return_outputs=False, **kwargs):\n"
        "        labels = inputs.pop('labels')\n"
        "        logits = model(**inputs).logits[:, 0, VERBALIZER]\n"
        "        return torch.nn.functional.cross_entropy(logits, labels)\n\n\n"
        "class ReviewDataset")
    assert "PromptTrainer(model=model" in verbalizer and lines(verbalizer, "TL302") == []


# ---------------------------------------------------------------------------------------------
# TL305: `requires_grad = False` set on a module, not on its parameters


PROTOTYPES = """
import torch
from models import get_model

class Adapter:
    def initialize(self, opt):
        self.model = get_model(opt)
        self.model.load_state_dict(torch.load(opt["source_model_path"]))
        self.prototypes = self.model.head.conv.weight.view(opt["num_classes"], -1)
        {freeze}
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=opt["lr"])
"""


def test_tl305_requires_grad_on_a_module_with_a_parameter_under_it():
    src = PROTOTYPES.format(freeze="self.model.head.requires_grad = False")
    [f] = lint(src, "TL305")
    assert f.start.row == line_of(src, "self.model.head.requires_grad = False")
    assert "`self.model.head` is a module" in f.message and "nothing is frozen" in f.message
    for ok in ("self.model.head.requires_grad_(False)", "self.model.head.conv.weight.requires_grad = False",
               "for p in self.model.head.parameters(): p.requires_grad = False"):
        assert lines(PROTOTYPES.format(freeze=ok), "TL305") == [], ok


ENCODER = """
import torch
from torch import nn
from transformers import AutoModel

class Classifier(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.encoder = AutoModel.from_pretrained("bert-base-uncased")
        {freeze}
        self.head = nn.Linear(768, n)

    def forward(self, **batch):
        return self.head(self.encoder(**batch).pooler_output)

model = Classifier(5)
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
for batch, y in loader:
    nn.functional.cross_entropy(model(**batch), y).backward()
    optimizer.step()
    optimizer.zero_grad()
"""


def test_tl305_requires_grad_on_a_pretrained_encoder_and_on_children():
    src = ENCODER.format(freeze="self.encoder.requires_grad = False")
    [f] = lint(src, "TL305")
    assert f.start.row == line_of(src, "self.encoder.requires_grad = False") and "AutoModel.from_pretrained(...)" in f.message
    children = ENCODER.format(freeze="for i, child in enumerate(self.encoder.children()):\n"
                                     "            child.requires_grad = False")
    assert lines(children, "TL305") == [line_of(children, "child.requires_grad = False")]
    assert lines(ENCODER.format(freeze="for p in self.encoder.parameters():\n"
                                       "            p.requires_grad = False"), "TL305") == []
    assert lines(ENCODER.format(freeze="self.encoder.requires_grad_(False)"), "TL305") == []


def test_tl305_module_requires_grad_has_an_unsafe_fix():
    src = PROTOTYPES.format(freeze="self.model.head.requires_grad = False")
    [f] = lint(src, "TL305")
    assert f.fix is not None and f.fix.applicability.value == "unsafe"
    out = fixed(src, "TL305")
    assert "        self.model.head.requires_grad_(False)\n" in out and "requires_grad = False" not in out


FROZEN_EMBEDDINGS = """
import torch
from transformers import AutoModelForSequenceClassification

model = AutoModelForSequenceClassification.from_pretrained("roberta-base", num_labels=3)
{freeze}
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
"""


def test_tl305_requires_grad_on_the_modules_a_transformers_model_hands_out():
    for holder in ("model", "model.base_model", "model.get_input_embeddings()"):
        src = FROZEN_EMBEDDINGS.format(freeze=f"{holder}.requires_grad = False")
        [f] = lint(src, "TL305")
        assert f.start.row == line_of(src, "requires_grad = False") and f"`{holder}` is a module" in f.message
    quiet = FROZEN_EMBEDDINGS.format(freeze="model.get_input_embeddings().weight.requires_grad = False")
    assert lines(quiet, "TL305") == []


# variants of the collator and of the map: a subclass of a transformers collator, a lambda
WWM_SUBCLASS = """
from datasets import load_dataset
from transformers import AutoModelForMaskedLM, AutoTokenizer, DataCollatorForLanguageModeling, Trainer, TrainingArguments

tokenizer = AutoTokenizer.from_pretrained("bert-base-chinese")
model = AutoModelForMaskedLM.from_pretrained("bert-base-chinese")

class WholeWordCollator(DataCollatorForLanguageModeling):
    def torch_call(self, examples):
        refs = [e["chinese_ref"] for e in examples]
        batch = super().torch_call([{{"input_ids": e["input_ids"]}} for e in examples])
        return batch

data = load_dataset("text", data_files="corpus.txt").map(
    lambda b: {{"input_ids": tokenizer(b["text"])["input_ids"], "chinese_ref": segment(b["text"])}}, batched=True)
args = TrainingArguments("out"{extra})
Trainer(model=model, args=args, train_dataset=data["train"], data_collator=WholeWordCollator(tokenizer)).train()
"""


def test_tl202_collator_subclass_and_a_lambda_map():
    src = WWM_SUBCLASS.format(extra="")
    [f] = lint(src, "TL202")
    assert f.start.row == line_of(src, 'e["chinese_ref"]')
    assert lines(WWM_SUBCLASS.format(extra=", remove_unused_columns=False"), "TL202") == []


TSV = """
import csv
import torch
from transformers import AutoModelForMaskedLM, AutoTokenizer, Trainer, TrainingArguments

tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
model = AutoModelForMaskedLM.from_pretrained("bert-base-uncased")
names = ["negative", "neutral", "positive"]
label2id = {{name: i for i, name in enumerate(names)}}
texts, ys = [], []
with open("train.tsv") as f:
    for row in csv.reader(f, delimiter="\\t"):
        texts.append(row[0])
        ys.append({label})

class TsvDataset(torch.utils.data.Dataset):
    def __init__(self, encodings, ys):
        self.encodings = encodings
        self.ys = ys

    def __getitem__(self, idx):
        item = {{k: torch.tensor(v[idx]) for k, v in self.encodings.items()}}
        item["label"] = self.ys[idx]
        return item

    def __len__(self):
        return len(self.ys)

Trainer(model=model, args=TrainingArguments("out"), train_dataset=TsvDataset(tokenizer(texts), ys)).train()
"""


def test_tl302_lm_head_on_labels_read_as_numbers_or_through_a_table():
    src = TSV.format(label="int(row[1])")
    assert lines(src, "TL302") == [line_of(src, "model = AutoModelForMaskedLM")]
    named = src.replace("train_dataset=TsvDataset(tokenizer(texts), ys)", "train_dataset=train_set").replace(
        "Trainer(model=model", "train_set = TsvDataset(tokenizer(texts), ys)\nTrainer(model=model")
    assert lines(named, "TL302") == [line_of(named, "model = AutoModelForMaskedLM")]
    assert lines(named.replace("int(row[1])", "label2id[row[1]]"), "TL302") == [line_of(named, "model = AutoModel")]
    # the labels are token ids: language modelling on the file's text
    assert lines(named.replace("int(row[1])", "tokenizer(row[1])[\"input_ids\"]"), "TL302") == []
