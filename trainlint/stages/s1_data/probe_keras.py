"""Keras probe, data stage (child side: stdlib + TF only).

``check_label_range``: TL106 (confirms TL301) — integer labels outside ``[0, num_classes)`` over the
dataset: the whole label column when the ``tf.data.Dataset`` came from ``Dataset.to_tf_dataset``
(read from the Arrow table, cheap), else a bounded scan of the ``tf.data.Dataset``, else the whole
``y`` array. ``num_classes`` is ``config.num_labels`` for transformers models, else the output width.
On CPU an out-of-range label makes the loss raise ``InvalidArgumentError``; on GPU it gives NaN
per-sample losses (the course's case). Both are reported the same way, with the offending labels.
"""

from __future__ import annotations

import time
from typing import Any

from trainlint.probe.child import keras_util as ku
from trainlint.probe.child.harness import Harness
from trainlint.probe.child.points import FIT_BATCH, DatasetRecord, KerasState
from trainlint.probe.child.registry import check

SCAN_MAX_BATCHES = 200
SCAN_MAX_ROWS = 50_000
SCAN_MAX_SECONDS = 10.0


def _arrow_counts(ds: Any, column: str) -> dict[Any, int] | None:
    """Value counts of a scalar label column, read from the Arrow table (no row decoding)."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError:
        return None
    table = getattr(ds, "data", None)
    if table is None:
        return None
    arr = table.column(column)
    if not (pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type)):
        return None
    indices = getattr(ds, "_indices", None)
    if indices is not None:  # a select()/shuffle() view: the rows it sees
        arr = pc.take(arr, indices.column(0))
    out: dict[Any, int] = {}
    for item in pc.value_counts(arr).to_pylist():
        if item["values"] is not None:
            out[item["values"]] = out.get(item["values"], 0) + int(item["counts"])
    return out


def _column_counts(h: Harness, st: KerasState) -> tuple[dict[Any, int], str] | None:
    """Label counts over the whole label column of the ``datasets.Dataset`` behind the
    ``tf.data.Dataset`` (recorded before the probe's ``load_dataset`` row cut when there was one)."""
    info = st.dataset_info
    if not info or info.get("hf_dataset") is None:
        return None
    hf = info["hf_dataset"]
    if st.label_keys:
        col = st.label_name
    elif info.get("label_cols"):
        col = info["label_cols"][0]
    else:
        return None
    if col not in getattr(hf, "column_names", []):
        return None
    record = h.kept(DatasetRecord)
    if record is not None and record.rows_cut:
        for name in (col, "label", "labels"):
            entry = record.label_columns.get(name)
            if entry and entry.counts:
                sources = ", ".join(entry.sources[:3])
                return dict(entry.counts), (
                    f"the whole '{name}' column of {sources} ({entry.rows} rows, read before the probe's row cut)"
                )
    counts = _arrow_counts(hf, col)
    if counts is None:
        return None
    return counts, f"the whole '{col}' column of the datasets.Dataset ({len(hf)} rows)"


def _scan_dataset(st: KerasState) -> tuple[Any, str] | None:
    import numpy as np

    chunks, rows, batches = [], 0, 0
    t0 = time.monotonic()
    complete = True
    for element in st.dataset:
        features, y, _ = ku.unpack(element)
        if y is not None:
            if isinstance(y, dict) and len(y) == 1:
                y = next(iter(y.values()))
            target = y
        elif st.label_keys and hasattr(features, "keys"):
            target = features[st.label_name]
        else:
            return None
        arr = ku.np_of(target)
        chunks.append(arr.reshape(arr.shape[0], -1) if arr.ndim > 1 else arr)
        rows += arr.shape[0] if arr.ndim else 1
        batches += 1
        if batches >= SCAN_MAX_BATCHES or rows >= SCAN_MAX_ROWS or time.monotonic() - t0 > SCAN_MAX_SECONDS:
            complete = False
            break
    if not chunks:
        return None
    values = np.concatenate(chunks, axis=0)
    what = "all" if complete else "the first (bounded scan)"
    return values, f"{what} {rows} rows of the tf.data.Dataset ({batches} batches)"


def _batch_loss_behaviour(st: KerasState, bad_mask: Any) -> str:
    """What the loss does on the batch with these labels: the CPU error, or NaN samples on a GPU."""
    import numpy as np

    try:
        if st.transformers and hasattr(st.features, "keys"):
            feats = dict(ku.features_without_labels(st))
            feats["labels"] = st.features[st.label_name] if st.label_keys else st.labels
            out = st.model(feats, training=False)
            loss = getattr(out, "loss", None)
            what = f"{type(st.model).__name__}(batch).loss"
        else:
            loss = st.kmod.losses.sparse_categorical_crossentropy(st.labels, st.outputs, from_logits=True)
            what = "sparse categorical cross-entropy on the batch"
        if loss is None:
            return ""
        arr = ku.np_of(loss).reshape(-1)
        nan_idx = np.flatnonzero(~np.isfinite(arr))
        if nan_idx.size:
            return f"{what} is NaN at positions {ku.short(nan_idx)} (per-sample loss {ku.short(arr)})"
        return f"{what} = {ku.short(arr)} (no error on this device)"
    except Exception as exc:  # noqa: BLE001  # the CPU behaviour: InvalidArgumentError
        return f"on this CPU the loss raises {ku.first_line(exc)} (on a GPU these samples get a NaN loss instead)"


def _binary_loss(st: KerasState) -> bool:
    """compile() got a binary loss (binary cross-entropy, binary focal cross-entropy, hinge): one output
    unit then holds two classes."""
    arg = st.compile.get("loss", None) if st.compile else getattr(st.model, "loss", None)
    if arg is None or isinstance(arg, (dict, list, tuple)):
        return False
    name = arg if isinstance(arg, str) else getattr(arg, "__name__", None) or type(arg).__name__
    low = str(name).lower()
    return "binary" in low or "hinge" in low


# After the model stage's forward pass (order 300): the range is the head's output width.
@check(FIT_BATCH, "TL106", "TL301", order=350, phase="data")
def check_label_range(h: Harness, st: KerasState) -> None:
    import numpy as np

    if st.labels is None:
        h.incomplete("label range", "no labels found in the batch", codes=("TL106",))
        return
    labels = st.labels
    if st.num_classes is None:
        h.incomplete("label range", "the number of classes of the model is unknown", codes=("TL106",))
        return
    if not np.issubdtype(labels.dtype, np.integer):
        if st.num_classes == 1 or (labels.ndim >= 2 and labels.shape[-1] == st.num_classes):
            h.checked("TL106")
            return  # regression or one-hot labels: no class index to check
        if np.all(np.mod(labels, 1) == 0):
            labels = labels.astype(np.int64)
        else:
            return
    n_classes = st.num_classes
    if n_classes == 1 and _binary_loss(st):
        # One sigmoid unit with a binary loss (keras-io's text classifiers): the labels are 0 and 1.
        n_classes = 2
        st.num_classes_source += " with a binary loss: labels 0 and 1"
    counted = _column_counts(h, st) if labels.ndim == 1 else None
    if counted is not None:
        counts_map, where = counted
        if any(float(k) != int(k) for k in counts_map):
            return  # not class ids
        uniq = np.array(sorted(int(k) for k in counts_map), dtype=np.int64)
        counts = np.array([sum(c for k, c in counts_map.items() if int(k) == u) for u in uniq])
    else:
        got = _scan_dataset(st) if st.dataset is not None else None
        if got is None:
            values, where = labels, "the batch"
            y_all = st.fit_args.get("y")
            if st.dataset is None and y_all is not None and ku.is_tensorlike(y_all):
                values, where = ku.np_of(y_all), f"the whole y array ({len(ku.np_of(y_all))} rows)"
        else:
            values, where = got
        values = np.asarray(values)
        if not np.issubdtype(values.dtype, np.integer):
            values = values.astype(np.int64)
        flat = values.reshape(-1)
        if values.ndim >= 2:  # token-level labels: -100 is the ignore index
            flat = flat[flat != -100]
        uniq, counts = np.unique(flat, return_counts=True)
    hist = ", ".join(f"{int(u)}: {int(c)}" for u, c in list(zip(uniq, counts))[:12])
    bad_values = [int(u) for u in uniq if u < 0 or u >= n_classes]
    # Which rows of the batch the checks after this one must leave out.
    batch_vals = labels if labels.ndim == 1 else labels.reshape(labels.shape[0], -1)
    if batch_vals.ndim == 1:
        bad_rows = (batch_vals < 0) | (batch_vals >= n_classes)
    else:
        bad_rows = (((batch_vals < 0) & (batch_vals != -100)) | (batch_vals >= n_classes)).any(axis=1)
    if not bad_values:
        h.checked("TL106", "TL301")
        h.note(f"labels over {where}: {{{hist}}}; {st.num_classes_source}")
        return
    st.out_of_range = bad_rows if bad_rows.any() else None
    n_bad = int(sum(int(c) for u, c in zip(uniq, counts) if int(u) in bad_values))
    batch_pos = np.flatnonzero(bad_rows)
    in_batch = (
        f"; in the first batch at positions {ku.short(batch_pos)} (labels {ku.short(batch_vals[batch_pos])})"
        if batch_pos.size
        else "; none in the first batch"
    )
    behaviour = _batch_loss_behaviour(st, bad_rows) if batch_pos.size else ""
    upper = [v for v in bad_values if v >= n_classes]
    fix = (
        f"the data has at least {max(upper) + 1} classes: set num_labels={max(upper) + 1}"
        + (" in from_pretrained" if st.transformers else " (the width of the output layer)")
        if upper
        else "labels must be class indices in [0, num_labels)"
    )
    h.finding(
        "TL106",
        f"labels {bad_values} are outside [0, {n_classes}) ({st.num_classes_source}): {fix}",
        evidence=(
            f"labels over {where}: {{{hist}}}; {n_bad} rows have a label outside [0, {n_classes}) "
            f"({st.num_classes_source}){in_batch}" + (f"; {behaviour}" if behaviour else "")
        ),
        line=st.line,
        confirms=["TL301"] if upper else [],
    )
