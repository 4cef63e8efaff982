"""Stages 1 and 2 (data, batching): each rule reports only on its premises, in the forms real code had.

The `## Premises` blocks of `rules/<CODE>.md` show each premise missing on the documents' own examples
(`test_catalog.py`); these tests keep the forms of the real files where a premise was missing and a rule
reported anyway, and the reworked rules' shape (class size, message length).
"""

from __future__ import annotations

import inspect
import textwrap

import pytest
from support import RELEASES, ROOT

from trainlint.config import Settings
from trainlint.docs import parse_doc
from trainlint.engine import lint_source
from trainlint.rule import all_rules

REWORKED = ("TL101", "TL102", "TL103", "TL104", "TL105", "TL201", "TL202", "TL204", "TL205", "TL206")


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


# ---------------------------------------------------------------------------------------------
# TL201 no-padding-collator


def test_tl201_the_probe_names_the_column_that_cannot_be_stacked():
    # transformers' run_ner.py with a collator that pads the tokenizer's columns but not the word labels:
    # `input_ids` are padded, `labels` is what fails
    from trainlint.stages.s2_batching.probe import collation_failure_text

    features = [{"input_ids": [101] + [7] * n + [102], "attention_mask": [1] * (n + 2), "labels": [-100] + [0] * n + [-100]}
                for n in (3, 5, 4)]
    error = ("ValueError: Unable to create tensor, you should probably activate truncation and/or padding with "
             "'padding=True' 'truncation=True' to have batched tensors with the same length. Perhaps your features "
             "(`labels` in this case) have excessive nesting (inputs type `list` where type `int` is expected).")
    code, message, evidence = collation_failure_text(error, features, "input_ids", "DataCollatorWithPadding",
                                                     "training")
    assert code == "TL201" and "`labels`" in message and "input_ids" not in message
    assert evidence.startswith("labels lengths in the batch: [5, 7, 6]")
    # the default collator stacks `label` first, then the keys in order: the first that differs fails
    code, message, evidence = collation_failure_text("ValueError: expected sequence of length 5 at dim 1 (got 7)",
                                                     features, "input_ids", "default_data_collator", "training")
    assert code == "TL201" and "`input_ids`" in message


def test_tl201_a_map_function_that_pads_by_hand_leaves_equal_lengths():
    # peft's causal-LM examples: the tokenizer call does not pad, the function pads every row to max_length
    src = """
    from datasets import load_dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, Trainer, TrainingArguments

    max_length = 64
    tokenizer = AutoTokenizer.from_pretrained("bigscience/bloomz-560m")
    dataset = load_dataset("ought/raft", "twitter_complaints")

    def preprocess_function(examples):
        model_inputs = tokenizer(examples["Tweet text"])
        for i in range(len(model_inputs["input_ids"])):
            sample_input_ids = model_inputs["input_ids"][i]
            model_inputs["input_ids"][i] = [tokenizer.pad_token_id] * (max_length - len(sample_input_ids)) + sample_input_ids
            model_inputs["attention_mask"][i] = [0] * (max_length - len(sample_input_ids)) + [1] * len(sample_input_ids)
        return model_inputs

    processed = dataset.map(preprocess_function, batched=True, remove_columns=dataset["train"].column_names)
    model = AutoModelForCausalLM.from_pretrained("bigscience/bloomz-560m")
    trainer = Trainer(model=model, args=TrainingArguments("out", per_device_train_batch_size=8),
                      train_dataset=processed["train"])
    trainer.train()
    """
    assert codes(src, "TL201") == []
    unpadded = src.replace(
        src[src.index("        for i in range"):src.index("        return model_inputs")], "")
    assert codes(unpadded, "TL201") == ["TL201"]


def test_tl201_a_trainer_subclass_that_makes_its_own_loaders_or_a_collator_set_later():
    base = """
    from datasets import load_dataset
    from torch.utils.data import DataLoader
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer, TrainingArguments

    raw = load_dataset("imdb")
    tokenizer = AutoTokenizer.from_pretrained("bert-base-cased")
    ds = raw.map(lambda b: tokenizer(b["text"], truncation=True), batched=True)
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)

    class MyTrainer(Trainer):
        def get_train_dataloader(self):
            return DataLoader(self.train_dataset, batch_size=8, collate_fn=DataCollatorWithPadding(tokenizer))

    trainer = MyTrainer(model=model, args=TrainingArguments("out"), train_dataset=ds["train"])
    trainer.train()
    """
    assert codes(base, "TL201") == []
    assert codes(base.replace("def get_train_dataloader(self)", "def log_metrics(self)"), "TL201") == ["TL201"]
    later = base.replace("def get_train_dataloader(self)", "def log_metrics(self)").replace(
        "trainer.train()", "trainer.data_collator = DataCollatorWithPadding(tokenizer)\n    trainer.train()")
    assert codes(later, "TL201") == []


def test_tl201_a_batch_size_decided_at_run_time_is_for_the_probe():
    src = """
    import sys
    from datasets import load_dataset
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments

    batch_size = int(sys.argv[1])
    raw = load_dataset("imdb")
    tokenizer = AutoTokenizer.from_pretrained("bert-base-cased")
    ds = raw.map(lambda b: tokenizer(b["text"], truncation=True), batched=True)
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
    args = TrainingArguments("out", per_device_train_batch_size=batch_size)
    trainer = Trainer(model=model, args=args, train_dataset=ds["train"])
    trainer.train()
    """
    [f] = lint(src, "TL201")
    assert f.severity.value == "info" and "batch size" in f.message


# ---------------------------------------------------------------------------------------------
# TL101 raw-dataset-to-trainer

TL101_BASE = """
from datasets import load_dataset
from transformers import AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer, TrainingArguments

raw_datasets = load_dataset("glue", "mnli")
tokenizer = AutoTokenizer.from_pretrained("distilbert-base-uncased")

def preprocess(examples):
    return tokenizer(examples["premise"], examples["hypothesis"], truncation=True)

tokenized_datasets = raw_datasets.map(preprocess, batched=True)
model = AutoModelForSequenceClassification.from_pretrained("distilbert-base-uncased", num_labels=3)
EXTRA
trainer = TRAINER(model, TrainingArguments("mnli"), train_dataset=raw_datasets["train"]COLLATOR)
trainer.train()
"""


def _tl101(extra="", trainer="Trainer", collator=""):
    return TL101_BASE.replace("EXTRA", extra).replace("TRAINER", trainer).replace("COLLATOR", collator)


def test_tl101_the_course_form_and_its_silent_variants():
    [f] = lint(_tl101(collator=", data_collator=DataCollatorWithPadding(tokenizer)"), "TL101")
    assert f.message == ('`train_dataset` is the raw dataset `raw_datasets["train"]` although `tokenized_datasets` '
                         "holds its tokenized version: the model gets no `input_ids`")
    assert "You must specify exactly one of input_ids or inputs_embeds" in f.hint
    # the raw examples tokenized on the fly, in place on the dataset the Trainer gets
    set_transform = 'raw_datasets["train"].set_transform(lambda b: tokenizer(b["premise"], b["hypothesis"]))'
    assert codes(_tl101(extra=set_transform), "TL101") == []
    # a subclass that makes its own loaders
    subclass = "class MyTrainer(Trainer):\n    def get_train_dataloader(self):\n        return make_loader(self.train_dataset)"
    assert codes(_tl101(extra=subclass, trainer="MyTrainer"), "TL101") == []
    # a collator built by a helper of the file (it may tokenize)
    assert codes(_tl101(collator=", data_collator=make_collator(tokenizer)"), "TL101") == []


# ---------------------------------------------------------------------------------------------
# TL102 unknown-dataset-column


def test_tl102_a_column_tested_before_it_is_read_is_no_certain_read():
    # unsloth's TTS notebooks: `example['source']` only when the example has it
    src = """
    from datasets import load_dataset
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
    dataset = load_dataset("imdb", split="train")

    def create_input_ids(example):
        text_prompt = f"{example['source']}: {example['text']}" if "source" in example else example["text"]
        example["input_ids"] = tokenizer.encode(text_prompt, add_special_tokens=True)
        return example

    dataset = dataset.map(create_input_ids)
    """
    assert codes(src, "TL102") == []
    [f] = lint(src.replace(' if "source" in example else example["text"]', ""), "TL102")
    assert f.message == "imdb has no column 'source': the `map` function fails with \"KeyError: 'source'\""
    assert f.hint.startswith("its columns: text, label")


# ---------------------------------------------------------------------------------------------
# TL105 unseeded-multiprocess-data: the forms of the first held-out round, each silent for one premise


def test_tl105_a_library_seeding_helper_of_another_package_seeds_every_process():
    # optimum-habana's examples: `set_seed` from `optimum.habana.utils`, then unseeded shuffles (premise 3)
    src = """
    import transformers
    from datasets import load_dataset
    from optimum.habana import GaudiSeq2SeqTrainer, GaudiSeq2SeqTrainingArguments
    from optimum.habana.utils import set_seed
    from transformers.trainer_utils import is_main_process

    def main():
        parser = transformers.HfArgumentParser((GaudiSeq2SeqTrainingArguments,))
        (training_args,) = parser.parse_args_into_dataclasses()
        if is_main_process(training_args.local_rank):
            transformers.utils.logging.set_verbosity_info()
        set_seed(training_args.seed)
        boolq_dataset = load_dataset("super_glue", "boolq")
        train = boolq_dataset["train"].shuffle().select(range(1000))
        trainer = GaudiSeq2SeqTrainer(model=model, args=training_args, train_dataset=train)
        trainer.train()

    if __name__ == "__main__":
        main()
    """
    assert codes(src, "TL105") == []
    [f] = lint(src.replace("        set_seed(training_args.seed)\n", ""), "TL105")
    assert f.message.startswith('`boolq_dataset["train"].shuffle()` without `seed=` uses numpy' + "'s unseeded")
    assert "each orders or picks the data differently" in f.message and "leak" not in f.message


def test_tl105_a_generation_script_trains_nothing():
    # optimum-habana's run_generation.py: several processes shuffle the prompts they generate from (premise 2)
    src = """
    import argparse
    import torch
    from accelerate import Accelerator
    from datasets import load_dataset

    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("--local_rank", type=int, default=0, metavar="N", help="Local process rank.")
        parser.add_argument("--dataset_name", type=str)
        args = parser.parse_args()
        acc = Accelerator()
        with acc.main_process_first():
            raw_dataset = load_dataset(args.dataset_name)
        raw_dataset = raw_dataset["test"].shuffle().select(range(100))
        with torch.no_grad():
            for prompt in raw_dataset:
                model.generate(**tokenizer(prompt["text"], return_tensors="pt"))
LOOP
    if __name__ == "__main__":
        main()
    """
    assert codes(src.replace("LOOP", ""), "TL105") == []
    training = src.replace("LOOP", "            model(**tokenizer(prompt['text'], return_tensors='pt')).loss.backward()\n")
    assert codes(training, "TL105") == ["TL105"]


def test_tl105_a_rank_named_in_a_comment_is_no_multi_process_script():
    src = """
    import random
    import torch

    # launch with: torchrun --nproc_per_node 2 (reads LOCAL_RANK); this version runs on one GPU
    files = load_files()
    random.shuffle(files)
    for batch in make_loader(files):
        model(batch).loss.backward()
        optimizer.step()
    """
    assert codes(src, "TL105") == []
    reads = src.replace("files = load_files()", 'local_rank = int(os.environ["LOCAL_RANK"])\n    files = load_files()')
    assert codes(reads, "TL105") == ["TL105"]


def test_tl105_a_draw_per_example_is_augmentation_not_the_datas_order():
    src = """
    import random
    import torch
    from accelerate import Accelerator
    from torch.utils.data import DataLoader, Dataset

    class Pairs(Dataset):
        def __init__(self, items):
            self.items = items

        def __getitem__(self, i):
            negative = random.sample(self.items, 1)[0]
            return self.items[i], negative

        def __len__(self):
            return len(self.items)

    accelerator = Accelerator()
    loader = accelerator.prepare(DataLoader(Pairs(load_items()), batch_size=8, shuffle=True))
    for anchor, negative in loader:
        accelerator.backward(model(anchor, negative))
        optimizer.step()

    if __name__ == "__main__":
        pass
    """
    assert codes(src, "TL105") == []
    # the same draw made once for the whole data, in `__init__`
    once = src.replace("            negative = random.sample(self.items, 1)[0]\n", "").replace(
        "            self.items = items", "            self.items = random.sample(items, len(items))").replace(
        "return self.items[i], negative", "return self.items[i], self.items[-i]")
    assert codes(once, "TL105") == ["TL105"]


def test_tl102_sft_trainer_that_skips_preparing_the_dataset_reads_no_text_column():
    src = """
    from datasets import load_dataset
    from trl import SFTConfig, SFTTrainer

    dataset = load_dataset("imdb", split="train")
    args = SFTConfig(output_dir="out", dataset_text_field="content", dataset_kwargs={"skip_prepare_dataset": True})
    trainer = SFTTrainer(model="gpt2", args=args, train_dataset=dataset, data_collator=collate)
    trainer.train()
    """
    assert codes(src, "TL102") == []
    assert codes(src.replace(', dataset_kwargs={"skip_prepare_dataset": True}', ""), "TL102") == ["TL102"]


def test_tl201_a_helper_named_like_a_tokenizer_is_read_for_what_it_does():
    # the map function calls the file's own `tokenize_text`, which pads to a fixed length: its body says so
    src = """
    from datasets import load_dataset
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments

    tokenizer = AutoTokenizer.from_pretrained("bert-base-cased")
    raw = load_dataset("imdb")

    def tokenize_text(texts):
        return tokenizer(texts, padding="max_length", max_length=256, truncation=True)

    def preprocess(batch):
        return tokenize_text(batch["text"])

    ds = raw.map(preprocess, batched=True)
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
    trainer = Trainer(model=model, args=TrainingArguments("out"), train_dataset=ds["train"])
    trainer.train()
    """
    assert codes(src, "TL201") == []
    assert codes(src.replace('padding="max_length", max_length=256, ', ""), "TL201") == ["TL201"]


def test_tl202_text_given_to_a_helper_that_tokenizes_is_tokenized_text():
    src = """
    from datasets import load_dataset
    from transformers import AutoTokenizer, DataCollatorWithPadding

    tokenizer = AutoTokenizer.from_pretrained("bert-base-cased")
    raw = load_dataset("csv", data_files="reviews.csv")

    def tokenize_text(texts):
        return tokenizer(texts, truncation=True)

    def preprocess(batch):
        return tokenize_text(batch["review"])

    tokenized = raw.map(preprocess, batched=True)
    data_collator = DataCollatorWithPadding(tokenizer)
    data_collator([tokenized["train"][i] for i in range(2)])
    """
    [f] = lint(src, "TL202")
    assert "'review'" in f.message
    assert codes(src.replace('tokenize_text(batch["review"])', 'encode_numbers(batch["review"])').replace(
        "def tokenize_text(texts):\n        return tokenizer(texts, truncation=True)",
        "def encode_numbers(texts):\n        return {'input_ids': [[len(t)] for t in texts]}"), "TL202") == []
