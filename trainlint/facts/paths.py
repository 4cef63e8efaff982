"""Whether one statement of a file runs on every path that reaches another (a conservative, syntactic answer)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from trainlint.facts.walk import iter_nodes

if TYPE_CHECKING:
    from trainlint.facts.core import Facts

_BRANCHING = (cst.If, cst.Try, cst.While)


def _branch(node: cst.CSTNode, block: cst.CSTNode) -> int:
    """Which part of ``block`` (an `if`, `try` or `while`) holds ``node``: its index among the block's children."""
    for i, part in enumerate(block.children):
        if node is part or any(n is node for n in iter_nodes(part, (type(node),))):
            return i
    return -1


def runs_before(facts: Facts, first: cst.CSTNode, then: cst.CSTNode) -> bool:
    """``first`` comes before ``then`` in the file, and every `if` / `try` / `while` around ``first`` also holds
    ``then``, in the same branch: wherever ``then`` runs, ``first`` ran (loops and functions aside)."""
    wa, wb = facts.where.get(first), facts.where.get(then)
    if wa is None or wb is None or wa.order > wb.order:
        return False
    for block in wa.blocks:
        if isinstance(block, _BRANCHING):
            if block not in wb.blocks or _branch(first, block) != _branch(then, block):
                return False
    return True
