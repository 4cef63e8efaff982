"""Keras probe, training-loop stage (child side: stdlib + TF only).

``overfit`` (``--overfit N``, TL706): the equivalent of ``model.fit(batch, epochs=N)`` — N real train
steps (``train_on_batch``: the model's ``train_step`` and compiled optimizer) on a copy of the one
batch, the first being the step of TL506. The curve is plotted in the terminal and classified by the
framework-neutral :mod:`trainlint.probe.child.curve` shared with the PyTorch probe.
"""

from __future__ import annotations

from trainlint.probe.child import curve
from trainlint.probe.child import keras_util as ku
from trainlint.probe.child.harness import Harness
from trainlint.probe.child.points import FIT_OVERFIT, KerasState
from trainlint.probe.child.registry import check

EAGER_MAX_STEPS = 30


@check(FIT_OVERFIT, "TL706", phase="overfit")
def overfit(h: Harness, st: KerasState) -> None:
    steps = h.config.overfit
    x, y, sw = ku.step_batch(st)
    if steps > EAGER_MAX_STEPS:
        ku.set_eager(st, False)  # many steps: trace the train function once
    opt = getattr(st.model, "optimizer", None)
    rate = ku.use_peak_rate(opt) if opt is not None else "learning_rate unknown"
    # The probe's first train step (TL506) ran at the schedule's current value: start a new curve when
    # the rate changed.
    losses = list(st.step_losses[:1]) if "current value" not in rate else []
    try:
        while len(losses) < steps:
            value = ku.train_once(st, x, y, sw)
            losses.append(float("nan") if value is None else value)
    except Exception as exc:  # noqa: BLE001
        h.incomplete("overfit", f"overfit step {len(losses) + 1} raised {ku.first_line(exc)}", codes=("TL706",))
        if len(losses) < 2:
            return
    verdict, text = curve.report(losses)
    rows = ku.batch_len(x)
    head = f"overfit one batch ({rows} rows), {len(losses)} steps at {rate}:"
    h.detail(head + "\n" + text)
    if verdict.ok:
        if verdict.kind == "pass":
            h.checked("TL706")
        h.note(f"overfit at {rate}: {verdict.kind}: {verdict.summary}")
        return
    if h.config.tiny_model and verdict.kind in ("plateaus", "oscillates"):
        h.note(
            f"overfit on a random --tiny-model: the loss {verdict.kind} ({verdict.summary}); a small randomly "
            "initialised model may not fit the batch, so this says nothing about the script: not reported as TL706"
        )
        return
    h.finding(
        "TL706",
        f"the model cannot overfit one batch: the loss {verdict.kind} ({verdict.summary}) at {rate}",
        evidence=f"{head} losses {ku.short(losses, 12)}; likely causes: {verdict.causes}\n{curve.plot(losses)}",
        line=st.line,
    )
