"""Child-side plugin for TensorFlow/Keras ``model.fit`` (see PROTOCOL.md; loaded as ``hooks_keras``).

Post-import hooks only: nothing here imports tensorflow, keras, tf_keras, transformers or datasets
before the script does. Both Keras flavours are handled, whatever ``tf.keras`` means in the script
(transformers sets ``TF_USE_LEGACY_KERAS=1`` when its TF code loads):

- ``keras`` (Keras 3) and ``tf_keras`` (Keras 2): ``Model.compile`` records what the user passed
  (optimizer and loss as written, and the line); ``Model.fit`` is intercepted;
- ``transformers.modeling_tf_utils``: ``TFPreTrainedModel.compile`` records the user's arguments before
  transformers swaps in its internal loss (``TFPreTrainedModel.fit`` reaches the patched base ``fit``);
- ``datasets.arrow_dataset``: ``Dataset.to_tf_dataset`` remembers which ``datasets.Dataset`` and columns
  a ``tf.data.Dataset`` was made from, so the label range covers the whole label column cheaply.

At ``fit``, one real batch is taken from what was passed (``tf.data.Dataset``, arrays, dicts), the stage
checks registered with ``@probe_check(..., framework="keras", path="fit")`` in ``stages/s*/probe_keras.py``
run in pipeline order, and the script is stopped without training. A hand-written ``GradientTape`` loop
(no ``fit``) is observed through the optimizer's ``apply_gradients`` for two steps
(``stages/s7_loop/probe_keras.py``).
"""

from __future__ import annotations

import functools
import sys
import types
from typing import Any

from trainlint.probe.child import keras_util as ku
from trainlint.probe.child.checks import emits
from trainlint.probe.child.harness import Harness

emits("TL807", "TL808", framework="keras", where="model.fit reached / Keras 3 object given to tf-keras")

_MISSING = object()


def install(h: Harness) -> None:
    h.when_imported("tensorflow", lambda m: h.versions(tensorflow=getattr(m, "__version__", "?")))
    h.when_imported("keras", lambda m: _on_keras(h, m, "keras"))
    h.when_imported("tf_keras", lambda m: _on_keras(h, m, "tf_keras"))
    h.when_imported("transformers.modeling_tf_utils", lambda m: _on_transformers_tf(h, m))
    h.when_imported("datasets.arrow_dataset", lambda m: _on_arrow_dataset(h, m))
    h.exception_mappers.append(map_exception)


def map_exception(exc: BaseException, line: int | None) -> tuple[str, str, str] | None:
    """Script errors before ``fit`` that have a catalog code: a Keras 3 object given to a tf-keras
    (transformers) model is TL808."""
    text = str(exc)
    if "Could not interpret" in text and "keras.src." in text:
        what = text.split("Could not interpret", 1)[1].split(":", 1)[0].strip() or "identifier"
        first = text.strip().splitlines()[0]
        return (
            "TL808",
            f"a Keras 3 object was given to a tf-keras model (could not interpret {what}): "
            "tensorflow.keras meant Keras 3 when it was imported, transformers models use tf-keras",
            f"{type(exc).__name__}: {first[:240]}; import the optimizer from tf_keras (or set "
            "TF_USE_LEGACY_KERAS=1 before importing tensorflow), or use transformers.create_optimizer",
        )
    return None


# ---------------------------------------------------------------- framework flavours


def flavour_of(model: Any) -> tuple[str, types.ModuleType | None]:
    """``("tf_keras" | "keras", module)``: the Keras the model's class is built on."""
    for klass in type(model).__mro__:
        mod = klass.__module__ or ""
        if mod.startswith("tf_keras"):
            return "tf_keras", sys.modules.get("tf_keras")
        if mod.startswith("keras"):
            return "keras", sys.modules.get("keras")
    return "keras", sys.modules.get("keras")


def is_transformers_model(model: Any) -> bool:
    mod = sys.modules.get("transformers.modeling_tf_utils")
    base = getattr(mod, "TFPreTrainedModel", None)
    return base is not None and isinstance(model, base)


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


def _on_keras(h: Harness, mod: types.ModuleType, name: str) -> None:
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
    from trainlint.stages.s7_loop import probe_keras as loop

    h.guarded("GradientTape loop observer", loop.install_tape_observer, h, name)


def _on_transformers_tf(h: Harness, mod: types.ModuleType) -> None:
    base = getattr(mod, "TFPreTrainedModel", None)
    if base is None:
        return
    original = base.__dict__.get("compile")
    if original is not None and not getattr(original, "_trainlint_patched", False):
        base.compile = _compile_wrapper(h, original, transformers_default=True)
    # TFPreTrainedModel.fit converts BatchEncoding arguments, then calls the (patched) base fit.


def _on_arrow_dataset(h: Harness, mod: types.ModuleType) -> None:
    Dataset = getattr(mod, "Dataset", None)
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


class KerasState:
    """What one stage hands to the next at ``fit``: the model, the batch, the outputs."""

    def __init__(self, h: Harness, model: Any, fit_args: dict[str, Any], line: int | None) -> None:
        self.h = h
        self.model = model
        self.line = line
        self.fit_args = fit_args
        self.flavour, self.kmod = flavour_of(model)
        self.transformers = is_transformers_model(model)
        self.compile: dict[str, Any] = model.__dict__.get("_trainlint_compile") or {}
        self.compile_line: int | None = self.compile.get("line")
        self.stop = False  # a stage failed in a way that makes the next stages meaningless
        # The batch, as fit would see it: features, separate labels (y), sample weights.
        self.source: str = ""  # where the batch came from, in words
        self.dataset: Any = None  # the tf.data.Dataset passed to fit, if any
        self.dataset_info: dict[str, Any] | None = None  # from to_tf_dataset
        self.raw_batch: Any = None
        self.features: Any = None
        self.y: Any = None
        self.sample_weight: Any = None
        self.label_keys: list[str] = []  # label keys found inside the feature dict
        self.labels: Any = None  # numpy labels of the batch (from y or from the features)
        self.label_name: str = ""  # "y" or the key in the features
        self.outputs: Any = None  # numpy model outputs (logits or probabilities) on the batch
        self.num_classes: int | None = None
        self.num_classes_source: str = ""
        self.out_of_range: Any = None  # boolean numpy mask over the batch: label outside the head
        self.step_losses: list[float] = []


_FIT_PARAMS = ("x", "y", "batch_size", "epochs", "verbose", "callbacks", "validation_split", "validation_data",
               "shuffle", "class_weight", "sample_weight")


def probe_fit(h: Harness, model: Any, args: tuple, kwargs: dict, line: int | None) -> None:
    """Run the registered Keras checks of every stage (``@probe_check(..., framework="keras",
    path="fit")`` in ``stages/s*/probe_keras.py``) in pipeline order on one real batch."""
    from trainlint.probe.child import checks

    fit_args = dict(zip(_FIT_PARAMS, args))
    fit_args.update(kwargs)
    st = KerasState(h, model, fit_args, line)
    flavour = "tf-keras (Keras 2)" if st.flavour == "tf_keras" else "Keras 3"
    version = getattr(st.kmod, "__version__", "?")
    h.note(
        f"probe reached model.fit() at {h.where(line)}; {type(model).__name__} on {flavour} {version}"
        + (" (transformers TF model)" if st.transformers else "")
    )
    # The script got as far as fit: the TF model classes exist in this environment.
    h.checked("TL807", "TL808")
    with h.busy():
        ku.set_eager(st, True)  # one eager step costs less than tracing the train function
        checks.run(h, st, "keras", "fit")
