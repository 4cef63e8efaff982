"""Where the training steps of a file run: the loops one pass of which runs `backward()` or an optimizer
step (in its body, or in the file's functions the body calls), and whether a node runs again and again (in
a loop of its function, or in a function the file calls from a loop)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from trainlint.facts.calls import call_graph
from trainlint.facts.loops import loop_facts, loops_around

if TYPE_CHECKING:
    from trainlint.facts.core import Facts

_DEPTH = 3


def _reached(facts: Facts, calls: list[cst.Call], depth: int) -> set[cst.FunctionDef]:
    """The file's functions that ``calls`` run, and those they call in turn (``depth`` calls deep)."""
    graph = call_graph(facts)
    seen: set[cst.FunctionDef] = set()
    frontier = calls
    for _ in range(depth):
        nxt: list[cst.Call] = []
        for c in frontier:
            fn = graph.resolve(c)
            if fn is not None and fn not in seen:
                seen.add(fn)
                nxt.extend(graph.calls_in.get(fn, ()))
        frontier = nxt
    return seen


def runs_in_pass(facts: Facts, node: cst.CSTNode, block: cst.CSTNode) -> bool:
    """``node`` runs when ``block`` (a loop, a `with`, a function) runs: inside it, or in one of the file's
    functions that a call inside it runs."""
    w = facts.where.get(node)
    if w is None:
        return False
    if block in w.blocks:
        return True
    return any(b in _reached_from(facts, block) for b in w.blocks if isinstance(b, cst.FunctionDef))


def _reached_from(facts: Facts, block: cst.CSTNode) -> set[cst.FunctionDef]:
    """The file's functions that the calls inside ``block`` run (memoised per file)."""
    memo: dict[cst.CSTNode, set[cst.FunctionDef]] = facts.__dict__.setdefault("_steps_reached", {})
    found = memo.get(block)
    if found is None:
        by_block: dict[cst.CSTNode, list[cst.Call]] | None = facts.__dict__.get("_steps_calls")
        if by_block is None:
            by_block = facts.__dict__["_steps_calls"] = {}
            for c in facts.index.get("Call", ()):
                wc = facts.where.get(c)
                for b in wc.blocks if wc is not None else ():
                    by_block.setdefault(b, []).append(c)
        found = memo[block] = _reached(facts, by_block.get(block, []), _DEPTH)
    return found


def pass_of(facts: Facts, site: cst.CSTNode) -> cst.CSTNode | None:
    """What one iteration at ``site`` runs in: the `for` itself, or for `iter(loader)` / `loader.__iter__()` the
    loop around the call (else its function)."""
    if isinstance(site, (cst.For, cst.While)):
        return site
    around = loops_around(facts, site)
    if around:
        return around[-1]
    w = facts.where.get(site)
    return w.function if w is not None else None


def training_steps(facts: Facts) -> list[cst.Call]:
    """The `backward()` calls and the optimizer steps of the file."""
    lf = loop_facts(facts)
    return [*lf.backward, *lf.optimizer_steps]


def trains(facts: Facts, block: cst.CSTNode) -> bool:
    """One run of ``block`` (a loop's pass) runs `backward()` or an optimizer step."""
    return any(runs_in_pass(facts, s, block) for s in training_steps(facts))


def _once(facts: Facts, loop: cst.For | cst.While) -> bool:
    """`for _ in range(1):`, `for epoch in range(max_epoch)` with `max_epoch = 1`: a loop of one pass."""
    it = loop.iter if isinstance(loop, cst.For) else None
    if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "range" and it.args):
        return False
    bounds = [facts.constant(a.value, loop) for a in it.args]
    return bounds == [1] or (len(bounds) == 2 and isinstance(bounds[0], int) and bounds[1] == bounds[0] + 1)


def repeated(facts: Facts, node: cst.CSTNode, depth: int = _DEPTH) -> bool:
    """``node`` runs again and again: in a loop of its own function (other than ``node`` itself), or in a
    function of the file that some call made from such a place runs."""
    if any(loop is not node and not _once(facts, loop) for loop in loops_around(facts, node)):
        return True
    if depth <= 0:
        return False
    w = facts.where.get(node)
    fn = w.function if w is not None else None
    if not isinstance(fn, cst.FunctionDef):
        return False
    graph = call_graph(facts)
    callers = [c for calls in graph.calls_in.values() for c in calls if graph.resolve(c) is fn]
    return any(repeated(facts, c, depth - 1) for c in callers)
