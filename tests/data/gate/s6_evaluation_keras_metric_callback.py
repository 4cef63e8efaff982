"""TL601 and TL602 through `KerasMetricCallback` (aliased; `metric_fn` given by position)."""
import evaluate
from transformers.keras_callbacks import KerasMetricCallback as MetricCallback

metric = evaluate.load("accuracy")
tf_eval = None


def metric_fn(eval_predictions):
    predictions, labels = eval_predictions
    return metric.compute(predictions=predictions, references=labels)  # TL601


def silent_fn(eval_predictions):
    print(eval_predictions)  # TL602: returns nothing


callbacks = [MetricCallback(metric_fn, eval_dataset=tf_eval), MetricCallback(silent_fn, eval_dataset=tf_eval)]
