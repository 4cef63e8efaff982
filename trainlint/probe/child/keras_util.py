"""Small helpers shared by the Keras probe checks (``stages/s*/probe_keras.py``). Child side: standard
library, numpy and tensorflow only, imported lazily (the caller has already imported them)."""

from __future__ import annotations

import math
import re
from typing import Any

from trainlint.probe.child.harness import Harness

LABEL_KEY_NAMES = ("labels", "label", "target", "targets", "y", "class", "classes")

#: The tf.data.Dataset objects made by ``to_tf_dataset``: id -> (dataset, info). The dataset is kept
#: alive so that the id stays valid for the short life of the probe.
_TF_DATASETS: dict[int, tuple[Any, dict[str, Any]]] = {}


def remember_tf_dataset(result: Any, info: dict[str, Any]) -> None:
    _TF_DATASETS[id(result)] = (result, info)


def tf_dataset_info(obj: Any) -> dict[str, Any] | None:
    """What ``Dataset.to_tf_dataset`` was given for this tf.data.Dataset (the datasets.Dataset, columns)."""
    got = _TF_DATASETS.get(id(obj))
    if got is None or got[0] is not obj:
        return None
    return got[1]




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


# ---------------------------------------------------------------- the optimizer and its learning rate


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
            value = float(np.asarray(np_of(sched(opt.iterations))))
        except Exception:  # noqa: BLE001
            value = None
        peak = None
        for key in ("initial_learning_rate", "maximal_learning_rate"):
            try:
                peak = float(sched.get_config().get(key))
                break
            except Exception:  # noqa: BLE001
                continue
        note = f" (schedule {type(sched).__name__}" + (f", peak {fmt_lr(peak)}" if peak is not None else "") + ")"
        return value, note
    for attr in ("learning_rate", "lr"):
        try:
            value = getattr(opt, attr)
        except Exception:  # noqa: BLE001
            continue
        if value is None:
            continue
        try:
            return float(np.asarray(np_of(value))), note
        except Exception:  # noqa: BLE001
            continue
    return None, note


def peak_lr(opt: Any, current: float | None) -> float | None:
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


def step_batch(st: Any) -> tuple[Any, Any, Any]:
    """The batch for training steps: rows with an out-of-range label left out."""
    x, y, sw = st.features, st.y, st.sample_weight
    if st.out_of_range is not None:
        keep = ~st.out_of_range
        x = take_rows(x, keep)
        y = take_rows(y, keep) if y is not None else None
        sw = take_rows(sw, keep) if sw is not None else None
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
    return None if value is None else float(np_of(value))


def skip_warmup(h: Harness, st: Any) -> None:
    """A warmup schedule starts at learning rate 0: a first step would move nothing whatever the
    pipeline. Move the optimizer to the first step of the schedule with a non-zero rate."""
    opt: Any = getattr(st.model, "optimizer", None)
    sched = schedule_of(opt) if opt is not None else None
    if sched is None:
        return
    lr, _ = effective_lr(opt)
    if lr is None or lr > 0:
        return
    k = 1
    while k <= 1 << 20:
        try:
            value = float(np_of(sched(k)))
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
        f"(learning_rate {fmt_lr(value)})"
    )




# ---------------------------------------------------------------- batches and outputs


def unpack(element: Any) -> tuple[Any, Any, Any]:
    if isinstance(element, tuple):
        if len(element) == 1:
            return element[0], None, None
        if len(element) == 2:
            return element[0], element[1], None
        if len(element) == 3:
            return element[0], element[1], element[2]
    if isinstance(element, list) and len(element) in (2, 3) and not all(is_tensorlike(e) for e in element):
        return element[0], element[1], (element[2] if len(element) == 3 else None)
    return element, None, None


def features_without_labels(st: Any) -> Any:
    f = st.features
    if hasattr(f, "keys") and st.label_keys:
        return {k: v for k, v in f.items() if k not in st.label_keys}
    return f


def logits_of(out: Any) -> Any:
    """The first non-loss output: ``TFSequenceClassifierOutput.logits``, a tensor, a one-item list/dict."""
    if hasattr(out, "logits") and getattr(out, "logits", None) is not None:
        return out.logits
    if hasattr(out, "keys") and not is_tensorlike(out):
        values = [v for k, v in out.items() if k != "loss"]
        return values[0] if len(values) == 1 else None
    if isinstance(out, (list, tuple)):
        return out[0] if len(out) == 1 else None
    return out




def use_peak_rate(opt: Any) -> str:
    """Move a scheduled optimizer to the step where its schedule peaks (end of warmup, else the initial
    value) for --overfit, and say which rate is used: the current value (warmup near 0, a finished decay)
    says nothing about the pipeline. A constant rate is left as it is."""
    sched = schedule_of(opt)
    current, _ = effective_lr(opt)
    if sched is None:
        return f"learning_rate {fmt_lr(current)}"
    try:
        cfg = sched.get_config()
    except Exception:  # noqa: BLE001
        cfg = {}
    candidates = {0, *(1 << i for i in range(21))}
    for key in ("warmup_steps", "num_warmup_steps"):
        value = cfg.get(key)
        if isinstance(value, (int, float)) and value >= 0:
            candidates.add(int(value))
    best_k, best = None, None
    for k in sorted(candidates):
        try:
            value = float(np_of(sched(k)))
        except Exception:  # noqa: BLE001
            continue
        if best is None or value > best:
            best_k, best = k, value
    if best is None or best_k is None or current is not None and best <= current:
        return f"learning_rate {fmt_lr(current)} ({type(sched).__name__})"
    try:
        opt.iterations.assign(best_k)
    except Exception:  # noqa: BLE001
        return f"learning_rate {fmt_lr(current)} ({type(sched).__name__}; its peak {fmt_lr(best)} could not be set)"
    return (f"the schedule's peak learning_rate {fmt_lr(best)} ({type(sched).__name__} at step {best_k}; "
            f"its current value {fmt_lr(current)} is not used)")
