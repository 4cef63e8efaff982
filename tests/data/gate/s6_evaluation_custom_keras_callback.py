"""TL601 and TL602 through a callback of the project whose name ends in `KerasMetricCallback`: the file
never names transformers, nor a Trainer, nor `compute_metrics`."""
import tensorflow as tf
from my_project.callbacks import MyKerasMetricCallback
from sklearn.metrics import accuracy_score


def metric_fn(eval_predictions):
    logits, labels = eval_predictions
    return {"accuracy": accuracy_score(labels, logits)}  # TL601


def log_only(eval_predictions):
    tf.print(eval_predictions)  # TL602: returns nothing


callbacks = [MyKerasMetricCallback(metric_fn=metric_fn), MyKerasMetricCallback(log_only)]
