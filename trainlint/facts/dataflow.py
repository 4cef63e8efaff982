"""A small intra-file dataflow: the abstract value of an expression, followed through names,
local helpers, subscripts and method chains."""

from __future__ import annotations

import builtins
import dataclasses
from collections.abc import Iterator
from typing import Any

import libcst as cst

from trainlint import knowledge
from trainlint.facts.expr import UNKNOWN, argument, dotted, literal, positional
from trainlint.facts.imports import CONVENTIONAL_ALIASES, canonical, home_of
from trainlint.facts.scopes import Binding, Scopes
from trainlint.facts.values import (
    TRAINER_CLASSES,
    CallValue,
    ClassValue,
    DatasetValue,
    FunctionValue,
    MetricValue,
    ModelValue,
    TFDatasetValue,
    TokenizerValue,
    Tokenization,
    TrainerValue,
    Value,
)
from trainlint.facts.walk import iter_nodes

_BUILTINS = frozenset(dir(builtins))
_DATASET_KEEPING_METHODS = frozenset(
    {
        "shuffle", "select", "filter", "remove_columns", "rename_column", "rename_columns",
        "with_format", "train_test_split", "flatten", "cast", "cast_column", "sort", "take",
        "skip", "class_encode_column", "with_transform", "select_columns", "flatten_indices",
        "shard", "unique", "align_labels_with_mapping",
    }
)

#: `tf.data.Dataset` methods that keep the examples as they are (order, batching and caching aside)
_TF_DATA_KEEPING_METHODS = frozenset({"shuffle", "batch", "repeat", "prefetch", "cache", "take", "skip", "shard",
                                      "with_options", "padded_batch"})


class Dataflow(Scopes):
    """Abstract values of expressions and the queries several rules share. Part of :class:`Facts`."""

    def qualname(self, expr: cst.BaseExpression) -> str | None:
        """Canonical qualified name of an imported thing (``T`` → ``transformers.Trainer``)."""
        memo = self.__dict__.get("_qualnames")  # the rules ask again and again for the same nodes
        if memo is None:
            memo = self._qualnames = {}
        try:
            return memo[expr]
        except KeyError:
            pass
        q = self.raw_qualname(expr)
        memo[expr] = q = canonical(q) if q else None
        return q

    def raw_qualname(self, expr: cst.BaseExpression) -> str | None:
        q = self.imports.qualify(expr)
        if q is None and isinstance(expr, (cst.Name, cst.Attribute)):
            q = self._implicit(expr)
        if q is None and isinstance(expr, (cst.Name, cst.Attribute)):
            q = self._module_alias(expr)
        return q

    def _module_alias(self, expr: cst.Name | cst.Attribute) -> str | None:
        """A name bound once in the whole file, at module level, to an imported dotted name (`keras = tf.keras`):
        what it names, followed by the rest of ``expr``."""
        d = dotted(expr)
        if d is None:
            return None
        head, _, rest = d.partition(".")
        if head in self.imports.names:
            return None
        found = [b for names in self.bindings.values() for b in names.get(head, ())]
        if len(found) != 1 or head not in self.bindings.get(None, {}):
            return None
        value = found[0].value
        if not isinstance(value, (cst.Name, cst.Attribute)) or dotted(value) is None or dotted(value) == head:
            return None
        base = self.imports.qualify(value)
        if base is None:
            return None
        return f"{base}.{rest}" if rest else base

    def _implicit(self, expr: cst.BaseExpression) -> str | None:
        """The qualified name of a name no import binds and nothing in the file assigns: from a
        `from m import *`, or in a snippet that uses `AutoTokenizer` / `np` without importing them."""
        d = dotted(expr)
        if d is None:
            return None
        head, _, rest = d.partition(".")
        homes = self.__dict__.get("_homes")
        if homes is None:
            homes = self._homes = {}
        if head not in homes:
            home = None if head in _BUILTINS else home_of(head, self.imports.star)
            if home is not None and head in self._bound_names():
                home = None  # a name of the file's own (the walk for them runs only when needed)
            homes[head] = None if home is None else (home if head in CONVENTIONAL_ALIASES and home ==
                                                     CONVENTIONAL_ALIASES[head] else f"{home}.{head}")
        base = homes[head]
        if base is None:
            return None
        return f"{base}.{rest}" if rest else base

    def _bound_names(self) -> set[str]:
        """Every name the file binds anywhere (assignments, defs, parameters, imports, `with ... as`,
        `except ... as`, comprehension targets)."""
        bound = self.__dict__.get("_bound")
        if bound is None:
            bound = set(self.imports.names)
            for names in self.bindings.values():
                bound.update(names)
            index = self.index
            for node in (n for t in ("AsName", "CompFor", "NamedExpr", "Global", "Nonlocal") for n in index.get(t, ())):
                target = node.name if isinstance(node, cst.AsName) else node.target if isinstance(
                    node, (cst.CompFor, cst.NamedExpr)) else None
                if target is not None:
                    bound.update(n.value for n in iter_nodes(target, (cst.Name,)))
            self._bound = bound
        return bound

    def callee(self, call: cst.Call) -> str | None:
        return self.qualname(call.func)

    def is_trainer_class(self, expr: cst.BaseExpression, at: cst.CSTNode | None = None) -> bool:
        qn = self.qualname(expr)
        if qn in TRAINER_CLASSES:
            return True
        if isinstance(expr, cst.Name):
            v = self.value_of(expr, at)
            return isinstance(v, ClassValue) and any(b in TRAINER_CLASSES for b in v.bases)
        return False

    def value_of(self, expr: cst.CSTNode | None, at: cst.CSTNode | None = None, _depth: int = 0) -> Value | None:
        """Abstract value of ``expr`` (evaluated at recorded node ``at``, default: ``expr``)."""
        if expr is None or _depth > 25:
            return None
        if isinstance(expr, cst.Name):
            b = self.lookup(expr.value, at if at is not None else expr)
            if b is None:
                return None
            if b.value is None:
                unpacked = self._unpacked.get(b.target)
                return self._unpacked_value(*unpacked, at or expr, _depth) if unpacked else None
            if isinstance(b.value, cst.FunctionDef):
                return FunctionValue(b.value)
            if isinstance(b.value, cst.ClassDef):
                return self._class_value(b.value)
            return self.value_of(b.value, b.value if b.value in self.where else (at or expr), _depth + 1)
        key = expr
        if key in self._values:
            return self._values[key]
        self._values[key] = None  # cycle guard
        v = self._compute(expr, at if at is not None else expr, _depth)
        self._values[key] = v
        return v

    def _class_value(self, node: cst.ClassDef) -> ClassValue:
        memo = self.__dict__.setdefault("_class_values", {})
        if node in memo:
            return memo[node] or ClassValue(node, ())  # a cycle of bases: the bases found so far
        memo[node] = None
        bases = []
        for arg in node.bases:
            qn = self.qualname(arg.value)
            if qn:
                bases.append(qn)
            elif isinstance(arg.value, cst.Name):
                b = self.base_binding(arg.value.value, node)
                v = self._class_value(b.value) if b is not None and isinstance(b.value, cst.ClassDef) else (
                    self.value_of(b.value, node) if b is not None and isinstance(b.value, cst.BaseExpression) else None)
                if isinstance(v, ClassValue):
                    bases.extend(v.bases)
        memo[node] = value = ClassValue(node, tuple(bases))
        return value

    def base_binding(self, name: str, cls: cst.ClassDef) -> Binding | None:
        """The binding of the base ``name`` of the class statement ``cls``: the bases are evaluated before
        the class binds its own name, so `class Mario(Mario):` derives from the `Mario` bound before."""
        b = self.lookup(name, cls)
        if b is None or b.value is not cls:
            return b
        w = self.where.get(cls)
        earlier = [x for x in self.bindings.get(w.function if w else None, {}).get(name, ()) if x.order < b.order]
        return earlier[-1] if earlier else None

    def _map_tokenization(self, call: cst.Call, at: cst.CSTNode) -> Tokenization:
        """What ``ds.map(f)`` does with the tokenizer (:class:`DatasetFacts`)."""
        raise NotImplementedError

    def _compute(self, expr: cst.CSTNode, at: cst.CSTNode, depth: int) -> Value | None:
        if isinstance(expr, cst.Subscript):
            base = self.value_of(expr.value, at, depth + 1)
            if isinstance(base, DatasetValue) and len(expr.slice) == 1:
                sl = expr.slice[0].slice
                if isinstance(sl, cst.Index):
                    key = literal(sl.value)
                    if isinstance(key, str):
                        return dataclasses.replace(base, node=expr, split=key)
                    return dataclasses.replace(base, node=expr)
            if isinstance(base, TFDatasetValue) and base.splits and len(expr.slice) == 1:
                sl = expr.slice[0].slice
                key = literal(sl.value) if isinstance(sl, cst.Index) else None
                if isinstance(key, str):  # `tfds.load("glue/sst2")["train"]`
                    split = dataclasses.replace(base.base, split=key) if base.base is not None else None
                    return dataclasses.replace(base, node=expr, splits=False, base=split)
            return None
        if not isinstance(expr, cst.Call):
            return None
        call = expr
        qn = self.callee(call)
        if qn is not None:
            return self._value_of_qualified_call(call, qn, at, depth)
        func = call.func
        if isinstance(func, cst.Attribute):
            meth = func.attr.value
            recv = self.value_of(func.value, at, depth + 1)
            if isinstance(recv, DatasetValue):
                if meth == "map":
                    return dataclasses.replace(recv, node=call, maps=recv.maps + (self._map_tokenization(call, at),))
                if meth in _DATASET_KEEPING_METHODS:
                    return dataclasses.replace(recv, node=call, columns_removed=recv.columns_removed or meth in ("remove_columns", "select_columns"))
                if meth == "to_tf_dataset":
                    return self._tf_dataset(call, recv)
            if isinstance(recv, TFDatasetValue) and not recv.splits and meth in _TF_DATA_KEEPING_METHODS:
                return dataclasses.replace(recv, node=call)  # `ds.shuffle(100).batch(32)`: the same examples
            if meth == "to_tf_dataset":  # distinctive enough even when the receiver is unknown
                return self._tf_dataset(call, None)
            if isinstance(recv, ModelValue) and meth == "prepare_tf_dataset":
                base = self.value_of(argument(call, "dataset", 0), at, depth + 1)
                return TFDatasetValue(call, prepared=True, base=base if isinstance(base, DatasetValue) else None)
            if isinstance(recv, ClassValue) and meth == "from_pretrained" and any(b.startswith("transformers.") for b in recv.bases):
                return ModelValue(call, qualname=recv.bases[0], pretrained=True, checkpoint=self.constant(argument(call, "pretrained_model_name_or_path", 0), at), call=call)
            if isinstance(recv, ClassValue) and any(b in TRAINER_CLASSES for b in recv.bases):
                return None
            # method on something unknown: the tokenizer itself?
            return None
        if isinstance(func, cst.Name):
            v = self.value_of(func, at, depth + 1)
            if isinstance(v, ClassValue):
                if any(b in TRAINER_CLASSES for b in v.bases):
                    return TrainerValue(call, call=call)
                if any(b.startswith("transformers.") and knowledge.head_of(b.rsplit(".", 1)[-1]) for b in v.bases):
                    return ModelValue(call, qualname=v.bases[0], call=call)
            if isinstance(v, FunctionValue) and isinstance(v.node, cst.FunctionDef):
                return self._returned_value(v.node, depth)
        return None

    def _single_return(self, fn: cst.FunctionDef) -> cst.Return | None:
        returns = [r for r in self.index.get("Return", ()) if (w := self.where.get(r)) is not None and w.function is fn]
        return returns[0] if len(returns) == 1 and returns[0].value is not None else None

    def _returned_value(self, fn: cst.FunctionDef, depth: int) -> Value | None:
        """What a local helper returns (``def load_data(): ...; return ds.map(tok)``), when it has
        exactly one ``return`` with a value."""
        ret = self._single_return(fn)
        return self.value_of(ret.value, ret, depth + 1) if ret is not None else None

    def unpacked_from(self, binding: Binding) -> tuple[cst.Call, int] | None:
        """(call, index) when the binding is one name of ``a, b = call(...)``."""
        return self._unpacked.get(binding.target)

    def _unpacked_value(self, call: cst.Call, index: int, at: cst.CSTNode, depth: int) -> Value | None:
        """``train, test = build_datasets(tok)`` where the helper ends with ``return a, b``."""
        fn = self.function_def(call.func, call if call in self.where else at)
        ret = self._single_return(fn) if isinstance(fn, cst.FunctionDef) else None
        if ret is None or not isinstance(ret.value, (cst.Tuple, cst.List)) or index >= len(ret.value.elements):
            return None
        element = ret.value.elements[index]
        return self.value_of(element.value, ret, depth + 1) if isinstance(element, cst.Element) else None

    def _value_of_qualified_call(self, call: cst.Call, qn: str, at: cst.CSTNode, depth: int) -> Value | None:
        short = qn.rsplit(".", 1)[-1]
        if qn in ("datasets.load_dataset",):
            name = self.constant(argument(call, "path", 0), at)
            config = self.constant(argument(call, "name", 1), at)
            split = self.constant(argument(call, "split"), at)
            return DatasetValue(
                call,
                hub_name=name if isinstance(name, str) else None,
                hub_config=config if isinstance(config, str) else None,
                split=split if isinstance(split, str) else None,
                origin=call,
            )
        if qn in ("datasets.Dataset.from_dict", "datasets.Dataset.from_pandas", "datasets.Dataset.from_list",
                  "datasets.Dataset.from_generator", "datasets.DatasetDict", "datasets.load_from_disk",
                  "datasets.Dataset.from_csv", "datasets.Dataset.from_json"):
            return DatasetValue(call)
        if qn == "tensorflow_datasets.load":
            return self._tfds_load(call, at)
        if qn.startswith("transformers.") and short == "glue_convert_examples_to_features":
            # given a tf.data dataset of GLUE examples, it returns one of (features, label) pairs
            examples = self.value_of(argument(call, "examples", 0), at, depth + 1)
            if isinstance(examples, TFDatasetValue) and not examples.splits:
                return TFDatasetValue(call, base=examples.base)
            return CallValue(call, qualname=qn)
        if qn in ("evaluate.load", "datasets.load_metric"):
            return MetricValue(call, call=call)
        if qn in TRAINER_CLASSES:
            return TrainerValue(call, call=call)
        # Class.from_pretrained(...)
        if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("from_pretrained", "from_config"):
            owner = canonical(qn.rsplit(".", 1)[0])
            owner_short = owner.rsplit(".", 1)[-1]
            if "Tokenizer" in owner_short or owner_short in ("AutoProcessor",):
                return TokenizerValue(call)
            if knowledge.head_of(owner_short) is not None or "Model" in owner_short:
                return ModelValue(
                    call,
                    qualname=owner,
                    pretrained=call.func.attr.value == "from_pretrained",
                    checkpoint=self.constant(argument(call, "pretrained_model_name_or_path", 0), at),
                    call=call,
                )
            return CallValue(call, qualname=qn)
        if qn.startswith("transformers.") and ("Tokenizer" in short):
            return TokenizerValue(call)
        if qn.startswith("transformers.") and knowledge.head_of(short) is not None:
            return ModelValue(call, qualname=qn, pretrained=False, call=call)
        if qn in ("keras.Sequential", "keras.models.Sequential", "keras.Model", "keras.models.Model"):
            return ModelValue(call, qualname=qn, pretrained=False, call=call)
        return CallValue(call, qualname=qn)

    def _tfds_load(self, call: cst.Call, at: cst.CSTNode) -> TFDatasetValue | None:
        """`tfds.load("glue/sst2", split=...)`: a tf.data dataset (a dict of them without `split=`) of a
        catalog dataset, named `name/config:version`; `with_info=True` returns a tuple instead."""
        if argument(call, "with_info") is not None and self.constant(argument(call, "with_info"), at) is not False:
            return None
        name = self.constant(argument(call, "name", 0), at)
        split = self.constant(argument(call, "split"), at)
        base = None
        if isinstance(name, str):
            ds, _, config = name.partition(":")[0].partition("/")
            base = DatasetValue(call, hub_name=ds, hub_config=config or None,
                                split=split if isinstance(split, str) else None)
        return TFDatasetValue(call, base=base, splits=argument(call, "split") is None)

    def _tf_dataset(self, call: cst.Call, base: DatasetValue | None) -> TFDatasetValue:
        cols = argument(call, "columns", 0)
        label_cols = argument(call, "label_cols")
        return TFDatasetValue(
            call,
            columns=self.constant(cols, call) if cols is not None else None,
            label_cols=None if label_cols is None else self.constant(label_cols, call),
            base=base,
        )

    def constant(self, expr: cst.CSTNode | None, at: cst.CSTNode | None = None, _depth: int = 0) -> Any:
        """Literal value of ``expr``, following names bound to literals (``ckpt = "bert"``)."""
        if expr is None:
            return None
        v = literal(expr)
        if v is not UNKNOWN or not isinstance(expr, cst.Name) or _depth > 10:
            return v
        b = self.lookup(expr.value, at if at is not None and at in self.where else expr)
        if b is None or b.value is None or isinstance(b.value, (cst.FunctionDef, cst.ClassDef, cst.Param)):
            return UNKNOWN
        return self.constant(b.value, b.value if b.value in self.where else at, _depth + 1)

    def function_def(self, expr: cst.BaseExpression | None, at: cst.CSTNode | None) -> cst.FunctionDef | cst.Lambda | None:
        """The function an expression names (a def, a lambda, ``functools.partial(f, ...)``)."""
        if isinstance(expr, cst.Lambda):
            return expr
        if isinstance(expr, cst.Name):
            b = self.lookup(expr.value, at if at is not None else expr)
            if b is not None and isinstance(b.value, cst.FunctionDef):
                return b.value
            if b is not None and isinstance(b.value, (cst.Lambda, cst.Call)):
                return self.function_def(b.value, at)
            return None
        if isinstance(expr, cst.Call) and self.callee(expr) == "functools.partial":
            pos = positional(expr)
            return self.function_def(pos[0].value, at) if pos else None
        return None

    def _callable_instance(self, expr: cst.CSTNode | None, at: cst.CSTNode | None) -> cst.FunctionDef | None:
        """``ds.map(Preprocessor(tokenizer))``: the ``__call__`` of a class defined in the file."""
        if isinstance(expr, cst.Name):
            b = self.lookup(expr.value, at if at is not None else expr)
            expr = b.value if b is not None else None
        if not (isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name)):
            return None
        cls = self.value_of(expr.func, at)
        if not isinstance(cls, ClassValue) or not isinstance(cls.node, cst.ClassDef):
            return None
        for stmt in cls.node.body.body:
            if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__call__":
                return stmt
        return None

    def calls_to(self, *qualnames: str) -> Iterator[cst.Call]:
        wanted = set(qualnames)
        for call in self.index.get("Call", ()):
            if self.callee(call) in wanted:
                yield call

    def trainer_calls(self) -> Iterator[cst.Call]:
        # memoised: several rules ask for every model and every Trainer (quadratic on big files otherwise)
        if self._trainer_calls is None:
            self._trainer_calls = [c for c in self.index.get("Call", ()) if self.is_trainer_class(c.func, c)]
        return iter(self._trainer_calls)

    def method_calls(self, name: str) -> Iterator[cst.Call]:
        if self._method_calls is None:
            by_name: dict[str, list[cst.Call]] = {}
            for call in self.index.get("Call", ()):
                if isinstance(call.func, cst.Attribute):
                    by_name.setdefault(call.func.attr.value, []).append(call)
            self._method_calls = by_name
        return iter(self._method_calls.get(name, ()))

    def function_named(self, name: str) -> cst.FunctionDef | None:
        functions: list[cst.FunctionDef] = self.index.get("FunctionDef", [])
        return next((fn for fn in functions if fn.name.value == name), None)
