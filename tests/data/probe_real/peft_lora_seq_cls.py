"""Finetuning a sequence classifier with LoRA adapters (peft) in a hand-written loop.

Our own transcription, for the trainlint probe tests, in the shape of huggingface/peft
examples/sequence_classification/LoRA.ipynb (Apache-2.0): `LoraConfig(task_type="SEQ_CLS", ...)`,
`get_peft_model` and `print_trainable_parameters`, a tokenizer `collate_fn` that pads, `AdamW` over the
model's parameters with `get_linear_schedule_with_warmup`, the loop `outputs = model(**batch)`,
`loss.backward()`, `optimizer.step()`, `lr_scheduler.step()`, `optimizer.zero_grad()`, then an accuracy
evaluation. Shortened (no evaluate metric from the hub); GLUE/MRPC is replaced by a local MNLI-like CSV,
the checkpoint by a local path, as a user runs it:

    python peft_lora_seq_cls.py CKPT train.csv
"""

import sys

import torch
from datasets import load_dataset
from peft import LoraConfig, get_peft_model
from torch.optim import AdamW
from torch.utils.data import DataLoader
from tqdm import tqdm
from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup

batch_size = 16
model_name_or_path = sys.argv[1]
data_file = sys.argv[2]
validation_file = sys.argv[3] if len(sys.argv) > 3 else data_file
device = "cuda" if torch.cuda.is_available() else "cpu"
num_epochs = 3
lr = 3e-4

peft_config = LoraConfig(task_type="SEQ_CLS", inference_mode=False, r=8, lora_alpha=16, lora_dropout=0.1)

tokenizer = AutoTokenizer.from_pretrained(model_name_or_path, padding_side="right")
if getattr(tokenizer, "pad_token_id") is None:
    tokenizer.pad_token_id = tokenizer.eos_token_id

datasets = load_dataset("csv", data_files={"train": data_file, "validation": validation_file})


def tokenize_function(examples):
    return tokenizer(examples["premise"], examples["hypothesis"], truncation=True, max_length=None)


tokenized_datasets = datasets.map(tokenize_function, batched=True, remove_columns=["premise", "hypothesis"])
tokenized_datasets = tokenized_datasets.rename_column("label", "labels")


def collate_fn(examples):
    return tokenizer.pad(examples, padding="longest", return_tensors="pt")


train_dataloader = DataLoader(tokenized_datasets["train"], shuffle=True, collate_fn=collate_fn, batch_size=batch_size)
eval_dataloader = DataLoader(tokenized_datasets["validation"], shuffle=False, collate_fn=collate_fn,
                             batch_size=batch_size)

model = AutoModelForSequenceClassification.from_pretrained(model_name_or_path, num_labels=3, return_dict=True)
model = get_peft_model(model, peft_config)
model.print_trainable_parameters()

optimizer = AdamW(params=model.parameters(), lr=lr)

lr_scheduler = get_linear_schedule_with_warmup(
    optimizer=optimizer,
    num_warmup_steps=0.06 * (len(train_dataloader) * num_epochs),
    num_training_steps=(len(train_dataloader) * num_epochs),
)

model.to(device)
for epoch in range(num_epochs):
    model.train()
    for step, batch in enumerate(tqdm(train_dataloader)):
        batch.to(device)
        outputs = model(**batch)
        loss = outputs.loss
        loss.backward()
        optimizer.step()
        lr_scheduler.step()
        optimizer.zero_grad()

    model.eval()
    correct = total = 0
    for step, batch in enumerate(tqdm(eval_dataloader)):
        batch.to(device)
        with torch.no_grad():
            outputs = model(**batch)
        predictions = outputs.logits.argmax(dim=-1)
        correct += (predictions == batch["labels"]).sum().item()
        total += len(predictions)
    print(f"epoch {epoch}: accuracy {correct / total:.3f}")
