"""Keras probe, training-loop stage (child side: stdlib + TF only).

``overfit`` (``--overfit N``, TL706): the equivalent of ``model.fit(batch, epochs=N)`` — N real train
steps (``train_on_batch``: the model's ``train_step`` and compiled optimizer) on a copy of the one
batch, the first being the step of TL506. The curve is plotted in the terminal and classified by the
framework-neutral :mod:`trainlint.probe.child.curve` shared with the PyTorch probe.
"""

from __future__ import annotations

import functools
from typing import Any

from trainlint.probe.child import curve
from trainlint.probe.child import keras_util as ku
from trainlint.probe.child.checks import emits, incomplete, overfit_requested, probe_check
from trainlint.probe.child.harness import Harness

EAGER_MAX_STEPS = 30


@probe_check("TL706", framework="keras", path="fit", order=700, phase="overfit", enabled=overfit_requested)
def overfit(h: Harness, st: Any) -> None:
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
        incomplete(h, "overfit", f"overfit step {len(losses) + 1} raised {ku.first_line(exc)}", codes=("TL706",))
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


# ---------------------------------------------------------------- hand-written GradientTape loops

emits("TL506", "TL308", framework="keras", where="GradientTape loop observer")


class TapeLoopObserver:
    """A hand-written ``GradientTape`` loop (no ``fit``): the optimizer's ``apply``/``apply_gradients``
    is observed for two steps: variables that get no gradient (TL308; none at all: TL506) and weights
    that do not change over the observed steps (TL506), whatever the cause (the loss computed outside
    the tape, ``tape.gradient`` of other variables, a learning rate of 0); then the script is stopped."""

    def __init__(self, h: Harness) -> None:
        self.h = h
        self.steps = 0
        self.depth = 0
        self.first: list[Any] | None = None  # the variables' values before the first observed step
        self.variables: list[Any] = []
        self.reported = False
        self.traced_opt: Any = None  # the optimizer of a train step traced by tf.function

    def before_traced(self, opt: Any, grads: list, variables: list) -> None:
        """``apply_gradients`` while ``tf.function`` traces the train step: which gradients are None is
        known now; the variables are read outside the trace (``tf.init_scope``), before any step ran."""
        import tensorflow as tf

        if self.traced_opt is None:
            with tf.init_scope():
                self.before(opt, grads, variables)
            self.traced_opt = opt

    def before(self, opt: Any, grads: list, variables: list) -> None:
        h = self.h
        names = [getattr(v, "path", None) or getattr(v, "name", "?") for v in variables]
        missing = [n for g, n in zip(grads, names) if g is None]
        line = h.user_line()
        if self.steps == 0:
            self.variables = list(variables)
            self.first = [ku.np_of(v).copy() for v in variables]
            lr, sched = ku.effective_lr(opt)
            h.note(f"GradientTape loop: {type(opt).__name__} at learning_rate {ku.fmt_lr(lr)}{sched}, "
                   f"{len(variables)} variables in apply_gradients ({h.where(line)})")
        if variables and len(missing) == len(variables) and not self.reported:
            self.reported = True
            h.finding(
                "TL506",
                f"the weights never move: no gradient reached any of the {len(variables)} variables given to "
                f"{type(opt).__name__}.apply_gradients (step {self.steps + 1})",
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
        elif missing and self.steps == 0:
            h.finding(
                "TL308",
                f"{len(missing)} of {len(variables)} variables get no gradient: {missing[:5]}",
                evidence=f"None gradients in apply_gradients at {h.where(line)}: {missing[:5]}",
                line=line,
            )
        elif self.steps == 0:
            h.checked("TL308")

    def after(self, opt: Any) -> None:
        h = self.h
        self.steps += 1
        if self.steps < 2:
            return
        line = h.user_line()
        if not self.reported and self.first is not None:
            import numpy as np

            now = [ku.np_of(v) for v in self.variables]
            moved = [i for i, (a, b) in enumerate(zip(self.first, now)) if a.shape != b.shape or not np.array_equal(a, b)]
            if not moved:
                lr, sched = ku.effective_lr(opt)
                h.finding(
                    "TL506",
                    f"the weights never move: two apply_gradients steps left all {len(now)} variables unchanged",
                    evidence=f"{type(opt).__name__} learning_rate {ku.fmt_lr(lr)}{sched}; every variable equal "
                    f"before step 1 and after step 2 ({h.where(line)})",
                    line=line,
                )
            else:
                h.checked("TL506")
        h.stop("reached-training",
               f"stopped the GradientTape loop after observing two optimizer steps ({h.where(line)})", line)


def _install_function_observer(h: Harness, obs: TapeLoopObserver) -> None:
    """A train step compiled with ``tf.function``: its Python body runs once (the trace), so steps are
    counted on the calls of the ``tf.function`` once a trace has reached ``apply_gradients``."""
    try:
        from tensorflow.python.eager.polymorphic_function.polymorphic_function import Function
    except ImportError:
        return
    original = Function.__dict__.get("__call__")
    if original is None or getattr(original, "_trainlint_patched", False):
        return

    @functools.wraps(original)
    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        import tensorflow as tf

        if h.is_busy() or h.ended() or obs.depth or not tf.executing_eagerly():
            return original(self, *args, **kwargs)
        result = original(self, *args, **kwargs)
        if obs.traced_opt is not None and not h.ended():
            h.guarded("GradientTape loop", obs.after, obs.traced_opt)
        return result

    __call__._trainlint_patched = True  # type: ignore[attr-defined]
    Function.__call__ = __call__


def install_tape_observer(h: Harness, flavour: str) -> None:
    """Patch the optimizer entry points of ``flavour`` ("keras" or "tf_keras") that a GradientTape loop
    calls. Calls made by ``fit`` never reach the observer: ``fit`` is intercepted first, and the probe's
    own train steps run while ``h.busy()``."""
    obs = h.state.setdefault("tape_observer", TapeLoopObserver(h))
    if flavour == "keras":
        try:
            from keras.src.optimizers.base_optimizer import BaseOptimizer
        except ImportError:
            return
        targets = [(BaseOptimizer, "apply", lambda a, k: (list(a[0]) if a else list(k.get("grads", [])),
                                                          list(a[1]) if len(a) > 1 and a[1] is not None
                                                          else list(k.get("trainable_variables") or [])))]
    else:
        targets = []
        try:
            from tf_keras.src.optimizers.optimizer import _BaseOptimizer

            targets.append((_BaseOptimizer, "apply_gradients", None))
        except ImportError:
            pass
        try:
            from tf_keras.src.optimizers.legacy.optimizer_v2 import OptimizerV2

            targets.append((OptimizerV2, "apply_gradients", None))
        except ImportError:
            pass
        try:
            from tf_keras.src.optimizers.optimizer import Optimizer

            targets.append((Optimizer, "apply_gradients", None))
        except ImportError:
            pass

    def pairs(args: tuple, kwargs: dict) -> tuple[list, list]:
        gv = list(args[0]) if args else list(kwargs.get("grads_and_vars") or [])
        return [g for g, _ in gv], [v for _, v in gv]

    for cls, name, split in targets:
        original = cls.__dict__.get(name)
        if original is None or getattr(original, "_trainlint_patched", False):
            continue

        def make(original: Any, split: Any) -> Any:
            @functools.wraps(original)
            def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
                import tensorflow as tf

                if h.is_busy() or h.ended() or obs.depth:
                    return original(self, *args, **kwargs)
                if not tf.executing_eagerly():  # traced by tf.function: judged on the function's calls
                    args = tuple(list(a) if i == 0 and split is None and not isinstance(a, (list, tuple)) else a
                                 for i, a in enumerate(args))
                    grads, variables = (split or pairs)(args, kwargs)
                    h.guarded("GradientTape loop", obs.before_traced, self, grads, variables)
                    return original(self, *args, **kwargs)
                obs.depth += 1
                try:
                    args = tuple(list(a) if i == 0 and split is None and not isinstance(a, (list, tuple)) else a
                                 for i, a in enumerate(args))
                    grads, variables = (split or pairs)(args, kwargs)
                    h.guarded("GradientTape loop", obs.before, self, grads, variables)
                    result = original(self, *args, **kwargs)
                finally:
                    obs.depth -= 1
                h.guarded("GradientTape loop", obs.after, self)
                return result

            wrapper._trainlint_patched = True  # type: ignore[attr-defined]
            return wrapper

        setattr(cls, name, make(original, split))
    _install_function_observer(h, obs)
