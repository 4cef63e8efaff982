"""Gradient accumulation in a hand-written loop: a loop whose every pass runs `backward()` while the
optimizer steps only under a test that lets several passes go by (`(i + 1) % N == 0`, a counter reaching
N), and the `with accelerator.accumulate(model):` blocks of accelerate."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import libcst as cst

from trainlint.facts.expr import dotted, literal
from trainlint.facts.loops import loop_facts, loops_around
from trainlint.facts.objects import Tensor
from trainlint.facts.program import program
from trainlint.facts.walk import iter_nodes

if TYPE_CHECKING:
    from trainlint.facts.core import Facts


@dataclasses.dataclass(frozen=True)
class Accumulation:
    """A loop that accumulates gradients over several of its passes."""

    loop: cst.For | cst.While
    backwards: tuple[cst.Call, ...]  # every `backward()` of its passes: each runs on every pass
    steps: tuple[cst.Call, ...]  # every optimizer step of its passes: each under an accumulation test
    test: cst.If  # the test the first step is under
    every: cst.BaseExpression | None  # N: the modulo's divisor, or what the counter is compared with
    counter: str | None  # the counter the test reads when it is counted up in the loop and reset under the test


def _between(facts: Facts, loop: cst.CSTNode, node: cst.CSTNode) -> tuple[cst.CSTNode, ...]:
    w = facts.where.get(node)
    if w is None or loop not in w.blocks:
        return ()
    return w.blocks[w.blocks.index(loop) + 1:]


def _in_body(block: cst.If, node: cst.CSTNode) -> bool:
    """``node`` stands in the `if` branch of ``block`` (not in its `else` / `elif`)."""
    return any(n is node for n in iter_nodes(block.body, (type(node),)))


def every_pass(facts: Facts, loop: cst.CSTNode, node: cst.CSTNode, twins: list[cst.Call] | None = None) -> bool:
    """``node`` runs on every pass of ``loop``: no `if` around it inside the loop, except one with an `else`
    that runs one of ``twins`` (`if scaler: scaler.scale(loss).backward() else: loss.backward()`)."""
    for b in _between(facts, loop, node):
        if isinstance(b, (cst.While, cst.For, cst.FunctionDef, cst.Lambda, cst.ClassDef)):
            return False
        if isinstance(b, cst.If):
            if b.orelse is None or not twins:
                return False
            mine = _in_body(b, node)
            if not any(t is not node and b in _between(facts, loop, t) and _in_body(b, t) != mine for t in twins):
                return False
    return True


def _counted(facts: Facts, loop: cst.CSTNode, name: str) -> bool:
    """``name`` is counted up by one on every pass of ``loop`` (`name += 1`)."""
    for a in facts.index.get("AugAssign", ()):
        if isinstance(a.target, cst.Name) and a.target.value == name and isinstance(a.operator, cst.AddAssign) \
                and literal(a.value) == 1 and every_pass(facts, loop, a):
            return True
    return False


def _reset_under(facts: Facts, test: cst.If, name: str) -> bool:
    """``name`` is set back to 0 in the `if` branch of ``test``."""
    for a in facts.index.get("Assign", ()):
        if literal(a.value) == 0 and any(isinstance(t.target, cst.Name) and t.target.value == name for t in a.targets):
            w = facts.where.get(a)
            if w is not None and test in w.blocks and _in_body(test, a):
                return True
    return False


def accumulation_test(facts: Facts, loop: cst.CSTNode, test: cst.If) -> tuple[cst.BaseExpression | None, str | None] | None:
    """(N, the counter) when ``test`` lets only some passes of ``loop`` through: a modulo by something other
    than 1 (`(step + 1) % N == 0`), or a counter counted up in the loop compared with N and reset under the
    test (`if n >= N: ...; n = 0`). None otherwise."""
    for part in iter_nodes(test.test, (cst.BinaryOperation, cst.Comparison)):
        if isinstance(part, cst.BinaryOperation) and isinstance(part.operator, cst.Modulo):
            n = literal(part.right)
            if n in (0, 1):
                continue
            left = part.left.left if isinstance(part.left, cst.BinaryOperation) else part.left
            return part.right, dotted(left)
        if isinstance(part, cst.Comparison) and len(part.comparisons) == 1 and isinstance(part.left, cst.Name):
            op = part.comparisons[0].operator
            name = part.left.value
            if isinstance(op, (cst.GreaterThanEqual, cst.Equal, cst.GreaterThan)) and _counted(facts, loop, name) \
                    and _reset_under(facts, test, name):
                return part.comparisons[0].comparator, name
    return None


def optimizer_steps(facts: Facts) -> list[cst.Call]:
    """The optimizer steps of the file, also `x.step()` on an object the file also calls `zero_grad()` on (an
    optimizer wrapper, whatever its name: torch's learning-rate schedulers have no `zero_grad`)."""
    lf = loop_facts(facts)
    zeroed = {dotted(z.func.value) for z in lf.zero_grads
              if isinstance(z, cst.Call) and isinstance(z.func, cst.Attribute) and z.func.attr.value == "zero_grad"}
    return [*lf.optimizer_steps, *(s for s in lf.scheduler_steps
                                   if isinstance(s.func, cst.Attribute) and dotted(s.func.value) in zeroed)]


def accumulations(facts: Facts) -> list[Accumulation]:
    """The loops of the file that accumulate gradients (see :class:`Accumulation`)."""
    found: list[Accumulation] | None = facts.__dict__.get("_accumulations")
    if found is not None:
        return found
    found = []
    lf = loop_facts(facts)
    by_loop: dict[cst.CSTNode, tuple[list[cst.Call], list[cst.Call]]] = {}
    for b in lf.backward:
        loops = loops_around(facts, b)
        if loops:
            by_loop.setdefault(loops[-1], ([], []))[0].append(b)
    for s in optimizer_steps(facts):
        loops = loops_around(facts, s)
        if loops and loops[-1] in by_loop:
            by_loop[loops[-1]][1].append(s)
    for loop, (backwards, steps) in by_loop.items():
        if not steps or not all(every_pass(facts, loop, b, backwards) for b in backwards):
            continue
        tests = []
        for s in steps:
            found_test = next(((b, t) for b in reversed(_between(facts, loop, s)) if isinstance(b, cst.If)
                               and _in_body(b, s) and (t := accumulation_test(facts, loop, b)) is not None), None)
            if found_test is None:
                break
            tests.append(found_test)
        else:
            test, (every, counter) = tests[0]
            counter = counter if counter is not None and _counted(facts, loop, counter) else None
            if isinstance(loop, (cst.For, cst.While)):
                found.append(Accumulation(loop, tuple(backwards), tuple(steps), test, every, counter))
    facts.__dict__["_accumulations"] = found
    return found


def accumulate_around(facts: Facts, node: cst.CSTNode) -> cst.BaseExpression | None:
    """The model given to the innermost `with accelerator.accumulate(model):` around ``node`` (in a file that
    imports accelerate), else None."""
    w = facts.where.get(node)
    if w is None or not any(q.split(".")[0] == "accelerate" for q in (*facts.imports.modules, *facts.imports.names.values())):
        return None
    for b in reversed(w.blocks):
        if isinstance(b, (cst.FunctionDef, cst.Lambda)):
            return None
        if isinstance(b, cst.With):
            for item in b.items:
                c = item.item
                if isinstance(c, cst.Call) and isinstance(c.func, cst.Attribute) and c.func.attr.value == "accumulate" \
                        and len(c.args) == 1 and c.args[0].keyword is None:
                    return c.args[0].value
    return None


def backward_value(call: cst.Call) -> cst.BaseExpression | None:
    """What a `backward()` call differentiates: `loss.backward()` → `loss`, `accelerator.backward(loss)` →
    `loss`, `scaler.scale(loss).backward()` → `loss`."""
    if not isinstance(call.func, cst.Attribute):
        return None
    recv = call.func.value
    if call.args and call.args[0].keyword is None and not isinstance(recv, cst.Call):
        return call.args[0].value  # `accelerator.backward(loss)`, `model.backward(loss)`
    if isinstance(recv, cst.Call) and isinstance(recv.func, cst.Attribute) and recv.func.attr.value == "scale" \
            and len(recv.args) == 1:
        return recv.args[0].value
    return recv


_SCALING_OPERATORS = (cst.Divide, cst.Multiply, cst.FloorDivide)
_SCALING_METHODS = frozenset({"div", "div_", "mul", "mul_", "divide", "multiply", "true_divide"})
#: methods that keep a loss's scale (a mean over its elements is still a mean)
_KEEPING = frozenset({"mean", "float", "to", "cuda", "squeeze", "view", "reshape"})


def unscaled_loss(facts: Facts, loop: cst.CSTNode, expr: cst.BaseExpression, at: cst.CSTNode, depth: int = 0) -> bool:
    """``expr`` (read at ``at`` in a pass of ``loop``) is a loss the pass never divides or multiplies: a loss
    object's or function's value, or a transformers model's `.loss`, through names assigned in the loop, sums
    and `.mean()`. False when it is scaled somewhere or not known to be a loss."""
    if depth > 6:
        return False
    if isinstance(expr, cst.BinaryOperation):
        if not isinstance(expr.operator, (cst.Add, cst.Subtract)):
            return False
        return all(unscaled_loss(facts, loop, side, at, depth + 1) for side in (expr.left, expr.right))
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value in _KEEPING:
        return unscaled_loss(facts, loop, expr.func.value, at, depth + 1)
    if isinstance(expr, cst.Name):
        for a in facts.index.get("AugAssign", ()):
            w = facts.where.get(a)
            if isinstance(a.target, cst.Name) and a.target.value == expr.value and w is not None and loop in w.blocks:
                return False  # `loss /= n`, `loss += other` in the pass: not followed
        b = facts.lookup(expr.value, at)
        if b is None or not isinstance(b.value, cst.BaseExpression):
            return False
        holders = [h for h in facts.holders(b.value) if isinstance(h, cst.Assign)]
        wh = facts.where.get(holders[0]) if holders else None
        if wh is None or loop not in wh.blocks or len(holders) != 1:
            return False
        others = [x for x in facts.bindings.get(wh.function, {}).get(expr.value, ()) if x is not b]
        if any((wx := facts.where.get(h)) is not None and loop in wx.blocks
               for x in others if isinstance(x.value, cst.BaseExpression) for h in facts.holders(x.value)):
            return False  # assigned elsewhere in the pass too
        return unscaled_loss(facts, loop, b.value, holders[0], depth + 1)
    if any(isinstance(n.operator, _SCALING_OPERATORS) for n in iter_nodes(expr, (cst.BinaryOperation,))) or any(
            isinstance(c.func, cst.Attribute) and c.func.attr.value in _SCALING_METHODS
            for c in iter_nodes(expr, (cst.Call,))):
        return False
    t = program(facts).of(expr, at)
    return isinstance(t, Tensor) and t.loss
