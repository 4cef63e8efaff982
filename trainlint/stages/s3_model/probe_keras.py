"""Keras probe, model stage (child side: stdlib + TF only).

``check_forward``: the batch's feature keys vs the model's ``call`` signature (TL207, transformers
models), no trainable variables (TL305), one forward pass on the batch without the labels; the number
of classes the head predicts (``config.num_labels`` for transformers models, else the output width).
"""

from __future__ import annotations

import inspect

from trainlint.probe.child import keras_util as ku
from trainlint.probe.child.harness import Harness
from trainlint.probe.child.points import FIT_BATCH, KerasState
from trainlint.probe.child.registry import check


@check(FIT_BATCH, "TL207", "TL305", "TL106", "TL301", "TL707", cannot_confirm=("TL402",))
def check_forward(h: Harness, st: KerasState) -> None:
    model = st.model
    feats = ku.features_without_labels(st)
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
    except Exception as exc:  # noqa: BLE001  # fit would raise the same: a finding, never an all clear
        line = h.user_line(exc.__traceback__) or st.line
        h.finding(
            "TL707",
            f"model.fit() would fail: the forward pass on one batch raises {ku.first_line(exc)}",
            evidence=f"{type(model).__name__}(features) on {st.source or 'the first batch'}: {ku.describe(feats)} "
            f"raised {ku.first_line(exc)}" + (f" at {h.where(line)}" if line != st.line else ""),
            line=line,
        )
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
    logits = ku.logits_of(out)
    if logits is None or not ku.is_tensorlike(logits):
        h.incomplete("model outputs", f"the model has several outputs ({type(out).__name__}): the label range "
                   "and loss checks on its output were skipped", codes=("TL106", "TL402"))
        return
    st.outputs = ku.np_of(logits)
    config = getattr(model, "config", None)
    width = int(st.outputs.shape[-1]) if st.outputs.ndim >= 2 else None
    if st.transformers and config is not None and getattr(config, "num_labels", None) is not None:
        st.num_classes = int(config.num_labels)
        st.num_classes_source = f"model.config.num_labels = {st.num_classes}"
        if width is not None and width != st.num_classes and st.outputs.ndim == 2:
            # The head's real size wins: config.num_labels was changed after the model was built.
            st.num_classes_source = (
                f"the head outputs {width} logits while model.config.num_labels = {st.num_classes}: the config "
                "was changed after the model was built (pass num_labels/id2label to from_pretrained)"
            )
            st.num_classes = width
    elif st.outputs.ndim >= 2:
        st.num_classes = int(st.outputs.shape[-1])
        st.num_classes_source = f"the model's output width {st.num_classes}"
    h.detail(f"model outputs on the batch: {ku.describe(logits)}; first row {ku.short(st.outputs[:1])}")
