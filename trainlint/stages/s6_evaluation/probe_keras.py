"""Keras probe, evaluation stage (child side: stdlib + TF only).

``check_validation_data`` (TL608): ``fit``'s ``validation_data`` is its training data: the same object
(a ``tf.data.Dataset``, the arrays of ``x``), or arrays whose first rows are all training rows.
"""

from __future__ import annotations

from typing import Any

from trainlint.probe.child import keras_util as ku
from trainlint.probe.child.examples import shared
from trainlint.probe.child.harness import Harness
from trainlint.probe.child.points import FIT_BATCH, KerasState
from trainlint.probe.child.registry import check


def _rows(x: Any, y: Any) -> list[Any] | None:
    """The rows of array data (x, and y beside it), or None when ``x`` is not arrays."""
    arrays = list(x.values()) if isinstance(x, dict) else list(x) if isinstance(x, (list, tuple)) else [x]
    if y is not None:
        arrays.append(y)
    arrays = [ku.np_of(a) for a in arrays]
    if not arrays or not all(hasattr(a, "shape") and len(a.shape) >= 1 for a in arrays):
        return None
    n = min(len(a) for a in arrays)
    return [tuple(a[i] for a in arrays) for i in range(min(n, 2000))]


def _same(x: Any, y: Any, validation: Any) -> str | None:
    if validation is None or x is None:
        return None
    if isinstance(validation, (tuple, list)) and validation and not ku.is_tensorlike(validation):
        vx, vy = validation[0], validation[1] if len(validation) > 1 else None
    else:
        vx, vy = validation, None
    if vx is x:
        return "the same object"
    if ku.is_tensorlike(x) or isinstance(x, (dict, list, tuple)):
        try:
            train, evaluation = _rows(x, y if vy is not None else None), _rows(vx, vy)
        except Exception:  # noqa: BLE001  # not arrays: a dataset or a generator, compared by identity only
            return None
        if train and evaluation:
            found, compared = shared(train, evaluation)
            if compared >= 4 and found == compared:
                return f"the same examples: each of the first {compared} validation rows is a training row"
    return None


@check(FIT_BATCH, "TL608", order=690, phase="evaluation data")
def check_validation_data(h: Harness, st: KerasState) -> None:
    """TL608: fit(validation_data=...) is the training data."""
    validation = st.fit_args.get("validation_data")
    if validation is None:
        return
    how = _same(st.fit_args.get("x"), st.fit_args.get("y"), validation)
    if how is None:
        h.checked("TL608")
        return
    h.finding(
        "TL608",
        f"fit() validates on its training data: validation_data is {how.split(':')[0]} as x, so val_loss and the "
        "validation metrics measure memorisation, not generalisation",
        evidence=f"validation_data {ku.describe(validation)}; x {ku.describe(st.fit_args.get('x'))}: {how}",
        line=st.line,
    )
