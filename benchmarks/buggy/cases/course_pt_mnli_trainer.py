# The Hugging Face course's own broken script, chapter 8 section 4 (PyTorch), "Debugging the training
# pipeline" (chapters/en/chapter8/4.mdx in huggingface/course): fine-tuning DistilBERT on GLUE MNLI
# with the Trainer. Each bug is one the chapter finds and fixes in turn.
# evidence: huggingface/course chapters/en/chapter8/4.mdx (the course's deliberately broken script)
from datasets import load_dataset
import evaluate
from transformers import (
    AutoTokenizer,
    AutoModelForSequenceClassification,
    TrainingArguments,
    Trainer,
)

raw_datasets = load_dataset("glue", "mnli")

model_checkpoint = "distilbert-base-uncased"
tokenizer = AutoTokenizer.from_pretrained(model_checkpoint)


def preprocess_function(examples):
    return tokenizer(examples["premise"], examples["hypothesis"], truncation=True)


tokenized_datasets = raw_datasets.map(preprocess_function, batched=True)
model = AutoModelForSequenceClassification.from_pretrained(model_checkpoint)  # BUG TL301: MNLI has 3 classes, the head has 2 (the chapter's CUDA assert / Target 2 out of bounds)

args = TrainingArguments(
    f"distilbert-finetuned-mnli",
    evaluation_strategy="epoch",
    save_strategy="epoch",
    learning_rate=2e-5,
    num_train_epochs=3,
    weight_decay=0.01,
)

metric = evaluate.load("glue", "mnli")


def compute_metrics(eval_pred):
    predictions, labels = eval_pred
    return metric.compute(predictions=predictions, references=labels)  # BUG TL601: logits passed as predictions, no argmax


trainer = Trainer(  # BUG TL201: no tokenizer and no collator, so the default collator cannot pad the unpadded input_ids
    model,
    args,
    train_dataset=raw_datasets["train"],  # BUG TL101: the raw (untokenized) dataset is passed, not tokenized_datasets
    eval_dataset=raw_datasets["validation_matched"],
    compute_metrics=compute_metrics,
)
trainer.train()
