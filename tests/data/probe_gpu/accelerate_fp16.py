"""Sentence-pair classification with Accelerate in float16 mixed precision, launched with
`accelerate launch --multi_gpu --mixed_precision fp16 accelerate_fp16.py`, in the shape of
accelerate's examples/nlp_example.py (Apache-2.0): `Accelerator(mixed_precision="fp16")`,
`accelerator.prepare`, `accelerator.backward`, a linear warmup schedule, `gather_for_metrics` in the
evaluation. Written for the trainlint tests; the model and the CSV are local (TINY_CKPT, TINY_CSV)."""

import argparse
import os

import torch
from accelerate import Accelerator
from datasets import load_dataset
from torch.optim import AdamW
from torch.utils.data import DataLoader
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    DataCollatorWithPadding,
    get_linear_schedule_with_warmup,
    set_seed,
)


def get_dataloaders(accelerator, tokenizer, batch_size=16):
    datasets = load_dataset("csv", data_files={"train": os.environ["TINY_CSV"], "validation": os.environ["TINY_VAL_CSV"]})

    def tokenize_function(examples):
        return tokenizer(examples["premise"], examples["hypothesis"], truncation=True, max_length=None)

    with accelerator.main_process_first():
        tokenized = datasets.map(tokenize_function, batched=True, remove_columns=["premise", "hypothesis"])
    tokenized = tokenized.rename_column("label", "labels")
    collator = DataCollatorWithPadding(tokenizer, pad_to_multiple_of=8)
    train_dataloader = DataLoader(tokenized["train"], shuffle=True, collate_fn=collator, batch_size=batch_size)
    eval_dataloader = DataLoader(tokenized["validation"], shuffle=False, collate_fn=collator, batch_size=32)
    return train_dataloader, eval_dataloader


def training_function(config, args):
    accelerator = Accelerator(cpu=args.cpu, mixed_precision=args.mixed_precision)
    lr, num_epochs, seed = config["lr"], int(config["num_epochs"]), int(config["seed"])
    tokenizer = AutoTokenizer.from_pretrained(os.environ["TINY_CKPT"])
    train_dataloader, eval_dataloader = get_dataloaders(accelerator, tokenizer, int(config["batch_size"]))
    set_seed(seed)
    model = AutoModelForSequenceClassification.from_pretrained(os.environ["TINY_CKPT"], num_labels=3)
    model = model.to(accelerator.device)
    optimizer = AdamW(params=model.parameters(), lr=lr)
    lr_scheduler = get_linear_schedule_with_warmup(
        optimizer=optimizer, num_warmup_steps=10, num_training_steps=len(train_dataloader) * num_epochs
    )
    model, optimizer, train_dataloader, eval_dataloader, lr_scheduler = accelerator.prepare(
        model, optimizer, train_dataloader, eval_dataloader, lr_scheduler
    )
    for epoch in range(num_epochs):
        model.train()
        for step, batch in enumerate(train_dataloader):
            outputs = model(**batch)
            loss = outputs.loss
            accelerator.backward(loss)
            optimizer.step()
            lr_scheduler.step()
            optimizer.zero_grad()
        model.eval()
        correct = total = 0
        for step, batch in enumerate(eval_dataloader):
            with torch.no_grad():
                outputs = model(**batch)
            predictions = outputs.logits.argmax(dim=-1)
            predictions, references = accelerator.gather_for_metrics((predictions, batch["labels"]))
            correct += int((predictions == references).sum())
            total += len(references)
        accelerator.print(f"epoch {epoch}: accuracy {correct / total:.3f}")


def main():
    parser = argparse.ArgumentParser(description="Simple example of training script.")
    parser.add_argument("--mixed_precision", type=str, default="fp16", choices=["no", "fp16", "bf16", "fp8"])
    parser.add_argument("--cpu", action="store_true", help="If passed, will train on the CPU.")
    args = parser.parse_args()
    config = {"lr": 2e-5, "num_epochs": 3, "seed": 42, "batch_size": 16}
    training_function(config, args)


if __name__ == "__main__":
    main()
