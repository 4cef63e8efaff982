"""Runtime checks of the loss & labels stage (child side: standard library + frameworks only).

- TL405 (confirms TL304): label dtype vs ``problem_type`` (float class ids with num_labels>1 become a
  multi-label BCE problem; integer classes with num_labels=1 become a regression);
- TL406: NaN/inf loss at initialisation, per sample; a loss of exactly 0; every label of the batch -100;
- TL407: initial loss far above ln(C) (warning), C from the model's task: the vocabulary of a language-model
  head, ``num_labels`` of a classification head, no expectation otherwise;
- TL406 in a hand-written loop: the loss of the first ``backward()`` is not finite or exactly 0; under
  autocast(float16) emulated in float32 on the CPU, a float16 overflow cannot be confirmed;
- TL403 / TL409 on every torch path (``loss.call``): what a loss function got as its prediction, from its
  autograd graph (a softmax or sigmoid under reshapes) or, without one, from its values: probabilities
  into a logits loss (TL403), sigmoids into a softmax loss or raw scores into ``nll_loss`` (TL409).
"""

from __future__ import annotations

import math
from typing import Any

from trainlint.probe.child.harness import Harness
from trainlint.probe.child.points import (
    CUDA_EMULATED,
    LOOP_BACKWARD,
    LOSS_CALL,
    MADE_AT,
    TRAINER_BATCH,
    DeviceEmulation,
    LossCall,
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
    if labels is not None and not labels.is_floating_point() and labels.numel() and bool((labels == -100).all()):
        h.finding("TL406", f"every label of the training batch is -100 (ignored): the loss ({value}) is computed from "
                  "no token, nothing is learned from this batch",
                  evidence=f"labels of shape {tuple(labels.shape)}, all -100 (the prompt masked and the answer cut by "
                  f"truncation, a response template not found, ...); loss = {value}", line=st.line)
        st.stop = True
        return
    if value == 0.0:
        h.finding("TL406", "the loss is exactly 0 on the first batch: no gradient, nothing is learned",
                  evidence=f"loss on one batch at initialisation = {value}", line=st.line)
        st.stop = True
        return
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
    # TL407: a fresh head predicts ~uniformly over its classes: loss ≈ ln(C), C from the model's task.
    model = unwrap_model(st.trainer.model)
    chance = chance_classes(model, logits, labels)
    if chance is None:
        return  # a task whose loss at chance the probe does not know: no expectation, no verdict
    classes, what = chance
    expected = math.log(classes)
    if value > 2.5 * expected + 0.5:
        h.finding(
            "TL407",
            f"initial loss {value:.3f} is far above ln({classes}) = {expected:.3f} expected for a "
            f"freshly initialised head over {what}",
            evidence=f"loss on one batch = {value:.4f}; ln({classes}) = {expected:.4f} ({what})",
            line=st.line,
        )
        return
    h.checked("TL407")


#: heads whose loss is a cross-entropy over ``config.num_labels`` classes
_CLASSIFIERS = ("ForSequenceClassification", "ForTokenClassification", "ForImageClassification",
                "ForAudioClassification")


def chance_classes(model: Any, logits: Any, labels: Any) -> tuple[int, str] | None:
    """The number of classes a freshly initialised head spreads its probability over, from the model's
    task, and in words: the vocabulary of a language-model head, ``num_labels`` of a classification
    head; None where the task is not one of these (its loss at chance is unknown)."""
    if logits is None or labels is None or labels.is_floating_point() or logits.dim() < 2:
        return None
    width = int(logits.shape[-1])
    if width < 2 or logits.dim() != labels.dim() + 1:
        return None
    config = getattr(model, "config", None)
    name = type(model).__name__
    head = None
    try:
        head = model.get_output_embeddings()
    except Exception:  # noqa: BLE001  # not a transformers model, or no LM head
        head = None
    if head is not None and getattr(head, "out_features", getattr(head, "num_embeddings", None)) == width:
        return width, f"a vocabulary of {width} tokens (language-model head of {name})"
    num_labels = getattr(config, "num_labels", None)
    problem_type = getattr(config, "problem_type", None)
    if (name.endswith(_CLASSIFIERS) and num_labels == width
            and problem_type in (None, "single_label_classification")):
        return width, f"{width} classes (num_labels of {name})"
    return None


@check(LOOP_BACKWARD, "TL406")
def check_first_loss_finite(h: Harness, loop: LoopState) -> None:
    """TL406: the loss of the first backward() of a hand-written loop is NaN/inf, or exactly 0."""
    import torch

    tensor, line = loop.tensor, loop.line
    if loop.backwards != 1 or tensor is None or tensor.numel() < 1:
        return
    value = tensor.detach().float()
    if value.numel() == 1 and float(value) == 0.0:
        h.finding(
            "TL406",
            "the loss is exactly 0 at the first training step: no gradient, nothing is learned",
            evidence=f"loss.backward() at {h.where(line)} on a loss of 0.0",
            line=line,
        )
    elif not bool(torch.isfinite(value).all()):
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


# ---------------------------------------------------------------- what a loss function is given

#: autograd nodes that only move, cast or reshape values: the activation below them is what the loss got
_SHAPE_OPS = frozenset({
    "View", "Reshape", "ReshapeAlias", "UnsafeView", "Transpose", "Permute", "T", "Select", "Slice", "Index",
    "Squeeze", "Unsqueeze", "Clone", "ToCopy", "Expand", "Alias", "AsStrided", "Unbind", "Split", "SplitWithSizes",
    "Narrow", "Flatten", "Unflatten", "Contiguous", "Copy", "Copies",
})
#: what each observed loss expects of its prediction
_EXPECTS = {
    "cross_entropy": "logits (it applies log-softmax itself)",
    "nll_loss": "log-probabilities (a log_softmax)",
    "binary_cross_entropy_with_logits": "logits (it applies a sigmoid itself)",
    "binary_cross_entropy": "probabilities in [0, 1]",
}


def produced_by(tensor: Any) -> tuple[str | None, list[str], int | None]:
    """The activation that made ``tensor`` (``softmax``, ``log_softmax``, ``sigmoid``), followed down its
    autograd graph through reshapes and casts, the nodes walked and the script's line that applied it
    (when recorded); (None, nodes, None) when another operation made it, (None, [], None) without a graph."""
    node = getattr(tensor, "grad_fn", None)
    walked: list[str] = []
    while node is not None and len(walked) < 64:
        kind = type(node).__name__
        walked.append(kind)
        base = kind.split("Backward", 1)[0]
        if base in ("Softmax", "LogSoftmax", "Sigmoid"):
            made = {"Softmax": "softmax", "LogSoftmax": "log_softmax", "Sigmoid": "sigmoid"}[base]
            return made, walked, _line_of(node)
        if base == "Exp":  # exp(log_softmax(x)) is a softmax
            below = _first_input(node)
            if below is not None and type(below).__name__.startswith("LogSoftmaxBackward"):
                walked.append(type(below).__name__)
                return "softmax", walked, _line_of(node) or _line_of(below)
            return None, walked, None
        if base not in _SHAPE_OPS:
            return None, walked, None
        node = _first_input(node)
    return None, walked, None


def _line_of(node: Any) -> int | None:
    try:
        line = node.metadata.get(MADE_AT)
    except Exception:  # noqa: BLE001  # a node without metadata
        return None
    return line if isinstance(line, int) else None


def _first_input(node: Any) -> Any:
    for nxt, _ in getattr(node, "next_functions", ()):
        if nxt is not None:
            return nxt
    return None


def _class_dim(x: Any) -> int:
    return 1 if x.dim() >= 2 else 0


def _is_distribution(x: Any) -> bool:
    """Rows of probabilities over the class dimension: in [0, 1], summing to 1."""
    import torch

    if x.dim() < 1 or x.shape[_class_dim(x)] < 2 or not x.is_floating_point():
        return False
    v = x.detach().float()
    if not bool(torch.isfinite(v).all()) or float(v.min()) < -1e-6 or float(v.max()) > 1 + 1e-6:
        return False
    return float((v.sum(dim=_class_dim(v)) - 1).abs().max()) < 1e-3


def _is_log_distribution(x: Any) -> bool:
    """Rows of log-probabilities over the class dimension: their logsumexp is 0."""
    import torch

    if x.dim() < 1 or x.shape[_class_dim(x)] < 2 or not x.is_floating_point():
        return True  # not a class dimension the probe can read: no verdict
    v = x.detach().float()
    if not bool(torch.isfinite(v).all()):
        return True
    return float(torch.logsumexp(v, dim=_class_dim(v)).abs().max()) < 1e-2


def _loss_means(call: LossCall, given: Any, corrected: Any, corrected_fn: str) -> str:
    """The loss as computed, next to the loss on the prediction the function expects."""
    import torch
    import torch.nn.functional as F

    with torch.no_grad():
        first = float(getattr(F, call.function)(given.detach().float(), call.target, **call.kwargs))
        second = float(getattr(F, corrected_fn)(corrected, call.target, **call.kwargs))
    return f"loss as computed {first:.4g}; on the corrected prediction {second:.4g}"


def _range(x: Any) -> str:
    v = x.detach().float()
    return f"values in [{float(v.min()):.3g}, {float(v.max()):.3g}]"


@check(LOSS_CALL, "TL403", "TL409")
def check_loss_input(h: Harness, call: LossCall) -> None:
    """TL403: probabilities (a softmax, a sigmoid) into a loss that expects logits or log-probabilities;
    TL409: sigmoids into a softmax loss, raw scores into ``nll_loss``."""
    import torch

    x, name = call.input, call.function
    if not isinstance(x, torch.Tensor) or not isinstance(call.target, torch.Tensor) or x.numel() == 0:
        return
    made, walked, made_at = produced_by(x)
    graph = " ← ".join(walked[:6]) if walked else ""
    how = f"autograd graph {graph}" if made else ""
    if made is None and not walked and name in ("cross_entropy", "nll_loss") and _is_distribution(x):
        made, how = "softmax", "rows in [0, 1] summing to 1, no autograd graph"
        recorded = getattr(x, MADE_AT, None)
        made_at = recorded if isinstance(recorded, int) else None
    fn = f"F.{name}"
    where = h.where(call.line)
    if made_at is not None:
        how += f", applied at {h.where(made_at)}"
    line = made_at or call.line  # the line that made the wrong prediction, else the loss's
    target_float = call.target.is_floating_point()
    if made in ("softmax", "sigmoid") and (("TL403", line) in call.reported or ("TL409", line) in call.reported):
        return  # this activation was reported at another loss already
    if made == "softmax" and name in ("cross_entropy", "nll_loss", "binary_cross_entropy_with_logits"):
        call.reported.add(("TL403", line))
        detail = ""
        try:
            if name == "cross_entropy" and not target_float:
                classes = int(x.shape[_class_dim(x)])
                floor = math.log(1 + (classes - 1) / math.e)
                detail = (f"; {_loss_means(call, x, torch.log(x.detach().float().clamp_min(1e-12)), 'cross_entropy')}"
                          f" (the log of the probabilities: the logits up to a constant); on probabilities it can "
                          f"never go below ln(1 + {classes - 1}/e) = {floor:.3f}")
            elif name == "nll_loss":
                detail = (f"; {_loss_means(call, x, torch.log(x.detach().float().clamp_min(1e-12)), 'nll_loss')}"
                          " (on their log): on probabilities the loss is -p, between -1 and 0")
        except Exception:  # noqa: BLE001  # the numbers are evidence, not the finding
            detail = ""
        h.finding(
            "TL403",
            f"{fn} is given the output of a softmax, but it expects {_EXPECTS[name]}: the probabilities are "
            f"squashed a second time and the gradients vanish; give it the logits"
            + (" (log_softmax for nll_loss)" if name == "nll_loss" else ""),
            evidence=f"{fn} at {where}: its input comes from a softmax ({how}), {_range(x)}{detail}",
            line=line,
        )
        return
    if made == "sigmoid" and name == "binary_cross_entropy_with_logits":
        call.reported.add(("TL403", line))
        detail = ""
        try:
            p = x.detach().float().clamp(1e-6, 1 - 1e-6)
            detail = f"; {_loss_means(call, x, torch.log(p / (1 - p)), name)} (the logit of the sigmoid)"
        except Exception:  # noqa: BLE001
            detail = ""
        h.finding(
            "TL403",
            f"{fn} is given the output of a sigmoid, but it applies a sigmoid itself: the loss sees "
            f"sigmoid(sigmoid(x)) in [0.5, 0.73] and cannot approach zero; give it the logits",
            evidence=f"{fn} at {where}: its input comes from a sigmoid ({how}), {_range(x)}{detail}",
            line=line,
        )
        return
    h.checked("TL403")
    if made == "sigmoid" and name in ("cross_entropy", "nll_loss"):
        call.reported.add(("TL409", line))
        h.finding(
            "TL409",
            f"{fn} is given independent sigmoid scores, but it expects {_EXPECTS[name]} of one softmax "
            "distribution over the classes",
            evidence=f"{fn} at {where}: its input comes from a sigmoid ({how}), {_range(x)}",
            line=line,
        )
        return
    if name == "nll_loss" and made != "log_softmax" and not _is_log_distribution(x):
        v = x.detach().float()
        lse = torch.logsumexp(v, dim=_class_dim(v))
        h.finding(
            "TL409",
            f"{fn} is given raw scores, not log-probabilities: the loss is minus the score of the right "
            "class, unbounded below; apply log_softmax first (or use F.cross_entropy on the scores)",
            evidence=(f"{fn} at {where}: {_range(x)}, the logsumexp of each row is "
                      f"[{float(lse.min()):.3g}, {float(lse.max()):.3g}] (0 for log-probabilities)"
                      + (f"; made by {graph}" if graph else "")),
            line=call.line,
        )
        return
    h.checked("TL409")
