"""Small helpers shared by the Keras probe checks (``stages/s*/probe_keras.py``). Child side: standard
library, numpy and tensorflow only, imported lazily (the caller has already imported them)."""

from __future__ import annotations

import math
import re
from typing import Any

LABEL_KEY_NAMES = ("labels", "label", "target", "targets", "y", "class", "classes")


def np_of(value: Any) -> Any:
    import numpy as np

    if hasattr(value, "numpy"):
        value = value.numpy()
    return np.asarray(value)


def is_tensorlike(value: Any) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype")


def batch_len(structure: Any) -> int | None:
    """The leading dimension of the first tensor in a (nested) batch."""
    import tensorflow as tf

    for leaf in tf.nest.flatten(structure):
        if is_tensorlike(leaf) and len(leaf.shape) > 0 and leaf.shape[0] is not None:
            return int(leaf.shape[0])
    return None


def take_rows(structure: Any, rows: Any) -> Any:
    """Every tensor of a (nested) batch restricted to ``rows`` (a boolean mask or an index slice)."""
    import numpy as np
    import tensorflow as tf

    n = batch_len(structure)

    def pick(t: Any) -> Any:
        if not is_tensorlike(t) or len(t.shape) == 0 or t.shape[0] != n:
            return t
        if isinstance(rows, slice):
            return t[rows]
        return tf.boolean_mask(t, np.asarray(rows)) if hasattr(t, "numpy") else np.asarray(t)[np.asarray(rows)]

    return tf.nest.map_structure(pick, structure)


def describe(structure: Any) -> str:
    """``dict(input_ids int64 (16, 32), labels int64 (16,))`` — the structure of a batch in one line."""
    if structure is None:
        return "None"
    if isinstance(structure, dict) or hasattr(structure, "keys") and hasattr(structure, "items"):
        inner = ", ".join(f"{k}: {describe(v)}" for k, v in structure.items())
        return "{" + inner + "}"
    if isinstance(structure, (tuple, list)):
        inner = ", ".join(describe(v) for v in structure)
        return ("(" + inner + ")") if isinstance(structure, tuple) else ("[" + inner + "]")
    if is_tensorlike(structure):
        dtype = getattr(structure.dtype, "name", str(structure.dtype))
        shape = tuple(None if d is None else int(d) for d in structure.shape)
        return f"{dtype} {shape}"
    return type(structure).__name__


def short(values: Any, limit: int = 16, digits: int = 4) -> str:
    """A numpy array as a short list: ``[0.6844, nan, 0.6713, ...]``."""
    import numpy as np

    arr = np.asarray(values).reshape(-1)
    out = []
    for v in arr[:limit]:
        if np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.bool_):
            out.append(str(int(v)))
        else:
            f = float(v)
            out.append(f"{f:.{digits}g}" if math.isfinite(f) else str(f))
    more = ", ..." if arr.size > limit else ""
    return "[" + ", ".join(out) + more + "]"


def first_line(exc: BaseException, limit: int = 300) -> str:
    text = str(exc).strip()
    # TensorFlow appends graph-node lines (`[[{{node ...}}]]`); keep the human sentence.
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("[[")]
    line = lines[0] if lines else ""
    for candidate in lines:
        if "Received a label value" in candidate or "Target data is missing" in candidate or "No gradients" in candidate:
            line = candidate
            break
    line = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", line)  # TF op-wrapper prefix
    line = re.sub(r"\s*\[Op:[^\]]*\]?.*$", "", line).strip()  # ... [Op:SparseSoftmaxCrossEntropyWithLogits]
    prefix = f"{type(exc).__name__}: "
    while line.startswith(prefix):  # tf-keras re-raises with the type name inside the message
        line = line[len(prefix):]
    msg = f"{type(exc).__name__}: {line}" if line else type(exc).__name__
    return msg if len(msg) <= limit else msg[: limit - 3] + "..."


def fmt_lr(value: float | None) -> str:
    if value is None:
        return "unknown"
    if value == 0:
        return "0"
    return f"{value:.3g}" if value >= 1e-3 else f"{value:.2e}".replace("e-0", "e-")
