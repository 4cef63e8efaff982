"""Fine-tune a BERT-style model on MNLI with the Trainer: the course script with every bug fixed."""

import evaluate
import numpy as np
from datasets import load_dataset
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    DataCollatorWithPadding,
    Trainer,
    TrainingArguments,
)

CHECKPOINT = "distilbert-base-uncased"


def main():
    raw_datasets = load_dataset("glue", "mnli")
    tokenizer = AutoTokenizer.from_pretrained(CHECKPOINT)

    def tokenize(batch):
        return tokenizer(batch["premise"], batch["hypothesis"], truncation=True)

    tokenized = raw_datasets.map(tokenize, batched=True)
    model = AutoModelForSequenceClassification.from_pretrained(CHECKPOINT, num_labels=3)

    args = TrainingArguments(
        "mnli-distilbert",
        eval_strategy="epoch",
        save_strategy="epoch",
        learning_rate=2e-5,
        num_train_epochs=3,
        weight_decay=0.01,
    )
    accuracy = evaluate.load("glue", "mnli")

    def compute_metrics(eval_pred):
        logits, labels = eval_pred
        predictions = np.argmax(logits, axis=-1)
        return accuracy.compute(predictions=predictions, references=labels)

    trainer = Trainer(
        model,
        args,
        train_dataset=tokenized["train"],
        eval_dataset=tokenized["validation_matched"],
        data_collator=DataCollatorWithPadding(tokenizer),
        processing_class=tokenizer,
        compute_metrics=compute_metrics,
    )
    trainer.train()


if __name__ == "__main__":
    main()
