"""Runtime checks of the optimizer stage (child side: standard library + frameworks only).

- the effective learning rate (confirms TL502 when it is the optimizer class's default, TL503 when
  ≥ 1e-3);
- TL504: an optimizer holding none of the parameters of the model in use;
- TL506: one optimizer step (without the warmup scheduler, whose first rate is often 0) leaves the
  weights unchanged.
"""

from __future__ import annotations

import inspect
from typing import Any

from trainlint.probe.child.checks import probe_check
from trainlint.probe.child.torch_util import error_text, is_pretrained, moved, optimizer_params, snapshot, use_base_rate
from trainlint.probe.child.harness import Harness


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
    from trainlint.probe.child.torch_util import unwrap_model

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


@probe_check("TL504", "TL502", "TL503", "TL501", "TL506", "TL707", framework="torch", path="trainer", phase="optimizer")
def check_trainer_step(h: Harness, st: Any) -> None:
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
