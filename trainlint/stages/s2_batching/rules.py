"""TL2xx: batching — forming a batch from the examples (collation, padding)."""

from __future__ import annotations

import re
from typing import Any, cast

import libcst as cst

from trainlint import codemod
from trainlint.facts import (
    TRAINER_WORDS,
    TRAINING_ARGS_CLASSES,
    TRAINING_ARGS_WORDS,
    UNKNOWN,
    DatasetValue,
    ModelValue,
    TFDatasetValue,
    TokenizerValue,
    argument,
    given,
    has_star_kwargs,
    iter_calls,
    iter_nodes,
    keyword,
    literal,
    positional,
)
from trainlint.facts.calls import call_graph, is_parameter
from trainlint.facts.datasets import dataset_chain
from trainlint.facts.expr import dotted
from trainlint.facts.expr import short_code as _short
from trainlint.facts.loops import loop_facts, loops_around
from trainlint.facts.objects import Encoding
from trainlint.facts.processes import lightning_processes
from trainlint.facts.program import program
from trainlint.findings import Applicability, Severity
from trainlint.pins import ABSENT, VALID, status, version_text, versions_of
from trainlint.rule import Rule, register


#: `Trainer` methods that form the batches: a subclass overriding one may collate otherwise
_BATCHING_HOOKS = frozenset({"get_train_dataloader", "get_eval_dataloader", "get_test_dataloader",
                             "_get_collator_with_removed_columns"})


def _overrides(facts, trainer: cst.Call, hooks: frozenset[str]) -> bool:
    """The Trainer is a subclass of the file that overrides one of ``hooks``."""
    cls = facts.value_of(trainer.func, trainer) if isinstance(trainer.func, cst.Name) else None
    node = getattr(cls, "node", None)
    return isinstance(node, cst.ClassDef) and any(
        isinstance(st, cst.FunctionDef) and st.name.value in hooks for st in node.body.body)


def _map_functions(facts, expr, at) -> list[cst.FunctionDef | cst.Lambda] | None:
    """The functions of the `.map` steps a dataset expression went through (None: a step not followed)."""
    steps = _map_steps(facts, expr, at)
    if steps is None:
        return None
    out = []
    for meth, call in steps:
        if meth == "map":
            fn = facts.function_def(argument(call, "function", 0), call)
            if fn is not None:
                out.append(fn)
    return out


@register
class NoPaddingCollator(Rule):
    """`Trainer` without a tokenizer or data collator, on data tokenized without fixed-length padding."""

    code = "TL201"
    name = "no-padding-collator"
    severity = Severity.ERROR
    measured_from = 4
    probe = ("Forms one batch with `trainer.get_train_dataloader()`; a collation failure confirms it "
             "and names the column whose lengths differ.")
    # a Trainer (or a DataLoader with transformers' default collator), and a `datasets` dataset tokenized by `.map`
    gate = ((*TRAINER_WORDS, "default_data_collator", "DefaultDataCollator"), ("transformers",), ("datasets",),
            ("map",))
    fix = Applicability.UNSAFE

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        if (facts.callee(node) or "") == "torch.utils.data.DataLoader":
            self._loader(node)
            return
        if not facts.is_trainer_class(node.func, node) or has_star_kwargs(node):
            return
        # premise 1: the Trainer collates with `default_data_collator`
        if given(node, "data_collator", 2) is not None or _overrides(facts, node, _BATCHING_HOOKS):
            return
        if given(node, "processing_class", 5) is not None or given(node, "tokenizer") is not None:
            return
        if any(self._sets_collator_later(a) for a in facts.index.get("Assign", ())):
            return
        for param, pos in (("train_dataset", 3), ("eval_dataset", 4)):
            expr = argument(node, param, pos)
            if expr is None:
                continue
            # premise 3: a batch holds more than one example
            size = self._batch_size(node, param.split("_")[0])
            if size == 1:
                continue
            value = facts.value_of(expr, node)
            shown = self.ctx.code(expr)
            data: cst.BaseExpression | None = expr
            if isinstance(value, DatasetValue) and value.raw:
                # TL101 reports the raw dataset; once it is swapped for its tokenized twin, this applies
                twin = facts.tokenized_twin(value)
                if twin is not None:
                    shown, value = twin[0], twin[1]
                    data = None
            # premise 2: tokenized by a `.map` that leaves sequences of different lengths
            if not isinstance(value, DatasetValue) or not value.tokenized or value.fixed_length:
                continue
            if data is not None and any(_pads_by_hand(fn) for fn in _map_functions(facts, data, node) or ()):
                continue
            trainer = self.ctx.code(node.func)
            unknown = [m for m in value.maps if m.calls_tokenizer and m.padding is UNKNOWN]
            if value.unpadded and size is not UNKNOWN:
                self.report(
                    node.func,
                    f"`{trainer}` has no tokenizer or `data_collator`, and the `input_ids` of `{_short(shown)}` differ "
                    "in length: the default collator cannot stack them",
                    hint="its `.map` tokenizes without padding to a fixed length and `default_data_collator` "
                    "stacks the examples as they are: the first batch fails with \"ValueError: expected sequence "
                    "of length X at dim 1 (got Y)\"; pass `data_collator=DataCollatorWithPadding(tokenizer)` (or "
                    "`processing_class=tokenizer`, which pads each batch)",
                    fix=self._fix(node),
                )
                return
            if unknown or value.unpadded:
                decided = "its batch size" if not unknown else f"whether `{_short(shown)}` is padded to a fixed length"
                self.report(
                    node.func,
                    f"`{trainer}` has no tokenizer or `data_collator`, and {decided} is decided at run time: "
                    "`--probe` forms one batch",
                    hint=f"if the `input_ids` of `{shown}` have different lengths and a batch holds several "
                    "examples, `default_data_collator` cannot stack them (\"expected sequence of length X at dim 1 "
                    "(got Y)\"): pass `data_collator=DataCollatorWithPadding(tokenizer)`",
                    severity=Severity.INFO,
                    fix=self._fix(node),
                )
                return

    @staticmethod
    def _sets_collator_later(assign: cst.Assign) -> bool:
        """`trainer.data_collator = ...` after the Trainer is made."""
        return any(isinstance(t.target, cst.Attribute) and t.target.attr.value == "data_collator" for t in assign.targets)

    def _loader(self, node: cst.Call) -> None:
        """`DataLoader(ds, shuffle=True, batch_size=8, collate_fn=default_data_collator)` over data a batched
        `.map` padded with `padding=True`: each map batch (1000 rows) is padded to its own longest row, and a
        shuffled loader batch mixes rows of several map batches. Reported only for that explicit per-map-batch
        padding (a map function that calls the tokenizer without padding may pad by hand afterwards, as
        peft's causal-LM examples do) and a loader whose batches cross map batches."""
        facts = self.ctx.facts
        if has_star_kwargs(node) or keyword(node, "batch_sampler") is not None:
            return
        # premise 1: the loader stacks with transformers' default collator
        collate = argument(node, "collate_fn")
        if collate is None or not self._default_collator(collate, node):
            return
        # premise 4: a loader batch holds more than one example
        size_arg = argument(node, "batch_size", 1)
        size = facts.constant(size_arg, node) if size_arg is not None else 1  # the DataLoader's default: 1
        if size == 1 or size is None or size is UNKNOWN:
            return
        expr = argument(node, "dataset", 0)
        value = facts.value_of(expr, node) if expr is not None else None
        if not isinstance(value, DatasetValue) or not value.tokenized or value.fixed_length:
            return
        # premise 2: a batched `.map` padded each of its batches to that batch's longest row
        padded = self._padded_per_map_batch(expr, node)
        if padded is None:
            return
        # premise 3: a loader batch takes rows of two map batches
        shuffled = facts.constant(argument(node, "shuffle", 2), node) is True
        map_size = facts.constant(argument(padded, "batch_size"), padded) if argument(padded, "batch_size") else 1000
        crosses = isinstance(size, int) and isinstance(map_size, int) and map_size > 0 and map_size % size != 0
        if not (shuffled or crosses):
            return  # in order, and every loader batch inside one map batch: the lengths agree
        self.report(
            collate,
            f"`{_short(self.ctx.code(collate))}` stacks `{_short(self.ctx.code(expr))}` as it is, but its batched "
            "`.map` padded `input_ids` per map batch (`padding=True`): mixed batches cannot be stacked",
            hint="`padding=True` in a batched `.map` pads each map batch (1000 rows) to its own longest row, and a "
            "loader batch that takes rows of two map batches fails with \"ValueError: expected sequence of length "
            "X at dim 1 (got Y)\"; pad per loader batch: `collate_fn=DataCollatorWithPadding(tokenizer)` (or "
            "`padding=\"max_length\"` in the map function)",
        )

    def _padded_per_map_batch(self, expr, at) -> cst.Call | None:
        """The last `.map` of the chain that pads each of its batches to that batch's longest row."""
        facts = self.ctx.facts
        chain = dataset_chain(facts, expr, at)
        if chain is None:
            return None
        padded = None
        for step in chain[1]:
            if step.kind != "method" or step.name != "map":
                continue
            fn = facts.function_def(argument(step.node, "function", 0), step.node)
            if fn is None:
                continue
            t = facts.tokenization_of(fn)
            if not t.calls_tokenizer:
                continue
            if t.padding in (True, "longest") and facts.constant(argument(step.node, "batched"), step.node) is True \
                    and not _pads_by_hand(fn):
                padded = step.node
            elif t.padding is not None:
                padded = None  # padded again (or unknown) by a later map
        return padded

    def _default_collator(self, expr, at) -> bool:
        facts = self.ctx.facts
        if facts.qualname(expr) == "transformers.default_data_collator":
            return True
        call = _bound_call(facts, expr, at)
        return call is not None and facts.callee(call) == "transformers.DefaultDataCollator"

    def _batch_size(self, trainer: cst.Call, split: str):
        """The literal `per_device_{split}_batch_size` of the TrainingArguments given to ``trainer``."""
        facts = self.ctx.facts
        args = argument(trainer, "args", 1)
        at: cst.CSTNode = trainer
        if isinstance(args, cst.Name):
            b = facts.lookup(args.value, trainer)
            args = b.value if b is not None else None
            at = args if args is not None and args in facts.where else trainer
        if not isinstance(args, cst.Call) or facts.callee(args) not in TRAINING_ARGS_CLASSES:
            return None
        size = argument(args, f"per_device_{split}_batch_size") or argument(args, f"per_gpu_{split}_batch_size")
        return facts.constant(size, at) if size is not None else None  # UNKNOWN: given, not a constant

    def _fix(self, trainer: cst.Call):
        """Add `data_collator=DataCollatorWithPadding(<tokenizer>)`, the tokenizer being the one the
        `.map()` function calls, when that name is visible at the Trainer."""
        tokenizer = self._tokenizer_name(trainer)
        if tokenizer is None:
            return None
        got = codemod.ensure_name(self.ctx, "transformers.DataCollatorWithPadding",
                                  "from transformers import DataCollatorWithPadding", "DataCollatorWithPadding")
        if got is None:
            return None
        collator, add = got
        value = f"{collator}({tokenizer})"
        pos = positional(trainer)
        # `Trainer(model, args, None, train)`: the collator's place is taken by an explicit None
        edit = (self.ctx.replace(pos[2].value, value) if len(pos) > 2 and not any(a.star for a in trainer.args)
                else codemod.add_keyword(self.ctx, trainer, "data_collator", value))
        return self.ctx.fix(Applicability.UNSAFE, f"Pass `data_collator={value}`", edit,
                            *([add] if add is not None else []))

    def _tokenizer_name(self, trainer: cst.Call) -> str | None:
        facts = self.ctx.facts
        for call in facts.method_calls("map"):
            fn = facts.function_def(argument(call, "function", 0), call)
            if fn is None:
                continue
            for c in iter_calls(fn.body):
                if facts.is_tokenizer_call(c, fn):
                    names = [c.func.value if isinstance(c.func, cst.Attribute) else c.func]
                else:  # `lambda b: encode(tokenizer, b["text"])`: the tokenizer handed to a helper
                    names = [a.value for a in c.args
                             if isinstance(a.value, cst.Name) and isinstance(facts.value_of(a.value, call), TokenizerValue)]
                for target in names:
                    if isinstance(target, cst.Name) and facts.lookup(target.value, trainer) is not None:
                        return target.value
        return None


@register
class BatchKeysNotInForward(Rule):
    """(probe) The batch carries keys the model's `forward` does not accept."""

    code = "TL207"
    name = "batch-keys-not-in-forward"
    severity = Severity.ERROR
    probe = "Compares the keys of one real batch with the signature of `model.forward`."


# ---------------------------------------------------------------------------------------------
# Catalog breadth: TL202–TL206.

#: collators that pad every feature they get (through `tokenizer.pad`): strings break them
_PADDING_COLLATORS = frozenset({
    "transformers.DataCollatorWithPadding", "transformers.DataCollatorForSeq2Seq",
    "transformers.DataCollatorForTokenClassification", "transformers.DataCollatorForLanguageModeling",
})
#: columns of the known hub datasets that hold numbers, not strings
_NUMERIC_COLUMNS = frozenset({"label", "labels", "idx", "pos_tags", "chunk_tags", "ner_tags", "start1", "start2",
                              "end1", "end2", "coarse_label", "fine_label"})
#: arguments of the `forward` of transformers models (and the label names the Trainer keeps)
_FORWARD_ARGS = frozenset({
    "input_ids", "attention_mask", "token_type_ids", "position_ids", "head_mask", "inputs_embeds", "labels",
    "label", "label_ids", "output_attentions", "output_hidden_states", "return_dict", "pixel_values",
    "pixel_mask", "decoder_input_ids", "decoder_attention_mask", "decoder_inputs_embeds", "start_positions",
    "end_positions", "input_values", "input_features", "past_key_values", "use_cache", "encoder_outputs",
    "bbox", "image", "cache_position", "decoder_head_mask", "cross_attn_head_mask", "logits_to_keep",
    "visual_feats", "visual_pos", "image_grid_thw", "pixel_values_videos",
})


#: raw columns no transformers `forward` takes: a collator reading one needs them kept
_RAW_COLUMNS = frozenset({
    "text", "texts", "sentence", "sentences", "sentence1", "sentence2", "question", "context", "premise",
    "hypothesis", "tokens", "title", "content", "document", "summary", "article", "highlights", "dialogue",
    "source", "target", "translation", "prompt", "response", "instruction", "input", "output", "answer",
    "answers", "caption", "captions", "path", "file", "filename", "image_path", "audio", "review", "comment",
    "query", "passage", "chosen", "rejected", "messages", "conversations", "src", "tgt", "label_text",
})


#: the class names of `_PADDING_COLLATORS` (gate words)
_PADDING_COLLATOR_WORDS = tuple(sorted(q.rsplit(".", 1)[-1] for q in _PADDING_COLLATORS))
#: dataset methods after which the columns are no longer the map's (or are chosen explicitly)
_COLUMN_CHOOSING = frozenset({"remove_columns", "select_columns", "set_format", "with_format", "rename_column",
                              "rename_columns", "flatten", "to_tf_dataset", "with_transform", "set_transform"})
#: in-place methods that change the columns or the format of a dataset
_INPLACE_FORMAT = ("set_format", "set_transform", "reset_format", "remove_columns_", "rename_column_")


def _example_source(facts, expr, at) -> cst.BaseExpression | None:
    """The dataset a list of examples is drawn from: `[ds[i] for i in range(2)]` or `[ds[0], ds[1]]` (through a
    name bound to it)."""
    if isinstance(expr, cst.Name):
        b = facts.lookup(expr.value, at)
        expr = b.value if b is not None else None
    elts: list[cst.BaseExpression]
    if isinstance(expr, cst.ListComp) and isinstance(expr.elt, cst.Subscript):
        elts = [expr.elt]
    elif isinstance(expr, cst.List) and expr.elements:
        elts = [e.value for e in expr.elements]
    else:
        return None
    sources = set()
    for e in elts:
        if not (isinstance(e, cst.Subscript) and len(e.slice) == 1 and isinstance(e.slice[0].slice, cst.Index)):
            return None
        if isinstance(literal(e.slice[0].slice.value), str):
            return None  # a column, not an example
        sources.add(e.value)
    if len(sources) != 1:
        codes = {facts.module.code_for_node(s) for s in sources}
        if len(codes) != 1:
            return None
    return next(iter(sources))


def _map_steps(facts, expr, at) -> list[tuple[str | None, cst.Call]] | None:
    """The method calls a dataset expression went through, in order (through names, subscripts and method
    chains, from any origin call); None when something else intervenes (a comprehension)."""
    chain = dataset_chain(facts, expr, at, any_origin=True)
    return None if chain is None else [(s.name, s.node) for s in chain[1] if s.kind == "method"]


def _kept_text_columns(facts, data, at) -> list[str]:
    """The columns the tokenizing `.map` of ``data`` read and gave to the tokenizer (text, then), which it kept:
    no `remove_columns` there or later, no change of format or columns, nothing in place on a dataset."""
    if any(next(facts.method_calls(m), None) is not None for m in _INPLACE_FORMAT):
        return []
    value = facts.value_of(data, at)
    if not isinstance(value, DatasetValue) or not value.tokenized or value.columns_removed:
        return []
    steps = _map_steps(facts, data, at)
    if not steps:
        return []
    kept: list[str] = []
    for meth, call in steps:
        if meth in _COLUMN_CHOOSING or has_star_kwargs(call):
            return []
        if meth != "map":
            continue
        if keyword(call, "remove_columns") is not None or keyword(call, "input_columns") is not None:
            return []
        fn = facts.function_def(argument(call, "function", 0), call)
        if fn is not None:
            kept.extend(c for c in _tokenized_columns(facts, fn) if c not in kept)
    return kept


def _tokenized_columns(facts, fn) -> list[str]:
    """`examples["col"]` reads of the map function's first parameter that reach a tokenizer call (directly, or
    through a local name bound in the function)."""
    params = fn.params.params if fn.params else ()
    if not params:
        return []
    pname = params[0].name.value

    def reads(node) -> list[str]:
        out = []
        for sub in iter_nodes(node, (cst.Subscript,)):
            if (isinstance(sub.value, cst.Name) and sub.value.value == pname and len(sub.slice) == 1
                    and isinstance(sub.slice[0].slice, cst.Index)):
                key = literal(sub.slice[0].slice.value)
                if isinstance(key, str):
                    out.append(key)
        return out

    local: dict[str, list[str]] = {}
    if isinstance(fn, cst.FunctionDef):
        for assign in iter_nodes(fn.body, (cst.Assign,)):
            for t in assign.targets:
                if isinstance(t.target, cst.Name):
                    local.setdefault(t.target.value, []).extend(reads(assign.value))
    cols: list[str] = []
    for c in iter_calls(fn.body):
        helper = facts.function_def(c.func, fn if fn in facts.where else None) if isinstance(c.func, cst.Name) else None
        if not (facts.is_tokenizer_call(c, fn) or (
                isinstance(helper, cst.FunctionDef) and helper is not fn and facts.tokenization_of(helper).calls_tokenizer)):
            continue  # neither a tokenizer call nor a helper of the file that calls one
        for a in c.args:
            if a.keyword is not None and a.keyword.value not in ("text", "text_pair", "text_target"):
                continue
            found = reads(a.value) + [k for n in iter_nodes(a.value, (cst.Name,)) for k in local.get(n.value, ())]
            cols.extend(k for k in found if k not in cols)
    return cols


def _pads_by_hand(fn) -> bool:
    """The function pads sequences itself (`[tokenizer.pad_token_id] * (max_length - len(ids))`, `tokenizer.pad`)."""
    for node in iter_nodes(fn, (cst.Attribute,)):
        if node.attr.value in ("pad_token_id", "pad", "pad_sequence"):
            return True
    return False


def _training_arguments(facts, trainer: cst.Call) -> cst.Call | None:
    """The `TrainingArguments(...)` call given to a Trainer (directly or through a name)."""
    expr = argument(trainer, "args", 1)
    if isinstance(expr, cst.Name):
        b = facts.lookup(expr.value, trainer)
        expr = b.value if b is not None else None
    if isinstance(expr, cst.Call) and facts.callee(expr) in TRAINING_ARGS_CLASSES:
        return expr
    return None


def _bound_call(facts, expr, at) -> cst.Call | None:
    if isinstance(expr, cst.Name):
        b = facts.lookup(expr.value, at)
        return b.value if b is not None and isinstance(b.value, cst.Call) else None
    return expr if isinstance(expr, cst.Call) else None


@register
class UnpaddableColumns(Rule):
    """String columns reach a padding collator (`remove_unused_columns=False`), or a custom collator reads
    columns that `remove_unused_columns=True` has dropped."""

    code = "TL202"
    name = "unpaddable-columns"
    severity = Severity.ERROR
    measured_from = 4
    probe = ("Forms one batch with `trainer.get_train_dataloader()`; a collation failure with string columns "
             "reaching the collator confirms it.")
    # either a Trainer given `TrainingArguments(...)`, with string columns (`remove_unused_columns=False`, a
    # tokenized `load_dataset(...)` dataset) or a custom collator for a `from_pretrained` model; or a padding
    # collator of transformers called on examples (or given to a DataLoader) of a dataset tokenized by `.map`
    gate = (("transformers",), (*TRAINER_WORDS, *_PADDING_COLLATOR_WORDS), (*TRAINING_ARGS_WORDS, *_PADDING_COLLATOR_WORDS),
            ("remove_unused_columns", "from_pretrained", "map"), ("load_dataset", "from_pretrained", "map"),
            ("map", "from_pretrained"))

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        if self._kept_text_to_collator(node):
            return
        if not facts.is_trainer_class(node.func, node) or has_star_kwargs(node):
            return
        # premise 1: the Trainer removes the unused columns exactly as its `TrainingArguments` say
        targs = _training_arguments(facts, node)
        if targs is None or has_star_kwargs(targs) or _overrides(facts, node, _COLUMN_REMOVING_HOOKS):
            return
        ruc = keyword(targs, "remove_unused_columns")
        keep_all = ruc is not None and facts.constant(ruc.value, targs) is False
        if ruc is not None and not keep_all and facts.constant(ruc.value, targs) is not True:
            return
        collator_expr = given(node, "data_collator", 2)  # an explicit None: the default collator
        if keep_all:
            self._strings_to_padding(node, collator_expr)
        else:
            self._custom_collator(node, targs, collator_expr)

    def _kept_text_to_collator(self, node: cst.Call) -> bool:
        """`data_collator([ds["train"][i] for i in range(2)])` or `DataLoader(ds, collate_fn=data_collator)`
        with a padding collator, where `ds` was tokenized by a `.map` that kept the text columns it tokenized
        (no `remove_columns`): the collator tries to make tensors of the strings. True when ``node`` is such
        a call (reported or not)."""
        facts = self.ctx.facts
        if (facts.callee(node) or "") == "torch.utils.data.DataLoader":
            collator, data = argument(node, "collate_fn"), argument(node, "dataset", 0)
            if collator is None or data is None:
                return True
        elif isinstance(node.func, cst.Name) and len(node.args) == 1 and node.args[0].keyword is None \
                and not node.args[0].star:
            collator, data = node.func, _example_source(facts, node.args[0].value, node)
            if data is None:
                return False
        else:
            return False
        call = _bound_call(facts, collator, node)
        if call is None or facts.callee(call) not in _PADDING_COLLATORS:
            return True
        kept = _kept_text_columns(facts, data, node)
        if not kept:
            return True
        name = facts.callee(call).rsplit(".", 1)[-1]
        self.report(
            node.args[0].value if collator is node.func else data,
            f"`{_short(self.ctx.code(data))}` still holds the text column{'s' if len(kept) > 1 else ''} "
            f"{_names(kept)} its `.map` tokenized, and `{name}` cannot pad strings",
            hint="the `.map` has no `remove_columns`, and a padding collator tries to make tensors of every column: "
            "forming the batch fails with \"ValueError: Unable to create tensor, you should probably activate "
            f"truncation and/or padding ... Perhaps your features (`{kept[0]}` in this case) have excessive "
            f"nesting\" (or \"too many dimensions 'str'\"); drop the raw columns in the `.map`: "
            f"`remove_columns=[{', '.join(repr(c) for c in kept)}, ...]` (every raw column: the raw split's "
            "`.column_names`), or `.remove_columns([...])` before batching",
        )
        return True

    def _strings_to_padding(self, node: cst.Call, collator_expr) -> None:
        facts = self.ctx.facts
        if collator_expr is None:
            tok = given(node, "processing_class", 5) or given(node, "tokenizer")
            if tok is None:
                return
            collator = "the default `DataCollatorWithPadding`"
        else:
            call = _bound_call(facts, collator_expr, node)
            if call is None or facts.callee(call) not in _PADDING_COLLATORS:
                return
            collator = f"`{facts.callee(call).rsplit('.', 1)[-1]}`"
        expr = argument(node, "train_dataset", 3)
        chain = dataset_chain(facts, expr, node)
        if chain is None:
            return
        load, steps = chain
        value = facts.value_of(expr, node)
        if not isinstance(value, DatasetValue) or not value.tokenized or value.info is None:
            return
        for s in steps:
            if s.kind == "index":
                return
            if s.kind == "method" and (s.name in ("remove_columns", "select_columns", "set_format", "with_format",
                                                   "rename_column", "rename_columns", "flatten")
                                       or keyword(s.node, "remove_columns") is not None
                                       or keyword(s.node, "input_columns") is not None):
                return
            if s.kind == "method" and s.name == "map" and has_star_kwargs(s.node):
                return
        strings = [c for c in value.info.columns if c not in _NUMERIC_COLUMNS and c != value.info.label_column]
        if not strings:
            return
        self.report(
            expr,
            f"`remove_unused_columns=False` keeps the string column{'s' if len(strings) > 1 else ''} "
            f"{_names(strings)} of {value.info.display} in `{_short(self.ctx.code(expr))}`, which {collator} "
            "cannot pad",
            hint="the collator hands every column to `tokenizer.pad`: the first batch fails with \"ValueError: "
            "Unable to create tensor, you should probably activate truncation and/or padding ... Perhaps your "
            f"features (`{strings[0]}` in this case) have excessive nesting\"; drop them when tokenizing: "
            f"`.map(..., remove_columns={list(strings)!r})` (or keep `remove_unused_columns=True`)",
        )

    def _custom_collator(self, node: cst.Call, targs: cst.Call, collator_expr) -> None:
        facts = self.ctx.facts
        if collator_expr is None:
            return
        # premise 3: the Trainer keeps only what a known `forward` takes
        model = facts.value_of(argument(node, "model", 0), node)
        if not (isinstance(model, ModelValue) and model.transformers and model.pretrained):
            return
        remote = keyword(model.call, "trust_remote_code") if model.call is not None else None
        if remote is not None and facts.constant(remote.value, model.call) is not False:
            return  # the model's own code: its `forward` is not known
        fn = self._collator_function(collator_expr, node)
        if fn is None:
            return
        kept = set(_FORWARD_ARGS)
        forward = _own_forward(facts, model)
        if forward is not None:  # a model class of the file: the Trainer keeps what its `forward` takes
            params = forward.params
            if isinstance(params.star_kwarg, cst.Param):
                return
            kept |= {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
        owner = model.cls if forward is None else self.ctx.code(cast(Any, model.call).func.value)
        ln = keyword(targs, "label_names")
        if ln is not None:
            names = facts.constant(ln.value, targs)
            if not isinstance(names, list):
                return
            kept |= {n for n in names if isinstance(n, str)}
        made: set[str] | None = None  # the columns the data's own `.map` functions add (computed when needed)
        for sub, key in _example_reads(fn):
            if key in kept:
                continue
            what = ""
            if key not in _RAW_COLUMNS:
                if made is None:
                    made = self._made_columns(node, model)
                if key not in made:
                    continue
                what = " (added by the dataset's `.map`)"
            self.report(
                sub,
                f"the collator reads {key!r}{what}, which the Trainer drops (`{owner}.forward` does not take it): "
                f"\"KeyError: {key!r}\"",
                hint="with `remove_unused_columns=True` (the default) the Trainer drops every column the model's "
                "`forward` does not take before the collator sees the examples; pass `TrainingArguments(..., remove_unused_columns=False)` (and drop the columns the "
                "model does not take inside the collator)",
            )
            return

    def _made_columns(self, trainer: cst.Call, model) -> set[str]:
        """The columns the `.map` functions of the Trainer's datasets write (`out["word_ids"] = ...`) and nothing
        removes afterwards; empty when anything may change the columns in place."""
        facts = self.ctx.facts
        if any(next(facts.method_calls(m), None) is not None for m in _INPLACE_FORMAT):
            return set()
        made: set[str] = set()
        for expr in (argument(trainer, "train_dataset", 3), argument(trainer, "eval_dataset", 4)):
            made |= _columns_written_by_maps(facts, expr, trainer)
        return made

    def _collator_function(self, expr, at) -> cst.FunctionDef | cst.Lambda | None:
        facts = self.ctx.facts
        fn = facts.function_def(expr, at)
        if fn is not None:
            return fn
        call = _bound_call(facts, expr, at)
        if call is None or not isinstance(call.func, cst.Name):
            return None
        b = facts.lookup(call.func.value, at)
        if b is None or not isinstance(b.value, cst.ClassDef):
            return None
        methods = {stmt.name.value: stmt for stmt in b.value.body.body if isinstance(stmt, cst.FunctionDef)}
        # `__call__`, or the `torch_call` of a subclass of a transformers collator (its `__call__` calls it)
        return methods.get("__call__") or methods.get("torch_call")


def _own_forward(facts, model) -> cst.FunctionDef | None:
    """The `forward` of a model class of the file (`class Model(BertPreTrainedModel)` loaded with
    `Model.from_pretrained(...)`)."""
    call = model.call
    if call is None or not isinstance(call.func, cst.Attribute) or not isinstance(call.func.value, cst.Name):
        return None
    cls = facts.value_of(call.func.value, call)
    node = getattr(cls, "node", None)
    if not isinstance(node, cst.ClassDef):
        return None
    for st in node.body.body:
        if isinstance(st, cst.FunctionDef) and st.name.value == "forward":
            return st
    return None


#: `Trainer` methods that decide which columns reach the collator: a subclass overriding one may keep them
_COLUMN_REMOVING_HOOKS = frozenset({"_remove_unused_columns", "_set_signature_columns_if_needed",
                                    "_get_collator_with_removed_columns", "get_train_dataloader"})


def _columns_written_by_maps(facts, expr, at) -> set[str]:
    """The columns that the `.map` functions along the dataset chain of ``expr`` write into the examples they
    return (`result["word_ids"] = ...`, `return {"word_ids": ...}`) and no later step removes; empty when a
    step may choose the columns in a way not followed (`select_columns`, `set_format`, `with_transform`)."""
    if expr is None:
        return set()
    chain = dataset_chain(facts, expr, at, any_origin=True)
    if chain is None:
        return set()
    made: set[str] = set()
    for step in chain[1]:
        if step.kind != "method":
            continue
        call = step.node
        if step.name == "remove_columns":
            cols = facts.constant(argument(call, "column_names", 0), call)
            cols = [cols] if isinstance(cols, str) else cols
            if not isinstance(cols, list):
                return set()
            made -= set(cols)
        elif step.name in _COLUMN_CHOOSING or has_star_kwargs(call):
            return set()
        elif step.name == "map":
            removed = keyword(call, "remove_columns")
            if removed is not None:
                cols = facts.constant(removed.value, call)
                cols = [cols] if isinstance(cols, str) else cols
                made = made - set(cols) if isinstance(cols, list) else set()
            fn = facts.function_def(argument(call, "function", 0), call)
            if isinstance(fn, cst.FunctionDef):
                made |= _written_keys(facts, fn)
            elif isinstance(fn, cst.Lambda) and isinstance(fn.body, cst.Dict):
                made |= _dict_keys(fn.body)
    return made


def _dict_keys(d: cst.Dict) -> set[str]:
    return {k for el in d.elements if isinstance(el, cst.DictElement) and isinstance(k := literal(el.key), str)}


def _written_keys(facts, fn: cst.FunctionDef) -> set[str]:
    """The string keys a map function writes into the example (batch) it returns: the keys of a returned dict
    literal, or `r["key"] = ...` on the name `r` it returns."""
    keys: set[str] = set()
    names: set[str] = set()
    for ret in iter_nodes(fn.body, (cst.Return,)):
        w = facts.where.get(ret)
        if w is None or w.function is not fn or ret.value is None:
            continue
        if isinstance(ret.value, cst.Dict):
            keys |= _dict_keys(ret.value)
        elif isinstance(ret.value, cst.Name):
            names.add(ret.value.value)
    if names:
        for assign in iter_nodes(fn.body, (cst.Assign,)):
            for t in assign.targets:
                tgt = t.target
                if (isinstance(tgt, cst.Subscript) and isinstance(tgt.value, cst.Name) and tgt.value.value in names
                        and len(tgt.slice) == 1 and isinstance(tgt.slice[0].slice, cst.Index)):
                    key = literal(tgt.slice[0].slice.value)
                    if isinstance(key, str):
                        keys.add(key)
    return keys


def _example_reads(fn) -> list[tuple[cst.CSTNode, str]]:
    """`f["key"]` and `f.pop("key")` reads where `f` iterates the collator's list of examples (its first
    parameter, after `self`): both fail with `KeyError` when the column is missing."""
    params = [p.name.value for p in fn.params.params] if fn.params else []
    if params and params[0] == "self":
        params = params[1:]
    if not params:
        return []
    batch = params[0]
    loop_vars: set[str] = set()
    for node in iter_nodes(fn.body, (cst.CompFor, cst.For)):
        it = node.iter
        if isinstance(it, cst.Name) and it.value == batch and isinstance(node.target, cst.Name):
            loop_vars.add(node.target.value)
    out: list[tuple[cst.CSTNode, str]] = []
    for sub in iter_nodes(fn.body, (cst.Subscript, cst.Call)):
        if isinstance(sub, cst.Call):  # `f.pop("key")` without a default
            f = sub.func
            if (isinstance(f, cst.Attribute) and f.attr.value == "pop" and isinstance(f.value, cst.Name)
                    and f.value.value in loop_vars and len(sub.args) == 1 and sub.args[0].keyword is None
                    and not sub.args[0].star):
                key = literal(sub.args[0].value)
                if isinstance(key, str):
                    out.append((sub, key))
            continue
        if (isinstance(sub.value, cst.Name) and sub.value.value in loop_vars and len(sub.slice) == 1
                and isinstance(sub.slice[0].slice, cst.Index)):
            key = literal(sub.slice[0].slice.value)
            if isinstance(key, str):
                out.append((sub, key))
    return out


_TRAIN_NAME = re.compile(r"train", re.I)
_EVAL_NAME = re.compile(r"eval|valid|val\b|val_|_val|test|dev\b|dev_|_dev", re.I)


def _dataloader_dataset(facts, node: cst.Call) -> cst.BaseExpression | None:
    if facts.callee(node) != "torch.utils.data.DataLoader":
        return None
    return argument(node, "dataset", 0)


@register
class TrainLoaderNotShuffled(Rule):
    """A `DataLoader` over training data, without `shuffle=True` (or a sampler), that a training loop of the
    file iterates (or Lightning's `train_dataloader()` / `fit` takes)."""

    code = "TL203"
    name = "train-loader-not-shuffled"
    severity = Severity.WARNING
    default = False
    # "train" in the dataset's expression may be in a string (`ds["train"]`): no group for it
    gate = (("DataLoader",), ("torch",))

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        ds = _dataloader_dataset(facts, node)
        if ds is None or has_star_kwargs(node):
            return
        shown = self.ctx.code(ds)
        names = _loader_names(facts, node)
        said = [shown, *names]
        if not any(_TRAIN_NAME.search(t) for t in said) or any(_EVAL_NAME.search(t) for t in said):
            return
        if keyword(node, "sampler") is not None or keyword(node, "batch_sampler") is not None:
            return
        if "IterableDataset" in self.ctx.source or "streaming=True" in self.ctx.source:
            return  # an iterable dataset cannot be shuffled by the loader
        sh = argument(node, "shuffle", 2)
        if sh is not None and facts.constant(sh, node) is not False:
            return
        if _synthetic(facts, ds, node):
            return  # random draws: no order to change
        size = argument(node, "batch_size", 1)
        if isinstance(size, cst.Call) and isinstance(size.func, cst.Name) and size.func.value == "len":
            return  # the whole dataset in one batch: no order to change
        how = _training_use(facts, node, names, self.ctx.code)
        if how is None:
            return  # a loader for one look at a batch (`next(iter(loader))`), an embedding pass, a prediction
        self.report(
            node.func,
            f"the training loader over `{shown}` does not shuffle ({how}): every epoch visits the examples in the "
            "same stored order — on data stored by label or source each batch holds one class and the loss "
            "oscillates, and on any data the fixed order costs accuracy",
            hint="pass `shuffle=True` (or a `sampler`, e.g. `DistributedSampler`)",
        )


#: calls around the iterable of a `for` that hand its items on (`enumerate(loader)`, `tqdm(loader)`)
_ITER_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "zip", "trange", "track", "progress_bar", "islice"})


def _loader_names(facts, node: cst.Call) -> list[str]:
    """The names a loader is known by: the targets it is assigned to (`train_loader`, `self.train_loader`),
    the names the file's own callers give a function that returns it (`tl, vl = get_loaders()`)."""
    out: list[str] = []
    for holder in facts.holders(node):
        if isinstance(holder, cst.Assign):
            for t in holder.targets:
                targets = t.target.elements if isinstance(t.target, (cst.Tuple, cst.List)) else [t.target]
                if len(targets) == 1:
                    d = dotted(targets[0].value if isinstance(targets[0], cst.Element) else targets[0])
                    if d:
                        out.append(d)
        elif isinstance(holder, cst.Return):
            fn = facts.where[holder].function
            if isinstance(fn, cst.FunctionDef):
                out.append(fn.name.value + "()")
                for caller in call_graph(facts).callers(fn):
                    for h in facts.holders(caller):
                        if isinstance(h, cst.Assign):
                            out.extend(d for t in h.targets if (d := dotted(t.target)))
    return out


def _training_use(facts, node: cst.Call, names: list[str], code) -> str | None:
    """How the loader reaches training: a `for` loop over it (by name, through `enumerate`/`tqdm`) that runs
    `backward()` or an optimizer step, itself or through the file's functions it calls; Lightning's
    `train_dataloader()` hook; a `fit(...)` call given it. None: the file shows no training use."""
    lasts = {n.rsplit(".", 1)[-1] for n in names if not n.endswith("()")}
    if any(n == "train_dataloader()" for n in names):
        return None if lightning_processes(facts, trainer_only=True) is not None else "Lightning's `train_dataloader()` returns it, on one device"
    for loop in _training_loops(facts):
        if (loop.iter is node or lasts & _iterated_names(facts, loop, node)) and not _one_pass(facts, loop):
            return f"the training loop `for ... in {code(loop.iter)}` iterates it"
    for call in facts.method_calls("fit"):
        for a in call.args:
            if a.keyword is not None and a.keyword.value not in ("train_dataloaders", "train_dataloader", "x"):
                continue
            d = dotted(a.value)
            if a.value is node or (d is not None and d.rsplit(".", 1)[-1] in lasts
                                   and not _rebound_loader(facts, a.value, call, node)):
                if lightning_processes(facts, trainer_only=True) is not None:
                    return None
                return f"`{dotted(call.func) or 'fit'}(...)` trains on it"
    return None


def _rebound_loader(facts, expr, at, node: cst.Call) -> bool:
    """``expr`` is a name that holds, at ``at``, another `DataLoader(...)` than ``node``, assigned after it
    unconditionally (`train_loader = DataLoader(ds)` for a look at the data, then `train_loader =
    DataLoader(ds, shuffle=True)` for training): what ``at`` reads is no longer ``node``."""
    if not isinstance(expr, cst.Name):
        return False
    b = facts.lookup(expr.value, at)
    other = b.value if b is not None else None
    if other is node or not isinstance(other, cst.Call) or _dataloader_dataset(facts, other) is None:
        return False
    mine, later = facts.where.get(node), facts.where.get(other)
    if mine is None or later is None or later.order <= mine.order or later.function is not mine.function:
        return False
    # the later assignment runs whenever the first one did: in the same or an enclosing block, none of
    # them a branch or a loop body that may not run
    n = len(later.blocks)
    return mine.blocks[:n] == later.blocks and not any(
        isinstance(blk, (cst.If, cst.Try, cst.For, cst.While)) for blk in later.blocks)


def _iterated_names(facts, loop: cst.For, node: cst.Call) -> set[str]:
    """The last parts of the names a `for` iterates: `enumerate(tqdm(self.train_loader))` → {train_loader};
    a name unpacked from `accelerator.prepare(model, opt, train_dl)` adds the prepared argument's name. A
    name that ``node`` no longer is where it is read (rebound to another loader) does not count."""
    out: set[str] = set()
    stack = [loop.iter]
    seen: set[int] = set()
    while stack:
        e = stack.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, cst.Call):
            f = e.func
            name = f.attr.value if isinstance(f, cst.Attribute) else f.value if isinstance(f, cst.Name) else ""
            if name in _ITER_WRAPPERS:
                stack.extend(a.value for a in e.args if a.keyword is None)
            continue
        d = dotted(e)
        if d is None:
            continue
        b = facts.lookup(e.value, loop) if isinstance(e, cst.Name) else None
        fn = facts.where[loop].function
        if b is not None and isinstance(fn, cst.FunctionDef) and is_parameter(fn, b):
            graph = call_graph(facts)
            callers = graph.callers(fn)
            if callers:  # a parameter: what the file's callers give it
                for c in callers:
                    o = graph.outside(c, fn, d)
                    if o and not _rebound_loader(facts, graph.argument_of(c, fn, d), c, node):
                        out.add(o.rsplit(".", 1)[-1])
                continue
        if _rebound_loader(facts, e, loop, node):
            continue
        out.add(d.rsplit(".", 1)[-1])
        un = facts.unpacked_from(b) if b is not None else None
        if un is not None:
            call, i = un
            args = [a for a in call.args if a.keyword is None and not a.star]
            if i < len(args) and len(args) == _unpacked_count(facts, b):
                stack.append(args[i].value)
    return out


_SYNTHETIC_CLASS = re.compile(r"Random|Fake|Dummy|Synthetic")
_RANDOM_CALLS = ("torch.rand", "torch.normal", "numpy.random.")


def _synthetic(facts, expr, at, depth: int = 0) -> bool:
    """``expr`` is a dataset of random draws (`TensorDataset(torch.randn(...), ...)`, torchvision's
    `FakeData`, a class of the file filling itself with `torch.randn`): its order carries nothing."""
    if depth > 4 or expr is None:
        return False
    if isinstance(expr, cst.Name):
        b = facts.lookup(expr.value, at)
        return b is not None and isinstance(b.value, cst.BaseExpression) and _synthetic(
            facts, b.value, b.value if b.value in facts.where else at, depth + 1)
    if not isinstance(expr, cst.Call):
        return False
    qn = facts.qualname(expr.func) or ""
    if qn.startswith(_RANDOM_CALLS):
        return True
    last = qn.rsplit(".", 1)[-1] or (dotted(expr.func) or "").rsplit(".", 1)[-1]
    if _SYNTHETIC_CLASS.search(last):
        return True
    b = facts.lookup(expr.func.value, at) if isinstance(expr.func, cst.Name) else None
    if b is not None and isinstance(b.value, cst.ClassDef):
        names = [facts.qualname(c.func) or "" for c in iter_calls(b.value.body)]
        return any(n.startswith(_RANDOM_CALLS) for n in names) and not any(
            n.rsplit(".", 1)[-1].startswith(("open", "load", "read")) for n in names)
    if qn in ("torch.utils.data.TensorDataset", "torch.from_numpy", "torch.tensor", "torch.as_tensor",
              "numpy.array", "numpy.asarray"):
        args = [a.value for a in expr.args if a.keyword is None and not a.star]
        return bool(args) and all(_synthetic(facts, a, at, depth + 1) for a in args)
    return False


def _unpacked_count(facts, binding) -> int:
    """How many names ``a, b, c = call(...)`` unpacks (the statement of ``binding``)."""
    for holder in facts.holders(facts.unpacked_from(binding)[0]):
        if isinstance(holder, cst.Assign):
            for t in holder.targets:
                if isinstance(t.target, (cst.Tuple, cst.List)):
                    return len(t.target.elements)
    return -1


def _int_value(facts, expr, at):
    """An integer the source shows: a literal, a name bound to one, or a sum or difference of those
    (`epochs + 1` with `epochs = 1`)."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, (cst.Add, cst.Subtract)):
        a, b = _int_value(facts, expr.left, at), _int_value(facts, expr.right, at)
        if isinstance(a, int) and isinstance(b, int):
            return a + b if isinstance(expr.operator, cst.Add) else a - b
        return None
    v = facts.constant(expr, at)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _runs_once(facts, loop) -> bool:
    """`for epoch in range(1)`, `range(1, epochs + 1)` with `epochs = 1`: a loop the source shows runs once."""
    it = loop.iter if isinstance(loop, cst.For) else None
    if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Name) and it.func.value == "range"
            and facts.lookup("range", loop) is None):
        return False
    bounds = [_int_value(facts, a.value, loop) for a in it.args if a.keyword is None]
    if not bounds or len(bounds) > 2 or None in bounds:
        return False
    return (bounds[0] if len(bounds) == 1 else bounds[1] - bounds[0]) == 1


def _one_pass(facts, node: cst.CSTNode, depth: int = 0) -> bool:
    """``node`` (the loop over the loader, or a call of its function) runs once in the whole script: no loop
    around it in its function (other than one the source shows runs once), and its function is called only
    from places that run once too (a function no code of the file calls may be called again by anything:
    not one pass). One pass over data not stored by label is as good as a shuffled one; there is no epoch
    to repeat."""
    outer = [L for L in loops_around(facts, node) if L is not node]
    if any(not _runs_once(facts, L) for L in outer):
        return False
    fn = facts.where[node].function
    if fn is None:
        return True
    if not isinstance(fn, cst.FunctionDef) or depth > 3:
        return False
    callers = call_graph(facts).callers(fn)
    return bool(callers) and all(_one_pass(facts, c, depth + 1) for c in callers)


def _training_loops(facts) -> list[cst.For]:
    """The `for` loops of the file that run `backward()` or an optimizer step, in their body or through
    the file's own functions they call (three calls deep)."""
    found = facts.__dict__.get("_training_for_loops")
    if found is not None:
        return found
    lf = loop_facts(facts)
    graph = call_graph(facts)
    steps = lf.backward + lf.optimizer_steps
    memo: dict = {}

    def trains(fn, depth: int) -> bool:
        if fn in memo:
            return memo[fn]
        memo[fn] = False  # recursion guard
        direct = any(facts.where[s].function is fn for s in steps)
        memo[fn] = direct or (depth < 3 and any(
            (t := graph.target(c)) is not None and trains(t, depth + 1) for c in graph.calls_in.get(fn, ())))
        return memo[fn]

    found = []
    for loop in facts.index.get("For", ()):
        if any(loop in facts.where[s].blocks for s in steps):
            found.append(loop)
            continue
        for c in iter_calls(loop.body):
            t = graph.target(c) if c in facts.where else None
            if t is not None and trains(t, 1):
                found.append(loop)
                break
    facts._training_for_loops = found
    return found


@register
class EvalLoaderShuffled(Rule):
    """An evaluation/test `DataLoader` with `shuffle=True`."""

    code = "TL204"
    name = "eval-loader-shuffled"
    severity = Severity.WARNING
    default = False
    measured_from = 4
    # `shuffle` may be positional, but its value is the literal `True` (or a name bound to it)
    gate = (("DataLoader",), ("torch",), ("True",))

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        ds = _dataloader_dataset(facts, node)
        if ds is None:
            return
        shown = self.ctx.code(ds)
        split = self._train_flag(ds)
        if split is True or (split is None and (not _EVAL_NAME.search(shown) or _TRAIN_NAME.search(shown))):
            return
        sh = argument(node, "shuffle", 2)
        if sh is None or facts.constant(sh, node) is not True:
            return
        self.report(
            sh,
            f"the evaluation loader over `{_short(shown)}` shuffles: its predictions come out in a random order",
            hint="pairing them with the dataset's labels or ids (a submission file, an error analysis) silently "
            "mismatches them, and per-batch results vary between runs; drop `shuffle=True` for evaluation and "
            "test loaders",
        )

    @staticmethod
    def _train_flag(ds: cst.BaseExpression) -> bool | None:
        """The split a dataset built in place names with a `train=` flag (torchvision's
        `MNIST(root, train=False)`: the test split); None when it has none."""
        if isinstance(ds, cst.Call):
            flag = literal(argument(ds, "train"))
            if isinstance(flag, bool):
                return flag
        return None


@register
class TFDatasetNoAttentionMask(Rule):
    """`to_tf_dataset(columns=[...])` keeps `input_ids` but leaves out `attention_mask`, on padded batches
    for a transformers model."""

    code = "TL205"
    name = "tf-dataset-no-attention-mask"
    severity = Severity.WARNING
    measured_from = 4
    probe = "Takes one batch from the dataset given to `fit`: padded `input_ids` and no `attention_mask` confirm it."
    # fed to `fit`/`evaluate`/`predict` of a transformers model; padded by a `collate_fn` or by the
    # tokenizing `.map` of a `datasets` dataset
    gate = (("to_tf_dataset",), ("fit", "evaluate", "predict"), ("transformers",), ("collate_fn", "map"),
            ("collate_fn", "datasets"))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "to_tf_dataset"):
            return
        facts = self.ctx.facts
        # premise 1: the batches carry `input_ids` and no `attention_mask`
        value = facts.value_of(node)
        if not isinstance(value, TFDatasetValue) or not isinstance(value.columns, list):
            return
        cols = value.columns
        if "input_ids" not in cols or "attention_mask" in cols:
            return
        # premise 2: the batches are padded; premise 3: a transformers model takes them
        padded = self._padding(node, value)
        if padded is None or not self._fed_to_transformers(node):
            return
        cols_arg = argument(node, "columns", 0)
        self.report(
            cols_arg,
            f"`columns={cols!r}` leaves out `attention_mask` on padded batches ({padded}): the model attends to "
            "the padding tokens",
            hint="nothing fails, but the model's outputs depend on how much padding each batch has: it trains and "
            f"predicts worse; add the mask: `columns={cols + ['attention_mask']!r}`",
        )

    def _padding(self, node: cst.Call, value: TFDatasetValue) -> str | None:
        facts = self.ctx.facts
        coll = argument(node, "collate_fn")
        if coll is not None:
            call = _bound_call(facts, coll, node)
            if call is not None and facts.callee(call) in _PADDING_COLLATORS:
                return f"`collate_fn` is `{facts.callee(call).rsplit('.', 1)[-1]}`"
            return None
        base = value.base
        if base is None or not base.tokenized or any(m.groups for m in base.maps):
            return None
        if any(m.padding == "max_length" for m in base.maps):
            return 'tokenized with `padding="max_length"`'
        if any(m.padding is True or m.padding == "longest" for m in base.maps):
            return "tokenized with `padding=True`"
        return None

    def _fed_to_transformers(self, node: cst.Call) -> bool:
        """The dataset goes to `fit`/`evaluate`/`predict` of a transformers TF model."""
        facts = self.ctx.facts
        for meth in ("fit", "evaluate", "predict"):
            for call in facts.method_calls(meth):
                m = facts.value_of(call.func.value, call)
                if not (isinstance(m, ModelValue) and m.transformers):
                    continue
                for expr in (argument(call, "x", 0), argument(call, "validation_data")):
                    v = facts.value_of(expr, call)
                    if isinstance(v, TFDatasetValue) and v.node is node:
                        return True
        return False


_KERAS_DATA_METHODS = ("fit", "predict", "evaluate", "train_on_batch", "predict_on_batch", "test_on_batch")


@register
class BatchEncodingToFit(Rule):
    """A tokenizer's `BatchEncoding` passed straight to a Keras model's `fit`/`predict`/`evaluate`."""

    code = "TL206"
    name = "batchencoding-to-fit"
    severity = Severity.ERROR
    fix = Applicability.SAFE
    measured_from = 4
    # a Keras data method on a Keras model (`keras.`, `tf.keras.`, `tf_keras.` qualified names) or on a
    # transformers TF model (`TF…` classes) of a script pinned to transformers < 4.38
    gate = (_KERAS_DATA_METHODS, ("keras", "tf_keras", "TF*"))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in _KERAS_DATA_METHODS):
            return
        model = program(self.ctx.facts).module(func.value, node)
        if model is None:
            return
        # premise 2: Keras's own data adapter takes the data (transformers TF models convert a BatchEncoding
        # themselves from the release in the version table)
        converts = status(versions_of(self.ctx), "transformers.TF*.fit(BatchEncoding)", default=VALID)
        old_tf_model = model.framework == "transformers" and model.name.startswith("TF") and converts.state == ABSENT
        if model.framework != "keras" and not old_tf_model:
            return
        candidates = [argument(node, "x", 0)]
        vd = argument(node, "validation_data")
        if isinstance(vd, cst.Tuple) and vd.elements:
            candidates.append(vd.elements[0].value)
        for expr in candidates:
            # premise 1: the value is what a transformers tokenizer's call returned
            if expr is None or not isinstance(program(self.ctx.facts).of(expr, node), Encoding):
                continue
            shown = self.ctx.code(expr)
            if old_tf_model:
                since = version_text(converts.api.introduced or ())
                pin = converts.pin.describe() if converts.pin else "an older transformers"
                message = (f"`{_short(shown)}` is a tokenizer's `BatchEncoding`: `{model.name}.{func.attr.value}` "
                           f"converts it only from transformers {since} (this script runs {pin})")
                symptom = ("Keras mistakes the mapping for other data and fails in its data adapter (e.g. "
                           "\"ValueError: too many values to unpack (expected 2)\")")
            else:
                message = (f"`{_short(shown)}` is a tokenizer's `BatchEncoding`, which Keras's `{func.attr.value}` "
                           "does not accept as input data")
                symptom = ("Keras 3 fails with \"ValueError: Unrecognized data type: x={'input_ids': ...} (of type "
                           "<class 'transformers.tokenization_utils_base.BatchEncoding'>)\", tf-keras with "
                           "\"Cannot generate a hashable key for IteratorSpec\"")
            self.report(
                expr,
                message,
                hint=f"{symptom}; pass a plain dict: `dict({shown})`",
                fix=self.ctx.fix(Applicability.SAFE, "wrap in `dict(...)`", self.ctx.replace(expr, f"dict({shown})")),
            )


def _names(columns: list[str], limit: int = 2) -> str:
    """Column names shown in a message: the first ``limit``, then how many more."""
    shown = ", ".join(repr(c) for c in columns[:limit])
    return shown + (f" (+{len(columns) - limit})" if len(columns) > limit else "")
