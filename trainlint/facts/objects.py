"""What the objects of a training program are: modules and their layers, losses, data loaders,
optimizers, tensors and plain numbers.

These are the answers of :class:`~trainlint.facts.program.Program`. Each kind carries only what the
source establishes; a field that the source leaves open is ``None`` (unknown), never a guess. A rule
states its premises as questions to these objects ("the model has a layer whose behaviour depends on
the mode": ``module.mode_dependent is True``) and stays silent when the answer is ``None``.

The library knowledge (which torch / Keras layers depend on the mode, what each loss expects) is
read from the libraries' own documentation and source: ``torch.nn`` 2.x, Keras 3 / tf-keras 2.x.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import TypeVar
from collections.abc import Iterable

import libcst as cst


class Output(enum.Enum):
    """What the values of a tensor are, as far as the code that makes them shows."""

    LOGITS = "logits"  # unnormalised scores (a linear layer's output)
    PROBABILITIES = "probabilities"  # a softmax over classes: non-negative rows that sum to 1
    SIGMOID = "sigmoid probabilities"  # each value in (0, 1)
    LOG_PROBABILITIES = "log-probabilities"  # a log-softmax
    NON_NEGATIVE = "non-negative values"  # a ReLU's output
    CLASS_IDS = "class ids"  # an argmax, or integer labels (a dataset's class ids)
    ONE_HOT = "one-hot vectors"  # labels one-hot encoded (`to_categorical`, `one_hot`), one vector a sample


@dataclasses.dataclass(frozen=True)
class Layer:
    """One layer of a module, as the source builds it."""

    name: str  # the class name: "Dropout", "Linear", "Dense", or a class of the file
    node: cst.CSTNode | None
    #: computes something else in train and eval mode (dropout, batch norm); None: unknown
    mode_dependent: bool | None
    #: what the layer outputs when it decides it alone (Softmax: probabilities); None: depends on the input
    output: Output | None = None
    units: int | None = None  # Dense(units) / Linear(..., out_features)


@dataclasses.dataclass(frozen=True)
class Obj:
    """Something the program makes; ``node`` is where (the call, or the class statement)."""

    node: cst.CSTNode | None


@dataclasses.dataclass(frozen=True)
class Module(Obj):
    """A model or a layer: a ``torch.nn.Module``, a Keras model or layer, a pretrained model."""

    framework: str  # "torch", "keras", "transformers", "diffusers", "timm", ...
    name: str  # class name
    classdef: cst.ClassDef | None = None  # a class of the file
    #: every layer, when the source shows them all; None: some are unknown
    layers: tuple[Layer, ...] | None = None
    pretrained: bool = False
    #: what calling it returns (its last layer, or its `forward`'s returns); None: unknown
    output: Output | None = None
    #: set directly when the module is known as a whole (a pretrained transformer: dropout in its config)
    known_mode_dependent: bool | None = None
    #: the width of the last axis of what calling it returns (`Dense(10)`, a Sequential ending in
    #: `Linear(h, 1)` and a ReLU); None: unknown
    units: int | None = None
    #: when it returns a softmax / log-softmax of scores: what those scores were (`Tensor.scores`)
    scores: Output | None = None
    #: the layer or call that decides `output` (its last layer, the activation its `forward` returns)
    origin: cst.CSTNode | None = None
    #: the layer or call that makes the `scores`
    scores_origin: cst.CSTNode | None = None

    @property
    def mode_dependent(self) -> bool | None:
        """Computes something else in train and eval mode: True when a layer does; False when every
        layer is known and none does; None otherwise."""
        if self.known_mode_dependent is not None:
            return self.known_mode_dependent
        if self.layers is None:
            return None
        if any(layer.mode_dependent for layer in self.layers):
            return True
        return False if all(layer.mode_dependent is False for layer in self.layers) else None


@dataclasses.dataclass(frozen=True)
class Loss(Obj):
    """A loss: an ``nn.Module`` loss object, a functional loss, a Keras loss object or string."""

    name: str  # "CrossEntropyLoss", "cross_entropy", "SparseCategoricalCrossentropy", "categorical_crossentropy"
    framework: str  # "torch" | "keras"
    #: what its prediction argument must be: LOGITS, PROBABILITIES, SIGMOID, LOG_PROBABILITIES; None: any
    expects: Output | None
    #: how it wants the targets: "class ids", "one-hot", "binary", "any"
    targets: str = "any"
    functional: bool = False  # a function (F.cross_entropy), not an object


@dataclasses.dataclass(frozen=True)
class Loader(Obj):
    """A ``torch.utils.data.DataLoader``."""

    dataset: cst.BaseExpression | None
    shuffle: bool | None  # the literal `shuffle=`; False when absent; None when not a literal
    sampler: cst.BaseExpression | None  # `sampler=` or `batch_sampler=`


@dataclasses.dataclass(frozen=True)
class Optimizer(Obj):
    name: str  # "AdamW"
    params: cst.BaseExpression | None  # the expression given for the parameters


@dataclasses.dataclass(frozen=True)
class Tensor(Obj):
    """A tensor the program computes."""

    output: Output | None = None  # what its values are; None: unknown
    #: carries an autograd graph (the output of a forward or a loss outside `no_grad`); False: detached
    graph: bool | None = None
    loss: bool = False  # the value of a loss
    #: a pre-0.4 `Variable(..., volatile=True)`: what is computed from it records no graph (that era's no_grad)
    volatile: bool = False
    #: the width of its last axis, where the layer that made it says (`Linear(h, 1)(x)`: 1); None: unknown
    units: int | None = None
    #: for a softmax / log-softmax (or sigmoid) of a tensor: what that tensor's values were (a ReLU's
    #: non-negative output under a log-softmax); None: unknown or not an activation's output
    scores: Output | None = None
    #: the layer or call that decides `output` (the final ReLU, the softmax taken); None: unknown
    origin: cst.CSTNode | None = None
    #: the layer or call that makes the `scores`
    scores_origin: cst.CSTNode | None = None


@dataclasses.dataclass(frozen=True)
class Number(Obj):
    """A Python number: a literal, `loss.item()`, `float(x)`, a sum of numbers. It holds no graph."""


@dataclasses.dataclass(frozen=True)
class Tokenizer(Obj):
    """A transformers tokenizer (`AutoTokenizer.from_pretrained(...)`, a `*Tokenizer` class) or processor."""

    name: str = ""  # the class: "AutoTokenizer", "BertTokenizerFast", "AutoProcessor"

    @property
    def processor(self) -> bool:
        """A processor (`AutoProcessor`): calling it returns a `BatchFeature`, not a `BatchEncoding`."""
        return "Tokenizer" not in self.name


@dataclasses.dataclass(frozen=True)
class Encoding(Obj):
    """What calling a transformers tokenizer returns (`tokenizer(texts)`, `tokenizer.batch_encode_plus(...)`,
    `tokenizer.pad(...)`): a `BatchEncoding`, a dict subclass, whatever `return_tensors` asks for."""


# ---------------------------------------------------------------------------------------------
# Library knowledge

#: torch.nn layers that compute the same in train and eval mode (no dropout, no batch statistics)
TORCH_MODE_FREE = frozenset({
    "Module", "Sequential", "ModuleList", "ModuleDict", "Linear", "Bilinear", "LazyLinear", "Conv1d", "Conv2d",
    "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "LazyConv1d", "LazyConv2d", "LazyConv3d",
    "ReLU", "ReLU6", "LeakyReLU", "PReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish",
    "Sigmoid", "Tanh", "Hardtanh", "Hardswish", "Hardsigmoid", "Softmax", "Softmax2d", "LogSoftmax", "Softplus",
    "Softsign", "Softmin", "Tanhshrink", "Threshold", "GLU", "LogSigmoid", "Flatten", "Unflatten", "Identity",
    "Embedding", "EmbeddingBag", "LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm", "MaxPool1d", "MaxPool2d",
    "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
    "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d", "LPPool1d", "LPPool2d",
    "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle", "PixelUnshuffle", "ZeroPad1d",
    "ZeroPad2d", "ZeroPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "ReflectionPad1d",
    "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d",
    "CosineSimilarity", "PairwiseDistance", "ChannelShuffle", "Fold", "Unfold",
})
#: torch.nn layers whose behaviour depends on the mode whatever their arguments
TORCH_MODE_DEPENDENT = frozenset({
    "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout", "BatchNorm1d",
    "BatchNorm2d", "BatchNorm3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "SyncBatchNorm",
    "RReLU",
})
#: torch.nn layers with a `dropout=` argument: mode-dependent when it is not 0 (default in parentheses)
TORCH_DROPOUT_ARGUMENT = {
    "RNN": 0.0, "LSTM": 0.0, "GRU": 0.0, "MultiheadAttention": 0.0, "Transformer": 0.1,
    "TransformerEncoderLayer": 0.1, "TransformerDecoderLayer": 0.1,
}
#: instance norms: mode-dependent only with `track_running_stats=True` (default False)
TORCH_RUNNING_STATS_OPTIONAL = frozenset({"InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"})
#: what a torch.nn layer outputs by itself
TORCH_LAYER_OUTPUT = {
    "Softmax": Output.PROBABILITIES, "Softmax2d": Output.PROBABILITIES, "LogSoftmax": Output.LOG_PROBABILITIES,
    "Sigmoid": Output.SIGMOID, "ReLU": Output.NON_NEGATIVE, "ReLU6": Output.NON_NEGATIVE,
    "Linear": Output.LOGITS, "LazyLinear": Output.LOGITS, "Bilinear": Output.LOGITS,
}
#: torch functions and tensor methods that make probabilities and friends
TORCH_ACTIVATIONS = {
    "softmax": Output.PROBABILITIES, "log_softmax": Output.LOG_PROBABILITIES, "sigmoid": Output.SIGMOID,
    "relu": Output.NON_NEGATIVE, "relu6": Output.NON_NEGATIVE, "argmax": Output.CLASS_IDS,
}
#: TensorFlow / Keras functions that make probabilities and friends, by their last name, under the modules
#: `TF_ACTIVATION_MODULES` (`tf.sigmoid`, `tf.nn.softmax`, `tf.math.sigmoid`, `keras.activations.relu`, ...)
TF_ACTIVATIONS = {
    "softmax": Output.PROBABILITIES, "log_softmax": Output.LOG_PROBABILITIES, "sigmoid": Output.SIGMOID,
    "relu": Output.NON_NEGATIVE, "relu6": Output.NON_NEGATIVE,
}
TF_ACTIVATION_MODULES = ("tensorflow.", "tensorflow.nn.", "tensorflow.math.", "keras.activations.", "keras.ops.",
                         "keras.backend.")
#: layers that keep the width of the last axis (activations, dropout, normalisation): a `Linear(h, 1)` then a
#: ReLU still has one unit
WIDTH_KEEPING = frozenset({
    "ReLU", "ReLU6", "LeakyReLU", "PReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Sigmoid", "Tanh",
    "Hardtanh", "Softmax", "LogSoftmax", "Softplus", "Identity", "Dropout", "AlphaDropout", "BatchNorm1d",
    "LayerNorm", "Activation", "BatchNormalization", "LayerNormalization", "GaussianNoise", "GaussianDropout",
    "ThresholdedReLU",
})
#: `keras.datasets.<name>.load_data()`: `(x_train, y_train), (x_test, y_test)` with integer class ids as labels
KERAS_CLASS_ID_DATASETS = frozenset({"mnist", "fashion_mnist", "cifar10", "cifar100", "reuters", "imdb"})

#: torch losses: (expects, targets); functional spellings map to the same
TORCH_LOSSES: dict[str, tuple[Output | None, str]] = {
    "CrossEntropyLoss": (Output.LOGITS, "class ids"), "cross_entropy": (Output.LOGITS, "class ids"),
    "NLLLoss": (Output.LOG_PROBABILITIES, "class ids"), "nll_loss": (Output.LOG_PROBABILITIES, "class ids"),
    "BCEWithLogitsLoss": (Output.LOGITS, "binary"), "binary_cross_entropy_with_logits": (Output.LOGITS, "binary"),
    "BCELoss": (Output.SIGMOID, "binary"), "binary_cross_entropy": (Output.SIGMOID, "binary"),
    "KLDivLoss": (Output.LOG_PROBABILITIES, "any"), "kl_div": (Output.LOG_PROBABILITIES, "any"),
    "MultiLabelSoftMarginLoss": (Output.LOGITS, "binary"), "multilabel_soft_margin_loss": (Output.LOGITS, "binary"),
    "MSELoss": (None, "any"), "mse_loss": (None, "any"), "L1Loss": (None, "any"), "l1_loss": (None, "any"),
    "SmoothL1Loss": (None, "any"), "smooth_l1_loss": (None, "any"), "HuberLoss": (None, "any"),
    "huber_loss": (None, "any"), "CTCLoss": (Output.LOG_PROBABILITIES, "any"),
    "ctc_loss": (Output.LOG_PROBABILITIES, "any"), "MarginRankingLoss": (None, "any"),
    "CosineEmbeddingLoss": (None, "any"), "TripletMarginLoss": (None, "any"), "HingeEmbeddingLoss": (None, "any"),
    "PoissonNLLLoss": (None, "any"), "GaussianNLLLoss": (None, "any"), "MultiMarginLoss": (None, "class ids"),
}

#: Keras layers whose behaviour depends on the `training` flag (Keras sets it itself in fit/evaluate)
KERAS_MODE_DEPENDENT = frozenset({
    "Dropout", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "GaussianDropout", "GaussianNoise",
    "AlphaDropout", "BatchNormalization",
})
#: Keras cross-entropy losses: the class/function/string names → targets; `from_logits` decides what they expect
KERAS_CROSSENTROPY = {
    "SparseCategoricalCrossentropy": "class ids", "sparse_categorical_crossentropy": "class ids",
    "CategoricalCrossentropy": "one-hot", "categorical_crossentropy": "one-hot",
    "BinaryCrossentropy": "binary", "binary_crossentropy": "binary",
    "CategoricalFocalCrossentropy": "one-hot", "categorical_focal_crossentropy": "one-hot",
    "BinaryFocalCrossentropy": "binary", "binary_focal_crossentropy": "binary",
}
KERAS_ACTIVATIONS = {
    "softmax": Output.PROBABILITIES, "sigmoid": Output.SIGMOID, "relu": Output.NON_NEGATIVE,
    "log_softmax": Output.LOG_PROBABILITIES, "linear": Output.LOGITS, None: Output.LOGITS,
}


def keras_loss_expects(name: str, from_logits: object) -> Output | None:
    """What a Keras cross-entropy expects: logits with `from_logits=True`, else probabilities (softmax for
    the categorical ones, sigmoid for the binary ones). None when `from_logits` is not a literal."""
    if from_logits is True:
        return Output.LOGITS
    if from_logits is not False:
        return None
    return Output.SIGMOID if KERAS_CROSSENTROPY.get(name) == "binary" else Output.PROBABILITIES


def output_units(layers: Iterable[Layer]) -> int | None:
    """The width of the last axis after ``layers`` (in order): the units of the last layer that sets them,
    when only width-keeping layers follow it; None when a layer of unknown width comes first."""
    for layer in reversed(list(layers)):
        if layer.units is not None:
            return layer.units
        if layer.name not in WIDTH_KEEPING:
            return None
    return None


def merge(objs: list[Obj | None]) -> Obj | None:
    """What several candidates agree on (a parameter given different objects by its callers, an
    attribute assigned in several places): the common kind with the fields they share; None when one
    is unknown or the kinds differ."""
    if not objs or any(o is None for o in objs):
        return None
    first = objs[0]
    if all(o == first for o in objs):
        return first
    if not all(type(o) is type(first) for o in objs):
        return None
    if isinstance(first, Number):
        return Number(None)
    if isinstance(first, Encoding):
        return Encoding(None)
    if isinstance(first, Tensor):
        ts = [o for o in objs if isinstance(o, Tensor)]
        return Tensor(None, output=_same(t.output for t in ts), graph=_same(t.graph for t in ts),
                      loss=all(t.loss for t in ts), units=_same(t.units for t in ts),
                      scores=_same(t.scores for t in ts), origin=_same(t.origin for t in ts),
                      scores_origin=_same(t.scores_origin for t in ts))
    if isinstance(first, Module):
        ms = [o for o in objs if isinstance(o, Module)]
        dep = _same(m.mode_dependent for m in ms)
        return Module(None, framework=_same(m.framework for m in ms) or "", name=_same(m.name for m in ms) or "",
                      output=_same(m.output for m in ms), known_mode_dependent=dep,
                      pretrained=all(m.pretrained for m in ms), units=_same(m.units for m in ms),
                      scores=_same(m.scores for m in ms), origin=_same(m.origin for m in ms),
                      scores_origin=_same(m.scores_origin for m in ms))
    if isinstance(first, Loss):
        ls = [o for o in objs if isinstance(o, Loss)]
        expects = _same(x.expects for x in ls)
        return Loss(None, name=_same(x.name for x in ls) or "", framework=_same(x.framework for x in ls) or "",
                    expects=expects, targets=_same(x.targets for x in ls) or "any")
    return None


_T = TypeVar("_T")


def _same(values: Iterable[_T]) -> _T | None:
    """The value every one of ``values`` has, else None."""
    vs = list(values)
    return vs[0] if vs and all(v == vs[0] for v in vs) else None
