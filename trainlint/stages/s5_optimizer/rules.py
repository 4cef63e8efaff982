"""TL5xx: optimizer and hyperparameters."""

from __future__ import annotations

import re
import weakref

import libcst as cst

from trainlint import codemod
from trainlint.facts import (
    TRAINER_WORDS,
    TRAINING_ARGS_CLASSES,
    TRAINING_ARGS_WORDS,
    ModelValue,
    argument,
    dotted,
    has_star_kwargs,
    iter_nodes,
    keyword,
    literal,
)
from trainlint.facts.calls import call_graph
from trainlint.facts.objects import Module
from trainlint.facts.program import program
from trainlint.facts.models import keras_backbone, model_of, optimizer_model, parameters_owner, torch_optimizer
from trainlint.facts.versions import legacy_keras_env
from trainlint.findings import Applicability, Severity
from trainlint.pins import keras_3
from trainlint.rule import Rule, register

#: Keras's default learning rate for each optimizer named by a string
KERAS_DEFAULT_LR = {
    "adam": 1e-3, "adamw": 1e-3, "adamax": 1e-3, "nadam": 1e-3, "rmsprop": 1e-3, "adagrad": 1e-3,
    "adadelta": 1e-3, "ftrl": 1e-3, "lion": 1e-3, "sgd": 1e-2, "adafactor": 1e-3, "lamb": 1e-3,
}
#: the learning rate the string-optimizer fix writes (a usual rate to fine-tune a pretrained transformer)
FINE_TUNING_LR = "5e-5"
KERAS_CLASS = {
    "adam": "Adam", "adamw": "AdamW", "adamax": "Adamax", "nadam": "Nadam", "rmsprop": "RMSprop",
    "adagrad": "Adagrad", "adadelta": "Adadelta", "ftrl": "Ftrl", "lion": "Lion", "sgd": "SGD",
    "adafactor": "Adafactor", "lamb": "Lamb",
}


@register
class StringOptimizer(Rule):
    """A Keras optimizer given as a string for a pretrained model: its learning rate is the default."""

    code = "TL501"
    name = "string-optimizer"
    severity = Severity.WARNING
    measured_from = 4
    probe = "Reads the optimizer Keras really compiled: its class and effective learning rate."
    #: `<model>.compile(...)` on a model built by a transformers `from_pretrained` (absolute import)
    gate = (("compile",), ("from_pretrained",), ("transformers",))
    fix = Applicability.UNSAFE

    def visit_Call(self, node: cst.Call) -> None:
        if not (isinstance(node.func, cst.Attribute) and node.func.attr.value == "compile"):
            return
        opt = argument(node, "optimizer", 0)
        if not isinstance(opt, (cst.SimpleString, cst.ConcatenatedString, cst.Name)):
            return
        name = self.ctx.facts.constant(opt, node)
        if not isinstance(name, str):
            return
        if isinstance(opt, cst.Name) and _other_branch_binds_an_object(self.ctx.facts, opt.value, node):
            return  # `if train: optimizer, _ = create_optimizer(...)  else: optimizer = "sgd"`: the probe tells
        model = keras_backbone(self.ctx.facts, node)
        if model is None or not (model.transformers and model.pretrained) or _frozen_between(self.ctx.module, model.call, node):
            return  # `bert.trainable = False`: only the new head trains, at the default rate
        key = name.lower()
        lr = KERAS_DEFAULT_LR.get(key)
        if lr is None:
            return  # premise 1: a Keras optimizer whose default rate is known (all are 1e-3 or more)
        cls = KERAS_CLASS.get(key, name)
        self.report(
            opt,
            f'`optimizer="{name}"` silently uses its default learning rate {lr:g}, far too high to fine-tune the '
            f"pretrained `{model.cls}`",
            hint="the loss goes down slowly and stalls at a high value (or diverges); pass an optimizer object with an "
            f"explicit rate, e.g. `keras.optimizers.{cls}(learning_rate=5e-5)`, or one from "
            "`transformers.create_optimizer(...)`",
            fix=self._fix(opt, key, name),
        )

    def _fix(self, opt: cst.BaseExpression, key: str, name: str):
        """`"adam"` → `<keras>.optimizers.Adam(learning_rate=5e-5)` in the file's own Keras spelling; without
        any Keras import, `transformers.AdamWeightDecay` (built on the model's own Keras) for adam."""
        cls = KERAS_CLASS.get(key)
        if cls is None:
            return None
        spelled = codemod.keras_prefix(self.ctx, "optimizers", add=False)
        if (not legacy_keras_env(self.ctx.source) and keras_3(self.ctx)) and (spelled is None or not spelled[0].startswith(codemod.local_name(self.ctx, "tf_keras") or "tf_keras")):
            # Keras 3: `tensorflow.keras` objects do not fit a transformers (tf-keras) model (TL808)
            got = (codemod.ensure_name(self.ctx, "transformers.AdamWeightDecay", "from transformers import AdamWeightDecay",
                                       "AdamWeightDecay") if key == "adam" else
                   codemod.ensure_name(self.ctx, f"tf_keras.optimizers.{cls}", "import tf_keras", f"tf_keras.optimizers.{cls}"))
            if got is None:
                return None
            new, add = f"{got[0]}(learning_rate={FINE_TUNING_LR})", got[1]
        elif spelled is not None:
            new, add = f"{spelled[0]}.{cls}(learning_rate={FINE_TUNING_LR})", None
        elif key == "adam":
            got = codemod.ensure_name(self.ctx, "transformers.AdamWeightDecay",
                                      "from transformers import AdamWeightDecay", "AdamWeightDecay")
            if got is None:
                return None
            new, add = f"{got[0]}(learning_rate={FINE_TUNING_LR})", got[1]
        else:
            got = codemod.keras_prefix(self.ctx, "optimizers")
            if got is None:
                return None
            new, add = f"{got[0]}.{cls}(learning_rate={FINE_TUNING_LR})", got[1]
        return self.ctx.fix(Applicability.UNSAFE, f'Replace `optimizer="{name}"` with `{new}` (sets the learning rate)',
                            self.ctx.replace(opt, new), *([add] if add is not None else []))


def _other_branch_binds_an_object(facts, name: str, at: cst.Call) -> bool:
    """The string ``name`` holds at ``at`` is assigned in a branch (if/else, try) that ``at`` is not in,
    and another assignment before ``at`` binds it to something that is not a string (transformers'
    TF examples: `optimizer = "sgd"  # Just use any default` when there is no training set)."""
    b = facts.lookup(name, at)
    here = facts.where.get(at)
    if b is None or here is None:
        return False
    branches = (cst.If, cst.Else, cst.Try, cst.ExceptHandler)
    stmt = next((a for a in facts.index.get("Assign", ()) if a.value is b.value), None)
    w = facts.where.get(stmt) if stmt is not None else None
    if w is None or not any(isinstance(x, branches) and x not in here.blocks for x in w.blocks):
        return False
    for other in facts.bindings.get(here.function, {}).get(name, ()):
        if other is not b and other.order < here.order \
                and not isinstance(facts.constant(other.value, at) if isinstance(other.value, cst.BaseExpression)
                                   else None, str):  # an object, or unknown (`optimizer, schedule = f(...)`)
            return True
    return False


@register
class StepDoesNotMoveWeights(Rule):
    """(probe) One optimizer step leaves the trainable weights unchanged."""

    code = "TL506"
    name = "step-does-not-move-weights"
    severity = Severity.ERROR
    probe = "Takes one optimizer step (without the warmup scheduler) and compares the weights before and after."


# ---------------------------------------------------------------------------------------------
# Learning rates for fine-tuning (TL502, TL503), the optimizer's model (TL504), fp16 on CPU (TL505).


#: PyTorch's default learning rate of the adaptive optimizers (all far too high for fine-tuning)
TORCH_DEFAULT_LR = {
    "Adam": 1e-3, "AdamW": 1e-3, "Adamax": 2e-3, "NAdam": 2e-3, "RAdam": 1e-3, "RMSprop": 1e-2,
    "Adagrad": 1e-2, "SparseAdam": 1e-3,
}
#: model families commonly (and correctly) fine-tuned at 1e-3 (T5 with Adafactor), or not pretrained weights
_HIGH_LR_FAMILIES = ("t5", "byt5", "flan", "ul2",
                     # convolutional image models are far less sensitive to the rate than transformers
                     "resnet", "convnext", "efficientnet", "mobilenet", "regnet", "vgg", "densenet", "yolo")


def _is_freeze(node: cst.CSTNode) -> bool:
    """`x.trainable = False`, `p.requires_grad = False`, `m.requires_grad_(False)`, a `freeze...()` call."""
    if isinstance(node, cst.Assign):
        return (isinstance(node.value, cst.Name) and node.value.value == "False"
                and any(isinstance(t.target, cst.Attribute) and t.target.attr.value in ("trainable", "requires_grad")
                        for t in node.targets))
    if isinstance(node, cst.Call):
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if name == "requires_grad_":
            return bool(node.args) and isinstance(node.args[0].value, cst.Name) and node.args[0].value.value == "False"
        return "freeze" in name.lower()
    return False


def _frozen_between(module: cst.Module, start: cst.CSTNode | None, end: cst.CSTNode) -> bool:
    """A freeze in document order after ``start`` (the backbone's load; None: the top) and before ``end``
    (the compile call): a freeze elsewhere in the file is about another model."""
    seen = start is None
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        if node is end:
            return False
        if node is start:
            seen = True
        elif seen and _is_freeze(node):
            return True
        stack.extend(reversed(node.children))
    return False


_FREEZES = re.compile(r"requires_grad\s*=\s*False|requires_grad_\(\s*(?:requires_grad\s*=\s*)?False|\bfreeze"
                      r"|\.trainable\s*=\s*False")


_FROZEN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _adapters_or_frozen(ctx) -> bool:
    """The script trains PEFT adapters or freezes weights (memoised per file)."""
    if ctx not in _FROZEN:
        _FROZEN[ctx] = ctx.facts.imports.uses("peft") or bool(_FREEZES.search(ctx.source))
    return _FROZEN[ctx]


def fine_tuned_model(ctx, model: ModelValue | None) -> bool:
    """A pretrained transformers model that is fine-tuned in full: no PEFT adapters, no frozen base (a
    linear probe trains its new head at 1e-3), not a T5-style model trained with its usual 1e-3."""
    if model is None or not model.transformers or not model.pretrained:
        return False
    if _adapters_or_frozen(ctx):
        return False
    ckpt = model.checkpoint.lower() if isinstance(model.checkpoint, str) else ""
    if any(f in ckpt for f in _HIGH_LR_FAMILIES) or model.cls.startswith(("T5", "MT5", "UMT5", "TFT5")):
        return False
    return True


def _rate(value: float) -> str:
    """0.001 → "1e-3" (how learning rates are written)."""
    if 0 < value < 0.1:
        mantissa, exp = f"{value:e}".split("e")
        return f"{mantissa.rstrip('0').rstrip('.')}e{int(exp)}"
    return f"{value:g}"


@register
class TorchOptimizerDefaultLr(Rule):
    """A PyTorch optimizer for a pretrained transformer built without `lr`: it uses the class default (1e-3 for AdamW)."""

    code = "TL502"
    name = "torch-optimizer-default-lr"
    severity = Severity.WARNING
    measured_from = 4
    probe = "Reads the learning rate of the optimizer at the first step: the class default confirms it."
    #: `torch.optim.<class with a default rate>(model.parameters())` on a transformers `from_pretrained` model
    gate = (("torch",), ("optim",), tuple(TORCH_DEFAULT_LR), ("parameters", "named_parameters"),
            ("from_pretrained",), ("transformers",))

    def visit_Call(self, node: cst.Call) -> None:
        cls = torch_optimizer(self.ctx.facts, node)
        if cls not in TORCH_DEFAULT_LR or has_star_kwargs(node):
            return
        if argument(node, "lr", 1) is not None:
            return
        params = argument(node, "params", 0)
        if isinstance(params, (cst.List, cst.Tuple)) and all(
            isinstance(e.value, cst.Dict) and any(isinstance(el, cst.DictElement) and literal(el.key) == "lr"
                                                 for el in e.value.elements)
            for e in params.elements if isinstance(e, cst.Element)
        ) and params.elements:
            return  # every parameter group sets its own lr
        found = optimizer_model(self.ctx.facts, node)
        if found is None or found[1] is None or not fine_tuned_model(self.ctx, found[1]):
            return
        model = found[1]
        lr = TORCH_DEFAULT_LR[cls]
        self.report(
            node.func,
            f"`{self.ctx.code(node.func)}(...)` has no `lr`: its default {_rate(lr)} is far too high to fine-tune "
            f"the pretrained `{model.cls}`",
            hint=f"{cls}'s default is 20–50 times the usual fine-tuning rate: the loss goes up, oscillates or plateaus "
            "and the pretrained weights are destroyed; pass a fine-tuning "
            "rate, e.g. `lr=5e-5` (2e-5 to 5e-5 is usual for BERT-size models)",
        )


#: Keras optimizer classes: default learning rate
KERAS_OPTIMIZER_DEFAULT_LR = {KERAS_CLASS[k]: v for k, v in KERAS_DEFAULT_LR.items()}


@register
class HighLearningRate(Rule):
    """A literal learning rate ≥ 1e-3 for fine-tuning a pretrained transformer."""

    code = "TL503"
    name = "high-learning-rate"
    severity = Severity.WARNING
    measured_from = 4
    probe = "Reads the learning rate of the optimizer at the first step (≥ 1e-3 confirms it)."
    #: three paths, each on a transformers `from_pretrained` model: `TrainingArguments(learning_rate=)` with a
    #: Trainer; `torch.optim.X(model.parameters(), lr)`; `<model>.compile(optimizer=keras.optimizers.X(...) or
    #: create_optimizer(...))`. Every group below holds one word of each path.
    gate = (
        (*TRAINING_ARGS_WORDS, "optim", "compile"),
        (*TRAINER_WORDS, "parameters", "named_parameters", "compile"),
        # the learning_rate keyword / a torch optimizer class with a default rate / create_optimizer or a Keras
        # optimizer class other than SGD (each path returns early on the other classes)
        ("learning_rate", *TORCH_DEFAULT_LR, "create_optimizer",
         *(c for c in KERAS_OPTIMIZER_DEFAULT_LR if c != "SGD" and c not in TORCH_DEFAULT_LR)),
        ("from_pretrained",),
        ("transformers",),
    )

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        qn = facts.callee(node) or ""
        if qn in TRAINING_ARGS_CLASSES:
            self._training_arguments(node)
        elif torch_optimizer(self.ctx.facts, node) is not None:
            self._torch(node)
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value == "compile":
            self._keras(node)

    def _check(self, expr: cst.BaseExpression | None, at: cst.CSTNode, what: str, model: ModelValue, hint: str) -> None:
        if expr is None:
            return
        value = self.ctx.facts.constant(expr, at)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 1e-3:
            return
        self.report(
            expr,
            f"{what} {_rate(value)} is far too high to fine-tune the pretrained `{model.cls}` (2e-5 to 5e-5 is usual)",
            hint="the loss goes up, explodes or oscillates, or the model collapses to predicting one class; " + hint,
        )

    def _training_arguments(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        lr = keyword(node, "learning_rate")
        if lr is None:
            return
        optim = keyword(node, "optim")
        if optim is not None and any(o in str(facts.constant(optim.value, node)).lower() for o in ("adafactor", "sgd")):
            return
        model = self._trainer_model(node)
        if model is None:
            return
        self._check(lr.value, node, "`learning_rate`", model, "use `learning_rate=2e-5` (up to 5e-5)")

    def _trainer_model(self, args_call: cst.Call) -> ModelValue | None:
        """The pretrained model trained with these TrainingArguments (through the Trainer, or the one
        pretrained model of the file when the Trainer builds it with `model_init`)."""
        facts = self.ctx.facts
        models = []
        if getattr(self, "_trainers", None) is None:
            self._trainers = list(facts.trainer_calls())
        for call in self._trainers:
            a = argument(call, "args", 1)
            if a is None:
                continue
            if a is not args_call:
                b = facts.lookup(a.value, call) if isinstance(a, cst.Name) else None
                if b is None or b.value is not args_call:
                    continue
            m = argument(call, "model", 0)
            if m is not None:
                models.append(model_of(self.ctx.facts, m, call))
            else:
                init = facts.function_def(argument(call, "model_init"), call)
                if init is not None:
                    for c in iter_nodes(init, (cst.Call,)):
                        v = facts.value_of(c) if c in facts.where else None
                        if isinstance(v, ModelValue):
                            models.append(v)
        if not models or not all(fine_tuned_model(self.ctx, m) for m in models):
            return None
        return models[0]

    def _torch(self, node: cst.Call) -> None:
        if torch_optimizer(self.ctx.facts, node) not in TORCH_DEFAULT_LR:
            return  # SGD rates live on another scale (ViT is fine-tuned with SGD at 0.003–0.03)
        found = optimizer_model(self.ctx.facts, node)
        if found is None or found[1] is None or not fine_tuned_model(self.ctx, found[1]):
            return
        self._check(argument(node, "lr", 1), node, f"`{self.ctx.code(node.func)}(lr=...)`", found[1],
                    "use `lr=2e-5` (up to 5e-5)")

    def _keras(self, node: cst.Call) -> None:
        model = keras_backbone(self.ctx.facts, node)
        if model is None or not fine_tuned_model(self.ctx, model):
            return
        facts = self.ctx.facts
        opt = argument(node, "optimizer", 0)
        at: cst.CSTNode = node
        if isinstance(opt, cst.Name):
            b = facts.lookup(opt.value, node)
            opt, at = (b.value, b.value if b.value in facts.where else node) if b is not None else (None, node)
            unpacked = facts.unpacked_from(b) if b is not None and opt is None else None
            if unpacked is not None and unpacked[1] == 0:  # `optimizer, schedule = create_optimizer(...)`
                opt, at = unpacked[0], (unpacked[0] if unpacked[0] in facts.where else node)
        if not isinstance(opt, cst.Call):
            return
        qn = facts.callee(opt) or ""
        if qn == "transformers.create_optimizer":
            self._check(argument(opt, "init_lr", 0), at, "`create_optimizer(init_lr=...)`", model,
                        "use `init_lr=2e-5` (up to 5e-5)")
            return
        if not qn.startswith("keras.optimizers."):
            return
        cls = qn.rsplit(".", 1)[-1]
        if cls not in KERAS_OPTIMIZER_DEFAULT_LR or cls == "SGD":
            return
        lr = argument(opt, "learning_rate", 0)
        if lr is None:  # `lr=`: the Keras 2 alias (TF ≤ 2.10 and the `legacy` optimizers take it as the rate)
            lr = argument(opt, "lr")
        if lr is None and not has_star_kwargs(opt) and cls in KERAS_OPTIMIZER_DEFAULT_LR:
            self.report(
                opt,
                f"`{self.ctx.code(opt.func)}()` without `learning_rate` uses its default "
                f"{_rate(KERAS_OPTIMIZER_DEFAULT_LR[cls])}, far too high to fine-tune the pretrained `{model.cls}`",
                hint="the loss goes up, explodes or oscillates, or the model collapses to predicting one class; pass "
                "`learning_rate=5e-5` (2e-5 to 5e-5 is usual)",
            )
            return
        kw = "lr" if lr is not None and argument(opt, "learning_rate", 0) is None else "learning_rate"
        self._check(lr, at, f"`{self.ctx.code(opt.func)}({kw}=...)`", model,
                    "use `learning_rate=5e-5` (2e-5 to 5e-5 is usual)")


@register
class OptimizerOnReplacedModel(Rule):
    """An optimizer built on a model's parameters still steps after the model's name is bound to another model."""

    code = "TL504"
    name = "optimizer-on-replaced-model"
    severity = Severity.ERROR
    default = False
    measured_from = 4
    probe = ("Compares the optimizer's parameters with the model being trained: no overlap confirms it "
             "(one step then moves nothing).")
    #: `opt = torch.optim.X(model.parameters(), ...)`
    gate = (("torch",), ("optim",), ("parameters", "named_parameters"))

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        if torch_optimizer(facts, node) is None:
            return
        owner = parameters_owner(argument(node, "params", 0))  # premise 1: the optimizer holds `owner`'s parameters
        opt = self._assignment_of(node)
        if not isinstance(owner, cst.Name) or opt is None:
            return
        for later in facts.assigned_later(owner.value, node):
            if not self._another_model(later, owner.value, node):  # premise 2
                continue
            end = rebound_after(facts, opt, later.order, node)
            how = self._old_optimizer_steps(opt, owner.value, later.order, end, facts.where[node].function)  # 3
            if how is None:
                continue
            self.report(
                later.target,
                f"`{owner.value}` is bound to another model here, but `{opt}` still holds the old model's "
                f"parameters: {how} moves none of the new model's weights",
                hint=f"`{opt} = {self.ctx.code(node.func)}({self._params_code(node)}, ...)` was built on the model `{owner.value}` held before: "
                "an optimizer keeps references to the parameter tensors it was given, so its steps update a model "
                f"nobody trains and the loss stays flat. Build the optimizer after the final `{owner.value} = ...` "
                "(or keep training the first model)",
            )
            return

    def _params_code(self, node: cst.Call) -> str:
        """What the optimizer was given, as written (`model.named_parameters()`, `params`...)."""
        arg = argument(node, "params", 0)
        text = self.ctx.code(arg) if arg is not None else ""
        return text if len(text) <= 60 else "..."

    def _assignment_of(self, call: cst.Call) -> str | None:
        """`optimizer` in `optimizer = AdamW(...)` (one index of the file's assignments, built once)."""
        assigned = self.__dict__.get("_assigned")
        if assigned is None:
            assigned = self._assigned = {
                id(a.value): a.targets[0].target.value
                for a in self.ctx.facts.index.get("Assign", ())
                if len(a.targets) == 1 and isinstance(a.targets[0].target, cst.Name)
            }
        return assigned.get(id(call))

    def _another_model(self, later, name: str, optimizer_call: cst.Call) -> bool:
        """Premise 2: the new binding of ``name`` is a model object other than the one the optimizer holds: a
        model the program model or the dataflow knows, another instance made by the constructor that made
        the first (`rnn = RNN(...)` twice), a deep copy or a PEFT wrapper (its new weights are not in the
        optimizer). `model.to(device)`, `DDP(model)`, `torch.compile(model)`, `model = None` are the same
        parameters or no model."""
        value = later.value
        if not isinstance(value, cst.BaseExpression) or literal(value) is None:
            return False
        facts = self.ctx.facts
        attrs = {id(a.attr) for a in iter_nodes(value, (cst.Attribute,))}  # `args.model` is not `model`
        mentions = any(n.value == name and id(n) not in attrs for n in iter_nodes(value, (cst.Name,)))
        if mentions:
            f = value.func if isinstance(value, cst.Call) else None
            short = f.attr.value if isinstance(f, cst.Attribute) else f.value if isinstance(f, cst.Name) else ""
            return short in ("get_peft_model", "deepcopy")
        at = value if value in facts.where else optimizer_call
        if isinstance(facts.value_of(value, at), ModelValue) or isinstance(program(facts).of(value, at), Module):
            return True
        first = facts.lookup(name, optimizer_call)
        return (isinstance(value, cst.Call) and first is not None and isinstance(first.value, cst.Call)
                and dotted(first.value.func) is not None and dotted(first.value.func) == dotted(value.func))

    def _old_optimizer_steps(self, opt: str, model: str, start: int, end: int, scope) -> str | None:
        """Premise 3: after the rebinding (and before ``opt`` names anything else), the old optimizer steps for
        the new model: `opt.step()` once the new model has run, `opt` handed with the model to one call
        (`Trainer(model=model, optimizers=(opt, None))`, `train(model, opt)`), or a function of the file run
        then that reads both as module-level names and steps `opt`."""
        facts = self.ctx.facts
        graph = call_graph(facts)
        used = False
        for call in graph.calls_in.get(scope, ()):
            order = facts.where[call].order
            if not start < order < end:
                continue
            names = _names_in_call(call)
            f = call.func
            if isinstance(f, cst.Attribute) and f.attr.value == "step" and dotted(f.value) == opt and used:
                return f"`{opt}.step()`"
            if model in names:
                used = True
                if opt in names:
                    return f"`{_short(self.ctx.code(call.func))}(...)`, given both,"
            if scope is None:
                fn = graph.target(call)
                if fn is not None and _steps_global(graph, fn, opt) and _reads_global(graph, fn, model):
                    return f"`{_short(self.ctx.code(call.func))}(...)`, which steps it,"
        return None


def _short(code: str) -> str:
    return code if len(code) <= 30 else "..." + code[-27:]


def rebound_after(facts, name: str, order: int, at: cst.CSTNode) -> int:
    """The order of the first statement after ``order`` that binds ``name`` anew in the scope of ``at``: an
    assignment, a `for`, a `def`, or an import (`from torch import nn, optim` rebinds `optim`)."""
    w = facts.where.get(at)
    scope = w.function if w is not None else None
    orders = [b.order for b in facts.assigned_later(name, at) if b.order > order]
    for kind in ("Import", "ImportFrom"):
        for imp in facts.index.get(kind, ()):
            iw = facts.where.get(imp)
            if iw is None or iw.function is not scope or iw.order <= order or isinstance(imp.names, cst.ImportStar):
                continue
            for alias in imp.names:
                bound = alias.asname.name if alias.asname is not None else alias.name
                while isinstance(bound, cst.Attribute):
                    bound = bound.value  # `import torch.optim` binds `torch`
                if isinstance(bound, cst.Name) and bound.value == name:
                    orders.append(iw.order)
    return min(orders, default=1 << 60)


def _names_in_call(call: cst.Call) -> set[str]:
    """The names a call works on: the root of its receiver (`model(...)`, `model.train()`) and its arguments
    (also inside tuples and lists: `optimizers=(opt, None)`); not `opt.state_dict()`-style reads of them."""
    names = set()
    root = call.func
    while isinstance(root, (cst.Attribute, cst.Call, cst.Subscript)):
        root = root.func if isinstance(root, cst.Call) else root.value
    if isinstance(root, cst.Name) and not (isinstance(call.func, cst.Attribute)
                                           and call.func.attr.value in _STATE_METHODS):
        names.add(root.value)
    for a in call.args:
        v = a.value
        elems = [e.value for e in v.elements] if isinstance(v, (cst.Tuple, cst.List)) else [v]
        names.update(e.value for e in elems if isinstance(e, cst.Name))
    return names


#: optimizer methods that save, restore or extend its state without stepping the model it holds
_STATE_METHODS = frozenset({"state_dict", "load_state_dict", "add_param_group"})


def _global_uses(graph, fn: cst.FunctionDef, name: str, test, depth: int = 0, seen=None) -> bool:
    """``fn`` (or a function of the file it calls) uses the module-level ``name`` as ``test`` accepts."""
    seen = set() if seen is None else seen
    if fn in seen or depth > 3 or name in graph.local_names(fn):
        return False
    seen.add(fn)
    if test(fn, name):
        return True
    return any(t is not None and _global_uses(graph, t, name, test, depth + 1, seen)
               for t in {graph.target(c) for c in graph.calls_in.get(fn, ())})


def _reads_global(graph, fn: cst.FunctionDef, name: str) -> bool:
    def reads(f, n):
        attrs = {id(a.attr) for a in iter_nodes(f.body, (cst.Attribute,))}
        return any(x.value == n and id(x) not in attrs for x in iter_nodes(f.body, (cst.Name,)))
    return _global_uses(graph, fn, name, reads)


def _steps_global(graph, fn: cst.FunctionDef, name: str) -> bool:
    def steps(f, n):
        return any(isinstance(c.func, cst.Attribute) and c.func.attr.value == "step" and dotted(c.func.value) == n
                   for c in iter_nodes(f.body, (cst.Call,)))
    return _global_uses(graph, fn, name, steps)


def _hides_gpus(facts) -> bool:
    """`os.environ["CUDA_VISIBLE_DEVICES"] = ""` (or `"-1"`) on every path of the file: no GPU is visible to the
    script (an assignment under an `if`, a `while` or a `try` may not run; the `__main__` guard does)."""
    for a in facts.index.get("Assign", ()):
        if literal(a.value) not in ("", "-1"):
            continue
        for t in a.targets:
            tgt = t.target
            if not (isinstance(tgt, cst.Subscript) and dotted(tgt.value) in ("os.environ", "environ")
                    and len(tgt.slice) == 1 and isinstance(tgt.slice[0].slice, cst.Index)
                    and literal(tgt.slice[0].slice.value) == "CUDA_VISIBLE_DEVICES"):
                continue
            w = facts.where.get(a)
            if w is not None and not any(
                    isinstance(b, (cst.While, cst.Try)) or (isinstance(b, cst.If) and "__main__" not in
                                                           facts.module.code_for_node(b.test)) for b in w.blocks):
                return True
    return False



@register
class HalfPrecisionOnCpu(Rule):
    """`fp16=True` where the script itself shows there is no GPU (`use_cpu=True`, `no_cuda=True`)."""

    code = "TL505"
    name = "half-precision-on-cpu"
    severity = Severity.WARNING
    measured_from = 4
    #: `TrainingArguments(fp16=True, ...)` or `accelerate.Accelerator(mixed_precision="fp16", cpu=True)`
    gate = ((*TRAINING_ARGS_WORDS, "Accelerator"), ("transformers", "accelerate"),
            ("fp16", "mixed_precision"), ("fp16", "cpu"))

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        qn = facts.callee(node) or ""
        if qn in TRAINING_ARGS_CLASSES:
            fp16 = keyword(node, "fp16")
            if fp16 is None or facts.constant(fp16.value, node) is not True:
                return
            for flag in ("use_cpu", "no_cuda"):
                kw = keyword(node, flag)
                if kw is not None and facts.constant(kw.value, node) is True:
                    self._report_fp16(fp16, f"`{flag}=True`", f"drop `{flag}=True` to train on the GPU")
                    return
            if _hides_gpus(facts):
                self._report_fp16(fp16, "`CUDA_VISIBLE_DEVICES` set to hide every GPU",
                                  "let the script see the GPU")
        elif qn == "accelerate.Accelerator":
            self._accelerator(node)

    def _report_fp16(self, fp16: cst.Arg, why: str, other_fix: str) -> None:
        self.report(
            fp16,
            f"`fp16=True` with {why}: fp16 mixed precision needs a GPU, so training runs in fp32 (or fails on older "
            "transformers)",
            hint="on the CPU it is turned off without a word (older transformers raise \"ValueError: FP16 Mixed "
            f"precision training with AMP or APEX (`--fp16`) ... can only be used on CUDA devices\"); drop "
            f"`fp16=True` on the CPU (or {other_fix})",
        )

    def _accelerator(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        mp = keyword(node, "mixed_precision")
        cpu = keyword(node, "cpu")
        if mp is None or cpu is None or facts.constant(cpu.value, node) is not True:
            return
        if facts.constant(mp.value, node) == "fp16":
            self.report(
                mp,
                "`Accelerator(mixed_precision=\"fp16\", cpu=True)`: fp16 mixed precision needs a GPU, so training "
                "runs in fp32 (or fails on older accelerate)",
                hint="on the CPU it is turned off (older accelerate fails with \"fp16 mixed precision requires a "
                "GPU\"); drop `mixed_precision=\"fp16\"` on the CPU",
            )
