"""TL7xx: the training loop — what happens step after step."""

from __future__ import annotations

import re
from typing import cast

import libcst as cst

from trainlint.facts import dotted, iter_nodes, literal
from trainlint.facts.calls import call_graph, parameters
from trainlint.facts.loops import loop_facts, loops_around, module_itself
from trainlint.facts.models import optimizer_model, torch_optimizer
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
# (`trainlint.facts.loops`): every call is filed under the loops around it.


def _turns_grad_off(expr: cst.BaseExpression) -> bool:
    """`torch.no_grad()` / `no_grad` (a decorator may omit the call), `inference_mode()` (not
    `inference_mode(False)`), `set_grad_enabled(False)` — by the called name, not the text, so that
    `record_function("no_grad_part")` is not one."""
    call = expr if isinstance(expr, cst.Call) else None
    func = call.func if call is not None else expr
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    first = call.args[0].value if call is not None and call.args else None
    false = isinstance(first, cst.Name) and first.value == "False"
    if name == "no_grad":
        return True
    if name == "inference_mode":
        return not false
    return name == "set_grad_enabled" and false


_GRAD_WORDS = frozenset({"no_grad", "inference_mode", "set_grad_enabled"})


def _grad_word(func) -> bool:
    """The called name is one of `no_grad`, `inference_mode`, `set_grad_enabled` (exact node types: fast)."""
    tp = type(func)
    return (tp is cst.Attribute and func.attr.value in _GRAD_WORDS) or (tp is cst.Name and func.value in _GRAD_WORDS)


def _receiver(call: cst.Call) -> str | None:
    f = call.func
    return dotted(f.value) if isinstance(f, cst.Attribute) else None


#: `torch.nn` layers that compute the same in train and eval mode (no dropout, no batch statistics)
_MODE_FREE_LAYERS = frozenset({
    "Module", "Sequential", "ModuleList", "ModuleDict", "Parameter", "ParameterList", "ParameterDict", "Linear",
    "Bilinear", "LazyLinear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "ReLU", "ReLU6", "LeakyReLU", "PReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Sigmoid", "Tanh",
    "Hardtanh", "Hardswish", "Hardsigmoid", "Softmax", "LogSoftmax", "Softplus", "Softsign", "Flatten", "Unflatten",
    "Identity", "Embedding", "EmbeddingBag", "LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm", "MaxPool1d",
    "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "Upsample", "PixelShuffle", "ZeroPad2d",
    "ConstantPad1d", "ConstantPad2d", "ReflectionPad2d", "ReplicationPad2d",
})


def _inside(facts, node, block) -> bool:
    w = facts.where.get(node)
    return w is not None and block in w.blocks


def _order(facts, node) -> int:
    return facts.where[node].order


def _cleared(z) -> str | None:
    """What a clearing clears: `opt.zero_grad()` → "opt"; `p.grad = None`, `p.grad.zero_()` → None (any)."""
    if isinstance(z, cst.Call) and isinstance(z.func, cst.Attribute) and z.func.attr.value == "zero_grad":
        return _receiver(z)
    return None


@register
class MissingZeroGrad(Rule):
    """`backward()` and `optimizer.step()` in a loop that never clears the gradients."""

    code = "TL701"
    name = "missing-zero-grad"
    severity = Severity.ERROR
    default = False
    probe = "Watches two real steps: the first step's gradients still in `p.grad` at the second `backward()` confirm it."
    #: an `opt.step()` in a for/while loop that also runs a `.backward()`; or a Keras model's `train_step`
    #: on the torch backend (`fit` is its loop) applying the gradients of a `.backward()`
    gate = (("backward",), ("step", "train_step"), ("for", "while", "train_step"))

    def finish(self) -> None:
        facts = self.ctx.facts
        lf = loop_facts(facts)
        self._keras_torch_train_step(lf)
        reported = set()
        for step in lf.optimizer_steps:
            loops = lf.loops_of[step]
            # the innermost loop around the step that also runs a backward()
            loop = next((L for L in reversed(loops) if any(_inside(facts, b, L) for b in lf.backward)), None)
            if loop is None or loop in reported:
                continue
            clears = self._clears_in(lf, loops)
            if any(_inside(facts, z, loop) for z in clears) and not self._others_cleared_only(lf, step, loops, clears):
                continue
            if self._fresh_context(step, loop):
                continue
            reported.add(loop)
            opt = _receiver(step) or self.ctx.code(step.func)
            if step.args and "scaler" in opt.lower():  # `scaler.step(optimizer)`: clear the optimizer
                opt = self.ctx.code(step.args[0].value)
            self.report(
                step,
                f"`{self.ctx.code(step.func)}()` runs every iteration after `backward()`, but the loop never clears "
                + (f"`{opt}`'s gradients (only another optimizer's: " + ", ".join(sorted({
                    f"`{self.ctx.code(z)}`" for z in clears if _inside(facts, z, loop)})) + ")"
                   if any(_inside(facts, z, loop) for z in clears) else "the gradients")
                + ": `backward()` adds to `p.grad`, so each step applies the sum of all gradients so far and "
                "the loss goes up or explodes",
                hint=f"call `{opt}.zero_grad()` once per step (e.g. right after `{self.ctx.code(step.func)}()`; "
                "with gradient accumulation, in the same `if` as the step)",
            )


    def _keras_torch_train_step(self, lf) -> None:
        """`train_step` of a `keras.Model` subclass on the torch backend: `fit` calls it once per batch; a
        `loss.backward()` whose gradients are applied (`self.optimizer.apply(...)`) with no `self.zero_grad()`
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
                f"`{self.ctx.code(apply.func)}(...)` applies the gradients of `backward()` in `train_step`, which `fit` "
                "runs every batch, but nothing clears them: on the torch backend `backward()` adds to each weight's "
                "`.grad`, so every step applies the sum of all gradients so far and the loss goes up or explodes",
                hint="call `self.zero_grad()` at the top of `train_step` (as Keras' guide to a torch `train_step` does)",
            )

    def _clears_in(self, lf, loops) -> dict:
        """What clears gradients in ``loops``: node -> the objects it clears (their text; None: cannot tell
        which). A `zero_grad()` / `p.grad = None` in the loops, or a call there to a function of the file whose
        body clears (`reset_grad()` running `d_optimizer.zero_grad(); g_optimizer.zero_grad()`), the objects
        spelt as at the call."""
        facts = self.ctx.facts
        out = {z: (_cleared(z),) for z in lf.zero_grads if any(_inside(facts, z, L) for L in loops)}
        if loops:
            out.update(self._helper_clears(lf, loops[0]))
        return out

    def _helper_clears(self, lf, outer) -> dict:
        """The calls in the loop ``outer`` to functions of the file that clear gradients (see `_clears_in`)."""
        memo = self.__dict__.setdefault("_helper_clears_memo", {})
        if outer in memo:
            return memo[outer]
        facts = self.ctx.facts
        graph = call_graph(facts)
        w = facts.where.get(outer)
        seen = {w.function} if w is not None and w.function is not None else set()
        out = {}
        for call in lf.calls:
            if isinstance(call.func, (cst.Name, cst.Attribute)) and _inside(facts, call, outer):
                found = self._call_clears(graph, lf, call, seen)
                if found:
                    out[call] = tuple(found)
        memo[outer] = out
        return out

    def _call_clears(self, graph, lf, call: cst.Call, seen: set, depth: int = 0) -> list:
        """The objects a call to a function of the file clears, as spelt at ``call`` (None: cannot tell
        which): the `zero_grad()`s in its body and in the functions it calls (a few levels deep)."""
        target = graph.target(call)
        if target is None or target in seen or depth > 3:
            return []
        facts = self.ctx.facts
        by_fn: dict[cst.CSTNode, list[cst.Call | cst.Assign]] | None = self.__dict__.get("_zero_grads_by_fn")
        if by_fn is None:
            by_fn = {}
            self._zero_grads_by_fn = by_fn
            for z in lf.zero_grads:
                wz = facts.where.get(z)
                if wz is not None and wz.function is not None:
                    by_fn.setdefault(wz.function, []).append(z)
        inner = [_cleared(z) for z in by_fn.get(target, ())]
        for c in graph.calls_in.get(target, ()):
            inner += self._call_clears(graph, lf, c, seen | {target}, depth + 1)
        return [graph.outside(call, target, r) if r is not None else None for r in inner]

    def _others_cleared_only(self, lf, step: cst.Call, loops, clears: dict) -> bool:
        """Several optimizers step in the loop (a GAN's discriminator and generator) and every clearing in the
        loops around ``step`` is `other_optimizer.zero_grad()`: this one's gradients are never cleared."""
        facts = self.ctx.facts
        mine = _receiver(step)
        if mine is None or (step.args and "scaler" in mine.lower()):
            mine = dotted(step.args[0].value) if step.args else None
        if mine is None:
            return False
        inner = loops[-1]
        others = {_receiver(o) for o in lf.optimizer_steps if o is not step and _inside(facts, o, inner)}
        others.discard(None)
        others.discard(mine)
        if not others:
            return False
        cleared = [r for z, rs in clears.items() if any(_inside(facts, z, L) for L in loops) for r in rs]
        return bool(cleared) and all(r in others for r in cleared)

    def _fresh_context(self, step: cst.Call, loop) -> bool:
        """The step runs in a `with torch.distributed.autograd.context()` opened inside the loop: the
        gradients live in that context (`opt.step(context_id)`), a new one each iteration."""
        facts = self.ctx.facts
        w = facts.where.get(step)
        blocks = w.blocks if w is not None else ()
        inner = blocks[blocks.index(loop) + 1:] if loop in blocks else ()
        for b in inner:
            if not isinstance(b, cst.With):
                continue
            for item in b.items:
                call = item.item
                if isinstance(call, cst.Call) and (facts.qualname(call.func) or "").startswith("torch.distributed.autograd."):
                    return True
        return False


def _no_grad_block(facts, node) -> cst.With | None:
    """The `with torch.no_grad()` / `inference_mode()` block around ``node``, if any."""
    w = facts.where.get(node)
    if w is None:
        return None
    for b in reversed(w.blocks):
        if isinstance(b, (cst.FunctionDef, cst.Lambda)):
            if isinstance(b, cst.FunctionDef) and any(_turns_grad_off(d.decorator) for d in b.decorators):
                return b  # type: ignore[return-value]
            return None
        if isinstance(b, cst.With) and any(_turns_grad_off(item.item) for item in b.items):
            return b
    return None


#: calls whose result carries no autograd graph
_GRAPH_FREE = frozenset({"detach", "item", "tolist", "numpy", "argmax", "argmin", "argsort", "float_", "gather_for_metrics"})


def _graph_free(expr) -> bool:
    """The expression ends in a call that drops the autograd graph (`.item()`, `.detach()`, `float(...)`)."""
    if isinstance(expr, cst.Call):
        f = expr.func
        if isinstance(f, cst.Attribute) and f.attr.value in _GRAPH_FREE:
            return True
        if isinstance(f, cst.Name) and f.value in ("float", "int"):
            return True
    return False


def _kept_output(loop, model: str) -> cst.CSTNode | None:
    """A statement in ``loop`` that keeps the model's output across iterations (appended to a list,
    summed with `+=`) without detaching it: the evaluation's graphs stay alive."""
    outs: set[str] = set()
    nodes = list(iter_nodes(loop.body, (cst.Assign, cst.AugAssign, cst.Call)))
    for n in nodes:
        if isinstance(n, cst.Assign) and any(isinstance(c, cst.Call) and isinstance(c.func, cst.Name)
                                             and c.func.value == model for c in iter_nodes(n.value, (cst.Call,))):
            for t in n.targets:
                if isinstance(t.target, cst.Name):
                    outs.add(t.target.value)
    if not outs:
        return None

    def graph(expr) -> bool:
        uses = any(isinstance(x, cst.Name) and x.value in outs for x in iter_nodes(expr, (cst.Name,)))
        free = any(isinstance(c.func, cst.Attribute) and c.func.attr.value in _GRAPH_FREE
                   for c in iter_nodes(expr, (cst.Call,)))
        return uses and not free

    for n in nodes:
        if isinstance(n, cst.AugAssign) and graph(n.value):
            return n
        if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value in ("append", "extend") \
                and n.args and graph(n.args[0].value):
            return n
    return None


@register
class WrongTrainEvalMode(Rule):
    """Training in eval mode, evaluating in train mode or with gradients on, `backward()` under `no_grad`."""

    code = "TL702"
    name = "wrong-train-eval-mode"
    severity = Severity.WARNING
    default = False
    probe = "Reads `model.training` during a real training step: a trainable model in eval mode confirms it."
    #: `backward()` under `no_grad` needs only `.backward`; every other finding needs a `.train()` /
    #: `.eval()` call (an evaluation loop that keeps its outputs needs no `backward()`). The `no_grad`
    #: test is a substring of the `with` item's text (`maybe_no_grad_ctx()`, even a string): no word for it.
    gate = (("backward", "eval", "train"),)

    def visit_While(self, node: cst.While) -> None:
        """Nothing to check per node: asking for `While` makes the engine record where those loops are."""

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._modes_memo: dict = {}

    def finish(self) -> None:
        facts = self.ctx.facts
        lf = self._lf = loop_facts(facts)
        self._backward_under_no_grad(lf)
        training_loops: list = []
        for b in lf.backward:
            loops = lf.loops_of[b]
            if loops and loops[-1] not in training_loops:
                training_loops.append(loops[-1])
        models = {recv for _, recv, _ in lf.modes} | (self._fresh_models() if lf.backward else set())
        if not models:
            self._evaluation_function_without_eval(lf, lf.backward + lf.optimizer_steps)
            self._evaluation_call_in_training_loop(lf)
            return
        # loop -> model name -> the calls `model(...)` / `self.model(...)` inside it (nested loops included)
        called: dict = {}
        used: dict = {}  # loop -> the models called in it or handed to a helper (`loss_fn(model, x)`)
        for call in lf.calls:
            callee = dotted(call.func) if isinstance(call.func, (cst.Name, cst.Attribute)) else None
            if callee in models:
                for L in loops_around(facts, call):
                    called.setdefault(L, {}).setdefault(callee, []).append(call)
                    used.setdefault(L, set()).add(callee)
            handed = [a.value.value for a in call.args if isinstance(a.value, cst.Name) and a.value.value in models]
            if handed and _no_grad_block(facts, call) is None:  # run with gradients: trained there
                for L in loops_around(facts, call):
                    used.setdefault(L, set()).update(handed)
        trained = self._trained_models(lf, models, training_loops, called)
        models -= {name for name in models if self._without_dropout(name)}
        trained &= models
        # the loops of each scope in document order: where the evaluation after a training loop can be
        by_scope: dict = {}
        for L in called:
            if L in facts.where:
                by_scope.setdefault(facts.where[L].function, []).append(L)
        for loops in by_scope.values():
            loops.sort(key=lambda L: _order(facts, L))
        steps = lf.backward + lf.optimizer_steps
        for loop in training_loops:
            scope = facts.where[loop].function
            for name in sorted(trained & used.get(loop, set())):
                self._eval_before_training(lf, loop, scope, name)
                self._evaluation_after(lf, loop, scope, name, training_loops, called, by_scope.get(scope, []), steps)
        self._evaluation_with_gradients(lf, called, steps)
        self._evaluation_function_without_eval(lf, steps)
        self._evaluation_call_in_training_loop(lf)

    def _optimizers(self) -> list[tuple[cst.Call, str | None]]:
        """(the `torch.optim.X(...)` call, the dotted name of the model it trains, or None), once per file."""
        found: list[tuple[cst.Call, str | None]] | None = self.__dict__.get("_optimizer_calls")
        if found is None:
            facts = self.ctx.facts
            found = []
            self._optimizer_calls = found
            for call in facts.index.get("Call", ()):
                f = call.func
                last = f.attr.value if isinstance(f, cst.Attribute) else f.value if isinstance(f, cst.Name) else ""
                if last[:1].isupper() and torch_optimizer(facts, call) is not None:  # (class names only: cheap)
                    owner = optimizer_model(facts, call)
                    found.append((call, dotted(owner[0]) if owner is not None else None))
        return found

    def _fresh_models(self) -> set:
        """The models an optimizer trains that nothing puts in a mode, built in the file with dropout or batch
        norm in sight: in train mode from the start (a new module is)."""
        out = set()
        for call, name in self._optimizers():
            if name and "." not in name and self._starts_in_train_mode(name, call) is not None:
                out.add(name)
        return out

    def _without_dropout(self, name: str) -> bool:
        """`name` holds a model whose train and eval modes compute the same thing, in every binding: a
        diffusers model (`UNet2DConditionModel.from_pretrained(...)`: no dropout, group norm only) in a file
        that configures no dropout (`lora_dropout=0.1`, `boft_dropout=...`), or a model built only of layers
        without a mode (`nn.Sequential(nn.Linear(...), nn.ReLU())`, a class of the file whose body makes only
        such layers): no dropout, no batch norm."""
        memo = self.__dict__.setdefault("_mode_free_memo", {})
        if name in memo:
            return memo[name]
        facts = self.ctx.facts
        # the bindings of `name` where its mode is set (a function's own, else the module's): a parameter of
        # the same name in another function is another variable
        bindings = []
        for scope in {facts.where[c].function for c, r, _ in loop_facts(facts).modes if r == name}:
            own = facts.bindings.get(scope, {}).get(name) if scope is not None else None
            bindings.extend(own if own else facts.bindings.get(None, {}).get(name, ()))
        values = []
        for b in bindings:
            if isinstance(b.value, cst.BaseExpression):
                values.append(module_itself(b.value))
            elif b.value is None and facts.unpacked_from(b) is not None:  # `unet, opt = accelerator.prepare(unet, opt)`
                values.append(facts.unpacked_from(b)[0])
        # `unet = get_peft_model(unet, config)`, `model = accelerator.prepare(model)`: the same model, wrapped
        made = [v for v in values if not (isinstance(v, cst.Call) and any(
            isinstance(a.value, cst.Name) and a.value.value == name for a in v.args))]
        result = (bool(made) and len(values) == len(bindings) and all(self._mode_free(v) for v in made)
                  and not self._dropout_configured())
        memo[name] = result
        return result

    def _dropout_configured(self) -> bool:
        """Some call of the file sets a dropout (`LoraConfig(lora_dropout=0.1)`, `boft_dropout=args.p`)."""
        return any(a.keyword is not None and "dropout" in a.keyword.value.lower() and literal(a.value) not in (0, 0.0)
                   for c in self.ctx.facts.index.get("Call", ()) for a in c.args)

    def _mode_free(self, call) -> bool:
        if not isinstance(call, cst.Call):
            return False
        facts = self.ctx.facts
        f = call.func.value if isinstance(call.func, cst.Attribute) and call.func.attr.value in (
            "from_pretrained", "from_config") else call.func
        qn = facts.qualname(f) or ""
        if qn.startswith("diffusers."):
            return True
        if qn == "torch.nn.Sequential":
            # every layer made right there (`nn.Sequential(*encoders, head)`: layers of unknown kinds)
            return all(isinstance(a.value, cst.Call) and not a.star for a in call.args) and self._layers_mode_free(call)
        cls = facts.value_of(f, call) if call in facts.where else facts.value_of(f)
        node = getattr(cls, "node", None)
        if isinstance(node, cst.ClassDef) and node.bases and all(
                facts.qualname(arg.value) == "torch.nn.Module" for arg in node.bases):
            return self._layers_mode_free(node.body)  # (a subclass of a class of the file: its base's layers too)
        return False

    def _layers_mode_free(self, body) -> bool:
        """Every call in ``body`` makes a layer without a mode, or is a function / method call (no unknown
        module classes, no `nn.Dropout`, `nn.BatchNorm2d`, `nn.LSTM(dropout=...)`)."""
        facts = self.ctx.facts
        for c in iter_nodes(body, (cst.Call,)):
            qn = facts.qualname(c.func) or ""
            if qn.startswith("torch.nn."):
                last = qn.rsplit(".", 1)[-1]
                if qn.startswith(("torch.nn.functional.", "torch.nn.init.")) or last in _MODE_FREE_LAYERS:
                    continue
                return False
            if qn.startswith("torch.") and qn.rsplit(".", 1)[-1][:1].islower():
                continue  # torch.cat, torch.relu, torch.randn
            func = c.func
            if isinstance(func, cst.Name) and func.value in ("super", "len", "range", "int", "float", "print", "isinstance"):
                continue
            if isinstance(func, cst.Attribute) and not qn:
                continue  # `x.view(...)`, `self.layer_1(x)`, `super().__init__()`
            return False
        return True

    def _trained_models(self, lf, models: set, training_loops, called) -> set:
        """The models the optimizer trains: owners of `torch.optim.X(model.parameters())`; without one, the
        models called with gradients on in a training loop that are not named like a frozen teacher /
        reference / EMA copy (those are meant to stay in eval mode)."""
        facts = self.ctx.facts
        owners = {name for _, name in self._optimizers() if name}
        if owners:
            return models & owners
        out = set()
        for name in models:
            if re.search(r"teacher|ref|target|ema|frozen|old|base", name, re.I):
                continue
            calls = [c for L in training_loops for c in called.get(L, {}).get(name, ())]
            if calls and not all(_no_grad_block(facts, c) is not None for c in calls):
                out.add(name)
        return out

    def _modes(self, lf, name, scope) -> list:
        """(call, "train" | "eval") for `name.train()` / `name.eval()` in ``scope``, and for the calls of the
        file's own functions there that leave `name` in a mode (`evaluate(model)` ending in `model.eval()`),
        in document order."""
        key = (name, scope)
        if key not in self._modes_memo:
            facts = self.ctx.facts
            self._modes_memo[key] = []  # recursion guard
            names = self._aliases(name, scope)
            own = [(c, m) for c, r, m in lf.modes if r in names and facts.where[c].function is scope]
            graph = call_graph(facts)
            for c in graph.calls_in.get(scope, ()):
                fn = graph.resolve(c)
                if fn is None or fn is scope:
                    continue
                inner = next((i for i in (graph.inside(c, fn, n) for n in sorted(names)) if i is not None), None)
                m = self._left_mode(lf, fn, inner) if inner is not None else None
                if m is not None:
                    own.append((c, m))
            own.sort(key=lambda e: _order(facts, e[0]))
            self._modes_memo[key] = own
        return self._modes_memo[key]

    def _aliases(self, name: str, scope) -> set:
        """The spellings of the object ``name`` in ``scope``: itself, what a local ``name`` is only ever bound
        to (`model = self.model`, `model = self.model.to(device)`), and the locals only ever bound to it."""
        facts = self.ctx.facts
        local = facts.bindings.get(scope, {})

        def only(bindings) -> str | None:
            texts = set()
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
            if other != name and only(bindings) == name:
                out.add(other)
        return out

    def _left_mode(self, lf, fn, name) -> str | None:
        """The mode function ``fn`` leaves its object ``name`` in (its last mode event, through the calls
        it makes), None when it sets none."""
        events = self._modes(lf, name, fn)
        return events[-1][1] if events else None

    def _eval_before_training(self, lf, loop, scope, name) -> None:
        facts = self.ctx.facts
        modes = self._modes(lf, name, scope)
        start = _order(facts, loop)
        inside = [(c, m) for c, m in modes if _inside(facts, c, loop)]
        if any(m == "train" for _, m in inside):
            return
        if inside:
            # `if step % 500 == 0: model.eval(); evaluate()` in the training loop, and no train() after it
            c = inside[0][0]
            reset = any(m == "train" and _order(facts, t) < start and _inside(facts, t, outer)
                        for outer in loops_around(facts, loop) for t, m in modes)
            if reset and not self._periodic(c, loop):
                return  # the evaluation ends the pass (`if step == len(loader) - 1:`); the epoch loop calls train()
            until = "until the next pass calls `train()`, " if reset else ""
            direct = isinstance(c.func, cst.Attribute) and c.func.attr.value in ("eval", "train")
            leaves = "" if direct else f" (it leaves `{name}` in eval mode)"
            self.report(
                c,
                f"`{self.ctx.code(c)}` runs inside the training loop{leaves} and nothing in the loop calls `{name}.train()` "
                f"again: after the first evaluation {until}`{name}` trains in eval mode (dropout off, batch-norm "
                "statistics frozen) and learns worse than expected",
                hint=f"call `{name}.train()` right after the evaluation (or at the top of each step)",
            )
            return
        for outer in loops_around(facts, loop):
            # in an epoch loop: an eval() after this training loop, and no train() in the epoch loop
            inner = [(c, m) for c, m in modes if _inside(facts, c, outer)]
            if any(m == "train" for _, m in inner):
                continue
            late = next((c for c, m in inner if m == "eval" and _order(facts, c) > start), None)
            if late is not None:
                self.report(
                    late,
                    f"`{self.ctx.code(late)}` runs after the training loop, inside the loop around it, and nothing "
                    f"calls `{name}.train()` again: from the second pass on, `{name}` trains in eval mode "
                    "(dropout off, batch-norm statistics frozen) and learns worse than expected",
                    hint=f"call `{name}.train()` at the start of each training pass",
                )
                return
        before = [(c, m) for c, m in modes if _order(facts, c) < start]
        if before and before[-1][1] == "eval":
            c = before[-1][0]
            self.report(
                c,
                f"`{self.ctx.code(c)}` puts `{name}` in eval mode and the training loop below never calls "
                f"`{name}.train()`: it trains with dropout off and batch-norm statistics frozen, and learns worse "
                "than expected",
                hint=f"call `{name}.train()` before the training loop (and `{name}.eval()` only around evaluation)",
            )

    # -- a periodic evaluation in the training loop, through the file's functions and methods

    def _steps(self, fn, depth: int = 0) -> bool:
        """``fn`` runs one training step: a `backward()` outside any loop of its own, directly or through the
        file's functions it calls (outside their loops)."""
        memo = self.__dict__.setdefault("_steps_memo", {})
        if fn in memo:
            return memo[fn]
        memo[fn] = False  # recursion guard
        facts = self.ctx.facts
        found = any(facts.where[b].function is fn and not loops_around(facts, b) for b in self._lf.backward
                    if b in facts.where)
        if not found and depth < 3:
            graph = call_graph(facts)
            for c in graph.calls_in.get(fn, ()):
                g = graph.resolve(c)
                if g is not None and g is not fn and not loops_around(facts, c) and self._steps(g, depth + 1):
                    found = True
                    break
        memo[fn] = found
        return found

    def _left_modes(self, lf, fn) -> dict:
        """The objects ``fn`` leaves in a mode, spelt in ``fn`` -> "train" | "eval": its own `x.train()` /
        `x.eval()` and those of the file's functions it calls, mapped back through their arguments."""
        memo = self.__dict__.setdefault("_left_modes_memo", {})
        if fn in memo:
            return memo[fn]
        memo[fn] = {}  # recursion guard
        facts = self.ctx.facts
        graph = call_graph(facts)
        names = {r for c, r, _ in lf.modes if facts.where[c].function is fn}
        for c in graph.calls_in.get(fn, ()):
            h = graph.resolve(c)
            if h is None or h is fn:
                continue
            for inner in self._left_modes(lf, h):
                outer = graph.outside(c, h, inner)
                if outer is not None:
                    names.add(outer)
        for n in list(names):
            names |= self._aliases(n, fn)
        out = {}
        for n in sorted(names):
            m = self._left_mode(lf, fn, n)
            if m is not None:
                out[n] = m
        memo[fn] = out
        return out

    def _evaluation_call_in_training_loop(self, lf) -> None:
        """A call every N steps in a training loop (`if step % 500 == 0: validate(model)`) to a function of the
        file that leaves a trained module in eval mode (through the methods and functions it calls:
        `model.val_start()` running `self.img_enc.eval()`), with nothing in the loop setting it back to train
        mode. The training loop runs `backward()` itself or calls a function of the file that does (a
        `model.train_emb(batch)` method)."""
        facts = self.ctx.facts
        graph = call_graph(facts)
        training: list = []
        for b in lf.backward:
            loops = lf.loops_of[b]
            if loops and loops[-1] not in training:
                training.append(loops[-1])
        for c in lf.calls:
            loops = loops_around(facts, c)
            if loops and loops[-1] not in training:
                g = graph.resolve(c)
                if g is not None and self._steps(g):
                    training.append(loops[-1])
        done = {r.node for r in self.ctx.reports if r.rule is type(self)}
        for loop in training:
            scope = facts.where[loop].function
            for c in graph.calls_in.get(scope, ()):
                if c in done or not _inside(facts, c, loop) or not self._periodic(c, loop):
                    continue
                g = graph.resolve(c)
                if g is None or g is scope or self._steps(g):
                    continue
                for inner, mode in self._left_modes(lf, g).items():
                    name = graph.outside(c, g, inner) if mode == "eval" else None
                    if name is None or not self._trained_in(lf, name, loop, c):
                        continue
                    # `model.train()` sets `model.img_enc` too: the modes of the modules holding it count
                    parts = name.split(".")
                    events = sorted({e for i in range(1, len(parts) + 1)
                                     for e in self._modes(lf, ".".join(parts[:i]), scope)},
                                    key=lambda e: _order(facts, e[0]))
                    if any(m == "train" and _inside(facts, e, loop) for e, m in events):
                        continue
                    start = _order(facts, loop)
                    before = [e for e, m in events if m == "train" and _order(facts, e) < start]
                    reset = any(_inside(facts, e, outer) for e in before for outer in loops_around(facts, loop))
                    until = "until the next pass sets train mode again, " if reset else ""
                    again = (f"`{self.ctx.code(before[-1]).strip()}` again" if before and not (
                        isinstance(before[-1].func, cst.Attribute) and before[-1].func.attr.value == "train")
                        else f"`{name}.train()`")
                    self.report(
                        c,
                        f"`{self.ctx.code(c)}` runs inside the training loop every few steps and leaves `{name}` in "
                        f"eval mode (`{g.name.value}()` switches it), and nothing in the loop puts it back in train "
                        f"mode: after the first evaluation {until}`{name}` trains with dropout off and batch-norm "
                        "statistics frozen, and learns worse than expected",
                        hint=f"call {again} right after the evaluation (or at the top of each step)",
                    )
                    done.add(c)
                    break

    def _trained_in(self, lf, name: str, loop, evaluation: cst.Call) -> bool:
        """``name`` (or the object holding it, `model` for `model.img_enc`) runs with gradients in the training
        loop: called there (`model(x)`) in a loop that runs `backward()`, or handed to / called on by a call of
        a function of the file that runs a training step (`model.train_emb(batch)`). A frozen teacher /
        reference / EMA copy is meant to stay in eval mode."""
        if re.search(r"teacher|ref|target|ema|frozen|old", name.rsplit(".", 1)[-1], re.I):
            return False
        facts = self.ctx.facts
        parts = name.split(".")
        holders = {".".join(parts[:i]) for i in range(1, len(parts) + 1)} - {"self"}
        backward_here = any(_inside(facts, b, loop) for b in lf.backward)
        for d in lf.calls:
            if d is evaluation or not _inside(facts, d, loop) or _no_grad_block(facts, d) is not None:
                continue
            callee = dotted(d.func) if isinstance(d.func, (cst.Name, cst.Attribute)) else None
            if backward_here and callee in holders:
                return True
            g = call_graph(facts).resolve(d)
            if g is None or not self._steps(g):
                continue
            receiver = dotted(d.func.value) if isinstance(d.func, cst.Attribute) else None
            if receiver in holders or any(dotted(a.value) in holders for a in d.args):
                return True
        return False

    def _periodic(self, node, loop) -> bool:
        """``node`` runs under an `if` in ``loop`` whose test takes a remainder (`step % 500 == 0`): an
        evaluation every N steps, with training steps after it in the same pass."""
        w = self.ctx.facts.where.get(node)
        blocks = w.blocks if w is not None else ()
        inner = blocks[blocks.index(loop) + 1:] if loop in blocks else ()
        return any(
            isinstance(b, cst.If) and any(isinstance(op.operator, cst.Modulo)
                                          for op in iter_nodes(b.test, (cst.BinaryOperation,)))
            for b in inner
        )

    def _evaluation_after(self, lf, loop, scope, name, training_loops, called, scope_loops, steps) -> None:
        """The evaluation loops that follow a training loop (up to the next one) and run the model under
        `no_grad` without `model.eval()` in between."""
        facts = self.ctx.facts
        start = _order(facts, loop)
        modes = self._modes(lf, name, scope)
        for other in scope_loops:
            o = _order(facts, other)
            if o <= start or _inside(facts, other, loop):
                continue
            if other in training_loops:
                break  # the next training pass: its own evaluation is checked from there
            calls = called.get(other, {}).get(name)
            if not calls or any(_inside(facts, s, other) for s in steps):
                continue
            between = [m for c, m in modes if start < _order(facts, c) and (_order(facts, c) < o or _inside(facts, c, other))]
            if "eval" in between:
                self._train_inside_evaluation(lf, other, scope, name, calls)
                continue
            if all(_no_grad_block(facts, c) is not None for c in calls):
                self.report(
                    other,
                    f"this evaluation loop runs `{name}` after training without `{name}.eval()`: dropout is still "
                    "on, so the predictions are noisy and the metrics lower (and different on every run)",
                    hint=f"call `{name}.eval()` before the evaluation loop (and `{name}.train()` before training again)",
                )
                continue
            # gradients on too (no `no_grad`): a loop that only runs the model, in train mode
            state = self._mode_at(lf, calls[0], name)
            if state is not None and state[0] == "train":
                self.report(
                    calls[0],
                    f"this loop runs `{name}` after training, with no `backward()` or optimizer step (an evaluation "
                    f"or a prediction), while `{name}` is still in train mode ("
                    + (f"`{self.ctx.code(state[1])}` left it so" if state[1] is not None
                       else f"a new module starts in it and nothing calls `{name}.eval()`")
                    + "): dropout is on, so the predictions are noisy and the metrics lower (and different on every "
                    "run)",
                    hint=f"call `{name}.eval()` before the loop, and run it under `with torch.no_grad():` (and "
                    f"`{name}.train()` before training again)",
                )

    def _train_inside_evaluation(self, lf, loop, scope, name, calls) -> None:
        """An evaluation loop (the model under `no_grad`) after `name.eval()`, with a `name.train()` inside
        the loop before the model runs: the evaluation runs in train mode."""
        facts = self.ctx.facts
        if not all(_no_grad_block(facts, c) is not None for c in calls):
            return
        modes = self._modes(lf, name, scope)
        for site in calls:
            at = _order(facts, site)
            before = [(c, m) for c, m in modes if _order(facts, c) < at]
            if before and before[-1][1] == "train" and _inside(facts, before[-1][0], loop):
                back = before[-1][0]
                self.report(
                    site,
                    f"`{self.ctx.code(back)}` runs inside this evaluation loop, after `{name}.eval()`: `{name}` "
                    "evaluates in train mode, so dropout is on, the predictions are noisy and the metrics lower "
                    "(and different on every run)",
                    hint=f"drop `{self.ctx.code(back)}` from the evaluation loop (call it before training again)",
                )
                return

    # -- an evaluation function that never calls model.eval(), called while the model is in train mode

    def _mode_at(self, lf, site: cst.Call, model: str) -> tuple[str, cst.CSTNode | None] | None:
        """The mode ``model`` is in when ``site`` runs, from the `train()` / `eval()` calls and the calls of
        functions that set it in the same scope: the last one before ``site``, else (a loop) the last one
        after it in the innermost loop around both."""
        facts = self.ctx.facts
        scope = facts.where[site].function
        events = [e for e in self._modes(lf, model, scope) if e[0] is not site]
        at = _order(facts, site)
        before = [e for e in events if _order(facts, e[0]) < at]
        if before:
            return before[-1][1], before[-1][0]
        loops = loops_around(facts, site)
        if loops:
            after = [e for e in events if _order(facts, e[0]) > at and _inside(facts, e[0], loops[-1])]
            if after:
                return after[-1][1], after[-1][0]
        if not events:
            return self._starts_in_train_mode(model, site)
        return None

    def _starts_in_train_mode(self, model: str, site: cst.Call) -> tuple[str, None] | None:
        """No `train()` / `eval()` anywhere: a module built in the file (not a `from_pretrained`, which loads
        in eval mode, nor a `torch.load`) and trained by an optimizer is in train mode, as every new module —
        reported when the file shows a dropout or batch-norm."""
        facts = self.ctx.facts
        b = facts.lookup(model, site)
        value = module_itself(b.value) if b is not None and isinstance(b.value, cst.BaseExpression) else None
        if not isinstance(value, cst.Call):
            return None
        func = value.func
        if isinstance(func, cst.Attribute) and func.attr.value.startswith("from_pretrained"):
            return None
        qn = facts.qualname(func) or ""
        if qn.startswith(("torch.load", "torch.jit", "joblib", "pickle", "copy.")) or "load" in qn.rsplit(".", 1)[-1]:
            return None
        # and the file shows that the mode matters (a dropout configured, a dropout / batch-norm layer made):
        # for a model of unknown layers (`Net()` from another module) the source cannot tell (pytorch/examples'
        # super_resolution evaluates a convolutions-only `Net` without `eval()`, correctly)
        shown = self.__dict__.get("_mode_layers_shown")
        if shown is None:
            shown = self._mode_layers_shown = self._dropout_configured() or any(
                (facts.qualname(c.func) or "").rsplit(".", 1)[-1].startswith(("Dropout", "BatchNorm"))
                for c in facts.index.get("Call", ()))
        if not shown:
            return None
        if any(name == model for _, name in self._optimizers()):
            return "train", None
        return None

    def _evaluation_function_without_eval(self, lf, steps) -> None:
        """A function or method that runs a model under `no_grad` in a loop (an evaluation), directly or
        through the file's own functions (`self._forward_pass(x)` → `self.model(x)`), but never sets its
        mode, called where the model was last put in train mode: the evaluation runs with dropout on."""
        facts = self.ctx.facts
        graph = call_graph(facts)
        stepping = {facts.where[s].function for s in steps if s in facts.where}
        for fn in facts.index.get("FunctionDef", ()):
            if fn in stepping:
                continue
            w = facts.where.get(fn)
            if w is None or w.function is not None:
                continue  # module-level functions and methods (nested functions: their callers are not followed)
            calls = graph.calls_in.get(fn, ())
            if not (any(_grad_word(c.func) for c in calls) or any(_turns_grad_off(d.decorator) for d in fn.decorators)):
                continue  # (a cheap test first: no `no_grad` in the function)
            evaluating = [c for c in calls if _no_grad_block(facts, c) is not None and loops_around(facts, c)]
            if not evaluating:
                continue
            sites = graph.callers(fn)
            if not sites:
                continue
            runs: dict = {}
            for c in evaluating:
                for name in self._runs(graph, c, fn):
                    runs.setdefault(name, c)
            params = {p.name.value for p in fn.params.posonly_params + fn.params.params + fn.params.kwonly_params}
            for name, first in runs.items():
                head = name.split(".", 1)[0]
                if head not in params and head != "self" and head in facts.bindings.get(fn, {}):
                    continue  # a local of the function (a metric, a helper), not a model handed in
                if self._modes(lf, name, fn):
                    continue  # it sets the mode itself
                if head not in params and head != "self" and self._without_dropout(name):
                    continue
                for site in sites:
                    model = graph.outside(site, fn, name)
                    if model is None:
                        continue
                    state = self._mode_at(lf, site, model)
                    if state is None or state[0] != "train":
                        continue
                    self.report(
                        first,
                        f"`{fn.name.value}()` evaluates `{name}` under `no_grad` but never calls `{name}.eval()`, and "
                        f"`{self.ctx.code(site)}` runs it while `{model}` is in train mode ("
                        + (f"`{self.ctx.code(state[1])}` left it so" if state[1] is not None
                           else f"a new module starts in it and nothing calls `{model}.eval()`")
                        + "): dropout is still on, so the predictions are noisy and the metrics "
                        "lower (and different on every run)",
                        hint=f"call `{name}.eval()` at the top of `{fn.name.value}()` (and `.train()` before training again)",
                    )
                    break

    def _runs(self, graph, call: cst.Call, fn, depth: int = 0) -> list[str]:
        """The objects ``call`` (in ``fn``) runs, as spelt in ``fn``: the callee itself (`model(x)`,
        `self.model(x)`), or what the file's own function it calls runs (mapped back through its arguments)."""
        memo = self.__dict__.setdefault("_runs_memo", {})
        if call in memo:
            return memo[call]
        memo[call] = []  # recursion guard
        memo[call] = found = self._runs_uncached(graph, call, fn, depth)
        return found

    def _runs_uncached(self, graph, call: cst.Call, fn, depth: int) -> list[str]:
        target = graph.resolve(call)
        if target is None:
            f = call.func
            if isinstance(f, cst.Name):
                return [f.value]
            if isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value == "self" \
                    and isinstance(fn, cst.FunctionDef) and graph.class_of(fn) is not None:
                return [f"self.{f.attr.value}"]
            return []
        if target is fn or depth > 3:
            return []
        out = []
        for c in graph.calls_in.get(target, ()):
            for inner in self._runs(graph, c, target, depth + 1):
                if self._modes(self._lf, inner, target):
                    continue  # the helper sets the mode itself
                outer = graph.outside(call, target, inner)
                if outer is not None and outer not in out:
                    out.append(outer)
        return out

    def _evaluation_with_gradients(self, lf, called, steps) -> None:
        """A loop that runs the model in eval mode, outside `no_grad`, and keeps its outputs."""
        facts = self.ctx.facts
        reported: set = set()
        for loop, by_name in called.items():
            if loop not in facts.where or any(_inside(facts, n, loop) for n in steps):
                continue
            scope = facts.where[loop].function
            o = _order(facts, loop)
            for name in sorted(by_name):
                modes = [(c, m) for c, m in self._modes(lf, name, scope) if _order(facts, c) < o or _inside(facts, c, loop)]
                if not modes or modes[-1][1] != "eval":
                    continue
                if all(_no_grad_block(facts, c) is not None for c in by_name[name]):
                    continue
                kept = _kept_output(loop, name)
                if kept is None or kept in reported:
                    continue
                reported.add(kept)
                self.report(
                    loop,
                    f"this evaluation loop runs `{name}` with gradients on (no `torch.no_grad()` / "
                    f"`torch.inference_mode()`) and keeps its outputs (`{self.ctx.code(kept).strip()}`): every batch's "
                    "autograd graph stays alive, so memory grows through the evaluation set until it runs out",
                    hint="wrap the evaluation loop in `with torch.no_grad():` (or `torch.inference_mode()`), or keep "
                    "`.detach()`ed values",
                )

    def _backward_under_no_grad(self, lf) -> None:
        facts = self.ctx.facts
        for b in lf.backward:
            block = _no_grad_block(facts, b)
            if not isinstance(block, cst.With):
                continue
            root = b.func.value
            while isinstance(root, (cst.Attribute, cst.Subscript, cst.Call)):
                root = root.value if not isinstance(root, cst.Call) else root.func
            if not isinstance(root, cst.Name):
                continue
            assigned = any(
                isinstance(t.target, cst.Name) and t.target.value == root.value and _inside(facts, a, block)
                for a in facts.index.get("Assign", ()) for t in a.targets
            )
            if assigned:
                self.report(
                    b,
                    f"`{self.ctx.code(b)}` inside `{self.ctx.code(block.items[0].item)}`, where `{root.value}` was "
                    "computed: it has no autograd graph, so this fails with \"RuntimeError: element 0 of tensors "
                    "does not require grad and does not have a grad_fn\"",
                    hint="compute the loss and call `backward()` outside the `no_grad` block (keep `no_grad` for evaluation)",
                    severity=Severity.ERROR,
                )


@register
class LossAccumulatedAsTensor(Rule):
    """`total_loss += loss` adds the loss tensor (and its whole autograd graph) instead of its value."""

    code = "TL703"
    name = "loss-accumulated-as-tensor"
    severity = Severity.WARNING
    default = False
    fix = Applicability.UNSAFE
    #: `total += loss` in a for/while loop whose `backward()` takes `loss`
    gate = (("backward",), ("for", "while"))

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._summed: set = set()

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if not isinstance(node.operator, cst.AddAssign):
            return
        facts = self.ctx.facts
        loops = loops_around(facts, node)
        if not loops:
            return
        loop = loops[-1]
        value = node.value
        while isinstance(value, cst.BinaryOperation) and isinstance(value.operator, (cst.Multiply, cst.Divide)):
            value = value.left
        text = dotted(value)
        if text is None:
            return
        target = dotted(node.target)
        lf = loop_facts(facts)
        backs = [b for b in lf.backward if _inside(facts, b, loop)]
        # the accumulated tensor is what gets backpropagated: intentional (e.g. several losses summed)
        if target is not None and any(target in {dotted(n) for n in iter_nodes(b, (cst.Name, cst.Attribute))}
                                      for b in lf.backward):
            return
        if not any(text in {dotted(n) for n in iter_nodes(b, (cst.Name, cst.Attribute))} for b in backs):
            return
        if isinstance(value, cst.Name):
            # `loss = loss.item()` after the backward: a number by now
            b = facts.lookup(value.value, node)
            if b is not None and isinstance(b.value, cst.BaseExpression) and _graph_free(b.value):
                return
        shown = self.ctx.code(node.value)
        item = f"{shown}.item()" if isinstance(node.value, (cst.Name, cst.Attribute)) else f"({shown}).item()"
        self.report(
            node,
            f"`{self.ctx.code(node).strip()}` adds the loss tensor, not its value: `{target}` stays linked to every "
            "step's autograd graph, so memory grows each step until it is reset (a few KB a step after `backward()`, "
            "the whole graph with `retain_graph=True`) and it stays a tensor on the device",
            hint=f"accumulate the number: `{self.ctx.code(node.target)} += {item}` (or `.detach()`)",
            fix=self.ctx.fix(Applicability.UNSAFE, f"Accumulate `{item}`", self.ctx.replace(node.value, item)),
        )


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
        if not loops:
            return
        loop, kept, store = loops[-1], node.args[0].value.value, f.value.value
        lf = loop_facts(facts)
        backs = [b for b in lf.backward if _inside(facts, b, loop) and _order(facts, b) < _order(facts, node)]
        if not backs or any(store in {n.value for n in iter_nodes(b, (cst.Name,))} for b in lf.backward):
            return  # (the kept losses are backpropagated later: intended)
        # `output["loss"].backward()` / `loss.backward()`: the root of what was backpropagated
        roots = set()
        for b in backs:
            root = cast(cst.Attribute, b.func).value
            while isinstance(root, (cst.Subscript, cst.Attribute)):
                root = root.value
            if isinstance(root, cst.Name):
                roots.add(root.value)
        if kept not in roots:
            return
        # the list lives across iterations (made before the loop), and nothing detached the kept value after the
        # backward (`output["loss"] = output["loss"].detach()`, `loss = loss.item()`)
        made = facts.lookup(store, node)
        if made is None or made.order >= _order(facts, loop) or not isinstance(made.value, (cst.List, cst.Call)):
            return
        for a in facts.index.get("Assign", ()):
            if _inside(facts, a, loop) and _graph_free(a.value) and any(
                    kept in {n.value for n in iter_nodes(t.target, (cst.Name,))} for t in a.targets):
                return
        self.report(
            node,
            f"`{self.ctx.code(node)}` keeps `{kept}`, which `backward()` ran on, in a list across iterations: every "
            "step's autograd graph stays linked from it, so memory grows each step until the list is dropped (a few "
            "KB a step after `backward()`, the whole graph with `retain_graph=True`)",
            hint=f"keep detached values: `.detach()` (or `.item()`) the loss in `{kept}` before appending it",
        )

    def _handed_to_a_running_sum(self, node: cst.Call) -> None:
        """`tracker.update(loss)` in the training loop after `loss["total"].backward()`, where `update` is a
        method of the file that adds what it is given to a sum kept on the object (`self.sums[k] += loss[k]`):
        the object keeps every step's graph alive, as `total += loss` would."""
        if not node.args or not isinstance(node.func, cst.Attribute):
            return
        facts = self.ctx.facts
        loops = loops_around(facts, node)
        if not loops:
            return
        loop = loops[-1]
        lf = loop_facts(facts)
        backs = [b for b in lf.backward if _inside(facts, b, loop) and _order(facts, b) < _order(facts, node)]
        roots = {r for r in (_backward_root(b) for b in backs) if r is not None}
        kept = [a.value for a in node.args if isinstance(a.value, cst.Name) and a.value.value in roots]
        if not kept:
            return
        fn = call_graph(facts).resolve(node)
        if fn is None or call_graph(facts).class_of(fn) is None:
            return
        # the object lives across iterations (made before the loop, or an attribute of `self`)
        receiver = node.func.value
        if isinstance(receiver, cst.Name):
            made = facts.lookup(receiver.value, node)
            if made is None or made.order >= _order(facts, loop):
                return
        graph = call_graph(facts)
        last = max(_order(facts, b) for b in backs)
        for value in kept:
            bound = facts.lookup(value.value, node)
            if bound is None or bound.order > last:
                continue  # rebound after the backward (`losses = {k: v.item() ...}`): not what it ran on
            param = next((p.name.value for p in parameters(fn)
                          if graph.argument_of(node, fn, p.name.value) is value), None)
            if param is None or len(facts.bindings.get(fn, {}).get(param, ())) != 1:
                continue  # not given by name, or rebound in the method (`val = val.item()`)
            given = _derived_names(facts, fn, param)
            # what the method itself resets on every call (`self.total = 0` in its body, not under a condition)
            reset = {self.ctx.code(t.target) for a in facts.index.get("Assign", ())
                     if facts.where[a].function is fn and facts.where[a].blocks[-1] is fn for t in a.targets}
            for kept_there in self._kept_on_self(fn, given, reset):
                self._summed.add(kept_there)
                summed = isinstance(kept_there, cst.AugAssign)
                added = "adds the loss tensors" if summed else "keeps the loss tensors"
                where = "to a sum kept on the object" if summed else "in a list kept on the object"
                self.report(
                    kept_there,
                    f"`{self.ctx.code(kept_there).strip()}` {added} that `{self.ctx.code(node)}` hands in after "
                    f"`backward()` {where}: it stays linked to every step's autograd graph, so memory grows each "
                    "step until it is reset (a few KB a step after `backward()`, the whole graph with "
                    "`retain_graph=True`) and it stays a tensor on the device",
                    hint=f"keep numbers: `.item()` (or `.detach()`) what is kept, or hand `{fn.name.value}()` the "
                    "values",
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


def _backward_root(b: cst.Call) -> str | None:
    """The name under what `backward()` runs on: `loss` for `loss.backward()`, `out["loss"].backward()` → `out`."""
    root = b.func.value if isinstance(b.func, cst.Attribute) else None
    while isinstance(root, (cst.Subscript, cst.Attribute)):
        root = root.value
    return root.value if isinstance(root, cst.Name) else None


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


def _chain_root(expr) -> str | None:
    """The name under a chain of attributes and subscripts, without calls (`self.sums[k]` → "self")."""
    while isinstance(expr, (cst.Subscript, cst.Attribute)):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None


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


@register
class SchedulerBeforeOptimizer(Rule):
    """`scheduler.step()` before `optimizer.step()` in the same loop."""

    code = "TL704"
    name = "scheduler-before-optimizer"
    severity = Severity.WARNING
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
            # in the same loop; or, outside any loop, in the same function (a wrapper's `step()` method, a
            # train-epoch function stepping its schedule first): one call of it runs both, in that order
            block = loops[-1] if loops else facts.where[s].function
            if block is None:
                continue
            order = _order(facts, s)
            after = [o for o in lf.optimizer_steps if _inside(facts, o, block) and _order(facts, o) > order
                     and not _exclusive(facts, s, o)]
            if not after:
                continue
            o = after[0]
            where = "in the same loop" if loops else "in the same function"
            self.report(
                s,
                f"`{self.ctx.code(s)}` runs before `{self.ctx.code(o)}` {where}: the first value of the "
                "learning-rate schedule is skipped (PyTorch warns \"Detected call of `lr_scheduler.step()` before "
                "`optimizer.step()`\"); with per-epoch schedules the whole schedule runs one epoch early",
                hint=f"call `{self.ctx.code(s)}` after `{self.ctx.code(o)}`",
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
                    f"`{self.ctx.code(s)}` runs in a handler of `Events.{event}`: the engine calls it before the "
                    "optimizer steps that follow, so the first value of the learning-rate schedule is skipped "
                    "(PyTorch warns \"Detected call of `lr_scheduler.step()` before `optimizer.step()`\"); with a "
                    "per-epoch schedule the whole schedule runs one epoch early",
                    hint=f"attach the handler to `Events.{after}` (after the optimizer steps)",
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


@register
class DirectForwardCall(Rule):
    """`model.forward(x)` instead of `model(x)`: the module's hooks are skipped."""

    code = "TL705"
    name = "direct-forward-call"
    severity = Severity.WARNING
    fix = Applicability.UNSAFE
    default = False
    #: `def forward` says the same word: every module file opens it
    gate = (("forward",),)

    def visit_Call(self, node: cst.Call) -> None:
        f = node.func
        if not (isinstance(f, cst.Attribute) and f.attr.value == "forward" and isinstance(f.value, cst.Name)):
            return
        if f.value.value in ("self", "cls", "super"):
            return
        w = self.ctx.facts.where.get(node)
        if w is not None and w.inside(cst.ClassDef) is not None:
            return
        name = f.value.value
        self.report(
            node,
            f"`{name}.forward(...)` bypasses `{name}.__call__`: forward hooks and pre-hooks do not run, and a "
            "DistributedDataParallel / FSDP wrapper does not synchronise gradients (each process trains its own copy)",
            hint=f"call the module: `{name}(...)`",
            fix=self.ctx.fix(Applicability.UNSAFE, f"Call `{name}(...)`", self.ctx.replace(f, name)),
        )
