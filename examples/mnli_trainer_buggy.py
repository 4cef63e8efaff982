"""Fine-tune a BERT-style model on MNLI with the Trainer — with the bugs of the course chapter
"Debugging the training pipeline" (PyTorch). `trainlint examples/` finds each of them."""

import evaluate
from datasets import load_dataset
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
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
    # bug: MNLI has 3 classes, the new head gets the default 2
    model = AutoModelForSequenceClassification.from_pretrained(CHECKPOINT)

    args = TrainingArguments(
        "mnli-distilbert",
        evaluation_strategy="epoch",  # bug: gone since transformers 4.51
        save_strategy="epoch",
        learning_rate=2e-5,
        num_train_epochs=3,
        weight_decay=0.01,
    )
    accuracy = evaluate.load("glue", "mnli")

    def compute_metrics(eval_pred):
        logits, labels = eval_pred
        # bug: logits, not class ids
        return accuracy.compute(predictions=logits, references=labels)

    # bugs: raw (text) datasets, and no tokenizer/collator to pad the batches
    trainer = Trainer(
        model,
        args,
        train_dataset=raw_datasets["train"],
        eval_dataset=raw_datasets["validation_matched"],
        compute_metrics=compute_metrics,
    )
    trainer.train()


if __name__ == "__main__":
    main()
