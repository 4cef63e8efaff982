"""TL7xx: the training loop — what happens step after step."""

from __future__ import annotations

from trainlint.findings import Severity
from trainlint.rule import Rule, register


@register
class CannotOverfitBatch(Rule):
    """(probe, `--overfit N`) The model cannot overfit a single batch: the loss goes up, explodes,
    oscillates or plateaus."""

    code = "TL706"
    name = "cannot-overfit-batch"
    severity = Severity.WARNING
    probe = "With `--overfit N`, trains N steps on one batch, plots the loss curve and classifies it."


@register
class ScriptErrorBeforeTraining(Rule):
    """(probe) The script raised before it reached training."""

    code = "TL707"
    name = "script-error-before-training"
    severity = Severity.ERROR
    probe = "Runs the script up to the training call; an exception on the way is reported at the script's own line."
