"""What one pass of a loop runs: the calls inside it and the file's own functions and methods they run, the
loops whose passes run a node (also through the calls of its function), the training loops of a file (a pass
runs `backward()` or an optimizer step), and how an object is spelt in the loop's scope. The loop rules and
the loader rules ask the same facts."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from trainlint.facts.calls import call_graph
from trainlint.facts.loops import loop_facts, loops_around

if TYPE_CHECKING:
    from trainlint.facts.core import Facts

Loop = cst.For | cst.While


def calls_inside(facts: Facts, block: cst.CSTNode) -> list[cst.Call]:
    """The calls inside ``block`` (a loop, a function, any block the walk records), in document order."""
    by_block: dict[cst.CSTNode, list[cst.Call]] | None = facts.__dict__.get("_calls_by_block")
    if by_block is None:
        by_block = facts.__dict__["_calls_by_block"] = {}
        for call in facts.index.get("Call", ()):
            w = facts.where.get(call)
            if w is not None:
                for b in w.blocks:
                    by_block.setdefault(b, []).append(call)
    return by_block.get(block, [])


def reached_functions(facts: Facts, block: cst.CSTNode, depth: int = 4) -> frozenset[cst.FunctionDef]:
    """The functions and methods of the file that the calls inside ``block`` run, and those they call in
    turn (``depth`` calls deep): what one pass of a loop body runs besides its own statements."""
    memo: dict[tuple[cst.CSTNode, int], frozenset[cst.FunctionDef]] = facts.__dict__.setdefault(
        "_reached_functions", {})
    key = (block, depth)
    if key in memo:
        return memo[key]
    graph = call_graph(facts)
    seen: set[cst.FunctionDef] = set()
    frontier = list(calls_inside(facts, block))
    for _ in range(depth):
        nxt: list[cst.Call] = []
        for c in frontier:
            fn = graph.resolve(c)
            if fn is not None and fn not in seen and fn is not block:
                seen.add(fn)
                nxt.extend(graph.calls_in.get(fn, ()))
        frontier = nxt
    memo[key] = found = frozenset(seen)
    return found


def in_iteration(facts: Facts, node: cst.CSTNode, loop: cst.CSTNode) -> bool:
    """``node`` runs in one pass of ``loop``: inside its body, or in a function of the file the body calls."""
    if _inside(facts, node, loop):
        return True
    w = facts.where.get(node)
    return w is not None and any(b in reached_functions(facts, loop) for b in w.blocks
                                 if isinstance(b, cst.FunctionDef))


def enclosing_loops(facts: Facts, node: cst.CSTNode, depth: int = 3) -> list[Loop]:
    """The loops whose passes run ``node``, innermost first: those around it in its function, then, when its
    function is one of the file's, those around each call of that function (``depth`` calls up)."""
    out: list[Loop] = list(reversed(loops_around(facts, node)))
    if depth <= 0:
        return out
    w = facts.where.get(node)
    fn = w.function if w is not None else None
    if isinstance(fn, cst.FunctionDef):
        for call in callers(facts, fn):
            if call is not node:
                out.extend(L for L in enclosing_loops(facts, call, depth - 1) if L not in out)
    return out


def callers(facts: Facts, fn: cst.FunctionDef) -> list[cst.Call]:
    """The calls of the file that run ``fn``, also as a method of an instance (`tracker.update(x)`,
    `model.train_emb(batch)`), not only by its name or on `self`."""
    found: dict[cst.FunctionDef, list[cst.Call]] | None = facts.__dict__.get("_resolved_callers")
    if found is None:
        graph = call_graph(facts)
        found = facts.__dict__["_resolved_callers"] = {}
        for calls in graph.calls_in.values():
            for c in calls:
                t = graph.resolve(c)
                if t is not None:
                    found.setdefault(t, []).append(c)
    return found.get(fn, [])


def training_loops(facts: Facts) -> list[Loop]:
    """The `for` / `while` loops of the file one pass of which runs `backward()` or an optimizer step, in
    their body or through the file's functions the body calls."""
    found: list[Loop] | None = facts.__dict__.get("_training_loops")
    if found is None:
        lf = loop_facts(facts)
        steps = lf.backward + lf.optimizer_steps
        found = facts.__dict__["_training_loops"] = [
            L for L in [*facts.index.get("For", ()), *facts.index.get("While", ())]
            if any(in_iteration(facts, s, L) for s in steps)]
        found.sort(key=lambda L: facts.where[L].order)
    return found


def _inside(facts: Facts, node: cst.CSTNode, block: cst.CSTNode) -> bool:
    w = facts.where.get(node)
    return w is not None and block in w.blocks


def spelt_in_pass(facts: Facts, loop: cst.CSTNode, node: cst.CSTNode, text: str | None,
                  depth: int = 3) -> set[str | None]:
    """How ``text`` (an object as spelt where ``node`` is) is spelt in the scope of ``loop``, when ``node`` runs
    in a pass of it: itself inside the loop, else through each call of the loop body into the file's
    functions that reaches ``node`` (`self.reset(self.d_opt)` running `opt.zero_grad()`: `self.d_opt`).
    None in the set: a path on which it cannot be spelt there."""
    if text is None:
        return {None}
    if _inside(facts, node, loop):
        return {text}
    graph = call_graph(facts)
    target = facts.where[node].function if node in facts.where else None
    w = facts.where.get(loop)
    scope = w.function if w is not None else None

    def down(calls: list[cst.Call], left: int) -> set[str | None]:
        out: set[str | None] = set()
        for c in calls:
            fn = graph.resolve(c)
            if fn is None:
                continue
            if fn is target and text is not None:
                out.add(graph.outside(c, fn, text))
            elif left > 0:
                out |= {graph.outside(c, fn, inner) if inner is not None else None
                        for inner in down(graph.calls_in.get(fn, []), left - 1)}
        return out

    return down([c for c in calls_inside(facts, loop) if facts.where[c].function is scope], depth) or {None}
