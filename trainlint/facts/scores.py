"""Which values of a file are class scores, and when two expressions hold the same value.

``scores(facts).kind(expr, at)`` answers what ``expr`` holds as a classifier's output — ``Output.LOGITS``
when the same value is given to a loss that takes logits (`CrossEntropyLoss`, `tf.nn.*_with_logits`, a Keras
loss `from_logits=True`; also through a function of the file whose parameter that loss is given, called from
the file), ``Output.PROBABILITIES`` / ``Output.SIGMOID`` for a softmax or sigmoid output the program model
establishes — and the node that says so, or None.

``same_value(facts, a, at_a, b, at_b)`` is True when ``a`` and ``b`` are the same pure expression over the same
bindings (`logits.t()` at two places where `logits` is bound by the same assignment), or the same comprehension
variable over the same iterable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from trainlint.facts.calls import call_graph, parameters
from trainlint.facts.expr import dotted
from trainlint.facts.losses import loss_site
from trainlint.facts.objects import Output, Tensor
from trainlint.facts.program import program
from trainlint.facts.walk import iter_nodes

if TYPE_CHECKING:
    from trainlint.facts.core import Facts

Key = tuple[object, ...]


class Scores:
    """The class scores of one file (built once per file by :func:`scores`)."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self._logits: dict[Key, cst.CSTNode] | None = None
        self._comps: dict[int, tuple[cst.CompFor, int]] | None = None

    def kind(self, expr: cst.BaseExpression, at: cst.CSTNode) -> tuple[Output, cst.CSTNode] | None:
        t = program(self.facts).of(expr, at)
        if isinstance(t, Tensor) and t.output in (Output.PROBABILITIES, Output.SIGMOID):
            return t.output, t.origin or t.node or expr
        key = self.key(expr, at)
        if key is not None:
            loss = self.logit_keys().get(key)
            if loss is not None:
                return Output.LOGITS, loss
        return None

    # -- what the file gives a logits loss ------------------------------------------------------------
    def logit_keys(self) -> dict[Key, cst.CSTNode]:
        """The keys of the values given as the prediction of a loss that takes logits → that loss call."""
        if self._logits is not None:
            return self._logits
        facts = self.facts
        found: dict[Key, cst.CSTNode] = {}
        self._logits = found
        for call in facts.index.get("Call", ()):
            site = loss_site(facts, call)
            if site is None or site.compiled or site.loss.expects is not Output.LOGITS or site.prediction is None:
                continue
            key = self.key(site.prediction, call)
            if key is not None:
                found.setdefault(key, call)
            for given, where in self._given_to_parameter(site.prediction, call):
                key = self.key(given, where)
                if key is not None:
                    found.setdefault(key, call)
        return found

    def _given_to_parameter(self, expr: cst.BaseExpression, at: cst.CSTNode
                            ) -> list[tuple[cst.BaseExpression, cst.CSTNode]]:
        """When ``expr`` is a parameter of the function around ``at``: what each call of the file gives it (also
        calls through `self.<attr>` that the class binds to the function, `self.loss = sce_criterion`)."""
        facts = self.facts
        w = facts.where.get(at)
        fn = w.function if w is not None else None
        if not (isinstance(expr, cst.Name) and isinstance(fn, cst.FunctionDef)):
            return []
        params = parameters(fn)
        index = next((i for i, p in enumerate(params) if p.name.value == expr.value), None)
        if index is None:
            return []
        out = []
        graph = call_graph(facts)
        for call in facts.index.get("Call", ()):
            target = graph.target(call)
            bound = isinstance(call.func, cst.Attribute)
            if target is not fn:
                if not self._attribute_holds(call, fn):
                    continue
                bound = False  # a function kept on an instance is called unbound
            i = index - 1 if bound and graph.class_of(fn) is not None else index
            given = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == expr.value),
                         None)
            if given is None:
                pos = [a for a in call.args if a.keyword is None]
                if any(a.star for a in call.args) or not 0 <= i < len(pos):
                    continue
                given = pos[i].value
            out.append((given, call))
        return out

    def _attribute_holds(self, call: cst.Call, fn: cst.FunctionDef) -> bool:
        """`self.<attr>(...)` where every assignment of the class binds `self.<attr>` to ``fn``'s name."""
        facts = self.facts
        f = call.func
        if not (isinstance(f, cst.Attribute) and dotted(f.value) == "self"):
            return False
        w = facts.where.get(call)
        cls = w.inside(cst.ClassDef) if w is not None else None
        if cls is None:
            return False
        values = [a.value for a in facts.index.get("Assign", ())
                  if any(dotted(t.target) == f"self.{f.attr.value}" for t in a.targets) and cls in facts.where[a].blocks]
        if not values:
            return False
        for v in values:
            b = facts.lookup(v.value, v) if isinstance(v, cst.Name) else None
            if b is None or b.value is not fn:
                return False
        return True

    # -- same values ----------------------------------------------------------------------------------
    def key(self, expr: cst.BaseExpression, at: cst.CSTNode) -> Key | None:
        """What identifies the value of a pure expression at ``at``: its text and the binding of each name in it
        (a comprehension variable: its iterable and position). None when it calls something other than a
        tensor method that only reshapes (`t()`, `transpose`, `squeeze`...)."""
        facts = self.facts
        names: list[object] = []
        for node in iter_nodes(expr, (cst.CSTNode,)):
            if isinstance(node, cst.Call):
                f = node.func
                if not (isinstance(f, cst.Attribute) and f.attr.value in _PURE_METHODS):
                    return None
            elif isinstance(node, cst.Name) and not _is_attribute_name(expr, node):
                comp = self._comprehension_variable(node)
                if comp is not None:
                    names.append(("comp", _text(facts, comp[0].iter), comp[1]))
                    continue
                b = facts.lookup(node.value, at)
                if b is None and any(node.value in names_ for names_ in facts.bindings.values()):
                    return None  # bound somewhere in the file, but not visibly here
                names.append(id(b) if b is not None else ("free", node.value))
        return (_text(facts, expr), *names)

    def _comprehension_variable(self, name: cst.Name) -> tuple[cst.CompFor, int] | None:
        """``name`` is a use of a comprehension's variable: that `for` clause and the position in its target."""
        if self._comps is None:
            self._comps = {}
            kinds = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)
            for owner in iter_nodes(self.facts.module, kinds):
                if not isinstance(owner, kinds):
                    continue
                comp = owner.for_in
                targets = [comp.target] if isinstance(comp.target, cst.Name) else [
                    e.value for e in comp.target.elements] if isinstance(comp.target, (cst.Tuple, cst.List)) else []
                for i, t in enumerate(targets):
                    if not isinstance(t, cst.Name):
                        continue
                    for use in iter_nodes(owner, (cst.Name,)):
                        if use.value == t.value and use is not t:
                            self._comps[id(use)] = (comp, i)
        return self._comps.get(id(name))


#: tensor methods and attributes that reshape or cast without changing which values are held
_PURE_METHODS = frozenset({"t", "transpose", "squeeze", "unsqueeze", "view", "reshape", "float", "double", "detach",
                           "cpu", "cuda", "to", "contiguous", "flatten"})


def _is_attribute_name(root: cst.BaseExpression, name: cst.Name) -> bool:
    """``name`` is the attribute part of an `x.attr` inside ``root`` (not a variable)."""
    return any(isinstance(a, cst.Attribute) and a.attr is name for a in iter_nodes(root, (cst.Attribute,)))


def _text(facts: Facts, node: cst.CSTNode) -> str:
    """The code of ``node`` without its layout (line breaks and indentation inside brackets)."""
    return "".join(facts.module.code_for_node(node).split())


def scores(facts: Facts) -> Scores:
    """The :class:`Scores` of a file (built once, kept with the file's facts)."""
    s: Scores | None = facts.__dict__.get("_scores")
    if s is None:
        s = facts.__dict__["_scores"] = Scores(facts)
    return s
