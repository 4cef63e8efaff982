"""The loops of a file, read once: which calls run `backward()`, an optimizer or scheduler step, a
`zero_grad()`, a `train()`/`eval()`, and the loops around each (up to the enclosing function). The
training-loop rules and the loader rules ask the same facts."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import libcst as cst

from trainlint.facts.expr import dotted, literal
from trainlint.facts.values import CallValue

if TYPE_CHECKING:
    from trainlint.facts.core import Facts

LOOPS = (cst.For, cst.While)


@dataclasses.dataclass
class LoopFacts:
    """The calls of a file sorted out for the loop rules."""

    backward: list[cst.Call] = dataclasses.field(default_factory=list)
    optimizer_steps: list[cst.Call] = dataclasses.field(default_factory=list)
    scheduler_steps: list[cst.Call] = dataclasses.field(default_factory=list)
    #: zero_grad() calls, `p.grad = None`, `p.grad.zero_()`
    zero_grads: list[cst.Call | cst.Assign] = dataclasses.field(default_factory=list)
    #: (call, receiver text, "train" | "eval")
    modes: list[tuple[cst.Call, str, str]] = dataclasses.field(default_factory=list)
    calls: list[cst.Call] = dataclasses.field(default_factory=list)  # every call (for "is the model called here")
    #: node -> loops around it (outermost first)
    loops_of: dict[cst.CSTNode, tuple[cst.For | cst.While, ...]] = dataclasses.field(default_factory=dict)


def loops_around(facts: Facts, node: cst.CSTNode) -> tuple[cst.For | cst.While, ...]:
    """The loops around ``node`` inside its own function (outermost first)."""
    w = facts.where.get(node)
    if w is None:
        return ()
    out: list[cst.For | cst.While] = []
    for b in reversed(w.blocks):
        if isinstance(b, (cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            break
        if isinstance(b, LOOPS):
            out.append(b)
    return tuple(reversed(out))


def is_scheduler(facts: Facts, recv: cst.BaseExpression, at: cst.CSTNode) -> bool:
    text = dotted(recv) or ""
    if "sched" in text.lower():
        return True
    v = facts.value_of(recv, at) if isinstance(recv, cst.Name) else None
    qn = v.qualname if isinstance(v, CallValue) else ""
    return qn.startswith("torch.optim.lr_scheduler") or (qn.startswith("transformers.") and "schedule" in qn)


def is_optimizer(facts: Facts, recv: cst.BaseExpression, at: cst.CSTNode) -> bool:
    if isinstance(recv, cst.Name):
        v = facts.value_of(recv, at)
        if isinstance(v, CallValue) and v.qualname.startswith("torch.optim.") and "lr_scheduler" not in v.qualname:
            return True
    last = (dotted(recv) or "").rsplit(".", 1)[-1].lower()
    return "optim" in last or last in ("opt", "optimiser") or last.endswith("_opt") or last.startswith("opt_")


#: `nn.Module` methods that return the module itself: `model.to(device).train()` sets `model`'s mode
RETURN_SELF = frozenset({"to", "cuda", "cpu", "float", "half", "double", "bfloat16", "type", "train", "eval",
                          "requires_grad_", "to_empty", "apply", "share_memory"})


def module_itself(recv: cst.BaseExpression) -> cst.BaseExpression:
    """The module under a chain of calls that return it (`model.to(device)` → `model`)."""
    while isinstance(recv, cst.Call) and isinstance(recv.func, cst.Attribute) and recv.func.attr.value in RETURN_SELF:
        recv = recv.func.value
    return recv


def loop_facts(facts: Facts) -> LoopFacts:
    lf: LoopFacts | None = facts.__dict__.get("_loop_facts")  # once per file, kept with the file's facts
    if lf is not None:
        return lf
    lf = LoopFacts()
    for call in facts.index.get("Call", ()):
        f = call.func
        lf.calls.append(call)
        if not isinstance(f, cst.Attribute):
            continue
        meth, recv = f.attr.value, f.value
        if meth == "backward":
            lf.backward.append(call)
        elif meth == "step":
            if is_scheduler(facts, recv, call):
                if not call.args:
                    lf.scheduler_steps.append(call)
            elif is_optimizer(facts, recv, call):
                lf.optimizer_steps.append(call)
            elif "scaler" in (dotted(recv) or "").lower() and call.args:
                lf.optimizer_steps.append(call)  # scaler.step(optimizer)
        elif meth == "zero_grad":
            lf.zero_grads.append(call)
        elif meth in ("zero_", "detach_", "fill_") and ".grad" in (f".{dotted(recv)}" if dotted(recv) else ""):
            lf.zero_grads.append(call)
        elif meth in ("train", "eval") and (name := dotted(module_itself(recv))) is not None:
            mode = meth
            if meth == "train" and call.args:
                v = literal(call.args[0].value)
                if v is False:
                    mode = "eval"
                elif v is not True:
                    continue
            elif meth == "eval" and call.args:
                continue
            lf.modes.append((call, name, mode))
    for assign in facts.index.get("Assign", ()):
        for t in assign.targets:
            if isinstance(t.target, cst.Attribute) and t.target.attr.value == "grad":
                lf.zero_grads.append(assign)
    for n in lf.backward + lf.optimizer_steps + lf.scheduler_steps + lf.zero_grads + [m[0] for m in lf.modes]:
        lf.loops_of[n] = loops_around(facts, n)
    facts.__dict__["_loop_facts"] = lf
    return lf
