"""The EOS token of a tokenizer in a fine-tuning script: where its pad token is set to it, and whether the
training texts carry it (so that a collator masking the pad id masks every EOS label too).

``pad_set_to_eos(facts)`` lists the statements that make a tokenizer's pad token its EOS token; ``eos_in_texts``
says how the file puts that tokenizer's EOS into what it trains on; ``same_object`` whether two expressions name
the same object (the same binding of a name, or `self.<attr>` in one class).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import libcst as cst

from trainlint.facts.expr import argument, dotted, literal
from trainlint.facts.walk import iter_nodes

if TYPE_CHECKING:
    from trainlint.facts.core import Facts

_PAIRS = {"pad_token": "eos_token", "pad_token_id": "eos_token_id"}
_EOS_ATTRS = frozenset({"eos_token", "eos_token_id"})


@dataclasses.dataclass(frozen=True)
class PadIsEos:
    """A statement that sets ``tokenizer``'s pad token to its EOS token."""

    node: cst.CSTNode  # the assignment or the `add_special_tokens` call
    tokenizer: cst.BaseExpression  # the tokenizer expression, as written there


def same_object(facts: Facts, a: cst.BaseExpression, at_a: cst.CSTNode, b: cst.BaseExpression, at_b: cst.CSTNode) -> bool:
    """``a`` at ``at_a`` and ``b`` at ``at_b`` are the same object: one binding of one name, or `self.<attr>` read in
    methods of one class."""
    if isinstance(a, cst.Name) and isinstance(b, cst.Name):
        if a.value != b.value:
            return False
        ba, bb = facts.lookup(a.value, at_a), facts.lookup(b.value, at_b)
        return ba is not None and ba is bb
    da, db = dotted(a), dotted(b)
    if da is None or da != db or not da.startswith("self.") or da.count(".") != 1:
        return False
    wa, wb = facts.where.get(at_a), facts.where.get(at_b)
    ca = next((x for x in reversed(wa.blocks) if isinstance(x, cst.ClassDef)), None) if wa is not None else None
    cb = next((x for x in reversed(wb.blocks) if isinstance(x, cst.ClassDef)), None) if wb is not None else None
    return ca is not None and ca is cb


def _guarded(facts: Facts, node: cst.CSTNode) -> bool:
    """``node`` runs only when a condition on the pad token holds (`if tokenizer.pad_token is None:`): then it sets
    the pad token only for tokenizers without one, which the source does not show."""
    w = facts.where.get(node)
    for b in w.blocks if w is not None else ():
        if isinstance(b, cst.If) and any(isinstance(n, cst.Name) and n.value in ("pad_token", "pad_token_id")
                                         for n in iter_nodes(b.test, (cst.Name,))):
            return True
    return False


def pad_set_to_eos(facts: Facts) -> list[PadIsEos]:
    """`tok.pad_token = tok.eos_token`, `tok.pad_token_id = tok.eos_token_id`, `tok.add_special_tokens({"pad_token":
    tok.eos_token})`, not under a condition on the pad token."""
    out = []
    for a in facts.index.get("Assign", ()):
        v = a.value
        if not (isinstance(v, cst.Attribute) and v.attr.value in _EOS_ATTRS) or _guarded(facts, a):
            continue
        for t in a.targets:
            tgt = t.target
            if (isinstance(tgt, cst.Attribute) and _PAIRS.get(tgt.attr.value) == v.attr.value
                    and dotted(tgt.value) is not None and dotted(tgt.value) == dotted(v.value)):
                out.append(PadIsEos(a, tgt.value))
    for call in facts.method_calls("add_special_tokens"):
        tok = call.func.value if isinstance(call.func, cst.Attribute) else None
        d = argument(call, "special_tokens_dict", 0)
        if tok is None or not isinstance(d, cst.Dict) or _guarded(facts, call):
            continue
        for el in d.elements:
            if (isinstance(el, cst.DictElement) and literal(el.key) == "pad_token" and isinstance(el.value, cst.Attribute)
                    and el.value.attr.value == "eos_token" and dotted(el.value.value) == dotted(tok)):
                out.append(PadIsEos(call, tok))
    return out


def eos_in_texts(facts: Facts, tokenizer: cst.BaseExpression, at: cst.CSTNode) -> str | None:
    """How the file puts ``tokenizer``'s EOS token into the texts it trains on, in words, or None: the tokenizer is
    made with `add_eos_token=True` (or given it later), or the file appends `tokenizer.eos_token` to a text
    (`+`, an f-string, `.format(...)`, also through a name bound to it) or `tokenizer.eos_token_id` to a list."""
    if isinstance(tokenizer, cst.Name):
        b = facts.lookup(tokenizer.value, at)
        if b is not None and isinstance(b.value, cst.Call) and literal(argument(b.value, "add_eos_token")) is True:
            return "its tokenizer adds EOS to every text (`add_eos_token=True`)"
    for a in facts.index.get("Assign", ()):
        for t in a.targets:
            tgt = t.target
            if (isinstance(tgt, cst.Attribute) and tgt.attr.value == "add_eos_token" and literal(a.value) is True
                    and same_object(facts, tgt.value, a, tokenizer, at)):
                return "its tokenizer adds EOS to every text (`add_eos_token = True`)"
    eos_names: set[str] = set()
    for a in facts.index.get("Assign", ()):
        v = a.value
        if isinstance(v, cst.Attribute) and v.attr.value in _EOS_ATTRS and same_object(facts, v.value, a, tokenizer, at):
            eos_names.update(t.target.value for t in a.targets if isinstance(t.target, cst.Name))

    def is_eos(expr: cst.BaseExpression, where: cst.CSTNode) -> bool:
        if isinstance(expr, cst.List):
            return any(isinstance(e, cst.Element) and is_eos(e.value, where) for e in expr.elements)
        if isinstance(expr, cst.Name):
            return expr.value in eos_names
        return (isinstance(expr, cst.Attribute) and expr.attr.value in _EOS_ATTRS
                and same_object(facts, expr.value, where, tokenizer, at))

    for stmt in (*facts.index.get("Assign", ()), *facts.index.get("Return", ()), *facts.index.get("Call", ())):
        value = stmt.value if isinstance(stmt, (cst.Assign, cst.Return)) else stmt
        if value is None:
            continue
        for op in iter_nodes(value, (cst.BinaryOperation, cst.FormattedStringExpression)):
            if isinstance(op, cst.BinaryOperation) and isinstance(op.operator, cst.Add) and (
                    is_eos(op.left, stmt) or is_eos(op.right, stmt)):
                return f"the file appends the EOS token to its texts (`{_code(facts, op)}`)"
            if isinstance(op, cst.FormattedStringExpression) and is_eos(op.expression, stmt):
                return "the file appends the EOS token to its texts (an f-string with it)"
        if isinstance(stmt, cst.Call) and isinstance(stmt.func, cst.Attribute) and stmt.func.attr.value in (
                "format", "append") and any(is_eos(arg.value, stmt) for arg in stmt.args):
            return f"the file appends the EOS token to its texts (`.{stmt.func.attr.value}(...)` with it)"
    return None


def _code(facts: Facts, node: cst.CSTNode) -> str:
    text = facts.module.code_for_node(node).strip()
    return text if len(text) <= 40 else text[:37] + "..."
