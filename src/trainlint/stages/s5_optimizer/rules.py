"""TL5xx: optimizer and hyperparameters."""

from __future__ import annotations

import libcst as cst

from trainlint.facts import argument
from trainlint import codemod
from trainlint.findings import Applicability, Severity
from trainlint.rule import Rule, register
from trainlint.stages.s4_loss.rules import compiled_model

#: Keras's default learning rate for each optimizer named by a string
KERAS_DEFAULT_LR = {
    "adam": 1e-3, "adamw": 1e-3, "adamax": 1e-3, "nadam": 1e-3, "rmsprop": 1e-3, "adagrad": 1e-3,
    "adadelta": 1e-3, "ftrl": 1e-3, "lion": 1e-3, "sgd": 1e-2, "adafactor": 1e-3, "lamb": 1e-3,
}
#: the learning rate the string-optimizer fix writes (a usual rate to fine-tune a pretrained transformer)
FINE_TUNING_LR = "5e-5"
KERAS_CLASS = {
    "adam": "Adam", "adamw": "AdamW", "adamax": "Adamax", "nadam": "Nadam", "rmsprop": "RMSprop",
    "adagrad": "Adagrad", "adadelta": "Adadelta", "ftrl": "Ftrl", "lion": "Lion", "sgd": "SGD",
    "adafactor": "Adafactor", "lamb": "Lamb",
}


@register
class StringOptimizer(Rule):
    """A Keras optimizer given as a string for a pretrained model: its learning rate is the default."""

    code = "TL501"
    name = "string-optimizer"
    severity = Severity.WARNING
    probe = "Reads the optimizer Keras really compiled: its class and effective learning rate."
    triggers = ("compile",)
    fix = Applicability.UNSAFE

    def visit_Call(self, node: cst.Call) -> None:
        if not (isinstance(node.func, cst.Attribute) and node.func.attr.value == "compile"):
            return
        opt = argument(node, "optimizer", 0)
        if not isinstance(opt, (cst.SimpleString, cst.ConcatenatedString, cst.Name)):
            return
        name = self.ctx.facts.constant(opt, node)
        if not isinstance(name, str):
            return
        model = compiled_model(self.ctx, node)
        if model is None or not (model.transformers and model.pretrained):
            return
        key = name.lower()
        lr = KERAS_DEFAULT_LR.get(key)
        cls = KERAS_CLASS.get(key, name)
        rate = f"its default learning rate {lr:g}" if lr else "its default learning rate"
        self.report(
            opt,
            f'`optimizer="{name}"` silently uses {rate}, far too high to fine-tune the pretrained `{model.cls}`: '
            "the loss goes down slowly and stalls at a high value (or diverges)",
            hint=f"pass an optimizer object with an explicit rate, e.g. `keras.optimizers.{cls}(learning_rate=5e-5)`, "
            "or one from `transformers.create_optimizer(...)`",
            fix=self._fix(opt, key, name),
        )

    def _fix(self, opt: cst.BaseExpression, key: str, name: str):
        """`"adam"` → `<keras>.optimizers.Adam(learning_rate=5e-5)` in the file's own Keras spelling; without
        any Keras import, `transformers.AdamWeightDecay` (built on the model's own Keras) for adam."""
        cls = KERAS_CLASS.get(key)
        if cls is None:
            return None
        spelled = codemod.keras_prefix(self.ctx, "optimizers", add=False)
        if spelled is not None:
            new, add = f"{spelled[0]}.{cls}(learning_rate={FINE_TUNING_LR})", None
        elif key == "adam":
            got = codemod.ensure_name(self.ctx, "transformers.AdamWeightDecay",
                                      "from transformers import AdamWeightDecay", "AdamWeightDecay")
            if got is None:
                return None
            new, add = f"{got[0]}(learning_rate={FINE_TUNING_LR})", got[1]
        else:
            got = codemod.keras_prefix(self.ctx, "optimizers")
            if got is None:
                return None
            new, add = f"{got[0]}.{cls}(learning_rate={FINE_TUNING_LR})", got[1]
        return self.ctx.fix(Applicability.UNSAFE, f'Replace `optimizer="{name}"` with `{new}` (sets the learning rate)',
                            self.ctx.replace(opt, new), *([add] if add is not None else []))


@register
class StepDoesNotMoveWeights(Rule):
    """(probe) One optimizer step leaves the trainable weights unchanged."""

    code = "TL506"
    name = "step-does-not-move-weights"
    severity = Severity.ERROR
    probe = "Takes one optimizer step (without the warmup scheduler) and compares the weights before and after."
