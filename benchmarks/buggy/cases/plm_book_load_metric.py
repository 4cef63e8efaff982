# A chapter-7 fine-tuning script of a pre-trained-language-model textbook (BERT on a GLUE task with
# the Trainer), importing load_metric from datasets.
# evidence: HIT-SCIR/plm-nlp-code#19 (chapter 7: from datasets import load_dataset, load_metric)
import numpy as np
from datasets import load_dataset, load_metric  # BUG TL801: load_metric was removed from datasets
from transformers import BertForSequenceClassification, BertTokenizerFast, Trainer, TrainingArguments

dataset = load_dataset("glue", "rte")
tokenizer = BertTokenizerFast.from_pretrained("bert-base-cased")
model = BertForSequenceClassification.from_pretrained("bert-base-cased", return_dict=True)
metric = load_metric("glue", "rte")


def tokenize(examples):
    return tokenizer(examples["sentence1"], examples["sentence2"], truncation=True, padding="max_length")


dataset = dataset.map(tokenize, batched=True)
encoded_dataset = dataset.map(lambda examples: {"labels": examples["label"]}, batched=True)
columns = ["input_ids", "token_type_ids", "attention_mask", "labels"]
encoded_dataset.set_format(type="torch", columns=columns)


def compute_metrics(eval_pred):
    predictions, labels = eval_pred
    return metric.compute(predictions=np.argmax(predictions, axis=1), references=labels)


args = TrainingArguments(
    "ft-rte",
    learning_rate=2e-5,
    per_device_train_batch_size=32,
    per_device_eval_batch_size=32,
    num_train_epochs=2,
)
trainer = Trainer(
    model,
    args,
    train_dataset=encoded_dataset["train"],
    eval_dataset=encoded_dataset["validation"],
    tokenizer=tokenizer,
    compute_metrics=compute_metrics,
)
trainer.train()
