"""Sentence-pair classification with the transformers Trainer, launched on a GPU node with
`torchrun --nproc_per_node=8 trainer_torchrun.py --model_name_or_path ... --train_file ...`, in the
shape of transformers' examples/pytorch/text-classification/run_glue.py (Apache-2.0): a CSV with
premise/hypothesis/label, `fp16=True`, `ddp_find_unused_parameters=False`, the main process logging.
Written for the trainlint tests; the model and the CSV are local (TINY_CKPT, TINY_CSV)."""

import argparse
import os

import numpy as np
from datasets import load_dataset
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    DataCollatorWithPadding,
    Trainer,
    TrainingArguments,
)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_name_or_path", default=os.environ.get("TINY_CKPT"))
    parser.add_argument("--train_file", default=os.environ.get("TINY_CSV"))
    parser.add_argument("--output_dir", default="out/mnli")
    parser.add_argument("--learning_rate", type=float, default=2e-5)
    args = parser.parse_args()

    raw = load_dataset("csv", data_files={"train": args.train_file,
                                          "validation": os.environ.get("TINY_VAL_CSV", args.train_file)})
    label_list = sorted(set(raw["train"]["label"]))
    tokenizer = AutoTokenizer.from_pretrained(args.model_name_or_path)
    model = AutoModelForSequenceClassification.from_pretrained(args.model_name_or_path, num_labels=len(label_list))

    def preprocess(examples):
        return tokenizer(examples["premise"], examples["hypothesis"], truncation=True, max_length=128)

    tokenized = raw.map(preprocess, batched=True, remove_columns=["premise", "hypothesis"])

    def compute_metrics(p):
        preds = np.argmax(p.predictions, axis=1)
        return {"accuracy": float((preds == p.label_ids).mean())}

    training_args = TrainingArguments(
        output_dir=args.output_dir,
        learning_rate=args.learning_rate,
        per_device_train_batch_size=32,
        per_device_eval_batch_size=64,
        num_train_epochs=3,
        eval_strategy="epoch",
        save_strategy="epoch",
        fp16=True,
        ddp_find_unused_parameters=False,
        dataloader_num_workers=0,
        report_to="none",
    )
    trainer = Trainer(
        model=model,
        args=training_args,
        train_dataset=tokenized["train"],
        eval_dataset=tokenized["validation"],
        data_collator=DataCollatorWithPadding(tokenizer),
        processing_class=tokenizer,
        compute_metrics=compute_metrics,
    )
    if training_args.process_index == 0:
        print(f"world size {training_args.world_size}, device {training_args.device}")
    trainer.train()


if __name__ == "__main__":
    main()
