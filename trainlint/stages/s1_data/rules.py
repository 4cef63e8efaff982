"""TL1xx: the data — what the dataset the model will see really holds."""

from __future__ import annotations

import builtins
import difflib
import re
from collections.abc import Set as AbstractSet
from typing import Any

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
    has_star_kwargs,
    iter_nodes,
    keyword,
    literal,
    positional,
    self_item,
)
from trainlint.facts.calls import call_graph
from trainlint.facts.datasets import dataset_chain
from trainlint.facts.loops import loop_facts
from trainlint.facts.processes import lightning_processes
from trainlint.findings import Severity
from trainlint.rule import Rule, register


@register
class RawDatasetToTrainer(Rule):
    """A raw (untokenized) dataset is given to the `Trainer` while a tokenized one exists."""

    code = "TL101"
    name = "raw-dataset-to-trainer"
    severity = Severity.ERROR
    probe = "Checks that the dataset the Trainer holds has the model's input columns (`input_ids`)."
    # a Trainer, a raw `datasets.load_dataset(...)` and its tokenized twin (made by `.map`)
    gate = (TRAINER_WORDS, ("transformers",), ("load_dataset",), ("datasets",), ("map",))

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.ctx.facts
        if not facts.is_trainer_class(node.func, node):
            return
        for param, pos in (("train_dataset", 3), ("eval_dataset", 4)):
            expr = argument(node, param, pos)
            value = facts.value_of(expr, node)
            if not (isinstance(value, DatasetValue) and value.raw):
                continue
            found = facts.tokenized_twin(value)
            if found is None:
                continue
            twin = found[0]
            split = f'["{value.split}"]' if value.split else ""
            self.report(
                expr,
                f"`{param}` is the raw dataset `{self.ctx.code(expr)}` (text, no `input_ids`) although "
                f"`{twin}` holds its tokenized version: the first training step fails with "
                '"You must specify exactly one of input_ids or inputs_embeds"',
                hint=f"pass the tokenized dataset: `{param}={twin}{split}`",
            )


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
                                 f"{bad!r} not in the dataset\"")
        ic = argument(node, "input_columns")
        if ic is not None:
            names = facts.constant(ic, node)
            names = [names] if isinstance(names, str) else names
            if isinstance(names, list):
                bad = [n for n in names if isinstance(n, str) and n not in cols]
                if bad:
                    self._report(ic, bad[0], info, f"`{func.attr.value}` fails with a KeyError / \"ValueError: Input "
                                 f"column {bad[0]} not in the dataset\"")
            return
        fn = facts.function_def(argument(node, "function", 0), node)
        if fn is None:
            return
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
                self._report(node.slice[0], key, info, f"`{self.ctx.code(node)}` fails with \"KeyError: {key!r}\"")

    def _sft_text_field(self, node: cst.Call) -> None:
        """trl's `SFTTrainer` reads each example's text from the column `dataset_text_field` names (a keyword of
        the trainer in older trl, of its `SFTConfig` since: `SFTConfig(dataset_text_field="text")`, or set on the
        parsed config, `args.dataset_text_field = "text"`), unless a `formatting_func` builds the text."""
        if argument(node, "formatting_func") is not None or has_star_kwargs(node):
            return
        found = self._raw_info(argument(node, "train_dataset", 3), node)
        if found is None:
            return
        info = found[0]
        field = self._text_field(node)
        key = self.ctx.facts.constant(field, node) if field is not None else None
        if isinstance(key, str) and key not in info.columns:
            self._report(field, key, info, f"`SFTTrainer` reads each example's text from `dataset_text_field={key!r}` "
                         f"and fails with \"KeyError: {key!r}\"")

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
        """(subscript, key) for every `examples["key"]` read of the function's first parameter
        (keys the function itself assigns are not reads of the dataset)."""
        params = fn.params.params if fn.params else ()
        if not params:
            return []
        pname = params[0].name.value
        body = fn.body
        assigned: set[str] = set()
        reads = []
        for sub in iter_nodes(body, (cst.Subscript,)):
            if not (isinstance(sub.value, cst.Name) and sub.value.value == pname and len(sub.slice) == 1
                    and isinstance(sub.slice[0].slice, cst.Index)):
                continue
            key = literal(sub.slice[0].slice.value)
            if isinstance(key, str):
                reads.append((sub, key))
        for target in iter_nodes(body, (cst.AssignTarget, cst.AugAssign)):
            t = target.target
            if isinstance(t, cst.Subscript) and isinstance(t.value, cst.Name) and t.value.value == pname:
                k = literal(t.slice[0].slice.value) if isinstance(t.slice[0].slice, cst.Index) else None
                if isinstance(k, str):
                    assigned.add(k)
        # nested functions rebinding the parameter name would shadow it: rare; keep it simple
        if any(isinstance(n, (cst.FunctionDef, cst.Lambda)) and n is not fn for n in iter_nodes(body, (cst.FunctionDef,))):
            return []
        return [(s, k) for s, k in reads if k not in assigned]

    def _report(self, node, key: str, info: knowledge.DatasetInfo, symptom: str) -> None:
        close = difflib.get_close_matches(key, info.columns, n=1, cutoff=0.5)
        text_cols = [c for c in info.columns if c not in (info.label_column, "idx", "id")]
        guess = close[0] if close else (text_cols[0] if len(text_cols) == 1 else None)
        self.report(
            node,
            f"{info.display} has no column {key!r} (its columns: {', '.join(info.columns)}): {symptom}",
            hint=f"use {guess!r}" if guess else f"use one of {', '.join(repr(c) for c in info.columns)}",
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
            f"{info.display} is stored sorted by label, so {shown} takes rows from one end of the sorted split and "
            f"{what}: the model learns to predict one class (and evaluation on it is meaningless)",
            hint="shuffle before taking a subset: `ds.shuffle(seed=42).select(range(N))`",
            severity=Severity.ERROR if certain else Severity.WARNING,
        )


_INPLACE_SHUFFLES = frozenset({"random.shuffle", "numpy.random.shuffle"})
_COPY_SHUFFLES = frozenset({"numpy.random.permutation", "sklearn.utils.shuffle", "random.sample"})
_LISTINGS = frozenset({"glob.glob", "glob.iglob", "os.listdir", "os.scandir", "tensorflow.io.gfile.glob",
                       "tensorflow.io.gfile.listdir"})
_PATH_LISTING_METHODS = frozenset({"glob", "rglob", "iterdir"})
#: the words a listing call says: the last part of each qualified listing, and the pathlib methods
_LISTING_WORDS = tuple(sorted({q.rsplit(".", 1)[-1] for q in _LISTINGS} | _PATH_LISTING_METHODS))
#: calls that pair their arguments example by example
_PAIRING = frozenset({"zip", "fit", "train_test_split", "TensorDataset", "from_tensor_slices", "from_dict",
                      "train_on_batch", "partial_fit"})


def _pairing_args(call: cst.Call) -> list[cst.BaseExpression]:
    """The expressions a pairing call aligns example by example (positional args, a tuple, dict values)."""
    out: list[cst.BaseExpression] = []
    for a in call.args:
        if a.keyword is not None and a.keyword.value not in ("x", "y", "X"):
            continue
        v = a.value
        if isinstance(v, (cst.Tuple, cst.List)) and len(call.args) == 1:
            out.extend(e.value for e in v.elements)
        elif isinstance(v, cst.Dict) and len(call.args) == 1:
            out.extend(e.value for e in v.elements if isinstance(e, cst.DictElement))
        elif not a.star:
            out.append(v)
    return out


#: functions that cut an array into a list of chunks: pairing their result pairs chunks, not examples
_CHUNKING = frozenset({"split", "array_split", "hsplit", "vsplit", "dsplit", "tensor_split", "chunk"})


def _derived_from(expr: cst.BaseExpression) -> str | None:
    """The one array an expression is a slice, copy or function of: `x[k:]`, `x.copy()`, `np.array(x)`,
    `pad_sequences(x, maxlen=25)` (its first positional argument); None otherwise, and None for a list of
    chunks of it (`np.split(x, [a, b])`: `zip(["train", "val", "test"], chunks)` pairs three chunks)."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Subscript):
        return _derived_from(expr.value)
    if isinstance(expr, cst.Call):
        f = expr.func
        if (f.attr.value if isinstance(f, cst.Attribute) else f.value if isinstance(f, cst.Name) else "") in _CHUNKING:
            return None
        if isinstance(f, cst.Attribute) and f.attr.value in ("copy", "reshape", "astype", "to", "float", "long",
                                                               "numpy", "tolist") and isinstance(f.value, cst.Name):
            return f.value.value
        pos = [a for a in expr.args if a.keyword is None and not a.star]
        if pos and isinstance(pos[0].value, (cst.Name, cst.Subscript)):
            return _derived_from(pos[0].value)
    return None


def _same_loop(facts, a: cst.CSTNode, b: cst.CSTNode) -> bool:
    """``a`` and ``b`` run in the body of one loop."""
    wa, wb = facts.where.get(a), facts.where.get(b)
    if wa is None or wb is None:
        return False
    loops_b = {id(x) for x in wb.blocks if isinstance(x, (cst.For, cst.While))}
    return any(id(x) in loops_b for x in wa.blocks if isinstance(x, (cst.For, cst.While)))


def _pairing_name(facts, call: cst.Call) -> str | None:
    func = call.func
    if isinstance(func, cst.Name):
        if func.value == "zip" and facts.lookup("zip", call) is None:
            return "zip"
        qn = facts.callee(call) or ""
        last = qn.rsplit(".", 1)[-1]
        return last if last in _PAIRING and last != "zip" else None
    if isinstance(func, cst.Attribute) and func.attr.value in _PAIRING and func.attr.value != "zip":
        return func.attr.value
    return None


def _mentions(node: cst.CSTNode, name: str) -> bool:
    return any(n.value == name for n in iter_nodes(node, (cst.Name,)))


#: calls that return their one positional argument reordered (`X = shuffle(X)`, `x = np.random.permutation(x)`)
_REORDERING_CALLS = frozenset({"sklearn.utils.shuffle", "numpy.random.permutation", "random.sample"})
#: methods that return the rows of their receiver in a random order (`df.sample(frac=1)`, `ds.shuffle(seed=0)`)
_REORDERING_METHODS = frozenset({"sample", "shuffle"})
#: methods that add elements to a list in place: the list then holds the order of what was added too
_GROWING = frozenset({"append", "extend", "insert"})
_BUILTIN_NAMES = frozenset(dir(builtins)) | {"self"}


def _var_key(expr) -> str | None:
    """The variable an expression names: `x`, or `self.x` (an attribute of the instance)."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        return "self." + expr.attr.value
    return None


class _RowOrders:
    """The row order each variable of one function holds, statement by statement (document order).

    A variable read from others holds the orders they had when it was read (`labels = list(df["labels"])`,
    `names = df["image"].tolist()`, `self.labels = self._prepare_labels()` through the methods of the class);
    a shuffle (`df = df.sample(frac=1)`, `random.shuffle(files)`, `X = shuffle(X)`) gives the shuffled
    variable a new order of its sources, while what was read from it before keeps the old one. An order is
    a pair (source, the shuffle that made it, or None for the order the source was made in). Each variable
    also keeps the variables it was read from (`lineage`): a copy made to be shuffled and paired with its
    original (`new = list(nodes); rng.shuffle(new); zip(nodes, new)`, a random relabelling, negatives for a
    contrastive loss) is not taken from what was shuffled."""

    def __init__(self, rule, nodes: list[cst.CSTNode], methods: dict[str, cst.FunctionDef]) -> None:
        """``nodes``: the assignments, `for` loops and calls of the function, in document order."""
        self.rule = rule
        self.facts = facts = rule.ctx.facts
        self.methods = methods
        self.state: dict[str, frozenset] = {}
        self.lineage: dict[str, frozenset[str]] = {}  # variable -> the variables it was read from
        self.shuffled: dict[cst.CSTNode, str] = {}  # shuffle call -> the variable it shuffled
        #: pairing call -> (its arguments, the orders each holds there, the variables each was read from)
        self.pairings: dict[cst.Call, list[tuple[cst.BaseExpression, frozenset, frozenset]]] = {}
        self._external = set(facts.imports.names) | _BUILTIN_NAMES
        for n in nodes:
            self._step(n)

    # -- statements ------------------------------------------------------------------------
    def _step(self, n) -> None:
        if isinstance(n, cst.Call):
            self._call(n)
        elif isinstance(n, cst.For):
            keys: set[str] = set()
            orders = self.reads(n.iter, keys)
            for t in iter_nodes(n.target, (cst.Name,)):
                self.state[t.value] = orders
                self.lineage[t.value] = frozenset(keys)
        elif isinstance(n, cst.AugAssign):
            key = _var_key(n.target)
            if key is not None:
                self._grow(key, n.value)
        elif n.value is not None:
            targets: list[cst.BaseAssignTargetExpression] = (
                [t.target for t in n.targets] if isinstance(n, cst.Assign) else [n.target])
            for target in targets:
                self._assign(target, n.value, self.facts.where[n].order)

    def _call(self, call: cst.Call) -> None:
        f = call.func
        if _pairing_name(self.facts, call) is not None:
            pairs = self.pairings[call] = []
            for a in _pairing_args(call):
                keys: set[str] = set()
                pairs.append((a, self.reads(a, keys), frozenset(keys)))
            return
        if isinstance(f, cst.Attribute) and f.attr.value in _GROWING:
            key = _var_key(f.value)
            if key is not None and key in self.state:  # `labels.append(label_of(f))`
                for arg in call.args:
                    self._grow(key, arg.value)
            return
        if (self.facts.callee(call) or "") in _INPLACE_SHUFFLES or self.rule._rng_shuffle(call):
            key = _var_key(argument(call, "x", 0))
            if key is not None:
                self._shuffle(key, call)

    def _grow(self, key: str, value) -> None:
        keys: set[str] = set()
        self.state[key] = self.get(key) | self.reads(value, keys)
        self.lineage[key] = self.lineage.get(key, frozenset()) | keys

    def _bind(self, key: str, value, order: int) -> None:
        keys: set[str] = set()
        self.state[key] = self.reads(value, keys) or frozenset({(f"{key}#{order}", None)})
        self.lineage[key] = frozenset(keys)

    def _assign(self, target, value, order: int) -> None:
        key = _var_key(target)
        if key is not None:
            shuffle = self._reordering(key, value)
            if shuffle is not None:
                self._shuffle(key, shuffle)
            else:
                self._bind(key, value, order)
            return
        if isinstance(target, (cst.Tuple, cst.List)):
            elements = [e.value for e in target.elements]
            values = [e.value for e in value.elements] if isinstance(value, (cst.Tuple, cst.List)) and \
                len(value.elements) == len(elements) else None
            joint = self._joint_shuffle(value, len(elements))
            for i, t in enumerate(elements):
                k = _var_key(t)
                if joint is not None and k is not None:  # `X, y = shuffle(X, y)`: one order for both
                    self.state[k] = frozenset((src, value) for src, _ in self.reads(joint[i]))
                    self.shuffled[value] = k
                elif values is not None:
                    self._assign(t, values[i], order)
                elif k is not None:
                    self._bind(k, value, order)
            return
        if isinstance(target, cst.Subscript):  # `labels[i] = ...`
            key = _var_key(target.value)
            if key is not None and key in self.state:
                self._grow(key, value)

    def _shuffle(self, key: str, node: cst.CSTNode) -> None:
        self.state[key] = frozenset((src, node) for src, _ in self.get(key))
        self.shuffled[node] = key

    def _reordering(self, key: str, value) -> cst.Call | None:
        """The call that makes `value` the rows of `key` reordered: `key.sample(frac=1).reset_index(drop=True)`,
        `shuffle(key)`, `np.random.permutation(key)`."""
        if not isinstance(value, cst.Call):
            return None
        if (self.facts.callee(value) or "") in _REORDERING_CALLS:
            pos = positional(value)
            return value if len(pos) >= 1 and _var_key(pos[0].value) == key and (
                len(pos) == 1 or self.facts.callee(value) == "random.sample") else None
        e: cst.BaseExpression = value
        found: cst.Call | None = None
        while _var_key(e) is None:  # down the method chain to its receiver
            if isinstance(e, cst.Call) and isinstance(e.func, cst.Attribute):
                if e.func.attr.value in _REORDERING_METHODS:
                    found = e
                e = e.func.value
            elif isinstance(e, (cst.Subscript, cst.Attribute)):
                e = e.value
            else:
                return None
        return found if found is not None and _var_key(e) == key else None

    def _joint_shuffle(self, value, n: int) -> list | None:
        """`shuffle(X, y)`: the arrays shuffled together, one per target."""
        if isinstance(value, cst.Call) and (self.facts.callee(value) or "") == "sklearn.utils.shuffle":
            pos = positional(value)
            if len(pos) == n:
                return [a.value for a in pos]
        return None

    # -- expressions -----------------------------------------------------------------------
    def get(self, key: str) -> frozenset:
        return self.state.get(key) or frozenset({(key, None)})

    def reads(self, expr, keys: set[str] | None = None) -> frozenset:
        """The orders an expression holds: those of every variable it reads (a method of the class called on
        `self` reads what its body reads); imported names, builtins and called functions hold none. ``keys``
        collects the variables read, and those they were read from."""
        out: set = set()
        stack = [expr]
        while stack:
            e = stack.pop()
            key = _var_key(e)
            if key is not None:
                if key not in self._external:
                    out |= self.get(key)
                    if keys is not None:
                        keys.add(key)
                        keys |= self.lineage.get(key, frozenset())
                continue
            if isinstance(e, cst.Call):
                f = e.func
                if isinstance(f, cst.Attribute) and _var_key(f) is not None and f.attr.value in self.methods:
                    out |= self._method_reads(f.attr.value, frozenset({f.attr.value}), keys)
                elif not isinstance(f, cst.Name):
                    stack.append(f)
                stack.extend(a.value for a in e.args)
            elif isinstance(e, cst.Attribute):
                stack.append(e.value)
            elif isinstance(e, cst.Arg):
                stack.append(e.value)  # not the keyword's name
            elif not isinstance(e, (cst.Lambda, cst.FunctionDef)):
                stack.extend(e.children)
        return frozenset(out)

    def _method_reads(self, name: str, seen: frozenset[str], keys: set[str] | None) -> frozenset[cst.Call]:
        out: frozenset[cst.Call] = frozenset()
        for node in iter_nodes(self.methods[name].body, (cst.Attribute, cst.Call)):
            if isinstance(node, cst.Call):
                f = node.func
                if isinstance(f, cst.Attribute) and _var_key(f) is not None and f.attr.value in self.methods \
                        and f.attr.value not in seen:
                    out |= self._method_reads(f.attr.value, seen | {f.attr.value}, keys)
                continue
            key = _var_key(node)
            if key is not None and key in self.state:
                out |= self.state[key]
                if keys is not None:
                    keys.add(key)
                    keys |= self.lineage.get(key, frozenset())
        return out

    # -- misalignment ----------------------------------------------------------------------
    def split(self, a: frozenset, b: frozenset) -> tuple[cst.CSTNode, bool] | None:
        """The shuffle that puts one of two values in a new order of a source the other holds in the order
        the source was made in (each in that one order only): (the shuffle, whether `b` is the shuffled one)."""
        va: dict = {}
        vb: dict = {}
        for src, v in a:
            va.setdefault(src, set()).add(v)
        for src, v in b:
            vb.setdefault(src, set()).add(v)
        for src in sorted(va.keys() & vb.keys()):
            x, y = va[src], vb[src]
            if len(x) == 1 and len(y) == 1 and x != y:
                (x,), (y,) = x, y
                if x is None:
                    return y, True
                if y is None:
                    return x, False
        return None


def _indexed_together(method: cst.FunctionDef, through: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """index name -> the attributes ``method`` reads as `self.<attribute>[<index>]` (in order, each once)."""
    out: dict[str, list[str]] = {}
    for sub in iter_nodes(method.body, (cst.Subscript,)):
        item = self_item(sub, through)
        if item is not None:
            attrs = out.setdefault(item[1], [])
            if item[0] not in attrs:
                attrs.append(item[0])
    return out


@register
class MisalignedLabels(Rule):
    """Features and labels that no longer line up: one of two parallel arrays shuffled on its own, or
    an unsorted `glob`/`os.listdir` file list paired with labels from elsewhere."""

    code = "TL104"
    name = "misaligned-labels"
    severity = Severity.ERROR
    # a pairing call, and (a lone shuffle — named shuffle/permutation/sample, from `random`, `numpy.random`
    # or `sklearn`, or a table's own `.sample(frac=1)` / `.shuffle()` — or an unsorted listing):
    # (S and (R or sample or shuffle)) or L is (S or L) and (R or sample or shuffle or L)
    # (a `Dataset` class indexing two listings, or two columns of a table, with one index: `__getitem__`)
    gate = ((*sorted(_PAIRING), "__getitem__"),
            ("shuffle", "permutation", "sample", *_LISTING_WORDS),
            ("random", "sklearn", "sample", "shuffle", *_LISTING_WORDS))

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        """A dataset class that lists two directories without sorting (`self.features = os.listdir(a)`,
        `self.labels = os.listdir(b)`) and pairs them by position (`self.features[idx]`, `self.labels[idx]`)."""
        methods = {s.name.value: s for s in node.body.body if isinstance(s, cst.FunctionDef)}
        init = methods.get("__init__")
        if init is None:
            return
        self._pairs_copied_before_shuffle(methods, init)
        listings: dict[str, cst.Call] = {}
        for assign in iter_nodes(init.body, (cst.Assign,)):
            for t in assign.targets:
                tgt = t.target
                if (isinstance(tgt, cst.Attribute) and isinstance(tgt.value, cst.Name) and tgt.value.value == "self"):
                    call = self._listing_in(assign.value)
                    if call is not None:
                        listings[tgt.attr.value] = call
        if len(listings) < 2:
            return
        # sorted (or re-bound) anywhere in the class: `self.files.sort()`, `self.files = sorted(self.files)`
        for n in iter_nodes(node, (cst.Call, cst.Assign)):
            if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == "sort":
                owner = n.func.value
                if isinstance(owner, cst.Attribute) and owner.attr.value in listings:
                    listings.pop(owner.attr.value)
            elif isinstance(n, cst.Assign) and n.value not in listings.values():
                for t in n.targets:
                    if isinstance(t.target, cst.Attribute) and t.target.attr.value in listings:
                        listings.pop(t.target.attr.value)
        for name, method in methods.items():
            if name == "__init__":
                continue
            by_index = {idx: [a for a in attrs if a in listings] for idx, attrs in _indexed_together(method).items()}
            for idx, attrs in by_index.items():
                if len(attrs) < 2:
                    continue
                a, b = sorted(attrs[:2], key=lambda n: self.ctx.facts.where[listings[n]].order)
                call = listings[a]
                self.report(
                    call,
                    f"`{self.ctx.code(call)}` returns files in arbitrary (file-system) order, and `{name}` pairs "
                    f"`self.{a}[{idx}]` with `self.{b}[{idx}]`, another unsorted listing: features and labels can be "
                    "misaligned, and the loss oscillates or plateaus",
                    hint=f"sort both listings: `self.{a} = sorted(...)`, `self.{b} = sorted(...)`",
                    severity=Severity.WARNING,
                )
                return

    def visit_Call(self, node: cst.Call) -> None:
        kind = _pairing_name(self.ctx.facts, node)
        if kind is None:
            return
        self._lone_shuffle_or_listing(node, kind)
        self._copied_before_shuffle(node, kind)

    def report(self, node, message: str, **kwargs) -> None:
        """One finding per shuffle or listing, whichever pairing shows it."""
        done = self.__dict__.setdefault("_reported", set())
        if node not in done:
            done.add(node)
            super().report(node, message, **kwargs)

    # -- a column copied out before its table is shuffled ------------------------------------
    def _orders(self, scope, methods=None) -> _RowOrders | None:
        """The row orders of one function (None when it shuffles nothing: nothing can be out of order)."""
        memo = self.__dict__.setdefault("_orders_memo", {})
        if scope not in memo:
            nodes, shuffles = self._scope_nodes().get(scope, ([], False))
            memo[scope] = _RowOrders(self, nodes, methods or {}) if shuffles else None
        return memo[scope]

    def _scope_nodes(self) -> dict[Any, Any]:
        """function → (its assignments, `for` loops and calls in document order, whether one of its calls is
        named like a shuffle): one pass over the file."""
        memo: dict[Any, Any] | None = self.__dict__.get("_scopes_memo")
        if memo is None:
            facts = self.ctx.facts
            memo = {}
            self._scopes_memo = memo
            for kind in ("Assign", "AnnAssign", "AugAssign", "For", "Call"):
                for n in facts.index.get(kind, ()):
                    entry = memo.setdefault(facts.where[n].function, ([], [False]))
                    entry[0].append(n)
                    if kind == "Call" and not entry[1][0]:
                        f = n.func
                        name = f.attr.value if isinstance(f, cst.Attribute) else f.value if isinstance(f, cst.Name) else ""
                        entry[1][0] = name in ("shuffle", "sample", "permutation")
            for scope, (nodes, flag) in list(memo.items()):
                nodes.sort(key=lambda n: facts.where[n].order)
                memo[scope] = (nodes, flag[0])
        return memo

    def _copied_before_shuffle(self, node: cst.Call, kind: str) -> None:
        """`labels = list(df["label"])`, then `df = df.sample(frac=1)`, then `zip(df["text"], labels)`: the
        labels keep the order the table had before the shuffle, the texts take the new one."""
        facts = self.ctx.facts
        scope = facts.where[node].function
        methods = {}
        cls = facts.where[node].inside(cst.ClassDef)
        if cls is not None and isinstance(scope, cst.FunctionDef):
            methods = {s.name.value: s for s in cls.body.body if isinstance(s, cst.FunctionDef)}
        orders = self._orders(scope, methods)
        if orders is None:
            return
        args = orders.pairings.get(node, [])
        for i, (a, oa, ka) in enumerate(args):
            for b, ob, kb in args[i + 1:]:
                found = orders.split(oa, ob)
                if found is not None and orders.shuffled.get(found[0]) in (ka if found[1] else kb):
                    shuffle, b_newer = found
                    old, new = (a, b) if b_newer else (b, a)
                    self._report_copied(orders, shuffle, self.ctx.code(old), self.ctx.code(new),
                                        f"`{kind}(...)` pairs them example by example")
                    return

    def _pairs_copied_before_shuffle(self, methods: dict, init: cst.FunctionDef) -> None:
        """A dataset class whose `__init__` copies a column out of its table, shuffles the table, reads another
        column, and whose `__getitem__` indexes both with one index (`self.img_names[idx]`, `self.labels[idx]`)."""
        method = methods.get("__getitem__")
        if method is None:
            return
        # `self.labels[idx]`, `self.data.iloc[idx]` (positional rows; not `.loc`, which reads by index label)
        for idx, attrs in _indexed_together(method, through=("iloc",)).items():
            keys = [f"self.{a}" for a in attrs]
            if len(keys) < 2:
                continue
            orders = self._orders(init, methods)
            if orders is None:
                return
            for i, a in enumerate(keys):
                if a not in orders.state:
                    continue
                for b in keys[i + 1:]:
                    found = orders.split(orders.state[a], orders.state[b]) if b in orders.state else None
                    if found is not None and orders.shuffled.get(found[0]) in orders.lineage.get(
                            a if found[1] else b, frozenset()):
                        shuffle, b_newer = found
                        old, new = (a, b) if b_newer else (b, a)
                        self._report_copied(orders, shuffle, old, new,
                                            f"`__getitem__` pairs `{old}[{idx}]` with `{new}[{idx}]`")
                        return

    def _report_copied(self, orders: _RowOrders, shuffle: cst.CSTNode, old: str, new: str, pairing: str) -> None:
        table = orders.shuffled.get(shuffle, "the data")
        self.report(
            shuffle,
            f"`{self.ctx.code(shuffle)}` reorders `{table}` after `{old}` was taken from it, and {pairing}: `{old}` "
            f"keeps the old row order and `{new}` follows the new one, so every example gets the label of another "
            "row — the loss plateaus at chance level",
            hint=f"shuffle `{table}` before taking anything out of it (or take `{old}` again after the shuffle)",
        )

    def _lone_shuffle_or_listing(self, node: cst.Call, kind: str) -> None:
        facts = self.ctx.facts
        names = [e for e in _pairing_args(node) if isinstance(e, cst.Name)]
        if len(names) < 2 or len({n.value for n in names}) != len(names):
            return
        scope = facts.where[node].function
        # each array and the arrays it was derived from (`x_train = x[k:]`, `x = pad_sequences(x)`)
        shuffled: dict[str, cst.Call | None] = {}
        root: dict[str, str] = {}  # the array each argument comes from (the one shuffled, if one is)
        for n in names:
            shuffled[n.value] = self._shuffled(n.value, node, scope)
            lineage = self._lineage(n.value, node)
            root[n.value] = lineage[-1][0]
            if shuffled[n.value] is not None:
                root[n.value] = n.value
                continue
            for name, binding, read in lineage[1:]:
                found = self._shuffled_between(name, binding, read, scope)
                if found is not None:
                    shuffled[n.value], root[n.value] = found, name
                    break
        if len(set(root.values())) != len(names):
            return  # two arguments derived from one array
        listed = {n.value: self._unsorted_listing(n.value, node, scope) for n in names}
        # one array shuffled alone
        lone = [(n, shuffle) for n in names if (shuffle := shuffled[n.value]) is not None]
        if len(lone) == 1 and self._copy_made_to_shuffle(root[lone[0][0].value], lone[0][1]):
            return  # `random_labels = labels[:]; np.random.shuffle(random_labels)`: labels randomised on purpose
        if len(lone) == 1:
            arg, alone = lone[0][0].value, lone[0][1]
            x = root[arg]
            others = [n.value if root[n.value] == n.value else root[n.value] for n in names if n.value != arg
                      and self._independent(root[n.value], node if root[n.value] == n.value else alone, alone, x)]
            if others:
                self.report(
                    alone,
                    f"`{self.ctx.code(alone)}` shuffles `{x}` but not `{others[0]}`, which `{kind}(...)` pairs "
                    "with it example by example: every feature now has a random label — the loss plateaus at "
                    "chance level",
                    hint=f"shuffle them together: `idx = np.random.permutation(len({x})); {x}, {others[0]} = "
                    f"{x}[idx], {others[0]}[idx]` (or `sklearn.utils.shuffle({x}, {others[0]})`)",
                )
                return
        # unsorted file listings
        lists = [n.value for n in names if listed[n.value] is not None]
        if not lists:
            return
        x = lists[0]
        since = listed[x]
        partners = [n.value for n in names if n.value != x and since is not None
                    and (listed[n.value] is not None or self._independent(n.value, node, since, x))]
        if not partners:
            return
        y = partners[0]
        both = listed.get(y) is not None
        self.report(
            listed[x],
            f"`{self.ctx.code(listed[x])}` returns files in arbitrary (file-system) order, and `{kind}(...)` pairs "
            f"`{x}` with `{y}`, " + ("another unsorted listing: " if both else "which does not come from it: ")
            + "features and labels can be misaligned, and the loss oscillates or plateaus",
            hint=f"sort the listing: `{x} = sorted(...)`" + (" (both of them)" if both else
                                                             f", and build `{y}` from `{x}` (e.g. from each file name)"),
            severity=Severity.WARNING,
        )

    def _lineage(self, name: str, at: cst.CSTNode):
        """``name`` and the arrays it was derived from, newest first: (name, its binding, the order it is read
        at) for `x_train = x[k:]` (a slice), `x = pad_sequences(x, ...)` (a function of one array), `x.copy()`."""
        facts = self.ctx.facts
        scope = facts.where[at].function
        b = facts.lookup(name, at)
        out = [(name, b, facts.where[at].order)]
        for _ in range(6):
            if b is None or not isinstance(b.value, cst.BaseExpression):
                break
            src = _derived_from(b.value)
            if not src:
                break
            earlier = [x for x in facts.bindings.get(scope, {}).get(src, ()) if x.order < b.order]
            if not earlier or earlier[-1].value is None or isinstance(earlier[-1].value, cst.Param):
                break
            if any(n == src and x is earlier[-1] for n, x, _ in out):
                break
            out.append((src, earlier[-1], b.order))
            b = earlier[-1]
        return out

    def _shuffled_between(self, name: str, binding, read_order: int, scope) -> cst.Call | None:
        """An in-place shuffle of ``name`` after ``binding`` and before ``read_order``."""
        facts = self.ctx.facts
        for call in self._shuffle_calls(scope):
            w = facts.where[call]
            if not binding.order < w.order < read_order:
                continue
            qn = facts.callee(call) or ""
            if qn in _INPLACE_SHUFFLES or self._rng_shuffle(call):
                arg = argument(call, "x", 0)
                if isinstance(arg, cst.Name) and arg.value == name:
                    return call
        return None

    # -- shuffles --------------------------------------------------------------------------
    def _shuffled(self, name: str, at: cst.Call, scope) -> cst.Call | None:
        """The call that shuffled `name` on its own before `at` (in place, or `x = permutation(x)`)."""
        facts = self.ctx.facts
        order = facts.where[at].order
        b = facts.lookup(name, at)
        if b is None:
            return None
        found = None
        for call in self._shuffle_calls(scope):
            w = facts.where[call]
            if w.order >= order:
                continue
            qn = facts.callee(call) or ""
            if qn in _INPLACE_SHUFFLES or self._rng_shuffle(call):
                arg = argument(call, "x", 0)
                if isinstance(arg, cst.Name) and arg.value == name and w.order > b.order:
                    found = call
            elif qn in _COPY_SHUFFLES and b.value is call:
                args = [a for a in call.args if a.keyword is None]
                if len(args) == 1 and isinstance(args[0].value, cst.Name):
                    found = call
        return found

    def _copy_made_to_shuffle(self, name: str, shuffle: cst.Call) -> bool:
        """`name` is bound to a copy of another array (`y[:]`, `y.copy()`, `np.copy(y)`, `list(y)`) and
        shuffled in place: the experiment of fitting randomly shuffled labels, not a misalignment."""
        b = self.ctx.facts.lookup(name, shuffle)
        v = b.value if b is not None else None
        if isinstance(v, cst.Subscript) and len(v.slice) == 1 and isinstance(v.slice[0].slice, cst.Slice):
            sl = v.slice[0].slice
            return sl.lower is None and sl.upper is None and isinstance(v.value, cst.Name)
        if isinstance(v, cst.Call):
            f = v.func
            if isinstance(f, cst.Attribute) and f.attr.value == "copy" and not v.args and isinstance(f.value, cst.Name):
                return True
            last = dotted(f) or ""
            return last.rsplit(".", 1)[-1] in ("copy", "deepcopy", "list") and len(v.args) == 1 \
                and isinstance(v.args[0].value, cst.Name)
        return False

    def _shuffle_calls(self, scope: cst.CSTNode | None) -> list[cst.Call]:
        """The shuffling calls of one scope (all scopes computed in one pass over the calls)."""
        cache: dict[cst.CSTNode | None, list[cst.Call]] | None = getattr(self, "_cache", None)
        if cache is None:
            cache = {}
            self._cache = cache
            facts = self.ctx.facts
            for call in facts.index.get("Call", ()):
                func = call.func
                name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
                if name not in ("shuffle", "permutation", "sample"):
                    continue
                qn = facts.callee(call) or ""
                if qn in _INPLACE_SHUFFLES or qn in _COPY_SHUFFLES or self._rng_shuffle(call):
                    cache.setdefault(facts.where[call].function, []).append(call)
        return cache.get(scope, [])

    def _rng_shuffle(self, call: cst.Call) -> bool:
        """`rng.shuffle(x)` with `rng = np.random.default_rng(...)` / `RandomState(...)` / `random.Random(...)`."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "shuffle" and isinstance(func.value, cst.Name)):
            return False
        b = self.ctx.facts.lookup(func.value.value, call)
        if b is None or not isinstance(b.value, cst.Call):
            return False
        return (self.ctx.facts.callee(b.value) or "") in ("numpy.random.default_rng", "numpy.random.RandomState",
                                                          "random.Random")

    def _independent(self, name: str, at: cst.Call, since: cst.CSTNode, other: str) -> bool:
        """`name` does not follow the order of `other` (shuffled or listed by `since`): bound before
        `since`, or to an expression not built from `other`, and never mutated (an `append` per file)."""
        facts = self.ctx.facts
        b = facts.lookup(name, at)
        if b is None:
            return False
        scope = facts.where[at].function
        since_order = facts.where[since].order
        for call in facts.index.get("Call", ()):
            f = call.func
            if (isinstance(f, cst.Attribute) and isinstance(f.value, cst.Name) and f.value.value == name
                    and f.attr.value in ("append", "extend", "insert", "shuffle", "sort")
                    and facts.where[call].function is scope
                    and (facts.where[call].order > since_order or _same_loop(facts, call, since))):
                return False  # built after the shuffle or listing (from it), or in the same loop
        for aug in facts.index.get("AugAssign", ()):
            if isinstance(aug.target, cst.Name) and aug.target.value == name and facts.where[aug].function is scope:
                return False
        if b.order < facts.where[since].order:
            return True
        return b.value is not None and not _mentions(b.value, other)

    # -- listings --------------------------------------------------------------------------
    def _unsorted_listing(self, name: str, at: cst.Call, scope) -> cst.Call | None:
        facts = self.ctx.facts
        b = facts.lookup(name, at)
        if b is None or b.value is None:
            return None
        call = self._listing_in(b.value)
        if call is None:
            return None
        for c in facts.index.get("Call", ()):  # name.sort() afterwards
            f = c.func
            if (isinstance(f, cst.Attribute) and f.attr.value == "sort" and isinstance(f.value, cst.Name)
                    and f.value.value == name and facts.where[c].function is scope):
                return None
        return call

    def _listing_in(self, expr: cst.BaseExpression) -> cst.Call | None:
        """The unsorted listing call `expr` is made of: `glob(...)`, `list(glob(...))`, `path.glob(...)`, a
        comprehension over `os.listdir(...)`; None when sorted (or not a listing)."""
        facts = self.ctx.facts
        if isinstance(expr, cst.Call):
            qn = facts.callee(expr)
            if qn in _LISTINGS:
                return expr
            f = expr.func
            if qn is None and isinstance(f, cst.Attribute) and f.attr.value in _PATH_LISTING_METHODS:
                return expr  # pathlib: Path(d).glob("*.png")
            if isinstance(f, cst.Name) and f.value in ("list", "tuple") and len(expr.args) == 1:
                return self._listing_in(expr.args[0].value)
            return None
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp)) and expr.for_in.inner_for_in is None:
            return self._listing_in(expr.for_in.iter)
        return None


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
        source = _UNSEEDED_SOURCES.get(qn)
        what = f"`{self.ctx.code(node.func)}`"
        fn = facts.where[node].function
        if isinstance(fn, cst.FunctionDef) and fn.name.value in ("forward", "call", "__call__") \
                and facts.where[node].inside(cst.ClassDef) is not None:
            return  # a draw in a model's forward pass (layer drop, noise): not the data's selection or order
        if source is None:
            source = self._dataset_shuffle(node)
            if source is None:
                return
            what = f"`{self.ctx.code(node.func)}()` without `seed=`"
        if qn in ("torch.utils.data.random_split", "torch.randperm") and keyword(node, "generator") is not None:
            return
        if not (self._multiprocess() or self._lightning_runs(node)) or source in self._seeds():
            return
        if (fn is not None or facts.where[node].inside(cst.ClassDef) is not None) and not self._runs_definitions():
            return  # a function of a module that only defines: its caller runs (and seeds) it
        per_rank = self._per_rank_seeds().get(source)
        how = (f"the global {source} generator, which `{self.ctx.code(per_rank)}` seeds differently in every process"
               if per_rank is not None else f"the unseeded global {source} generator")
        self.report(
            node.func,
            f"{what} draws from {how}, in a script that runs as several processes (accelerate, torchrun, a "
            "multi-device Lightning Trainer): each process shuffles or splits the data differently, so processes "
            "train on overlapping examples and examples of the validation split leak into training",
            hint="seed every process the same before preparing data: `accelerate.utils.set_seed(42)` (or "
            "`transformers.set_seed(42)`, Lightning's `seed_everything(42)`), or pass `seed=`/`random_state=`/"
            "`generator=torch.Generator().manual_seed(42)`",
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
                or "LOCAL_RANK" in self.ctx.source
                or re.search(r"\.local_rank\b", self.ctx.source) is not None  # `training_args.local_rank`
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
