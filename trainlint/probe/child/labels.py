"""Label columns of Hugging Face datasets, read cheaply (child side: standard library at import;
pyarrow is imported by the caller's datasets already)."""

from __future__ import annotations

from collections import Counter
from typing import Any

#: The names a label column goes by (the Trainer's default collator renames `label` to `labels`).
LABEL_COLUMNS = ("labels", "label", "label_ids")


def arrow_counts(ds: Any, column: str) -> Counter[Any] | None:
    """Value counts of a scalar label column, read from the Arrow table without decoding rows (None: not a
    scalar numeric column, or more than 10 000 values: a regression target, not class ids)."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
    except ImportError:
        return None
    table = getattr(ds, "data", None)
    if table is None or column not in getattr(ds, "column_names", ()):
        return None
    arr = table.column(column)
    t = arr.type
    if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)):
        return None
    indices = getattr(ds, "_indices", None)
    if indices is not None:  # a select()/shuffle() view: take the rows it sees
        arr = pc.take(arr, indices.column(0))
    counts = pc.value_counts(arr)
    out: Counter[Any] = Counter()
    for item in counts.to_pylist():
        value = item["values"]
        if value is None:
            continue
        if isinstance(value, float) and value.is_integer():
            value = float(value)
        out[value] += int(item["counts"])
        if len(out) > 10_000:
            return None
    return out


def class_names(ds: Any, column: str) -> list[str] | None:
    """The ClassLabel names of ``column``, if it has them."""
    feature = getattr(ds, "features", {}).get(column) if hasattr(ds, "features") else None
    names = getattr(feature, "names", None)
    return list(names) if names else None
