"""Runtime checks of the model stage (child side: standard library + frameworks only).

- the forward pass on one batch on the CPU (errors mapped: label index out of range → TL106/TL301,
  unexpected keyword → TL207);
- TL305: every parameter frozen; TL308: trainable parameters with no gradient or a non-finite one;
- TL305 as a script error: DistributedDataParallel refuses to wrap a model with no trainable parameter.
"""

from __future__ import annotations

import re
from typing import Any

from trainlint.probe.child.harness import Harness
from trainlint.probe.child.points import SCRIPT_EXCEPTION, TRAINER_BATCH, Classification, ScriptError, TrainerState
from trainlint.probe.child.registry import check
from trainlint.probe.child.torch_util import classes_of, error_text, no_loss_message, unwrap_model


@check(TRAINER_BATCH, "TL207", "TL106", "TL301", "TL707")
def check_forward(h: Harness, st: TrainerState) -> None:
    trainer = st.trainer
    if st.batch is None:
        return
    model = trainer.model
    model.train()
    inputs = trainer._prepare_inputs(dict(st.batch)) if hasattr(trainer, "_prepare_inputs") else dict(st.batch)
    st.inputs = inputs
    try:
        loss, outputs = trainer.compute_loss(model, dict(inputs), return_outputs=True)
    except Exception as exc:  # noqa: BLE001
        _forward_error(h, st, exc)
        st.stop = True
        return
    st.loss = loss
    st.outputs = outputs
    h.checked("TL207")
    h.detail(f"forward on one batch: loss {float(loss.detach().float().mean()):.4f}")


def label_error(exc: BaseException, labels: Any, model: Any) -> tuple[str, str] | None:
    """(message, evidence) of a forward/loss error caused by a label outside the head's range, else None.
    The number of classes is read from the head itself (its ``out_features``) and a disagreeing
    ``config.num_labels`` is named."""
    m = re.search(r"Target (-?\d+) is out of bounds", str(exc))
    if not (m or isinstance(exc, IndexError) and "out of bounds" in str(exc)):
        return None
    n, source, mismatch = classes_of(model)
    shown = labels.reshape(-1).tolist()[:16] if labels is not None and hasattr(labels, "reshape") else []
    label = m.group(1) if m else "?"
    message = f"label {label} is outside [0, {n}) of the classification head" + (
        f": {mismatch}" if mismatch else f" ({source})")
    evidence = f"batch labels {shown}; {source}" + (f"; {mismatch}" if mismatch else "") + f"; {error_text(exc)}"
    return message, evidence


def _forward_error(h: Harness, st: TrainerState, exc: Exception) -> None:
    text = error_text(exc)
    model = unwrap_model(st.trainer.model)
    labels = st.inputs.get("labels") if st.inputs else None
    got = label_error(exc, labels, model)
    if got is not None:
        message, evidence = got
        h.finding("TL106", f"the forward pass fails on one batch: {message}", evidence=evidence, line=st.line,
                  confirms=("TL301",))
        return
    m = re.search(r"unexpected keyword argument '([^']+)'", str(exc))
    if isinstance(exc, TypeError) and m:
        h.finding(
            "TL207",
            f"batch key `{m.group(1)}` is not an argument of {type(model).__name__}.forward",
            evidence=f"batch keys {list(st.inputs or {})}; {text}",
            line=st.line,
        )
        return
    if "did not return a loss" in str(exc):
        keys = list(st.inputs or {})
        h.finding("TL707", no_loss_message(keys), evidence=f"batch keys {keys}; {text}", line=st.line)
        return
    line = h.user_line(exc.__traceback__) or st.line
    h.finding(
        "TL707",
        f"the forward pass fails on one training batch (CPU): {text}",
        evidence=text + (f" at {h.where(line)}" if line != st.line else ""),
        line=line,
    )


@check(TRAINER_BATCH, "TL305", "TL308", "TL707", order=450, phase="gradients")
def check_gradients(h: Harness, st: TrainerState) -> None:
    import torch

    if st.loss is None:
        return
    model = st.trainer.model
    params = list(model.named_parameters())
    trainable = [(n, p) for n, p in params if p.requires_grad]
    if not trainable:
        h.finding(
            "TL305",
            f"no trainable parameters: all {len(params)} parameters of {type(unwrap_model(model)).__name__} "
            "have requires_grad=False",
            evidence=f"0 of {len(params)} parameters ({sum(p.numel() for _, p in params)} values) require grad",
            line=st.line,
        )
        st.stop = True
        return
    h.checked("TL305")
    model.zero_grad(set_to_none=True)
    loss = st.loss
    if loss.dim() > 0:
        loss = loss.mean()
    if not loss.requires_grad:
        h.finding(
            "TL308",
            "the loss does not depend on any trainable parameter (no graph to back-propagate)",
            evidence=f"loss {float(loss):.4f} has requires_grad=False; {len(trainable)} trainable parameters",
            line=st.line,
        )
        st.stop = True
        return
    try:
        loss.backward()
    except Exception as exc:  # noqa: BLE001  # training would fail on exactly this
        line = h.user_line(exc.__traceback__) or st.line
        h.finding("TL707", f"loss.backward() fails on one training batch: {error_text(exc)}",
                  evidence=f"{error_text(exc)} at {h.where(line)}", line=line)
        st.stop = True
        return
    no_grad = [n for n, p in trainable if p.grad is None]
    bad = [n for n, p in trainable if p.grad is not None and not torch.isfinite(p.grad).all()]
    if no_grad or bad:
        parts = []
        if no_grad:
            parts.append(f"{len(no_grad)} of {len(trainable)} trainable parameters got no gradient: {no_grad[:5]}")
        if bad:
            parts.append(f"{len(bad)} got a non-finite gradient: {bad[:5]}")
        h.finding(
            "TL308",
            "; ".join(parts),
            evidence="after loss.backward() on one batch: " + "; ".join(parts),
            line=st.line,
        )
    else:
        h.checked("TL308")
    norm = torch.sqrt(sum((p.grad.float() ** 2).sum() for _, p in trainable if p.grad is not None))
    h.detail(f"gradients: {len(trainable)} trainable parameters, global grad norm {float(norm):.4g}")


@check(SCRIPT_EXCEPTION, "TL305")
def classify_frozen_ddp(h: Harness, err: ScriptError) -> Classification | None:
    """DistributedDataParallel refuses to wrap a model with no trainable parameter (a script error)."""
    exc, text = err.exc, f"{type(err.exc).__name__}: {err.exc}"
    if isinstance(exc, RuntimeError) and "doesn't have any parameter that requires a gradient" in str(exc):
        return Classification(
            "TL305",
            "the model has no trainable parameter: DistributedDataParallel refuses to wrap it (every "
            "parameter has requires_grad=False)",
            f"{text.splitlines()[0][:240]} at {h.where(err.line)}",
        )
    return None
