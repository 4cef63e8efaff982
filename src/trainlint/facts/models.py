"""Models and what trains them: the model behind ``model.to(device)``, ``model.compile(...)`` and
``torch.optim.X(model.parameters())``."""

from __future__ import annotations

import libcst as cst

from trainlint.facts.expr import argument
from trainlint.facts.values import ModelValue
from trainlint.facts.walk import iter_nodes

#: `model = model.to(device)` and friends return the same model
SAME_MODEL_METHODS = frozenset({"to", "cuda", "cpu", "train", "eval", "float", "half", "bfloat16", "double",
                                "requires_grad_", "to_empty"})


def model_of(facts, expr: cst.BaseExpression | None, at: cst.CSTNode) -> ModelValue | None:
    """The model an expression holds, through `model.to(device)`-style calls that return it."""
    for _ in range(6):
        if expr is None:
            return None
        v = facts.value_of(expr, at)
        if isinstance(v, ModelValue):
            return v
        if isinstance(expr, cst.Name):
            b = facts.lookup(expr.value, at)
            if b is None or not isinstance(b.value, cst.Call):
                return None
            expr, at = b.value, (b.value if b.value in facts.where else at)
            continue
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in SAME_MODEL_METHODS:
            expr = expr.func.value
            continue
        return None
    return None


def compiled_model(facts, call: cst.Call) -> ModelValue | None:
    """The model of a `model.compile(...)`/`model.fit(...)` call, if trainlint knows it."""
    if not isinstance(call.func, cst.Attribute):
        return None
    v = facts.value_of(call.func.value, call)
    return v if isinstance(v, ModelValue) else None


def parameters_owner(expr: cst.BaseExpression | None) -> cst.BaseExpression | None:
    """`model` in `model.parameters()` / `model.named_parameters()` / a comprehension over them."""
    if expr is None:
        return None
    for call in iter_nodes(expr, (cst.Call,)):
        f = call.func
        if isinstance(f, cst.Attribute) and f.attr.value in ("parameters", "named_parameters"):
            return f.value
    return None


def torch_optimizer(facts, call: cst.Call) -> str | None:
    """`AdamW` for a call to `torch.optim.AdamW` (any import spelling), else None."""
    qn = facts.callee(call) or ""
    if qn.startswith("torch.optim.") and not qn.startswith("torch.optim.lr_scheduler"):
        return qn.rsplit(".", 1)[-1]
    return None


def optimizer_model(facts, call: cst.Call) -> tuple[cst.BaseExpression, ModelValue | None] | None:
    """(the `model` expression, its value) of `torch.optim.X(model.parameters(), ...)`; the params may be
    given through a name (`params = [p for p in model.parameters() if ...]`)."""
    params = argument(call, "params", 0)
    owner = parameters_owner(params)
    if owner is None and isinstance(params, cst.Name):
        b = facts.lookup(params.value, call)
        if b is not None and isinstance(b.value, cst.BaseExpression):
            owner = parameters_owner(b.value)
    if owner is None:
        return None
    return owner, model_of(facts, owner, call)
