"""Child-side plugin for Keras loss objects called outside ``fit`` (see ../../PROTOCOL.md).

``fit`` is probed on its batch (``fit.*``); a custom training step computes its loss itself,
``loss_fn(y, model(x))`` inside a ``GradientTape``, eagerly or traced by ``tf.function``. The
cross-entropies built ``from_logits=True`` (``SparseCategoricalCrossentropy``, ``CategoricalCrossentropy``,
``BinaryCrossentropy`` and their focal forms) are observed when called there (``Loss.__call__`` of Keras 3
and of tf-keras), and each call site is announced once as ``keras_loss.call``; calls made while the probe
works (``fit``'s own checks) are not.
"""

from __future__ import annotations

import functools
from typing import Any

from trainlint.probe.child import registry
from trainlint.probe.child.harness import Harness
from trainlint.probe.child.points import KERAS_LOSS_CALL, KerasLossCall

#: the loss classes whose ``from_logits=True`` expects logits
LOGITS_LOSSES = ("SparseCategoricalCrossentropy", "CategoricalCrossentropy", "BinaryCrossentropy",
                 "CategoricalFocalCrossentropy", "BinaryFocalCrossentropy")
MAX_SITES = 16


def install(h: Harness) -> None:
    seen: set[tuple[str, int | None]] = set()
    h.when_imported("keras.src.losses.loss", lambda m: _hook(h, getattr(m, "Loss", None), seen))
    h.when_imported("tf_keras.src.losses", lambda m: _hook(h, getattr(m, "Loss", None), seen))


def _hook(h: Harness, loss_class: Any, seen: set[tuple[str, int | None]]) -> None:
    if loss_class is None or getattr(loss_class.__call__, "_trainlint", False):
        return
    original = loss_class.__call__

    @functools.wraps(original)
    def __call__(self: Any, y_true: Any, y_pred: Any, *args: Any, **kwargs: Any) -> Any:
        if not h.is_busy() and not h.ended() and len(seen) < MAX_SITES:
            h.guarded("keras loss call", _on_call, h, seen, self, y_pred)
        return original(self, y_true, y_pred, *args, **kwargs)

    __call__._trainlint = True  # type: ignore[attr-defined]
    loss_class.__call__ = __call__


def _on_call(h: Harness, seen: set[tuple[str, int | None]], loss: Any, y_pred: Any) -> None:
    kind = type(loss).__name__
    if kind not in LOGITS_LOSSES:
        return
    fn_kwargs = getattr(loss, "_fn_kwargs", None) or {}
    if not (fn_kwargs.get("from_logits") or getattr(loss, "from_logits", False)):
        return
    line = h.user_line()
    if (kind, line) in seen:
        return
    seen.add((kind, line))
    with h.busy():
        registry.announce(h, KERAS_LOSS_CALL, KerasLossCall(loss, kind, y_pred, line))
