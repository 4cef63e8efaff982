"""Keras probe, training-loop stage (child side: stdlib + TF only).

``overfit`` (``--overfit N``, TL706): the equivalent of ``model.fit(batch, epochs=N)`` — N real train
steps (``train_on_batch``: the model's ``train_step`` and compiled optimizer) on a copy of the one
batch, the first being the step of TL506. The curve is plotted in the terminal and classified by the
framework-neutral :mod:`trainlint.probe.curve` shared with the PyTorch probe.
"""

from __future__ import annotations

import types
from typing import Any

from trainlint.probe import curve
from trainlint.probe import keras_util as ku

EAGER_MAX_STEPS = 30


def overfit(h: types.ModuleType, st: Any, steps: int) -> None:
    from trainlint.stages.s5_optimizer.probe_keras import effective_lr, set_eager, step_batch, train_once

    x, y, sw = step_batch(st)
    if steps > EAGER_MAX_STEPS:
        set_eager(st, False)  # many steps: trace the train function once
    losses = list(st.step_losses[:1])
    try:
        while len(losses) < steps:
            value = train_once(st, x, y, sw)
            losses.append(float("nan") if value is None else value)
    except Exception as exc:  # noqa: BLE001
        h.note(f"overfit step {len(losses) + 1} raised {ku.first_line(exc)}")
        if len(losses) < 2:
            return
    verdict, text = curve.report(losses)
    opt = getattr(st.model, "optimizer", None)
    lr, _ = effective_lr(opt) if opt is not None else (None, "")
    rows = ku.batch_len(x)
    head = f"overfit one batch ({rows} rows), {len(losses)} steps, learning_rate {ku.fmt_lr(lr)}:"
    h.detail(head + "\n" + text)
    if verdict.ok:
        if verdict.kind == "pass":
            h.checked("TL706")
        h.note(f"overfit: {verdict.kind}: {verdict.summary}")
        return
    h.finding(
        "TL706",
        f"the model cannot overfit one batch: the loss {verdict.kind} ({verdict.summary})",
        evidence=f"{head} losses {ku.short(losses, 12)}; likely causes: {verdict.causes}\n{curve.plot(losses)}",
        line=st.line,
    )
