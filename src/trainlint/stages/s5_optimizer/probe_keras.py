"""Keras probe, optimizer stage (child side: stdlib + TF only).

- ``check_optimizer``: TL501 — the optimizer actually compiled, its class and effective learning rate
  (``compile(optimizer="adam")`` gives Adam at the Keras default 1e-3, far too high for fine-tuning a
  pretrained transformer); TL503 — an optimizer object whose (peak) rate is >= 1e-3 on a pretrained
  transformer.
- ``check_step``: TL506 — one real ``train_step`` (``model.train_on_batch``, the model's own
  ``train_step`` and compiled optimizer) on the batch moves the trainable weights. Rows whose label is
  out of range (TL106) are left out so that the rest of the pipeline can still be checked.
"""

from __future__ import annotations

import types
from typing import Any

from trainlint.probe import keras_util as ku


def schedule_of(opt: Any) -> Any:
    """The optimizer's LearningRateSchedule, if its learning rate is one."""
    for attr in ("_learning_rate", "_hyper"):
        cand = getattr(opt, attr, None)
        if attr == "_hyper" and isinstance(cand, dict):
            cand = cand.get("learning_rate")
        if cand is not None and callable(cand) and not hasattr(cand, "numpy") and hasattr(cand, "get_config"):
            return cand
    return None


def effective_lr(opt: Any) -> tuple[float | None, str]:
    """The learning rate of the next step, and a note on a schedule (peak value) if there is one."""
    import numpy as np

    note = ""
    sched = schedule_of(opt)
    if sched is not None:
        try:
            value = float(np.asarray(ku.np_of(sched(opt.iterations))))
        except Exception:  # noqa: BLE001
            value = None
        peak = None
        for key in ("initial_learning_rate", "maximal_learning_rate"):
            try:
                peak = float(sched.get_config().get(key))
                break
            except Exception:  # noqa: BLE001
                continue
        note = f" (schedule {type(sched).__name__}" + (f", peak {ku.fmt_lr(peak)}" if peak is not None else "") + ")"
        return value, note
    for attr in ("learning_rate", "lr"):
        try:
            value = getattr(opt, attr)
        except Exception:  # noqa: BLE001
            continue
        if value is None:
            continue
        try:
            return float(np.asarray(ku.np_of(value))), note
        except Exception:  # noqa: BLE001
            continue
    return None, note


def check_optimizer(h: types.ModuleType, st: Any) -> None:
    opt = getattr(st.model, "optimizer", None)
    if opt is None:
        h.note("the model has no optimizer (compile() was not called): fit would fail")
        st.stop = True
        return
    lr, sched = effective_lr(opt)
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
        peak = _peak_lr(opt, lr)
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


def _peak_lr(opt: Any, current: float | None) -> float | None:
    sched = schedule_of(opt)
    if sched is None:
        return current
    try:
        cfg = sched.get_config()
    except Exception:  # noqa: BLE001
        return current
    for key in ("initial_learning_rate", "warmup_target", "maximal_learning_rate"):
        value = cfg.get(key)
        if isinstance(value, (int, float)) and value > 0:
            return float(value)
    return current


def _snapshot(model: Any) -> list[Any]:
    return [ku.np_of(v).copy() for v in model.trainable_variables]


def step_batch(st: Any) -> tuple[Any, Any, Any]:
    """The batch for training steps: rows with an out-of-range label left out."""
    x, y, sw = st.features, st.y, st.sample_weight
    if st.out_of_range is not None:
        keep = ~st.out_of_range
        x = ku.take_rows(x, keep)
        y = ku.take_rows(y, keep) if y is not None else None
        sw = ku.take_rows(sw, keep) if sw is not None else None
    return x, y, sw


def set_eager(st: Any, eager: bool) -> None:
    """Run the probe's train steps eagerly (no tf.function trace: seconds saved on the first step, and
    errors point into the model's Python code) or compiled (faster for many ``--overfit`` steps)."""
    model = st.model
    try:
        if bool(getattr(model, "run_eagerly", False)) == eager and getattr(model, "train_function", None) is not None:
            return
        model.run_eagerly = eager
        model.train_function = None  # rebuilt by the next train_on_batch
    except Exception:  # noqa: BLE001  # a model that does not allow it: keep its own setting
        pass


def train_once(st: Any, x: Any, y: Any, sw: Any) -> float | None:
    result = st.model.train_on_batch(x, y, sample_weight=sw, return_dict=True)
    if isinstance(result, dict):
        value = result.get("loss")
    elif isinstance(result, (list, tuple)):
        value = result[0]
    else:
        value = result
    return None if value is None else float(ku.np_of(value))


def skip_warmup(h: types.ModuleType, st: Any) -> None:
    """A warmup schedule starts at learning rate 0: a first step would move nothing whatever the
    pipeline. Move the optimizer to the first step of the schedule with a non-zero rate."""
    opt = getattr(st.model, "optimizer", None)
    sched = schedule_of(opt) if opt is not None else None
    if sched is None:
        return
    lr, _ = effective_lr(opt)
    if lr is None or lr > 0:
        return
    k = 1
    while k <= 1 << 20:
        try:
            value = float(ku.np_of(sched(k)))
        except Exception:  # noqa: BLE001
            return
        if value > 0:
            break
        k *= 2
    else:
        return
    try:
        opt.iterations.assign(k)
    except Exception:  # noqa: BLE001
        return
    h.note(
        f"the learning-rate schedule starts at 0 (warmup): the probe's train steps run from schedule step {k} "
        f"(learning_rate {ku.fmt_lr(value)})"
    )


def check_step(h: types.ModuleType, st: Any) -> None:
    import numpy as np

    x, y, sw = step_batch(st)
    n = ku.batch_len(x)
    if not n:
        h.note("no usable row in the batch for a train step")
        return
    skip_warmup(h, st)
    before = _snapshot(st.model)
    try:
        loss = train_once(st, x, y, sw)
    except Exception as exc:  # noqa: BLE001
        h.note(f"one train step on the batch raised {ku.first_line(exc)}: weight update not checked")
        st.stop = True
        return
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
        lr, _ = effective_lr(opt) if opt is not None else (None, "")
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
