"""Where an object of the file goes: every place that reads it, followed through the names and `self.<attr>`
it is assigned to, the parameters of the file's functions it is given to, and what those functions return.

``flow(facts).uses(node)`` answers, for the object that ``node`` (a call that makes it, usually) evaluates
to, with one :class:`Use` per place the program reads it:

- ``"iter"``: iterated (`for b in loader`, `enumerate(loader)`, `tqdm(loader)`, `iter(loader)`,
  `loader.__iter__()`); ``node`` is the `For` (or the comprehension's `CompFor`, or the `iter()` call);
- ``"arg"``: given to a call that is not one of the file's functions (the library, or code out of sight);
  ``node`` is the call, ``detail`` the keyword or the position;
- ``"method"`` / ``"attr"``: a method called on it, an attribute read (``detail``: the name);
- ``"test"``: only tested (`x is None`, `if x:`);
- ``"escape"``: anything else: put in a container, returned to code out of sight, assigned to another
  object's attribute. The object may then be used in ways the file does not show.

A read of a name counts when the binding made by the assignment may reach it (the bindings of a name in
both branches of an `if` reach what follows). ``certain`` says that no other binding reaches it.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import libcst as cst

from trainlint.facts.calls import call_graph, parameters
from trainlint.facts.expr import dotted, literal
from trainlint.facts.walk import Links

if TYPE_CHECKING:
    from trainlint.facts.core import Facts
    from trainlint.facts.scopes import Binding

#: callables whose result iterates their (first) argument: iterating the result iterates the object
_ITERATING_WRAPPERS = frozenset({"enumerate", "zip", "reversed", "tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm",
                                 "tqdm.std.tqdm", "itertools.islice", "itertools.cycle", "itertools.chain"})
#: builtins that only read an object (its length, its type, its text)
_READING_BUILTINS = frozenset({"len", "print", "isinstance", "hasattr", "getattr", "id", "type", "str", "repr", "bool"})
_MAX_DEPTH = 8


@dataclasses.dataclass(frozen=True)
class Use:
    """One place where the program reads an object."""

    kind: str  # "iter" | "arg" | "method" | "attr" | "test" | "escape"
    node: cst.CSTNode  # the For / CompFor / call / attribute / the node where it escapes
    expr: cst.BaseExpression  # the expression that reads it there (a name, `self.x`, a call of the file's function)
    detail: str | int | None = None  # the keyword or position ("arg"), the method or attribute name
    certain: bool = True  # no other object can be read there


class Flow:
    """The uses of the file's objects. Built once per file by :func:`flow`."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self.graph = call_graph(facts)
        self.links = Links(facts.module)
        self.parent, self.reads = self.links.parent, self.links.reads
        self._memo: dict[int, list[Use]] = {}

    # -- the question ------------------------------------------------------------------------------
    def uses(self, node: cst.BaseExpression) -> list[Use]:
        """The places that read the object ``node`` evaluates to (see the module's documentation)."""
        key = id(node)
        if key not in self._memo:
            out: list[Use] = []
            self._climb(node, True, out, set(), 0)
            self._memo[key] = out
        return self._memo[key]

    def mentions(self, word: str) -> bool:
        """The code (not its comments) names ``word``, or a string literal holds it."""
        return word in self.links.words or any(word in w for w in self.links.words if w[:1] in "'\"rbfuRBFU")

    def identity(self, expr: cst.BaseExpression, depth: int = 0) -> tuple[object, ...] | None:
        """A key that two expressions of the file share when they certainly evaluate to the same object: a name
        with one binding reaching it (followed through plain aliases, `b = a`, `b = a["train"]`), `self.<attr>`
        assigned once in its class, an attribute or a subscript by a literal of such. None when unknown."""
        if depth > 8:
            return None
        if isinstance(expr, cst.Name):
            if id(expr) not in self.links.order:
                return None
            reaching = self.reaching(expr.value, expr)
            if len(reaching) != 1:
                return None
            b = reaching[0]
            if isinstance(b.value, (cst.Name, cst.Attribute, cst.Subscript)) and id(b.value) in self.links.order:
                inner = self.identity(b.value, depth + 1)
                if inner is not None:
                    return inner
            return ("binding", id(b.target))
        if isinstance(expr, cst.Attribute):
            if dotted(expr.value) == "self":
                st = self._self_assignment(expr)
                if st is None:
                    return None
                if isinstance(st.value, (cst.Name, cst.Attribute, cst.Subscript)):
                    inner = self.identity(st.value, depth + 1)
                    if inner is not None:
                        return inner
                return ("assigned", id(st))
            base = self.identity(expr.value, depth + 1)
            return None if base is None else (*base, "." + expr.attr.value)
        if isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index):
            key = literal(expr.slice[0].slice.value)
            base = self.identity(expr.value, depth + 1)
            return None if base is None or not isinstance(key, (str, int)) else (*base, key)
        return None

    def _self_assignment(self, attr: cst.Attribute) -> cst.Assign | None:
        """The one statement of the class that assigns `self.<attr>` (read at ``attr``), else None."""
        found: list[cst.Assign] = []
        cls = next((b for b in reversed(self.links.blocks(attr)) if isinstance(b, cst.ClassDef)), None)
        if cls is None:
            return None
        for a in self.facts.index.get("Assign", ()):
            w = self.facts.where.get(a)
            if w is not None and cls in w.blocks and any(
                    isinstance(t.target, cst.Attribute) and dotted(t.target) == dotted(attr) for t in a.targets):
                found.append(a)
        for a in self.facts.index.get("AugAssign", ()):
            w = self.facts.where.get(a)
            if w is not None and cls in w.blocks and dotted(a.target) == dotted(attr):
                return None
        return found[0] if len(found) == 1 else None

    def parent_of(self, node: cst.CSTNode) -> tuple[cst.CSTNode, str] | None:
        """The node holding ``node`` and the name of its field, or None for the module."""
        return self.parent.get(id(node))

    def anchor(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The nearest node around ``node`` (itself included) that the walk recorded."""
        n: cst.CSTNode | None = node
        while n is not None and n not in self.facts.where:
            p = self.parent.get(id(n))
            n = p[0] if p is not None else None
        return n

    # -- following -----------------------------------------------------------------------------------
    def _climb(self, expr: cst.BaseExpression, certain: bool, out: list[Use], seen: set[int], depth: int) -> None:
        """Classifies the place that reads ``expr`` (an expression evaluating to the object)."""
        if depth > _MAX_DEPTH or id(expr) in seen:
            return
        seen.add(id(expr))
        p = self.parent.get(id(expr))
        if p is None:
            out.append(Use("escape", expr, expr, certain=certain))
            return
        holder, field = p
        if isinstance(holder, cst.Arg) and field == "value":
            self._argument(expr, holder, certain, out, seen, depth)
        elif isinstance(holder, cst.Attribute) and field == "value":
            up = self.parent.get(id(holder))
            if up is not None and isinstance(up[0], cst.Call) and up[1] == "func":
                kind = "iter" if holder.attr.value == "__iter__" else "method"
                out.append(Use(kind, up[0], expr, holder.attr.value, certain))
            else:
                out.append(Use("attr", holder, expr, holder.attr.value, certain))
        elif isinstance(holder, (cst.For, cst.CompFor)) and field == "iter":
            out.append(Use("iter", holder, expr, certain=certain))
        elif isinstance(holder, cst.IfExp) and field in ("body", "orelse"):
            self._climb(holder, certain, out, seen, depth + 1)
        elif isinstance(holder, (cst.Comparison, cst.ComparisonTarget, cst.BooleanOperation, cst.UnaryOperation)) \
                or (isinstance(holder, (cst.If, cst.While, cst.IfExp, cst.Assert)) and field == "test"):
            out.append(Use("test", holder, expr, certain=certain))
        elif isinstance(holder, (cst.Assign, cst.AnnAssign)) and field == "value":
            self._assigned(expr, holder, certain, out, seen, depth)
        elif isinstance(holder, cst.Return):
            self._returned(expr, holder, certain, out, seen, depth)
        elif isinstance(holder, cst.Expr):
            return  # evaluated, then dropped
        else:
            out.append(Use("escape", holder, expr, certain=certain))

    def _argument(self, expr: cst.BaseExpression, arg: cst.Arg, certain: bool, out: list[Use], seen: set[int],
                  depth: int) -> None:
        p = self.parent.get(id(arg))
        call = p[0] if p is not None else None
        if not isinstance(call, cst.Call):
            out.append(Use("escape", arg, expr, certain=certain))
            return
        if arg.star:
            out.append(Use("escape", call, expr, certain=certain))
            return
        fn = self.graph.resolve(call)
        if fn is not None:
            param = self._parameter_given(call, fn, arg)
            if param is None:
                out.append(Use("escape", call, expr, certain=certain))
                return
            for read in self._reads_of_parameter(fn, param):
                self._climb(read, certain, out, seen, depth + 1)
            return
        name = self._callee_name(call)
        if name == "iter":
            out.append(Use("iter", call, expr, certain=certain))
        elif name in _ITERATING_WRAPPERS:
            self._climb(call, certain, out, seen, depth + 1)
        elif name in _READING_BUILTINS:
            out.append(Use("test", call, expr, certain=certain))
        else:
            position = [a for a in call.args if a.keyword is None].index(arg) if arg.keyword is None else None
            detail = arg.keyword.value if arg.keyword is not None else position
            out.append(Use("arg", call, expr, detail, certain))

    def _callee_name(self, call: cst.Call) -> str | None:
        q = self.facts.qualname(call.func)
        if q is not None:
            return q[len("builtins."):] if q.startswith("builtins.") else q
        if isinstance(call.func, cst.Name) and self.facts.lookup(call.func.value, call) is None:
            return call.func.value  # a builtin
        return None

    def _parameter_given(self, call: cst.Call, fn: cst.FunctionDef, arg: cst.Arg) -> str | None:
        """The parameter of ``fn`` that ``arg`` of ``call`` fills."""
        for p in parameters(fn):
            given = self.graph.argument_of(call, fn, p.name.value)
            if given is arg.value:
                return p.name.value
        return None

    def _reads_of_parameter(self, fn: cst.FunctionDef, name: str) -> list[cst.Name]:
        param = next((p for p in parameters(fn) if p.name.value == name), None)
        if param is None:
            return []
        return [r for r, _ in self._reads_of(name, param.name)]

    def _assigned(self, expr: cst.BaseExpression, st: cst.Assign | cst.AnnAssign, certain: bool, out: list[Use],
                  seen: set[int], depth: int) -> None:
        targets: list[cst.BaseExpression] = [t.target for t in st.targets] if isinstance(st, cst.Assign) else [st.target]
        for t in targets:
            if isinstance(t, cst.Name):
                for read, only in self._reads_of(t.value, t):
                    self._climb(read, certain and only, out, seen, depth + 1)
            elif isinstance(t, cst.Attribute) and dotted(t.value) == "self":
                for attr_read, only in self._reads_of_self_attribute(st, t.attr.value):
                    self._climb(attr_read, certain and only, out, seen, depth + 1)
            else:
                out.append(Use("escape", st, expr, certain=certain))

    def _returned(self, expr: cst.BaseExpression, ret: cst.Return, certain: bool, out: list[Use], seen: set[int],
                  depth: int) -> None:
        w = self.facts.where.get(ret)
        fn = w.function if w is not None else None
        callers = self._callers(fn) if isinstance(fn, cst.FunctionDef) else []
        if not callers:
            out.append(Use("escape", ret, expr, certain=certain))
        for c in callers:
            self._climb(c, certain, out, seen, depth + 1)

    def _callers(self, fn: cst.FunctionDef) -> list[cst.Call]:
        return [c for calls in self.graph.calls_in.values() for c in calls if self.graph.resolve(c) is fn]

    # -- names ---------------------------------------------------------------------------------------
    def _reads_of(self, name: str, target: cst.CSTNode) -> list[tuple[cst.Name, bool]]:
        """The reads of ``name`` that the binding whose target is ``target`` may reach, each with whether it
        is the only binding that does."""
        out = []
        for read in self.reads.get(name, ()):
            reaching = self.reaching(name, read)
            if any(b.target is target for b in reaching):
                out.append((read, len(reaching) == 1))
        return out

    def reaching(self, name: str, node: cst.CSTNode) -> list[Binding]:
        """The bindings of ``name`` that may be the one read at ``node`` (any node of the file): in its own
        scope, the last one before it and the earlier ones that a branch may have skipped over; in an
        enclosing scope (a global read in a function, a closure), every binding there."""
        facts = self.facts
        order = self.links.order.get(id(node))
        if order is None:
            return []
        blocks = self.links.blocks(node)
        scopes = [b for b in blocks if isinstance(b, (cst.FunctionDef, cst.Lambda))]
        chain: list[cst.FunctionDef | cst.Lambda | None] = [*reversed(scopes), None]
        for i, scope in enumerate(chain):
            bs = facts.bindings.get(scope, {}).get(name)
            if not bs:
                continue
            if i > 0:
                return list(bs)
            before = [b for b in bs if b.order <= order and not self._inside(node, b.value)]
            out: list[Binding] = []
            for b in reversed(before):
                out.append(b)
                if self._dominates(b, node, blocks):
                    break
            return out
        return []

    def _inside(self, node: cst.CSTNode, container: cst.CSTNode | None) -> bool:
        """``node`` is ``container`` or below it."""
        if container is None or isinstance(container, (cst.FunctionDef, cst.ClassDef)):
            return False
        n: cst.CSTNode | None = node
        while n is not None:
            if n is container:
                return True
            p = self.parent.get(id(n))
            n = p[0] if p is not None else None
        return False

    def _dominates(self, b: Binding, node: cst.CSTNode, blocks: tuple[cst.CSTNode, ...]) -> bool:
        """The statement that makes binding ``b`` runs on every path to ``node``: a parameter, or a statement in
        a block around ``node`` (on the same side of each `if` / `try` around both)."""
        p = self.parent.get(id(b.target))
        if p is not None and isinstance(p[0], cst.Param):
            return True
        st = b.value if isinstance(b.value, (cst.FunctionDef, cst.ClassDef)) else self._statement(b.target)
        if st is None:
            return False
        st_blocks = self.links.blocks(st)
        if blocks[:len(st_blocks)] != st_blocks:
            return False
        return all(self._side(x, st) == self._side(x, node) for x in st_blocks if isinstance(x, (cst.If, cst.Try)))

    def _side(self, block: cst.CSTNode, node: cst.CSTNode) -> str | None:
        """The field of ``block`` (`body`, `orelse`, `handlers`...) that holds ``node``."""
        n: cst.CSTNode | None = node
        while n is not None:
            p = self.parent.get(id(n))
            if p is None:
                return None
            if p[0] is block:
                return p[1]
            n = p[0]
        return None

    def _statement(self, target: cst.CSTNode) -> cst.CSTNode | None:
        """The statement that binds ``target``."""
        n: cst.CSTNode | None = target
        while n is not None and not isinstance(n, (cst.Assign, cst.AnnAssign, cst.For, cst.AugAssign, cst.With,
                                                   cst.FunctionDef, cst.ClassDef, cst.CompFor, cst.NamedExpr)):
            p = self.parent.get(id(n))
            n = p[0] if p is not None else None
        return n

    def _reads_of_self_attribute(self, st: cst.CSTNode, attr: str) -> list[tuple[cst.BaseExpression, bool]]:
        """The reads of `self.<attr>` in the methods of the class (and of its subclasses in the file) whose method
        assigns it at ``st``; ``only`` when no other statement assigns `self.<attr>` there."""
        w = self.facts.where.get(st)
        fn = w.function if w is not None else None
        cls = self.graph.class_of(fn) if isinstance(fn, cst.FunctionDef) else None
        if cls is None:
            return []
        assigns = 0
        reads: list[cst.BaseExpression] = []
        for r in self.reads.get("self", ()):
            p = self.parent.get(id(r))
            if p is None or not isinstance(p[0], cst.Attribute) or p[0].attr.value != attr:
                continue
            if cls not in self.links.blocks(r):
                continue
            up = self.parent.get(id(p[0]))
            if up is not None and isinstance(up[0], cst.AssignTarget):
                assigns += 1
            else:
                reads.append(p[0])
        return [(r, assigns <= 1) for r in reads]


def flow(facts: Facts) -> Flow:
    """The uses of the objects of a file (built once, kept with the file's facts)."""
    f: Flow | None = facts.__dict__.get("_flow")
    if f is None:
        f = facts.__dict__["_flow"] = Flow(facts)
    return f
