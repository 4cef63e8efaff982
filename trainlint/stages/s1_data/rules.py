"""TL1xx: the data — what the dataset the model will see really holds."""

from __future__ import annotations

import difflib
import re
from collections.abc import Set as AbstractSet

import libcst as cst

from trainlint import knowledge
from trainlint.facts import (
    TRAINER_WORDS,
    CallValue,
    DatasetValue,
    ModelValue,
    TrainerValue,
    argument,
    dotted,
    given,
    has_star_kwargs,
    iter_nodes,
    keyword,
    literal,
    positional,
)
from trainlint.facts.alignment import LISTING_WORDS, PAIRING, Misalignment, alignment
from trainlint.facts.calls import call_graph
from trainlint.facts.datasets import dataset_chain
from trainlint.facts.expr import short_code
from trainlint.facts.loops import loop_facts
from trainlint.facts.processes import lightning_processes
from trainlint.findings import Severity
from trainlint.rule import Rule, register


#: `Trainer` methods that form the batches: a subclass overriding one may tokenize there
_BATCHING_HOOKS = frozenset({"get_train_dataloader", "get_eval_dataloader", "_get_collator_with_removed_columns"})
#: dataset methods that make the examples on the fly (a transform may tokenize them)
_TRANSFORMS = ("with_transform", "set_transform")


@register
class RawDatasetToTrainer(Rule):
    """A raw (untokenized) dataset is given to the `Trainer` while a tokenized one exists."""

    code = "TL101"
    name = "raw-dataset-to-trainer"
    severity = Severity.ERROR
    measured_from = 4
    probe = "Checks that the dataset the Trainer holds has the model's input columns (`input_ids`)."
    # a Trainer, a raw `datasets.load_dataset(...)` and its tokenized twin (made by `.map`)
    gate = (TRAINER_WORDS, ("transformers",), ("load_dataset",), ("datasets",), ("map",))

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        if not facts.is_trainer_class(node.func, node) or not self._collates_as_is(node):
            return
        for param, pos in (("train_dataset", 3), ("eval_dataset", 4)):
            expr = argument(node, param, pos)
            # premise 1: the dataset is what `load_dataset` returned, no `.map`, no transform
            value = facts.value_of(expr, node)
            if not (isinstance(value, DatasetValue) and value.raw) or self._transformed(expr, node):
                continue
            # premise 2: the file holds its tokenized version
            found = facts.tokenized_twin(value)
            if found is None:
                continue
            twin = found[0]
            split = f'["{value.split}"]' if value.split else ""
            self.report(
                expr,
                f"`{param}` is the raw dataset `{short_code(self.ctx.code(expr))}` although `{short_code(twin)}` "
                "holds its tokenized version: the model gets no `input_ids`",
                hint="the Trainer drops the text columns the model does not take, and the first training step "
                "fails with \"ValueError: You must specify exactly one of input_ids or inputs_embeds\"; pass the "
                f"tokenized dataset: `{param}={twin}{split}`",
            )

    def _collates_as_is(self, trainer: cst.Call) -> bool:
        """Premise 3: nothing tokenizes the examples on the way to the model: no collator of the file's own (a
        function, a class or a lambda may tokenize), and no loaders the Trainer's class makes itself."""
        facts = self.ctx.facts
        if has_star_kwargs(trainer):
            return False
        collator = given(trainer, "data_collator", 2)
        if collator is not None:
            call: cst.CSTNode | None = collator
            if isinstance(collator, cst.Name):
                b = facts.lookup(collator.value, trainer)
                call = b.value if b is not None else None
            q = facts.qualname(call.func if isinstance(call, cst.Call) else call) \
                if isinstance(call, cst.BaseExpression) else None
            if not (q or "").startswith("transformers."):
                return False
        cls = facts.value_of(trainer.func, trainer) if isinstance(trainer.func, cst.Name) else None
        node = getattr(cls, "node", None)
        return not (isinstance(node, cst.ClassDef) and any(
            isinstance(st, cst.FunctionDef) and st.name.value in _BATCHING_HOOKS for st in node.body.body))

    def _transformed(self, expr, at) -> bool:
        """The dataset gets a transform that makes its examples on the fly (`ds.with_transform(tokenize)`, or
        `set_transform` on any dataset of the same `load_dataset` call)."""
        facts = self.ctx.facts
        chain = dataset_chain(facts, expr, at)
        if chain is None:
            return True
        if any(s.kind == "method" and s.name in _TRANSFORMS for s in chain[1]):
            return True
        for name in _TRANSFORMS:
            for call in facts.method_calls(name):
                other = dataset_chain(facts, call.func.value, call)
                if other is None or other[0] is chain[0]:
                    return True
        return False


@register
class LabelOutOfRange(Rule):
    """(probe) Label values outside `[0, num_labels)` somewhere in the label column."""

    code = "TL106"
    name = "label-out-of-range"
    severity = Severity.ERROR
    probe = "Scans the whole label column (cheaply, from the Arrow table) against `model.config.num_labels`."


# ---------------------------------------------------------------------------------------------
# Catalog breadth: TL102–TL105.

#: dataset methods that keep the columns and the row order of their receiver
_ORDER_KEEPING = frozenset({"filter", "with_format", "set_format", "cast", "cast_column", "flatten_indices",
                            "class_encode_column", "with_transform", "map", "remove_columns", "select_columns",
                            "rename_column", "rename_columns", "select", "take", "skip"})
#: dataset methods that keep the columns exactly (TL102 walks only through these)
_COLUMN_KEEPING = frozenset({"filter", "with_format", "set_format", "shuffle", "select", "take", "skip", "shard",
                             "train_test_split", "flatten_indices", "cast", "cast_column", "class_encode_column",
                             "sort"})
#: hub datasets whose columns changed between versions: no column check
_UNSTABLE_COLUMNS = frozenset({"trec"})


def _info_of(facts, load: cst.Call) -> knowledge.DatasetInfo | None:
    v = facts.value_of(load)
    return v.info if isinstance(v, DatasetValue) else None


def _split_of_load(facts, load: cst.Call):
    return facts.constant(argument(load, "split"), load)


@register
class UnknownDatasetColumn(Rule):
    """A column read from a well-known hub dataset that the dataset does not have
    (`examples["text"]` on GLUE SST-2, whose column is `sentence`)."""

    code = "TL102"
    name = "unknown-dataset-column"
    severity = Severity.ERROR
    default = False
    measured_from = 4
    # the columns come from the dataset table, for a `datasets.load_dataset(...)` call
    gate = (("load_dataset",), ("datasets",))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value in ("map", "filter")):
            qn = self.ctx.facts.callee(node) or ""
            if qn.startswith("trl.") and qn.endswith(".SFTTrainer"):
                self._sft_text_field(node)
            return
        facts = self.ctx.facts
        # premises 1 and 2: a known hub dataset whose columns reach this call unchanged
        found = self._raw_info(func.value, node)
        if found is None:
            return
        info, load = found
        cols = set(info.columns)
        # remove_columns=[...] with a name the dataset does not have
        if func.attr.value == "map":
            rc = argument(node, "remove_columns")
            names = facts.constant(rc, node) if rc is not None else None
            names = [names] if isinstance(names, str) else names
            if isinstance(names, list):
                bad = [n for n in names if isinstance(n, str) and n not in cols]
                if bad:
                    self._report(rc, bad[0], info, f"`remove_columns` fails with \"ValueError: Column to remove "
                                 f"{bad[:1]!r} not in the dataset\"")
        ic = argument(node, "input_columns")
        if ic is not None:
            names = facts.constant(ic, node)
            names = [names] if isinstance(names, str) else names
            if isinstance(names, list):
                bad = [n for n in names if isinstance(n, str) and n not in cols]
                if bad:
                    self._report(ic, bad[0], info, f"`{func.attr.value}` fails with \"ValueError: Input column "
                                 f"{bad[0]} not in the dataset\"")
            return
        fn = facts.function_def(argument(node, "function", 0), node)
        if fn is None:
            return
        # premises 3 and 4: the function reads a column the dataset does not have
        for sub, key in self._reads(fn):
            if key not in cols:
                self._report(sub, key, info, f"the `{func.attr.value}` function fails with \"KeyError: {key!r}\"")
                return

    def visit_Subscript(self, node: cst.Subscript) -> None:
        """`raw["train"]["text"]`: a column of one split."""
        if len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
            return
        key = literal(node.slice[0].slice.value)
        if not isinstance(key, str):
            return
        facts = self.ctx.facts
        at = self._anchor(node)
        chain = dataset_chain(facts, node.value, at)
        if chain is None:
            return
        load, steps = chain
        info = _info_of(facts, load)
        if info is None or info.name in _UNSTABLE_COLUMNS or not info.columns:
            return
        if any(s.kind == "index" or (s.kind == "method" and s.name not in _COLUMN_KEEPING) for s in steps):
            return
        if any(s.kind == "method" and s.name == "train_test_split" for s in steps):
            return
        split_given = isinstance(_split_of_load(facts, load), str)
        keys = [s for s in steps if s.kind == "key"]
        if split_given and not keys or (not split_given and len(keys) == 1):
            if key not in info.columns:
                self._report(node.slice[0], key, info, f"`{short_code(self.ctx.code(node))}` fails with \"KeyError: "
                             f"{key!r}\"")

    def _sft_text_field(self, node: cst.Call) -> None:
        """trl's `SFTTrainer` reads each example's text from the column `dataset_text_field` names (a keyword of
        the trainer in older trl, of its `SFTConfig` since: `SFTConfig(dataset_text_field="text")`, or set on the
        parsed config, `args.dataset_text_field = "text"`), unless a `formatting_func` builds the text."""
        if argument(node, "formatting_func") is not None or has_star_kwargs(node):
            return
        if "skip_prepare_dataset" in self.ctx.source:
            return  # `dataset_kwargs={"skip_prepare_dataset": True}`: the trainer does not read the text column
        found = self._raw_info(argument(node, "train_dataset", 3), node)
        if found is None:
            return
        info = found[0]
        field = self._text_field(node)
        key = self.ctx.facts.constant(field, node) if field is not None else None
        if isinstance(key, str) and key not in info.columns:
            self._report(field, key, info, f"`SFTTrainer` reads the text from `dataset_text_field={key!r}`: "
                         f"\"KeyError: {key!r}\"")

    def _text_field(self, node: cst.Call) -> cst.BaseExpression | None:
        """The expression `dataset_text_field` is given for this trainer: its keyword, the `SFTConfig(...)` given as
        `args` (inline or by name), or the last `args.dataset_text_field = ...` before the trainer."""
        facts = self.ctx.facts
        field = keyword(node, "dataset_text_field")
        if field is not None:
            return field.value
        args = argument(node, "args", 1)
        if isinstance(args, cst.Name):
            w = facts.where[node]
            for assign in reversed(facts.index.get("Assign", ())):
                aw = facts.where[assign]
                if aw.order >= w.order or aw.function is not w.function:
                    continue
                for t in assign.targets:
                    tgt = t.target
                    if (isinstance(tgt, cst.Attribute) and tgt.attr.value == "dataset_text_field"
                            and isinstance(tgt.value, cst.Name) and tgt.value.value == args.value):
                        return assign.value
            b = facts.lookup(args.value, node)
            args = b.value if b is not None else None
        if isinstance(args, cst.Call) and (facts.callee(args) or "").startswith("trl.") and \
                (facts.callee(args) or "").endswith(".SFTConfig"):
            return argument(args, "dataset_text_field")
        return None

    def _anchor(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return node if node in self.ctx.facts.where else None

    def _raw_info(self, recv, at) -> tuple[knowledge.DatasetInfo, cst.Call] | None:
        facts = self.ctx.facts
        chain = dataset_chain(facts, recv, at)
        if chain is None:
            return None
        load, steps = chain
        info = _info_of(facts, load)
        if info is None or info.name in _UNSTABLE_COLUMNS or not info.columns:
            return None
        for s in steps:
            if s.kind == "index" or (s.kind == "method" and s.name not in _COLUMN_KEEPING):
                return None
        return info, load

    def _reads(self, fn):
        """(subscript, key) for every `examples["key"]` read of the function's first parameter: not the keys the
        function itself assigns, nor those it tests first (`if "source" in example`), which are not certain reads
        of the dataset."""
        params = fn.params.params if fn.params else ()
        if not params:
            return []
        pname = params[0].name.value
        body = fn.body
        # nested functions rebinding the parameter name would shadow it: rare; keep it simple
        if any(n is not fn for n in iter_nodes(body, (cst.FunctionDef,))):
            return []
        reads, unsure = [], set()
        for sub in iter_nodes(body, (cst.Subscript,)):
            if (isinstance(sub.value, cst.Name) and sub.value.value == pname and len(sub.slice) == 1
                    and isinstance(sub.slice[0].slice, cst.Index)):
                key = literal(sub.slice[0].slice.value)
                if isinstance(key, str):
                    reads.append((sub, key))
        for target in iter_nodes(body, (cst.AssignTarget, cst.AugAssign)):
            t = target.target
            if isinstance(t, cst.Subscript) and isinstance(t.value, cst.Name) and t.value.value == pname:
                k = literal(t.slice[0].slice.value) if isinstance(t.slice[0].slice, cst.Index) else None
                unsure.add(k)
        for cmp in iter_nodes(body, (cst.Comparison,)):
            if any(isinstance(c.operator, (cst.In, cst.NotIn)) and isinstance(c.comparator, cst.Name)
                   and c.comparator.value == pname for c in cmp.comparisons):
                unsure.add(literal(cmp.left))
        return [(s, k) for s, k in reads if k not in unsure]

    def _report(self, node, key: str, info: knowledge.DatasetInfo, symptom: str) -> None:
        close = difflib.get_close_matches(key, info.columns, n=1, cutoff=0.5)
        text_cols = [c for c in info.columns if c not in (info.label_column, "idx", "id")]
        guess = close[0] if close else (text_cols[0] if len(text_cols) == 1 else None)
        self.report(
            node,
            f"{info.display} has no column {key!r}: {symptom}",
            hint=f"its columns: {', '.join(info.columns)}; "
            + (f"use {guess!r}" if guess else f"use one of {', '.join(repr(c) for c in info.columns)}"),
        )


_SLICE_RE = re.compile(r"^\s*(?P<split>\w+)\s*\[\s*(?P<start>-?\d+%?)?\s*:\s*(?P<stop>-?\d+%?)?\s*\]\s*$")
#: examples per class of the label-sorted splits (the first run of rows of one class)
_CLASS_RUN = {("imdb", "train"): 12500, ("imdb", "test"): 12500, ("dbpedia_14", "train"): 40000,
              ("dbpedia_14", "test"): 5000, ("rotten_tomatoes", "train"): 4265,
              ("rotten_tomatoes", "validation"): 533, ("rotten_tomatoes", "test"): 533}


#: heads that learn the text itself: a dataset's labels are not their target
_LM_HEADS = frozenset({"causal-lm", "masked-lm", "seq2seq-lm", "pretraining"})


@register
class LabelSortedSlice(Rule):
    """The first (or last) N rows of a split stored sorted by label, taken without shuffling:
    a single-class subset."""

    code = "TL103"
    name = "label-sorted-slice"
    severity = Severity.ERROR
    measured_from = 4
    probe = ("Takes the first training batch: one class while the label column has several, from a loader "
             "that does not shuffle, confirms the sorted order reaches training.")
    # `load_dataset(..., split="train[:N]")` (a keyword only) or `.select(range(N))` / `.take(N)`
    gate = (("load_dataset",), ("datasets",), ("split", "select", "take"))

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        if facts.callee(node) == "datasets.load_dataset":
            self._split_slice(node)
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("select", "take"):
            self._select(node, func)

    def _split_slice(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        info = _info_of(facts, node)
        if info is None or not info.sorted_by_label:
            return
        arg = argument(node, "split")
        split = facts.constant(arg, node)
        for s in (split if isinstance(split, list) else [split]):
            if not isinstance(s, str) or "+" in s:
                continue
            m = _SLICE_RE.match(s)
            if m is None or (m.group("start") is None and m.group("stop") is None):
                continue
            self._report(node, arg, info, m.group("split"), m.group("start"), m.group("stop"), f'split="{s}"')

    def _select(self, node: cst.Call, func: cst.Attribute) -> None:
        facts = self.ctx.facts
        chain = dataset_chain(facts, func.value, node)
        if chain is None:
            return
        load, steps = chain
        info = _info_of(facts, load)
        if info is None or not info.sorted_by_label:
            return
        split = _split_of_load(facts, load)
        if split is not None and (not isinstance(split, str) or not re.fullmatch(r"\w+", split)):
            return  # a sliced split is TL103's other form; unknown splits: unknown order
        for s in steps:
            if s.kind == "key":
                split = s.name
            elif s.kind == "index" or (s.kind == "method" and s.name not in _ORDER_KEEPING):
                return  # shuffle, train_test_split, sort, ...: the order is not the stored one
        if not isinstance(split, str):
            return
        if func.attr.value == "take":
            n = facts.constant(argument(node, "n", 0), node)
            if isinstance(n, int) and not isinstance(n, bool):
                self._report(load, node, info, split, None, str(n), f"`.take({n})`")
            return
        idx = argument(node, "indices", 0)
        if not (isinstance(idx, cst.Call) and isinstance(idx.func, cst.Name) and idx.func.value == "range"
                and facts.lookup("range", idx) is None):
            return
        rargs = [facts.constant(a.value, node) for a in idx.args]
        if not rargs or not all(isinstance(a, int) and not isinstance(a, bool) for a in rargs) or len(rargs) > 2:
            return
        start, stop = (0, rargs[0]) if len(rargs) == 1 else rargs
        self._report(load, node, info, split, str(start), str(stop), f"`.select({self.ctx.code(idx)})`")

    def _labels_unused(self, load: cst.Call) -> bool:
        """The labels of this dataset are not what the file trains on: its label column is dropped
        (`remove_columns=["text", "label"]`, `remove_columns=ds.column_names`), or every model of the file is
        a language model (`*ForCausalLM`, `*ForMaskedLM`, ...: the text itself is the target)."""
        memo: dict[cst.Call, bool] | None = getattr(self, "_unused", None)
        if memo is None:
            memo = {}
            self._unused = memo
        if load in memo:
            return memo[load]
        facts = self.ctx.facts
        unused = False
        for call in facts.index.get("Call", ()):
            func = call.func
            if not isinstance(func, cst.Attribute) or func.attr.value not in ("map", "remove_columns"):
                continue
            cols = argument(call, "remove_columns") if func.attr.value == "map" else argument(call, "column_names", 0)
            if cols is None:
                continue
            chain = dataset_chain(facts, func.value, call)
            if chain is None or chain[0] is not load:
                continue
            value = facts.constant(cols, call)
            names = value if isinstance(value, list) else [value]
            if any(isinstance(n, str) and "label" in n for n in names) or (
                    isinstance(cols, cst.Attribute) and cols.attr.value == "column_names"):
                unused = True
                break
        if not unused:
            heads = set()
            for call in facts.index.get("Call", ()):
                if isinstance(call.func, cst.Attribute) and call.func.attr.value in ("from_pretrained", "from_config"):
                    v = facts.value_of(call)
                    if isinstance(v, ModelValue) and v.transformers:
                        heads.add(v.head)
            unused = bool(heads) and heads <= _LM_HEADS
        memo[load] = unused
        return unused

    def _report(self, load, node, info, split: str, start: str | None, stop: str | None, shown: str) -> None:
        if self._labels_unused(load):
            return
        run = _CLASS_RUN.get((info.name, split))
        certain = False
        k = info.num_labels or 2
        try:
            a = 0 if start is None else int(start.rstrip("%"))
            b = None if stop is None else int(stop.rstrip("%"))
        except ValueError:
            return
        pct = (start or "").endswith("%") or (stop or "").endswith("%")
        block = 100 / k if pct else run  # the rows of one class (equal-sized classes)
        if a >= 0 and b is not None and b > a:
            certain = block is not None and a // block == (b - 1) // block  # within one class's block
        elif a < 0 and b is None:
            certain = block is not None and -a <= block  # the last rows: the last class
        elif a > 0 and b is None:
            certain = pct and block is not None and a >= 100 - block
        else:
            return
        what = "holds a single class" if certain else "is skewed towards a few classes"
        self.report(
            node,
            f"{info.display} is stored sorted by label: {shown} takes rows from one end of its {split} split and "
            f"{what}",
            hint="the model learns to predict one class (and evaluation on such a subset is meaningless); shuffle "
            "before taking a subset: `ds.shuffle(seed=42).select(range(N))`",
            severity=Severity.ERROR if certain else Severity.WARNING,
        )


@register
class MisalignedLabels(Rule):
    """Features and labels that no longer line up: one of two parallel arrays shuffled on its own, or
    an unsorted `glob`/`os.listdir` file list paired with labels from elsewhere."""

    code = "TL104"
    name = "misaligned-labels"
    severity = Severity.ERROR
    default = False
    measured_from = 4
    # a pairing call, and (a lone shuffle — named shuffle/permutation/sample, from `random`, `numpy.random`
    # or `sklearn`, or a table's own `.sample(frac=1)` / `.shuffle()` — or an unsorted listing):
    # (S and (R or sample or shuffle)) or L is (S or L) and (R or sample or shuffle or L)
    # (a `Dataset` class indexing two listings, or two columns of a table, with one index: `__getitem__`)
    gate = ((*sorted(PAIRING), "__getitem__"),
            ("shuffle", "permutation", "sample", *LISTING_WORDS),
            ("random", "sklearn", "sample", "shuffle", *LISTING_WORDS))

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        """A dataset class whose `__init__` puts two attributes out of line (an unsorted listing each, or a
        column copied before its table is shuffled) and whose methods index both with one index."""
        found = alignment(self.ctx.facts).in_class(node)
        if found is not None:
            self._report(found)

    def visit_Call(self, node: cst.Call) -> None:
        """A pairing call (`zip`, `fit`, `TensorDataset`, `train_test_split`, ...) of two arrays out of line."""
        found = alignment(self.ctx.facts).at_pairing(node)
        if found is not None:
            self._report(found)

    def _report(self, m: Misalignment) -> None:
        """One finding per shuffle or listing, whichever pairing shows it. Premises (each established by
        :mod:`trainlint.facts.alignment`): 1. the two are paired example by example; 2. one follows an order
        (a shuffle of its own, a file-system listing, a table reordered after a column was taken out) that
        3. the other does not follow; 4. the reordering is not meant to break the pairing."""
        done = self.__dict__.setdefault("_reported", set())
        if m.node in done:
            return
        done.add(m.node)
        shown = short_code(self.ctx.code(m.node))
        severity = Severity.ERROR
        if m.kind == "shuffle":
            message = (f"`{shown}` shuffles `{m.moved}` but not `{m.other}`, and {m.pairing} example by example: "
                       "every feature now has a random label")
            hint = (f"the loss plateaus at chance level; shuffle them together: `idx = np.random.permutation("
                    f"len({m.moved})); {m.moved}, {m.other} = {m.moved}[idx], {m.other}[idx]` (or "
                    f"`sklearn.utils.shuffle({m.moved}, {m.other})`)")
        elif m.kind == "copied":
            message = (f"`{m.table}` is reordered after `{short_code(m.moved, 24)}` was taken from it, and "
                       f"{m.pairing}: labels land on other rows")
            hint = (f"`{shown}` reorders the rows: `{m.moved}` keeps the old order and `{m.other}` follows the new "
                    "one, so every example gets the label of another row and the loss plateaus at chance level; "
                    f"shuffle `{m.table}` before taking anything out of it (or take `{m.moved}` again after the "
                    "shuffle)")
        else:
            severity = Severity.WARNING  # the file-system order may happen to agree
            message = (f"files listed in file-system order, and {m.pairing}, "
                       + ("both unsorted" if m.both else "not built from the files") + ": they can be misaligned")
            hint = (f"`{shown}` returns files in file-system order, which differs between directories and machines, "
                    "and misaligned pairs make the loss oscillate or plateau; "
                    f"sort the listing: `{m.moved} = sorted(...)`"
                    + (" (both of them)" if m.both else f", and build `{m.other}` from it (e.g. from each file name)"))
        self.report(m.node, message, hint=hint, severity=severity)


_UNSEEDED_SOURCES = {
    # qualname → the global generator it draws from (selection and order of examples, not augmentation)
    "random.shuffle": "random", "random.sample": "random",
    "numpy.random.shuffle": "numpy", "numpy.random.permutation": "numpy", "numpy.random.choice": "numpy",
    "torch.utils.data.random_split": "torch", "torch.randperm": "torch",
}
_ALL = frozenset({"random", "numpy", "torch"})
#: packages whose functions are known: a name like a seeder there is not a project's seeding helper
_LIBRARY_ROOTS = frozenset({"random", "numpy", "torch", "tensorflow", "keras", "jax", "transformers", "accelerate",
                            "datasets", "lightning", "pytorch_lightning", "sklearn"})
_SEEDERS = {
    "random.seed": {"random"}, "numpy.random.seed": {"numpy"}, "torch.manual_seed": {"torch"},
    "transformers.set_seed": _ALL, "transformers.trainer_utils.set_seed": _ALL,
    "accelerate.utils.set_seed": _ALL, "lightning.seed_everything": _ALL,
    "pytorch_lightning.seed_everything": _ALL, "lightning.pytorch.seed_everything": _ALL,
    "lightning.fabric.seed_everything": _ALL, "transformers.enable_full_determinism": _ALL,
}
#: reading the process's rank: `os.environ["LOCAL_RANK"]`, `training_args.local_rank` (in code, not comments)
_READS_RANK = re.compile(r"""["']LOCAL_RANK["']|\.local_rank\b""")
_CODE_ONLY = re.compile(r"#[^\n]*")
#: methods whose draws are made per call, not once for the data: a model's forward pass (layer drop, noise), a
#: dataset's item (augmentation, a random negative), a transform
_PER_CALL_METHODS = frozenset({"forward", "call", "__call__", "__getitem__", "__iter__"})
#: what a seed computed per process reads: `seed + accelerator.process_index`, `args.seed + rank`
_RANK_WORDS = re.compile(r"\b(?:process_index|local_process_index|local_rank|global_rank|rank|get_rank)\b")
#: a seeding helper of a project's own package, imported (its body is not in the file): `set_random_seed`,
#: `setup_seed`, `init_seeds`, `fix_seed`, `same_seeds`, `seed_everything`, `seed_all`; it is taken at its name
#: and seeds every generator (not `get_seed`, `seed_worker`)
_SEED_HELPER = re.compile(r"^(?:(?:set|setup|fix|init|same|reset)_(?:\w+_)?seeds?|seed_(?:everything|all))$")


def _trains(facts) -> bool:
    """The file trains something: `backward()` (`accelerator.backward(loss)`), an optimizer step, a trainer's
    `train()`, or a `fit(...)`. A generation or evaluation script run on several processes shuffles only what
    each process reads, not what a model learns from."""
    lf = loop_facts(facts)
    if lf.backward or lf.optimizer_steps:
        return True
    for call in lf.calls:
        f = call.func
        if not isinstance(f, cst.Attribute):
            continue
        if f.attr.value == "fit":
            return True
        if f.attr.value.startswith("train") and (
                isinstance(facts.value_of(f.value, call), TrainerValue) or "trainer" in (dotted(f.value) or "").lower()):
            return True
    return False


def _runs_its_definitions(facts) -> bool:
    """The module runs what it defines: a `__main__` guard, or code outside any function or class that calls
    a function or instantiates a class of the file (`main()`, `trainer = MyTrainer(...)`). A module of
    definitions only (a dataset provider, a model file) is imported by the script that runs: whether its
    draws are seeded is decided there."""
    graph = call_graph(facts)
    classes = {s.name.value for s in facts.module.body if isinstance(s, cst.ClassDef)}
    for stmt in facts.module.body:
        if isinstance(stmt, cst.If) and "__main__" in facts.module.code_for_node(stmt.test):
            return True
    for call in facts.index.get("Call", ()):
        w = facts.where[call]
        if w.function is not None or w.inside(cst.ClassDef) is not None:
            continue
        if graph.target(call) is not None or (isinstance(call.func, cst.Name) and call.func.value in classes):
            return True
    return False


@register
class UnseededMultiprocessData(Rule):
    """Unseeded randomness in the data preparation of a script that runs as several processes
    (accelerate, torchrun, Lightning DDP): each process builds different data."""

    code = "TL105"
    name = "unseeded-multiprocess-data"
    severity = Severity.WARNING
    default = False
    measured_from = 4
    # an unseeded draw (random/numpy shuffle, sample, permutation, choice; sklearn or a `datasets` dataset's
    # shuffle / train_test_split). No group for "runs as several processes": `"LOCAL_RANK" in source` also
    # holds for a string or a comment, which are not words.
    gate = (("shuffle", "sample", "permutation", "choice", "train_test_split", "random_split", "randperm"),
            ("random", "sklearn", "datasets", "torch"))

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._seeded: set[str] | None = None
        self._multi: bool | None = None

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        qn = facts.callee(node) or ""
        # premise 2: the draw picks or orders the data (not a model's forward), in a file that trains
        source = _UNSEEDED_SOURCES.get(qn)
        what = short_code(self.ctx.code(node.func))
        fn = facts.where[node].function
        if isinstance(fn, cst.FunctionDef) and fn.name.value in _PER_CALL_METHODS \
                and facts.where[node].inside(cst.ClassDef) is not None:
            return  # a draw per forward pass (layer drop, noise) or per example (augmentation): not the data's order
        if source is None:
            source = self._dataset_shuffle(node)
            if source is None:
                return
            what += "()` without `seed="
        if qn in ("torch.utils.data.random_split", "torch.randperm") and keyword(node, "generator") is not None:
            return
        # premise 1: several processes run it; premise 3: its generator is not seeded the same in each
        lightning = not self._multiprocess() and self._lightning_runs(node)
        if not (lightning or self._multiprocess()) or source in self._seeds():
            return
        # premise 4: this module runs the draw itself
        if (fn is not None or facts.where[node].inside(cst.ClassDef) is not None) and not self._runs_definitions():
            return  # a function of a module that only defines: its caller runs (and seeds) it
        splits = qn.endswith(("random_split", "train_test_split")) or what.endswith("train_test_split()` without `seed=")
        effect = "each gets another train/validation split" if splits else "each orders or picks the data differently"
        where = "every process of the Lightning `Trainer`" if lightning else "every process"
        message = f"`{what}` uses {source}'s unseeded global generator in {where}: {effect}"
        per_rank = self._per_rank_seeds().get(source)
        if per_rank is not None:
            effect = "each splits the data differently" if splits else "each orders the data differently"
            message = f"`{what}` uses {source}'s generator, seeded per process by `{{}}`: {effect}"
            message = message.format(short_code(self.ctx.code(per_rank), max(20, 160 - len(message) + 2)))
        self.report(
            node.func,
            message,
            hint=("the processes (accelerate, torchrun, a multi-device Lightning Trainer) each run this line: "
                  + ("examples of one process's validation split are in another's training data, and the metrics "
                     "look better than they are" if splits else "the distributed sampler's shards of the different "
                     "orders overlap, so examples are seen several times or not at all")
                  + "; seed every process the same before preparing data: `accelerate.utils.set_seed(42)` (or "
                  "`transformers.set_seed(42)`, Lightning's `seed_everything(42)`), or pass `seed=`/`random_state=`/"
                  "`generator=torch.Generator().manual_seed(42)`"),
        )

    def _dataset_shuffle(self, node: cst.Call) -> str | None:
        """`ds.shuffle()` / `ds.train_test_split(...)` of a `datasets` dataset without a seed: numpy's global
        generator; sklearn `train_test_split` without `random_state` likewise."""
        facts = self.ctx.facts
        func = node.func
        qn = facts.callee(node) or ""
        if qn == "sklearn.model_selection.train_test_split":
            return None if keyword(node, "random_state") is not None or keyword(node, "shuffle") is not None else "numpy"
        if not (isinstance(func, cst.Attribute) and func.attr.value in ("shuffle", "train_test_split")):
            return None
        if keyword(node, "seed") is not None or keyword(node, "generator") is not None or has_star_kwargs(node):
            return None
        if func.attr.value == "shuffle" and positional(node):
            return None
        if func.attr.value == "train_test_split" and keyword(node, "shuffle") is not None:
            return None
        if not isinstance(facts.value_of(func.value, node), DatasetValue):
            return None
        return "numpy"

    def _multiprocess(self) -> bool:
        """The script is written to run as several processes: it keeps an `Accelerator` (not just
        `Accelerator().device`), starts a process group, or reads its rank (`LOCAL_RANK`,
        `args.local_rank`). A notebook runs as one process unless it calls `notebook_launcher`."""
        if self._multi is None:
            facts = self.ctx.facts
            if self.ctx.filename.endswith(".ipynb"):
                self._multi = any(True for _ in facts.calls_to("accelerate.notebook_launcher"))
                return self._multi
            self._multi = _trains(facts) and (
                any(facts.holders(c) for c in facts.calls_to("accelerate.Accelerator"))
                or any(True for _ in facts.calls_to("torch.distributed.init_process_group"))
                or _READS_RANK.search(_CODE_ONLY.sub("", self.ctx.source)) is not None
            )
        return self._multi

    def _lightning_runs(self, node: cst.Call) -> bool:
        """A Lightning `Trainer` of the script runs several processes, and each of them makes this draw: anywhere
        when each process runs the script (`strategy="ddp"`), only in the hooks the trainer calls (a data module's
        `setup()`) when the processes are spawned. Not in `prepare_data()` (one process per node) nor in
        `__init__` of a spawned run (the objects come from the parent). A notebook runs its cells once."""
        memo = self.__dict__.get("_lightning_memo", 0)
        if memo == 0:
            facts = self.ctx.facts
            runs = None if self.ctx.filename.endswith(".ipynb") or not _trains(facts) else lightning_processes(facts)
            memo = self._lightning_memo = runs if runs in ("script", "hooks") else None
        if memo is None:
            return False
        w = self.ctx.facts.where[node]
        fn = w.function
        method = fn.name.value if isinstance(fn, cst.FunctionDef) and w.inside(cst.ClassDef) is not None else None
        if method == "prepare_data":
            return False
        return memo == "script" or (method not in (None, "__init__") and self._lightning_class(w.inside(cst.ClassDef)))

    def _lightning_class(self, cls: cst.ClassDef) -> bool:
        """A class whose bases come from Lightning (`pl.LightningDataModule`, a local subclass of one): the
        trainer calls its hooks in each process."""
        facts = self.ctx.facts
        for arg in cls.bases:
            qn = facts.qualname(arg.value) or ""
            v = facts.value_of(arg.value, cls) if isinstance(arg.value, cst.Name) and not qn else None
            bases = [qn] + list(getattr(v, "bases", ()))
            if any(b.startswith(("lightning.", "pytorch_lightning.")) for b in bases):
                return True
        return False

    def _runs_definitions(self) -> bool:
        memo = self.__dict__.get("_runs_memo")
        if memo is None:
            memo = self._runs_memo = _runs_its_definitions(self.ctx.facts)
        return memo

    def _seeds(self) -> set[str]:
        """The generators seeded the same in every process."""
        if self._seeded is None:
            self._seeded = set()
            for call in self._seeder_calls():
                if call not in self._per_rank_calls():
                    self._seeded |= self._generators(call)
        return self._seeded

    def _generators(self, call: cst.Call) -> AbstractSet[str]:
        return _SEEDERS.get(self.ctx.facts.callee(call) or "", _ALL)

    def _seeder_calls(self) -> list[cst.Call]:
        """The calls that seed a global generator: the libraries' seeders, and a seeding helper imported from the
        project's own package (`from utils import set_random_seed`). Not a function of the file named like one:
        a module-level `def set_seed(seed, accelerator)` is not `accelerate.utils.set_seed`, whatever one of its
        bodies imports (the seeding calls in its body are counted themselves)."""
        memo = self.__dict__.get("_seeder_memo")
        if memo is None:
            facts = self.ctx.facts
            graph = call_graph(facts)
            memo = self._seeder_memo = [c for c in facts.calls_to(*_SEEDERS) if graph.target(c) is None]
            for call in facts.method_calls("seed_everything"):  # `fabric.seed_everything(42)`
                v = facts.value_of(call.func.value, call)
                if isinstance(v, CallValue) and v.qualname.startswith("lightning") and v.qualname.endswith(".Fabric"):
                    memo.append(call)
            known = set(memo)
            for call in facts.index.get("Call", ()):
                qn = facts.callee(call) or ""
                if call in known or "." not in qn or graph.target(call) is not None:
                    continue
                module, _, short = qn.rpartition(".")
                if _SEED_HELPER.match(short) and module.split(".", 1)[0] not in _LIBRARY_ROOTS and call.args:
                    memo.append(call)
        return memo

    def _per_rank_calls(self) -> dict[cst.Call, cst.CSTNode]:
        """Seeding calls whose seed depends on the process (`seed += accelerator.process_index * 12345` before
        `np.random.seed(seed)`, `set_seed(args.seed + rank)`) → the expression that makes it so."""
        memo: dict[cst.Call, cst.CSTNode] | None = self.__dict__.get("_per_rank_memo")
        if memo is None:
            facts = self.ctx.facts
            memo = {}
            self._per_rank_memo = memo
            for call in self._seeder_calls():
                seed = call.args[0].value if call.args else None
                if seed is None:
                    continue
                if _RANK_WORDS.search(self.ctx.code(seed)):
                    memo[call] = seed
                    continue
                if isinstance(seed, cst.Name):
                    fn = facts.where[call].function
                    for st in facts.index.get("AugAssign", ()) + facts.index.get("Assign", ()):
                        if facts.where[st].function is not fn or facts.where[st].order > facts.where[call].order:
                            continue
                        targets = [st.target] if isinstance(st, cst.AugAssign) else [t.target for t in st.targets]
                        if any(isinstance(t, cst.Name) and t.value == seed.value for t in targets) and \
                                _RANK_WORDS.search(self.ctx.code(st.value)):
                            memo[call] = st
        return memo

    def _per_rank_seeds(self) -> dict[str, cst.CSTNode]:
        """generator → the statement that seeds it per process (when nothing seeds it the same everywhere)."""
        out: dict[str, cst.CSTNode] = {}
        for call, why in self._per_rank_calls().items():
            for g in self._generators(call):
                out.setdefault(g, why)
        return out
