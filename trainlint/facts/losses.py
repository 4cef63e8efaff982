"""Where a loss is computed, and on what: the loss (:class:`~trainlint.facts.objects.Loss`) and the values it
is given as predictions, asked of the program model.

``loss_site(facts, call)`` answers for a call that computes or sets a loss:

- `model.compile(loss=...)` (Keras): the loss, and the compiled model (a :class:`Module`);
- a Keras loss object or function called `loss_fn(y_true, y_pred)` / `sparse_categorical_crossentropy(y, p,
  from_logits=True)`: the loss, and what `y_pred` is (a :class:`Tensor`);
- a torch loss called `criterion(input, target)` / `F.cross_entropy(input, target)`: the loss, and its input;
- TensorFlow's `tf.nn.*_cross_entropy_with_logits(labels=..., logits=...)`: a logits loss and its `logits`.

None when the call is none of these, or the program model does not know the loss.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import libcst as cst

from trainlint.facts.expr import argument, keyword, literal
from trainlint.facts.objects import KERAS_CROSSENTROPY, TORCH_LOSSES, Loss, Module, Obj, Output, keras_loss_expects
from trainlint.facts.program import program

if TYPE_CHECKING:
    from trainlint.facts.core import Facts

#: TensorFlow's logits losses: name → what they want as labels (their arguments are keyword-only in TF 1)
TF_LOGITS_LOSSES = {
    "tensorflow.nn.sigmoid_cross_entropy_with_logits": "binary",
    "tensorflow.nn.softmax_cross_entropy_with_logits": "one-hot",
    "tensorflow.nn.softmax_cross_entropy_with_logits_v2": "one-hot",
    "tensorflow.nn.sparse_softmax_cross_entropy_with_logits": "class ids",
    "tensorflow.nn.weighted_cross_entropy_with_logits": "binary",
}


@dataclasses.dataclass(frozen=True)
class LossSite:
    """A loss computed on predictions (or set on a model that makes them)."""

    call: cst.Call
    loss: Loss
    #: the prediction: the compiled model's expression, `y_pred`, the torch loss's `input`, `logits=`
    prediction: cst.BaseExpression | None
    #: what the prediction is (a Module for `compile`, else a Tensor / Number), None: unknown
    values: Obj | None
    target: cst.BaseExpression | None
    #: where a finding about the loss goes: the `loss=` argument of `compile`, else the call
    at: cst.CSTNode
    compiled: bool = False  # set by `compile` (the values are the model's outputs)


def loss_site(facts: Facts, call: cst.Call) -> LossSite | None:
    memo: dict[int, LossSite | None] | None = facts.__dict__.get("_loss_sites")
    if memo is None:
        memo = facts.__dict__["_loss_sites"] = {}
    key = id(call)
    if key not in memo:
        memo[key] = _loss_site(facts, call)
    return memo[key]


def _loss_site(facts: Facts, call: cst.Call) -> LossSite | None:
    p = program(facts)
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "compile":
        loss_expr = argument(call, "loss", 1)
        loss = p.compiled_loss(loss_expr, call) if loss_expr is not None else None
        if loss is None or loss.framework != "keras" or loss_expr is None:
            return None
        return LossSite(call, loss, func.value, p.module(func.value, call), None, loss_expr, compiled=True)
    q = facts.callee(call) or ""
    if q in TF_LOGITS_LOSSES:
        logits = argument(call, "logits")
        loss = Loss(call, name=q.rsplit(".", 1)[-1], framework="tensorflow", expects=Output.LOGITS,
                    targets=TF_LOGITS_LOSSES[q], functional=True)
        return LossSite(call, loss, logits, p.of(logits, call) if logits is not None else None,
                        argument(call, "labels"), call)
    if not isinstance(func, (cst.Name, cst.Attribute, cst.Call)):
        return None
    short = q.rsplit(".", 1)[-1]
    if q and not q.startswith("builtins.") and short not in TORCH_LOSSES and short not in KERAS_CROSSENTROPY:
        return None  # a library function that is no loss (`torch.cat`, `np.mean`)
    loss = p.loss(func, call)
    if loss is None:
        return None
    if loss.framework == "keras":
        if loss.functional and loss.name in KERAS_CROSSENTROPY:
            fl = keyword(call, "from_logits")
            value = literal(fl.value) if fl is not None else False
            loss = dataclasses.replace(loss, expects=keras_loss_expects(loss.name, value))
        pred, target = argument(call, "y_pred", 1), argument(call, "y_true", 0)
    else:
        pred, target = argument(call, "input", 0), argument(call, "target", 1)
    return LossSite(call, loss, pred, p.of(pred, call) if pred is not None else None, target, call)


def model_of(site: LossSite) -> Module | None:
    """The compiled model of a `compile` site."""
    return site.values if site.compiled and isinstance(site.values, Module) else None


#: Keras input pipelines that keep the labels of what they are called on
_KEEPING_DATASET_METHODS = frozenset({"cache", "prefetch", "shuffle", "batch", "repeat", "take", "skip", "unbatch",
                                      "with_options", "padded_batch"})
#: Keras directory loaders: the argument that says how labels are encoded, its default, and what each value gives
_DIRECTORY_LOADERS = {
    "flow_from_directory": ("class_mode", "categorical"),
    "flow_from_dataframe": ("class_mode", "categorical"),
    "image_dataset_from_directory": ("label_mode", "int"),
    "text_dataset_from_directory": ("label_mode", "int"),
    "audio_dataset_from_directory": ("label_mode", "int"),
}
_LABEL_MODES = {"categorical": Output.ONE_HOT, "int": Output.CLASS_IDS, "sparse": Output.CLASS_IDS,
                "binary": Output.CLASS_IDS}


def fit_labels(facts: Facts, site: LossSite) -> list[tuple[Output, cst.CSTNode]]:
    """How the labels are encoded in each `fit` / `fit_generator` of the model compiled at ``site`` (for which
    this `compile` is the last one before it): `y` given as an array the source makes (`to_categorical`,
    `keras.datasets.mnist.load_data()`, a literal), or the labels of the generator or dataset given as `x`
    (`flow_from_directory`'s `class_mode`, `image_dataset_from_directory`'s `label_mode`, `flow(x, y)`,
    `tf.data.Dataset.from_tensor_slices((x, y))`).
    Each with the node that makes them; fits whose labels the source does not establish are left out."""
    model = model_of(site)
    if model is None or model.node is None:
        return []
    p = program(facts)
    compiles = [c for c in facts.method_calls("compile") if c in facts.where
                and _same_model(p.module(_receiver(c), c), model)]
    out: list[tuple[Output, cst.CSTNode]] = []
    for name in ("fit", "fit_generator"):
        for fit in facts.method_calls(name):
            w = facts.where.get(fit)
            if w is None or not _same_model(p.module(_receiver(fit), fit), model):
                continue
            before = [c for c in compiles if facts.where[c].order < w.order]
            if not before or max(before, key=lambda c: facts.where[c].order) is not site.call:
                continue
            y = argument(fit, "y", 1)
            found = _labels_of(facts, y, fit) if y is not None else _generator_labels(facts, argument(fit, "x", 0), fit)
            if found is not None:
                out.append(found)
    return out


def _receiver(call: cst.Call) -> cst.BaseExpression:
    return call.func.value if isinstance(call.func, cst.Attribute) else call.func


def _same_model(a: Module | None, b: Module) -> bool:
    return a is not None and a.node is not None and a.node is b.node


def _labels_of(facts: Facts, y: cst.BaseExpression, at: cst.CSTNode) -> tuple[Output, cst.CSTNode] | None:
    t = program(facts).of(y, at)
    out = getattr(t, "output", None)
    if out in (Output.ONE_HOT, Output.CLASS_IDS) and t is not None and t.node is not None:
        return out, t.node
    return None


def _generator_labels(facts: Facts, x: cst.BaseExpression | None, at: cst.CSTNode,
                      depth: int = 0) -> tuple[Output, cst.CSTNode] | None:
    if x is None or depth > 8:
        return None
    if isinstance(x, cst.Name):
        b = facts.lookup(x.value, at)
        if b is None or not isinstance(b.value, cst.Call):
            return None
        return _generator_labels(facts, b.value, b.value if b.value in facts.where else at, depth + 1)
    if not isinstance(x, cst.Call) or not isinstance(x.func, (cst.Attribute, cst.Name)):
        return None
    name = x.func.attr.value if isinstance(x.func, cst.Attribute) else x.func.value
    if isinstance(x.func, cst.Attribute) and name in _KEEPING_DATASET_METHODS:
        return _generator_labels(facts, x.func.value, at, depth + 1)
    if name in _DIRECTORY_LOADERS:
        q = facts.callee(x) or ""
        if isinstance(x.func, cst.Name) and not q.startswith("keras."):
            return None
        arg, default = _DIRECTORY_LOADERS[name]
        given = argument(x, arg)
        mode = facts.constant(given, at) if given is not None else default
        kind = _LABEL_MODES.get(mode) if isinstance(mode, str) else None
        return (kind, x) if kind is not None else None
    if name == "flow" and isinstance(x.func, cst.Attribute):  # `datagen.flow(x, y)`
        y = argument(x, "y", 1)
        return _labels_of(facts, y, at) if y is not None else None
    if name == "from_tensor_slices" and (facts.callee(x) or "").startswith("tensorflow.data."):
        pair = argument(x, "tensors", 0)  # `tf.data.Dataset.from_tensor_slices((x, y))`
        if isinstance(pair, cst.Tuple) and len(pair.elements) == 2:
            return _labels_of(facts, pair.elements[1].value, at)
    return None
