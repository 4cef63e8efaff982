"""Keras probe, model stage (child side: stdlib + TF only).

``check_forward``: the batch's feature keys vs the model's ``call`` signature (TL207, transformers
models), no trainable variables (TL305), one forward pass on the batch without the labels; the number
of classes the head predicts (``config.num_labels`` for transformers models, else the output width).
"""

from __future__ import annotations

import inspect
import types
from typing import Any

from trainlint.probe import keras_util as ku


def features_without_labels(st: Any) -> Any:
    f = st.features
    if hasattr(f, "keys") and st.label_keys:
        return {k: v for k, v in f.items() if k not in st.label_keys}
    return f


def logits_of(out: Any) -> Any:
    """The first non-loss output: ``TFSequenceClassifierOutput.logits``, a tensor, a one-item list/dict."""
    if hasattr(out, "logits") and getattr(out, "logits", None) is not None:
        return out.logits
    if hasattr(out, "keys") and not ku.is_tensorlike(out):
        values = [v for k, v in out.items() if k != "loss"]
        return values[0] if len(values) == 1 else None
    if isinstance(out, (list, tuple)):
        return out[0] if len(out) == 1 else None
    return out


def check_forward(h: types.ModuleType, st: Any) -> None:
    model = st.model
    feats = features_without_labels(st)
    if st.transformers and hasattr(feats, "keys"):
        try:
            params = set(inspect.signature(model.call).parameters)
        except (TypeError, ValueError):
            params = set()
        unknown = [k for k in feats.keys() if params and k not in params]
        if unknown:
            h.finding(
                "TL207",
                f"batch keys {unknown} are not arguments of {type(model).__name__}.call: the forward pass fails",
                evidence=f"batch keys {sorted(feats.keys())}; {type(model).__name__}.call accepts "
                f"{sorted(p for p in params if p not in ('self', 'kwargs'))[:12]}",
                line=st.line,
            )
            st.stop = True
            return
        h.checked("TL207")
    try:
        n_trainable = len(model.trainable_variables)
    except Exception:  # noqa: BLE001  # not built yet: the forward pass builds it
        n_trainable = None
    try:
        out = model(feats, training=False)
    except Exception as exc:  # noqa: BLE001
        h.note(f"forward pass on the batch raised {ku.first_line(exc)}")
        h.detail(f"features given to the model: {ku.describe(feats)}")
        st.stop = True
        return
    if n_trainable is None or n_trainable == 0:
        n_trainable = len(model.trainable_variables)
    if n_trainable == 0:
        h.finding(
            "TL305",
            f"{type(model).__name__} has no trainable variables: fit would change nothing",
            evidence=f"model.trainable_variables is empty ({len(model.non_trainable_variables)} non-trainable "
            f"variables; model.trainable={getattr(model, 'trainable', '?')})",
            line=st.line,
        )
    else:
        h.checked("TL305")
    logits = logits_of(out)
    if logits is None or not ku.is_tensorlike(logits):
        h.note(f"the model has several outputs ({type(out).__name__}): output checks skipped")
        return
    st.outputs = ku.np_of(logits)
    config = getattr(model, "config", None)
    if st.transformers and config is not None and getattr(config, "num_labels", None) is not None:
        st.num_classes = int(config.num_labels)
        st.num_classes_source = f"model.config.num_labels = {st.num_classes}"
    elif st.outputs.ndim >= 2:
        st.num_classes = int(st.outputs.shape[-1])
        st.num_classes_source = f"the model's output width {st.num_classes}"
    h.detail(f"model outputs on the batch: {ku.describe(logits)}; first row {ku.short(st.outputs[:1])}")
