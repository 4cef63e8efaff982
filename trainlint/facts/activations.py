"""What activation a torch tensor carries when it reaches a loss: the softmax or sigmoid (or log-softmax)
taken on it, followed through names, loop variables, reshapes, the file's layers (`nn.Softmax`, an
`nn.Sequential` ending in one), the `forward` of a model class of the file, and code outside the file that
is only given a layer and its input.

``activations(facts).activation(expr, at)`` answers ``(kind, node)`` — kind "softmax", "sigmoid",
"log_softmax", or "softmax-log" (the log-softmax of a softmax); node where the activation is taken — or
None when the source does not show one on every path. ``loss_kind(call)`` names the logits losses
(`F.cross_entropy`, `criterion = nn.CrossEntropyLoss()` called) and what they apply themselves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import libcst as cst

from trainlint.facts.calls import call_graph, is_parameter
from trainlint.facts.expr import argument
from trainlint.facts.walk import iter_nodes

if TYPE_CHECKING:
    from trainlint.facts.core import Facts

#: losses that apply (log-)softmax / sigmoid themselves → the activation they must not be given
_LOGIT_LOSSES = {
    "torch.nn.CrossEntropyLoss": "softmax", "torch.nn.functional.cross_entropy": "softmax",
    "torch.nn.BCEWithLogitsLoss": "sigmoid", "torch.nn.functional.binary_cross_entropy_with_logits": "sigmoid",
    "torch.nn.NLLLoss": "softmax-nll", "torch.nn.functional.nll_loss": "softmax-nll",
}
_ACTIVATIONS = {
    "torch.softmax": "softmax", "torch.nn.functional.softmax": "softmax", "torch.sigmoid": "sigmoid",
    "torch.nn.functional.sigmoid": "sigmoid", "torch.special.softmax": "softmax", "torch.special.expit": "sigmoid",
}
_ACTIVATION_MODULES = {"torch.nn.Softmax": "softmax", "torch.nn.Sigmoid": "sigmoid",
                       "torch.nn.LogSoftmax": "log_softmax"}
_LOG_SOFTMAX = frozenset({"torch.log_softmax", "torch.nn.functional.log_softmax", "torch.special.log_softmax"})
#: tensor methods that only reshape, select, move or cast: probabilities stay probabilities
_KEEPING_METHODS = frozenset({
    "view", "reshape", "view_as", "reshape_as", "squeeze", "unsqueeze", "transpose", "permute", "contiguous",
    "flatten", "t", "to", "cuda", "cpu", "float", "double", "half", "type", "clone",
})
#: the torch functions of the same kind, on their first argument
_KEEPING_FUNCTIONS = frozenset({"torch.reshape", "torch.squeeze", "torch.unsqueeze", "torch.transpose", "torch.permute",
                                "torch.flatten"})
#: torch functions that run the callable they are given on the other arguments and return its output
_APPLYING_FUNCTIONS = frozenset({"torch.utils.checkpoint.checkpoint", "torch.utils.checkpoint.checkpoint_sequential"})
#: how far an activation is followed through names, wrappers, layers and model classes
_MAX_DEPTH = 10


def _is_self_attr(expr: object) -> bool:
    return isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self"


def _called_object(func: cst.BaseExpression) -> cst.BaseExpression:
    """`model.forward` → `model`: calling `forward` directly computes what calling the module does."""
    if isinstance(func, cst.Attribute) and func.attr.value == "forward":
        return func.value
    return func


def _torch_name(qn: str | None) -> str | None:
    """`torch.nn.modules.loss.CrossEntropyLoss` → `torch.nn.CrossEntropyLoss`."""
    if not qn:
        return None
    if qn.startswith("torch.nn.modules."):
        return "torch.nn." + qn.rsplit(".", 1)[-1]
    return qn




class Activations:
    """The activations of one file's tensors (built once per file by :func:`activations`)."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self._loop_sources: dict[int, tuple[cst.For, cst.BaseExpression]] | None = None
        self._attrs: dict[cst.ClassDef, dict[str, list[cst.BaseExpression]]] = {}

    def code(self, node: cst.CSTNode) -> str:
        return str(self.facts.module.code_for_node(node))

    def loss_kind(self, call: cst.Call) -> tuple[str, str] | None:
        """(loss name, expected) if `call` computes a logits loss: `F.cross_entropy(...)`,
        `criterion(...)` with `criterion = nn.CrossEntropyLoss()`, `nn.CrossEntropyLoss()(...)`."""
        facts = self.facts
        qn = _torch_name(facts.callee(call))
        if qn in _LOGIT_LOSSES and qn.startswith("torch.nn.functional."):
            return qn.rsplit(".", 1)[-1], _LOGIT_LOSSES[qn]
        ctor: Any = _called_object(call.func)
        if isinstance(ctor, cst.Name):  # (a parameter: what the file's calls give it)
            ctor = self._made(ctor.value, call)
        if _is_self_attr(ctor):  # self.criterion(...) with self.criterion = nn.CrossEntropyLoss()
            ctor = self._self_attr(call, ctor.attr.value)
            if isinstance(ctor, cst.Name):  # `self.loss_func = loss_func`: the parameter's default
                ctor = self._parameter_default(ctor.value, call)
        while (isinstance(ctor, cst.Call) and isinstance(ctor.func, cst.Attribute)
               and ctor.func.attr.value in ("to", "cuda", "cpu")):
            ctor = ctor.func.value  # nn.CrossEntropyLoss().cuda()
        if isinstance(ctor, cst.Call):
            cq = _torch_name(facts.callee(ctor))
            if cq in _LOGIT_LOSSES and not cq.startswith("torch.nn.functional."):
                return cq.rsplit(".", 1)[-1], _LOGIT_LOSSES[cq]
        return None

    def activation(self, expr: cst.BaseExpression | None, at: cst.CSTNode, depth: int = 0) -> tuple[str, cst.CSTNode] | None:
        """(kind, node) when `expr` is (or names) an activation's output: kind "softmax", "sigmoid",
        "log_softmax", or "softmax-log" (the log-softmax of a softmax); node is where the activation is taken."""
        facts = self.facts
        if depth > _MAX_DEPTH or expr is None:
            return None
        if isinstance(expr, cst.Name):
            b = facts.lookup(expr.value, at)
            if b is None:
                return None
            value: Any = b.value
            bound_at: Any
            if value is None:  # a loop variable: an element of what the loop iterates over
                value = self._loop_source(b.target)
                bound_at = self._loops().get(id(b.target), (None,))[0]
            else:
                bound_at = value
            if value is None or bound_at not in facts.where or at not in facts.where:
                return None
            if facts.where[bound_at].function is not facts.where[at].function:
                return None
            if any(x.order < facts.where[at].order and not facts.in_bound_value(x, at)
                   for x in facts.assigned_later(expr.value, bound_at)):
                return None  # rebound in between (`probs = probs.log()` is read where it is rebound: not that)
            found = self.activation(value, bound_at, depth + 1)
            if found is not None and b.value is not None and self._conditional(bound_at, at):
                # `out = model(x)` / `if probs: out = F.softmax(out)`: the binding before reaches the loss too
                w = facts.where[at]
                earlier = [x for x in facts.bindings.get(w.function, {}).get(expr.value, ()) if x.order < b.order]
                if earlier and (not isinstance(earlier[-1].value, cst.BaseExpression) or earlier[-1].value
                                not in facts.where or self.activation(
                                    earlier[-1].value, earlier[-1].value, depth + 1) is None):
                    return None
            return found
        if isinstance(expr, cst.Subscript):  # probs[i], probs[:, :k]: a part of the same probabilities
            return self.activation(expr.value, at, depth + 1)
        if not isinstance(expr, cst.Call):
            return None
        qn = facts.callee(expr)
        if qn in _ACTIVATIONS:
            return _ACTIVATIONS[qn], expr
        func: Any = expr.func
        method = func.attr.value if isinstance(func, cst.Attribute) and qn is None else None
        if qn in _KEEPING_FUNCTIONS or method in _KEEPING_METHODS:  # probs.view(-1, n), torch.squeeze(probs)
            return self.activation(argument(expr, "input", 0) if qn else func.value, at, depth + 1)
        if qn == "torch.exp" or (method == "exp" and not expr.args):
            # `torch.exp(F.log_softmax(x))`: the exponential of log-probabilities is the probabilities
            found = self.activation(argument(expr, "input", 0) if qn else func.value, at, depth + 1)
            return ("softmax", expr) if found is not None and found[0] in ("log_softmax", "softmax-log") else None
        layer = self.layer_activation(func, expr, depth + 1)
        if layer is None and (qn in _LOG_SOFTMAX or (method == "log_softmax" and not _is_self_attr(func))):
            layer = ("log_softmax", None)  # F.log_softmax(x), x.log_softmax(-1)
        if layer is not None:
            kind, node = layer
            if node is None and kind == "log_softmax":
                # `F.log_softmax(F.softmax(x))`: the log-probabilities of probabilities (a softmax applied twice)
                inner = func.value if method == "log_softmax" and qn is None and not _is_self_attr(func) \
                    else argument(expr, "input", 0)
                found = self.activation(inner, at, depth + 1)
                if found is not None and found[0] == "softmax":
                    return "softmax-log", found[1]
            return kind, expr if node is None else node
        if method in ("softmax", "sigmoid") and not _is_self_attr(func):
            return method, expr  # logits.softmax(-1)
        # `self.dropout_wrapper(x, nn.Sequential(self.fc, self.softmax))`, `checkpoint(self.head, x)`: code outside
        # the file given a layer and its input (and nothing else) returns what the layer computes
        given = [a.value for a in expr.args if a.keyword is None]
        if qn in _APPLYING_FUNCTIONS:
            layers = given[:1]
        elif len(given) == 2 and not any(a.star for a in expr.args) and self._foreign_callable(func, expr):
            layers = given
        else:
            layers = []
        for arg in layers:
            if isinstance(arg, (cst.Name, cst.Attribute, cst.Call)):
                inside = self.layer_activation(arg, expr, depth + 1, given=True)
                if inside is not None:
                    return inside[0], inside[1] if inside[1] is not None else arg
        return None

    def layer_activation(self, layer: Any, at: cst.CSTNode, depth: int,
                         given: bool = False) -> tuple[str, cst.CSTNode | None] | None:
        """(kind, node) when calling the module ``layer`` (`nn.Softmax(dim=1)`, `self.softmax`, an
        `nn.Sequential` ending in one, a model of the file whose `forward` returns one) returns an activation's
        output; node is None when ``layer`` is itself the activation module. ``given``: ``layer`` is an argument
        (a model of the file is then not taken: a function given a model need not return its output)."""
        facts = self.facts
        if depth > _MAX_DEPTH:
            return None
        layer = _called_object(layer)
        made: Any
        if isinstance(layer, cst.Name):
            made = self._made(layer.value, at)
        elif _is_self_attr(layer):  # self.softmax = nn.Softmax(dim=1)
            made = self._self_attr(at, layer.attr.value)
            if isinstance(made, cst.Name):  # `self.final_layer = final_layer`: the parameter's default
                made = self._parameter_default(made.value, at)
        elif isinstance(layer, cst.Call):
            made = layer
        else:
            return None
        for _ in range(3):
            moved = None
            while (isinstance(made, cst.Call) and isinstance(made.func, cst.Attribute)
                   and made.func.attr.value in ("to", "cuda", "cpu", "float", "double")):
                moved, made = made, made.func.value  # Net().to(device)
            if not (isinstance(made, cst.Name) and moved in facts.where):
                break
            made = self._made(made.value, moved)  # `model = model.to(device)`: what `model` was before
        if not given:
            made = self._built_by(made, depth)
        if not isinstance(made, cst.Call):
            return None
        cq = _torch_name(facts.callee(made))
        if cq in _ACTIVATION_MODULES:
            return _ACTIVATION_MODULES[cq], None
        if cq == "torch.nn.Sequential":  # nn.Sequential(..., nn.Softmax(dim=1))
            layers = [a.value for a in made.args if a.keyword is None and not a.star] or self._added_modules(made)
            if layers and isinstance(layers[-1], (cst.Call, cst.Attribute, cst.Name)):
                found = self.layer_activation(layers[-1], made if made in facts.where else at, depth + 1, given=True)
                if found is not None:
                    return found[0], found[1] if found[1] is not None else layers[-1]
            return None
        if not given and isinstance(made.func, cst.Name) and depth < _MAX_DEPTH:
            cb = facts.lookup(made.func.value, made) if made in facts.where else None
            if cb is not None and isinstance(cb.value, cst.ClassDef):  # a class Net(nn.Module) whose forward returns it
                return self.forward_activation(cb.value, depth)
        return None

    def _conditional(self, bound_at: cst.CSTNode, at: cst.CSTNode) -> bool:
        """The binding made at ``bound_at`` may be skipped on the way to ``at``: an `if`, `try` or `while` encloses
        it that does not enclose ``at``."""
        facts = self.facts
        around = {id(b) for b in facts.where[at].blocks}
        return any(isinstance(b, (cst.If, cst.Else, cst.Try, cst.ExceptHandler, cst.While)) and id(b) not in around
                   for b in facts.where[bound_at].blocks)

    def _loops(self) -> dict[int, tuple[cst.For, cst.BaseExpression]]:
        """id(loop variable) -> (the `for` statement, what the variable is an element of)."""
        loops = self._loop_sources
        if loops is None:
            loops = {}
            self._loop_sources = loops
            for node in self.facts.index.get("For", ()):
                target, source = node.target, node.iter
                if isinstance(target, cst.Name):
                    loops[id(target)] = (node, source)
                elif (isinstance(target, cst.Tuple) and isinstance(source, cst.Call)
                      and isinstance(source.func, cst.Name) and source.func.value in ("enumerate", "zip")
                      and not any(a.star or a.keyword for a in source.args)):
                    # `for i, p in enumerate(probs)`, `for p, y in zip(probs, labels)`
                    sources = [None, *(a.value for a in source.args)] if source.func.value == "enumerate" else \
                        [a.value for a in source.args]
                    for element, src in zip(target.elements, sources):
                        if isinstance(element.value, cst.Name) and src is not None:
                            loops[id(element.value)] = (node, src)
        return loops

    def _loop_source(self, target: cst.CSTNode) -> cst.BaseExpression | None:
        """What the loop variable ``target`` takes the elements of (`for out in outputs`: `outputs`)."""
        return self._loops().get(id(target), (None, None))[1]

    def _foreign_callable(self, func: cst.BaseExpression, at: cst.CSTNode) -> bool:
        """Calling ``func`` runs code the file does not define: a function imported from outside torch, or an
        object of such a class (`self.wrapper`, `wrapper = Wrapper(...)`)."""
        facts = self.facts
        qn = facts.qualname(func)
        if qn is not None:
            return not qn.startswith("torch.")
        made: Any
        if _is_self_attr(func):
            made = self._self_attr(at, cast(cst.Attribute, func).attr.value)
        elif isinstance(func, cst.Name):
            b = facts.lookup(func.value, at)
            made = b.value if b is not None else None
        else:
            return False
        if not isinstance(made, cst.Call):
            return False
        mq = facts.callee(made)
        return mq is not None and not mq.startswith("torch.")

    def _made(self, name: str, at: cst.CSTNode, _depth: int = 0) -> cst.BaseExpression | None:
        """What ``name`` holds at ``at``; for a parameter of the enclosing function, what every call of that
        function in the file gives it (`train(model, ...)`; a parameter of the caller in turn is followed to
        its own callers), or, when the file never calls it, the module-level object of the same name
        (`model = Net()` beside `def train(model, ...)`)."""
        facts = self.facts
        b = facts.lookup(name, at)
        if b is None:
            return None
        w = facts.where.get(at)
        fn = w.function if w is not None else None
        param = isinstance(fn, cst.FunctionDef) and any(
            p.name is b.target for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params))
        if not param or not isinstance(fn, cst.FunctionDef):
            return b.value if isinstance(b.value, cst.BaseExpression) else None
        graph = call_graph(facts)
        sites = graph.callers(fn)
        values: list[Any] = []
        for site in sites:
            given: Any = graph.argument_of(site, fn, name)
            if isinstance(given, cst.Name):
                g = facts.lookup(given.value, site)
                caller = facts.where[site].function if site in facts.where else None
                if g is not None and _depth < 3 and isinstance(caller, cst.FunctionDef) and is_parameter(caller, g):
                    given = self._made(given.value, site, _depth + 1)  # the caller's own parameter
                else:
                    given = g.value if g is not None else None
            values.append(given)
        if not sites and facts.where.get(fn) is not None and facts.where[fn].function is None:
            values = [b.value for b in facts.bindings.get(None, {}).get(name, ())]
        if not values or any(not isinstance(v, cst.BaseExpression) for v in values):
            return None
        texts = {self.code(v) for v in values}
        return values[0] if len(texts) == 1 else None

    def _parameter_default(self, name: str, at: cst.CSTNode) -> cst.BaseExpression | None:
        """The default of parameter ``name`` of the `__init__` of the class around ``at``
        (`def __init__(self, loss_func=CrossEntropyLoss())`), when the class body assigns it to `self`."""
        w = self.facts.where.get(at)
        cls: Any = w.inside(cst.ClassDef) if w is not None else None
        init = call_graph(self.facts).methods(cls).get("__init__") if cls is not None else None
        if init is None:
            return None
        for p in (*init.params.params, *init.params.kwonly_params):
            if p.name.value == name:
                return p.default
        return None

    def _built_by(self, made: Any, depth: int) -> Any:
        """A model a function of the file builds and returns (`model = build_model(...)`, `return model`):
        the expression the returned name was made from, in that function."""
        facts = self.facts
        if not (isinstance(made, cst.Call) and isinstance(made.func, cst.Name)) or depth > 3:
            return made
        b = facts.lookup(made.func.value, made) if made in facts.where else None
        fn = b.value if b is not None else None
        if not isinstance(fn, cst.FunctionDef):
            return made
        ret = facts._single_return(fn)
        if ret is None:
            return made
        value = ret.value
        if isinstance(value, cst.Name):
            rb = facts.lookup(value.value, ret)
            value = rb.value if rb is not None and isinstance(rb.value, cst.BaseExpression) else None
        return value if isinstance(value, cst.Call) else made

    def _added_modules(self, seq: cst.Call) -> list[cst.BaseExpression]:
        """The layers `model.add_module(name, layer)` / `model.append(layer)` add, in order, to an
        `nn.Sequential()` made empty and bound to a name, in the function that makes it."""
        facts = self.facts
        holder = next((a for a in facts.holders(seq) if isinstance(a, cst.Assign) and len(a.targets) == 1
                       and isinstance(a.targets[0].target, cst.Name)), None)
        if holder is None:
            return []
        name, scope = cast(cst.Name, holder.targets[0].target).value, facts.where[holder].function
        layers: list[cst.BaseExpression] = []
        for c in call_graph(facts).calls_in.get(scope, ()):
            f = c.func
            if (isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value == name
                    and f.attr.value in ("add_module", "append") and c.args):
                layers.append(c.args[-1].value)
        return layers

    def forward_activation(self, cls: cst.ClassDef, depth: int) -> tuple[str, cst.CSTNode] | None:
        """The activation every `return` of `cls.forward` applies, if one does."""
        facts = self.facts
        fwd = next((st for st in cls.body.body if isinstance(st, cst.FunctionDef) and st.name.value == "forward"), None)
        if fwd is None:
            return None
        found = None
        for ret in iter_nodes(fwd.body, (cst.Return,)):
            w = facts.where.get(ret)
            if w is None or w.function is not fwd:
                continue
            act = self.activation(ret.value, ret, depth + 1) if ret.value is not None else None
            if act is None or (found is not None and found[0] != act[0]):
                return None
            found = act
        return found

    def _self_attr(self, at: cst.CSTNode, attr: str) -> cst.BaseExpression | None:
        """The value assigned to `self.<attr>` in the class enclosing `at` (one assignment only)."""
        facts = self.facts
        w = facts.where.get(at)
        cls: Any = w.inside(cst.ClassDef) if w is not None else None
        if cls is None:
            return None
        cache = self._attrs
        if cls not in cache:
            values: dict[str, list[cst.BaseExpression]] = {}
            for a in facts.index.get("Assign", ()):
                if facts.where[a].inside(cst.ClassDef) is not cls:
                    continue
                for t in a.targets:
                    if _is_self_attr(t.target):
                        values.setdefault(t.target.attr.value, []).append(a.value)
            cache[cls] = values
        vals = cache[cls].get(attr, [])
        return vals[0] if len(vals) == 1 else None



def activations(facts: Facts) -> Activations:
    """The :class:`Activations` of a file (built once, kept with the file's facts)."""
    a: Activations | None = facts.__dict__.get("_activations")
    if a is None:
        a = facts.__dict__["_activations"] = Activations(facts)
    return a
