"""Runtime checks of the loss & labels stage (child side: standard library + frameworks only).

- TL405 (confirms TL304): label dtype vs ``problem_type`` (float class ids with num_labels>1 become a
  multi-label BCE problem; integer classes with num_labels=1 become a regression);
- TL406: NaN/inf loss at initialisation, per sample;
- TL407: initial loss far above ln(num_labels) (warning);
- TL406 in a hand-written loop: the loss of the first ``backward()`` is not finite; under autocast(float16)
  emulated in float32 on the CPU, a float16 overflow cannot be confirmed.
"""

from __future__ import annotations

import math
from typing import Any

from trainlint.probe.child.harness import Harness
from trainlint.probe.child.points import (
    CUDA_EMULATED,
    LOOP_BACKWARD,
    TRAINER_BATCH,
    DeviceEmulation,
    LoopState,
    TrainerState,
)
from trainlint.probe.child.registry import check
from trainlint.probe.child.torch_util import format_counts, unwrap_model


@check(TRAINER_BATCH, "TL405", "TL304", order=150, phase="labels")
def check_label_dtype(h: Harness, st: TrainerState) -> None:
    counts = st.label_counts
    config = getattr(unwrap_model(st.trainer.model), "config", None)
    if not counts or config is None:
        return
    num_labels = getattr(config, "num_labels", None)
    problem_type = getattr(config, "problem_type", None)
    floats = any(isinstance(v, float) for v in counts)
    integral = all(float(v).is_integer() for v in counts)
    if floats and num_labels and num_labels > 1 and problem_type in (None, "multi_label_classification") and integral:
        h.finding(
            "TL405",
            f"scalar float labels with num_labels={num_labels}: transformers treats them as multi-label "
            "classification (BCEWithLogitsLoss), not as class ids",
            evidence=f"label values (float): {format_counts(counts)}; problem_type={problem_type!r}",
            line=st.line,
        )
        st.stop = True
        return
    if not floats and num_labels == 1 and problem_type in (None, "regression") and len(counts) >= 2:
        h.finding(
            "TL405",
            f"integer class labels with num_labels=1: transformers trains a regression (MSELoss) on the class ids "
            f"({len(counts)} distinct values)",
            evidence=f"label values (int): {format_counts(counts)}; num_labels=1, problem_type={problem_type!r}",
            line=st.line,
            confirms=("TL304",),
        )
        return
    h.checked("TL405", "TL304")


@check(TRAINER_BATCH, "TL406", "TL407")
def check_loss(h: Harness, st: TrainerState) -> None:
    import torch
    import torch.nn.functional as F

    loss = st.loss
    if loss is None:
        return
    value = float(loss.detach().float().mean())
    logits = getattr(st.outputs, "logits", None) if st.outputs is not None else None
    if logits is None and isinstance(st.outputs, dict):
        logits = st.outputs.get("logits")
    labels: Any = (st.inputs or {}).get("labels")
    per_sample = None
    if logits is not None and labels is not None and logits.dim() == 2 and labels.dim() == 1:
        with torch.no_grad():
            if not labels.is_floating_point() and logits.shape[-1] > 1:
                safe = labels.clone()
                valid = (safe >= 0) & (safe < logits.shape[-1])
                safe[~valid] = -100
                per_sample = F.cross_entropy(logits.float(), safe, reduction="none", ignore_index=-100)
            elif logits.shape[-1] == 1:
                per_sample = (logits.float().squeeze(-1) - labels.float()) ** 2
    if not math.isfinite(value) or (per_sample is not None and not torch.isfinite(per_sample).all()):
        ev = f"loss on one batch at initialisation = {value}"
        if per_sample is not None:
            idx = torch.nonzero(~torch.isfinite(per_sample)).flatten().tolist()
            ev += f"; non-finite per-sample loss at batch indices {idx[:16]} (labels {labels[idx].tolist()[:16]})"
        if logits is not None and not torch.isfinite(logits).all():
            ev += "; the logits themselves contain NaN/inf"
        h.finding("TL406", f"the loss is not finite at initialisation ({value})", evidence=ev, line=st.line)
        st.stop = True
        return
    h.checked("TL406")
    # TL407: a fresh classification head predicts ~uniformly: loss ≈ ln(C).
    config = getattr(unwrap_model(st.trainer.model), "config", None)
    num_labels = getattr(config, "num_labels", 0) or 0
    problem_type = getattr(config, "problem_type", None)
    if (
        logits is not None
        and labels is not None
        and num_labels > 1
        and not labels.is_floating_point()
        and problem_type in (None, "single_label_classification")
    ):
        expected = math.log(num_labels)
        if value > 2.5 * expected + 0.5:
            h.finding(
                "TL407",
                f"initial loss {value:.3f} is far above ln({num_labels}) = {expected:.3f} expected for a "
                f"freshly initialised {num_labels}-class head",
                evidence=f"loss on one batch = {value:.4f}; ln(num_labels) = {expected:.4f}",
                line=st.line,
            )
            return
    h.checked("TL407")


@check(LOOP_BACKWARD, "TL406")
def check_first_loss_finite(h: Harness, loop: LoopState) -> None:
    """TL406: the loss of the first backward() of a hand-written loop is NaN/inf."""
    import torch

    tensor, line = loop.tensor, loop.line
    if loop.backwards != 1 or tensor is None or tensor.numel() < 1:
        return
    value = tensor.detach().float()
    if not bool(torch.isfinite(value).all()):
        h.finding(
            "TL406",
            f"the loss is not finite at the first training step ({value.flatten()[:4].tolist()})",
            evidence=f"loss.backward() at {h.where(line)} on a loss of {value.flatten()[:4].tolist()}",
            line=line,
        )
    else:
        h.checked("TL406")


@check(CUDA_EMULATED, cannot_confirm=("TL406",))
def float16_overflow_not_seen_on_cpu(h: Harness, emulated: DeviceEmulation) -> None:
    """float16 autocast ran as float32 on the CPU: a non-finite loss in float16 cannot be confirmed."""
    if emulated.fp16 and "TL406" in h.config.static_codes:
        h.incomplete("float16 overflow", "autocast(float16) ran as float32 on the CPU: a non-finite "
                     "loss in float16 could not be confirmed on CPU", ["TL406"])
