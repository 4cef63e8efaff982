"""Models and what trains them: the model behind ``model.to(device)``, ``model.compile(...)`` and
``torch.optim.X(model.parameters())``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from trainlint.facts.expr import argument
from trainlint.facts.values import ModelValue
from trainlint.facts.walk import iter_nodes

if TYPE_CHECKING:
    from trainlint.facts.core import Facts

#: `model = model.to(device)` and friends return the same model
SAME_MODEL_METHODS = frozenset({"to", "cuda", "cpu", "train", "eval", "float", "half", "bfloat16", "double",
                                "requires_grad_", "to_empty"})


def model_of(facts: Facts, expr: cst.BaseExpression | None, at: cst.CSTNode) -> ModelValue | None:
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


def compiled_model(facts: Facts, call: cst.Call) -> ModelValue | None:
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


def torch_optimizer(facts: Facts, call: cst.Call) -> str | None:
    """`AdamW` for a call to `torch.optim.AdamW` (any import spelling), else None."""
    qn = facts.callee(call) or ""
    if qn.startswith("torch.optim.") and not qn.startswith("torch.optim.lr_scheduler"):
        return qn.rsplit(".", 1)[-1]
    return None


def optimizer_model(facts: Facts, call: cst.Call) -> tuple[cst.BaseExpression, ModelValue | None] | None:
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


#: the Keras constructors of a model built from layers (canonical names)
_KERAS_COMPOSITES = frozenset({"keras.Model", "keras.models.Model", "keras.Sequential", "keras.models.Sequential"})


def keras_backbone(facts: Facts, call: cst.Call) -> ModelValue | None:
    """The pretrained transformers model a `model.compile(...)` / `model.fit(...)` trains: the model itself,
    or the backbone inside a functional `keras.Model(inputs, outputs)` / `keras.Sequential([...])` built
    on it (`x = bert(input_ids)[0]`, `Dense(3)(x)`), or inside a model class of the file whose body loads
    one (`self.bert = TFAutoModel.from_pretrained(...)`)."""
    if not isinstance(call.func, cst.Attribute):
        return None
    recv = call.func.value
    v = facts.value_of(recv, call)
    if isinstance(v, ModelValue) and v.transformers:
        return v
    expr, at = recv, call
    if isinstance(expr, cst.Name):
        b = facts.lookup(expr.value, call)
        if b is None or not isinstance(b.value, cst.Call):
            return None
        expr, at = b.value, (b.value if b.value in facts.where else call)
    if not isinstance(expr, cst.Call):
        return None
    if (facts.qualname(expr.func) or "") in _KERAS_COMPOSITES:
        return _backbone_in(facts, expr, at, set(), 0)
    cls = facts.value_of(expr.func, at)
    node = getattr(cls, "node", None)
    if isinstance(node, cst.ClassDef):
        for c in iter_nodes(node.body, (cst.Call,)):
            m = facts.value_of(c) if c in facts.where else None
            if isinstance(m, ModelValue) and m.transformers and m.pretrained:
                return m
    return None


def _backbone_in(facts: Facts, expr: cst.CSTNode | None, at: cst.CSTNode, seen: set[int], depth: int) -> ModelValue | None:
    """A pretrained transformers model that the data flowing into ``expr`` goes through: layers applied to
    names (`Dense(3)(x)`), models called on them (`bert(input_ids)[0]`), the layers of a `Sequential`, the
    `inputs`/`outputs` of a functional `Model` — not the arguments that configure a layer."""
    if depth > 40 or expr is None:
        return None
    if isinstance(expr, cst.Name):
        m = model_of(facts, expr, at)
        if isinstance(m, ModelValue) and m.transformers and m.pretrained:
            return m
        b = facts.lookup(expr.value, at)
        if b is None or id(b) in seen or not isinstance(b.value, cst.BaseExpression):
            return None
        seen.add(id(b))  # by binding: `x = bert(ids)[0]; x = Dropout(0.1)(x)` follows both
        return _backbone_in(facts, b.value, b.value if b.value in facts.where else at, seen, depth + 1)
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Call):  # `Dense(3)(x)`: the data is in the arguments
            inputs = [a.value for a in expr.args]
        else:
            root = func
            while isinstance(root, (cst.Attribute, cst.Subscript)):
                root = root.value  # `bert.bert(...)`, `self.layers[0](...)`
            m = model_of(facts, root, at)
            if isinstance(m, ModelValue) and m.transformers and m.pretrained:
                return m
            qn = facts.qualname(func) or ""
            if qn in _KERAS_COMPOSITES:
                inputs = [a.value for a in expr.args]
            elif qn.startswith(("keras.", "tensorflow.")):
                return None  # a layer's or an op's configuration, `Input(shape=...)`: no data flows in
            else:
                inputs = [a.value for a in expr.args]
        for v in inputs:
            found = _backbone_in(facts, v, at, seen, depth + 1)
            if found is not None:
                return found
        return None
    if isinstance(expr, (cst.Subscript, cst.Attribute)):
        return _backbone_in(facts, expr.value, at, seen, depth + 1)
    if isinstance(expr, (cst.List, cst.Tuple)):
        for e in expr.elements:
            found = _backbone_in(facts, e.value, at, seen, depth + 1)
            if found is not None:
                return found
    return None


def trainer_arguments(facts: Facts, trainer: cst.Call) -> tuple[cst.Call, cst.CSTNode] | None:
    """The call that makes the training arguments a Trainer call is given (`args=TrainingArguments(...)`, or the
    name bound to it), with the node to read its arguments' names at; None when the source does not show one."""
    args = argument(trainer, "args", 1)
    at: cst.CSTNode = trainer
    if isinstance(args, cst.Name):
        b = facts.lookup(args.value, trainer)
        args = b.value if b is not None and isinstance(b.value, cst.Call) else None
        at = args if args is not None and args in facts.where else trainer
    return (args, at) if isinstance(args, cst.Call) else None
