"""Keras probe, batching stage: the batch ``fit`` really receives (child side: stdlib + TF only).

- ``take_batch``: one real batch from what was passed to ``fit`` (``tf.data.Dataset``, a Keras
  ``PyDataset``/``Sequence``, a generator, arrays or dicts of arrays); features vs ``(features, labels)``;
  label keys inside the feature dict. A batch that cannot be formed (ragged rows without a padding
  collator) is TL201.
- ``check_batch``: TL205, ``input_ids`` padded but no ``attention_mask`` in the batch.
"""

from __future__ import annotations

from typing import Any

from trainlint.probe.child import keras_util as ku
from trainlint.probe.child.harness import Harness
from trainlint.probe.child.points import FIT_BATCH, KerasState
from trainlint.probe.child.registry import check


def _label_keys(st: KerasState, features: Any) -> list[str]:
    if not hasattr(features, "keys"):
        return []
    keys = list(features.keys())
    if st.transformers:
        try:
            from transformers.utils import find_labels

            names = list(find_labels(type(st.model)))
        except Exception:  # noqa: BLE001
            names = ["labels"]
        return [k for k in keys if k in names]
    inputs = _model_input_names(st.model)
    return [k for k in keys if k in ku.LABEL_KEY_NAMES and k not in inputs]


def _model_input_names(model: Any) -> set[str]:
    names: set[str] = set()
    for attr in ("input_names",):
        try:
            got = getattr(model, attr, None)
            if got:
                names.update(str(n) for n in got)
        except Exception:  # noqa: BLE001
            pass
    try:
        for t in getattr(model, "inputs", None) or []:
            name = getattr(t, "name", "")
            if name:
                names.add(str(name).split(":")[0])
    except Exception:  # noqa: BLE001
        pass
    return names


@check(FIT_BATCH, "TL201", "TL707", order=200)
def take_batch(h: Harness, st: KerasState) -> None:
    import tensorflow as tf

    x = st.fit_args.get("x")
    if x is None:
        h.incomplete("batch", "model.fit() got no data (x=None): nothing to probe")
        st.stop = True
        return
    y = st.fit_args.get("y")
    sw = st.fit_args.get("sample_weight")
    try:
        if isinstance(x, tf.data.Dataset):
            st.dataset = x
            st.dataset_info = ku.tf_dataset_info(x)
            st.source = "the first batch of the tf.data.Dataset passed to fit"
            element = next(iter(x))
            features, y, sw = ku.unpack(element)
        elif hasattr(x, "__getitem__") and hasattr(x, "__len__") and type(x).__name__ not in ("dict", "list", "tuple") \
                and not ku.is_tensorlike(x) and not hasattr(x, "keys"):
            st.source = f"batch 0 of the {type(x).__name__} passed to fit"
            features, y, sw = ku.unpack(x[0])
        elif hasattr(x, "__next__"):
            st.source = "the first batch of the generator passed to fit"
            features, y, sw = ku.unpack(next(x))
        else:
            bs = int(st.fit_args.get("batch_size") or 32)
            if hasattr(x, "data") and hasattr(x, "keys") and not isinstance(x, dict):  # BatchEncoding
                x = dict(x.data)
            st.source = f"the first {bs} rows of the arrays passed to fit (batch_size={bs})"
            features = ku.take_rows(x, slice(0, bs))
            y = ku.take_rows(y, slice(0, bs)) if y is not None else None
            sw = ku.take_rows(sw, slice(0, bs)) if sw is not None else None
    except Exception as exc:  # noqa: BLE001
        msg = ku.first_line(exc)
        if "same shape" in msg or "non-rectangular" in msg or "must have the same" in msg:
            info = st.dataset_info or {}
            h.finding(
                "TL201",
                "the tf.data.Dataset cannot form a batch: its rows have different lengths and nothing pads "
                "them",
                evidence=f"taking the first batch raised {msg}"
                + (" (to_tf_dataset without a padding collate_fn)" if info and not info.get("collate_fn") else "")
                + "; tokenize with padding or pass collate_fn=DataCollatorWithPadding(tokenizer, return_tensors='np')",
                line=(info.get("line") if info else None) or st.line,
            )
        else:
            line = h.user_line(exc.__traceback__) or st.line
            h.finding(
                "TL707",
                f"model.fit() would fail: no batch can be taken from the data passed to fit: {msg}",
                evidence=f"taking the first batch of {type(x).__name__} raised {msg}"
                + (f" at {h.where(line)}" if line != st.line else ""),
                line=line,
            )
        st.stop = True
        return
    if hasattr(features, "data") and hasattr(features, "keys") and not isinstance(features, dict):
        features = dict(features.data)
    st.features, st.y, st.sample_weight = features, y, sw
    st.raw_batch = (features, y, sw)
    st.label_keys = _label_keys(st, features)
    if y is not None:
        target = y
        if isinstance(y, dict) and len(y) == 1:
            target = next(iter(y.values()))
        if ku.is_tensorlike(target):
            st.labels = ku.np_of(target)
            st.label_name = "y" if not isinstance(y, dict) else next(iter(y))
    elif st.label_keys:
        st.label_name = st.label_keys[0]
        st.labels = ku.np_of(features[st.label_name])
    h.checked("TL201")
    shape = "(features, labels)" if y is not None else "features only (no separate labels)"
    h.note(f"batch ({st.source}): {shape}: {ku.describe(features)}" + (f", labels {ku.describe(y)}" if y is not None else ""))
    if st.labels is not None:
        h.detail(f"labels of the batch ({st.label_name}): {ku.short(st.labels, 32)}")


@check(FIT_BATCH, "TL205", order=201)
def check_batch(h: Harness, st: KerasState) -> None:
    """TL205: ``input_ids`` with padding but no ``attention_mask``."""
    features = st.features
    if not hasattr(features, "keys") or "input_ids" not in features:
        return
    if "attention_mask" in features:
        h.checked("TL205")
        return
    import numpy as np

    ids = ku.np_of(features["input_ids"])
    if ids.ndim != 2 or ids.shape[1] < 2:
        return
    config = getattr(st.model, "config", None)
    if config is not None:
        pad = getattr(config, "pad_token_id", None)
        if pad is None:  # no pad token: token 0 may be a real token (TL303 covers this model)
            return
        pad = int(pad)
    else:
        pad = 0  # plain Keras: the Embedding(mask_zero=True) convention
    edge = (ids[:, -1] == pad) | (ids[:, 0] == pad)  # right or left padding
    has_tokens = (ids != pad).any(axis=1)
    padded_rows = int(np.count_nonzero(edge & has_tokens))
    if padded_rows == 0:
        h.checked("TL205")
        return
    pad_counts = [int(n) for n in (ids == pad).sum(axis=1)[:8]]
    info = st.dataset_info or {}
    cols = info.get("columns")
    where_cols = ""
    if cols is not None:
        where_cols = f"; to_tf_dataset(columns={cols!r})"
        hf = info.get("hf_dataset")
        if hf is not None and "attention_mask" in getattr(hf, "column_names", []):
            where_cols += " leaves out the dataset's attention_mask column"
    h.finding(
        "TL205",
        f"the batch has padded input_ids but no attention_mask: the model attends to the padding tokens "
        f"({padded_rows}/{ids.shape[0]} rows padded)",
        evidence=(
            f"batch keys {sorted(features.keys())}; input_ids {tuple(ids.shape)}, {padded_rows} of "
            f"{ids.shape[0]} rows are padded with pad_token_id {pad} (pad tokens per row: {pad_counts}"
            f"{', ...' if ids.shape[0] > 8 else ''}){where_cols}"
        ),
        line=info.get("line") or st.line,
    )
