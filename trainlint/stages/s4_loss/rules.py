"""TL4xx: loss and labels — where the labels travel and what the loss expects."""

from __future__ import annotations


import libcst as cst

from trainlint import codemod, knowledge
from trainlint.facts import (
    ModelValue,
    TFDatasetValue,
    argument,
    keyword,
    literal,
)
from trainlint.facts.activations import activations
from trainlint.facts.models import compiled_model
from trainlint.facts.objects import Module, Output
from trainlint.facts.program import program
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
    measured_from = 4
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
                symptom = "this loss replaces the model's own, on its logits"
                why = ("training runs but learns badly: the Keras loss replaces the model's own loss (and a probability "
                       "loss on logits stalls, TL402)")
            else:
                symptom = "Keras gets no target"
                why = 'training fails with "No gradients provided for any variable" / "Target data is missing"'
            self.report(
                loss,
                f"`compile(loss=...)` but the labels `{labels[0]}` travel inside the feature dict (no `label_cols`): "
                f"{symptom}",
                hint=f"{why}; either drop `loss=` to use the model's internal loss, or move the labels out: "
                f"`to_tf_dataset(columns=[...], label_cols={labels[0]!r})`",
            )
            return


@register
class LossExpectsProbabilities(Rule):
    """A cross-entropy loss without `from_logits=True` on a transformers model, whose outputs are logits."""

    code = "TL402"
    name = "loss-expects-probabilities"
    severity = Severity.ERROR
    measured_from = 4
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
            f"`{_short(self.ctx.code(loss))}` expects probabilities, but `{model.cls}` outputs logits: training "
            "stalls at a high loss",
            hint="the loss treats the logits as probabilities (clipped and renormalised), so its gradients are wrong; "
            f"use `keras.losses.{name}(from_logits=True)` (or drop `loss=` to use the model's internal loss)",
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

_KERAS_FROM_LOGITS = frozenset({"SparseCategoricalCrossentropy", "CategoricalCrossentropy", "BinaryCrossentropy",
                                "BinaryFocalCrossentropy", "CategoricalFocalCrossentropy"})
#: what each torch logits loss expects of its input, and why an activation before it is wrong
_TORCH_MISMATCH = {
    ("softmax", "softmax"): ("softmax output given to `{name}`{via}, which applies log-softmax itself: the softmax is "
                             "applied twice",
                             "on probabilities the loss is squashed into a narrow range, the gradients almost vanish and "
                             "training plateaus well above zero loss; give `{name}` the raw logits (drop the softmax; "
                             "apply it only for predictions)"),
    ("sigmoid", "sigmoid"): ("sigmoid output given to `{name}`{via}, which applies the sigmoid itself: the sigmoid is "
                             "applied twice",
                             "the probabilities pass through a second sigmoid, which squashes them into (0.5, 0.73), so "
                             "the loss cannot approach zero and training stalls; give `{name}` the raw logits (drop the "
                             "sigmoid; apply it only for predictions)"),
    ("softmax", "softmax-log"): ("softmax output given to `{name}`{via} inside a log-softmax: the softmax is applied "
                                 "twice",
                                 "the log-probabilities are squashed into a narrow range, the gradients almost vanish "
                                 "and training plateaus well above zero loss; drop the inner softmax: `log_softmax` of "
                                 "the raw logits (or `cross_entropy` on the logits)"),
    ("softmax-nll", "softmax-log"): ("softmax output given to `{name}`{via} inside a log-softmax: the softmax is "
                                     "applied twice",
                                     "the log-probabilities are squashed into a narrow range and training plateaus; "
                                     "drop the inner softmax: `log_softmax` of the raw logits"),
    ("softmax-nll", "softmax"): ("softmax output given to `{name}`{via}, which expects log-probabilities: the loss "
                                 "becomes -p and learns poorly",
                                 "on probabilities the loss is −p (between −1 and 0) with weak gradients; use "
                                 "`F.log_softmax(...)` before `NLLLoss`, or `CrossEntropyLoss` on the raw logits"),
}
#: libraries that train a module they are given with a criterion they are given, on its output (skorch's
#: `NeuralNet.get_loss`: `criterion_(y_pred, y_true)`, `y_pred` the module's forward; a wrapper of it)
_CRITERION_WRAPPERS = ("skorch.NeuralNet", "skorch.net.NeuralNet", "skorch.NeuralNetClassifier",
                       "skorch.classifier.NeuralNetClassifier", "ray_skorch.RayTrainNeuralNet")


def _short(code: str) -> str:
    return code if len(code) <= 30 else code[:27] + "..."


@register
class ActivationBeforeLoss(Rule):
    """Probabilities given to a loss that expects logits: softmax before `CrossEntropyLoss`, sigmoid before
    `BCEWithLogitsLoss`, softmax (not log-softmax) before `NLLLoss`, a softmax/sigmoid output layer with
    a Keras loss `from_logits=True`."""

    code = "TL403"
    name = "activation-before-loss"
    severity = Severity.ERROR
    measured_from = 4
    probe = ("Keras: on one batch, the loss `from_logits=True` next to the same loss on the probabilities the last "
             "layer's softmax/sigmoid gives.")
    #: torch: an activation (a softmax may be the exponential of a log-softmax) and a logits loss; Keras: a
    #: `from_logits=True` loss class on a Sequential whose last layer may say "softmax" in a string only
    #: (hence `from_logits` beside the activations); a criterion wrapper is given the loss class by name
    gate = (
        ("softmax", "sigmoid", "Softmax", "Sigmoid", "expit", "log_softmax", "LogSoftmax", "from_logits"),
        ("cross_entropy", "binary_cross_entropy_with_logits", "nll_loss", "CrossEntropyLoss", "BCEWithLogitsLoss",
         "NLLLoss", *sorted(_KERAS_FROM_LOGITS)),
    )

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._reported: set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        acts = activations(self.ctx.facts)
        loss = acts.loss_kind(node)
        if loss is not None:
            name, expects = loss  # premise 1: a logits loss (or NLLLoss: log-probabilities)
            inp = argument(node, "input", 0)  # premise 3: the activation reaches its prediction argument
            found = acts.activation(inp, node)  # premise 2: on every path
            if found is not None:
                self._report_torch(name, expects, found, inp)
            return
        qn = self.ctx.facts.callee(node) or ""
        if qn in _CRITERION_WRAPPERS:
            self._check_wrapper(node, qn)
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value == "compile":
            p = program(self.ctx.facts)
            self._check_keras(p.loss(argument(node, "loss", 1), node), p.module(node.func.value, node),
                              self.ctx.code(node.func.value))
        else:
            p = program(self.ctx.facts)
            loss_obj = p.loss(node.func, node) if isinstance(node.func, (cst.Name, cst.Attribute)) else None
            if loss_obj is not None and loss_obj.framework == "keras" and not loss_obj.functional:
                y_pred = p.tensor(argument(node, "y_pred", 1), node)  # `loss_fn(y_true, y_pred)`
                if y_pred is not None:
                    self._check_keras(loss_obj, y_pred, self.ctx.code(argument(node, "y_pred", 1)))

    def _report_torch(self, name: str, expects: str, found: tuple[str, cst.CSTNode], inp) -> None:
        act, act_node = found
        texts = _TORCH_MISMATCH.get((expects, act))
        if texts is None or id(act_node) in self._reported:
            return  # one activation, one finding (however many losses it reaches)
        self._reported.add(id(act_node))
        via = "" if act_node is inp else f" (through `{_short(self.ctx.code(inp))}`)"
        self.report(act_node, texts[0].format(name=name, via=via), hint=texts[1].format(name=name))

    def _check_wrapper(self, call: cst.Call, qn: str) -> None:
        """Premises 1-3 through a library that trains the module it is given with the criterion it is given
        (`NeuralNetClassifier(MyModule, criterion=nn.CrossEntropyLoss)`): the criterion applies log-softmax and
        the module's `forward` returns a softmax on every path."""
        facts = self.ctx.facts
        crit = argument(call, "criterion", 1 if qn.endswith(".NeuralNet") else None)
        if isinstance(crit, cst.Call) and not crit.args:
            crit = crit.func  # an instance, `nn.CrossEntropyLoss()`
        name = (facts.qualname(crit) or "").replace("torch.nn.modules.loss.", "torch.nn.") if crit is not None else ""
        if name != "torch.nn.CrossEntropyLoss":
            return
        module = argument(call, "module", 0)
        acts = activations(facts)
        b = facts.lookup(module.value, call) if isinstance(module, cst.Name) else None
        found: tuple[str, cst.CSTNode] | None
        if b is not None and isinstance(b.value, cst.ClassDef):
            found = acts.forward_activation(b.value, 0)
        elif module is None:
            return
        else:
            layer = acts.layer_activation(module, call, 0)
            found = (layer[0], layer[1] or module) if layer is not None else None
        if found is None or found[0] != "softmax" or id(found[1]) in self._reported:
            return
        self._reported.add(id(found[1]))
        wrapper = qn.rsplit(".", 1)[-1]
        self.report(found[1], f"softmax output of `{_short(self.ctx.code(module))}` goes to `CrossEntropyLoss` in "
                              f"`{wrapper}`, which applies log-softmax itself: the softmax is applied twice",
                    hint=f"`{wrapper}` computes `criterion(module(X), y)`: on probabilities the loss is squashed and "
                    "training plateaus; return the raw logits from `forward` (the classifier applies the softmax "
                    "for `predict_proba`)")

    # -- keras -------------------------------------------------------------------------------
    def _check_keras(self, loss, output, what: str) -> None:
        """Premise 1: a Keras loss `from_logits=True`; premise 2: the model (or the tensor) it is computed on
        outputs softmax or sigmoid probabilities on every path; premise 3: compiled on that model, or called
        on that tensor as `y_pred`."""
        if loss is None or loss.framework != "keras" or loss.expects is not Output.LOGITS:
            return
        kind = getattr(output, "output", None)
        act = {Output.SIGMOID: "sigmoid", Output.PROBABILITIES: "softmax"}.get(kind) if isinstance(kind, Output) else None
        if act is None:
            return
        node = loss.node
        fl = keyword(node, "from_logits") if isinstance(node, cst.Call) else None
        at = fl if fl is not None else node
        if at is None or id(at) in self._reported:
            return
        self._reported.add(id(at))
        applies = "sigmoid" if loss.targets == "binary" else "softmax"
        again = " again" if applies == act else ""
        subject = f"`{_short(what)}` ends in a {act}" if isinstance(output, Module) else f"`{_short(what)}` is a {act} output"
        self.report(
            at,
            f"{subject}, but `{loss.name}(from_logits=True)` takes its values for logits and applies {applies} to them"
            f"{again}",
            hint=f"the loss is computed on squashed values, gradients shrink and accuracy plateaus; either drop the "
            f"{act} from the last layer (keep `from_logits=True`), or keep it and use `from_logits=False`",
        )



#: heads with several logits outputs, and their label columns in output order
_MULTI_OUTPUT_HEADS = {"question-answering": (("start_positions", "start_logits"), ("end_positions", "end_logits"))}


@register
class SingleLossMultiOutput(Rule):
    """A compiled Keras loss on a transformers model with several outputs (question answering) trained
    with a single label tensor: only the first output gets a loss."""

    code = "TL404"
    name = "single-loss-multi-output"
    severity = Severity.ERROR
    measured_from = 4
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
                f"`{model.cls}` has {len(outputs)} outputs ({names}) but one label tensor (`label_cols="
                f"{ds.label_cols!r}`): `{outputs[-1][1]}` never gets a loss",
                hint="transformers matches a single label to the first output only: the other never learns — no "
                f"error, and the predicted spans are garbage; give one label per output: `label_cols="
                f"{[c for c, _ in outputs]!r}` (the loss is applied to each), or drop `loss=` and keep the labels in "
                "the inputs to use the model's internal loss",
            )
            return
