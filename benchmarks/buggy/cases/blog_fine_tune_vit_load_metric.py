# /// script
# dependencies = ["datasets>=3", "transformers<5", "torch"]
# ///
# (the environment of the report: datasets 3, which removed load_metric; transformers 4.x)
# The Hugging Face blog post "Fine-Tune ViT for Image Classification with 🤗 Transformers" (ViT on the
# beans dataset with the Trainer): the accuracy metric of compute_metrics is loaded with
# datasets.load_metric, which datasets 3.0 removed (ImportError).
# evidence: huggingface/blog#2743 ("Update fine-tune-vit.md": "load_metric has been removed in
# datasets@3.0.0 replaced it with load from evaluate"; merged, the maintainer: "Thanks for the
# contribution")
import numpy as np
import torch
from datasets import load_dataset, load_metric  # BUG TL801: datasets 3.0 removed load_metric (ImportError)
from transformers import Trainer, TrainingArguments, ViTForImageClassification, ViTImageProcessor

model_name_or_path = "google/vit-base-patch16-224-in21k"
processor = ViTImageProcessor.from_pretrained(model_name_or_path)
ds = load_dataset("beans")


def transform(example_batch):
    inputs = processor([x for x in example_batch["image"]], return_tensors="pt")
    inputs["labels"] = example_batch["labels"]
    return inputs


prepared_ds = ds.with_transform(transform)


def collate_fn(batch):
    return {
        "pixel_values": torch.stack([x["pixel_values"] for x in batch]),
        "labels": torch.tensor([x["labels"] for x in batch]),
    }


metric = load_metric("accuracy")


def compute_metrics(p):
    return metric.compute(predictions=np.argmax(p.predictions, axis=1), references=p.label_ids)


labels = ds["train"].features["labels"].names
model = ViTForImageClassification.from_pretrained(
    model_name_or_path,
    num_labels=len(labels),
    id2label={str(i): c for i, c in enumerate(labels)},
    label2id={c: str(i) for i, c in enumerate(labels)},
)
training_args = TrainingArguments(
    output_dir="./vit-base-beans",
    per_device_train_batch_size=16,
    evaluation_strategy="steps",
    num_train_epochs=4,
    fp16=True,
    save_steps=100,
    eval_steps=100,
    logging_steps=10,
    learning_rate=2e-4,
    save_total_limit=2,
    remove_unused_columns=False,
    push_to_hub=False,
    report_to="tensorboard",
    load_best_model_at_end=True,
)
trainer = Trainer(
    model=model,
    args=training_args,
    data_collator=collate_fn,
    compute_metrics=compute_metrics,
    train_dataset=prepared_ds["train"],
    eval_dataset=prepared_ds["validation"],
    tokenizer=processor,
)
train_results = trainer.train()
trainer.save_model()
metrics = trainer.evaluate(prepared_ds["validation"])
