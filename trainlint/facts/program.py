"""One model of the training program that every rule asks: what each object of the file is.

``program(facts).of(expr, at)`` answers with an :mod:`~trainlint.facts.objects` object — a
:class:`Module` with its layers, a :class:`Loss`, a :class:`Loader`, an :class:`Optimizer`, a
:class:`Tensor` (what its values are, whether it carries an autograd graph) or a :class:`Number` — or
``None`` when the source does not establish it. The answer follows the program, not the spelling:

- names to their binding at that point (notebook cells in the order they ran), a function's parameter
  to what every call of the file gives it (all callers must agree), ``self.<attr>`` to what the class's
  methods assign to it, a call of the file's own function to what it returns on every path;
- the file's own ``nn.Module`` / Keras classes to the layers their methods build (``self.x = ...``,
  ``nn.Sequential(*layers)`` from a list filled by ``append``, ``add_module``, ``nn.ModuleList``) and to
  what their ``forward`` / ``call`` returns;
- library classes and functions to their known behaviour (:mod:`~trainlint.facts.objects`).

``at`` is a node the walk recorded (a call or a statement around ``expr``): it says which binding of a
name is meant. Everything is memoised per file.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import libcst as cst

from trainlint.facts.calls import call_graph, parameters
from trainlint.facts.expr import UNKNOWN, argument, dotted, literal
from trainlint.facts.loops import RETURN_SELF
from trainlint.facts.objects import (
    KERAS_ACTIVATIONS,
    KERAS_CROSSENTROPY,
    KERAS_MODE_DEPENDENT,
    TORCH_ACTIVATIONS,
    TORCH_DROPOUT_ARGUMENT,
    TORCH_LAYER_OUTPUT,
    TORCH_LOSSES,
    TORCH_MODE_DEPENDENT,
    TORCH_MODE_FREE,
    TORCH_RUNNING_STATS_OPTIONAL,
    KERAS_CLASS_ID_DATASETS,
    TF_ACTIVATION_MODULES,
    TF_ACTIVATIONS,
    WIDTH_KEEPING,
    Layer,
    Loader,
    Loss,
    Module,
    Number,
    Obj,
    Optimizer,
    Output,
    Tensor,
    Tokenizer,
    Encoding,
    keras_loss_expects,
    merge,
    output_units,
)
from trainlint.facts.values import ClassValue, ModelValue, TokenizerValue

if TYPE_CHECKING:
    from trainlint.facts.core import Facts
    from trainlint.facts.scopes import Binding

_MAX_DEPTH = 12
#: tensor methods whose result holds no autograd graph
_DETACHING = frozenset({"detach", "numpy", "tolist", "argmax", "argmin", "argsort", "topk_indices"})
#: tensor methods and builtins that give a Python number
_NUMBER_METHODS = frozenset({"item", "tolist"})
_NUMBER_BUILTINS = frozenset({"float", "int", "round", "len", "abs", "max", "min", "sum"})
#: tensor methods that keep the values and the graph (shape, device and dtype changes)
_KEEPING = frozenset({"to", "cuda", "cpu", "float", "double", "half", "bfloat16", "view", "reshape", "squeeze",
                      "unsqueeze", "flatten", "contiguous", "permute", "transpose", "clone", "view_as",
                      "reshape_as", "type", "mean", "sum"})
#: tokenizer methods that return a `BatchEncoding`
_ENCODING_METHODS = frozenset({"__call__", "encode_plus", "batch_encode_plus", "pad"})
#: context managers and decorators that turn gradients off
_GRAD_OFF = frozenset({"no_grad", "inference_mode"})
#: the short names Keras accepts for its cross-entropies (`keras.losses.get`)
_KERAS_LOSS_ALIASES = {"bce": "binary_crossentropy", "BCE": "binary_crossentropy"}
#: tensor methods that keep the width of the last axis
_WIDTH_METHODS = frozenset({"to", "cuda", "cpu", "float", "double", "half", "bfloat16", "contiguous", "clone", "type"})
#: activations that normalise scores (what they were applied to is their `scores`)
_NORMALISED = (Output.PROBABILITIES, Output.LOG_PROBABILITIES, Output.SIGMOID)
_KERAS_MODEL_CLASSES = frozenset({"keras.Model", "keras.models.Model", "keras.Sequential", "keras.models.Sequential"})


class Program:
    """The objects of one file. Built lazily by :func:`program`; ask :meth:`of`."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self.graph = call_graph(facts)
        self._memo: dict[tuple[int, int], Obj | None] = {}
        self._classes: dict[cst.ClassDef, Module | None] = {}
        self._active: set[tuple[int, int]] = set()
        self._grad: dict[cst.CSTNode, bool | None] = {}
        self._unpack_paths: dict[int, tuple[cst.Assign, tuple[int, ...]]] | None = None

    # -- the question every rule asks ------------------------------------------------------------------
    def of(self, expr: cst.BaseExpression | None, at: cst.CSTNode | None = None, _depth: int = 0) -> Obj | None:
        """What ``expr`` is at ``at`` (a recorded node around it; default: ``expr`` itself)."""
        if expr is None or _depth > _MAX_DEPTH:
            return None
        at = at if at is not None else expr
        key = (id(expr), id(at))
        if key in self._memo:
            return self._memo[key]
        if key in self._active:
            return None  # a cycle (`x = f(x)` through helpers): unknown
        self._active.add(key)
        try:
            obj = self._compute(expr, at, _depth + 1)
        finally:
            self._active.discard(key)
        self._memo[key] = obj
        return obj

    def module(self, expr: cst.BaseExpression | None, at: cst.CSTNode | None = None) -> Module | None:
        obj = self.of(expr, at)
        return obj if isinstance(obj, Module) else None

    def loss(self, expr: cst.BaseExpression | None, at: cst.CSTNode | None = None) -> Loss | None:
        obj = self.of(expr, at)
        return obj if isinstance(obj, Loss) else None

    def compiled_loss(self, expr: cst.BaseExpression | None, at: cst.CSTNode) -> Loss | None:
        """The loss a Keras `compile(loss=...)` is given: a loss object or function, or a string naming a
        cross-entropy (`"binary_crossentropy"`, `"bce"`, `"CategoricalCrossentropy"`: `from_logits=False`)."""
        value = self.facts.constant(expr, at) if expr is not None else None
        if isinstance(value, str):
            name = _KERAS_LOSS_ALIASES.get(value, value)
            if name not in KERAS_CROSSENTROPY:
                return None
            return Loss(expr, name=name, framework="keras", expects=keras_loss_expects(name, False),
                        targets=KERAS_CROSSENTROPY[name], functional=name[:1].islower())
        return self.loss(expr, at)

    def tensor(self, expr: cst.BaseExpression | None, at: cst.CSTNode | None = None) -> Tensor | Number | None:
        obj = self.of(expr, at)
        return obj if isinstance(obj, (Tensor, Number)) else None

    # -- grad mode -------------------------------------------------------------------------------------
    def grad_enabled(self, node: cst.CSTNode) -> bool | None:
        """Gradients are recorded where ``node`` runs: False inside `with torch.no_grad()` /
        `inference_mode()` (or a function decorated so, or one that every call of the file makes from such
        a place); True at module level and in functions the file calls only with gradients on; None when
        the callers disagree or nothing in the file calls the function."""
        w = self.facts.where.get(node)
        if w is None:
            return None
        for b in reversed(w.blocks):
            if isinstance(b, cst.With) and any(_turns_grad_off(self.facts, i.item) for i in b.items):
                return False
            if isinstance(b, (cst.FunctionDef, cst.Lambda)):
                if isinstance(b, cst.FunctionDef) and any(_turns_grad_off(self.facts, d.decorator) for d in b.decorators):
                    return False
                return self._function_grad(b) if isinstance(b, cst.FunctionDef) else None
        return True

    def _function_grad(self, fn: cst.FunctionDef) -> bool | None:
        if fn in self._grad:
            return self._grad[fn]
        self._grad[fn] = None  # recursion guard
        callers = self.graph.callers(fn)
        modes = {self.grad_enabled(c) for c in callers}
        result = modes.pop() if len(modes) == 1 else None
        self._grad[fn] = result
        return result

    # -- resolution --------------------------------------------------------------------------------
    def _compute(self, expr: cst.BaseExpression, at: cst.CSTNode, depth: int) -> Obj | None:
        if isinstance(expr, (cst.Integer, cst.Float)):
            return Number(expr)
        if isinstance(expr, cst.Name):
            return self._name(expr, at, depth)
        if isinstance(expr, cst.Attribute):
            return self._attribute(expr, at, depth)
        if isinstance(expr, cst.Call):
            return self._call(expr, at, depth)
        if isinstance(expr, cst.Subscript):
            base = self.of(expr.value, at, depth)
            if isinstance(base, Tensor):
                return base
            return None
        if isinstance(expr, cst.BinaryOperation):
            left, right = self.of(expr.left, at, depth), self.of(expr.right, at, depth)
            if isinstance(left, Number) and isinstance(right, Number):
                return Number(expr)
            tensors = [t for t in (left, right) if isinstance(t, Tensor)]
            if tensors and all(isinstance(t, (Tensor, Number)) for t in (left, right)):
                graphs = {t.graph for t in tensors}
                graph = True if True in graphs else (False if graphs == {False} else None)
                return Tensor(expr, output=None, graph=graph, loss=any(t.loss for t in tensors))
            return None
        if isinstance(expr, cst.UnaryOperation):
            inner = self.of(expr.expression, at, depth)
            return inner if isinstance(inner, Number) else None
        return None

    def _name(self, expr: cst.Name, at: cst.CSTNode, depth: int) -> Obj | None:
        facts = self.facts
        b = self._lookup(expr.value, at)
        if b is None:
            q = facts.qualname(expr)
            return self._library(q, expr) if q else None
        if isinstance(b.value, cst.ClassDef):
            return None  # the class itself, not an instance
        if isinstance(b.value, cst.FunctionDef):
            return None
        fn = self._parameter_of(b, at)
        if fn is not None:
            return self._parameter(fn, expr.value, depth)
        if b.value is None:
            return self._unpacked(b.target, depth)
        if not isinstance(b.value, cst.BaseExpression):
            return None
        return self.of(b.value, self._anchor(b.value, at), depth)

    def _unpacked(self, target: cst.CSTNode, depth: int) -> Obj | None:
        """A name bound by unpacking a call (`a, b = helper(x)`, `(x, y), (xt, yt) = mnist.load_data()`): the
        element at its position of what the file's function returns on every path (tuple literals), or the
        labels of a Keras dataset."""
        if self._unpack_paths is None:
            self._unpack_paths = {}
            for a in self.facts.index.get("Assign", ()):
                if isinstance(a.value, cst.Call):
                    for t in a.targets:
                        _collect_paths(t.target, (), a, self._unpack_paths)
        found = self._unpack_paths.get(id(target))
        if found is None:
            return None
        assign, path = found
        call = assign.value
        assert isinstance(call, cst.Call)
        q = self.facts.qualname(call.func) or ""
        parts = q.split(".")
        if len(parts) == 4 and parts[:2] == ["keras", "datasets"] and parts[2] in KERAS_CLASS_ID_DATASETS \
                and parts[3] == "load_data":
            return Tensor(call, output=Output.CLASS_IDS, graph=False) if path in ((0, 1), (1, 1)) else None
        fn = self.graph.resolve(call)  # `helper(...)`, `self.method(...)`, a method of a class of the file
        if fn is None:
            return None
        rets = [r for r in self.facts.index.get("Return", ()) if (w := self.facts.where.get(r)) is not None
                and w.function is fn]
        values: list[Obj | None] = []
        for r in rets:
            v: cst.BaseExpression | None = r.value
            for i in path:
                if not isinstance(v, (cst.Tuple, cst.List)) or i >= len(v.elements) \
                        or not all(isinstance(e, cst.Element) for e in v.elements):
                    return None
                v = v.elements[i].value
            values.append(self.of(v, r, depth))
        return merge(values) if values else None

    def _lookup(self, name: str, at: cst.CSTNode) -> Binding | None:
        """The binding of ``name`` read at ``at``; at a statement that binds ``name`` itself (`total = total +
        x`, the anchor of its own value), the binding before it."""
        facts = self.facts
        b = facts.lookup(name, at)
        if b is not None and isinstance(at, (cst.Assign, cst.AnnAssign)) and b.value is at.value:
            w = facts.where.get(at)
            scope = w.function if w is not None else None
            earlier = [x for x in facts.bindings.get(scope, {}).get(name, ()) if x.order < b.order]
            return earlier[-1] if earlier else None
        return b

    def _anchor(self, value: cst.BaseExpression, fallback: cst.CSTNode) -> cst.CSTNode:
        """The recorded node that says where ``value`` is evaluated: itself, or the statement holding it."""
        if value in self.facts.where:
            return value
        holders = self.facts.holders(value)
        return holders[0] if holders else fallback

    def _parameter_of(self, b: Binding, at: cst.CSTNode) -> cst.FunctionDef | None:
        w = self.facts.where.get(at)
        if w is None:
            return None
        for block in reversed(w.blocks):
            if isinstance(block, cst.FunctionDef) and any(p.name is b.target for p in parameters(block)):
                return block
        return None

    def _parameter(self, fn: cst.FunctionDef, name: str, depth: int) -> Obj | None:
        """What every call of the file gives ``fn``'s parameter ``name`` (a class's ``__init__``: every
        instantiation of the class). None when nothing in the file calls it, or the callers disagree."""
        sites: list[tuple[cst.BaseExpression | None, cst.CSTNode]] = []
        cls = self.graph.class_of(fn)
        if cls is not None and fn.name.value == "__init__":
            for call in self._instantiations(cls):
                sites.append((self._init_argument(call, fn, name), call))
        else:
            for call in self.graph.callers(fn):
                sites.append((self.graph.argument_of(call, fn, name), call))
        if not sites:
            return None
        return merge([self.of(e, a, depth) if e is not None else None for e, a in sites])

    def _instantiations(self, cls: cst.ClassDef) -> list[cst.Call]:
        out = []
        for call in self.facts.index.get("Call", ()):
            if isinstance(call.func, cst.Name) and call.func.value == cls.name.value:
                v = self.facts.value_of(call.func, call)
                if isinstance(v, ClassValue) and v.node is cls:
                    out.append(call)
        return out

    @staticmethod
    def _init_argument(call: cst.Call, init: cst.FunctionDef, name: str) -> cst.BaseExpression | None:
        params = [*init.params.posonly_params, *init.params.params][1:]  # without `self`
        for a in call.args:
            if a.keyword is not None and a.keyword.value == name:
                return a.value
        if any(a.star for a in call.args):
            return None
        pos = [a for a in call.args if a.keyword is None]
        index = next((i for i, p in enumerate(params) if p.name.value == name), None)
        if index is not None and index < len(pos):
            return pos[index].value
        for p in [*params, *init.params.kwonly_params]:
            if p.name.value == name:
                return p.default
        return None

    def _attribute(self, expr: cst.Attribute, at: cst.CSTNode, depth: int) -> Obj | None:
        attr = expr.attr.value
        if attr == "data":  # `loss.data`: the values without the graph
            base = self.of(expr.value, at, depth)
            return Tensor(expr, output=base.output, graph=False) if isinstance(base, Tensor) else None
        if isinstance(expr.value, cst.Name) and expr.value.value == "self":
            return self._self_attribute(attr, at, depth)
        base = self.of(expr.value, at, depth)
        if attr == "logits" and base is None:
            # `outputs.logits` of a transformers model call
            v = self._model_output(expr.value, at)
            if v is not None:
                return Tensor(expr, output=Output.LOGITS, graph=v)
        if attr == "loss" and base is None:
            v = self._model_output(expr.value, at)
            if v is not None:
                return Tensor(expr, graph=v, loss=True)
        q = self.facts.qualname(expr)
        return self._library(q, expr) if q else None

    def _model_output(self, expr: cst.BaseExpression, at: cst.CSTNode) -> bool | None:
        """``expr`` holds the output of a transformers model call: whether it carries a graph (None: unknown
        or not such an output). Returns False for "no graph" — callers test ``is not None``."""
        call: cst.CSTNode | None = expr
        if isinstance(expr, cst.Name):
            b = self.facts.lookup(expr.value, at)
            call = b.value if b is not None else None
        if not isinstance(call, cst.Call):
            return None
        m = self.of(call.func, at)
        if isinstance(m, Module) and m.framework == "transformers":
            g = self.grad_enabled(call if call in self.facts.where else at)
            return g if g is not None else True
        return None

    def _self_attribute(self, attr: str, at: cst.CSTNode, depth: int) -> Obj | None:
        w = self.facts.where.get(at)
        fn = w.function if w is not None else None
        cls = self.graph.class_of(fn) if isinstance(fn, cst.FunctionDef) else None
        if cls is None:
            return None
        values = self._self_assignments(cls, attr)
        if not values:
            return None
        return merge([self.of(v, a, depth) for v, a in values])

    def _self_assignments(self, cls: cst.ClassDef, attr: str) -> list[tuple[cst.BaseExpression, cst.CSTNode]]:
        """The values the methods of ``cls`` (and of its bases in the file) assign to `self.<attr>`."""
        classes = [cls, *self._file_bases(cls)]
        out = []
        for a in self.facts.index.get("Assign", ()):
            if any(isinstance(t.target, cst.Attribute) and isinstance(t.target.value, cst.Name)
                   and t.target.value.value == "self" and t.target.attr.value == attr for t in a.targets):
                if any(c in self.facts.where[a].blocks for c in classes):
                    out.append((a.value, a))
        for a in self.facts.index.get("AnnAssign", ()):
            t = a.target
            if a.value is not None and isinstance(t, cst.Attribute) and dotted(t) == f"self.{attr}" \
                    and any(c in self.facts.where[a].blocks for c in classes):
                out.append((a.value, a))
        return out

    def _file_bases(self, cls: cst.ClassDef, _depth: int = 0) -> list[cst.ClassDef]:
        out: list[cst.ClassDef] = []
        if _depth > 5:
            return out
        for arg in cls.bases:
            if isinstance(arg.value, cst.Name):
                b = self.facts.lookup(arg.value.value, cls)
                if b is not None and isinstance(b.value, cst.ClassDef) and b.value is not cls:
                    out.append(b.value)
                    out.extend(self._file_bases(b.value, _depth + 1))
        return out

    # -- calls -------------------------------------------------------------------------------------
    def _call(self, call: cst.Call, at: cst.CSTNode, depth: int) -> Obj | None:
        facts = self.facts
        func = call.func
        here = call if call in facts.where else at
        if isinstance(func, cst.Attribute):
            meth = func.attr.value
            q = facts.qualname(func)
            if meth == "item" and not call.args:
                return Number(call)  # a tensor's (or a numpy scalar's) value as a Python number
            if q is None or q.startswith("builtins."):
                recv = self.of(func.value, here, depth)
                out = self._method(call, meth, recv, here, depth)
                if out is not None or recv is not None:
                    return out
        if isinstance(func, cst.Name) and func.value in _NUMBER_BUILTINS and facts.lookup(func.value, here) is None:
            return Number(call)
        q = facts.qualname(func)
        if q:
            obj = self._library_call(call, q, here, depth)
            if obj is not None:
                return obj
        callee = self.of(func, here, depth)
        if isinstance(callee, Module):
            return self._module_call(callee, call, here, depth)
        if isinstance(callee, Loss):
            return Tensor(call, graph=self._graph_of_args(call, here, depth), loss=True)
        if isinstance(callee, Tokenizer):
            return None if callee.processor else Encoding(call)
        # a class of the file, or a function of the file
        if isinstance(func, cst.Name):
            b = facts.lookup(func.value, here)
            if b is not None and isinstance(b.value, cst.ClassDef):
                return self._class_module(b.value, call)
            if b is not None and isinstance(b.value, cst.FunctionDef):
                return self._returned(b.value, depth)
        target = self.graph.resolve(call)
        if target is not None:
            return self._returned(target, depth)
        v = facts.value_of(call, here)
        if isinstance(v, ModelValue):
            return self._model_value(v, call)
        return None

    def _method(self, call: cst.Call, meth: str, recv: Obj | None, at: cst.CSTNode, depth: int) -> Obj | None:
        if isinstance(recv, Module):
            if meth in RETURN_SELF:
                return recv
            if meth == "forward":
                return self._module_call(recv, call, at, depth)
            return None
        if isinstance(recv, (Tensor, Number)):
            if meth in _NUMBER_METHODS:
                return Number(call)
            if isinstance(recv, Number):
                return None
            if meth in TORCH_ACTIVATIONS:
                return _activated(call, TORCH_ACTIVATIONS[meth], recv)
            if meth in _DETACHING:
                return Tensor(call, output=recv.output, graph=False, units=recv.units if meth == "detach" else None,
                              scores=recv.scores, origin=recv.origin, scores_origin=recv.scores_origin)
            if meth in _KEEPING:
                if meth in ("mean", "sum"):
                    return Tensor(call, graph=recv.graph, loss=recv.loss)
                return Tensor(call, output=recv.output, graph=recv.graph, loss=recv.loss,
                              units=recv.units if meth in _WIDTH_METHODS else None, scores=recv.scores,
                              origin=recv.origin, scores_origin=recv.scores_origin)
            return Tensor(call, graph=recv.graph) if recv.graph is False else None
        if isinstance(recv, Loss) and meth in ("forward", "__call__"):
            return Tensor(call, graph=self._graph_of_args(call, at, depth), loss=True)
        if isinstance(recv, Tokenizer) and meth in _ENCODING_METHODS and not recv.processor:
            return Encoding(call)
        return None

    def _graph_of_args(self, call: cst.Call, at: cst.CSTNode, depth: int) -> bool | None:
        """A loss or module computed at ``call`` carries a graph: False where gradients are off or every
        input is detached; True where gradients are on and an input carries one; else None."""
        if self.grad_enabled(at) is False:
            return False
        ins = [self.of(a.value, at, depth) for a in call.args if not a.star]
        if any(isinstance(i, Tensor) and i.graph for i in ins):
            return True if self.grad_enabled(at) else None
        if ins and all(isinstance(i, Number) or (isinstance(i, Tensor) and i.graph is False) for i in ins):
            return False
        return None

    def _module_call(self, module: Module, call: cst.Call, at: cst.CSTNode, depth: int) -> Tensor:
        grad = self.grad_enabled(at)
        if grad is not False:
            ins = [self.of(a.value, at, depth) for a in call.args if not a.star]
            if any(isinstance(i, Tensor) and i.volatile for i in ins):
                grad = False
        if module.framework == "keras":
            grad = False  # a Keras model's output is not a torch graph
        units, scores, origin, scores_origin = module.units, module.scores, module.origin, module.scores_origin
        # a library layer itself (not a class of the file, whose `forward` may do anything with its layers)
        layers = module.layers if module.classdef is None and module.name not in ("Sequential", "Model") else None
        if layers is not None and len(layers) == 1 and layers[0].name == "Identity" and call.args \
                and not call.args[0].star:
            inp = self.of(call.args[0].value, at, depth)  # `nn.Identity()(x)`, `Activation("linear")(x)`
            return dataclasses.replace(inp, node=call, loss=False) if isinstance(inp, Tensor) else Tensor(call, graph=grad)
        if layers is not None and len(layers) == 1 and layers[0].units is None:
            origin = call  # `self.relu(x)`, `Activation("softmax")(x)`: this call decides what comes out
            inp = self.of(call.args[0].value, at, depth) if call.args and not call.args[0].star else None
            if layers[0].name in WIDTH_KEEPING and isinstance(inp, Tensor):
                # an activation / dropout / norm layer keeps the width; a softmax one says of what
                units = inp.units
                normalised = module.output in _NORMALISED
                scores = inp.output if normalised else None
                scores_origin = inp.origin if normalised else None
                if module.output is None:  # dropout, normalisation: the values keep their kind
                    return Tensor(call, output=None, graph=grad, units=units)
        return Tensor(call, output=module.output, graph=grad, units=units, scores=scores, origin=origin,
                      scores_origin=scores_origin)

    def _returned(self, fn: cst.FunctionDef, depth: int) -> Obj | None:
        """What ``fn`` returns on every path (None if one path returns something unknown)."""
        rets = [r for r in self.facts.index.get("Return", ()) if (w := self.facts.where.get(r)) is not None
                and w.function is fn]
        if not rets or any(r.value is None for r in rets):
            return None
        return merge([self.of(r.value, r, depth) for r in rets])

    # -- the library ---------------------------------------------------------------------------------
    def _library(self, q: str, node: cst.CSTNode) -> Obj | None:
        """A library object named without a call (`criterion = F.cross_entropy`)."""
        short = q.rsplit(".", 1)[-1]
        if q.startswith("torch.nn.functional.") and short in TORCH_LOSSES:
            expects, targets = TORCH_LOSSES[short]
            return Loss(node, name=short, framework="torch", expects=expects, targets=targets, functional=True)
        if q.startswith("keras.losses.") and short in KERAS_CROSSENTROPY and short[:1].islower():
            return Loss(node, name=short, framework="keras", expects=keras_loss_expects(short, False),
                        targets=KERAS_CROSSENTROPY[short], functional=True)
        return None

    def _library_call(self, call: cst.Call, q: str, at: cst.CSTNode, depth: int) -> Obj | None:
        short = q.rsplit(".", 1)[-1]
        if q.startswith("torch.nn.functional.") or q.startswith("torch.") and short in TORCH_ACTIVATIONS:
            if short in TORCH_ACTIVATIONS:
                inner = self.of(argument(call, "input", 0), at, depth)
                return _activated(call, TORCH_ACTIVATIONS[short], inner)
            if short in TORCH_LOSSES:
                return Tensor(call, graph=self._graph_of_args(call, at, depth), loss=True)
            if short == "dropout":
                inner = self.of(argument(call, "input", 0), at, depth)
                if isinstance(inner, Tensor):
                    return dataclasses.replace(inner, node=call, loss=False, volatile=False)
                return Tensor(call)
            if short == "one_hot":  # integer class ids → one-hot (int64) vectors
                return Tensor(call, output=Output.ONE_HOT, graph=False)
            return None
        if short in TF_ACTIVATIONS and q[:len(q) - len(short)] in TF_ACTIVATION_MODULES:
            inner = self.of(argument(call, "x", 0), at, depth)
            return _activated(call, TF_ACTIVATIONS[short], inner)
        label = self._labels(call, q, short)
        if label is not None:
            return label
        if q in ("torch.autograd.Variable", "torch.autograd.variable.Variable"):
            volatile = literal(argument(call, "volatile"))
            inner = self.of(argument(call, "data", 0), at, depth)
            return Tensor(call, output=inner.output if isinstance(inner, Tensor) else None,
                          graph=False if volatile is True else None, volatile=volatile is True)
        if q.startswith("torch.nn."):
            return self._torch_nn(call, q, short, at, depth)
        if q == "torch.utils.data.DataLoader" or q == "torch.utils.data.dataloader.DataLoader":
            shuffle = argument(call, "shuffle", 2)
            value = literal(shuffle) if shuffle is not None else False
            sampler = argument(call, "sampler", 3) or argument(call, "batch_sampler", 4)
            return Loader(call, dataset=argument(call, "dataset", 0),
                          shuffle=value if isinstance(value, bool) else None, sampler=sampler)
        if q.startswith("torch.optim.") and not q.startswith("torch.optim.lr_scheduler") and short[:1].isupper():
            return Optimizer(call, name=short, params=argument(call, "params", 0))
        if q.startswith("keras."):
            return self._keras(call, q, short, at, depth)
        v = self.facts.value_of(call, at)
        if isinstance(v, ModelValue):
            return self._model_value(v, call)
        if isinstance(v, TokenizerValue):
            f = call.func
            owner = self.facts.qualname(f.value if isinstance(f, cst.Attribute) and f.attr.value in (
                "from_pretrained", "from_config") else f) or ""
            if owner.startswith("transformers."):  # not the `tokenizers` library's `Tokenizer`
                return Tokenizer(call, name=owner.rsplit(".", 1)[-1])
        return None

    @staticmethod
    def _labels(call: cst.Call, q: str, short: str) -> Tensor | None:
        """Labels made by a library call: one-hot vectors (`to_categorical`, `tf.one_hot`), class ids
        (`np.argmax`), or a literal `np.array` of one-hot rows or of class ids."""
        if q in ("keras.utils.to_categorical", "keras.utils.np_utils.to_categorical", "tensorflow.one_hot",
                 "keras.utils.numerical_utils.to_categorical"):
            return Tensor(call, output=Output.ONE_HOT, graph=False)
        if q == "numpy.argmax" and argument(call, "axis", 1) is not None:
            return Tensor(call, output=Output.CLASS_IDS, graph=False)
        if q in ("numpy.array", "numpy.asarray"):
            kind = _literal_labels(literal(argument(call, "object", 0)))
            return Tensor(call, output=kind, graph=False) if kind is not None else None
        return None

    def _torch_nn(self, call: cst.Call, q: str, short: str, at: cst.CSTNode, depth: int) -> Obj | None:
        if short in TORCH_LOSSES and short[:1].isupper():
            expects, targets = TORCH_LOSSES[short]
            return Loss(call, name=short, framework="torch", expects=expects, targets=targets)
        if short in ("Sequential", "ModuleList"):
            layers, output = self._children(call, at, depth)
            if short == "Sequential" and layers:
                scores, scores_origin = _scores_of(layers)
                return Module(call, framework="torch", name=short, layers=layers, output=output,
                              units=output_units(layers), scores=scores, origin=layers[-1].node,
                              scores_origin=scores_origin)
            return Module(call, framework="torch", name=short, layers=layers,
                          output=output if short == "Sequential" else None)
        if short == "ModuleDict":
            return Module(call, framework="torch", name=short, layers=None)
        layer = torch_layer(call, short)
        if layer is None:
            return None
        return Module(call, framework="torch", name=short, layers=(layer,), output=layer.output, units=layer.units,
                      origin=call)

    def _children(self, call: cst.Call, at: cst.CSTNode, depth: int) -> tuple[tuple[Layer, ...] | None, Output | None]:
        """The layers of `nn.Sequential(a, b, *rest)` / `nn.ModuleList([...])` and what the last one outputs."""
        elements: list[tuple[cst.BaseExpression, cst.CSTNode]] = []
        for a in call.args:
            if a.keyword is not None:
                continue
            if a.star == "*":
                more = self._list_elements(a.value, at)
                if more is None:
                    return None, None
                elements.extend(more)
            elif isinstance(a.value, (cst.List, cst.Tuple)):
                elements.extend((e.value, at) for e in a.value.elements if isinstance(e, cst.Element))
            elif self.facts.qualname(a.value.func if isinstance(a.value, cst.Call) else a.value) in (
                    "collections.OrderedDict",):
                return None, None
            else:
                more = self._list_elements(a.value, at) if isinstance(a.value, cst.Name) else None
                if more is not None and not isinstance(self.of(a.value, at, depth), Module):
                    elements.extend(more)
                else:
                    elements.append((a.value, at))
        layers: list[Layer] = []
        output: Output | None = None
        for e, where in elements:
            m = self.of(e, where, depth)
            if not isinstance(m, Module):
                return None, None
            if m.layers is None:
                return None, None
            layers.extend(m.layers)
            output = m.output
        return tuple(layers), output

    def _list_elements(self, expr: cst.BaseExpression, at: cst.CSTNode) -> list[tuple[cst.BaseExpression, cst.CSTNode]] | None:
        """The elements of a list a name holds: its literal, then every `append` / `extend` / `+=` on it in
        the same scope before ``at``. None when anything else could change it."""
        if isinstance(expr, (cst.List, cst.Tuple)):
            return [(e.value, at) for e in expr.elements if isinstance(e, cst.Element)]
        if not isinstance(expr, cst.Name):
            return None
        facts = self.facts
        b = facts.lookup(expr.value, at)
        if b is None or not isinstance(b.value, (cst.List, cst.Tuple)):
            return None
        out = [(e.value, at) for e in b.value.elements if isinstance(e, cst.Element)]
        if any(not isinstance(e, cst.Element) for e in b.value.elements):
            return None
        w_at = facts.where.get(at)
        scope = w_at.function if w_at is not None else None
        for c in facts.index.get("Call", ()):
            f = c.func
            if not (isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value == expr.value):
                continue
            w = facts.where[c]
            if w.function is not scope or (w_at is not None and w.order > w_at.order) or w.order < b.order:
                continue
            if f.attr.value == "append" and len(c.args) == 1:
                out.append((c.args[0].value, c))
            elif f.attr.value == "extend" and len(c.args) == 1 and isinstance(c.args[0].value, (cst.List, cst.Tuple)):
                out.extend((e.value, c) for e in c.args[0].value.elements if isinstance(e, cst.Element))
            else:
                return None
        for aug in facts.index.get("AugAssign", ()):
            if isinstance(aug.target, cst.Name) and aug.target.value == expr.value:
                w = facts.where[aug]
                if w.function is scope:
                    return None
        return out

    def _keras(self, call: cst.Call, q: str, short: str, at: cst.CSTNode, depth: int) -> Obj | None:
        if q.startswith("keras.losses.") and short in KERAS_CROSSENTROPY and short[:1].isupper():
            from_logits = literal(argument(call, "from_logits", 0)) if argument(call, "from_logits", 0) is not None \
                else False
            return Loss(call, name=short, framework="keras", expects=keras_loss_expects(short, from_logits),
                        targets=KERAS_CROSSENTROPY[short])
        if q in ("keras.Sequential", "keras.models.Sequential"):
            return self._keras_sequential(call, at, depth)
        if q in ("keras.Model", "keras.models.Model"):
            outputs = argument(call, "outputs", 1)
            t = self.of(outputs, at, depth) if outputs is not None else None
            if isinstance(t, Tensor):
                return Module(call, framework="keras", name="Model", layers=None, output=t.output, units=t.units,
                              scores=t.scores, origin=t.origin, scores_origin=t.scores_origin)
            return Module(call, framework="keras", name="Model", layers=None)
        if q.startswith("keras.layers."):
            layer = keras_layer(call, short)
            act = argument(call, "activation", 1 if short == "Dense" else 0) if short in ("Dense", "Activation") else None
            aq = self.facts.qualname(act) if isinstance(act, (cst.Name, cst.Attribute)) else None
            if layer.output is None and aq and aq.startswith("keras.activations."):  # `activation=tf.keras.activations.softmax`
                layer = dataclasses.replace(layer, output=KERAS_ACTIVATIONS.get(aq.rsplit(".", 1)[-1]))
            elif layer.output is None and aq and aq.rsplit(".", 1)[-1] in TF_ACTIVATIONS \
                    and aq[:aq.rfind(".") + 1] in TF_ACTIVATION_MODULES:  # `activation=tf.nn.softmax`
                layer = dataclasses.replace(layer, output=TF_ACTIVATIONS[aq.rsplit(".", 1)[-1]])
            return Module(call, framework="keras", name=short, layers=(layer,), output=layer.output, units=layer.units,
                          origin=call)
        return None

    def _keras_sequential(self, call: cst.Call, at: cst.CSTNode, depth: int) -> Module:
        """`keras.Sequential([...])` and the `model.add(...)` calls on it: its layers when every one is known;
        what it outputs (and its width) when its last layer is known, whatever the layers before it."""
        layers_arg = argument(call, "layers", 0)
        elements = self._list_elements(layers_arg, at) if layers_arg is not None else []
        adds = self._keras_adds(call, at)
        if elements is None or adds is None:
            return Module(call, framework="keras", name="Sequential", layers=None)
        members: list[Module | None] = []
        for e, where in elements:
            m = self.of(e, where, depth)
            members.append(m if isinstance(m, Module) else None)
        members.extend(adds)
        layers: list[Layer] | None = []
        output: Output | None = None
        last: Module | None = None
        for m in members:
            if layers is not None and m is not None and m.layers is not None:
                layers.extend(m.layers)
            else:
                layers = None
            identity = m is not None and m.layers is not None and [x.name for x in m.layers] == ["Identity"]
            if (m is None or m.name not in ("Input", "InputLayer") or m.output is not None) and not identity:
                last = m  # (`keras.Input(...)` first: the output is the layers' after it; an identity keeps it)
        if last is None:
            return Module(call, framework="keras", name="Sequential", layers=tuple(layers) if layers is not None else None)
        output = last.output
        units = output_units(layers) if layers else last.units
        scores, scores_origin = _scores_of(layers) if layers else (last.scores, last.scores_origin)
        return Module(call, framework="keras", name="Sequential", layers=tuple(layers) if layers is not None else None,
                      output=output, units=units, scores=scores, origin=last.origin, scores_origin=scores_origin)

    def _keras_adds(self, seq: cst.Call, at: cst.CSTNode) -> list[Module | None] | None:
        """`model.add(layer)` calls on the name a Sequential is bound to, in order."""
        holders = self.facts.holders(seq)
        names = [dotted(t.target) for h in holders if isinstance(h, cst.Assign) for t in h.targets]
        if len(names) != 1 or names[0] is None:
            return [] if not names else None
        name = names[0]
        hw = self.facts.where.get(holders[0])
        scope = hw.function if hw is not None else None
        start = hw.order if hw is not None else -1
        # the name is bound to another model by the next assignment to it in that function (a notebook's cells)
        rebound = [w.order for a in self.facts.index.get("Assign", ()) if any(dotted(t.target) == name for t in a.targets)
                   and (w := self.facts.where.get(a)) is not None and w.function is scope and w.order > start]
        end = min(rebound, default=1 << 60)
        out: list[Module | None] = []
        for c in self.facts.method_calls("add"):
            f = c.func
            w = self.facts.where.get(c)
            if isinstance(f, cst.Attribute) and f.attr.value == "add" and dotted(f.value) == name and c.args \
                    and w is not None and w.function is scope and start < w.order < end:
                # that Sequential's name, in its own function, while it holds it
                m = self.of(c.args[0].value, c)
                around = hw.blocks if hw is not None else ()
                conditional = any(isinstance(b, (cst.If, cst.While, cst.Try)) and b not in around for b in w.blocks)
                out.append(m if isinstance(m, Module) and not conditional else None)
        return out

    def _model_value(self, v: ModelValue, call: cst.Call) -> Module:
        framework = v.qualname.split(".", 1)[0] if v.qualname else ""
        if framework == "transformers":
            return Module(call, framework="transformers", name=v.cls, pretrained=v.pretrained,
                          output=Output.LOGITS if v.head else None, known_mode_dependent=True)
        if framework == "diffusers":
            return Module(call, framework="diffusers", name=v.cls, pretrained=v.pretrained, known_mode_dependent=None)
        return Module(call, framework=framework, name=v.cls, pretrained=v.pretrained)

    # -- the file's own module classes -----------------------------------------------------------------
    def _class_module(self, cls: cst.ClassDef, call: cst.Call | None) -> Module | None:
        """An instance of a class of the file: a Module when the class derives from `nn.Module` or a Keras
        model/layer (through the file's classes), with the layers its methods build; else None."""
        if cls in self._classes:
            m = self._classes[cls]
            return m
        self._classes[cls] = None  # recursion guard
        framework = self._module_framework(cls)
        if framework is None:
            return None
        layers: list[Layer] | None = []
        for klass in [cls, *self._file_bases(cls)]:
            for a in self.facts.index.get("Assign", ()):
                fn = self.facts.where[a].function
                if not isinstance(fn, cst.FunctionDef) or self.graph.class_of(fn) is not klass:
                    continue
                for t in a.targets:
                    if isinstance(t.target, cst.Attribute) and isinstance(t.target.value, cst.Name) \
                            and t.target.value.value == "self":
                        layers = self._add_member(layers, a.value, a)
            for c in self.facts.index.get("Call", ()):
                w = self.facts.where[c]
                if klass not in w.blocks:
                    continue
                f = c.func
                if isinstance(f, cst.Attribute) and dotted(f.value) == "self" and f.attr.value in (
                        "add_module", "register_module") and len(c.args) >= 2:
                    layers = self._add_member(layers, c.args[1].value, c, required=True)
                elif self.facts.qualname(f) == "torch.nn.functional.dropout" or (
                        isinstance(f, cst.Attribute) and f.attr.value == "dropout" and dotted(f.value) in ("F", "nn.functional")):
                    training = argument(c, "training", 2)
                    if training is not None and literal(training) is not False and layers is not None:
                        layers.append(Layer("dropout", c, mode_dependent=True))
        returned = self._forward_tensor(cls, framework)
        module = Module(cls, framework=framework, name=cls.name.value, classdef=cls,
                        layers=tuple(layers) if layers is not None else None,
                        output=returned.output if returned is not None else None,
                        units=returned.units if returned is not None else None,
                        scores=returned.scores if returned is not None else None,
                        origin=returned.origin if returned is not None else None,
                        scores_origin=returned.scores_origin if returned is not None else None)
        self._classes[cls] = module
        return module

    def _add_member(self, layers: list[Layer] | None, value: cst.BaseExpression, at: cst.CSTNode,
                    required: bool = False) -> list[Layer] | None:
        """Adds what `self.x = value` brings to a module's layers: its layers when it is a module; nothing
        when it is certainly not one (a number, a string, a tensor, a loss); unknown otherwise."""
        if layers is None:
            return None
        if literal(value) is not UNKNOWN or isinstance(value, (cst.SimpleString, cst.FormattedString)):
            return layers
        obj = self.of(value, at)
        if isinstance(obj, Module):
            return layers + list(obj.layers) if obj.layers is not None else None
        if isinstance(obj, (Tensor, Number, Loss, Loader, Optimizer)):
            return layers
        if not required and isinstance(value, (cst.Name, cst.Attribute, cst.Subscript)):
            # `self.num_classes = num_classes`, `self.config = config`: a module only if given one
            if obj is None and isinstance(value, cst.Name) and self._parameter_is_module_free(value, at):
                return layers
        return None

    def _parameter_is_module_free(self, name: cst.Name, at: cst.CSTNode) -> bool:
        """A constructor parameter every instantiation fills with a literal (a size, a rate, a flag)."""
        b = self.facts.lookup(name.value, at)
        fn = self._parameter_of(b, at) if b is not None else None
        if fn is None or fn.name.value != "__init__":
            return False
        cls = self.graph.class_of(fn)
        if cls is None:
            return False
        calls = self._instantiations(cls)
        if not calls:
            return b is not None and b.value is not None and literal(b.value) is not UNKNOWN
        for call in calls:
            given = self._init_argument(call, fn, name.value)
            if given is None or (literal(given) is UNKNOWN and not isinstance(self.of(given, call), Number)):
                return False
        return True

    def _module_framework(self, cls: cst.ClassDef) -> str | None:
        for klass in [cls, *self._file_bases(cls)]:
            for arg in klass.bases:
                q = self.facts.qualname(arg.value) or ""
                if q in ("torch.nn.Module", "torch.nn.modules.module.Module"):
                    return "torch"
                if q in ("lightning.LightningModule", "pytorch_lightning.LightningModule",
                         "lightning.pytorch.LightningModule", "pytorch_lightning.core.LightningModule"):
                    return "torch"
                if q in _KERAS_MODEL_CLASSES or q in ("keras.layers.Layer", "keras.Layer"):
                    return "keras"
        return None

    def _forward_tensor(self, cls: cst.ClassDef, framework: str) -> Tensor | None:
        """What the class's `forward` (Keras: `call`) returns on every path, as far as all returns agree."""
        methods = self.graph.methods(cls)
        fn = methods.get("forward" if framework == "torch" else "call")
        if fn is None:
            return None
        rets = [r for r in self.facts.index.get("Return", ()) if (w := self.facts.where.get(r)) is not None
                and w.function is fn]
        if not rets or any(r.value is None for r in rets):
            return None
        ts = [self.of(r.value, r) for r in rets]
        if not all(isinstance(t, Tensor) for t in ts):
            return None
        m = merge(ts)
        return m if isinstance(m, Tensor) else None


def _collect_paths(target: cst.BaseExpression, path: tuple[int, ...], assign: cst.Assign,
                   out: dict[int, tuple[cst.Assign, tuple[int, ...]]]) -> None:
    """The names of a tuple target and their positions in it: `(x, y), (xt, yt)` → y at (0, 1)."""
    if isinstance(target, cst.Name):
        if path:
            out[id(target)] = (assign, path)
    elif isinstance(target, (cst.Tuple, cst.List)) and all(isinstance(e, cst.Element) for e in target.elements):
        for i, e in enumerate(target.elements):
            _collect_paths(e.value, (*path, i), assign, out)


def _literal_labels(value: object) -> Output | None:
    """What a literal array of labels holds: ONE_HOT when every innermost row has two or more 0/1 entries of
    which exactly one is 1; CLASS_IDS for a flat list of non-negative integers; None otherwise."""
    if not isinstance(value, list) or not value:
        return None
    if all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in value):
        return Output.CLASS_IDS
    rows: list[list[object]] = []
    todo: list[object] = [value]
    while todo:
        v = todo.pop()
        if not isinstance(v, list) or not v:
            return None
        if all(isinstance(x, list) for x in v):
            todo.extend(v)
        elif all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
            rows.append(v)
        else:
            return None
    if rows and all(len(r) >= 2 and all(x in (0, 1) for x in r) and sum(1 for x in r if x == 1) == 1 for r in rows):
        return Output.ONE_HOT
    return None


def _activated(call: cst.Call, out: Output, inner: Obj | None) -> Tensor:
    """What an activation function (`F.softmax(x)`, `x.relu()`, `tf.sigmoid(x)`) makes of ``inner``."""
    t = inner if isinstance(inner, Tensor) else Tensor(None)
    if out is Output.CLASS_IDS:
        return Tensor(call, output=out, graph=False)
    normalised = out in _NORMALISED
    return Tensor(call, output=out, graph=t.graph, units=t.units, scores=t.output if normalised else None,
                  origin=call, scores_origin=t.origin if normalised else None)


def _scores_of(layers: tuple[Layer, ...] | list[Layer]) -> tuple[Output | None, cst.CSTNode | None]:
    """What the last layer's softmax / log-softmax / sigmoid normalises, and where that is made: the output of
    the layer before it (a ReLU's, a Linear's), or the linear part of a layer with its own activation
    (`Dense(10, activation="softmax")`)."""
    last = layers[-1]
    if last.output not in _NORMALISED:
        return None, None
    if last.name not in WIDTH_KEEPING:  # `Dense(n, activation="softmax")`: over its own linear part
        return Output.LOGITS, last.node
    return (layers[-2].output, layers[-2].node) if len(layers) >= 2 else (None, None)


def torch_layer(call: cst.Call, short: str) -> Layer | None:
    """A `torch.nn` layer made by ``call``: whether it depends on the mode and what it outputs."""
    if short in TORCH_MODE_DEPENDENT:
        p = literal(argument(call, "p", 0)) if short.startswith(("Dropout", "AlphaDropout", "FeatureAlpha")) else None
        return Layer(short, call, mode_dependent=not (p == 0 or p == 0.0) if p is not UNKNOWN and p is not None else True)
    if short in TORCH_DROPOUT_ARGUMENT:
        given = argument(call, "dropout")
        p = literal(given) if given is not None else TORCH_DROPOUT_ARGUMENT[short]
        if p is UNKNOWN:
            return Layer(short, call, mode_dependent=None)
        return Layer(short, call, mode_dependent=bool(p))
    if short in TORCH_RUNNING_STATS_OPTIONAL:
        track = literal(argument(call, "track_running_stats", 4))
        return Layer(short, call, mode_dependent=True if track is True else (None if track is UNKNOWN and
                                                                               argument(call, "track_running_stats", 4) is not None else False))
    if short in TORCH_MODE_FREE:
        units = literal(argument(call, "out_features", 1)) if short in ("Linear", "LazyLinear") else None
        return Layer(short, call, mode_dependent=False, output=TORCH_LAYER_OUTPUT.get(short),
                     units=units if isinstance(units, int) else None)
    return None


def keras_layer(call: cst.Call, short: str) -> Layer:
    """A Keras layer made by ``call``."""
    if short in KERAS_MODE_DEPENDENT:
        return Layer(short, call, mode_dependent=True)
    if short in ("Dense", "Conv1D", "Conv2D", "Conv3D"):
        act_expr = argument(call, "activation", 1)
        act = literal(act_expr) if act_expr is not None else None
        units = literal(argument(call, "units", 0)) if short == "Dense" else None
        out = KERAS_ACTIVATIONS.get(act) if act is None or isinstance(act, str) else None
        return Layer(short, call, mode_dependent=False, output=out, units=units if isinstance(units, int) else None)
    if short == "Activation":
        act = literal(argument(call, "activation", 0))
        if act == "linear":  # the identity (a cast to the layer's dtype): what it is given comes out
            return Layer("Identity", call, mode_dependent=False)
        return Layer(short, call, mode_dependent=False, output=KERAS_ACTIVATIONS.get(act) if isinstance(act, str) else None)
    if short == "Softmax":
        return Layer(short, call, mode_dependent=False, output=Output.PROBABILITIES)
    if short in ("ReLU",):
        return Layer(short, call, mode_dependent=False, output=Output.NON_NEGATIVE)
    if short in ("Input", "InputLayer", "Flatten", "Reshape", "Embedding", "LayerNormalization", "MaxPooling1D",
                 "MaxPooling2D", "GlobalAveragePooling1D", "GlobalAveragePooling2D", "GlobalMaxPooling1D",
                 "GlobalMaxPooling2D", "AveragePooling2D", "Concatenate", "Add", "Rescaling", "Normalization",
                 "Lambda"):
        return Layer(short, call, mode_dependent=False)
    return Layer(short, call, mode_dependent=None)


def _turns_grad_off(facts: Facts, expr: cst.BaseExpression) -> bool:
    """`torch.no_grad()` (a decorator may omit the call), `inference_mode()` (not `inference_mode(False)`),
    `set_grad_enabled(False)`."""
    call = expr if isinstance(expr, cst.Call) else None
    func = call.func if call is not None else expr
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    first = call.args[0].value if call is not None and call.args else None
    if name in _GRAD_OFF:
        return not (name == "inference_mode" and isinstance(first, cst.Name) and first.value == "False")
    return name == "set_grad_enabled" and isinstance(first, cst.Name) and first.value == "False"


def program(facts: Facts) -> Program:
    """The program model of a file (built once, kept with the file's facts)."""
    p: Program | None = facts.__dict__.get("_program")
    if p is None:
        p = facts.__dict__["_program"] = Program(facts)
    return p

