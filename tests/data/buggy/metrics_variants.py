"""compute_metrics functions that hand logits to the metric, written in several styles."""

import evaluate
from datasets import load_dataset
from sklearn.metrics import accuracy_score, f1_score
from transformers import (
    AutoModelForSequenceClassification,
    AutoTokenizer,
    DataCollatorWithPadding,
    EvalPrediction,
    Seq2SeqTrainer,
    Trainer,
    TrainingArguments,
)

glue_metric = evaluate.load("glue", "mrpc")
raw = load_dataset("glue", "mrpc")
tokenizer = AutoTokenizer.from_pretrained("bert-base-cased")
data = raw.map(lambda b: tokenizer(b["sentence1"], b["sentence2"], truncation=True), batched=True)
model = AutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
collator = DataCollatorWithPadding(tokenizer)


def metrics_tuple_outputs(p: EvalPrediction):
    preds = p.predictions[0] if isinstance(p.predictions, tuple) else p.predictions
    return glue_metric.compute(predictions=preds, references=p.label_ids)


def metrics_sklearn(pred):
    logits = pred[0]
    labels = pred[1]
    return {"accuracy": accuracy_score(labels, logits), "f1": f1_score(labels, logits)}


def metrics_attribute(eval_pred):
    return glue_metric.compute(predictions=eval_pred.predictions, references=eval_pred.label_ids)


args = TrainingArguments("mrpc", eval_strategy="epoch")
common = dict(model=model, args=args, train_dataset=data["train"], eval_dataset=data["validation"],
              data_collator=collator)
Trainer(compute_metrics=metrics_tuple_outputs, **common)
Trainer(compute_metrics=metrics_sklearn, **common)
Seq2SeqTrainer(compute_metrics=metrics_attribute, **common)
