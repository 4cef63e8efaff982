"""TL4xx: loss and labels — where the labels travel and what the loss expects."""

from __future__ import annotations

from typing import Any, cast

import libcst as cst

from trainlint import codemod, knowledge
from trainlint.facts import (
    ModelValue,
    TFDatasetValue,
    argument,
    iter_nodes,
    keyword,
    literal,
)
from trainlint.facts.calls import call_graph, is_parameter
from trainlint.facts.models import compiled_model
from trainlint.findings import Applicability, Severity
from trainlint.rule import Rule, register

LABEL_NAMES = frozenset({"label", "labels", "start_positions", "end_positions"})
#: Keras losses that expect probabilities unless `from_logits=True`
PROBABILITY_LOSSES = {
    "sparse_categorical_crossentropy": "SparseCategoricalCrossentropy",
    "categorical_crossentropy": "CategoricalCrossentropy",
    "binary_crossentropy": "BinaryCrossentropy",
}
_LOSS_CLASSES = {v: k for k, v in PROBABILITY_LOSSES.items()}
#: gate words of every model class `knowledge.head_of` recognises: a head suffix or `…Model`
MODEL_CLASS_WORDS = ("*Model", *("*" + suffix for suffix, _ in knowledge.HEADS))


def compiled_loss(ctx, call: cst.Call) -> tuple[cst.BaseExpression, ModelValue] | None:
    """(the `loss=` expression, the model) of a `model.compile(loss=...)` call with a loss on a model
    trainlint knows; None otherwise (not a compile, no loss or `loss=None`, unknown model)."""
    if not (isinstance(call.func, cst.Attribute) and call.func.attr.value == "compile"):
        return None
    loss = argument(call, "loss", 1)
    if loss is None or literal(loss) is None:
        return None
    model = compiled_model(ctx.facts, call)
    return None if model is None else (loss, model)


def fit_datasets(ctx, model: ModelValue):
    """The `tf.data` datasets given to `fit` on this model."""
    for call in ctx.facts.method_calls("fit"):
        m = compiled_model(ctx.facts, call)
        if m is not None and m.call is model.call:
            d = ctx.facts.value_of(argument(call, "x", 0), call)
            if isinstance(d, TFDatasetValue):
                yield d


@register
class KerasLossWithLabelsInFeatures(Rule):
    """`compile(loss=...)` while the labels travel inside the feature dict."""

    code = "TL401"
    name = "keras-loss-with-labels-in-features"
    severity = Severity.ERROR
    probe = ("Takes one batch from the dataset given to `fit`: labels inside the feature dict and no "
             "separate target, with a compiled Keras loss, confirm it.")
    #: the loss may be positional (`compile(opt, loss)`): no `loss` group; the tf.data dataset with
    #: its `columns` comes from `to_tf_dataset` (`prepare_tf_dataset` is never reported)
    gate = (("compile",), ("fit",), ("to_tf_dataset",))

    def visit_Call(self, node: cst.Call) -> None:
        compiled = compiled_loss(self.ctx, node)
        if compiled is None:
            return
        loss, model = compiled
        for ds in fit_datasets(self.ctx, model):
            if ds.prepared or ds.label_cols is not None or not isinstance(ds.columns, list):
                continue
            labels = [c for c in ds.columns if c in LABEL_NAMES]
            if not labels:
                continue
            if model.transformers:
                symptom = ("a transformers model moves the labels out of the inputs and runs this Keras loss on its "
                           "logits: training runs but learns badly")
            else:
                symptom = 'Keras gets no target: "No gradients provided for any variable" / "Target data is missing"'
            self.report(
                loss,
                f"`compile(loss=...)` but the labels travel inside the feature dict (`columns={ds.columns!r}`, no "
                f"`label_cols`): {symptom}",
                hint="either drop `loss=` to use the model's internal loss, or move the labels out: "
                f"`to_tf_dataset(columns=[...], label_cols={labels[0]!r})`",
            )
            return


@register
class LossExpectsProbabilities(Rule):
    """A cross-entropy loss without `from_logits=True` on a transformers model, whose outputs are logits."""

    code = "TL402"
    name = "loss-expects-probabilities"
    severity = Severity.ERROR
    probe = "Compares the compiled loss on one batch with the same loss computed `from_logits=True`."
    #: the loss may be a string (no word); the model is a transformers class (imported from
    #: `transformers`) loaded with `from_pretrained`/`from_config` or built from a class
    #: `knowledge.head_of` knows (a head suffix, or a name ending in `Model`)
    gate = (("compile",), ("transformers",), ("from_pretrained", "from_config", *MODEL_CLASS_WORDS))
    fix = Applicability.SAFE

    def visit_Call(self, node: cst.Call) -> None:
        compiled = compiled_loss(self.ctx, node)
        if compiled is None or not compiled[1].transformers:
            return
        loss, model = compiled
        name = self._probability_loss(loss, node)
        if name is None:
            return
        self.report(
            loss,
            f"`{self.ctx.code(loss)}` expects probabilities, but `{model.cls}` outputs logits: the loss is computed "
            "on the wrong scale and training stalls at a high loss",
            hint=f"use `keras.losses.{name}(from_logits=True)` (or drop `loss=` to use the model's internal loss)",
            fix=self._fix(loss, node, name),
        )

    def _fix(self, loss: cst.BaseExpression, at: cst.Call, name: str):
        """`"sparse_categorical_crossentropy"` → `<keras>.losses.SparseCategoricalCrossentropy(from_logits=True)`
        in the file's own Keras spelling; an existing loss object gets `from_logits=True`."""
        facts = self.ctx.facts
        node = loss
        for _ in range(5):  # `loss_fn = SparseCategoricalCrossentropy()` ... `compile(loss=loss_fn)`
            if not isinstance(node, cst.Name) or facts.qualname(node) is not None or isinstance(facts.constant(node, at), str):
                break
            b = facts.lookup(node.value, at)
            if b is None or not isinstance(b.value, (cst.Call, cst.Attribute, cst.Name)):
                return None
            node = b.value
        message = f"Use `{name}(from_logits=True)`"
        if isinstance(node, cst.Call):
            fl = keyword(node, "from_logits")
            if fl is not None:
                return self.ctx.fix(Applicability.SAFE, message, self.ctx.replace(fl.value, "True"))
            if any(a.star for a in node.args):
                return None
            return self.ctx.fix(Applicability.SAFE, message, codemod.add_keyword(self.ctx, node, "from_logits", "True"))
        if isinstance(node, cst.Attribute) and not isinstance(facts.constant(node, at), str):
            # `tf.keras.losses.sparse_categorical_crossentropy` → `tf.keras.losses.SparseCategoricalCrossentropy(...)`
            return self.ctx.fix(Applicability.SAFE, message,
                                self.ctx.replace(node, f"{self.ctx.code(node.value)}.{name}(from_logits=True)"))
        spelled = codemod.keras_prefix(self.ctx, "losses")
        if spelled is None:
            return None
        prefix, add = spelled
        edits = [self.ctx.replace(node if node is not loss and not isinstance(node, cst.Name) else loss,
                                  f"{prefix}.{name}(from_logits=True)")]
        return self.ctx.fix(Applicability.SAFE, message, *edits, *([add] if add is not None else []))

    def _probability_loss(self, loss: cst.BaseExpression, at: cst.Call, _depth: int = 0) -> str | None:
        facts = self.ctx.facts
        if isinstance(loss, cst.Name) and _depth < 5 and facts.qualname(loss) is None:
            # `loss_fn = SparseCategoricalCrossentropy()` ... `compile(loss=loss_fn)`
            b = facts.lookup(loss.value, at)
            if b is not None and isinstance(b.value, (cst.Call, cst.Attribute, cst.Name)):
                return self._probability_loss(b.value, at, _depth + 1)
        value = facts.constant(loss, at)
        if isinstance(value, str):
            key = value.lower()
            return PROBABILITY_LOSSES.get(key) or (value if value in _LOSS_CLASSES else None)
        if isinstance(loss, cst.Call):
            qn = facts.callee(loss) or ""
            cls = qn.rsplit(".", 1)[-1]
            if qn.startswith("keras.") and cls in _LOSS_CLASSES:
                fl = keyword(loss, "from_logits")
                if fl is None or literal(fl.value) is False:
                    return cls
            return None
        qn = facts.qualname(loss) or ""
        if qn.startswith("keras.") and qn.rsplit(".", 1)[-1] in PROBABILITY_LOSSES:
            return PROBABILITY_LOSSES[qn.rsplit(".", 1)[-1]]
        return None


@register
class LabelDtypeProblemType(Rule):
    """(probe) Label dtype and `problem_type` disagree: float labels make a multi-label (BCE) loss,
    integer labels with `num_labels=1` a regression (MSE) loss."""

    code = "TL405"
    name = "label-dtype-problem-type"
    severity = Severity.WARNING
    probe = "Reads the dtype of the label column and the model's `config.problem_type`/`num_labels`."


@register
class NonFiniteLoss(Rule):
    """(probe) The loss is NaN or infinite at initialisation, for some samples of one batch."""

    code = "TL406"
    name = "non-finite-loss"
    severity = Severity.ERROR
    probe = "Runs the model on one batch and checks the per-sample loss is finite."


@register
class UnexpectedInitialLoss(Rule):
    """(probe) The loss at initialisation is far from ln(num_labels) for a fresh classification head."""

    code = "TL407"
    name = "unexpected-initial-loss"
    severity = Severity.WARNING
    probe = "Compares the loss on one batch at initialisation with ln(num_labels)."


# ---------------------------------------------------------------------------------------------
# Catalog breadth: TL403–TL404.

#: losses that apply (log-)softmax / sigmoid themselves → the activation they must not be given
_LOGIT_LOSSES = {
    "torch.nn.CrossEntropyLoss": "softmax", "torch.nn.functional.cross_entropy": "softmax",
    "torch.nn.BCEWithLogitsLoss": "sigmoid", "torch.nn.functional.binary_cross_entropy_with_logits": "sigmoid",
    "torch.nn.NLLLoss": "softmax-nll", "torch.nn.functional.nll_loss": "softmax-nll",
}
_ACTIVATIONS = {
    "torch.softmax": "softmax", "torch.nn.functional.softmax": "softmax", "torch.sigmoid": "sigmoid",
    "torch.nn.functional.sigmoid": "sigmoid", "torch.special.softmax": "softmax", "torch.special.expit": "sigmoid",
}
_ACTIVATION_MODULES = {"torch.nn.Softmax": "softmax", "torch.nn.Sigmoid": "sigmoid",
                       "torch.nn.LogSoftmax": "log_softmax"}
_LOG_SOFTMAX = frozenset({"torch.log_softmax", "torch.nn.functional.log_softmax", "torch.special.log_softmax"})
#: tensor methods that only reshape, select, move or cast: probabilities stay probabilities
_KEEPING_METHODS = frozenset({
    "view", "reshape", "view_as", "reshape_as", "squeeze", "unsqueeze", "transpose", "permute", "contiguous",
    "flatten", "t", "to", "cuda", "cpu", "float", "double", "half", "type", "clone",
})
#: the torch functions of the same kind, on their first argument
_KEEPING_FUNCTIONS = frozenset({"torch.reshape", "torch.squeeze", "torch.unsqueeze", "torch.transpose", "torch.permute",
                                "torch.flatten"})
#: torch functions that run the callable they are given on the other arguments and return its output
_APPLYING_FUNCTIONS = frozenset({"torch.utils.checkpoint.checkpoint", "torch.utils.checkpoint.checkpoint_sequential"})
#: how far an activation is followed through names, wrappers, layers and model classes
_MAX_DEPTH = 10
_KERAS_FROM_LOGITS = frozenset({"SparseCategoricalCrossentropy", "CategoricalCrossentropy", "BinaryCrossentropy",
                                "BinaryFocalCrossentropy", "CategoricalFocalCrossentropy"})


def _is_self_attr(expr) -> bool:
    return isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self"


def _called_object(func: cst.BaseExpression) -> cst.BaseExpression:
    """`model.forward` → `model`: calling `forward` directly computes what calling the module does."""
    if isinstance(func, cst.Attribute) and func.attr.value == "forward":
        return func.value
    return func


def _torch_name(qn: str | None) -> str | None:
    """`torch.nn.modules.loss.CrossEntropyLoss` → `torch.nn.CrossEntropyLoss`."""
    if not qn:
        return None
    if qn.startswith("torch.nn.modules."):
        return "torch.nn." + qn.rsplit(".", 1)[-1]
    return qn


@register
class ActivationBeforeLoss(Rule):
    """Probabilities given to a loss that expects logits: softmax before `CrossEntropyLoss`, sigmoid before
    `BCEWithLogitsLoss`, softmax (not log-softmax) before `NLLLoss`, a softmax/sigmoid output layer with
    a Keras loss `from_logits=True`."""

    code = "TL403"
    name = "activation-before-loss"
    severity = Severity.ERROR
    probe = ("Keras: on one batch, the loss `from_logits=True` next to the same loss on the probabilities the last "
             "layer's softmax/sigmoid gives.")
    #: torch: an activation (a softmax may be the exponential of a log-softmax) and a logits loss; Keras: a
    #: `from_logits=True` loss class on a Sequential whose last layer may say "softmax" in a string only
    #: (hence `from_logits` beside the activations)
    gate = (
        ("softmax", "sigmoid", "Softmax", "Sigmoid", "expit", "log_softmax", "LogSoftmax", "from_logits"),
        ("cross_entropy", "binary_cross_entropy_with_logits", "nll_loss", "CrossEntropyLoss", "BCEWithLogitsLoss",
         "NLLLoss", *sorted(_KERAS_FROM_LOGITS)),
    )

    def visit_Call(self, node: cst.Call) -> None:
        loss = self._loss_kind(node)
        if loss is not None:
            self._check_torch(node, loss)
            return
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "compile":
            self._check_keras(node)

    # -- torch -------------------------------------------------------------------------------
    def _loss_kind(self, call: cst.Call) -> tuple[str, str] | None:
        """(loss name, expected) if `call` computes a logits loss: `F.cross_entropy(...)`,
        `criterion(...)` with `criterion = nn.CrossEntropyLoss()`, `nn.CrossEntropyLoss()(...)`."""
        facts = self.ctx.facts
        qn = _torch_name(facts.callee(call))
        if qn in _LOGIT_LOSSES and qn.startswith("torch.nn.functional."):
            return qn.rsplit(".", 1)[-1], _LOGIT_LOSSES[qn]
        ctor: Any = _called_object(call.func)
        if isinstance(ctor, cst.Name):  # (a parameter: what the file's calls give it)
            ctor = self._made(ctor.value, call)
        if _is_self_attr(ctor):  # self.criterion(...) with self.criterion = nn.CrossEntropyLoss()
            ctor = self._self_attr(call, ctor.attr.value)
            if isinstance(ctor, cst.Name):  # `self.loss_func = loss_func`: the parameter's default
                ctor = self._parameter_default(ctor.value, call)
        while (isinstance(ctor, cst.Call) and isinstance(ctor.func, cst.Attribute)
               and ctor.func.attr.value in ("to", "cuda", "cpu")):
            ctor = ctor.func.value  # nn.CrossEntropyLoss().cuda()
        if isinstance(ctor, cst.Call):
            cq = _torch_name(facts.callee(ctor))
            if cq in _LOGIT_LOSSES and not cq.startswith("torch.nn.functional."):
                return cq.rsplit(".", 1)[-1], _LOGIT_LOSSES[cq]
        return None

    def _activation(self, expr, at, depth: int = 0) -> tuple[str, cst.CSTNode] | None:
        """(kind, node) when `expr` is (or names) an activation's output: kind "softmax", "sigmoid",
        "log_softmax", or "softmax-log" (the log-softmax of a softmax); node is where the activation is taken."""
        facts = self.ctx.facts
        if depth > _MAX_DEPTH or expr is None:
            return None
        if isinstance(expr, cst.Name):
            b = facts.lookup(expr.value, at)
            if b is None:
                return None
            value = b.value
            if value is None:  # a loop variable: an element of what the loop iterates over
                value = self._loop_source(b.target)
                bound_at = self._loops().get(id(b.target), (None,))[0]
            else:
                bound_at = value
            if value is None or bound_at not in facts.where or at not in facts.where:
                return None
            if facts.where[bound_at].function is not facts.where[at].function:
                return None
            if any(x.order < facts.where[at].order and not facts.in_bound_value(x, at)
                   for x in facts.assigned_later(expr.value, bound_at)):
                return None  # rebound in between (`probs = probs.log()` is read where it is rebound: not that)
            return self._activation(value, bound_at, depth + 1)
        if isinstance(expr, cst.Subscript):  # probs[i], probs[:, :k]: a part of the same probabilities
            return self._activation(expr.value, at, depth + 1)
        if not isinstance(expr, cst.Call):
            return None
        qn = facts.callee(expr)
        if qn in _ACTIVATIONS:
            return _ACTIVATIONS[qn], expr
        func: Any = expr.func
        method = func.attr.value if isinstance(func, cst.Attribute) and qn is None else None
        if qn in _KEEPING_FUNCTIONS or method in _KEEPING_METHODS:  # probs.view(-1, n), torch.squeeze(probs)
            return self._activation(argument(expr, "input", 0) if qn else func.value, at, depth + 1)
        if qn == "torch.exp" or (method == "exp" and not expr.args):
            # `torch.exp(F.log_softmax(x))`: the exponential of log-probabilities is the probabilities
            found = self._activation(argument(expr, "input", 0) if qn else func.value, at, depth + 1)
            return ("softmax", expr) if found is not None and found[0] in ("log_softmax", "softmax-log") else None
        layer = self._layer_activation(func, expr, depth + 1)
        if layer is None and (qn in _LOG_SOFTMAX or (method == "log_softmax" and not _is_self_attr(func))):
            layer = ("log_softmax", None)  # F.log_softmax(x), x.log_softmax(-1)
        if layer is not None:
            kind, node = layer
            if node is None and kind == "log_softmax":
                # `F.log_softmax(F.softmax(x))`: the log-probabilities of probabilities (a softmax applied twice)
                inner = func.value if method == "log_softmax" and qn is None and not _is_self_attr(func) \
                    else argument(expr, "input", 0)
                found = self._activation(inner, at, depth + 1)
                if found is not None and found[0] == "softmax":
                    return "softmax-log", found[1]
            return kind, expr if node is None else node
        if method in ("softmax", "sigmoid") and not _is_self_attr(func):
            return method, expr  # logits.softmax(-1)
        # `self.dropout_wrapper(x, nn.Sequential(self.fc, self.softmax))`, `checkpoint(self.head, x)`: code outside
        # the file given a layer and its input (and nothing else) returns what the layer computes
        given = [a.value for a in expr.args if a.keyword is None]
        if qn in _APPLYING_FUNCTIONS:
            layers = given[:1]
        elif len(given) == 2 and not any(a.star for a in expr.args) and self._foreign_callable(func, expr):
            layers = given
        else:
            layers = []
        for arg in layers:
            if isinstance(arg, (cst.Name, cst.Attribute, cst.Call)):
                inside = self._layer_activation(arg, expr, depth + 1, given=True)
                if inside is not None:
                    return inside[0], inside[1] if inside[1] is not None else arg
        return None

    def _layer_activation(self, layer, at, depth: int, given: bool = False) -> tuple[str, cst.CSTNode | None] | None:
        """(kind, node) when calling the module ``layer`` (`nn.Softmax(dim=1)`, `self.softmax`, an
        `nn.Sequential` ending in one, a model of the file whose `forward` returns one) returns an activation's
        output; node is None when ``layer`` is itself the activation module. ``given``: ``layer`` is an argument
        (a model of the file is then not taken: a function given a model need not return its output)."""
        facts = self.ctx.facts
        if depth > _MAX_DEPTH:
            return None
        layer = _called_object(layer)
        if isinstance(layer, cst.Name):
            made = self._made(layer.value, at)
        elif _is_self_attr(layer):  # self.softmax = nn.Softmax(dim=1)
            made = self._self_attr(at, layer.attr.value)
            if isinstance(made, cst.Name):  # `self.final_layer = final_layer`: the parameter's default
                made = self._parameter_default(made.value, at)
        elif isinstance(layer, cst.Call):
            made = layer
        else:
            return None
        for _ in range(3):
            moved = None
            while (isinstance(made, cst.Call) and isinstance(made.func, cst.Attribute)
                   and made.func.attr.value in ("to", "cuda", "cpu", "float", "double")):
                moved, made = made, made.func.value  # Net().to(device)
            if not (isinstance(made, cst.Name) and moved in facts.where):
                break
            made = self._made(made.value, cast(cst.Call, moved))  # `model = model.to(device)`: what `model` was before
        if not given:
            made = self._built_by(made, depth)
        if not isinstance(made, cst.Call):
            return None
        cq = _torch_name(facts.callee(made))
        if cq in _ACTIVATION_MODULES:
            return _ACTIVATION_MODULES[cq], None
        if cq == "torch.nn.Sequential":  # nn.Sequential(..., nn.Softmax(dim=1))
            layers = [a.value for a in made.args if a.keyword is None and not a.star] or self._added_modules(made)
            if layers and isinstance(layers[-1], (cst.Call, cst.Attribute, cst.Name)):
                found = self._layer_activation(layers[-1], made if made in facts.where else at, depth + 1, given=True)
                if found is not None:
                    return found[0], found[1] if found[1] is not None else layers[-1]
            return None
        if not given and isinstance(made.func, cst.Name) and depth < _MAX_DEPTH:
            cb = facts.lookup(made.func.value, made) if made in facts.where else None
            if cb is not None and isinstance(cb.value, cst.ClassDef):  # a class Net(nn.Module) whose forward returns it
                return self._forward_activation(cb.value, depth)
        return None

    def _loops(self) -> dict:
        """id(loop variable) -> (the `for` statement, what the variable is an element of)."""
        loops: dict[int, tuple[cst.For, cst.BaseExpression]] | None = self.__dict__.get("_loop_sources")
        if loops is None:
            loops = {}
            self._loop_sources = loops
            for node in self.ctx.facts.index.get("For", ()):
                target, source = node.target, node.iter
                if isinstance(target, cst.Name):
                    loops[id(target)] = (node, source)
                elif (isinstance(target, cst.Tuple) and isinstance(source, cst.Call)
                      and isinstance(source.func, cst.Name) and source.func.value in ("enumerate", "zip")
                      and not any(a.star or a.keyword for a in source.args)):
                    # `for i, p in enumerate(probs)`, `for p, y in zip(probs, labels)`
                    sources = [None, *(a.value for a in source.args)] if source.func.value == "enumerate" else \
                        [a.value for a in source.args]
                    for element, src in zip(target.elements, sources):
                        if isinstance(element.value, cst.Name) and src is not None:
                            loops[id(element.value)] = (node, src)
        return loops

    def _loop_source(self, target: cst.CSTNode) -> cst.BaseExpression | None:
        """What the loop variable ``target`` takes the elements of (`for out in outputs`: `outputs`)."""
        return self._loops().get(id(target), (None, None))[1]

    def _foreign_callable(self, func: cst.BaseExpression, at: cst.CSTNode) -> bool:
        """Calling ``func`` runs code the file does not define: a function imported from outside torch, or an
        object of such a class (`self.wrapper`, `wrapper = Wrapper(...)`)."""
        facts = self.ctx.facts
        qn = facts.qualname(func)
        if qn is not None:
            return not qn.startswith("torch.")
        if _is_self_attr(func):
            made = self._self_attr(at, cast(cst.Attribute, func).attr.value)
        elif isinstance(func, cst.Name):
            b = facts.lookup(func.value, at)
            made = b.value if b is not None else None
        else:
            return False
        if not isinstance(made, cst.Call):
            return False
        mq = facts.callee(made)
        return mq is not None and not mq.startswith("torch.")

    def _made(self, name: str, at: cst.CSTNode, _depth: int = 0) -> cst.BaseExpression | None:
        """What ``name`` holds at ``at``; for a parameter of the enclosing function, what every call of that
        function in the file gives it (`train(model, ...)`; a parameter of the caller in turn is followed to
        its own callers), or, when the file never calls it, the module-level object of the same name
        (`model = Net()` beside `def train(model, ...)`)."""
        facts = self.ctx.facts
        b = facts.lookup(name, at)
        if b is None:
            return None
        w = facts.where.get(at)
        fn = w.function if w is not None else None
        param = isinstance(fn, cst.FunctionDef) and any(
            p.name is b.target for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params))
        if not param or not isinstance(fn, cst.FunctionDef):
            return b.value if isinstance(b.value, cst.BaseExpression) else None
        graph = call_graph(facts)
        sites = graph.callers(fn)
        values = []
        for site in sites:
            given = graph.argument_of(site, fn, name)
            if isinstance(given, cst.Name):
                g = facts.lookup(given.value, site)
                caller = facts.where[site].function if site in facts.where else None
                if g is not None and _depth < 3 and isinstance(caller, cst.FunctionDef) and is_parameter(caller, g):
                    given = self._made(given.value, site, _depth + 1)  # the caller's own parameter
                else:
                    given = g.value if g is not None else None
            values.append(given)
        if not sites and facts.where.get(fn) is not None and facts.where[fn].function is None:
            values = [b.value for b in facts.bindings.get(None, {}).get(name, ())]
        if not values or any(not isinstance(v, cst.BaseExpression) for v in values):
            return None
        texts = {self.ctx.code(v) for v in values}
        return values[0] if len(texts) == 1 else None

    def _parameter_default(self, name: str, at: cst.CSTNode) -> cst.BaseExpression | None:
        """The default of parameter ``name`` of the `__init__` of the class around ``at``
        (`def __init__(self, loss_func=CrossEntropyLoss())`), when the class body assigns it to `self`."""
        w = self.ctx.facts.where.get(at)
        cls = w.inside(cst.ClassDef) if w is not None else None
        init = call_graph(self.ctx.facts).methods(cls).get("__init__") if cls is not None else None
        if init is None:
            return None
        for p in (*init.params.params, *init.params.kwonly_params):
            if p.name.value == name:
                return p.default
        return None

    def _built_by(self, made, depth: int):
        """A model a function of the file builds and returns (`model = build_model(...)`, `return model`):
        the expression the returned name was made from, in that function."""
        facts = self.ctx.facts
        if not (isinstance(made, cst.Call) and isinstance(made.func, cst.Name)) or depth > 3:
            return made
        b = facts.lookup(made.func.value, made) if made in facts.where else None
        fn = b.value if b is not None else None
        if not isinstance(fn, cst.FunctionDef):
            return made
        ret = facts._single_return(fn)
        if ret is None:
            return made
        value = ret.value
        if isinstance(value, cst.Name):
            rb = facts.lookup(value.value, ret)
            value = rb.value if rb is not None and isinstance(rb.value, cst.BaseExpression) else None
        return value if isinstance(value, cst.Call) else made

    def _added_modules(self, seq: cst.Call) -> list:
        """The layers `model.add_module(name, layer)` / `model.append(layer)` add, in order, to an
        `nn.Sequential()` made empty and bound to a name, in the function that makes it."""
        facts = self.ctx.facts
        holder = next((a for a in facts.holders(seq) if isinstance(a, cst.Assign) and len(a.targets) == 1
                       and isinstance(a.targets[0].target, cst.Name)), None)
        if holder is None:
            return []
        name, scope = cast(cst.Name, holder.targets[0].target).value, facts.where[holder].function
        layers = []
        for c in call_graph(facts).calls_in.get(scope, ()):
            f = c.func
            if (isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value == name
                    and f.attr.value in ("add_module", "append") and c.args):
                layers.append(c.args[-1].value)
        return layers

    def _forward_activation(self, cls: cst.ClassDef, depth: int) -> tuple[str, cst.CSTNode] | None:
        """The activation every `return` of `cls.forward` applies, if one does."""
        facts = self.ctx.facts
        fwd = next((st for st in cls.body.body if isinstance(st, cst.FunctionDef) and st.name.value == "forward"), None)
        if fwd is None:
            return None
        found = None
        for ret in iter_nodes(fwd.body, (cst.Return,)):
            w = facts.where.get(ret)
            if w is None or w.function is not fwd:
                continue
            act = self._activation(ret.value, ret, depth + 1) if ret.value is not None else None
            if act is None or (found is not None and found[0] != act[0]):
                return None
            found = act
        return found

    def _self_attr(self, at: cst.CSTNode, attr: str) -> cst.BaseExpression | None:
        """The value assigned to `self.<attr>` in the class enclosing `at` (one assignment only)."""
        facts = self.ctx.facts
        w = facts.where.get(at)
        cls = w.inside(cst.ClassDef) if w is not None else None
        if cls is None:
            return None
        cache = self.__dict__.setdefault("_attrs", {})
        if cls not in cache:
            values: dict[str, list] = {}
            for a in facts.index.get("Assign", ()):
                if facts.where[a].inside(cst.ClassDef) is not cls:
                    continue
                for t in a.targets:
                    if _is_self_attr(t.target):
                        values.setdefault(t.target.attr.value, []).append(a.value)
            cache[cls] = values
        vals = cache[cls].get(attr, [])
        return vals[0] if len(vals) == 1 else None

    def _check_torch(self, call: cst.Call, loss: tuple[str, str]) -> None:
        name, expected = loss
        inp = argument(call, "input", 0)
        found = self._activation(inp, call)
        if found is None:
            return
        act, act_node = found
        if expected == "softmax" and act == "softmax":
            why = (f"`{name}` applies log-softmax itself: on probabilities the loss is squashed into a narrow range, "
                   "the gradients almost vanish and training plateaus well above zero loss")
            hint = f"give `{name}` the raw logits (drop the softmax; apply it only for predictions)"
        elif expected == "sigmoid" and act == "sigmoid":
            why = (f"`{name}` applies the sigmoid itself: the probabilities pass through a second sigmoid, which "
                   "squashes them into (0.5, 0.73), so the loss cannot approach zero and training stalls")
            hint = f"give `{name}` the raw logits (drop the sigmoid; apply it only for predictions)"
        elif expected in ("softmax", "softmax-nll") and act == "softmax-log":
            act = "softmax"
            why = (f"the log-softmax of a softmax reaches `{name}`: the softmax is applied twice, so the log-probabilities "
                   "are squashed into a narrow range, the gradients almost vanish and training plateaus well above "
                   "zero loss")
            hint = "drop the inner softmax: `log_softmax` of the raw logits (or `cross_entropy` on the logits)"
        elif expected == "softmax-nll" and act == "softmax":
            why = (f"`{name}` expects log-probabilities, but gets probabilities: the loss becomes −p (negative, "
                   "between −1 and 0) with weak gradients, and the model learns poorly")
            hint = "use `F.log_softmax(...)` before `NLLLoss`, or `CrossEntropyLoss` on the raw logits"
        else:
            return
        reported = self.__dict__.setdefault("_reported", set())
        if id(act_node) in reported:
            return  # one activation, one finding (however many losses it reaches)
        reported.add(id(act_node))
        via = "" if act_node is inp else f" (through `{self.ctx.code(inp)}`)"
        self.report(act_node, f"{act} output given to `{name}`{via}: {why}", hint=hint)

    # -- keras -------------------------------------------------------------------------------
    def _check_keras(self, call: cst.Call) -> None:
        facts = self.ctx.facts
        loss = argument(call, "loss", 1)
        if not isinstance(loss, cst.Call):
            return
        lq = facts.callee(loss) or ""
        if not (lq.startswith("keras.") and lq.rsplit(".", 1)[-1] in _KERAS_FROM_LOGITS):
            return
        fl = keyword(loss, "from_logits")
        if fl is None or facts.constant(fl.value, call) is not True:
            return
        model = facts.value_of(cast(cst.Attribute, call.func).value, call)
        if not isinstance(model, ModelValue) or model.call is None:
            return
        if facts.callee(model.call) not in ("keras.Sequential", "keras.models.Sequential"):
            return
        layers = argument(model.call, "layers", 0)
        if not isinstance(layers, (cst.List, cst.Tuple)) or not layers.elements:
            return
        last = layers.elements[-1].value
        act = self._keras_activation(last)
        if act is None:
            return
        self.report(
            fl,
            f"the model's last layer applies {act}, but `{lq.rsplit('.', 1)[-1]}(from_logits=True)` treats its "
            f"outputs as logits and applies {act} again: the loss is squashed, gradients shrink and accuracy plateaus",
            hint=f"either drop the {act} from the last layer (keep `from_logits=True`), or keep it and use "
            "`from_logits=False`",
        )

    def _keras_activation(self, layer) -> str | None:
        facts = self.ctx.facts
        if not isinstance(layer, cst.Call):
            return None
        qn = facts.callee(layer) or ""
        short = qn.rsplit(".", 1)[-1]
        if qn.startswith("keras.") and short in ("Softmax",):
            return "softmax"
        if qn.startswith("keras.") and short in ("Dense", "Activation"):
            act = argument(layer, "activation", 1 if short == "Dense" else 0)
            v = facts.constant(act, layer) if act is not None else None
            if v in ("softmax", "sigmoid"):
                return v
            aq = facts.qualname(act) if act is not None else None
            if aq and aq.startswith("keras.") and aq.rsplit(".", 1)[-1] in ("softmax", "sigmoid"):
                return aq.rsplit(".", 1)[-1]
        return None


#: heads with several logits outputs, and their label columns in output order
_MULTI_OUTPUT_HEADS = {"question-answering": (("start_positions", "start_logits"), ("end_positions", "end_logits"))}


@register
class SingleLossMultiOutput(Rule):
    """A compiled Keras loss on a transformers model with several outputs (question answering) trained
    with a single label tensor: only the first output gets a loss."""

    code = "TL404"
    name = "single-loss-multi-output"
    severity = Severity.ERROR
    #: a `*ForQuestionAnswering` model compiled with a loss, `fit` on `to_tf_dataset(label_cols=...)`
    gate = (("compile",), ("fit",), ("to_tf_dataset",), ("label_cols",), ("*ForQuestionAnswering",))

    def visit_Call(self, node: cst.Call) -> None:
        compiled = compiled_loss(self.ctx, node)
        if compiled is None:
            return
        loss, model = compiled
        if not model.transformers or model.head not in _MULTI_OUTPUT_HEADS:
            return
        outputs = _MULTI_OUTPUT_HEADS[model.head]
        for ds in fit_datasets(self.ctx, model):
            labels = ds.label_cols
            if isinstance(labels, list) and len(labels) == 1:
                labels = labels[0]
            if not isinstance(labels, str):
                continue
            names = ", ".join(o for _, o in outputs)
            self.report(
                loss,
                f"`{model.cls}` has {len(outputs)} outputs ({names}) but is trained with one label tensor "
                f"(`label_cols={ds.label_cols!r}`): transformers matches a single label to the first output only, "
                f"so `{outputs[-1][1]}` never gets a loss and never learns — no error, and the predicted spans are "
                "garbage",
                hint=f"give one label per output: `label_cols={[c for c, _ in outputs]!r}` (the loss is applied to "
                "each), or drop `loss=` and keep the labels in the inputs to use the model's internal loss",
            )
            return
