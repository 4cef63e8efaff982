"""Child-side plugin for TensorFlow/Keras ``model.fit`` (see ../../PROTOCOL.md).

Post-import hooks only: nothing here imports tensorflow, keras, tf_keras, transformers or datasets
before the script does. Both Keras flavours are handled, whatever ``tf.keras`` means in the script
(transformers sets ``TF_USE_LEGACY_KERAS=1`` when its TF code loads):

- ``keras`` (Keras 3) and ``tf_keras`` (Keras 2): ``Model.compile`` records what the user passed
  (optimizer and loss as written, and the line); ``Model.fit`` is intercepted;
- ``transformers.modeling_tf_utils``: ``TFPreTrainedModel.compile`` records the user's arguments before
  transformers swaps in its internal loss (``TFPreTrainedModel.fit`` reaches the patched base ``fit``);
- ``datasets.arrow_dataset``: ``Dataset.to_tf_dataset`` remembers which ``datasets.Dataset`` and columns
  a ``tf.data.Dataset`` was made from, so the label range covers the whole label column cheaply.

At ``fit`` the points ``fit.reached``, ``fit.batch`` (and ``fit.overfit`` with ``--overfit``) are
announced on a :class:`~trainlint.probe.child.points.KerasState` (the batch-taking check of the
batching stage takes one real batch from what was passed: ``tf.data.Dataset``, arrays, dicts), and the
script is stopped without training. A hand-written ``GradientTape`` loop (no ``fit``) is observed
through the optimizer's ``apply_gradients`` for two steps: the points ``tape.apply`` and
``tape.step_done``.
"""

from __future__ import annotations

import functools
from typing import Any

from trainlint.probe.child import keras_util as ku
from trainlint.probe.child import registry
from trainlint.probe.child.harness import Harness
from trainlint.probe.child.points import (
    FIT_BATCH,
    FIT_OVERFIT,
    FIT_REACHED,
    TAPE_APPLY,
    TAPE_STEP_DONE,
    KerasState,
    TapeState,
)


def install(h: Harness) -> None:
    h.when_imported("tensorflow", lambda m: h.versions(tensorflow=getattr(m, "__version__", "?")))
    h.when_imported("keras", lambda m: _on_keras(h, m, "keras"))
    h.when_imported("tf_keras", lambda m: _on_keras(h, m, "tf_keras"))
    h.when_imported("transformers.modeling_tf_utils", lambda m: _on_transformers_tf(h, m))
    h.when_imported("datasets.arrow_dataset", lambda m: _on_arrow_dataset(h, m))


# ---------------------------------------------------------------- hooks


def _compile_wrapper(h: Harness, original: Any, transformers_default: bool) -> Any:
    @functools.wraps(original)
    def compile(self: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A001
        depth = self.__dict__.get("_trainlint_compile_depth", 0)
        if depth == 0:
            optimizer = kwargs.get("optimizer", args[0] if args else "rmsprop")
            if "loss" in kwargs:
                loss = kwargs["loss"]
            elif len(args) > 1:
                loss = args[1]
            else:
                loss = "auto_with_warning" if transformers_default else None
            self.__dict__["_trainlint_compile"] = {
                "optimizer": optimizer,
                "loss": loss,
                "line": h.user_line(),
                "run_eagerly": kwargs.get("run_eagerly"),
            }
        self.__dict__["_trainlint_compile_depth"] = depth + 1
        try:
            return original(self, *args, **kwargs)
        finally:
            self.__dict__["_trainlint_compile_depth"] = depth

    compile._trainlint_patched = True  # type: ignore[attr-defined]
    return compile


def _fit_wrapper(h: Harness, original: Any) -> Any:
    @functools.wraps(original)
    def fit(self: Any, *args: Any, **kwargs: Any) -> Any:
        if h.is_busy() or h.ended():
            return original(self, *args, **kwargs)
        line = h.user_line()
        probe_fit(h, self, args, kwargs, line)
        h.stop(
            "reached-training",
            f"stopped at model.fit() ({h.where(line)}) after probing one batch",
            line,
        )

    fit._trainlint_patched = True  # type: ignore[attr-defined]
    return fit


def _patch_model_class(h: Harness, Model: Any, transformers_default: bool = False) -> None:
    if "compile" in Model.__dict__ and not getattr(Model.__dict__["compile"], "_trainlint_patched", False):
        Model.compile = _compile_wrapper(h, Model.__dict__["compile"], transformers_default)
    elif "compile" not in Model.__dict__:
        Model.compile = _compile_wrapper(h, Model.compile, transformers_default)
    fit = getattr(Model, "fit", None)
    if fit is not None and not getattr(fit, "_trainlint_patched", False):
        Model.fit = _fit_wrapper(h, fit)


def _on_keras(h: Harness, mod: Any, name: str) -> None:
    version = getattr(mod, "__version__", "?")
    h.versions(**{name.replace("_", "-"): version})
    Model = getattr(mod, "Model", None)
    if Model is None:  # a lazily built namespace: the class itself
        try:
            if name == "tf_keras":
                from tf_keras.src.engine.training import Model  # type: ignore[no-redef]
            else:
                from keras.src.models.model import Model  # type: ignore[no-redef]
        except ImportError:
            return
    _patch_model_class(h, Model)
    h.guarded("GradientTape loop observer", install_tape_observer, h, name)


def _on_transformers_tf(h: Harness, mod: Any) -> None:
    base = getattr(mod, "TFPreTrainedModel", None)
    if base is None:
        return
    original = base.__dict__.get("compile")
    if original is not None and not getattr(original, "_trainlint_patched", False):
        base.compile = _compile_wrapper(h, original, transformers_default=True)
    # TFPreTrainedModel.fit converts BatchEncoding arguments, then calls the (patched) base fit.


def _on_arrow_dataset(h: Harness, mod: Any) -> None:
    Dataset: Any = getattr(mod, "Dataset", None)
    original = getattr(Dataset, "to_tf_dataset", None)
    if original is None or getattr(original, "_trainlint_patched", False):
        return

    @functools.wraps(original)
    def to_tf_dataset(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        try:
            names = ["batch_size", "columns", "shuffle", "collate_fn", "drop_remainder", "collate_fn_args", "label_cols"]
            bound = dict(zip(names, args))
            bound.update(kwargs)
            ku.remember_tf_dataset(
                result,
                {
                    "hf_dataset": self,
                    "columns": _as_list(bound.get("columns")),
                    "label_cols": _as_list(bound.get("label_cols")),
                    "collate_fn": bound.get("collate_fn"),
                    "line": h.user_line(),
                },
            )
        except Exception:  # noqa: BLE001  # never break the user's call
            pass
        return result

    to_tf_dataset._trainlint_patched = True  # type: ignore[attr-defined]
    Dataset.to_tf_dataset = to_tf_dataset


def _as_list(value: Any) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    return list(value)


# ---------------------------------------------------------------- the probe at fit()


_FIT_PARAMS = ("x", "y", "batch_size", "epochs", "verbose", "callbacks", "validation_split", "validation_data",
               "shuffle", "class_weight", "sample_weight")


def probe_fit(h: Harness, model: Any, args: tuple[Any, ...], kwargs: dict[str, Any], line: int | None) -> None:
    """Announce the points of ``fit``, in pipeline order, on one :class:`KerasState`."""
    fit_args = dict(zip(_FIT_PARAMS, args))
    fit_args.update(kwargs)
    st = KerasState.at_fit(model, fit_args, line)
    flavour = "tf-keras (Keras 2)" if st.flavour == "tf_keras" else "Keras 3"
    version = getattr(st.kmod, "__version__", "?")
    h.note(
        f"probe reached model.fit() at {h.where(line)}; {type(model).__name__} on {flavour} {version}"
        + (" (transformers TF model)" if st.transformers else "")
    )
    registry.announce(h, FIT_REACHED, st)
    with h.busy():
        ku.set_eager(st, True)  # one eager step costs less than tracing the train function
        registry.announce(h, FIT_BATCH, st)
        if h.config.overfit > 0:
            registry.announce(h, FIT_OVERFIT, st)


# ---------------------------------------------------------------- hand-written GradientTape loops


def _before_traced(h: Harness, tape: TapeState, opt: Any, grads: list[Any], variables: list[Any]) -> None:
    """``apply_gradients`` while ``tf.function`` traces the train step: which gradients are None is
    known now; the variables are read outside the trace (``tf.init_scope``), before any step ran."""
    import tensorflow as tf

    if tape.traced_optimizer is None:
        with tf.init_scope():
            _before(h, tape, opt, grads, variables)
        tape.traced_optimizer = opt


def _before(h: Harness, tape: TapeState, opt: Any, grads: list[Any], variables: list[Any]) -> None:
    line = h.user_line()
    if tape.steps == 0:
        tape.watched = list(variables)
        tape.first = [ku.np_of(v).copy() for v in variables]
        lr, sched = ku.effective_lr(opt)
        h.note(f"GradientTape loop: {type(opt).__name__} at learning_rate {ku.fmt_lr(lr)}{sched}, "
               f"{len(variables)} variables in apply_gradients ({h.where(line)})")
    tape.optimizer, tape.grads, tape.variables, tape.line = opt, grads, variables, line
    registry.announce(h, TAPE_APPLY, tape)


def _after(h: Harness, tape: TapeState, opt: Any) -> None:
    tape.steps += 1
    if tape.steps < 2:
        return
    line = tape.line = h.user_line()
    tape.optimizer = opt
    registry.announce(h, TAPE_STEP_DONE, tape)
    h.stop("reached-training",
           f"stopped the GradientTape loop after observing two optimizer steps ({h.where(line)})", line)


def _install_function_observer(h: Harness, tape: TapeState) -> None:
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

        if h.is_busy() or h.ended() or tape.depth or not tf.executing_eagerly():
            return original(self, *args, **kwargs)
        result = original(self, *args, **kwargs)
        if tape.traced_optimizer is not None and not h.ended():
            h.guarded("GradientTape loop", _after, h, tape, tape.traced_optimizer)
        return result

    __call__._trainlint_patched = True  # type: ignore[attr-defined]
    Function.__call__ = __call__


def install_tape_observer(h: Harness, flavour: str) -> None:
    """Patch the optimizer entry points of ``flavour`` ("keras" or "tf_keras") that a GradientTape loop
    calls. Calls made by ``fit`` never reach the observer: ``fit`` is intercepted first, and the probe's
    own train steps run while ``h.busy()``."""
    tape = h.kept(TapeState) or h.keep(TapeState())
    if flavour == "keras":
        try:
            from keras.src.optimizers.base_optimizer import BaseOptimizer
        except ImportError:
            return
        targets: list[tuple[Any, str, Any]] = [
            (BaseOptimizer, "apply", lambda a, k: (list(a[0]) if a else list(k.get("grads", [])),
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

    def pairs(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[list[Any], list[Any]]:
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

                if h.is_busy() or h.ended() or tape.depth:
                    return original(self, *args, **kwargs)
                if not tf.executing_eagerly():  # traced by tf.function: judged on the function's calls
                    args = tuple(list(a) if i == 0 and split is None and not isinstance(a, (list, tuple)) else a
                                 for i, a in enumerate(args))
                    grads, variables = (split or pairs)(args, kwargs)
                    h.guarded("GradientTape loop", _before_traced, h, tape, self, grads, variables)
                    return original(self, *args, **kwargs)
                tape.depth += 1
                try:
                    args = tuple(list(a) if i == 0 and split is None and not isinstance(a, (list, tuple)) else a
                                 for i, a in enumerate(args))
                    grads, variables = (split or pairs)(args, kwargs)
                    h.guarded("GradientTape loop", _before, h, tape, self, grads, variables)
                    result = original(self, *args, **kwargs)
                finally:
                    tape.depth -= 1
                h.guarded("GradientTape loop", _after, h, tape, self)
                return result

            wrapper._trainlint_patched = True  # type: ignore[attr-defined]
            return wrapper

        setattr(cls, name, make(original, split))
    _install_function_observer(h, tape)
