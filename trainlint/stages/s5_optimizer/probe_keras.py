"""Keras probe, optimizer stage (child side: stdlib + TF only).

- ``check_optimizer``: TL501 — the optimizer actually compiled, its class and effective learning rate
  (``compile(optimizer="adam")`` gives Adam at the Keras default 1e-3, far too high for fine-tuning a
  pretrained transformer); TL503 — an optimizer object whose (peak) rate is >= 1e-3 on a pretrained
  transformer.
- ``check_step``: TL506 — one real ``train_step`` (``model.train_on_batch``, the model's own
  ``train_step`` and compiled optimizer) on the batch moves the trainable weights. Rows whose label is
  out of range (TL106) are left out so that the rest of the pipeline can still be checked.
- a hand-written ``GradientTape`` loop (the points ``tape.apply`` and ``tape.step_done``): variables that
  get no gradient (TL308; none at all: TL506) and weights that do not change over the observed steps
  (TL506), whatever the cause (the loss computed outside the tape, ``tape.gradient`` of other
  variables, a learning rate of 0).
"""

from __future__ import annotations

from typing import Any

from trainlint.probe.child import keras_util as ku
from trainlint.probe.child.harness import Harness
from trainlint.probe.child.points import FIT_BATCH, TAPE_APPLY, TAPE_STEP_DONE, KerasState, TapeState
from trainlint.probe.child.registry import check


@check(FIT_BATCH, "TL501", "TL503", "TL707")
def check_optimizer(h: Harness, st: KerasState) -> None:
    opt = getattr(st.model, "optimizer", None)
    if opt is None:
        h.finding(
            "TL707",
            "model.fit() would fail: the model has no optimizer (compile() was not called before fit)",
            evidence=f"{type(st.model).__name__}.optimizer is None at fit ({h.where(st.line)}); call model.compile(...) first",
            line=st.line,
        )
        st.stop = True
        return
    lr, sched = ku.effective_lr(opt)
    cls = type(opt)
    where = "tf-keras" if cls.__module__.startswith("tf_keras") else (
        "Keras 3" if cls.__module__.startswith("keras") else cls.__module__.split(".")[0]
    )
    text = f"{cls.__name__} ({where}), learning_rate={ku.fmt_lr(lr)}{sched}"
    arg = st.compile.get("optimizer") if st.compile else None
    line = st.compile_line or st.line
    h.note(f"optimizer compiled: {text}")
    if isinstance(arg, str):
        if st.transformers and lr is not None and lr >= 1e-3:
            h.finding(
                "TL501",
                f"compile(optimizer={arg!r}) gives {cls.__name__} with the Keras default learning rate "
                f"{ku.fmt_lr(lr)}: 10-100x too high to fine-tune a pretrained transformer (use 1e-5..1e-4)",
                evidence=f"model.optimizer is {text}; built from the string {arg!r}, every argument at its default",
                line=line,
            )
            return
        h.checked("TL501")
        h.note(
            f"compile(optimizer={arg!r}) uses the defaults ({text})"
            + ("" if st.transformers else ": fine for a model trained from scratch")
        )
        return
    h.checked("TL501")
    if st.transformers:
        peak = ku.peak_lr(opt, lr)
        if peak is not None and peak >= 1e-3:
            h.finding(
                "TL503",
                f"learning rate {ku.fmt_lr(peak)} to fine-tune a pretrained transformer: 10-100x too high "
                f"(use 1e-5..1e-4)",
                evidence=f"model.optimizer is {text}",
                line=line,
            )
        elif peak is not None:
            h.checked("TL503")


def _snapshot(model: Any) -> list[Any]:
    return [ku.np_of(v).copy() for v in model.trainable_variables]


@check(FIT_BATCH, "TL506", "TL406", "TL707", order=501)
def check_step(h: Harness, st: KerasState) -> None:
    import numpy as np

    x, y, sw = ku.step_batch(st)
    n = ku.batch_len(x)
    if not n:
        h.incomplete("train step", "no usable row in the batch for a train step", codes=("TL506",))
        return
    ku.skip_warmup(h, st)
    before = _snapshot(st.model)
    try:
        loss = ku.train_once(st, x, y, sw)
    except Exception as exc:  # noqa: BLE001
        # The probe steps eagerly; fit traces the train function: judge the mode fit would use.
        ku.set_eager(st, bool(st.compile.get("run_eagerly")))
        try:
            loss = ku.train_once(st, x, y, sw)
        except Exception as exc2:  # noqa: BLE001
            line = h.user_line(exc2.__traceback__) or h.user_line(exc.__traceback__) or st.line
            if "TL106" in h.emitted and "label" in ku.first_line(exc2).lower():
                return  # the label range check already reported this failure
            h.finding(
                "TL707",
                f"model.fit() would fail: one train step on the batch raises {ku.first_line(exc2)}",
                evidence=f"model.train_on_batch on {st.source or 'the first batch'} raised {ku.first_line(exc2)}"
                + (f" at {h.where(line)}" if line != st.line else ""),
                line=line,
            )
            st.stop = True
            return
        finally:
            ku.set_eager(st, True)
    after = [ku.np_of(v) for v in st.model.trainable_variables]
    names = [getattr(v, "path", None) or getattr(v, "name", "?") for v in st.model.trainable_variables]
    moved = [i for i, (a, b) in enumerate(zip(before, after)) if a.shape != b.shape or not np.array_equal(a, b)]
    nonfinite = [names[i] for i, b in enumerate(after) if not np.all(np.isfinite(b))]
    deltas = [float(np.max(np.abs(b - a))) for a, b in zip(before, after) if a.shape == b.shape and a.size]
    max_delta = max(deltas) if deltas else 0.0
    st.step_losses.append(loss if loss is not None else float("nan"))
    subset = f" (on the {n} rows with an in-range label)" if st.out_of_range is not None else ""
    if nonfinite:
        h.finding(
            "TL406",
            f"one train step made {len(nonfinite)} trainable variables NaN/inf",
            evidence=f"loss {loss}; non-finite after the step: {nonfinite[:5]}",
            line=st.line,
        )
    if not moved:
        opt = getattr(st.model, "optimizer", None)
        lr, _ = ku.effective_lr(opt) if opt is not None else (None, "")
        h.finding(
            "TL506",
            f"one train step left all {len(before)} trainable variables unchanged",
            evidence=f"model.train_on_batch{subset}: loss {loss}, learning_rate {ku.fmt_lr(lr)}; "
            f"max |Δw| = {max_delta:.3g}",
            line=st.line,
        )
        return
    h.checked("TL506")
    still = len(before) - len(moved)
    h.note(
        f"one train step{subset}: loss {loss:.4g}, {len(moved)}/{len(before)} trainable variables moved "
        f"(max |Δw| {max_delta:.3g})" + (f"; {still} unchanged (unused by this loss?)" if still else "")
        if loss is not None
        else f"one train step{subset}: {len(moved)}/{len(before)} trainable variables moved"
    )


# ---------------------------------------------------------------- hand-written GradientTape loops


@check(TAPE_APPLY, "TL506", "TL308")
def check_tape_gradients(h: Harness, tape: TapeState) -> None:
    """Before ``apply_gradients``: which variables got no gradient (all of them: the run stops here, as
    ``apply_gradients`` raises on all-None gradients)."""
    variables, line, opt = tape.variables, tape.line, tape.optimizer
    names = [getattr(v, "path", None) or getattr(v, "name", "?") for v in variables]
    missing = [n for g, n in zip(tape.grads, names) if g is None]
    if variables and len(missing) == len(variables) and not tape.reported:
        tape.reported = True
        h.finding(
            "TL506",
            f"the weights never move: no gradient reached any of the {len(variables)} variables given to "
            f"{type(opt).__name__}.apply_gradients (step {tape.steps + 1})",
            evidence=(
                f"every gradient is None at {h.where(line)}: the loss was computed outside the "
                "`with tf.GradientTape()` block, or tape.gradient() was asked for other variables than "
                "the ones the loss depends on"
            ),
            line=line,
            confirms=("TL308",),
        )
        # apply_gradients raises on all-None gradients (Keras 3, tf-keras): the finding says why.
        h.stop("reached-training", f"stopped the GradientTape loop at its first apply_gradients ({h.where(line)}): "
               "no gradient to apply", line)
    elif missing and tape.steps == 0:
        h.finding(
            "TL308",
            f"{len(missing)} of {len(variables)} variables get no gradient: {missing[:5]}",
            evidence=f"None gradients in apply_gradients at {h.where(line)}: {missing[:5]}",
            line=line,
        )
    elif tape.steps == 0:
        h.checked("TL308")


@check(TAPE_STEP_DONE, "TL506")
def check_tape_weights_move(h: Harness, tape: TapeState) -> None:
    """After the second ``apply_gradients``: the variables changed since before the first."""
    if tape.reported or tape.first is None:
        return
    import numpy as np

    line = tape.line
    now = [ku.np_of(v) for v in tape.watched]
    moved = [i for i, (a, b) in enumerate(zip(tape.first, now)) if a.shape != b.shape or not np.array_equal(a, b)]
    if not moved:
        lr, sched = ku.effective_lr(tape.optimizer)
        h.finding(
            "TL506",
            f"the weights never move: two apply_gradients steps left all {len(now)} variables unchanged",
            evidence=f"{type(tape.optimizer).__name__} learning_rate {ku.fmt_lr(lr)}{sched}; every variable equal "
            f"before step 1 and after step 2 ({h.where(line)})",
            line=line,
        )
    else:
        h.checked("TL506")
