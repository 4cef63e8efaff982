"""TL3xx: the model — its head and its parameters."""

from __future__ import annotations

import re

import libcst as cst

from trainlint import knowledge
from trainlint.facts import UNKNOWN, DatasetValue, ModelValue, TFDatasetValue, argument, has_star_kwargs, keyword
from trainlint.findings import Severity
from trainlint.rule import Rule, register

#: checkpoints that most likely already carry a fine-tuned classification head of their own
_FINETUNED = re.compile(r"finetuned|fine-tuned|mnli|sst-?2|emotion|sentiment|ner\b|-ner|conll|squad|classif|imdb|xnli", re.I)


def dataset_for_model(ctx, model_call: cst.Call) -> knowledge.DatasetInfo | None:
    """The known hub dataset this model is trained on: through the `Trainer` or Keras `fit` that
    uses it, else the one known dataset the file loads."""
    facts = ctx.facts
    for call in facts.trainer_calls():
        m = facts.value_of(argument(call, "model", 0), call)
        if isinstance(m, ModelValue) and m.call is model_call:
            d = facts.value_of(argument(call, "train_dataset", 3), call)
            if isinstance(d, DatasetValue) and d.info is not None:
                return d.info
    for call in facts.method_calls("fit"):
        m = facts.value_of(call.func.value, call)
        if isinstance(m, ModelValue) and m.call is model_call:
            d = facts.value_of(argument(call, "x", 0), call)
            if isinstance(d, TFDatasetValue) and d.base is not None and d.base.info is not None:
                return d.base.info
    return facts.known_dataset()


@register
class MissingNumLabels(Rule):
    """A classification head loaded with `from_pretrained` without `num_labels` (or with the wrong one)."""

    code = "TL301"
    name = "missing-num-labels"
    severity = Severity.ERROR
    probe = "Reads the whole label column and compares its values with `model.config.num_labels`."
    triggers = ("from_pretrained",)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "from_pretrained"):
            return
        facts = self.ctx.facts
        value = facts.value_of(node)
        if not isinstance(value, ModelValue) or value.head not in ("sequence-classification", "token-classification"):
            return
        if has_star_kwargs(node) or keyword(node, "config") or keyword(node, "id2label"):
            return
        info = dataset_for_model(self.ctx, node)
        if info is not None and not _task_matches(info, value.head):
            info = None
        expected = info.num_labels if info else None
        given_arg = keyword(node, "num_labels")
        finetuned = isinstance(value.checkpoint, str) and bool(_FINETUNED.search(value.checkpoint))
        cls = value.cls
        if given_arg is None:
            if expected is None:
                if finetuned:
                    return
                self.report(
                    func,
                    f"`{cls}.from_pretrained` without `num_labels`: the new head has 2 outputs, and trainlint "
                    "cannot tell how many classes the data has; with more, training fails with "
                    '"IndexError: Target 2 is out of bounds" (a device-side assert on GPU, a NaN loss in Keras) — '
                    "`--probe` checks the label column",
                    hint="pass `num_labels=<number of classes>` (and `id2label`/`label2id` for readable outputs)",
                    severity=Severity.INFO,
                )
                return
            if expected == 2:
                return
            what = "is a regression task (1 output)" if info.task == "regression" else f"has {expected} classes"
            symptom = ('a shape mismatch in the loss' if info.task == "regression"
                       else f'"IndexError: Target {expected - 1} is out of bounds" (a device-side assert on GPU, a NaN loss in Keras)')
            self.report(
                func,
                f"`{cls}.from_pretrained` without `num_labels`: the head gets 2 outputs but {info.display} {what}: "
                f"training fails with {symptom}",
                hint=f"pass `num_labels={expected}`",
                severity=Severity.INFO if finetuned else Severity.ERROR,
            )
            return
        given = facts.constant(given_arg.value, node)
        if expected is None or not isinstance(given, int) or isinstance(given, bool) or given == expected:
            return
        if given < expected:
            self.report(
                given_arg,
                f"`num_labels={given}` but {info.display} has {expected} classes: training fails with "
                f'"IndexError: Target {expected - 1} is out of bounds"',
                hint=f"pass `num_labels={expected}`",
            )
        else:
            self.report(
                given_arg,
                f"`num_labels={given}` but {info.display} has {expected} classes: the extra outputs are never "
                "a target and distort the loss and the metrics",
                hint=f"pass `num_labels={expected}`",
                severity=Severity.WARNING,
            )


def _task_matches(info: knowledge.DatasetInfo, head: str) -> bool:
    if head == "token-classification":
        return info.task == "token-classification"
    return info.task in ("sequence-classification", "regression")


@register
class ParametersWithoutGradient(Rule):
    """(probe) Trainable parameters receive no gradient, or a non-finite one."""

    code = "TL308"
    name = "parameters-without-gradient"
    severity = Severity.WARNING
    probe = "Runs backward on one batch and lists trainable parameters whose gradient is missing or not finite."
