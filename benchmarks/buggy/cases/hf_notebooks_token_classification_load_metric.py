# /// script
# dependencies = ["datasets", "transformers", "seqeval"]
# ///
# (the environment of the reports: the notebook's `pip install datasets transformers seqeval`, which in 2025
# resolves datasets 3 and a transformers without `evaluation_strategy`)
# Hugging Face's token classification example notebook (examples/token_classification.ipynb), cell by cell:
# CoNLL-2003 NER with DistilBERT and the Trainer; the seqeval metric is loaded with datasets' load_metric.
# `TrainingArguments` still says `evaluation_strategy`.
# evidence: huggingface/notebooks#568 ("ImportError: cannot import name 'load_metric' from 'datasets'":
# load_metric was removed, replaced by evaluate.load; merged, commit 97438753517513121bec3ecd816cee5ea6355335)
# and huggingface/notebooks#570 ("update `evaluation_strategy` to `eval_strategy` in all examples"; merged,
# commit 816be06)
task = "ner"
model_checkpoint = "distilbert-base-uncased"
batch_size = 16

from datasets import load_dataset, load_metric  # BUG TL801: load_metric was removed from datasets (3.0): ImportError

datasets = load_dataset("conll2003")
label_list = datasets["train"].features[f"{task}_tags"].feature.names

from transformers import AutoTokenizer

tokenizer = AutoTokenizer.from_pretrained(model_checkpoint)
label_all_tokens = True


def tokenize_and_align_labels(examples):
    tokenized_inputs = tokenizer(examples["tokens"], truncation=True, is_split_into_words=True)
    labels = []
    for i, label in enumerate(examples[f"{task}_tags"]):
        word_ids = tokenized_inputs.word_ids(batch_index=i)
        previous_word_idx = None
        label_ids = []
        for word_idx in word_ids:
            if word_idx is None:
                label_ids.append(-100)
            elif word_idx != previous_word_idx:
                label_ids.append(label[word_idx])
            else:
                label_ids.append(label[word_idx] if label_all_tokens else -100)
            previous_word_idx = word_idx
        labels.append(label_ids)
    tokenized_inputs["labels"] = labels
    return tokenized_inputs


tokenized_datasets = datasets.map(tokenize_and_align_labels, batched=True)

from transformers import AutoModelForTokenClassification, TrainingArguments, Trainer

model = AutoModelForTokenClassification.from_pretrained(model_checkpoint, num_labels=len(label_list))

model_name = model_checkpoint.split("/")[-1]
args = TrainingArguments(
    f"{model_name}-finetuned-{task}",
    evaluation_strategy = "epoch",  # BUG TL805: removed argument (eval_strategy): TypeError
    learning_rate=2e-5,
    per_device_train_batch_size=batch_size,
    per_device_eval_batch_size=batch_size,
    num_train_epochs=3,
    weight_decay=0.01,
    push_to_hub=True,
)

from transformers import DataCollatorForTokenClassification

data_collator = DataCollatorForTokenClassification(tokenizer)

metric = load_metric("seqeval")

import numpy as np


def compute_metrics(p):
    predictions, labels = p
    predictions = np.argmax(predictions, axis=2)
    true_predictions = [[label_list[p] for (p, l) in zip(prediction, label) if l != -100]
                        for prediction, label in zip(predictions, labels)]
    true_labels = [[label_list[l] for (p, l) in zip(prediction, label) if l != -100]
                   for prediction, label in zip(predictions, labels)]
    results = metric.compute(predictions=true_predictions, references=true_labels)
    return {"precision": results["overall_precision"], "recall": results["overall_recall"],
            "f1": results["overall_f1"], "accuracy": results["overall_accuracy"]}


trainer = Trainer(
    model,
    args,
    train_dataset=tokenized_datasets["train"],
    eval_dataset=tokenized_datasets["validation"],
    data_collator=data_collator,
    tokenizer=tokenizer,
    compute_metrics=compute_metrics
)
trainer.train()
