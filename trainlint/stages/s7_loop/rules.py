"""TL7xx: the training loop — what happens step after step."""

from __future__ import annotations

import libcst as cst

from trainlint.facts import argument, dotted, iter_nodes, modes
from trainlint.facts.calls import call_graph, parameters
from trainlint.facts.loops import loop_facts, loops_around, module_itself
from trainlint.facts.modes import mode_flow, related
from trainlint.facts.objects import Loss, Number, Tensor
from trainlint.facts.passes import (
    calls_inside,
    enclosing_loops,
    in_iteration,
    reached_functions,
    spelt_in_pass,
    training_loops,
)
from trainlint.facts.program import program
from trainlint.findings import Applicability, Severity
from trainlint.rule import Rule, register


@register
class CannotOverfitBatch(Rule):
    """(probe, `--overfit N`) The model cannot overfit a single batch: the loss goes up, explodes,
    oscillates or plateaus."""

    code = "TL706"
    name = "cannot-overfit-batch"
    severity = Severity.WARNING
    probe = "With `--overfit N`, trains N steps on one batch, plots the loss curve and classifies it."


@register
class ScriptErrorBeforeTraining(Rule):
    """(probe) The script raised before it reached training."""

    code = "TL707"
    name = "script-error-before-training"
    severity = Severity.ERROR
    probe = "Runs the script up to the training call; an exception on the way is reported at the script's own line."


# ---------------------------------------------------------------------------------------------
# Hand-written PyTorch loops: what one step does (TL701–TL705). The loops are read once per file
# (`trainlint.facts.loops`), the modes of the modules by `trainlint.facts.modes`.


def _inside(facts, node, block) -> bool:
    w = facts.where.get(node)
    return w is not None and block in w.blocks


def _order(facts, node) -> int:
    return facts.where[node].order


def _receiver(call: cst.Call) -> str | None:
    f = call.func
    return dotted(f.value) if isinstance(f, cst.Attribute) else None


def _short(ctx, node: cst.CSTNode, limit: int = 48) -> str:
    """The code of ``node`` on one line, cut to ``limit`` characters (for a message)."""
    text = " ".join(ctx.code(node).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _stepped(step: cst.Call) -> str | None:
    """The optimizer a `step()` steps: `opt` for `opt.step()`, the argument of `scaler.step(opt)`."""
    mine = _receiver(step)
    if mine is not None and step.args and "scaler" in mine.lower():
        return dotted(step.args[0].value)
    return mine


@register
class MissingZeroGrad(Rule):
    """`backward()` and `optimizer.step()` in a loop that never clears the gradients."""

    code = "TL701"
    name = "missing-zero-grad"
    severity = Severity.ERROR
    default = False
    measured_from = 4
    probe = "Watches two real steps: the first step's gradients still in `p.grad` at the second `backward()` confirm it."
    #: an `opt.step()` run by a for/while loop that also runs a `.backward()`; or a Keras model's `train_step`
    #: on the torch backend (`fit` is its loop) applying the gradients of a `.backward()`
    gate = (("backward",), ("step", "train_step"), ("for", "while", "train_step"))

    def visit_While(self, node: cst.While) -> None:
        """Nothing to check per node: asking for `While` makes the engine record where those loops are."""

    def finish(self) -> None:
        facts = self.ctx.facts
        lf = loop_facts(facts)
        self._keras_torch_train_step(lf)
        reported = set()
        for step in lf.optimizer_steps:
            # premise 1: a loop one pass of which runs a `backward()` and this step (through the file's functions)
            loop = next((L for L in enclosing_loops(facts, step)
                         if any(in_iteration(facts, b, L) for b in lf.backward)), None)
            if loop is None or loop in reported or self._fresh_context(step, loop):
                continue
            # premise 2: nothing in a pass clears this optimizer's gradients (once before the loop does not count)
            clears = [z for z in lf.zero_grads if in_iteration(facts, z, loop)]
            if clears and not self._others_only(lf, step, loop, clears):
                continue
            reported.add(loop)
            opt = _stepped(step) or self.ctx.code(step.func)
            other = f" (only {', '.join(sorted({f'`{self.ctx.code(z).strip()}`' for z in clears}))})" if clears else ""
            self.report(
                step,
                f"`{_short(self.ctx, step.func)}()` runs every pass after `backward()`, and no `zero_grad()` in the "
                f"loop clears `{opt}`'s gradients{other}",
                hint=f"`backward()` adds to each `p.grad`, so every step applies the sum of all gradients so far and "
                f"the loss goes up or explodes; call `{opt}.zero_grad()` once per step (right after the step; with "
                "gradient accumulation, in the same `if` as the step)",
            )

    def _keras_torch_train_step(self, lf) -> None:
        """`train_step` of a `keras.Model` subclass on the torch backend: `fit` calls it once per batch; a
        `loss.backward()` whose gradients it applies (`self.optimizer.apply(...)`) with no `self.zero_grad()`
        in the class adds every step's gradients to the previous ones."""
        facts = self.ctx.facts
        for fn in facts.index.get("FunctionDef", ()):
            if fn.name.value != "train_step":
                continue
            w = facts.where.get(fn)
            cls = w.blocks[-1] if w is not None and w.blocks and isinstance(w.blocks[-1], cst.ClassDef) else None
            if cls is None or not any((facts.qualname(b.value) or "") in ("keras.Model", "keras.models.Model")
                                      for b in cls.bases):
                continue
            if not any(_inside(facts, b, fn) for b in lf.backward) or any(_inside(facts, z, cls) for z in lf.zero_grads):
                continue
            applies = [c for c in facts.method_calls("apply") if _inside(facts, c, fn)
                       and (dotted(c.func.value) or "").endswith("optimizer")]
            applies += [c for c in facts.method_calls("apply_gradients") if _inside(facts, c, fn)]
            applies += [c for c in lf.optimizer_steps if _inside(facts, c, fn)]
            if not applies:
                continue
            apply = min(applies, key=lambda c: _order(facts, c))
            self.report(
                apply,
                f"`{_short(self.ctx, apply.func)}(...)` applies the gradients of `backward()` in `train_step`, which "
                "`fit` runs every batch, and nothing clears them",
                hint="on the torch backend `backward()` adds to each weight's `.grad`, so every step applies the sum "
                "of all gradients so far and the loss goes up or explodes; call `self.zero_grad()` at the top of "
                "`train_step` (as Keras' guide to a torch `train_step` does)",
            )

    def _others_only(self, lf, step: cst.Call, loop, clears: list) -> bool:
        """Several optimizers step in the loop (a GAN's discriminator and generator) and every clearing in it
        is another optimizer's `zero_grad()` (spelt as the loop spells them): this one is never cleared."""
        facts = self.ctx.facts

        def spelt(node, text) -> set:
            return spelt_in_pass(facts, loop, node, text)

        mine = spelt(step, _stepped(step))
        others = set().union(*(spelt(o, _stepped(o)) for o in lf.optimizer_steps
                               if o is not step and in_iteration(facts, o, loop))) - {None} - mine
        if None in mine or not others:
            return False
        return all(isinstance(z, cst.Call) and isinstance(z.func, cst.Attribute) and z.func.attr.value == "zero_grad"
                   and spelt(z, _receiver(z)) <= others for z in clears)

    def _fresh_context(self, step: cst.Call, loop) -> bool:
        """The step runs in a `with torch.distributed.autograd.context()` opened inside the loop: the
        gradients live in that context (`opt.step(context_id)`), a new one each pass."""
        facts = self.ctx.facts
        w = facts.where.get(step)
        blocks = w.blocks if w is not None else ()
        inner = blocks[blocks.index(loop) + 1:] if loop in blocks else ()
        return any(isinstance(b, cst.With) and any(
            isinstance(i.item, cst.Call) and (facts.qualname(i.item.func) or "").startswith("torch.distributed.autograd.")
            for i in b.items) for b in inner)


@register
class WrongTrainEvalMode(Rule):
    """Training in eval mode, evaluating in train mode or with gradients on, `backward()` under `no_grad`."""

    code = "TL702"
    name = "wrong-train-eval-mode"
    severity = Severity.WARNING
    default = False
    measured_from = 4
    probe = "Reads `model.training` during a real training step: a trainable model in eval mode confirms it."
    #: `backward()` under `no_grad` needs only `.backward`; every other finding runs a module the file
    #: trains (`backward`) or sets a mode (`.train()` / `.eval()`).
    gate = (("backward", "eval", "train"),)

    def visit_While(self, node: cst.While) -> None:
        """Nothing to check per node: asking for `While` makes the engine record where those loops are."""

    def finish(self) -> None:
        self._done: set = set()
        self._backward_under_no_grad()
        unknown = self._training_in_eval_mode()
        self._evaluations(unknown)

    def _calls_in(self, region, scope) -> list:
        facts = self.ctx.facts
        if region is scope:
            return list(call_graph(facts).calls_in.get(scope, ()))
        return [c for c in calls_inside(facts, region) if facts.where[c].function is scope]

    def _training_in_eval_mode(self) -> set:
        """Premises: a pass of a training loop runs a module an optimizer trains (1), in eval mode on some path
        from an `eval()` with no `train()` between (2), and the module has a mode-dependent layer (3).
        Returns the origins of the unknown modes the trained modules are in at their training steps."""
        facts = self.ctx.facts
        flow, grad = mode_flow(facts), program(facts).grad_enabled
        unknown: set = set()
        found: dict = {}  # origin -> (its state, the modules it leaves in eval mode, a call that set train mode)
        lf = loop_facts(facts)
        for b in lf.backward:
            if not any(any(in_iteration(facts, o, L) for o in lf.optimizer_steps) for L in enclosing_loops(facts, b)):
                continue  # not a training step: no loop whose passes also step an optimizer
            scope = facts.where[b].function
            own = loops_around(facts, b)
            models: dict = {}
            for c in self._calls_in(own[-1] if own else scope, scope):
                if grad(c) is not False:
                    for name, expr, at in modes.runs(facts, c) + modes.handed(facts, c):
                        models.setdefault(name, (expr, at))
            for name, (expr, at) in models.items():
                states = flow.at(name, b) if modes.trained(facts, name, scope, expr=expr, at=at) else None
                unknown |= {s.origin for s in states or () if s.mode == modes.UNKNOWN_MODE and s.origin is not None}
                again = next((s.origin for s in states or () if s.mode == modes.TRAIN and isinstance(s.origin, cst.Call)
                              and not _is_mode_call(s.origin)), None)
                for s in states or ():
                    if s.mode == modes.EVAL and s.origin not in self._done:
                        if self._dependent((expr, at), s):  # premise 3
                            entry = found.setdefault(s.origin, (s, [], again))
                            if (s.spelt or name) not in entry[1]:
                                entry[1].append(s.spelt or name)
        for origin, (s, names, again) in found.items():
            self._done.add(origin)
            self._report_training(s, names, again)
        return unknown

    def _report_training(self, s, names: list, again) -> None:
        origin, event = s.origin, s.event
        shown = ", ".join(f"`{n}`" for n in names)
        if origin is event and _is_mode_call(origin):
            what = f"`{_short(self.ctx, origin)}` puts {shown} in eval mode"
        elif _is_mode_call(event):
            what = f"`{_short(self.ctx, origin)}` leaves {shown} in eval mode"
        else:
            what = f"{shown} comes from `{_short(self.ctx, origin)}` in eval mode"
        back = f"`{_short(self.ctx, again)}` again" if again is not None else f"`{names[0]}.train()`"
        self.report(
            origin,
            f"{what}, and training steps follow with no `{names[0]}.train()` between",
            hint="in eval mode dropout is off and batch norm uses its running statistics: the model trains, but "
            f"learns worse than expected, with no error; call {back} before the training steps (right after an "
            "evaluation, or at the top of each epoch)",
        )

    def _dependent(self, *candidates) -> bool | None:
        """The module has a mode-dependent layer: asked where it runs, where its mode is set, where it is made."""
        facts = self.ctx.facts
        found = set()
        for c in candidates:
            if isinstance(c, modes.Mode):
                e = c.event
                if isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute) and e.func.attr.value in ("eval", "train"):
                    c = (e.func.value, e)
                elif e is not None and isinstance(e, cst.BaseExpression):
                    c = (e, e if e in facts.where else None)
                else:
                    continue
            expr, at = c
            if at is not None:
                found.add(modes.mode_dependent(facts, expr, at))
        return True if True in found else False if False in found else None

    def _evaluations(self, unknown: set) -> None:
        """A loop that runs a trained module without training it (an evaluation: under `no_grad`, or after a
        training loop of the same function): in train mode on every path, or in the same unknown mode its
        training steps run in; in eval mode with gradients on, keeping its outputs."""
        facts = self.ctx.facts
        flow, grad = mode_flow(facts), program(facts).grad_enabled
        training = training_loops(facts)
        for loop in [*facts.index.get("For", ()), *facts.index.get("While", ())]:
            if loop in training or loop not in facts.where:
                continue
            scope = facts.where[loop].function
            after = self._after_training(loop, scope, training)
            for c in self._calls_in(loop, scope):
                if c in self._done or loops_around(facts, c)[-1:] != (loop,):
                    continue
                for name, expr, at in modes.runs(facts, c):
                    states = flow.at(name, c)
                    if not states or (loop, name) in self._done:
                        continue
                    kinds = {s.mode for s in states}
                    if kinds == {modes.EVAL} and grad(c) is True and dotted(c.func) == name:
                        self._kept_graphs(loop, c, name)
                    if not (grad(c) is False or after) or not modes.trained(facts, name, scope, expr=expr, at=at):
                        continue  # not an evaluation of a trained module
                    same = kinds == {modes.UNKNOWN_MODE} and all(s.origin is not None and s.origin in unknown
                                                                for s in states)
                    if kinds != {modes.TRAIN} and not same:
                        continue
                    if not self._dependent((expr, at), *states):
                        continue  # premise: a layer that computes something else in train mode
                    self._done |= {c, (loop, name)}
                    s = max(states, key=lambda s: _order(facts, s.origin) if s.origin in facts.where else -1)
                    self._report_evaluation(c, name, s, same)

    def _after_training(self, loop, scope, training) -> bool:
        """A training loop of ``scope`` that does not enclose ``loop`` (or a call of a function that runs one)
        comes before it."""
        facts = self.ctx.facts
        start = _order(facts, loop)
        if any(facts.where[T].function is scope and _order(facts, T) < start and not _inside(facts, loop, T)
               for T in training):
            return True  # (a loop inside a training loop, before its step, is part of that training: a rollout)
        fns = {facts.where[T].function for T in training}
        graph = call_graph(facts)
        return any(_order(facts, c) < start and (fn := graph.resolve(c)) is not None
                   and (fn in fns or fns & reached_functions(facts, fn))
                   for c in graph.calls_in.get(scope, ()) if not _inside(facts, c, loop))

    def _report_evaluation(self, call, name: str, s, same: bool) -> None:
        loop = loops_around(self.ctx.facts, call)[-1]
        if same:
            why = f"the mode its training steps run in: nothing sets `{name}`'s mode in between"
        elif s.origin is s.event and _is_mode_call(s.origin) and _inside(self.ctx.facts, s.origin, loop):
            why = f"train mode: `{_short(self.ctx, s.origin)}` runs inside this evaluation loop"
        elif _is_mode_call(s.event):
            why = f"train mode (`{_short(self.ctx, s.origin)}` left it so)"
        else:
            why = f"train mode: a new module starts in it and nothing calls `{name}.eval()`"
        fn = self.ctx.facts.where[call].function
        who = f"`{fn.name.value}()`" if isinstance(fn, cst.FunctionDef) else "this loop"
        self.report(
            call,
            f"{who} evaluates `{name}` in {why}",
            hint=f"dropout stays on and batch norm uses (and updates) the batch statistics, so the predictions are "
            f"noisy and the metrics lower, different on every run; call `{name}.eval()` before the evaluation "
            f"(and `{name}.train()` before training again)",
        )

    def _kept_graphs(self, loop, call: cst.Call, name: str) -> None:
        """Premises: the loop evaluates `name` in eval mode with gradients on, on the items it iterates (1), and
        keeps across passes a value computed from its output that carries the autograd graph (2)."""
        facts = self.ctx.facts
        module = program(facts).module(call.func, call)
        if loop in self._done or module is None or module.framework == "keras":
            return  # the output of a torch module the program knows carries a graph
        if any(isinstance(t := program(facts).of(a.value, call), Tensor) and t.volatile for a in call.args):
            return  # a pre-0.4 `Variable(x, volatile=True)`: nothing computed from it records a graph
        fed = {n.value for n in iter_nodes(loop.target, (cst.Name,))} if isinstance(loop, cst.For) else set()
        fed |= {n.value for a in iter_nodes(loop.body, (cst.Assign,)) for t in a.targets
                for n in iter_nodes(t.target, (cst.Name,))}
        if not fed & {n.value for a in call.args for n in iter_nodes(a.value, (cst.Name,))}:
            return  # the loop does not feed its items to the module: not an evaluation over a dataset
        kept = _kept_output(facts, loop, call)
        if kept is None:
            return
        self._done.add(loop)
        self.report(
            loop,
            f"this evaluation loop runs `{name}` with gradients on and keeps its outputs "
            f"(`{_short(self.ctx, kept)}`): every batch's autograd graph stays alive",
            hint="memory grows with every batch until the kept values are dropped, and a long evaluation runs out of "
            "it; wrap the loop in `with torch.no_grad():` "
            "(or `torch.inference_mode()`), or keep `.detach()`ed values",
        )

    def _backward_under_no_grad(self) -> None:
        """Premises: `x.backward()` runs inside a `no_grad` block (1) where `x` was computed (2)."""
        facts = self.ctx.facts
        for b in loop_facts(facts).backward:
            block = next((blk for blk in reversed(facts.where[b].blocks) if isinstance(blk, cst.With)
                          and any(_turns_grad_off(i.item) for i in blk.items)), None)
            root = _chain_root(b.func.value) if isinstance(b.func, cst.Attribute) else None
            if block is None or root is None or program(facts).grad_enabled(b) is not False:
                continue
            if any(isinstance(t.target, cst.Name) and t.target.value == root and _inside(facts, a, block)
                   for a in facts.index.get("Assign", ()) for t in a.targets):
                self.report(
                    b,
                    f"`{_short(self.ctx, b)}` runs inside `{_short(self.ctx, block.items[0].item)}`, where `{root}` "
                    "was computed: it has no autograd graph",
                    hint="this fails with \"RuntimeError: element 0 of tensors does not require grad and does not have "
                    "a grad_fn\"; compute the loss and call `backward()` outside the `no_grad` block (keep `no_grad` "
                    "for evaluation)",
                    severity=Severity.ERROR,
                )


def _is_mode_call(node) -> bool:
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in ("train", "eval")


def _turns_grad_off(expr: cst.BaseExpression) -> bool:
    """`torch.no_grad()` / `no_grad` (a decorator may omit the call), `inference_mode()` (not
    `inference_mode(False)`), `set_grad_enabled(False)`, by the called name."""
    call = expr if isinstance(expr, cst.Call) else None
    func = call.func if call is not None else expr
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    first = call.args[0].value if call is not None and call.args else None
    false = isinstance(first, cst.Name) and first.value == "False"
    return name == "no_grad" or (name == "inference_mode" and not false) or (name == "set_grad_enabled" and false)


def _chain_root(expr) -> str | None:
    """The name under a chain of attributes and subscripts, without calls (`self.sums[k]` → "self")."""
    while isinstance(expr, (cst.Subscript, cst.Attribute)):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None


#: methods that keep a tensor's values and its autograd graph
_KEEPING = frozenset({"to", "cuda", "cpu", "float", "double", "half", "bfloat16", "view", "reshape", "squeeze",
                      "unsqueeze", "flatten", "contiguous", "permute", "transpose", "clone", "mean", "sum",
                      "softmax", "log_softmax", "sigmoid", "exp", "log", "abs", "pow"})


def _kept_output(facts, loop, call: cst.Call) -> cst.CSTNode | None:
    """A statement of ``loop`` that keeps what ``call`` returns across passes, with its graph: appended to a
    list, or added to a total, bound before the loop; computed from the output by steps that keep the graph
    (attributes, items, `.to()`, `.view()`, a loss of it, `torch.cat`), not `.item()`, `.detach()`, `.data`,
    `float()`, a number a helper returns."""
    outs: set[str] = set()

    def carries(e) -> bool:
        if e is call:
            return True
        if isinstance(e, cst.Name):
            return e.value in outs
        if isinstance(e, cst.Attribute):
            return e.attr.value != "data" and carries(e.value)
        if isinstance(e, cst.Subscript):
            return carries(e.value)
        if isinstance(e, cst.BinaryOperation):
            return carries(e.left) or carries(e.right)
        if isinstance(e, cst.Call):
            f = e.func
            if isinstance(f, cst.Attribute) and f.attr.value in _KEEPING and carries(f.value):
                return True
            qn = facts.qualname(f) or ""
            lossy = qn.startswith("torch.") and qn.rsplit(".", 1)[-1] not in ("argmax", "argmin", "argsort", "topk")
            if lossy or isinstance(program(facts).of(f, e if e in facts.where else call), Loss):
                return any(carries(a.value) for a in e.args)
        return False

    made = {x.value for a in iter_nodes(loop.body, (cst.Assign,)) for t in a.targets
            for x in iter_nodes(t.target, (cst.Name,)) if isinstance(t.target, (cst.Name, cst.Tuple, cst.List))}

    def before(target) -> bool:  # not made again in the pass: kept across passes
        root = _chain_root(target)
        return root is not None and (root == "self" or root not in made)

    for n in sorted(iter_nodes(loop.body, (cst.Assign, cst.AugAssign, cst.Call)),
                    key=lambda n: facts.where[n].order if n in facts.where else 0):
        if isinstance(n, cst.Assign) and carries(n.value):
            outs |= {x.value for t in n.targets for x in iter_nodes(t.target, (cst.Name,))}
        elif isinstance(n, cst.AugAssign) and carries(n.value) and before(n.target):
            return n
        elif isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value in ("append", "extend") \
                and len(n.args) == 1 and carries(n.args[0].value) and before(n.func.value):
            return n
    return None


def _drops_graph(expr) -> bool:
    """``expr`` ends in a step that leaves no autograd graph: `.detach()`, `.item()`, `.tolist()`, `float(...)`."""
    if not isinstance(expr, cst.Call):
        return False
    f = expr.func
    return (isinstance(f, cst.Attribute) and f.attr.value in ("detach", "item", "tolist", "numpy")) or (
        isinstance(f, cst.Name) and f.value in ("float", "int"))


def _backward_tensor(facts, b: cst.Call) -> cst.BaseExpression | None:
    """What a `backward()` runs on: `loss` for `loss.backward()`, and for `accelerator.backward(loss)` (an
    Accelerate / Fabric / DeepSpeed object's method) its argument."""
    if not isinstance(b.func, cst.Attribute):
        return None
    recv = b.func.value
    if b.args and b.args[0].keyword is None:
        bound = facts.lookup(recv.value, b) if isinstance(recv, cst.Name) else None
        made = bound.value if bound is not None and isinstance(bound.value, cst.Call) else None
        qn = (facts.qualname(made.func) or "") if made is not None else ""
        if qn.startswith(("accelerate.", "lightning.", "lightning_fabric.", "deepspeed.")) \
                or (dotted(recv) or "").rsplit(".", 1)[-1] in ("accelerator", "fabric"):
            return b.args[0].value
    return recv


@register
class LossAccumulatedAsTensor(Rule):
    """`total_loss += loss` adds the loss tensor (and its whole autograd graph) instead of its value."""

    code = "TL703"
    name = "loss-accumulated-as-tensor"
    severity = Severity.WARNING
    default = False
    measured_from = 4
    fix = Applicability.UNSAFE
    #: `total += loss` in a for/while loop whose `backward()` takes `loss`
    gate = (("backward",), ("for", "while"))

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._summed: set = set()

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.AddAssign):
            self._summed_into(node, node.target, node.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        """`total = total + loss`: the same sum, spelt out."""
        v = node.value
        if len(node.targets) == 1 and isinstance(v, cst.BinaryOperation) and isinstance(v.operator, cst.Add) \
                and self.ctx.code(v.left) == self.ctx.code(node.targets[0].target):
            self._summed_into(node, node.targets[0].target, v.right)

    def _summed_into(self, node, target, value) -> None:
        """Premises: in a loop (1), with gradients on where the sum runs (2), a value that carries an
        autograd graph (3) is added to a total bound before the loop (4) that is not backpropagated (5)."""
        facts = self.ctx.facts
        loops = loops_around(facts, node)
        if not loops or program(facts).grad_enabled(node) is False:
            return
        loop = loops[-1]
        while isinstance(value, cst.BinaryOperation) and isinstance(value.operator, (cst.Multiply, cst.Divide)):
            value = value.left
        if not self._carries_graph(value, node, loop):
            return
        text = self.ctx.code(target)
        backs = [t for b in loop_facts(facts).backward if (t := _backward_tensor(facts, b)) is not None]
        if any(text == self.ctx.code(t) or text in {self.ctx.code(n) for n in iter_nodes(t, (cst.Name, cst.Attribute))}
               for t in backs):
            return  # the total is what is backpropagated (several losses summed): intended
        root, scope, start = _chain_root(target), facts.where[node].function, _order(facts, loop)
        if any(start < b.order < _order(facts, node) for b in facts.bindings.get(scope, {}).get(root, ())):
            return  # a total made again in each pass: nothing kept across passes
        if any(_inside(facts, a, loop) and _order(facts, a) > _order(facts, node)
               and any(self.ctx.code(t.target) == text for t in a.targets) for a in facts.index.get("Assign", ())):
            return  # reset in the loop itself (after each optimizer step, every N steps): what it keeps is bounded
        shown = self.ctx.code(value)
        item = f"{shown}.item()" if isinstance(value, (cst.Name, cst.Attribute)) else f"({shown}).item()"
        self._summed.add(node)
        self.report(
            node,
            f"`{_short(self.ctx, node, 60)}` adds the loss tensor `{_short(self.ctx, value, 30)}`, not its value: "
            f"`{_short(self.ctx, target, 30)}` keeps every step's autograd graph",
            hint="memory grows each step until the total is reset (a few KB a step after `backward()`, the whole "
            f"graph with `retain_graph=True`) and the total stays a tensor on the device; accumulate the number: "
            f"`{item}` (or `.detach()`)",
            fix=self.ctx.fix(Applicability.UNSAFE, f"Accumulate `{item}`", self.ctx.replace(value, item))
            if isinstance(node, cst.AugAssign) and value is node.value else None,
        )

    def _carries_graph(self, value, at, loop) -> bool:
        """``value`` is the tensor a `backward()` of this pass ran on (bound as there: not rebound to
        `loss.item()` in between), or the program shows it carries an autograd graph."""
        facts = self.ctx.facts
        got = program(facts).of(value, at)
        if isinstance(got, Number) or (isinstance(got, Tensor) and got.graph is False):
            return False
        if isinstance(got, Tensor) and got.graph:
            return True
        text = self.ctx.code(value)
        for b in loop_facts(facts).backward:
            t = _backward_tensor(facts, b)
            if t is None or not in_iteration(facts, b, loop) or self.ctx.code(t) != text:
                continue
            root = _chain_root(value)
            if root is not None and facts.where[b].function is facts.where[at].function \
                    and facts.lookup(root, b) is facts.lookup(root, at):
                return True  # the same binding backward() ran on
        return False

    def visit_Call(self, node: cst.Call) -> None:
        """`outputs.append(output)` in the training loop, where `output` (or `output["loss"]`) is what
        `backward()` ran on: the list keeps every step's graph alive until it is dropped."""
        self._handed_to_a_running_sum(node)
        f = node.func
        if not (isinstance(f, cst.Attribute) and f.attr.value == "append" and len(node.args) == 1
                and isinstance(node.args[0].value, cst.Name) and isinstance(f.value, cst.Name)):
            return
        facts = self.ctx.facts
        loops = loops_around(facts, node)
        if not loops or program(facts).grad_enabled(node) is False:
            return
        loop, kept, store = loops[-1], node.args[0].value.value, f.value.value
        lf = loop_facts(facts)
        backs = [b for b in lf.backward if _inside(facts, b, loop) and _order(facts, b) < _order(facts, node)]
        if not backs or any(store in {n.value for n in iter_nodes(b, (cst.Name,))} for b in lf.backward):
            return  # (the kept losses are backpropagated later: intended)
        ran = [b for b in backs if _chain_root(_backward_tensor(facts, b)) == kept]
        if not ran:
            return
        # the list lives across passes (made before the loop), and the kept value still is what was
        # backpropagated (`output["loss"] = output["loss"].detach()`, `loss = loss.item()` drop the graph)
        made = facts.lookup(store, node)
        if made is None or made.order >= _order(facts, loop) or not isinstance(made.value, (cst.List, cst.Call)):
            return
        for a in facts.index.get("Assign", ()):
            if _inside(facts, a, loop) and _order(facts, ran[-1]) < _order(facts, a) < _order(facts, node) and any(
                    kept in {n.value for n in iter_nodes(t.target, (cst.Name,))} for t in a.targets):
                got = program(facts).of(a.value, a)
                if isinstance(got, Number) or (isinstance(got, Tensor) and got.graph is False) or _drops_graph(a.value):
                    return  # `output["loss"] = output["loss"].detach()`: what is kept holds no graph
        self.report(
            node,
            f"`{_short(self.ctx, node)}` keeps `{kept}`, which `backward()` ran on, in a list across passes: every "
            "step's autograd graph stays linked from it",
            hint="memory grows each step until the list is dropped (a few KB a step after `backward()`, the whole "
            f"graph with `retain_graph=True`); keep detached values: `.detach()` (or `.item()`) `{kept}` before "
            "appending it",
        )

    def _handed_to_a_running_sum(self, node: cst.Call) -> None:
        """`tracker.update(loss)` in the training loop after `loss["total"].backward()`, where `update` is a
        method of the file that adds what it is given to a sum kept on the object (`self.sums[k] += loss[k]`):
        the object keeps every step's graph alive, as `total += loss` would."""
        if not node.args or not isinstance(node.func, cst.Attribute):
            return
        facts = self.ctx.facts
        loops = loops_around(facts, node)
        graph = call_graph(facts)
        fn = graph.resolve(node) if loops else None
        if fn is None or graph.class_of(fn) is None or program(facts).grad_enabled(node) is False:
            return
        loop = loops[-1]
        backs = [b for b in loop_facts(facts).backward if _inside(facts, b, loop) and _order(facts, b) < _order(facts, node)]
        roots = {_chain_root(_backward_tensor(facts, b)) for b in backs} - {None}
        kept = [a.value for a in node.args if isinstance(a.value, cst.Name) and a.value.value in roots]
        receiver = node.func.value
        if not kept or (isinstance(receiver, cst.Name) and ((made := facts.lookup(receiver.value, node)) is None
                                                            or made.order >= _order(facts, loop))):
            return  # the object must live across passes (made before the loop, or an attribute of `self`)
        last = max(_order(facts, b) for b in backs)
        for value in kept:
            bound = facts.lookup(value.value, node)
            param = next((p.name.value for p in parameters(fn) if graph.argument_of(node, fn, p.name.value) is value), None)
            if bound is None or bound.order > last or param is None or len(facts.bindings.get(fn, {}).get(param, ())) != 1:
                continue  # rebound after the backward, not given by name, or rebound in the method
            reset = {self.ctx.code(t.target) for a in facts.index.get("Assign", ())
                     if facts.where[a].function is fn and facts.where[a].blocks[-1] is fn for t in a.targets}
            for kept_there in self._kept_on_self(fn, _derived_names(facts, fn, param), reset):
                self._summed.add(kept_there)
                verb = "sums" if isinstance(kept_there, cst.AugAssign) else "keeps"  # (on the object)
                self.report(
                    kept_there,
                    f"`{_short(self.ctx, kept_there, 36)}` {verb} the loss tensors `{_short(self.ctx, node, 30)}` hands in "
                    "after `backward()`: each step's graph stays linked",
                    hint="memory grows each step until it is reset (a few KB a step after `backward()`, the whole graph "
                    f"with `retain_graph=True`); keep numbers: `.item()` (or `.detach()`) what is kept, or hand "
                    f"`{fn.name.value}()` the values",
                )

    def _kept_on_self(self, fn, given: set, reset: set) -> list:
        """The statements of method ``fn`` that keep one of the ``given`` names (or an item, an attribute of
        one) on the object across calls: `self.sums[k] += loss[k]`, `self.history.append(loss)`; not a total
        ``fn`` itself resets (`self.total = 0` first)."""
        facts = self.ctx.facts
        out = []
        for aug in facts.index.get("AugAssign", ()):
            if aug in self._summed or not isinstance(aug.operator, cst.AddAssign) \
                    or facts.where[aug].function is not fn or _chain_root(aug.target) != "self" \
                    or self.ctx.code(aug.target) in reset:
                continue
            added = aug.value
            while isinstance(added, cst.BinaryOperation) and isinstance(added.operator, (cst.Multiply, cst.Divide)):
                added = added.left
            if _chain_root(added) in given:
                out.append(aug)
        for call in facts.method_calls("append"):
            if call in self._summed or facts.where[call].function is not fn or len(call.args) != 1 \
                    or _chain_root(call.func.value) != "self" or self.ctx.code(call.func.value) in reset:
                continue
            if _chain_root(call.args[0].value) in given:
                out.append(call)
        return sorted(out, key=lambda n: _order(facts, n))


def _derived_names(facts, fn, param: str) -> set:
    """``param`` and the names ``fn`` binds to its parts by iterating it: `for v in param`,
    `for k, v in param.items()`, `for v in param.values()`."""
    out = {param}
    for loop in facts.index.get("For", ()):
        if facts.where[loop].function is not fn:
            continue
        it, target = loop.iter, loop.target
        if isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute) and not it.args \
                and _chain_root(it.func.value) == param:
            if it.func.attr.value == "values" and isinstance(target, cst.Name):
                out.add(target.value)
            elif it.func.attr.value == "items" and isinstance(target, cst.Tuple) and len(target.elements) == 2 \
                    and isinstance(target.elements[1].value, cst.Name):
                out.add(target.elements[1].value.value)
        elif _chain_root(it) == param and isinstance(target, cst.Name):
            out.add(target.value)
    return out


def _exclusive(facts, a, b) -> bool:
    """``a`` and ``b`` sit in the two branches of one `if`/`else` (`if generator_step: ... else: ...`):
    they never run in the same pass."""
    wa, wb = facts.where.get(a), facts.where.get(b)
    if wa is None or wb is None:
        return False
    for block in wa.blocks:
        if isinstance(block, cst.If) and block in wb.blocks and block.orelse is not None:
            in_body = [any(n is x for n in iter_nodes(block.body, (type(x),))) for x in (a, b)]
            if in_body[0] != in_body[1]:
                return True
    return False


def _scheduled_optimizer(facts, step: cst.Call) -> str | None:
    """The optimizer a scheduler was built on, as spelt there (`LambdaLR(optimizer, ...)`,
    `get_linear_schedule_with_warmup(self.optimizer, ...)`), through a name, `self.<attr>` or
    `accelerator.prepare(...)`; None when the source does not show it."""
    recv = step.func.value if isinstance(step.func, cst.Attribute) else None
    values = []
    if isinstance(recv, cst.Name):
        b = facts.lookup(recv.value, step)
        un = facts.unpacked_from(b) if b is not None and b.value is None else None
        if un is not None:
            args = [a for a in un[0].args if a.keyword is None and not a.star]
            if un[1] < len(args) and isinstance(args[un[1]].value, cst.Name):
                b = facts.lookup(args[un[1]].value.value, un[0])
        if b is not None and isinstance(b.value, cst.Call):
            values.append(b.value)
    elif recv is not None and (dotted(recv) or "").startswith("self."):
        values = [a.value for a in facts.index.get("Assign", ()) if any(dotted(t.target) == dotted(recv)
                                                                       for t in a.targets)]
    found = {dotted(opt) for v in values if isinstance(v, cst.Call)
             and (opt := argument(v, "optimizer", 0)) is not None}
    return found.pop() if len(found) == 1 and None not in found else None


@register
class SchedulerBeforeOptimizer(Rule):
    """`scheduler.step()` before `optimizer.step()` in the same loop."""

    code = "TL704"
    name = "scheduler-before-optimizer"
    severity = Severity.WARNING
    measured_from = 4
    #: `.step()` in a for/while loop, or in a handler of a pytorch-ignite `Events.*_STARTED` event. The
    #: scheduler / optimizer tests are substrings of the receiver (`"sched" in name.lower()`, `"optim" in
    #: ...`): no prefix or suffix word covers them.
    gate = (("step",), ("for", "while", "Events"))

    def finish(self) -> None:
        facts = self.ctx.facts
        lf = loop_facts(facts)
        self._ignite_started_handlers(lf)
        for s in lf.scheduler_steps:
            loops = lf.loops_of[s]
            # premise 1: one pass of a loop (or one call of a function) runs both, the scheduler first, on
            # every path (not the two branches of an `if`)
            block = loops[-1] if loops else facts.where[s].function
            if block is None:
                continue
            after = [o for o in lf.optimizer_steps if _inside(facts, o, block) and _order(facts, o) > _order(facts, s)
                     and not _exclusive(facts, s, o)]
            # premise 2: the optimizer stepped after it is the one the scheduler schedules (the one that steps
            # there, when the scheduler's construction is not shown)
            built_on = _scheduled_optimizer(facts, s)
            if built_on is not None:
                after = [o for o in after if related(built_on, _stepped(o) or "")]
            elif len({_stepped(o) for o in lf.optimizer_steps if _inside(facts, o, block)
                      and not _exclusive(facts, s, o)}) != 1:
                continue
            if not after:
                continue
            where = "in the same loop" if loops else "in the same function"
            self.report(
                s,
                f"`{_short(self.ctx, s)}` runs before `{_short(self.ctx, after[0])}` {where}: the first value of the "
                "learning-rate schedule is skipped",
                hint="PyTorch warns \"Detected call of `lr_scheduler.step()` before `optimizer.step()`\"; with a "
                f"per-epoch schedule the whole schedule runs one epoch early; call `{_short(self.ctx, s)}` after "
                f"`{_short(self.ctx, after[0])}`",
            )

    def _ignite_started_handlers(self, lf) -> None:
        """`scheduler.step()` in a pytorch-ignite handler of `Events.EPOCH_STARTED` (`ITERATION_STARTED`): the
        engine runs it before the process function's `optimizer.step()` calls of that epoch (iteration)."""
        facts = self.ctx.facts
        handlers = []  # (the handler, the event: "EPOCH_STARTED")
        for fn in facts.index.get("FunctionDef", ()):
            for d in fn.decorators:
                dec = d.decorator
                if isinstance(dec, cst.Call) and isinstance(dec.func, cst.Attribute) and dec.func.attr.value == "on" \
                        and dec.args and (event := self._started_event(dec.args[0].value, dec)):
                    handlers.append((fn, event))
        for call in facts.method_calls("add_event_handler"):
            if len(call.args) >= 2 and (event := self._started_event(call.args[0].value, call)):
                fn = facts.function_def(call.args[1].value, call)
                if fn is not None:
                    handlers.append((fn, event))
        for fn, event in handlers:
            for s in lf.scheduler_steps:
                w = facts.where.get(s)
                if w is None or w.function is not fn or lf.loops_of[s] \
                        or any(isinstance(b, cst.If) for b in w.blocks[w.blocks.index(fn) + 1:]):
                    continue  # (a step under a condition, `if engine.state.epoch > 1:`, may be meant)
                after = event[: -len("STARTED")] + "COMPLETED"
                self.report(
                    s,
                    f"`{_short(self.ctx, s)}` runs in a handler of `Events.{event}`, before that epoch's optimizer "
                    "steps: the first value of the learning-rate schedule is skipped",
                    hint="PyTorch warns \"Detected call of `lr_scheduler.step()` before `optimizer.step()`\"; with a "
                    f"per-epoch schedule the whole schedule runs one epoch early; attach the handler to "
                    f"`Events.{after}` (after the optimizer steps)",
                )

    def _started_event(self, expr, at) -> str | None:
        """The name of a pytorch-ignite `Events.EPOCH_STARTED` / `ITERATION_STARTED` (also with a filter,
        `Events.EPOCH_STARTED(every=2)`, or through a name bound to it), else None."""
        facts = self.ctx.facts
        if isinstance(expr, cst.Name):  # `EPISODE_STARTED = Events.EPOCH_STARTED`
            b = facts.lookup(expr.value, at)
            if b is not None and isinstance(b.value, (cst.Attribute, cst.Call)):
                expr = b.value
        if isinstance(expr, cst.Call):
            expr = expr.func
        qn = facts.qualname(expr) or ""
        last = qn.rsplit(".", 1)[-1]
        return last if qn.startswith("ignite.") and last in ("EPOCH_STARTED", "ITERATION_STARTED") else None


#: what registers a hook on a module, and what makes its `__call__` run more than `forward`
_HOOKS = ("register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
          "register_backward_hook", "register_full_backward_pre_hook")


@register
class DirectForwardCall(Rule):
    """`model.forward(x)` instead of `model(x)`: the module's hooks are skipped."""

    code = "TL705"
    name = "direct-forward-call"
    severity = Severity.WARNING
    measured_from = 4
    fix = Applicability.UNSAFE
    default = False
    #: `.forward(...)`, and something that runs only through `__call__`: a hook, FSDP2's `fully_shard`, a
    #: module compiled in place
    gate = (("forward",), (*_HOOKS, "fully_shard", "compile"))

    def visit_Call(self, node: cst.Call) -> None:
        """Premises: the receiver is a module (1), on which the file registers what only `__call__` runs: a
        hook, `fully_shard`, `module.compile()` (2)."""
        f = node.func
        if not (isinstance(f, cst.Attribute) and f.attr.value == "forward" and isinstance(f.value, (cst.Name, cst.Attribute))):
            return
        name = dotted(f.value)
        facts = self.ctx.facts
        w = facts.where.get(node)
        if name is None or name.split(".", 1)[0] in ("self", "cls", "super") or (w is not None and w.inside(cst.ClassDef)):
            return
        if not modes.is_module(facts, f.value, node):
            return
        skipped = self._skipped(name)
        if skipped is None:
            return
        self.report(
            node,
            f"`{name}.forward(...)` bypasses `{name}.__call__`, so {skipped}",
            hint=f"`nn.Module.__call__` runs the hooks (and what `fully_shard` / `compile()` install) around "
            f"`forward`; call the module: `{name}(...)`",
            fix=self.ctx.fix(Applicability.UNSAFE, f"Call `{name}(...)`", self.ctx.replace(f, f.value)),
        )

    def _skipped(self, name: str) -> str | None:
        facts = self.ctx.facts
        for meth in _HOOKS:
            for call in facts.method_calls(meth):
                if dotted(module_itself(call.func.value)) == name:
                    return f"the hook `{_short(self.ctx, call)}` registers does not run"
        for call in facts.index.get("Call", ()):
            if (facts.qualname(call.func) or "").endswith("fully_shard") and call.args \
                    and dotted(call.args[0].value) == name:
                return f"the sharding hooks `{_short(self.ctx, call)}` installs do not run (parameters stay sharded)"
        for call in facts.method_calls("compile"):
            if dotted(call.func.value) == name and modes.is_module(facts, call.func.value, call):
                return f"the compiled forward of `{_short(self.ctx, call)}` is not used"
        return None
