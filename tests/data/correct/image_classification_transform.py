"""Image classification with on-the-fly transforms (`with_transform`): the raw image column must reach
the collator, so `remove_unused_columns=False` and a custom `collate_fn`."""

import evaluate
import numpy as np
import torch
from datasets import load_dataset
from torchvision.transforms import Compose, Normalize, RandomResizedCrop, ToTensor
from transformers import AutoImageProcessor, AutoModelForImageClassification, Trainer, TrainingArguments

checkpoint = "google/vit-base-patch16-224-in21k"
food = load_dataset("food101", split="train").shuffle(seed=42).select(range(5000))
dataset = food.train_test_split(test_size=0.2, seed=42)
labels = dataset["train"].features["label"].names
label2id = {name: str(i) for i, name in enumerate(labels)}
id2label = {str(i): name for i, name in enumerate(labels)}

image_processor = AutoImageProcessor.from_pretrained(checkpoint)
normalize = Normalize(mean=image_processor.image_mean, std=image_processor.image_std)
size = image_processor.size["height"]
transforms = Compose([RandomResizedCrop(size), ToTensor(), normalize])


def apply_transforms(examples):
    examples["pixel_values"] = [transforms(img.convert("RGB")) for img in examples["image"]]
    del examples["image"]
    return examples


dataset = dataset.with_transform(apply_transforms)


def collate_fn(examples):
    return {
        "pixel_values": torch.stack([e["pixel_values"] for e in examples]),
        "labels": torch.tensor([e["label"] for e in examples]),
    }


accuracy = evaluate.load("accuracy")


def compute_metrics(eval_pred):
    predictions, labels_ = eval_pred
    return accuracy.compute(predictions=np.argmax(predictions, axis=1), references=labels_)


model = AutoModelForImageClassification.from_pretrained(
    checkpoint, num_labels=len(labels), id2label=id2label, label2id=label2id
)
training_args = TrainingArguments(
    output_dir="food-vit",
    remove_unused_columns=False,
    eval_strategy="epoch",
    save_strategy="epoch",
    learning_rate=5e-5,
    per_device_train_batch_size=16,
    num_train_epochs=3,
    load_best_model_at_end=True,
    metric_for_best_model="accuracy",
)
trainer = Trainer(
    model=model,
    args=training_args,
    data_collator=collate_fn,
    train_dataset=dataset["train"],
    eval_dataset=dataset["test"],
    processing_class=image_processor,
    compute_metrics=compute_metrics,
)
trainer.train()
