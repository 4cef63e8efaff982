"""Datasets and tokenization: what a ``.map(f)`` does with the tokenizer, and the hub datasets a
file loads."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import libcst as cst

from trainlint import knowledge
from trainlint.facts.dataflow import Dataflow
from trainlint.facts.expr import UNKNOWN, argument, has_star_kwargs, literal
from trainlint.facts.walk import iter_calls, iter_nodes
from trainlint.facts.values import ClassValue, DatasetValue, FunctionValue, Tokenization, TokenizerValue

_TOKENIZER_NAME = re.compile(r"token", re.I)


def looks_like_group_texts(fn: cst.FunctionDef | cst.Lambda) -> bool:
    """The classic ``group_texts``: concatenates examples and cuts fixed-size blocks."""
    if isinstance(fn, cst.FunctionDef) and "group" in fn.name.value.lower():
        return True
    # `[t[i : i + block_size] for i in range(0, total_length, block_size)]`
    for node in iter_nodes(fn, (cst.Slice,)):
        if isinstance(node, cst.Slice) and isinstance(node.upper, cst.BinaryOperation) and isinstance(node.upper.operator, cst.Add):
            lower = node.lower
            if isinstance(lower, cst.Name) and isinstance(node.upper.left, cst.Name) and node.upper.left.value == lower.value:
                return True
    return False


class DatasetFacts(Dataflow):
    """Tokenization of ``.map()`` functions and the datasets a file loads. Part of :class:`Facts`."""

    def _map_tokenization(self, call: cst.Call, at: cst.CSTNode) -> Tokenization:
        expr = argument(call, "function", 0)
        fn = self.function_def(expr, at) or self._callable_instance(expr, at)
        if fn is None:
            return Tokenization(calls_tokenizer=False, padding=UNKNOWN)
        t = self.tokenization_of(fn)
        if t.calls_tokenizer and t.padding in (True, "longest") and self._single_batch(call, at):
            # `map(f, batched=True, batch_size=None)`: padded to the longest of the whole split
            return dataclasses.replace(t, padding="do_not_pad_but_fixed")
        return t

    def _single_batch(self, call: cst.Call, at: cst.CSTNode) -> bool:
        """`.map(batched=True, batch_size=None | 0 | -1 | len(...))` in one process: the function sees the
        whole split as one batch."""
        if self.constant(argument(call, "batched"), at) is not True:
            return False
        procs = argument(call, "num_proc")
        if procs is not None and self.constant(procs, at) not in (None, 1):
            return False
        size = argument(call, "batch_size")
        if size is None:
            return False
        if isinstance(size, cst.Call) and isinstance(size.func, cst.Name) and size.func.value == "len":
            return True
        v = self.constant(size, at)
        return v is None or (isinstance(v, int) and not isinstance(v, bool) and v <= 0)

    def tokenization_of(self, fn: cst.FunctionDef | cst.Lambda, _depth: int = 0) -> Tokenization:
        if fn in self._tok:
            return self._tok[fn]
        self._tok[fn] = Tokenization()
        calls_tok = False
        padding: object = None
        truncation: object = None
        groups = looks_like_group_texts(fn)
        for c in iter_calls(fn.body if isinstance(fn, cst.FunctionDef) else fn.body):
            if self.is_tokenizer_call(c, fn):
                calls_tok = True
                pad = argument(c, "padding")
                p = None if pad is None else self.constant(pad, fn)
                if has_star_kwargs(c) and pad is None:
                    p = UNKNOWN
                # several tokenizer calls: fixed length only if every one is
                if padding is None or padding == p:
                    padding = p
                elif p != "max_length":
                    padding = p if padding == "max_length" else padding
                tr = argument(c, "truncation")
                truncation = None if tr is None else self.constant(tr, fn)
            elif _depth < 2 and isinstance(c.func, cst.Name):
                inner = self.function_def(c.func, fn if fn in self.where else None)
                if inner is not None and inner is not fn:
                    t = self.tokenization_of(inner, _depth + 1)
                    if t.calls_tokenizer:
                        calls_tok, padding, truncation = True, t.padding, t.truncation
                    groups = groups or t.groups
        result = Tokenization(calls_tokenizer=calls_tok, padding=padding if calls_tok else UNKNOWN, truncation=truncation, groups=groups)
        self._tok[fn] = result
        return result

    def is_tokenizer_call(self, call: cst.Call, at: cst.CSTNode | None = None) -> bool:
        func = call.func
        target = func
        if isinstance(func, cst.Attribute):
            if func.attr.value in ("encode_plus", "batch_encode_plus", "__call__"):
                target = func.value
            elif func.attr.value.lower().endswith("tokenizer"):
                return True  # self.tokenizer(...)
            else:
                return False
        if isinstance(target, cst.Name):
            v = self.value_of(target, at if at is not None and at in self.where else None)
            if isinstance(v, TokenizerValue):
                return True
            if isinstance(v, (FunctionValue, ClassValue)):
                return False  # a function (or class) of the file named like a tokenizer: what it does is in its body
            return bool(_TOKENIZER_NAME.search(target.value)) and target.value != "tokenize"
        if isinstance(target, cst.Attribute):  # self.tokenizer(...)
            return bool(_TOKENIZER_NAME.search(target.attr.value))
        return False

    def datasets_in_file(self) -> list[DatasetValue]:
        out = []
        for call in self.calls_to("datasets.load_dataset"):
            v = self.value_of(call)
            if isinstance(v, DatasetValue):
                out.append(v)
        return out

    def known_dataset(self) -> knowledge.DatasetInfo | None:
        """The one known hub dataset this file loads (None if none or several different)."""
        infos = {d.info for d in self.datasets_in_file() if d.info is not None}
        return infos.pop() if len(infos) == 1 else None

    def tokenized_twin(self, raw: DatasetValue) -> tuple[str, DatasetValue] | None:
        """A name bound to a tokenized version of the same ``load_dataset`` call as ``raw``."""
        for names in self.bindings.values():
            for name, binds in names.items():
                for b in binds:
                    if isinstance(b.value, cst.Call):
                        v = self.value_of(b.value, b.value)
                        if isinstance(v, DatasetValue) and v.origin is raw.origin and v.tokenized:
                            return name, dataclasses.replace(v, split=raw.split)
        return None


@dataclasses.dataclass(frozen=True)
class Step:
    kind: str  # "key" (ds["train"]), "method" (ds.m(...)), "index" (other subscripts)
    name: str | None  # the split key / method name
    node: Any  # a cst.Subscript (key, index) or a cst.Call (method), as ``kind`` says


def dataset_chain(facts: Dataflow, expr: cst.CSTNode | None, at: cst.CSTNode | None, _depth: int = 0,
                  any_origin: bool = False) -> tuple[cst.Call, tuple[Step, ...]] | None:
    """The `load_dataset(...)` call ``expr`` derives from and the steps applied since, in order
    (through names, `ds["train"]` and method calls); None if anything else intervenes. ``any_origin``:
    the chain may start at any other call too (`DatasetDict(...)`, a helper of the file)."""
    if expr is None or _depth > 20:
        return None
    if isinstance(expr, cst.Name):
        b = facts.lookup(expr.value, at if at in facts.where else expr)
        if b is None or not isinstance(b.value, (cst.Call, cst.Subscript, cst.Name)):
            return None
        return dataset_chain(facts, b.value, b.value if b.value in facts.where else at, _depth + 1, any_origin)
    if isinstance(expr, cst.Subscript):
        inner = dataset_chain(facts, expr.value, at, _depth + 1, any_origin)
        if inner is None or len(expr.slice) != 1:
            return None
        sl = expr.slice[0].slice
        key = literal(sl.value) if isinstance(sl, cst.Index) else UNKNOWN
        step = Step("key", key, expr) if isinstance(key, str) else Step("index", None, expr)
        return inner[0], inner[1] + (step,)
    if isinstance(expr, cst.Call):
        if facts.callee(expr) == "datasets.load_dataset":
            return expr, ()
        if isinstance(expr.func, cst.Attribute):
            inner = dataset_chain(facts, expr.func.value, at, _depth + 1, any_origin)
            if inner is None:
                return (expr, ()) if any_origin and facts.callee(expr) else None
            return inner[0], inner[1] + (Step("method", expr.func.attr.value, expr),)
        if any_origin:
            return expr, ()
    return None
