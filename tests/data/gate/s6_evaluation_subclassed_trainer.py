"""TL601, TL602, TL603, TL605, TL606 on a subclass of `Seq2SeqTrainer` with `import transformers as tr`
and aliased classes, sklearn metrics by attribute, a strategy given by enum."""
import transformers as tr
from sklearn import metrics as skm
from transformers import IntervalStrategy

model = tr.AutoModelForSeq2SeqLM.from_pretrained("t5-small")


class MyTrainer(tr.Seq2SeqTrainer):
    pass


def compute_metrics(p):
    return {"f1": skm.f1_score(p.label_ids, p.predictions[0], average="macro")}  # TL601


def no_return_metrics(p):
    print(p)  # TL602


def preprocess(logits, labels):
    if isinstance(logits, tuple):
        return logits[0]  # TL603: None on the other path


args = tr.Seq2SeqTrainingArguments(
    "out",
    load_best_model_at_end=True,
    eval_strategy=IntervalStrategy.EPOCH,
    save_strategy="steps",  # TL605
    metric_for_best_model="accuracy",  # TL606: compute_metrics returns "f1"
)
trainer = MyTrainer(model=model, args=args, compute_metrics=compute_metrics)
other = MyTrainer(model=model, args=tr.Seq2SeqTrainingArguments("o2"), compute_metrics=no_return_metrics,
                  preprocess_logits_for_metrics=preprocess)
