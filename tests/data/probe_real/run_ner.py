"""Finetuning a token classifier (named-entity recognition) with the transformers Trainer.

Our own transcription, for the trainlint probe tests, in the shape of huggingface/transformers
examples/pytorch/token-classification/run_ner.py (Apache-2.0): `HfArgumentParser` over ModelArguments /
DataTrainingArguments / TrainingArguments dataclasses, `load_dataset("json", data_files=...)` with
`tokens` and `ner_tags` columns, the label list from the tags, `AutoConfig(num_labels=...)` with
`label2id`/`id2label`, `tokenize_and_align_labels` (word ids: -100 on special tokens and, unless
`--label_all_tokens`, on the word's later sub-tokens), `DataCollatorForTokenClassification`, a token
accuracy `compute_metrics` (the real script loads seqeval), `trainer.train()`. Shortened (no hub datasets,
no predict, no push); the model and the data are local paths given on the command line:

    python run_ner.py --model_name_or_path CKPT --train_file train.json --validation_file dev.json \
        --do_train --do_eval --output_dir out
"""

import logging
import sys
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
from datasets import load_dataset

import transformers
from transformers import (
    AutoConfig,
    AutoModelForTokenClassification,
    AutoTokenizer,
    DataCollatorForTokenClassification,
    HfArgumentParser,
    Trainer,
    TrainingArguments,
    set_seed,
)

logger = logging.getLogger(__name__)


@dataclass
class ModelArguments:
    model_name_or_path: str = field(metadata={"help": "Path to pretrained model or model identifier."})
    config_name: Optional[str] = field(default=None)
    tokenizer_name: Optional[str] = field(default=None)
    cache_dir: Optional[str] = field(default=None)


@dataclass
class DataTrainingArguments:
    train_file: Optional[str] = field(default=None, metadata={"help": "A csv or a json file with the training data."})
    validation_file: Optional[str] = field(default=None)
    text_column_name: Optional[str] = field(default=None)
    label_column_name: Optional[str] = field(default=None)
    max_seq_length: int = field(default=None)
    pad_to_max_length: bool = field(default=False)
    max_train_samples: Optional[int] = field(default=None)
    label_all_tokens: bool = field(default=False)


def main():
    parser = HfArgumentParser((ModelArguments, DataTrainingArguments, TrainingArguments))
    model_args, data_args, training_args = parser.parse_args_into_dataclasses()
    logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", handlers=[logging.StreamHandler(sys.stdout)])
    transformers.utils.logging.set_verbosity_warning()
    set_seed(training_args.seed)

    data_files = {"train": data_args.train_file}
    if data_args.validation_file is not None:
        data_files["validation"] = data_args.validation_file
    extension = data_args.train_file.split(".")[-1]
    raw_datasets = load_dataset(extension, data_files=data_files, cache_dir=model_args.cache_dir)

    column_names = raw_datasets["train"].column_names
    features = raw_datasets["train"].features
    text_column_name = data_args.text_column_name or ("tokens" if "tokens" in column_names else column_names[0])
    label_column_name = data_args.label_column_name or ("ner_tags" if "ner_tags" in column_names else column_names[1])

    def get_label_list(labels):
        unique_labels = set()
        for label in labels:
            unique_labels = unique_labels | set(label)
        label_list = list(unique_labels)
        label_list.sort()
        return label_list

    label_list = get_label_list(raw_datasets["train"][label_column_name])
    label_to_id = {l: i for i, l in enumerate(label_list)}
    num_labels = len(label_list)

    config = AutoConfig.from_pretrained(
        model_args.config_name if model_args.config_name else model_args.model_name_or_path,
        num_labels=num_labels,
        cache_dir=model_args.cache_dir,
    )
    tokenizer = AutoTokenizer.from_pretrained(
        model_args.tokenizer_name if model_args.tokenizer_name else model_args.model_name_or_path,
        cache_dir=model_args.cache_dir,
    )
    model = AutoModelForTokenClassification.from_pretrained(
        model_args.model_name_or_path,
        config=config,
        cache_dir=model_args.cache_dir,
    )
    model.config.label2id = {l: i for i, l in enumerate(label_list)}
    model.config.id2label = dict(enumerate(label_list))

    padding = "max_length" if data_args.pad_to_max_length else False

    def tokenize_and_align_labels(examples):
        tokenized_inputs = tokenizer(
            examples[text_column_name],
            padding=padding,
            truncation=True,
            max_length=data_args.max_seq_length,
            is_split_into_words=True,
        )
        labels = []
        for i, label in enumerate(examples[label_column_name]):
            word_ids = tokenized_inputs.word_ids(batch_index=i)
            previous_word_idx = None
            label_ids = []
            for word_idx in word_ids:
                if word_idx is None:
                    label_ids.append(-100)
                elif word_idx != previous_word_idx:
                    label_ids.append(label_to_id[label[word_idx]])
                else:
                    label_ids.append(label_to_id[label[word_idx]] if data_args.label_all_tokens else -100)
                previous_word_idx = word_idx
            labels.append(label_ids)
        tokenized_inputs["labels"] = labels
        return tokenized_inputs

    train_dataset = raw_datasets["train"]
    if data_args.max_train_samples is not None:
        train_dataset = train_dataset.select(range(min(len(train_dataset), data_args.max_train_samples)))
    with training_args.main_process_first(desc="train dataset map pre-processing"):
        train_dataset = train_dataset.map(tokenize_and_align_labels, batched=True, remove_columns=column_names)
    eval_dataset = None
    if training_args.do_eval:
        eval_dataset = raw_datasets["validation"].map(tokenize_and_align_labels, batched=True,
                                                      remove_columns=column_names)

    data_collator = DataCollatorForTokenClassification(tokenizer, pad_to_multiple_of=8 if training_args.fp16 else None)

    def compute_metrics(p):
        predictions, labels = p
        predictions = np.argmax(predictions, axis=2)
        keep = labels != -100
        return {"accuracy": float((predictions[keep] == labels[keep]).mean())}

    trainer = Trainer(
        model=model,
        args=training_args,
        train_dataset=train_dataset if training_args.do_train else None,
        eval_dataset=eval_dataset,
        processing_class=tokenizer,
        data_collator=data_collator,
        compute_metrics=compute_metrics,
    )

    if training_args.do_train:
        train_result = trainer.train()
        trainer.save_model()
        trainer.log_metrics("train", train_result.metrics)
    if training_args.do_eval:
        trainer.log_metrics("eval", trainer.evaluate())


if __name__ == "__main__":
    main()
