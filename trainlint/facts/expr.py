"""Small helpers over CST expressions: literals, dotted names, call arguments."""

from __future__ import annotations

from typing import Any

import libcst as cst


def literal(expr: cst.CSTNode | None) -> Any:
    """The Python value of a literal expression (str, int, float, bool, None, list/tuple of those).

    Returns :data:`UNKNOWN` when the expression is not a literal.
    """
    if expr is None:
        return UNKNOWN
    if isinstance(expr, cst.SimpleString):
        try:
            return expr.evaluated_value
        except Exception:  # pragma: no cover - odd prefixes
            return UNKNOWN
    if isinstance(expr, cst.ConcatenatedString):
        left, right = literal(expr.left), literal(expr.right)
        if isinstance(left, str) and isinstance(right, str):
            return left + right
        return UNKNOWN
    if isinstance(expr, (cst.Integer, cst.Float)):
        try:
            return expr.evaluated_value
        except (ValueError, SyntaxError):
            return UNKNOWN
    if isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[expr.value]
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        v = literal(expr.expression)
        return -v if isinstance(v, (int, float)) and not isinstance(v, bool) else UNKNOWN
    if isinstance(expr, (cst.List, cst.Tuple)):
        out = []
        for el in expr.elements:
            if not isinstance(el, cst.Element):
                return UNKNOWN
            v = literal(el.value)
            if v is UNKNOWN:
                return UNKNOWN
            out.append(v)
        return out
    return UNKNOWN


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:
        return False


UNKNOWN = _Unknown()


def dotted(expr: cst.CSTNode) -> str | None:
    """``a.b.c`` → ``"a.b.c"`` for Name/Attribute chains, else None."""
    parts = []
    while isinstance(expr, cst.Attribute):
        parts.append(expr.attr.value)
        expr = expr.value
    if isinstance(expr, cst.Name):
        parts.append(expr.value)
        return ".".join(reversed(parts))
    return None


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == name:
            return a
    return None


def has_star_kwargs(call: cst.Call) -> bool:
    return any(a.star == "**" for a in call.args)


def positional(call: cst.Call) -> list[cst.Arg]:
    return [a for a in call.args if a.keyword is None and not a.star]


def argument(call: cst.Call, name: str, position: int | None = None) -> cst.BaseExpression | None:
    """The expression given for parameter ``name`` (by keyword, or at ``position``)."""
    kw = keyword(call, name)
    if kw is not None:
        return kw.value
    if position is not None:
        pos = positional(call)
        if position < len(pos) and not any(a.star for a in call.args[: position + 1]):
            return pos[position].value
    return None


def given(call: cst.Call, name: str, position: int | None = None) -> cst.BaseExpression | None:
    """Like :func:`argument`, but an explicit ``None`` (``Trainer(model, args, None, ds)``) counts as
    not given."""
    expr = argument(call, name, position)
    return None if isinstance(expr, cst.Name) and expr.value == "None" else expr


def method_name(call: cst.Call) -> str | None:
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None


def self_item(expr: cst.BaseExpression, through: tuple[str, ...] = ()) -> tuple[str, str] | None:
    """(attribute, index) for `self.<attribute>[<index>]` indexed by a plain name (`self.labels[idx]`), also
    through the accessors named in ``through`` (`self.df.iloc[idx]` with ``through=("iloc",)``)."""
    if not (isinstance(expr, cst.Subscript) and len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index)
            and isinstance(expr.slice[0].slice.value, cst.Name)):
        return None
    v = expr.value
    if isinstance(v, cst.Attribute) and v.attr.value in through:
        v = v.value
    if isinstance(v, cst.Attribute) and isinstance(v.value, cst.Name) and v.value.value == "self":
        return v.attr.value, expr.slice[0].slice.value.value
    return None


def short_code(code: str, limit: int = 40) -> str:
    """Source text as a concise message shows it: on one line, cut to ``limit`` characters."""
    code = " ".join(code.split())
    return code if len(code) <= limit else code[: limit - 1] + "…"
