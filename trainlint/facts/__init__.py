"""Facts shared by every rule, computed once per file from one walk of the tree.

The package is split by concern:

- :mod:`~trainlint.facts.walk`: the single walk in document order (:func:`walk`, :class:`Where`) and
  small local walks (:func:`iter_nodes`, :func:`iter_calls`).
- :mod:`~trainlint.facts.expr`: helpers over CST expressions (:func:`literal`, :func:`dotted`,
  :func:`argument`, :data:`UNKNOWN`).
- :mod:`~trainlint.facts.imports`: local names to qualified names (``import transformers as tr``,
  ``from transformers import Trainer as T``; ``tf.keras`` / ``keras`` / ``tf_keras`` are one
  :func:`canonical` ``keras``).
- :mod:`~trainlint.facts.scopes`: which expression a name is bound to where (:class:`Binding`).
- :mod:`~trainlint.facts.values` and :mod:`~trainlint.facts.dataflow`: a small intra-file dataflow
  giving an expression an abstract :class:`Value`: a raw or tokenized dataset, a model (class,
  checkpoint, ``num_labels``), a Trainer, a ``tf.data`` dataset, a metric, inside functions too and
  through ``ds["train"]``.
- :mod:`~trainlint.facts.datasets`: what a ``.map(f)`` does with the tokenizer (pads to a fixed
  length, truncates, groups into blocks) and the hub datasets a file loads.
- :mod:`~trainlint.facts.processes`: how a launcher in the file (a Lightning ``Trainer`` or ``Fabric``) runs
  the script as processes.

:class:`Facts` puts them together for one module. Everything is lazy and memoised: a rule asks
``facts.value_of(expr)`` and gets an abstract :class:`Value`; nothing is computed for files no rule
asks about.
"""

from trainlint.facts.core import Facts
from trainlint.facts.dataflow import Dataflow
from trainlint.facts.datasets import DatasetFacts, looks_like_group_texts
from trainlint.facts.expr import (
    UNKNOWN,
    argument,
    dotted,
    given,
    has_star_kwargs,
    keyword,
    literal,
    method_name,
    positional,
    self_item,
)
from trainlint.facts.imports import Imports, canonical
from trainlint.facts.scopes import Binding, Scopes
from trainlint.facts.values import (
    TRAINER_CLASSES,
    TRAINER_WORDS,
    TRAINING_ARGS_CLASSES,
    TRAINING_ARGS_WORDS,
    CallValue,
    ClassValue,
    DatasetValue,
    FunctionValue,
    MetricValue,
    ModelValue,
    TFDatasetValue,
    Tokenization,
    TokenizerValue,
    TrainerValue,
    Value,
)
from trainlint.facts.walk import FACT_TYPES, STRUCTURAL, Where, iter_calls, iter_nodes, walk

__all__ = [
    "FACT_TYPES", "STRUCTURAL", "TRAINER_CLASSES", "TRAINER_WORDS", "TRAINING_ARGS_CLASSES",
    "TRAINING_ARGS_WORDS", "UNKNOWN", "Binding", "CallValue", "ClassValue", "Dataflow", "DatasetFacts",
    "DatasetValue", "Facts", "FunctionValue", "Imports", "MetricValue", "ModelValue", "Scopes",
    "TFDatasetValue", "Tokenization", "TokenizerValue", "TrainerValue", "Value", "Where", "argument",
    "canonical", "dotted", "given", "has_star_kwargs", "iter_calls", "iter_nodes", "keyword", "literal",
    "looks_like_group_texts", "method_name", "positional", "self_item", "walk",
]
