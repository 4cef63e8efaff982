"""The string a script runs with where it is not written at the call: a name bound to a literal, a parameter
every call of the file fills with the same one, or a command-line option's default (`args.model_name` with
`parser.add_argument("--model_name", default="gpt2")`).

``string_of(facts, expr, at)`` answers ``(value, option)`` — ``option`` is the command-line option whose
default the value is (``"--model_name"``), None when the source fixes the value itself — or None when the
source does not establish one string.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from trainlint.facts.calls import call_graph, is_parameter
from trainlint.facts.expr import argument, dotted, literal

if TYPE_CHECKING:
    from trainlint.facts.core import Facts
    from trainlint.facts.scopes import Binding

_MAX_DEPTH = 6


def string_of(facts: Facts, expr: cst.BaseExpression | None, at: cst.CSTNode,
              _depth: int = 0) -> tuple[str, str | None] | None:
    if expr is None or _depth > _MAX_DEPTH:
        return None
    value = facts.constant(expr, at if at in facts.where else None)
    if isinstance(value, str):
        return value, None
    if isinstance(expr, cst.Name):
        b = facts.lookup(expr.value, at)
        fn = _parameter_owner(facts, b, at)
        if b is None or fn is None:
            if b is not None and isinstance(b.value, cst.Attribute):
                return string_of(facts, b.value, b.value if b.value in facts.where else at, _depth + 1)
            return None
        graph = call_graph(facts)
        found = set()
        for site in graph.callers(fn):
            found.add(string_of(facts, graph.argument_of(site, fn, expr.value), site, _depth + 1))
        return found.pop() if len(found) == 1 else None
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
        if _parsed_arguments(facts, expr.value, at, _depth):
            return option_default(facts, expr.attr.value)
    return None


def option_default(facts: Facts, dest: str) -> tuple[str, str] | None:
    """The literal string default of the one `add_argument` of the file whose destination is ``dest``."""
    found = []
    for call in facts.method_calls("add_argument"):
        flags = [literal(a.value) for a in call.args if a.keyword is None]
        if not flags or not all(isinstance(f, str) for f in flags):
            continue
        given = literal(argument(call, "dest"))
        longest = max(flags, key=len)
        name = given if isinstance(given, str) else longest.lstrip("-").replace("-", "_")
        if name == dest:
            found.append((call, longest))
    if len(found) != 1:
        return None
    call, flag = found[0]
    default = literal(argument(call, "default"))
    return (default, flag) if isinstance(default, str) else None


def _parsed_arguments(facts: Facts, name: cst.Name, at: cst.CSTNode, depth: int) -> bool:
    """``name`` holds the namespace of `parser.parse_args()` (also through a parameter filled by every call
    with such a namespace, or a function of the file that returns one)."""
    if depth > _MAX_DEPTH:
        return False
    b = facts.lookup(name.value, at)
    if b is None:
        return False
    fn = _parameter_owner(facts, b, at)
    if fn is not None:
        graph = call_graph(facts)
        sites = graph.callers(fn)
        return bool(sites) and all(isinstance(g := graph.argument_of(s, fn, name.value), cst.Name)
                                   and _parsed_arguments(facts, g, s, depth + 1) for s in sites)
    value = b.value
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute) and value.func.attr.value in (
            "parse_args", "parse_known_args"):
        return value.func.attr.value == "parse_args"
    if isinstance(value, cst.Call) and isinstance(value.func, cst.Name):
        target = facts.lookup(value.func.value, value if value in facts.where else at)
        ret = facts._single_return(target.value) if target is not None and isinstance(
            target.value, cst.FunctionDef) else None
        if ret is not None and isinstance(ret.value, cst.Call) and dotted(ret.value.func) is not None:
            return isinstance(ret.value.func, cst.Attribute) and ret.value.func.attr.value == "parse_args"
        if ret is not None and isinstance(ret.value, cst.Name):
            return _parsed_arguments(facts, ret.value, ret, depth + 1)
    return False


def _parameter_owner(facts: Facts, b: Binding | None, at: cst.CSTNode) -> cst.FunctionDef | None:
    """The function around ``at`` (itself or an enclosing one) whose parameter the binding ``b`` is."""
    w = facts.where.get(at)
    if b is None or w is None:
        return None
    return next((fn for fn in reversed(w.blocks) if isinstance(fn, cst.FunctionDef) and is_parameter(fn, b)), None)
