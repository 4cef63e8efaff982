"""TL1xx: the data — what the dataset the model will see really holds."""

from __future__ import annotations

import libcst as cst

from trainlint.facts import DatasetValue, argument
from trainlint.findings import Severity
from trainlint.rule import Rule, register


@register
class RawDatasetToTrainer(Rule):
    """A raw (untokenized) dataset is given to the `Trainer` while a tokenized one exists."""

    code = "TL101"
    name = "raw-dataset-to-trainer"
    severity = Severity.ERROR
    probe = "Checks that the dataset the Trainer holds has the model's input columns (`input_ids`)."
    triggers = ("Trainer",)

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        if not facts.is_trainer_class(node.func, node):
            return
        for param, pos in (("train_dataset", 3), ("eval_dataset", 4)):
            expr = argument(node, param, pos)
            value = facts.value_of(expr, node)
            if not (isinstance(value, DatasetValue) and value.raw):
                continue
            found = facts.tokenized_twin(value)
            if found is None:
                continue
            twin = found[0]
            split = f'["{value.split}"]' if value.split else ""
            self.report(
                expr,
                f"`{param}` is the raw dataset `{self.ctx.code(expr)}` (text, no `input_ids`) although "
                f"`{twin}` holds its tokenized version: the first training step fails with "
                '"You must specify exactly one of input_ids or inputs_embeds"',
                hint=f"pass the tokenized dataset: `{param}={twin}{split}`",
            )


@register
class LabelOutOfRange(Rule):
    """(probe) Label values outside `[0, num_labels)` somewhere in the label column."""

    code = "TL106"
    name = "label-out-of-range"
    severity = Severity.ERROR
    probe = "Scans the whole label column (cheaply, from the Arrow table) against `model.config.num_labels`."
