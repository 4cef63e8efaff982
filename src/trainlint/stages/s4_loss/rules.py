"""TL4xx: loss and labels — where the labels travel and what the loss expects."""

from __future__ import annotations

import libcst as cst

from trainlint.facts import ModelValue, TFDatasetValue, argument, keyword, literal
from trainlint import codemod
from trainlint.findings import Applicability, Severity
from trainlint.rule import Rule, register

LABEL_NAMES = frozenset({"label", "labels", "start_positions", "end_positions"})
#: Keras losses that expect probabilities unless `from_logits=True`
PROBABILITY_LOSSES = {
    "sparse_categorical_crossentropy": "SparseCategoricalCrossentropy",
    "categorical_crossentropy": "CategoricalCrossentropy",
    "binary_crossentropy": "BinaryCrossentropy",
}
_LOSS_CLASSES = {v: k for k, v in PROBABILITY_LOSSES.items()}


def compiled_model(ctx, call: cst.Call) -> ModelValue | None:
    """The model of a `model.compile(...)`/`model.fit(...)` call, if trainlint knows it."""
    if not isinstance(call.func, cst.Attribute):
        return None
    v = ctx.facts.value_of(call.func.value, call)
    return v if isinstance(v, ModelValue) else None


def fit_datasets(ctx, model: ModelValue):
    """The `tf.data` datasets given to `fit` on this model."""
    for call in ctx.facts.method_calls("fit"):
        m = compiled_model(ctx, call)
        if m is not None and m.call is model.call:
            d = ctx.facts.value_of(argument(call, "x", 0), call)
            if isinstance(d, TFDatasetValue):
                yield d


@register
class KerasLossWithLabelsInFeatures(Rule):
    """`compile(loss=...)` while the labels travel inside the feature dict."""

    code = "TL401"
    name = "keras-loss-with-labels-in-features"
    severity = Severity.ERROR
    probe = ("Takes one batch from the dataset given to `fit`: labels inside the feature dict and no "
             "separate target, with a compiled Keras loss, confirm it.")
    triggers = ("compile",)

    def visit_Call(self, node: cst.Call) -> None:
        if not (isinstance(node.func, cst.Attribute) and node.func.attr.value == "compile"):
            return
        loss = argument(node, "loss", 1)
        if loss is None or literal(loss) is None:
            return
        model = compiled_model(self.ctx, node)
        if model is None:
            return
        for ds in fit_datasets(self.ctx, model):
            if ds.prepared or ds.label_cols is not None or not isinstance(ds.columns, list):
                continue
            labels = [c for c in ds.columns if c in LABEL_NAMES]
            if not labels:
                continue
            if model.transformers:
                symptom = ("a transformers model moves the labels out of the inputs and runs this Keras loss on its "
                           "logits: training runs but learns badly")
            else:
                symptom = 'Keras gets no target: "No gradients provided for any variable" / "Target data is missing"'
            self.report(
                loss,
                f"`compile(loss=...)` but the labels travel inside the feature dict (`columns={ds.columns!r}`, no "
                f"`label_cols`): {symptom}",
                hint="either drop `loss=` to use the model's internal loss, or move the labels out: "
                f"`to_tf_dataset(columns=[...], label_cols={labels[0]!r})`",
            )
            return


@register
class LossExpectsProbabilities(Rule):
    """A cross-entropy loss without `from_logits=True` on a transformers model, whose outputs are logits."""

    code = "TL402"
    name = "loss-expects-probabilities"
    severity = Severity.ERROR
    probe = "Compares the compiled loss on one batch with the same loss computed `from_logits=True`."
    triggers = ("compile",)
    fix = Applicability.SAFE

    def visit_Call(self, node: cst.Call) -> None:
        if not (isinstance(node.func, cst.Attribute) and node.func.attr.value == "compile"):
            return
        loss = argument(node, "loss", 1)
        if loss is None:
            return
        model = compiled_model(self.ctx, node)
        if model is None or not model.transformers:
            return
        name = self._probability_loss(loss, node)
        if name is None:
            return
        self.report(
            loss,
            f"`{self.ctx.code(loss)}` expects probabilities, but `{model.cls}` outputs logits: the loss is computed "
            "on the wrong scale and training stalls at a high loss",
            hint=f"use `keras.losses.{name}(from_logits=True)` (or drop `loss=` to use the model's internal loss)",
            fix=self._fix(loss, node, name),
        )

    def _fix(self, loss: cst.BaseExpression, at: cst.Call, name: str):
        """`"sparse_categorical_crossentropy"` → `<keras>.losses.SparseCategoricalCrossentropy(from_logits=True)`
        in the file's own Keras spelling; an existing loss object gets `from_logits=True`."""
        facts = self.ctx.facts
        node = loss
        for _ in range(5):  # `loss_fn = SparseCategoricalCrossentropy()` ... `compile(loss=loss_fn)`
            if not isinstance(node, cst.Name) or facts.qualname(node) is not None or isinstance(facts.constant(node, at), str):
                break
            b = facts.lookup(node.value, at)
            if b is None or not isinstance(b.value, (cst.Call, cst.Attribute, cst.Name)):
                return None
            node = b.value
        message = f"Use `{name}(from_logits=True)`"
        if isinstance(node, cst.Call):
            fl = keyword(node, "from_logits")
            if fl is not None:
                return self.ctx.fix(Applicability.SAFE, message, self.ctx.replace(fl.value, "True"))
            if any(a.star for a in node.args):
                return None
            return self.ctx.fix(Applicability.SAFE, message, codemod.add_keyword(self.ctx, node, "from_logits", "True"))
        if isinstance(node, cst.Attribute) and not isinstance(facts.constant(node, at), str):
            # `tf.keras.losses.sparse_categorical_crossentropy` → `tf.keras.losses.SparseCategoricalCrossentropy(...)`
            return self.ctx.fix(Applicability.SAFE, message,
                                self.ctx.replace(node, f"{self.ctx.code(node.value)}.{name}(from_logits=True)"))
        spelled = codemod.keras_prefix(self.ctx, "losses")
        if spelled is None:
            return None
        prefix, add = spelled
        edits = [self.ctx.replace(node if node is not loss and not isinstance(node, cst.Name) else loss,
                                  f"{prefix}.{name}(from_logits=True)")]
        return self.ctx.fix(Applicability.SAFE, message, *edits, *([add] if add is not None else []))

    def _probability_loss(self, loss: cst.BaseExpression, at: cst.Call, _depth: int = 0) -> str | None:
        facts = self.ctx.facts
        if isinstance(loss, cst.Name) and _depth < 5 and facts.qualname(loss) is None:
            # `loss_fn = SparseCategoricalCrossentropy()` ... `compile(loss=loss_fn)`
            b = facts.lookup(loss.value, at)
            if b is not None and isinstance(b.value, (cst.Call, cst.Attribute, cst.Name)):
                return self._probability_loss(b.value, at, _depth + 1)
        value = facts.constant(loss, at)
        if isinstance(value, str):
            key = value.lower()
            return PROBABILITY_LOSSES.get(key) or (value if value in _LOSS_CLASSES else None)
        if isinstance(loss, cst.Call):
            qn = facts.callee(loss) or ""
            cls = qn.rsplit(".", 1)[-1]
            if qn.startswith("keras.") and cls in _LOSS_CLASSES:
                fl = keyword(loss, "from_logits")
                if fl is None or literal(fl.value) is False:
                    return cls
            return None
        qn = facts.qualname(loss) or ""
        if qn.startswith("keras.") and qn.rsplit(".", 1)[-1] in PROBABILITY_LOSSES:
            return PROBABILITY_LOSSES[qn.rsplit(".", 1)[-1]]
        return None


@register
class LabelDtypeProblemType(Rule):
    """(probe) Label dtype and `problem_type` disagree: float labels make a multi-label (BCE) loss,
    integer labels with `num_labels=1` a regression (MSE) loss."""

    code = "TL405"
    name = "label-dtype-problem-type"
    severity = Severity.WARNING
    probe = "Reads the dtype of the label column and the model's `config.problem_type`/`num_labels`."


@register
class NonFiniteLoss(Rule):
    """(probe) The loss is NaN or infinite at initialisation, for some samples of one batch."""

    code = "TL406"
    name = "non-finite-loss"
    severity = Severity.ERROR
    probe = "Runs the model on one batch and checks the per-sample loss is finite."


@register
class UnexpectedInitialLoss(Rule):
    """(probe) The loss at initialisation is far from ln(num_labels) for a fresh classification head."""

    code = "TL407"
    name = "unexpected-initial-loss"
    severity = Severity.WARNING
    probe = "Compares the loss on one batch at initialisation with ln(num_labels)."
