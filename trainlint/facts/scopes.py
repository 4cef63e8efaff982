"""Scopes: which expression each name is bound to, and the binding visible at a node."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

import libcst as cst

from trainlint.facts.walk import Index, Where, iter_nodes

if TYPE_CHECKING:
    from trainlint.facts.imports import Imports
    from trainlint.facts.values import Tokenization, Value

#: a scope: a function (or lambda), or None for the module
Scope = cst.FunctionDef | cst.Lambda | None


@dataclasses.dataclass
class Binding:
    order: int
    value: cst.CSTNode | None  # the bound expression (or the FunctionDef/ClassDef); None: unknown
    target: cst.CSTNode


class Scopes:
    """Bindings per scope (a FunctionDef/Lambda, or None for the module). The first part of :class:`Facts`,
    which holds the state every part reads (set by ``Facts.__init__``; the memos when first needed)."""

    module: cst.Module
    index: Index
    where: dict[cst.CSTNode, Where]
    imports: Imports
    #: scope -> name -> bindings in order
    bindings: dict[Scope, dict[str, list[Binding]]]
    #: `a, b = helper(...)`: target name -> (the call, the position unpacked)
    _unpacked: dict[cst.CSTNode, tuple[cst.Call, int]]
    _values: dict[cst.CSTNode, Value | None]
    _tok: dict[cst.CSTNode, Tokenization]
    _rhs_ids: dict[int, set[int]]
    _trainer_calls: list[cst.Call] | None
    _method_calls: dict[str, list[cst.Call]] | None
    _holders: dict[int, list[cst.Assign | cst.Return]]
    _qualnames: dict[cst.BaseExpression, str | None]
    _homes: dict[str, str | None]
    _bound: set[str]

    def _bind(self, scope: Scope, name: str, order: int, value: cst.CSTNode | None, target: cst.CSTNode) -> None:
        self.bindings.setdefault(scope, {}).setdefault(name, []).append(Binding(order, value, target))

    def _collect_bindings(self) -> None:
        for node in self.index.get("Assign", ()):
            w = self.where[node]
            scope = w.function
            for t in node.targets:
                self._bind_target(scope, t.target, node.value, w.order)
        for node in self.index.get("AnnAssign", ()):
            if node.value is not None:
                w = self.where[node]
                self._bind_target(w.function, node.target, node.value, w.order)
        for node in self.index.get("For", ()):
            w = self.where[node]
            self._bind_target(w.function, node.target, None, w.order)
        for node in (*self.index.get("FunctionDef", ()), *self.index.get("ClassDef", ())):
            w = self.where[node]
            # a def binds its name in the enclosing function (or module)
            self._bind(w.function, node.name.value, w.order, node, node.name)
            if isinstance(node, cst.FunctionDef):
                params = node.params
                for p in (*params.posonly_params, *params.params, *params.kwonly_params):
                    self._bind(node, p.name.value, w.order, p.default, p.name)
                for star in (params.star_arg, params.star_kwarg):
                    if isinstance(star, cst.Param):
                        self._bind(node, star.name.value, w.order, None, star.name)
        # in document order: `lookup` takes the last binding before a node (a parameter or a `def` is
        # collected after the assignments that rebind its name)
        for names in self.bindings.values():
            for bs in names.values():
                bs.sort(key=lambda b: b.order)

    def _bind_target(self, scope: Scope, target: cst.BaseExpression, value: cst.BaseExpression | None,
                     order: int) -> None:
        if isinstance(target, cst.Name):
            self._bind(scope, target.value, order, value, target)
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = [e.value for e in target.elements]
            values: Sequence[cst.BaseExpression | None] = [None] * len(elements)
            if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(elements):
                values = [e.value for e in value.elements]
            elif isinstance(value, cst.Call) and all(isinstance(e, cst.Element) for e in target.elements):
                for i, t in enumerate(elements):
                    if isinstance(t, cst.Name):
                        self._unpacked[t] = (value, i)
            for t, v in zip(elements, values):
                self._bind_target(scope, t, v, order)

    def lookup(self, name: str, at: cst.CSTNode) -> Binding | None:
        """The binding of ``name`` visible at node ``at`` (which must be a recorded node, or we
        fall back to the last module-level binding)."""
        w = self.where.get(at)
        scopes: list[Scope] = []
        order = w.order if w else 1 << 60
        if w is not None:
            scopes = [b for b in w.blocks if isinstance(b, (cst.FunctionDef, cst.Lambda))]
        chain: list[Scope] = [*reversed(scopes), None]
        for i, scope in enumerate(chain):
            bs = self.bindings.get(scope, {}).get(name)
            if not bs:
                continue
            if i == 0:
                before = [b for b in bs if b.order <= order]
                # `ds = ds.map(f)`: the `ds` read on the right-hand side is the previous binding
                while before and w is not None and self.in_bound_value(before[-1], at):
                    before.pop()
                if before:
                    return before[-1]
                if scope is not None:
                    return None  # local name used before assignment: unknown
                return None
            # an enclosing scope: a function body runs after the module has been executed
            return bs[-1]
        return None

    def in_bound_value(self, binding: Binding, at: cst.CSTNode) -> bool:
        """``at`` is part of the expression ``binding`` assigns (so that binding is not made yet)."""
        value = binding.value
        if value is None or isinstance(value, (cst.FunctionDef, cst.ClassDef)) or not isinstance(value, cst.BaseExpression):
            return False
        if value is at:
            return True
        ids = self._rhs_ids.get(id(value))
        if ids is None:
            ids = self._rhs_ids[id(value)] = {id(n) for n in iter_nodes(value, (cst.CSTNode,))}
        return id(at) in ids

    def holders(self, node: cst.CSTNode) -> list[cst.Assign | cst.Return]:
        """The assignments and returns whose value is ``node`` itself (`loader = DataLoader(...)`,
        `return DataLoader(...)`), in document order."""
        held: dict[int, list[cst.Assign | cst.Return]] | None = self.__dict__.get("_holders")
        if held is None:
            held = self._holders = {}
            for kind in ("Assign", "Return"):
                for st in self.index.get(kind, ()):
                    if st.value is not None:
                        held.setdefault(id(st.value), []).append(st)
        return held.get(id(node), [])

    def assigned_later(self, name: str, at: cst.CSTNode) -> list[Binding]:
        """Bindings of ``name`` in the same scope after ``at``."""
        w = self.where.get(at)
        if w is None:
            return []
        bs = self.bindings.get(w.function, {}).get(name, [])
        return [b for b in bs if b.order > w.order]
