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


def optimizer_params(optimizer: Any) -> list:
    return [p for g in optimizer.param_groups for p in g["params"]]


def report_lr(h: Any, optimizer: Any, line: int | None, user_built: bool) -> float:
    lrs = sorted({float(g.get("lr", 0.0)) for g in optimizer.param_groups})
    # A scheduler keeps the configured rate as `initial_lr`: judge that one (warmup starts at 0).
    bases = sorted({float(g.get("initial_lr", g.get("lr", 0.0))) for g in optimizer.param_groups})
    lr = bases[-1] if bases else 0.0
    name = type(optimizer).__name__
    default = default_lr(optimizer)
    scheduled = f"; scheduler base rate {', '.join(f'{x:g}' for x in bases)}" if bases != lrs else ""
    h.note(f"effective learning rate {', '.join(f'{x:g}' for x in lrs)} ({name}{scheduled})")
    static = set(h.options.get("static_codes") or ())
    if user_built and default is not None and lr == default and "TL502" in static:
        h.finding(
            "TL502",
            f"{name} runs with its default learning rate {lr:g}",
            evidence=f"optimizer.param_groups lr = {lr:g} = {name}'s default (no lr= given)",
            line=line,
        )
    else:
        h.checked("TL502")
    if lr >= 1e-3 and ("TL503" in static or "TL501" in static):
        for code in ("TL503", "TL501"):
            if code in static:
                h.finding(code, f"effective learning rate {lr:g} ({name})", evidence=f"param_groups lr = {lr:g}", line=line)
    else:
        h.checked("TL503", "TL501")
    return lr


def snapshot(params: list, limit: int = 16) -> list:
    chosen = [p for p in params if p.grad is not None and p.requires_grad][:limit]
    return [(p, p.detach().clone()) for p in chosen]


def moved(snap: list) -> bool:
    import torch

    return any(not torch.equal(before, p.detach()) for p, before in snap)


def check_trainer_step(h: Any, st: Any) -> None:
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
    lr = report_lr(h, optimizer, st.line, user_built)
    snap = snapshot(optimizer_params(optimizer))
    if not snap:
        return
    optimizer.step()
    if moved(snap):
        h.checked("TL506")
        return
    h.finding(
        "TL506",
        f"one optimizer step ({type(optimizer).__name__}, lr={lr:g}) left the weights unchanged",
        evidence=f"{len(snap)} parameters with non-empty gradients compared before/after optimizer.step(): all equal; lr {lr:g}",
        line=st.line,
    )
