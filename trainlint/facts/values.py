"""The abstract values the dataflow gives to expressions (a dataset, a model, a Trainer...)."""

from __future__ import annotations

import dataclasses

import libcst as cst

from trainlint import knowledge
from trainlint.facts.expr import UNKNOWN


@dataclasses.dataclass(frozen=True)
class Value:
    node: cst.CSTNode | None


@dataclasses.dataclass(frozen=True)
class Tokenization:
    """What a ``.map()`` function does with the tokenizer."""

    calls_tokenizer: bool = False
    padding: object = UNKNOWN  # "max_length", True, False, "longest", None (absent) or UNKNOWN
    truncation: object = None
    groups: bool = False  # produces fixed-length blocks (group_texts)

    @property
    def fixed_length(self) -> bool:
        return self.groups or self.padding == "max_length" or self.padding == "do_not_pad_but_fixed"

    @property
    def unpadded(self) -> bool:
        """Certainly leaves sequences of different lengths (no fixed-length padding, no grouping)."""
        if self.groups or not self.calls_tokenizer:
            return False
        return self.padding in (None, False, True, "longest", "do_not_pad")


@dataclasses.dataclass(frozen=True)
class DatasetValue(Value):
    """A ``datasets`` dataset or DatasetDict, with its origin and what was mapped over it."""

    hub_name: str | None = None  # "glue"
    hub_config: str | None = None  # "mnli"
    split: str | None = None  # "train" (from ["train"] or split=)
    maps: tuple[Tokenization, ...] = ()
    origin: cst.Call | None = None  # the load_dataset call
    columns_removed: bool = False

    @property
    def tokenized(self) -> bool:
        return any(m.calls_tokenizer or m.groups for m in self.maps)

    @property
    def raw(self) -> bool:
        return self.origin is not None and not self.maps

    @property
    def fixed_length(self) -> bool:
        return any(m.fixed_length for m in self.maps)

    @property
    def unpadded(self) -> bool:
        return self.tokenized and not self.fixed_length and any(m.unpadded for m in self.maps)

    @property
    def info(self) -> knowledge.DatasetInfo | None:
        return knowledge.dataset_info(self.hub_name, self.hub_config)


@dataclasses.dataclass(frozen=True)
class TFDatasetValue(Value):
    columns: object = UNKNOWN  # list of column names or UNKNOWN
    label_cols: object = None  # None (absent), list, str, UNKNOWN
    base: DatasetValue | None = None
    prepared: bool = False  # model.prepare_tf_dataset
    splits: bool = False  # a dict of splits (`tfds.load(name)` without `split=`): `ds["train"]` is one


@dataclasses.dataclass(frozen=True)
class ModelValue(Value):
    qualname: str = ""  # canonical, e.g. transformers.AutoModelForSequenceClassification
    pretrained: bool = False  # from_pretrained
    checkpoint: object = UNKNOWN
    call: cst.Call | None = None  # the from_pretrained / constructor call

    @property
    def cls(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]

    @property
    def transformers(self) -> bool:
        return self.qualname.startswith("transformers.")

    @property
    def tf(self) -> bool:
        return self.transformers and self.cls.startswith("TF")

    @property
    def head(self) -> str | None:
        return knowledge.head_of(self.cls)


@dataclasses.dataclass(frozen=True)
class TokenizerValue(Value):
    pass


@dataclasses.dataclass(frozen=True)
class TrainerValue(Value):
    call: cst.Call | None = None


@dataclasses.dataclass(frozen=True)
class MetricValue(Value):
    call: cst.Call | None = None


@dataclasses.dataclass(frozen=True)
class FunctionValue(Value):
    pass


@dataclasses.dataclass(frozen=True)
class ClassValue(Value):
    bases: tuple[str, ...] = ()  # canonical qualified names of the bases we could resolve


@dataclasses.dataclass(frozen=True)
class CallValue(Value):
    """The result of a call to something imported we know by name (qualname canonical)."""

    qualname: str = ""


TRAINER_CLASSES = frozenset({"transformers.Trainer", "transformers.Seq2SeqTrainer"})
TRAINING_ARGS_CLASSES = frozenset({"transformers.TrainingArguments", "transformers.Seq2SeqTrainingArguments"})
#: their class names: the words a rule's gate needs for "a Trainer" / "TrainingArguments". A
#: qualified name resolves only through an absolute import or an attribute chain, so every part of
#: it is a word of the code: ``transformers.Trainer`` needs ``transformers`` and ``Trainer`` (an
#: alias's import line, or a subclass's base, says them).
TRAINER_WORDS = tuple(sorted(q.rsplit(".", 1)[-1] for q in TRAINER_CLASSES))
TRAINING_ARGS_WORDS = tuple(sorted(q.rsplit(".", 1)[-1] for q in TRAINING_ARGS_CLASSES))
