"""Runtime checks of the optimizer stage (child side: standard library + frameworks only).

- the effective learning rate (confirms TL502 when it is the optimizer class's default, TL503 when
  ≥ 1e-3);
- TL504: an optimizer holding none of the parameters of the model in use;
- TL506: one optimizer step (without the warmup scheduler, whose first rate is often 0) leaves the
  weights unchanged.

In a hand-written loop (the points ``loop.step`` and ``loop.step_done``): the effective learning rate
of the first step; TL504, the optimizer holds other parameters than the model that got gradients;
TL506, the weights the optimizer holds do not move over the observed steps, whatever the cause (no
gradient reached them: ``zero_grad()`` between ``backward()`` and ``step()``, a detached loss, ``step()``
without ``backward()``; a learning rate of 0; a frozen model, confirming TL305), with the cause in the
evidence; TL308, some trainable parameters the optimizer holds get no / a non-finite gradient.
"""

from __future__ import annotations

import inspect
from typing import Any

from trainlint.probe.child.harness import Harness
from trainlint.probe.child.points import LOOP_STEP, LOOP_STEP_DONE, TRAINER_BATCH, LoopState, TrainerState
from trainlint.probe.child.registry import check
from trainlint.probe.child.torch_util import (
    base_lrs,
    error_text,
    is_pretrained,
    moved,
    optimizer_params,
    snapshot,
    unwrap_model,
    use_base_rate,
)


def default_lr(optimizer: Any) -> float | None:
    try:
        p = inspect.signature(type(optimizer).__init__).parameters.get("lr")
    except (TypeError, ValueError):
        return None
    if p is None or p.default is inspect.Parameter.empty:
        return None
    try:
        return float(p.default)
    except (TypeError, ValueError):
        return None


_ADAPTIVE = ("Adam", "AdamW", "Adamax", "NAdam", "RAdam", "RMSprop", "Adagrad", "Adadelta", "Lion", "LAMB", "Lamb")


def _fine_tuning_at_high_rate(optimizer: Any, model: Any, lr: float) -> str | None:
    """Why ``lr`` is too high for this model, or None: an adaptive optimizer at ≥ 1e-3 on a pretrained
    transformers model (not T5-family, usually fine-tuned at 1e-3; not LoRA/PEFT adapters)."""
    if model is None or lr < 1e-3 or not is_pretrained(model):
        return None
    name = type(optimizer).__name__
    if not any(name == a or name.startswith(a) for a in _ADAPTIVE) and "adam" not in name.lower():
        return None
    inner = unwrap_model(model)
    config = getattr(inner, "config", None)
    if str(getattr(config, "model_type", "")).lower() in ("t5", "mt5", "umt5", "byt5", "longt5"):
        return None
    if getattr(inner, "peft_config", None) is not None or any("lora_" in n for n, _ in inner.named_parameters()):
        return None
    source = getattr(config, "_name_or_path", "") or getattr(config, "name_or_path", "")
    return f"{type(inner).__name__} loaded with from_pretrained({source!r})"


def report_lr(h: Harness, optimizer: Any, line: int | None, user_built: bool, model: Any = None) -> float:
    lrs = sorted({float(g.get("lr", 0.0)) for g in optimizer.param_groups})
    # A scheduler keeps the configured rate as `initial_lr`: judge that one (warmup starts at 0).
    bases = sorted({float(g.get("initial_lr", g.get("lr", 0.0))) for g in optimizer.param_groups})
    lr = bases[-1] if bases else 0.0
    name = type(optimizer).__name__
    default = default_lr(optimizer)
    scheduled = f"; scheduler base rate {', '.join(f'{x:g}' for x in bases)}" if bases != lrs else ""
    h.note(f"effective learning rate {', '.join(f'{x:g}' for x in lrs)} ({name}{scheduled})")
    static = set(h.config.static_codes)
    if user_built and default is not None and lr == default and "TL502" in static:
        h.finding(
            "TL502",
            f"{name} runs with its default learning rate {lr:g}",
            evidence=f"optimizer.param_groups lr = {lr:g} = {name}'s default (no lr= given)",
            line=line,
        )
    else:
        h.checked("TL502")
    pretrained = _fine_tuning_at_high_rate(optimizer, model, lr)
    if lr >= 1e-3 and ("TL503" in static or "TL501" in static or pretrained):
        if "TL501" in static:
            h.finding("TL501", f"effective learning rate {lr:g} ({name})", evidence=f"param_groups lr = {lr:g}", line=line)
        if "TL503" in static or pretrained:
            h.finding(
                "TL503",
                f"learning rate {lr:g} ({name}) to fine-tune a pretrained transformer: 10-100x too high "
                "(use 1e-5..1e-4)",
                evidence=f"optimizer.param_groups lr = {lr:g}" + (" (base rate of the scheduler)" if scheduled else "")
                + (f"; the model is {pretrained}" if pretrained else ""),
                line=line,
            )
    else:
        h.checked("TL503", "TL501")
    return lr


@check(TRAINER_BATCH, "TL504", "TL502", "TL503", "TL501", "TL506", "TL707")
def check_trainer_step(h: Harness, st: TrainerState) -> None:
    trainer = st.trainer
    model = trainer.model
    model_params = {id(p) for p in model.parameters()}
    user_built = trainer.optimizer is not None
    if user_built:
        optimizer = trainer.optimizer
        held = optimizer_params(optimizer)
        if held and not any(id(p) in model_params for p in held):
            h.finding(
                "TL504",
                f"the optimizer given to the Trainer holds {len(held)} parameters, none of them in trainer.model: "
                "it was built on another model object",
                evidence=(
                    f"{type(optimizer).__name__} holds {len(held)} tensors; trainer.model "
                    f"({type(model).__name__}) has {len(model_params)}; overlap 0 → optimizer.step() moves nothing"
                ),
                line=st.line,
            )
            st.stop = True
            return
    else:
        optimizer = trainer.create_optimizer()
    h.checked("TL504")
    st.optimizer = optimizer
    lr = report_lr(h, optimizer, st.line, user_built, model=model)
    snap = snapshot(optimizer_params(optimizer))
    if not snap:
        return
    # One step at the base rate: a warmup scheduler's first value (often 0) says nothing about the pipeline.
    rate = use_base_rate(optimizer)
    lr = max(float(g["lr"]) for g in optimizer.param_groups)
    if "base rate" in rate:
        h.note(f"the optimizer step of the probe runs at {rate}")
    try:
        optimizer.step()
    except Exception as exc:  # noqa: BLE001  # training would fail on exactly this
        line = h.user_line(exc.__traceback__) or st.line
        text = error_text(exc)
        h.finding("TL707", f"optimizer.step() fails after one training batch: {text}",
                  evidence=f"{type(optimizer).__name__}.step() raised {text} at {h.where(line)}", line=line)
        st.stop = True
        return
    if moved(snap):
        h.checked("TL506")
        return
    h.finding(
        "TL506",
        f"one optimizer step ({type(optimizer).__name__}, lr={lr:g}) left the weights unchanged",
        evidence=f"{len(snap)} parameters with non-empty gradients compared before/after optimizer.step(): all equal; lr {lr:g}",
        line=st.line,
    )


# ---------------------------------------------------------------- a hand-written loop's optimizer steps


@check(LOOP_STEP, "TL504", "TL506", "TL308", "TL305")
def check_loop_step_gets_gradients(h: Harness, loop: LoopState) -> None:
    """Before ``optimizer.step()``: at the first step, the optimizer holds the trained parameters and
    gradients reached them; at a later one (until the weights were seen to move), gradients reached them."""
    optimizer = loop.stepping
    if loop.steps == 0:
        _check_first_step(h, loop, optimizer)
    elif not loop.reported_506 and not loop.moved_checked and not loop.closure:
        _check_gradients_arrive(h, loop, optimizer, loop.steps + 1)


def _check_gradients_arrive(h: Harness, loop: LoopState, optimizer: Any, step: int) -> bool:
    """TL506 when not one trainable parameter the optimizer holds has a gradient at ``step()``:
    the step cannot move anything. The cause goes into the evidence. True when reported."""
    line = h.user_line()
    held = optimizer_params(optimizer)
    trainable = [p for p in held if p.requires_grad]
    if loop.closure or not trainable or any(p.grad is not None for p in trainable):
        return False
    name = type(optimizer).__name__
    if loop.zero_grad_after_backward is not None:
        cause = (
            f"zero_grad() at {h.where(loop.zero_grad_after_backward)} runs after backward() "
            f"({h.where(loop.backward_line)}) and before step(): it clears every gradient; call it before "
            "the forward pass (or right after step())"
        )
    elif loop.backwards == 0:
        cause = "backward() was never called before step(): nothing computed the gradients"
    else:
        cause = (
            f"backward() at {h.where(loop.backward_line)} ran but no gradient reached the optimizer's "
            "parameters: the loss is detached from them (.detach(), .item(), a tensor rebuilt from numbers, "
            "torch.no_grad()) or computed from another model"
        )
    loop.reported_506 = True
    loop.moved_checked = True
    h.finding(
        "TL506",
        f"the weights never move: at optimizer.step() (step {step}) none of the {len(trainable)} trainable "
        f"parameters {name} holds has a gradient",
        evidence=f"every p.grad is None at {name}.step() ({h.where(line)}); {cause}",
        line=loop.zero_grad_after_backward or line,
        confirms=("TL308",),
    )
    return True


def _check_first_step(h: Harness, loop: LoopState, optimizer: Any) -> None:
    line = h.user_line()
    held = optimizer_params(optimizer)
    with_grad = [p for p in held if p.grad is not None]
    if held and not with_grad:
        others = []
        for name, m in loop.frame_modules(h):
            n = sum(1 for p in m.parameters() if p.grad is not None)
            if n:
                others.append(f"{name} ({type(m).__name__}): {n} parameters with gradients")
        if others:
            h.finding(
                "TL504",
                "optimizer.step() updates parameters that received no gradient: the optimizer was built on "
                "another model object than the one trained",
                evidence=f"the optimizer's {len(held)} parameters have no .grad; " + "; ".join(others[:3]),
                line=line,
            )
            loop.reported_504 = True
            return
    h.checked("TL504")
    if _check_gradients_arrive(h, loop, optimizer, 1):
        return
    # TL308: trainable parameters the optimizer holds that got no / a non-finite gradient.
    import torch

    names: dict[int, str] = {}
    for _, m in loop.frame_modules(h):
        for n, p in m.named_parameters():
            names.setdefault(id(p), n)
    trainable = [p for p in held if p.requires_grad]
    no_grad = [names.get(id(p), "?") for p in trainable if p.grad is None]
    bad = [names.get(id(p), "?") for p in trainable if p.grad is not None and not torch.isfinite(p.grad).all()]
    if with_grad and (no_grad or bad):
        parts = []
        if no_grad:
            parts.append(f"{len(no_grad)} of {len(trainable)} trainable parameters got no gradient: {no_grad[:5]}")
        if bad:
            parts.append(f"{len(bad)} got a non-finite gradient: {bad[:5]}")
        h.finding("TL308", "; ".join(parts), evidence="at the first optimizer.step(): " + "; ".join(parts),
                  line=loop.backward_line or line)
    elif with_grad:
        h.checked("TL308")
    if not trainable and held:
        loop.reported_506 = True
        loop.moved_checked = True
        h.finding(
            "TL506",
            f"the weights never move: none of the {len(held)} parameters {type(optimizer).__name__} holds "
            "requires grad (the model is frozen)",
            evidence=f"0 of {len(held)} parameters held by the optimizer have requires_grad=True",
            line=line,
            confirms=("TL305",),
        )


@check(LOOP_STEP_DONE, "TL502", "TL503", "TL501")
def report_loop_learning_rate(h: Harness, loop: LoopState) -> None:
    """After the first ``optimizer.step()`` of a hand-written loop: the effective learning rate."""
    if loop.steps == 1:
        report_lr(h, loop.stepping, loop.line, user_built=True, model=loop.trained_model(h, loop.stepping))


@check(LOOP_STEP_DONE, "TL506", "TL308", order=510)
def check_loop_weights_move(h: Harness, loop: LoopState) -> None:
    """After ``optimizer.step()``: the parameters it holds changed (a warmup's first rate of 0 defers the
    judgement to the second step)."""
    optimizer, line = loop.stepping, loop.line
    lr = max(float(g.get("lr", 0.0)) for g in optimizer.param_groups)
    initial = max(base_lrs(optimizer))
    if loop.snap and not loop.reported_504 and not loop.reported_506 and not loop.moved_checked:
        if moved(loop.snap):
            h.checked("TL506", "TL308")
            loop.moved_checked = True
        elif loop.steps == 1 and lr == 0 and initial > 0:
            # A warmup scheduler's first rate is 0: judge the second step instead.
            h.note(f"the learning-rate scheduler gives lr 0 at the first step (initial lr {initial:g})")
        elif loop.steps >= 2 or any(p.grad is not None for p, _ in loop.snap):
            loop.moved_checked = True
            loop.reported_506 = True
            cause = f"lr={lr:g}" + (" (the scheduler's rate)" if initial != lr else "")
            h.finding(
                "TL506",
                f"the weights never move: {loop.steps} optimizer step(s) ({type(optimizer).__name__}, {cause}) "
                "left them unchanged",
                evidence=f"{len(loop.snap)} trainable parameters compared before/after step(): all equal",
                line=line,
            )
