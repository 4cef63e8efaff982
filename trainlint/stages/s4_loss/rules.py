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
from trainlint.facts.losses import LossSite, fit_labels, loss_site
from trainlint.facts.objects import Module, Output, Tensor
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


# ---------------------------------------------------------------------------------------------
# TL409, TL410, TL412: the output activation against what the loss expects.

#: the Keras cross-entropies, as gate words (a loss given as a string needs `compile`)
_KERAS_CE_WORDS = ("compile", "BinaryCrossentropy", "CategoricalCrossentropy", "SparseCategoricalCrossentropy",
                   "BinaryFocalCrossentropy", "CategoricalFocalCrossentropy", "binary_crossentropy",
                   "categorical_crossentropy", "sparse_categorical_crossentropy", "binary_focal_crossentropy",
                   "categorical_focal_crossentropy")
_TORCH_LOSS_WORDS = ("CrossEntropyLoss", "cross_entropy", "NLLLoss", "nll_loss", "BCELoss", "binary_cross_entropy",
                     "BCEWithLogitsLoss", "binary_cross_entropy_with_logits", "MultiLabelSoftMarginLoss",
                     "multilabel_soft_margin_loss")


def _keras_layer(facts, node: cst.CSTNode | None) -> bool:
    """``node`` makes a Keras layer (or calls one): `Dense(1)`, `Activation("softmax")(x)`."""
    if not isinstance(node, cst.Call):
        return False
    q = facts.callee(node) or ""
    if not q and isinstance(node.func, cst.Call):
        q = facts.callee(node.func) or ""
    return q.startswith("keras.layers.")


def _output_of(site: LossSite) -> tuple[Output | None, cst.CSTNode | None, Output | None, cst.CSTNode | None,
                                        int | None]:
    """(output, origin, scores, scores origin, units) of what the loss is computed on."""
    v = site.values
    if isinstance(v, (Module, Tensor)):
        return v.output, v.origin, v.scores, v.scores_origin, v.units
    return None, None, None, None, None


@register
class KerasLogitsIntoProbabilityLoss(Rule):
    """A plain or subclassed Keras model whose last layer is linear, trained with a cross-entropy that expects
    probabilities (no `from_logits=True`)."""

    code = "TL412"
    name = "keras-logits-into-probability-loss"
    severity = Severity.ERROR
    default = False
    measured_from = 4
    #: a Keras cross-entropy (a string one needs `compile`) on a model whose linear last layer is a Dense or a
    #: convolution of the file
    gate = (_KERAS_CE_WORDS, ("Dense", "Conv1D", "Conv2D", "Conv3D"))

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        site = loss_site(facts, node)
        # premise 2: a Keras cross-entropy that expects probabilities (`from_logits` absent or False)
        if site is None or site.loss.framework != "keras" or site.loss.expects not in (Output.PROBABILITIES,
                                                                                        Output.SIGMOID):
            return
        output, origin, _, _, _ = _output_of(site)
        # premises 1 and 3: what the loss is computed on is a Keras layer's linear output (no activation)
        if output is not Output.LOGITS or not _keras_layer(facts, origin) or origin is None:
            return
        if isinstance(site.values, Module) and site.values.framework != "keras":
            return
        layer = _short(self.ctx.code(origin))
        binary = site.loss.targets == "binary"
        self.report(
            site.at,
            f"`{layer}` has no activation, but `{site.loss.name}` (no `from_logits=True`) takes its raw "
            f"outputs for {'probabilities' if binary else 'a probability distribution'}",
            hint="Keras computes the loss as if the scores were probabilities: it "
            + ("clips them to [1e-7, 1 - 1e-7], so the gradient vanishes outside that range"
               if binary else "divides them by their sum and clips them, so negative scores give nonsense")
            + " and the loss barely moves. Pass `from_logits=True` to the loss (`keras.losses."
            + _KERAS_LOSS_CLASS.get(site.loss.name, site.loss.name)
            + "(from_logits=True)`), or give the last layer "
            + ('`activation="sigmoid"`' if binary else '`activation="softmax"`'),
        )


_KERAS_LOSS_CLASS = {
    "binary_crossentropy": "BinaryCrossentropy", "categorical_crossentropy": "CategoricalCrossentropy",
    "sparse_categorical_crossentropy": "SparseCategoricalCrossentropy",
    "binary_focal_crossentropy": "BinaryFocalCrossentropy", "categorical_focal_crossentropy": "CategoricalFocalCrossentropy",
}

#: (framework, what the values are, what the loss expects) → (what is wrong, why and what to do); Keras
#: losses here take probabilities (`from_logits=False`: their linear outputs are TL412's), torch losses name theirs
_MISMATCH = {
    ("keras", Output.SIGMOID, Output.PROBABILITIES): (
        "independent sigmoid scores, but `{loss}` expects one softmax distribution over the classes",
        "the loss renormalises scores that do not sum to 1 and trains on them; the outputs are no class "
        "probabilities. Use `softmax` for one class out of several, or a binary cross-entropy for several labels"),
    ("keras", Output.NON_NEGATIVE, Output.PROBABILITIES): (
        "ReLU outputs, but `{loss}` expects one softmax distribution over the classes",
        "the loss divides the outputs by their sum: a row of zeros gives NaN, and the scores are no probabilities; "
        "use `softmax` on the last layer"),
    ("keras", Output.NON_NEGATIVE, Output.SIGMOID): (
        "ReLU outputs, but `{loss}` expects probabilities in (0, 1)",
        "the loss clips values above 1 to 1 - 1e-7: their gradient is zero and the loss stalls; use `sigmoid` on "
        "the last layer (or a loss with `from_logits=True` on a linear one)"),
    ("torch", Output.SIGMOID, Output.LOGITS): (
        "sigmoid outputs, but `{loss}` takes logits and applies log-softmax to them",
        "a softmax over values in (0, 1) is nearly uniform: the loss cannot approach 0 and training stalls; give "
        "`{loss}` the raw scores (drop the sigmoid), or use `BCEWithLogitsLoss` for independent labels"),
    ("torch", Output.SIGMOID, Output.LOG_PROBABILITIES): (
        "sigmoid outputs, but `{loss}` expects log-probabilities",
        "NLLLoss returns minus the value at the target: on probabilities it is -p, no cross-entropy; use "
        "`log_softmax` (or `CrossEntropyLoss` on the raw scores)"),
    ("torch", Output.LOGITS, Output.LOG_PROBABILITIES): (
        "raw scores of a linear layer, but `{loss}` expects log-probabilities",
        "NLLLoss returns minus the score at the target: it falls without bound as that score grows and never "
        "compares the classes; apply `log_softmax` first, or use `CrossEntropyLoss` on the raw scores"),
    ("torch", Output.LOGITS, Output.SIGMOID): (
        "raw scores of a linear layer, but `{loss}` expects probabilities in [0, 1]",
        'torch raises "all elements of input should be between 0 and 1" on the first score outside it; use '
        "`BCEWithLogitsLoss` on the raw scores, or apply `torch.sigmoid` first"),
    ("torch", Output.LOG_PROBABILITIES, Output.SIGMOID): (
        "log-probabilities, but `{loss}` expects probabilities in [0, 1]",
        'torch raises "all elements of input should be between 0 and 1" on negative values; use `NLLLoss` on '
        "log-probabilities, or `BCEWithLogitsLoss` on raw scores"),
}


@register
class OutputActivationLossMismatch(Rule):
    """The activation of the model's last layer is not what the loss expects: a sigmoid into a categorical
    cross-entropy or `CrossEntropyLoss`, a linear output into `NLLLoss` or `BCELoss`, a one-unit sigmoid into a
    categorical loss."""

    code = "TL409"
    name = "output-activation-loss-mismatch"
    severity = Severity.ERROR
    default = False
    measured_from = 4
    #: a loss of Keras (a string one needs `compile`), torch or a functional Keras one
    gate = ((*_KERAS_CE_WORDS, *_TORCH_LOSS_WORDS),)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._reported: set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        site = loss_site(facts, node)
        if site is None or site.loss.expects is None or site.loss.framework not in ("keras", "torch"):
            return
        output, origin, _, _, units = _output_of(site)
        if output is None or origin is None:
            return
        if site.loss.framework == "keras" and not (_keras_layer(facts, origin) or self._activation_call(origin)):
            return  # premise 1: the values come from a Keras layer or an activation function the source shows
        expects = site.loss.expects
        if site.loss.framework == "keras" and expects is Output.LOGITS:
            return  # probabilities into a loss `from_logits=True`: TL403 (ReLU outputs: TL410)
        key = (site.loss.framework, output, expects)
        name = site.loss.name
        if output is Output.SIGMOID and expects is Output.PROBABILITIES and units == 1:
            sparse = site.loss.targets == "class ids"
            self._report(site, site.at, f"one sigmoid unit into `{site.loss.name}`: a categorical cross-entropy "
                         "over one unit is constant, so nothing learns",
                         "the loss normalises the outputs over the classes axis, where one unit is always the whole "
                         "distribution: the loss is 0 with zero gradients"
                         + (" (and a label 1 is out of the valid range [0, 1))" if sparse else "")
                         + "; use `binary_crossentropy` for a binary output")
            return
        texts = _MISMATCH.get(key)
        if texts is None:
            return
        # a compiled model: where its last activation is set (the fix is there, or in the loss beside it)
        self._report(site, origin if site.compiled else site.at, texts[0].format(loss=name), texts[1].format(loss=name))

    def _activation_call(self, node: cst.CSTNode) -> bool:
        return isinstance(node, cst.Call) and (self.ctx.facts.callee(node) or "").startswith(
            ("tensorflow.", "keras.activations.", "keras.ops."))

    def _report(self, site: LossSite, at: cst.CSTNode, message: str, hint: str) -> None:
        if id(at) in self._reported:
            return
        self._reported.add(id(at))
        what = _short(self.ctx.code(site.prediction)) if site.prediction is not None else "the prediction"
        self.report(at, message if message.startswith("one ") else f"`{what}` gives {message}", hint=hint)


@register
class ReluBeforeLogitsLoss(Rule):
    """A final ReLU (an output that cannot be negative) fed to a loss that takes logits (`CrossEntropyLoss`,
    `BCEWithLogitsLoss`, a Keras loss `from_logits=True`), or under the log-softmax / softmax the loss is given."""

    code = "TL410"
    name = "relu-before-logits-loss"
    severity = Severity.ERROR
    default = False
    measured_from = 4
    #: a ReLU (a layer, a function, or `activation="relu"`: a Dense or a convolution) and a loss
    gate = (("ReLU", "ReLU6", "relu", "relu6", "Dense", "Conv1D", "Conv2D", "Conv3D"),
            (*_KERAS_CE_WORDS, *_TORCH_LOSS_WORDS))

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._reported: set[int] = set()

    def visit_Call(self, node: cst.Call) -> None:
        site = loss_site(self.ctx.facts, node)
        if site is None or site.loss.framework not in ("keras", "torch") or site.loss.expects is None:
            return
        output, origin, scores, scores_origin, _ = _output_of(site)
        expects = site.loss.expects
        if output is Output.NON_NEGATIVE and expects is Output.LOGITS:
            relu, under = origin, ""  # premise 1-2: the loss normalises the ReLU's output itself
        elif scores is Output.NON_NEGATIVE and output in (Output.LOG_PROBABILITIES, Output.PROBABILITIES,
                                                          Output.SIGMOID) and (
                output is expects or (output is Output.LOG_PROBABILITIES and expects is Output.LOGITS)):
            relu, under = scores_origin, {Output.LOG_PROBABILITIES: "log-softmax", Output.PROBABILITIES: "softmax",
                                          Output.SIGMOID: "sigmoid"}[output]
        else:
            return
        if relu is None or id(relu) in self._reported:
            return
        self._reported.add(id(relu))
        loss = site.loss.name
        where = f"under the {under} given to `{loss}`" if under else f"before `{loss}`, which takes logits"
        self.report(
            relu,
            f"`{_short(self.ctx.code(relu))}` is the last activation {where}: the class scores can never be "
            "negative",
            hint="scores clipped at 0 cannot push a wrong class below the others, every class the ReLU silences gets "
            "the same score, and a unit stuck below 0 gets no gradient at all (dead units): training stalls. Drop "
            "the final ReLU: the loss (or the softmax) wants raw scores",
        )


@register
class LabelEncodingLossMismatch(Rule):
    """Labels encoded the way the loss does not take: integer class ids into `categorical_crossentropy` (one-hot
    expected), one-hot vectors into `sparse_categorical_crossentropy` or `NLLLoss` (class ids expected)."""

    code = "TL408"
    name = "label-encoding-loss-mismatch"
    severity = Severity.ERROR
    default = False
    measured_from = 4
    #: Keras: a cross-entropy (strings need `compile`) and a `fit`; torch: `one_hot` and a class-id loss
    gate = ((*_KERAS_CE_WORDS, "CrossEntropyLoss", "cross_entropy", "NLLLoss", "nll_loss"),
            ("fit", "fit_generator", "one_hot"))

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        site = loss_site(facts, node)
        if site is None:
            return
        if site.compiled:
            self._check_keras(site)
        elif site.loss.framework == "torch" and site.target is not None and site.loss.targets == "class ids":
            t = program(facts).of(site.target, node)
            # premise 1: one-hot vectors, straight from `one_hot` (int64: CrossEntropyLoss takes float class
            # probabilities only); premise 2: a loss that takes class ids
            if not isinstance(t, Tensor) or t.output is not Output.ONE_HOT or not isinstance(t.node, cst.Call):
                return
            if site.loss.name in ("CrossEntropyLoss", "cross_entropy") and not (
                    facts.callee(t.node) or "").endswith(".one_hot"):
                return
            self.report(
                node,
                f"`{_short(self.ctx.code(site.target))}` holds one-hot vectors, but `{site.loss.name}` takes class "
                "ids: the first step fails",
                hint="the target is made by `one_hot` (int64, one vector a sample): "
                + ("NLLLoss wants one class index a sample (`multi-target not supported`)"
                   if site.loss.name in ("NLLLoss", "nll_loss") else
                   'CrossEntropyLoss reads an int64 target as class ids of shape (N,) and fails ("Expected '
                   'floating point type for target with class probabilities")')
                + "; give the loss the class ids themselves (`labels`, or `onehot.argmax(dim=1)`)",
            )

    def _check_keras(self, site: LossSite) -> None:
        targets = site.loss.targets  # premise 2: the loss takes one-hot vectors, or class ids
        if targets not in ("one-hot", "class ids"):
            return
        model = site.values if isinstance(site.values, Module) else None
        if targets == "one-hot" and model is not None and model.units == 1:
            return  # one output unit: a categorical loss over it is TL409's
        for kind, made in fit_labels(self.ctx.facts, site):  # premises 1 and 3: the labels `fit` trains it on
            if (kind, targets) not in ((Output.ONE_HOT, "class ids"), (Output.CLASS_IDS, "one-hot")):
                continue
            made_by = _short(self.ctx.code(made))
            if kind is Output.ONE_HOT:
                message = (f"`{site.loss.name}` takes integer class ids, but the labels are one-hot vectors "
                           f"(`{made_by}`)")
                hint = ("the sparse loss wants one class index a sample: fit fails on the label shape; use "
                        "`categorical_crossentropy` with one-hot labels, or keep the sparse loss and the integer "
                        "labels (drop `to_categorical`, `class_mode=\"sparse\"`)")
            else:
                message = (f"`{site.loss.name}` takes one-hot vectors, but the labels are integer class ids "
                           f"(`{made_by}`)")
                hint = ("the categorical loss wants one vector of class probabilities a sample: fit fails on the "
                        "label shape (or, with an output of one unit, trains on nothing); use "
                        "`sparse_categorical_crossentropy` with integer labels, or one-hot encode them "
                        "(`keras.utils.to_categorical`)")
            self.report(site.at, message, hint=hint)
            return
