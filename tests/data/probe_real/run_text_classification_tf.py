"""Fine-tuning a TensorFlow transformers model for text classification with Keras `fit`.

Our own transcription, for the trainlint probe tests, in the shape of huggingface/transformers (4.x)
examples/tensorflow/text-classification/run_text_classification.py (Apache-2.0; read at commit
01080c629600d4ff3121446bb4f4a2e240c2cf41): `HfArgumentParser` over ModelArguments /
DataTrainingArguments / `TFTrainingArguments`, `load_dataset("csv", data_files=...)`, the label list
from `unique("label")`, `AutoConfig(num_labels=...)` with `label2id`/`id2label` written to the config,
a batched `map`, `TFAutoModelForSequenceClassification` under `training_args.strategy.scope()`,
`model.prepare_tf_dataset`, `create_optimizer`, `model.compile(optimizer=..., metrics=["accuracy"])`
with the model's internal loss, `model.fit`. Shortened (no predict, no push). Run as the real script
(TensorFlow and transformers<5):

    python run_text_classification_tf.py --model_name_or_path CKPT --tokenizer_name TOK \
        --train_file train.csv --validation_file dev.csv --do_train --do_eval --output_dir out
"""

import json
import logging
import os
import sys
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
from datasets import load_dataset

from transformers import (
    AutoConfig,
    AutoTokenizer,
    HfArgumentParser,
    PretrainedConfig,
    TFAutoModelForSequenceClassification,
    TFTrainingArguments,
    create_optimizer,
    set_seed,
)

os.environ["TF_CPP_MIN_LOG_LEVEL"] = "1"  # Reduce the amount of console output from TF
import tensorflow as tf  # noqa: E402

logger = logging.getLogger(__name__)


@dataclass
class DataTrainingArguments:
    train_file: Optional[str] = field(default=None, metadata={"help": "A csv or a json file containing the training data."})
    validation_file: Optional[str] = field(default=None, metadata={"help": "A csv or a json file (validation data)."})
    max_seq_length: int = field(default=128)
    overwrite_cache: bool = field(default=False)
    max_train_samples: Optional[int] = field(default=None)
    max_val_samples: Optional[int] = field(default=None)

    def __post_init__(self):
        train_extension = self.train_file.split(".")[-1].lower() if self.train_file is not None else None
        validation_extension = self.validation_file.split(".")[-1].lower() if self.validation_file is not None else None
        extensions = {train_extension, validation_extension}
        extensions.discard(None)
        assert len(extensions) != 0, "Need to supply at least one of --train_file or --validation_file!"
        assert len(extensions) == 1, "All input files should have the same file extension, either csv or json!"
        assert "csv" in extensions or "json" in extensions, "Input files should have either .csv or .json extensions!"
        self.input_file_extension = extensions.pop()


@dataclass
class ModelArguments:
    model_name_or_path: str = field(metadata={"help": "Path to pretrained model or model identifier"})
    config_name: Optional[str] = field(default=None)
    tokenizer_name: Optional[str] = field(default=None)
    cache_dir: Optional[str] = field(default=None)


def main():
    parser = HfArgumentParser((ModelArguments, DataTrainingArguments, TFTrainingArguments))
    if len(sys.argv) == 2 and sys.argv[1].endswith(".json"):
        model_args, data_args, training_args = parser.parse_json_file(json_file=os.path.abspath(sys.argv[1]))
    else:
        model_args, data_args, training_args = parser.parse_args_into_dataclasses()

    output_dir = training_args.output_dir
    if output_dir is not None and not training_args.overwrite_output_dir and os.path.isdir(output_dir) and os.listdir(output_dir):
        raise ValueError(f"Output directory ({output_dir}) already exists and is not empty.")

    logging.basicConfig(
        format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
        datefmt="%m/%d/%Y %H:%M:%S",
        handlers=[logging.StreamHandler(sys.stdout)],
    )
    logger.setLevel(logging.INFO)
    logger.info(f"Training/evaluation parameters {training_args}")

    data_files = {"train": data_args.train_file, "validation": data_args.validation_file}
    data_files = {key: file for key, file in data_files.items() if file is not None}
    if data_args.input_file_extension == "csv":
        datasets = load_dataset("csv", data_files=data_files, cache_dir=model_args.cache_dir)
    else:
        datasets = load_dataset("json", data_files=data_files, cache_dir=model_args.cache_dir)

    is_regression = datasets["train"].features["label"].dtype in ["float32", "float64"]
    if is_regression:
        num_labels = 1
    else:
        label_list = datasets["train"].unique("label")
        label_list.sort()  # Let's sort it for determinism
        num_labels = len(label_list)

    config_path = model_args.config_name if model_args.config_name else model_args.model_name_or_path
    config = AutoConfig.from_pretrained(config_path, num_labels=num_labels, cache_dir=model_args.cache_dir)
    tokenizer = AutoTokenizer.from_pretrained(
        model_args.tokenizer_name if model_args.tokenizer_name else model_args.model_name_or_path,
        cache_dir=model_args.cache_dir,
    )

    column_names = {col for cols in datasets.column_names.values() for col in cols}
    non_label_column_names = sorted(name for name in column_names if name != "label")
    if "sentence1" in non_label_column_names and "sentence2" in non_label_column_names:
        sentence1_key, sentence2_key = "sentence1", "sentence2"
    elif len(non_label_column_names) >= 2:
        sentence1_key, sentence2_key = "premise", "hypothesis"
    else:
        sentence1_key, sentence2_key = non_label_column_names[0], None
    max_seq_length = min(data_args.max_seq_length, tokenizer.model_max_length)

    if not is_regression and config.label2id != PretrainedConfig(num_labels=num_labels).label2id:
        label_name_to_id = config.label2id
        if sorted(label_name_to_id.keys()) == sorted(label_list):
            label_to_id = label_name_to_id  # Use the model's labels
        else:
            label_to_id = {v: i for i, v in enumerate(label_list)}
    elif not is_regression:
        label_to_id = {v: i for i, v in enumerate(label_list)}
    else:
        label_to_id = None
    config.label2id = label_to_id
    if config.label2id is not None:
        config.id2label = {id: label for label, id in label_to_id.items()}
    else:
        config.id2label = None

    def preprocess_function(examples):
        args = (examples[sentence1_key],) if sentence2_key is None else (examples[sentence1_key], examples[sentence2_key])
        result = tokenizer(*args, max_length=max_seq_length, truncation=True)
        if config.label2id is not None and "label" in examples:
            result["label"] = [(config.label2id[l] if l != -1 else -1) for l in examples["label"]]
        return result

    datasets = datasets.map(preprocess_function, batched=True, load_from_cache_file=not data_args.overwrite_cache)

    with training_args.strategy.scope():
        set_seed(training_args.seed)
        model = TFAutoModelForSequenceClassification.from_pretrained(
            model_args.model_name_or_path, config=config, cache_dir=model_args.cache_dir
        )

        dataset_options = tf.data.Options()
        dataset_options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
        num_replicas = training_args.strategy.num_replicas_in_sync

        tf_data = {}
        max_samples = {"train": data_args.max_train_samples, "validation": data_args.max_val_samples}
        for key in ("train", "validation"):
            if key not in datasets or (key == "train" and not training_args.do_train) or (
                key == "validation" and not training_args.do_eval
            ):
                tf_data[key] = None
                continue
            assert "label" in datasets[key].features, f"Missing labels from {key} data!"
            if key == "train":
                shuffle = True
                batch_size = training_args.per_device_train_batch_size * num_replicas
            else:
                shuffle = False
                batch_size = training_args.per_device_eval_batch_size * num_replicas
            dataset = datasets[key]
            if max_samples[key] is not None:
                dataset = dataset.select(range(max_samples[key]))
            data = model.prepare_tf_dataset(dataset, shuffle=shuffle, batch_size=batch_size, tokenizer=tokenizer)
            data = data.with_options(dataset_options)
            tf_data[key] = data

        if training_args.do_train:
            num_train_steps = len(tf_data["train"]) * training_args.num_train_epochs
            if training_args.warmup_steps > 0:
                num_warmup_steps = training_args.warmup_steps
            elif training_args.warmup_ratio > 0:
                num_warmup_steps = int(num_train_steps * training_args.warmup_ratio)
            else:
                num_warmup_steps = 0
            optimizer, schedule = create_optimizer(
                init_lr=training_args.learning_rate,
                num_train_steps=num_train_steps,
                num_warmup_steps=num_warmup_steps,
                adam_beta1=training_args.adam_beta1,
                adam_beta2=training_args.adam_beta2,
                adam_epsilon=training_args.adam_epsilon,
                weight_decay_rate=training_args.weight_decay,
                adam_global_clipnorm=training_args.max_grad_norm,
            )
        else:
            optimizer = "sgd"  # Just use any default
        metrics = [] if is_regression else ["accuracy"]
        # Transformers models compute the right loss for their task by default when labels are passed, and will
        # use this for training unless you specify your own loss function in compile().
        model.compile(optimizer=optimizer, metrics=metrics)

        if tf_data["train"] is not None:
            model.fit(
                tf_data["train"],
                validation_data=tf_data["validation"],
                epochs=int(training_args.num_train_epochs),
                callbacks=[],
            )
        if tf_data["validation"] is not None:
            loss, accuracy = model.evaluate(tf_data["validation"])
            logger.info(f"Eval loss: {loss:.5f}, Eval accuracy: {accuracy * 100:.4f}%")
            if output_dir is not None:
                os.makedirs(output_dir, exist_ok=True)
                with open(os.path.join(output_dir, "all_results.json"), "w") as writer:
                    writer.write(json.dumps({"eval_loss": loss, "eval_accuracy": accuracy}))


if __name__ == "__main__":
    main()
