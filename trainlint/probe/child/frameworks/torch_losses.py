"""Child-side plugin for torch's loss functions (see ../../PROTOCOL.md).

When the script imports torch, the functional losses that take a prediction of a given kind (logits,
log-probabilities, probabilities) are observed: ``cross_entropy``, ``nll_loss``,
``binary_cross_entropy_with_logits`` and ``binary_cross_entropy`` of ``torch.nn.functional``. The ``nn``
loss modules (``nn.CrossEntropyLoss``, ``nn.NLLLoss``, ...) call them through the module, so one hook
sees both spellings, on every path: a Trainer's model, a hand-written loop, a LightningModule's
``training_step``. Each call site (function, the script's line) is announced once as ``loss.call``;
calls made by trainlint's own checks are not observed.

The activations a loss may be given by mistake (``softmax``, ``sigmoid``: the functions, the tensor
methods, and so the ``nn`` modules) note the script's line that applied them on what they return (the
``metadata`` of its autograd node, an attribute of the tensor without one): a finding about what a loss
was given is placed at the line that made it (:data:`MADE_AT`).
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Any

from trainlint.probe.child import registry
from trainlint.probe.child.harness import Harness
from trainlint.probe.child.points import LOSS_CALL, MADE_AT, LossCall

#: the observed functions (their first two parameters: the prediction, the target)
OBSERVED = ("cross_entropy", "nll_loss", "binary_cross_entropy_with_logits", "binary_cross_entropy")
#: at most this many call sites are checked (a script that calls a loss from many places)
MAX_SITES = 32
#: the activations whose line is recorded: (owner, attribute)
ACTIVATIONS = (("nn.functional", "softmax"), ("", "softmax"), ("Tensor", "softmax"), ("", "sigmoid"),
               ("Tensor", "sigmoid"))
_TRAINLINT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def install(h: Harness) -> None:
    h.when_imported("torch", lambda m: _on_torch(h, m))


def _on_torch(h: Harness, torch: Any) -> None:
    functional = torch.nn.functional
    seen: set[tuple[str, int | None]] = set()
    reported: set[tuple[str, int | None]] = set()
    inside = [0]  # a loss computed by a check of a loss call is not observed again

    for name in OBSERVED:
        original = getattr(functional, name, None)
        if original is None:
            continue

        def make(name: str, original: Any) -> Any:
            @functools.wraps(original)
            def observed(*args: Any, **kwargs: Any) -> Any:
                if not inside[0] and not h.ended() and len(seen) < MAX_SITES and _from_outside(sys._getframe(1)):
                    inside[0] += 1
                    try:
                        h.guarded("loss call", _on_call, h, seen, reported, name, args, kwargs)
                    finally:
                        inside[0] -= 1
                return original(*args, **kwargs)

            return observed

        setattr(functional, name, make(name, original))
    for owner_path, attr in ACTIVATIONS:
        owner = torch
        for part in filter(None, owner_path.split(".")):
            owner = getattr(owner, part)
        h.guarded("activation lines", _record_line, h, owner, attr)


def _record_line(h: Harness, owner: Any, attr: str) -> None:
    original = getattr(owner, attr)

    @functools.wraps(original)
    def recorded(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        if not h.ended():
            try:
                frame = h.user_frame()
                if frame is not None:
                    node = getattr(out, "grad_fn", None)
                    if node is not None:
                        node.metadata[MADE_AT] = frame.f_lineno
                    else:
                        setattr(out, MADE_AT, frame.f_lineno)
            except Exception:  # noqa: BLE001  # a line for the evidence is never worth the script's run
                pass
        return out

    setattr(owner, attr, recorded)


def _from_outside(frame: Any) -> bool:
    """The caller is not trainlint (its checks compute losses of their own)."""
    return not frame.f_code.co_filename.startswith(_TRAINLINT + os.sep)


def _on_call(h: Harness, seen: set[tuple[str, int | None]], reported: set[tuple[str, int | None]], name: str,
             args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    line = h.user_line()
    if (name, line) in seen:
        return
    seen.add((name, line))
    input = args[0] if args else kwargs.get("input")
    target = args[1] if len(args) > 1 else kwargs.get("target")
    extra = {k: v for k, v in kwargs.items() if k in ("weight", "ignore_index", "pos_weight")}
    with h.busy():
        registry.announce(h, LOSS_CALL, LossCall(name, input, target, extra, line, reported))
