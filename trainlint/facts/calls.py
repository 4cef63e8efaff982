"""The file's own call graph: which function or method of the file a call runs, what its parameters are
bound to there, and how an object of the caller (a name, `self.<attr>`) is spelt inside the callee."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from trainlint.facts.expr import dotted
from trainlint.facts.loops import module_itself
from trainlint.facts.values import ClassValue

if TYPE_CHECKING:
    from trainlint.facts.core import Facts
    from trainlint.facts.scopes import Binding


def parameters(fn: cst.FunctionDef) -> list[cst.Param]:
    """The named parameters of ``fn`` (positional-only, ordinary, keyword-only), not `*args`/`**kwargs`."""
    p = fn.params
    return [*p.posonly_params, *p.params, *p.kwonly_params]


def is_parameter(fn: cst.FunctionDef, binding: Binding) -> bool:
    """``binding`` (a :class:`~trainlint.facts.scopes.Binding`) is that of one of ``fn``'s parameters."""
    return any(p.name is binding.target for p in parameters(fn))


class CallGraph:
    """Calls of a file resolved to the file's own `def`s: `helper(...)` (a function the name is bound to)
    and `self.method(...)` (a method of the enclosing class, or of a base class defined in the file)."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        #: enclosing function (None: the module) -> the calls in it, in document order
        self.calls_in: dict[cst.FunctionDef | cst.Lambda | None, list[cst.Call]] = {}
        for call in facts.index.get("Call", ()):
            w = facts.where.get(call)
            if w is not None:
                self.calls_in.setdefault(w.function, []).append(call)
        self._targets: dict[cst.Call, cst.FunctionDef | None] = {}
        self._resolved: dict[cst.Call, cst.FunctionDef | None] = {}
        self._callers: dict[cst.FunctionDef, list[cst.Call]] | None = None
        self._methods: dict[cst.ClassDef, dict[str, cst.FunctionDef]] = {}

    # -- resolution --------------------------------------------------------------------------------
    def class_of(self, fn: cst.FunctionDef) -> cst.ClassDef | None:
        """The class ``fn`` is a method of (defined directly in its body), else None."""
        w = self.facts.where.get(fn)
        return w.blocks[-1] if w is not None and w.blocks and isinstance(w.blocks[-1], cst.ClassDef) else None

    def methods(self, cls: cst.ClassDef, _depth: int = 0) -> dict[str, cst.FunctionDef]:
        """The methods of ``cls`` by name, with those of its bases defined in the file (the class's own win)."""
        found = self._methods.get(cls)
        if found is not None:
            return found
        out: dict[str, cst.FunctionDef] = {}
        if _depth < 5:
            for arg in reversed(cls.bases):
                if isinstance(arg.value, cst.Name):
                    b = self.facts.lookup(arg.value.value, cls)
                    if b is not None and isinstance(b.value, cst.ClassDef) and b.value is not cls:
                        out.update(self.methods(b.value, _depth + 1))
        for st in cls.body.body:
            if isinstance(st, cst.FunctionDef):
                out[st.name.value] = st
        self._methods[cls] = out
        return out

    def target(self, call: cst.Call) -> cst.FunctionDef | None:
        """The `def` of the file ``call`` runs, if the file says which."""
        if call in self._targets:
            return self._targets[call]
        facts = self.facts
        fn = None
        func = call.func
        if isinstance(func, cst.Name):
            b = facts.lookup(func.value, call)
            if b is not None and isinstance(b.value, cst.FunctionDef):
                fn = b.value
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            w = facts.where.get(call)
            caller = w.function if w is not None else None
            cls = self.class_of(caller) if isinstance(caller, cst.FunctionDef) else None
            if cls is not None:
                fn = self.methods(cls).get(func.attr.value)
        self._targets[call] = fn
        return fn

    def resolve(self, call: cst.Call) -> cst.FunctionDef | None:
        """:meth:`target`, and also a method of the file's class whose instance the receiver holds
        (`tracker.update(loss)` with `tracker = Meter()`, `model.val_start()`; see :meth:`instance_class`)."""
        if call in self._resolved:
            return self._resolved[call]
        self._resolved[call] = fn = self.target(call)
        f = call.func
        if fn is None and isinstance(f, cst.Attribute) and dotted(f.value) not in (None, "self"):
            cls = self.instance_class(f.value, call)
            if cls is not None:
                self._resolved[call] = fn = self.methods(cls).get(f.attr.value)
        return fn

    def instance_class(self, expr: cst.BaseExpression, at: cst.CSTNode, _depth: int = 0) -> cst.ClassDef | None:
        """The class of the file whose instance ``expr`` (a name, or `self.<attr>` in a method) holds at ``at``:
        made there (`tracker = Meter()`), given to a parameter by every call of the function
        (`train(model)` where `model = VSE(opt)`), or assigned to `self.<attr>` by the class's methods."""
        if _depth > 4:
            return None
        facts = self.facts
        w = facts.where.get(at)
        fn = w.function if w is not None else None
        if isinstance(expr, cst.Name):
            b = facts.lookup(expr.value, at)
            if b is None:
                return None
            if isinstance(b.value, cst.Call):
                return self._made_class(b.value, at)
            if not (isinstance(fn, cst.FunctionDef) and is_parameter(fn, b)):
                return None
            found: set[cst.ClassDef | None] = set()
            for site in self.callers(fn):
                given = self.argument_of(site, fn, expr.value)
                found.add(self.instance_class(given, site, _depth + 1) if isinstance(given, cst.Name) else None)
            return found.pop() if len(found) == 1 else None
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self" \
                and isinstance(fn, cst.FunctionDef):
            cls = self.class_of(fn)
            if cls is None:
                return None
            found = set()
            for a in facts.index.get("Assign", ()):
                if any(isinstance(t.target, cst.Attribute) and dotted(t.target) == f"self.{expr.attr.value}"
                       for t in a.targets) and cls in facts.where[a].blocks:
                    found.add(self._made_class(a.value, a))
            return found.pop() if len(found) == 1 else None
        return None

    def _made_class(self, expr: cst.BaseExpression, at: cst.CSTNode) -> cst.ClassDef | None:
        """The class of the file that ``expr`` instantiates (`VSE(opt)`, `Meter().to(device)`)."""
        expr = module_itself(expr)
        if not (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name)):
            return None
        v = self.facts.value_of(expr.func, expr if expr in self.facts.where else at)
        return v.node if isinstance(v, ClassValue) and isinstance(v.node, cst.ClassDef) else None

    def callers(self, fn: cst.FunctionDef) -> list[cst.Call]:
        """The calls of the file that run ``fn``."""
        if self._callers is None:
            self._callers = {}
            for calls in self.calls_in.values():
                for c in calls:
                    t = self.target(c)
                    if t is not None:
                        self._callers.setdefault(t, []).append(c)
        return self._callers.get(fn, [])

    # -- arguments ---------------------------------------------------------------------------------
    @staticmethod
    def _params(fn: cst.FunctionDef, bound_self: bool) -> list[cst.Param]:
        params = list(fn.params.posonly_params) + list(fn.params.params)
        return params[1:] if bound_self and params else params

    def argument_of(self, call: cst.Call, fn: cst.FunctionDef, param: str) -> cst.BaseExpression | None:
        """The expression ``call`` gives ``fn``'s parameter ``param`` (its default when not given)."""
        bound_self = isinstance(call.func, cst.Attribute)
        for a in call.args:
            if a.keyword is not None and a.keyword.value == param:
                return a.value
        params = self._params(fn, bound_self)
        index = next((i for i, p in enumerate(params) if p.name.value == param), None)
        if index is not None:
            pos = []
            for a in call.args:
                if a.star:
                    return None  # `f(*args)`: cannot tell
                if a.keyword is None:
                    pos.append(a)
            if index < len(pos):
                return pos[index].value
        for p in params + list(fn.params.kwonly_params):
            if p.name.value == param:
                return p.default
        return None

    def local_names(self, fn: cst.FunctionDef) -> dict[str, list[Binding]]:
        """The names ``fn`` binds itself (parameters, assignments, loop targets, nested defs)."""
        return self.facts.bindings.get(fn, {})

    def inside(self, call: cst.Call, fn: cst.FunctionDef, outer: str) -> str | None:
        """How the caller's object ``outer`` (a dotted name at ``call``) is spelt inside ``fn``: the
        parameter it is given to (or an attribute of it), `self.<attr>` for a method called on `self` (or,
        for `obj.method()`, `obj.<attr>` → `self.<attr>`), or the same global name when ``fn`` reads it
        without binding it. None: ``fn`` does not see it."""
        bound_self = isinstance(call.func, cst.Attribute)
        for p in self._params(fn, bound_self) + list(fn.params.kwonly_params):
            given = self.argument_of(call, fn, p.name.value)
            if given is not None and dotted(given) == outer:
                return p.name.value
        for p in self._params(fn, bound_self) + list(fn.params.kwonly_params):
            given = self.argument_of(call, fn, p.name.value)
            d = dotted(given) if given is not None else None
            if d is not None and outer.startswith(d + "."):
                return p.name.value + outer[len(d):]  # `encode(model)`: `model.encoder` is `model.encoder` there
        head = outer.split(".", 1)[0]
        receiver = dotted(call.func.value) if isinstance(call.func, cst.Attribute) else None
        if bound_self and receiver != "self":
            # `tracker.update(x)` running a method of the file: the callee's `self` is `tracker`
            if receiver is not None and (outer == receiver or outer.startswith(receiver + ".")) \
                    and self.class_of(fn) is not None:
                return "self" + outer[len(receiver):]
            if head == "self":
                return None
        if head == "self":
            return outer if bound_self and self.class_of(fn) is not None else None
        w = self.facts.where.get(call)
        caller = w.function if w is not None else None
        if head in self.local_names(fn) or (caller is not None and head in self.facts.bindings.get(caller, {})):
            return None
        return outer  # a module-level object, read as a global on both sides

    def outside(self, call: cst.Call, fn: cst.FunctionDef, inner: str) -> str | None:
        """The inverse of :meth:`inside`: how ``fn``'s object ``inner`` is spelt at ``call``."""
        head = inner.split(".", 1)[0]
        bound_self = isinstance(call.func, cst.Attribute)
        if head == "self":
            receiver = dotted(call.func.value) if isinstance(call.func, cst.Attribute) else None
            return None if receiver is None else receiver + inner[len("self"):]
        if any(p.name.value == head for p in self._params(fn, bound_self) + list(fn.params.kwonly_params)):
            given = self.argument_of(call, fn, head)
            d = dotted(given) if given is not None else None
            return None if d is None else d + inner[len(head):]
        if head in self.local_names(fn):
            return None
        w = self.facts.where.get(call)
        caller = w.function if w is not None else None
        if caller is not None and head in self.facts.bindings.get(caller, {}):
            return None  # the caller has a local of that name: not the global the callee reads
        return inner


def call_graph(facts: Facts) -> CallGraph:
    """The file's call graph (built once per file, kept on the file's facts: a weak-keyed cache
    whose value refers to its key would keep every file's facts alive)."""
    g: CallGraph | None = facts.__dict__.get("_call_graph")
    if g is None:
        g = facts.__dict__["_call_graph"] = CallGraph(facts)
    return g
