"""Train and eval mode: which mode a module is in where a node runs, and whether the mode changes what
the module computes.

:func:`mode_flow` follows the statements of a function (or of the module) in the order they run: the
branches of an `if` (a condition tested twice, `if phase == "train":` before the loop and again around
`backward()`, takes the same branch both times while nothing rebinds its names), the passes of a loop
(what the end of one pass leaves is what the next pass starts with), `break` / `continue` / `return`,
and the calls of the file's own functions that leave the module in a mode (`evaluate(model)` ending in
`model.eval()`). Where a function starts, the mode is what its callers leave (every call of the file);
where the module is built, it is the mode a new module has (train), or the eval mode `from_pretrained`
leaves a transformers model in.

The answer is a set of :class:`Mode`: one per way of getting there, with the call that set it. A set
with one mode says what the module is in on every path; an ``eval`` with its origin says that some path
goes from that call to the node without a `train()` in between.

:func:`mode_dependent` answers the other question a finding asks: does the module have a layer whose
behaviour depends on the mode (dropout, batch norm)? True, False (every layer known, none does), or None.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import libcst as cst

from trainlint.facts.expr import UNKNOWN, argument, dotted, literal
from trainlint.facts.loops import RETURN_SELF, loop_facts, module_itself
from trainlint.facts.passes import callers, calls_inside, training_loops
from trainlint.facts.walk import iter_nodes

if TYPE_CHECKING:
    from trainlint.facts.core import Facts
    from trainlint.facts.objects import Module
    from trainlint.facts.scopes import Binding, Scope

#: a condition a path took: (its text, its outcome, the names it reads[, the loop whose last pass it marks])
Condition = tuple[Any, ...]
States = frozenset["Mode"]
Owner = tuple[str, cst.BaseExpression, cst.CSTNode]

TRAIN, EVAL = "train", "eval"
UNKNOWN_MODE = "?"  # the source does not say (`model.train(flag)`, a model loaded whole)
MIXED = "mixed"  # some of its modules in each mode (adapters added to a model in eval mode)
ENTRY = "entry"  # what the caller left: resolved through the calls of the function

#: calls that hand back the module they are given, wrapped (the mode is the wrapped module's)
_WRAPPERS = frozenset({"get_peft_model", "prepare", "prepare_model", "DistributedDataParallel", "DataParallel",
                       "FullyShardedDataParallel", "compile", "PeftModel", "wrap", "to_device", "freeze"})
#: wrappers that add modules of their own (adapters: new modules start in train mode)
_ADAPTERS = frozenset({"get_peft_model", "PeftModel"})
_MAX_PASSES = 6
_MAX_STATES = 64


@dataclasses.dataclass(frozen=True)
class Mode:
    """One way a module reaches a node in a mode."""

    mode: str  # TRAIN, EVAL, UNKNOWN_MODE, ENTRY
    #: the node of the analysed scope that set it: a `model.eval()` call, the call of a function that
    #: leaves the module so, the value a name is bound to (a new module); None: nothing in the file
    origin: cst.CSTNode | None
    #: the conditions this path took (``(condition text, outcome)``), while nothing rebinds their names
    assume: frozenset[Condition] = frozenset()
    #: where the mode was set in the end: the `x.eval()` / `x.train()` call itself (inside a helper), or
    #: the value that built the module
    event: cst.CSTNode | None = None
    #: how the object is spelt where ``origin`` is
    spelt: str | None = None


def _code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)


def _condition(test: cst.BaseExpression) -> tuple[str, bool, frozenset[str]] | None:
    """(the condition's text, the outcome the test asks, the names it reads) for a test without calls:
    `phase == "train"`, `not train`, `step % 100 == 0`; None for a test whose value a call decides."""
    positive = True
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test, positive = test.expression, not positive
    if any(True for _ in iter_nodes(test, (cst.Call, cst.Await, cst.NamedExpr))):
        return None
    names = frozenset(n.value for n in iter_nodes(test, (cst.Name,)))
    return _code(test), positive, names


def _bound_names(target: cst.CSTNode) -> set[str]:
    out: set[str] = set()
    for n in iter_nodes(target, (cst.Name,)):
        out.add(n.value)
    return out


class ModeFlow:
    """The modes of the file's modules, per scope and name. Built by :func:`mode_flow`."""

    def __init__(self, facts: Facts) -> None:
        from trainlint.facts.calls import call_graph

        self.facts = facts
        self.graph = call_graph(facts)
        self._runs: dict[tuple[Scope, str], tuple[dict[int, States], States]] = {}
        self._active: set[tuple[Scope, str]] = set()
        self._resolving: set[tuple[Scope, str]] = set()
        self._aliases: dict[tuple[str, Scope], frozenset[str]] = {}
        lf = loop_facts(facts)
        self._mode_calls = {call: (recv, mode) for call, recv, mode in lf.modes}
        self._unknown_mode_calls = self._flag_mode_calls()

    # -- questions -------------------------------------------------------------------------------
    def at(self, name: str, node: cst.CSTNode, depth: int = 0) -> frozenset[Mode] | None:
        """The modes `name` (as spelt where ``node`` runs) can be in when ``node`` runs, through the calls
        of its function; None when ``node`` is not a call or loop the analysis passes."""
        w = self.facts.where.get(node)
        if w is None:
            return None
        scope = w.function
        states, _ = self._run(scope, name)
        here = states.get(id(node))
        if here is None:
            return None
        return self._resolve(here, scope, name, depth)

    def exit(self, fn: cst.FunctionDef, name: str) -> frozenset[Mode]:
        """What ``fn`` leaves its object ``name`` in (``ENTRY``: as it found it, on some path)."""
        _, out = self._run(fn, name)
        return out

    def _resolve(self, states: frozenset[Mode], scope: Scope, name: str, depth: int) -> frozenset[Mode]:
        """``ENTRY`` replaced by what every call of ``scope`` leaves (unknown without a call in the file)."""
        if not any(s.mode == ENTRY for s in states):
            return states
        out = {s for s in states if s.mode != ENTRY}
        sites = callers(self.facts, scope) if isinstance(scope, cst.FunctionDef) and depth < 4 else []
        key = (scope, name)
        if not sites or key in self._resolving or not isinstance(scope, cst.FunctionDef):
            return frozenset(out | {Mode(UNKNOWN_MODE, None)})
        self._resolving.add(key)
        try:
            for site in sites:
                outer = self.graph.outside(site, scope, name)
                got = self.at(outer, site, depth + 1) if outer is not None else None
                out |= {dataclasses.replace(s, assume=frozenset()) for s in got} if got else {Mode(UNKNOWN_MODE, None)}
        finally:
            self._resolving.discard(key)
        return frozenset(out)

    # -- spellings -------------------------------------------------------------------------------
    def aliases(self, name: str, scope: Scope) -> frozenset[str]:
        """The spellings of the object ``name`` in ``scope``: itself, what a local ``name`` is only ever bound
        to (`model = self.model`, `model = self.model.to(device)`), the locals only ever bound to it."""
        key = (name, scope)
        found = self._aliases.get(key)
        if found is not None:
            return found
        local = self.facts.bindings.get(scope, {}) if scope is not None else {}

        def only(bindings: list[Binding]) -> str | None:
            texts: set[str | None] = set()
            for b in bindings:
                if not isinstance(b.value, (cst.Name, cst.Attribute, cst.Call)):
                    return None
                texts.add(dotted(module_itself(b.value)))
            return texts.pop() if len(texts) == 1 else None

        out = {name}
        if name in local:
            same = only(local[name])
            if same is not None:
                out.add(same)
        for other, bindings in local.items():
            if other != name and only(bindings) in out:
                out.add(other)
        self._aliases[key] = found = frozenset(out)
        return found

    def _sets(self, receiver: str, names: frozenset[str]) -> bool:
        """A mode call on ``receiver`` sets the mode of the object spelt ``names`` (itself, or a module
        holding it: `model.train()` sets `model.encoder`)."""
        return any(receiver == n or n.startswith(receiver + ".") for n in names)

    # -- the flow ----------------------------------------------------------------------------------
    def _run(self, scope: Scope, name: str) -> tuple[dict[int, States], States]:
        key = (scope, name)
        found = self._runs.get(key)
        if found is not None:
            return found
        if key in self._active:
            return {}, frozenset({Mode(ENTRY, None)})
        self._active.add(key)
        try:
            walker = _Walker(self, scope, name, self.aliases(name, scope))
            start = frozenset({Mode(ENTRY, None)}) if isinstance(scope, cst.FunctionDef) \
                else frozenset({Mode(UNKNOWN_MODE, None)})
            if isinstance(scope, cst.Lambda):  # one expression
                normal = _Out(walker.expression(scope.body, start))
            else:
                normal = walker.block(scope.body if scope is not None else self.facts.module, start)
            # a path's conditions on the function's own parameters stay: a call that gives them decides
            params = {p.name.value for p in scope.params.params} if isinstance(scope, cst.FunctionDef) else set()
            out = frozenset(dataclasses.replace(s, assume=frozenset(a for a in s.assume if len(a) == 3 and a[0] in params))
                            for s in normal.normal | normal.ret)
            found = self._runs[key] = (walker.states, out)
        finally:
            self._active.discard(key)
        return found

    def _flag_mode_calls(self) -> dict[cst.Call, str]:
        """`model.train(flag)` with a flag that is not a literal: the mode it sets is unknown."""
        out: dict[cst.Call, str] = {}
        for call in self.facts.method_calls("train"):
            if call in self._mode_calls or not call.args or len(call.args) != 1:
                continue
            recv = dotted(module_itself(call.func.value)) if isinstance(call.func, cst.Attribute) else None
            if recv is not None:
                out[call] = recv
        return out

    def call_effect(self, call: cst.Call, names: frozenset[str], scope: Scope) -> States | None:
        """What ``call`` does to the object spelt ``names``: (mode, the mode call) for its own
        `x.train()` / `x.eval()`, the modes a function of the file leaves it in, or None."""
        own = self._mode_calls.get(call)
        if own is not None and self._sets(own[0], names):
            return frozenset({Mode(own[1], call, event=call)})
        flag = self._unknown_mode_calls.get(call)
        if flag is not None and self._sets(flag, names):
            return frozenset({Mode(UNKNOWN_MODE, call, event=call)})
        fn = self.graph.resolve(call)
        if fn is None or fn is scope:
            return None
        for n in sorted(names):
            inner = self.graph.inside(call, fn, n)
            if inner is None:
                continue
            ex = [e for e in self.exit(fn, inner) if self._possible(e, call, fn)]
            if any(e.mode != ENTRY for e in ex):
                return frozenset(Mode(e.mode, call, event=e.event) if e.mode != ENTRY else Mode(ENTRY, None)
                                 for e in ex)
        return None

    def _possible(self, e: Mode, call: cst.Call, fn: cst.FunctionDef) -> bool:
        """A path of ``fn`` that ``call`` can take: its tests of a flag parameter (`if train:`) agree with
        the literal the call gives it (`run_epoch(False)`)."""
        for text, outcome, *_ in e.assume:
            given = literal(self.graph.argument_of(call, fn, text))
            if isinstance(given, bool) and given != outcome:
                return False
        return True

    def initial(self, value: cst.BaseExpression, at: cst.CSTNode, names: frozenset[str]) -> frozenset[Mode] | None:
        """The mode a binding of the object gives it: a new module is in train mode, a transformers model
        from `from_pretrained` in eval mode, anything else unknown; None when the value is the same object
        (`model = model.to(device)`, `model = get_peft_model(model, config)`)."""
        inner = module_itself(value)
        adds = False
        while isinstance(inner, cst.Call) and _wrapper_name(inner) in _WRAPPERS and inner.args:
            adds = adds or _wrapper_name(inner) in _ADAPTERS
            inner = module_itself(inner.args[0].value)
        if dotted(inner) in names:
            # the same module; adapters added to it are new modules, in train mode whatever its mode
            return frozenset({Mode(MIXED, value, event=value)}) if adds else None
        from trainlint.facts.program import program

        m = program(self.facts).module(value, at)
        if m is not None and m.framework == "transformers" and m.pretrained:
            return frozenset({Mode(EVAL, value, event=value)})
        if m is not None and m.framework == "torch" and not m.pretrained and isinstance(m.node, (cst.Call, cst.ClassDef)):
            return frozenset({Mode(TRAIN, value, event=value)})
        return frozenset({Mode(UNKNOWN_MODE, value, event=value)})


def _wrapper_name(call: cst.Call) -> str:
    f = call.func
    return f.attr.value if isinstance(f, cst.Attribute) else f.value if isinstance(f, cst.Name) else ""


@dataclasses.dataclass
class _Out:
    normal: States
    brk: States = frozenset()
    cont: States = frozenset()
    ret: States = frozenset()

    def __or__(self, other: _Out) -> _Out:
        return _Out(self.normal | other.normal, self.brk | other.brk, self.cont | other.cont, self.ret | other.ret)


class _Walker:
    """One pass over the statements of a scope for one object, recording the modes before each call and loop."""

    def __init__(self, flow: ModeFlow, scope: Scope, name: str, names: frozenset[str]) -> None:
        self.flow = flow
        self.facts = flow.facts
        self.scope = scope
        self.name = name
        self.names = names
        self.states: dict[int, States] = {}
        self.loops: list[cst.For | cst.While] = []  # the loops being walked, innermost last
        # the conditions tested more than once: the only ones a path needs to remember
        body = scope.body if scope is not None else flow.facts.module
        tests = [c[0] for n in iter_nodes(body, (cst.If, cst.IfExp)) if (c := _condition(n.test)) is not None]
        self.repeated = {t for t in tests if tests.count(t) > 1}
        if isinstance(scope, cst.FunctionDef):  # a flag parameter: the call that gives it decides the branch
            self.repeated |= {p.name.value for p in scope.params.params}

    def record(self, node: cst.CSTNode, states: States) -> None:
        old = self.states.get(id(node))
        self.states[id(node)] = states if old is None else old | states

    # -- statements ----------------------------------------------------------------------------------
    def block(self, body: Any, states: States) -> _Out:
        if len(states) > _MAX_STATES:  # too many paths to tell apart: forget the conditions they took
            states = frozenset(dataclasses.replace(s, assume=frozenset()) for s in states)
        stmts = body.body if isinstance(body, (cst.IndentedBlock, cst.SimpleStatementSuite, cst.Module)) else body
        out = _Out(frozenset())
        for st in stmts:
            if not states:
                break
            r = self.statement(st, states)
            out = _Out(out.normal, out.brk | r.brk, out.cont | r.cont, out.ret | r.ret)
            states = r.normal
        return _Out(states, out.brk, out.cont, out.ret)

    def statement(self, st: cst.CSTNode, states: States) -> _Out:
        if isinstance(st, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            out = _Out(frozenset())
            for small in st.body:
                r = self.small(small, states)
                out = _Out(out.normal, out.brk | r.brk, out.cont | r.cont, out.ret | r.ret)
                states = r.normal
                if not states:
                    break
            return _Out(states, out.brk, out.cont, out.ret)
        if isinstance(st, cst.If):
            return self.branch(st, states)
        if isinstance(st, (cst.For, cst.While)):
            return self.loop(st, states)
        if isinstance(st, cst.With):
            for item in st.items:
                states = self.expression(item.item, states)
            return self.block(st.body, states)
        if isinstance(st, (cst.Try, cst.TryStar)):
            body = self.block(st.body, states)
            seen = states | body.normal
            out = _Out(frozenset(), body.brk, body.cont, body.ret)
            for h in st.handlers:
                out = out | self.block(h.body, seen)
            out = out | (self.block(st.orelse.body, body.normal) if st.orelse is not None else _Out(body.normal))
            if st.finalbody is not None:
                fin = self.block(st.finalbody.body, out.normal | out.brk | out.cont | out.ret)
                return _Out(fin.normal, out.brk, out.cont, out.ret)
            return out
        if isinstance(st, cst.Match):
            out = _Out(states)
            for case in st.cases:
                out = out | self.block(case.body, states)
            return out
        return _Out(states)  # a def or a class: its body runs elsewhere

    def small(self, small: cst.BaseSmallStatement, states: States) -> _Out:
        if isinstance(small, cst.Break):
            return _Out(frozenset(), brk=states)
        if isinstance(small, cst.Continue):
            return _Out(frozenset(), cont=states)
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.IfExp):
            return self.branch(small.value, states)
        states = self.expression(small, states)
        if isinstance(small, cst.Return):
            return _Out(frozenset(), ret=states)
        if isinstance(small, cst.Raise):
            return _Out(frozenset())
        if isinstance(small, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
            targets: list[cst.BaseExpression] = [t.target for t in small.targets] if isinstance(small, cst.Assign) \
                else [small.target]
            states = self.rebind(targets, getattr(small, "value", None), small, states)
        return _Out(states)

    def expression(self, node: cst.CSTNode, states: States) -> States:
        """The calls of ``node`` in the order they run (by position), each recorded and applied."""
        where = self.facts.where
        calls = sorted((c for c in iter_nodes(node, (cst.Call,)) if c in where), key=lambda c: where[c].order)
        for call in calls:
            self.record(call, states)
            effect = self.flow.call_effect(call, self.names, self.scope)
            if effect is None:
                continue
            new: set[Mode] = set()
            for s in states:
                for e in effect:
                    new.add(s if e.mode == ENTRY else dataclasses.replace(e, assume=s.assume, spelt=self.name))
            states = frozenset(new)
        return states

    def rebind(self, targets: list[cst.BaseExpression], value: cst.BaseExpression | None, at: cst.CSTNode,
               states: States) -> States:
        names: set[str] = set()
        for t in targets:
            names |= _bound_names(t)
        if names:
            states = frozenset(dataclasses.replace(s, assume=frozenset(a for a in s.assume if not (a[2] & names)))
                               for s in states)
        # `model = Net()` makes another module; `model = model.to(device)`, `model, opt =
        # accelerator.prepare(model, opt)` keep the object
        if value is not None and {dotted(t) for t in targets} & self.names:
            got = self.flow.initial(value, at, self.names)
            if got is not None:
                states = frozenset(dataclasses.replace(g, assume=s.assume, spelt=self.name) for s in states for g in got)
        return states

    def branch(self, node: cst.If | cst.IfExp, states: States) -> _Out:
        states = self.expression(node.test, states)
        cond = _condition(node.test)
        yes, no = states, states
        if self.loops and _last_pass(node.test):
            # `if i == len(loader) - 1:`: what this branch does is followed by the end of the loop, not by its
            # next pass
            mark: Condition = (_LAST, True, frozenset(), self.loops[-1])
            yes = frozenset(dataclasses.replace(s, assume=s.assume | {mark}) for s in states)
        elif cond is not None and cond[0] in self.repeated:
            text, positive, names = cond
            yes = _assume(states, (text, positive, names))
            no = _assume(states, (text, not positive, names))
        if isinstance(node, cst.IfExp):
            return _Out(self.expression(node.body, yes) | self.expression(node.orelse, no))
        body = self.block(node.body, yes)
        orelse = node.orelse
        if orelse is None:
            other = _Out(no)
        elif isinstance(orelse, cst.If):
            other = self.branch(orelse, no)
        else:
            other = self.block(orelse.body, no)
        return body | other

    def loop(self, node: cst.For | cst.While, states: States) -> _Out:
        if isinstance(node, cst.For):
            states = self.expression(node.iter, states)
        self.record(node, states)
        bound = _bound_names(node.target) if isinstance(node, cst.For) else set()
        head = states
        out = _Out(frozenset())
        last: States = frozenset()
        self.loops.append(node)
        try:
            for _ in range(_MAX_PASSES):
                start = frozenset(dataclasses.replace(s, assume=frozenset(a for a in s.assume if not (a[2] & bound)))
                                  for s in head)
                if isinstance(node, cst.While):
                    start = self.expression(node.test, start)
                out = self.block(node.body, start)
                ended = out.normal | out.cont
                last |= _unmark(frozenset(s for s in ended if _marked(s, node)), node)
                new = head | frozenset(s for s in ended if not _marked(s, node))
                if new == head:
                    break
                head = new
        finally:
            self.loops.pop()
        leaving = head | last
        if node.orelse is not None:
            leaving = self.block(node.orelse.body, leaving).normal
        return _Out(leaving | _unmark(out.brk, node), ret=_unmark(out.ret, node))


_LAST = "<the last pass>"


def _last_pass(test: cst.BaseExpression) -> bool:
    """A test true only on the last pass of a loop over a sized thing: `i == len(loader) - 1`,
    `step + 1 == len(loader)`, `i >= len(loader) - 1`."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    if not isinstance(test.comparisons[0].operator, (cst.Equal, cst.GreaterThanEqual)):
        return False
    return any(isinstance(c.func, cst.Name) and c.func.value == "len" for c in iter_nodes(test, (cst.Call,)))


def _marked(s: Mode, loop: cst.CSTNode) -> bool:
    return any(len(a) == 4 and a[3] is loop for a in s.assume)


def _unmark(states: States, loop: cst.CSTNode) -> States:
    return frozenset(dataclasses.replace(s, assume=frozenset(a for a in s.assume if not (len(a) == 4 and a[3] is loop)))
                     if _marked(s, loop) else s for s in states)


def _assume(states: States, condition: Condition) -> States:
    text, outcome, names = condition
    out: set[Mode] = set()
    for s in states:
        if any(a[0] == text and a[1] != outcome for a in s.assume):
            continue  # the other branch of a test this path already took
        out.add(dataclasses.replace(s, assume=s.assume | {condition}))
    return frozenset(out)


def mode_flow(facts: Facts) -> ModeFlow:
    """The mode analysis of a file (built once, kept with the file's facts)."""
    flow: ModeFlow | None = facts.__dict__.get("_mode_flow")
    if flow is None:
        flow = facts.__dict__["_mode_flow"] = ModeFlow(facts)
    return flow


# ---------------------------------------------------------------------------------------------
# Does the mode matter?

#: pretrained families whose layers compute the same in both modes unless a dropout is configured
#: (diffusers' UNets and VAEs: `dropout=0.0` by default, group norm)
_MODE_FREE_FRAMEWORKS = frozenset({"diffusers"})


def mode_dependent(facts: Facts, expr: cst.BaseExpression | None, at: cst.CSTNode, depth: int = 0) -> bool | None:
    """The module ``expr`` holds at ``at`` has a layer whose behaviour depends on the mode: True (a
    dropout or batch norm, a transformers model, a dropout set to a non-zero literal where it is built or
    wrapped), False (every layer known, none does; a diffusers model with no dropout configured), None."""
    if expr is None or depth > 6:
        return None
    from trainlint.facts.program import program

    dropout = _configured_dropout(facts, expr, at)
    if dropout is True:
        return True
    m = program(facts).module(expr, at)
    if m is not None and m.framework in _MODE_FREE_FRAMEWORKS:
        return None if dropout is None else False
    if m is not None and m.framework == "transformers":
        family = transformers_dropout(facts, m)
        return True if family else (None if family is None or dropout is None else False)
    if m is not None and m.mode_dependent is not None:
        return m.mode_dependent
    if m is not None and m.classdef is not None and _holds_dependent_layer(facts, m.classdef):
        return True  # a dropout or batch norm among members the program does not all know
    if m is not None and m.name in ("Sequential", "ModuleList") and isinstance(m.node, cst.Call) and any(
            (held := program(facts).module(a.value, at)) is not None and held.mode_dependent for a in m.node.args
            if not a.star):
        return True
    inner = _wrapped(facts, expr, at)
    if inner is not None:
        found = mode_dependent(facts, inner[0], inner[1], depth + 1)
        if found is not None:
            return True if found else (False if dropout is False else None)
    return None


def transformers_dropout(facts: Facts, m: Module) -> bool | None:
    """A transformers model uses dropout: by the family its class or its checkpoint names (`BertFor...`,
    `AutoModel.from_pretrained("t5-small")`); None when neither says (`AutoModel.from_pretrained(args.model)`)."""
    from trainlint.facts.objects import TRANSFORMERS_DROPOUT

    names = [m.name.lower()]
    if isinstance(m.node, cst.Call):
        given = argument(m.node, "pretrained_model_name_or_path", 0)
        checkpoint = facts.constant(given, m.node) if given is not None and m.node in facts.where else literal(given)
        if isinstance(checkpoint, str):
            names.append(checkpoint.lower())
    for name in names:
        for family, dropout in TRANSFORMERS_DROPOUT:
            if family in name:
                return dropout
    return None


def binding_at(facts: Facts, name: str, at: cst.CSTNode) -> Binding | None:
    """The binding of ``name`` read at ``at``; inside the call a tuple is unpacked from (`model, opt =
    accelerator.prepare(model, opt)`), the binding before that statement."""
    b = facts.lookup(name, at)
    un = facts.unpacked_from(b) if b is not None and b.value is None else None
    if b is not None and un is not None and (un[0] is at or facts.in_bound_value(dataclasses.replace(b, value=un[0]), at)):
        w = facts.where.get(at)
        scope = w.function if w is not None else None
        earlier = [x for x in facts.bindings.get(scope, {}).get(name, ()) if x.order < b.order]
        return earlier[-1] if earlier else None
    return b


def _holds_dependent_layer(facts: Facts, cls: cst.ClassDef) -> bool:
    """A module class of the file (or a class of the file it derives from) assigns to `self.<attr>` a module
    with a mode-dependent layer."""
    from trainlint.facts.calls import call_graph
    from trainlint.facts.program import program

    graph, p = call_graph(facts), program(facts)
    classes = [cls]
    for klass in classes:  # and the classes of the file it derives from
        for base in klass.bases:
            b = facts.lookup(base.value.value, klass) if isinstance(base.value, cst.Name) else None
            if b is not None and isinstance(b.value, cst.ClassDef) and b.value not in classes and len(classes) < 6:
                classes.append(b.value)
    for a in facts.index.get("Assign", ()):
        fn = facts.where[a].function
        if isinstance(fn, cst.FunctionDef) and graph.class_of(fn) in classes and any(
                isinstance(t.target, cst.Attribute) and dotted(t.target.value) == "self" for t in a.targets):
            held = p.module(a.value, a)
            if held is not None and held.mode_dependent:
                return True
    return False


def _wrapped(facts: Facts, expr: cst.BaseExpression, at: cst.CSTNode) -> tuple[cst.BaseExpression, cst.CSTNode] | None:
    """(the module, where) that ``expr`` wraps or names: `model.to(device)`, `get_peft_model(model, c)`, a
    name bound to one, a name unpacked from `accelerator.prepare(model, opt)`."""
    if isinstance(expr, cst.Call):
        inner = module_itself(expr)
        if inner is not expr:
            return inner, at
        if _wrapper_name(expr) in _WRAPPERS and expr.args:
            return expr.args[0].value, at
        return None
    if isinstance(expr, cst.Name):
        b = binding_at(facts, expr.value, at)
        if b is None:
            return None
        if isinstance(b.value, cst.BaseExpression):
            return b.value, (b.value if b.value in facts.where else at)
        un = facts.unpacked_from(b) if b.value is None else None
        if un is not None and _wrapper_name(un[0]) in _WRAPPERS:
            args = [a for a in un[0].args if a.keyword is None and not a.star]
            if un[1] < len(args):
                return args[un[1]].value, un[0]
    return None


def _configured_dropout(facts: Facts, expr: cst.BaseExpression, at: cst.CSTNode, depth: int = 0) -> bool | None:
    """A dropout set where the module is built or wrapped (`GPT(GPTConfig(dropout=0.1))`,
    `get_peft_model(unet, LoraConfig(lora_dropout=0.1))`): True for a non-zero literal, False when every
    dropout given is a literal zero or none is given, None for a value the source does not show."""
    if depth > 6:
        return False
    call = expr
    if isinstance(expr, cst.Name):
        b = binding_at(facts, expr.value, at)
        if b is None:
            return False
        if b.value is None:
            un = facts.unpacked_from(b)
            if un is None:
                return False
            call, at = un[0], un[0]
        elif isinstance(b.value, cst.BaseExpression):
            call, at = b.value, (b.value if b.value in facts.where else at)
    if not isinstance(call, cst.Call):
        return False
    found: bool | None = False
    for a in call.args:
        if a.keyword is not None and "dropout" in a.keyword.value.lower():
            v = literal(a.value)
            if v is UNKNOWN:
                found = None if found is False else found
            elif v not in (0, 0.0, None, False):
                return True
        elif a.keyword is None or a.keyword.value in ("config", "peft_config"):
            inner = _configured_dropout(facts, a.value, at, depth + 1) if isinstance(a.value, (cst.Name, cst.Call)) \
                else False
            if inner is True:
                return True
            if inner is None:
                found = None
    if isinstance(call.func, cst.Attribute) and call.func.attr.value in RETURN_SELF:
        inner = _configured_dropout(facts, call.func.value, at, depth + 1)
        if inner is True:
            return True
        if inner is None:
            found = None
    return found


# ---------------------------------------------------------------------------------------------
# Which modules a call runs, and which modules an optimizer trains

#: methods only a module has: the names they are called on hold modules
_MODULE_METHODS = frozenset({"parameters", "named_parameters", "train", "eval", "modules", "named_modules",
                             "children", "requires_grad_"})


def module_names(facts: Facts) -> frozenset[str]:
    """The spellings the file calls module methods on (`model.parameters()`, `net.eval()`)."""
    found: frozenset[str] | None = facts.__dict__.get("_module_names")
    if found is None:
        out: set[str] = set()
        for meth in _MODULE_METHODS:
            for call in facts.method_calls(meth):
                d = dotted(module_itself(call.func.value)) if isinstance(call.func, cst.Attribute) else None
                if d is not None:
                    out.add(d)
        found = facts.__dict__["_module_names"] = frozenset(out)
    return found


def is_module(facts: Facts, expr: cst.BaseExpression, at: cst.CSTNode) -> bool:
    from trainlint.facts.program import program

    d = dotted(expr)
    return (d is not None and d in module_names(facts)) or program(facts).module(expr, at) is not None


def runs(facts: Facts, call: cst.Call, depth: int = 0) -> list[Owner]:
    """The modules ``call`` runs, spelt where it is: the callee (`model(x)`, `self.model(x)`,
    `model.forward(x)`), or the modules the file's function it calls runs (mapped back through its
    arguments). Each as (spelling, an expression naming it, where that expression is)."""
    from trainlint.facts.calls import call_graph

    memo: dict[cst.Call, list[Owner]] = facts.__dict__.setdefault("_module_runs", {})
    if call in memo:
        return memo[call]
    memo[call] = []  # recursion guard
    graph = call_graph(facts)
    out: list[Owner] = []
    f = call.func
    fn = graph.resolve(call)
    if fn is None:
        callee = f.value if isinstance(f, cst.Attribute) and f.attr.value == "forward" else f
        d = dotted(callee)
        if d is not None and is_module(facts, callee, call):
            out.append((d, callee, call))
    elif depth < 3:
        for inner in graph.calls_in.get(fn, ()):
            for name, expr, at in runs(facts, inner, depth + 1):
                outer = graph.outside(call, fn, name)
                if outer is not None and outer not in [o[0] for o in out]:
                    out.append((outer, expr, at))
    memo[call] = out
    return out


def handed(facts: Facts, call: cst.Call) -> list[Owner]:
    """The modules given to ``call`` as arguments (`loss = dsm_loss(score, x)` runs `score`)."""
    out: list[Owner] = []
    for a in call.args:
        d = dotted(a.value)
        if d is not None and d in module_names(facts):
            out.append((d, a.value, call))
    return out


def optimizer_owners(facts: Facts) -> tuple[Owner, ...] | None:
    """The modules whose parameters the file's optimizers hold, as (spelling where the optimizer is built,
    the expression, where): `torch.optim.AdamW(model.parameters())`, a list of `.parameters()` given by
    name; None when an optimizer's parameters are not shown or the file builds none."""
    if "_optimizer_owners" in facts.__dict__:
        known: tuple[Owner, ...] | None = facts.__dict__["_optimizer_owners"]
        return known
    out: list[Owner] | None = []
    for call in facts.index.get("Call", ()):
        f = call.func
        getattr_optim = isinstance(f, cst.Call) and isinstance(f.func, cst.Name) and f.func.value == "getattr"
        qn = facts.qualname(f) or "" if not isinstance(f, cst.Call) else ""
        if not (getattr_optim or (qn.startswith("torch.optim.") and not qn.startswith("torch.optim.lr_scheduler")
                                  and qn.rsplit(".", 1)[-1][:1].isupper())):
            continue
        owners = _parameter_owners(facts, argument(call, "params", 0), call)
        if not owners or out is None:
            out = None
            break
        out.extend(owners)
    found = facts.__dict__["_optimizer_owners"] = tuple(out) if out else None
    return found


def _parameter_owners(facts: Facts, expr: cst.BaseExpression | None, at: cst.CSTNode, depth: int = 0) -> list[Owner]:
    out: list[Owner] = []
    if expr is None or depth > 3:
        return out
    for c in iter_nodes(expr, (cst.Call,)):
        if isinstance(c.func, cst.Attribute) and c.func.attr.value in ("parameters", "named_parameters"):
            owner = module_itself(c.func.value)
            spelt = dotted(owner)
            if spelt is not None:
                out.append((spelt, owner, at))
    for n in iter_nodes(expr, (cst.Name,)):
        b = facts.lookup(n.value, at)
        if b is not None and isinstance(b.value, cst.BaseExpression) and b.value is not expr:
            out += _parameter_owners(facts, b.value, b.value if b.value in facts.where else at, depth + 1)
    return out


def related(a: str, b: str) -> bool:
    """Two spellings that may name the same module or one inside the other (`self.img_enc`,
    `model.img_enc.fc`): the last part of one is a part of the other."""
    pa, pb = a.split("."), b.split(".")
    return pa[-1] in pb or pb[-1] in pa


def frozen(facts: Facts, name: str) -> bool:
    """The file turns the gradients of ``name``'s parameters off (`name.requires_grad_(False)`,
    `for p in name.parameters(): p.requires_grad = False`)."""
    memo: dict[str, bool] = facts.__dict__.setdefault("_frozen_modules", {})
    if name not in memo:
        memo[name] = _frozen(facts, name)
    return memo[name]


def _frozen(facts: Facts, name: str) -> bool:
    for call in facts.method_calls("requires_grad_"):
        if isinstance(call.func, cst.Attribute) and dotted(module_itself(call.func.value)) == name and call.args \
                and literal(call.args[0].value) is False:
            return True
    for a in facts.index.get("Assign", ()):
        if literal(a.value) is False and any(isinstance(t.target, cst.Attribute) and t.target.attr.value == "requires_grad"
                                             for t in a.targets):
            for b in reversed(facts.where[a].blocks):
                if isinstance(b, cst.For) and name in {dotted(module_itself(c.func.value)) for c in
                                                       iter_nodes(b.iter, (cst.Call,)) if isinstance(c.func, cst.Attribute)
                                                       and c.func.attr.value in ("parameters", "named_parameters")}:
                    return True
    return False


def trained(facts: Facts, name: str, scope: Scope, depth: int = 0, expr: cst.BaseExpression | None = None,
            at: cst.CSTNode | None = None) -> bool:
    """An optimizer of the file holds the parameters of the module spelt ``name`` in ``scope`` (a module
    holding it or held by it counts), through the calls of ``scope`` (`val(net)` called by `train(net)`
    called with `model`); when the file does not show what its optimizers hold, the module runs with
    gradients on in a pass of a training loop. A frozen module is not trained."""
    if frozen(facts, name) or not loop_facts(facts).optimizer_steps:
        return False  # (no optimizer steps anything in the file: nothing is trained)
    owners = optimizer_owners(facts)
    if owners is not None and any(related(name, o) for o, _, _ in owners):
        return True
    if owners is not None and expr is not None:  # the same module as an owner, whatever its spellings
        from trainlint.facts.program import program

        mine = program(facts).module(expr, at)
        if mine is not None and mine.node is not None and any(
                (o := program(facts).module(e, w)) is not None and o.node is mine.node for _, e, w in owners):
            return True
    if owners is None and _runs_in_training(facts, name, scope):
        return True
    if isinstance(scope, cst.FunctionDef) and depth < 3:
        from trainlint.facts.calls import call_graph

        graph = call_graph(facts)
        for site in callers(facts, scope):
            outer = graph.outside(site, scope, name)
            w = facts.where.get(site)
            if outer is not None and w is not None and trained(facts, outer, w.function, depth + 1):
                return True
    return False


def _runs_in_training(facts: Facts, name: str, scope: Scope) -> bool:
    from trainlint.facts.program import program

    grad = program(facts).grad_enabled
    for loop in training_loops(facts):
        w = facts.where.get(loop)
        if w is None or w.function is not scope:
            continue
        for call in calls_inside(facts, loop):
            if facts.where[call].function is scope and grad(call) is not False \
                    and any(n == name for n, _, _ in runs(facts, call) + handed(facts, call)):
                return True
    return False
