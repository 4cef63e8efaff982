"""Facts shared by every rule, computed once per file from one walk of the tree.

- :class:`Imports` resolves local names to qualified names (``import transformers as tr``,
  ``from transformers import Trainer as T``, ``tf.keras`` / ``keras`` / ``tf_keras``).
- :class:`Facts` is a small intra-file dataflow: which name holds a raw dataset
  (``load_dataset(...)``), a tokenized one (``.map(f)`` where ``f`` calls the tokenizer, and whether
  it pads to a fixed length, truncates or groups into fixed-length blocks), a model (class,
  checkpoint, ``num_labels``/``id2label``/``config=``), a Trainer, a ``tf.data`` dataset, a
  metric, inside functions too and through ``ds["train"]``.

Everything here is lazy and memoised: a rule asks ``facts.value_of(expr)`` and gets an abstract
:class:`Value`; nothing is computed for files no rule asks about.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Iterator, Sequence

import libcst as cst

from trainlint import knowledge

# ---------------------------------------------------------------------------------------------
# Walking: one pass, recording the nodes rules and facts care about.

#: Node fields that never hold a node any rule looks at (whitespace, tokens, brackets).
_SKIP_FIELDS = frozenset(
    {
        "lpar", "rpar", "comma", "semicolon", "leading_lines", "lines_after_decorators",
        "header", "footer", "colon", "equal", "star", "dot", "operator", "default_indent",
        "default_newline", "encoding", "has_trailing_newline", "indent", "newline",
        "first_line", "empty_lines", "prefix", "asynchronous", "lbracket", "rbracket",
        "lbrace", "rbrace", "whitespace_after_arg", "trailing_whitespace",
    }
)
_FIELDS_CACHE: dict[type, tuple[str, ...]] = {}

#: Nodes that open a block: the chain of them is each recorded node's context.
STRUCTURAL = (
    cst.FunctionDef, cst.ClassDef, cst.For, cst.While, cst.With, cst.If, cst.Try, cst.Lambda,
)
#: Node types the facts themselves need, whatever rules are enabled.
FACT_TYPES = frozenset(
    {"Assign", "AnnAssign", "AugAssign", "FunctionDef", "ClassDef", "Import", "ImportFrom",
     "Call", "Return", "For"}
)


def _fields(tp: type) -> tuple[str, ...]:
    f = _FIELDS_CACHE.get(tp)
    if f is None:
        f = tuple(
            x.name
            for x in dataclasses.fields(tp)
            if not x.name.startswith("whitespace") and x.name not in _SKIP_FIELDS
        )
        _FIELDS_CACHE[tp] = f
    return f


@dataclasses.dataclass(frozen=True)
class Where:
    """Where a recorded node stands: document order and its enclosing blocks (outermost first)."""

    order: int
    blocks: tuple[cst.CSTNode, ...]

    @property
    def function(self) -> cst.FunctionDef | cst.Lambda | None:
        for b in reversed(self.blocks):
            if isinstance(b, (cst.FunctionDef, cst.Lambda)):
                return b
        return None

    def inside(self, *types: type) -> cst.CSTNode | None:
        for b in reversed(self.blocks):
            if isinstance(b, types):
                return b
        return None


_STRUCTURAL_TYPES = frozenset(STRUCTURAL)
_IS_NODE: dict[type, bool] = {}


def _node_type(tp: type) -> bool:
    """Whether values of type ``tp`` are CST nodes (memoised in ``_IS_NODE``)."""
    r = _IS_NODE.get(tp)
    if r is None:
        r = _IS_NODE[tp] = isinstance(tp, type) and issubclass(tp, cst.CSTNode)
    return r


def walk(module: cst.Module, types: frozenset[str]) -> tuple[dict[str, list[cst.CSTNode]], dict[cst.CSTNode, Where]]:
    """Walk ``module`` once, in document order; index nodes whose type name is in ``types``."""
    index: dict[str, list[cst.CSTNode]] = {t: [] for t in types}
    where: dict[cst.CSTNode, Where] = {}
    order = 0
    stack: list[tuple[cst.CSTNode, tuple]] = [(module, ())]
    pop, push = stack.pop, stack.append
    # exact-type lookups: isinstance() against LibCST's ABC-based classes was a third of the walk
    structural = _STRUCTURAL_TYPES
    is_node = _IS_NODE
    while stack:
        node, blocks = pop()
        tp = type(node)
        bucket = index.get(tp.__name__)
        if bucket is not None:
            bucket.append(node)
            where[node] = Where(order, blocks)
        order += 1
        child_blocks = blocks + (node,) if tp in structural else blocks
        children = []
        for name in _fields(tp):
            v = getattr(node, name)
            tv = type(v)
            if tv is tuple or tv is list:
                children.extend(c for c in v if is_node.get(type(c)) or _node_type(type(c)))
            elif is_node.get(tv) or _node_type(tv):
                children.append(v)
        for c in reversed(children):
            push((c, child_blocks))
    return index, where


# ---------------------------------------------------------------------------------------------
# Small helpers over CST expressions.


def literal(expr: cst.BaseExpression | None):
    """The Python value of a literal expression (str, int, float, bool, None, list/tuple of those).

    Returns :data:`UNKNOWN` when the expression is not a literal.
    """
    if expr is None:
        return UNKNOWN
    if isinstance(expr, cst.SimpleString):
        try:
            return expr.evaluated_value
        except Exception:  # pragma: no cover - odd prefixes
            return UNKNOWN
    if isinstance(expr, cst.ConcatenatedString):
        left, right = literal(expr.left), literal(expr.right)
        if isinstance(left, str) and isinstance(right, str):
            return left + right
        return UNKNOWN
    if isinstance(expr, (cst.Integer, cst.Float)):
        try:
            return expr.evaluated_value
        except (ValueError, SyntaxError):
            return UNKNOWN
    if isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[expr.value]
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        v = literal(expr.expression)
        return -v if isinstance(v, (int, float)) and not isinstance(v, bool) else UNKNOWN
    if isinstance(expr, (cst.List, cst.Tuple)):
        out = []
        for el in expr.elements:
            if not isinstance(el, cst.Element):
                return UNKNOWN
            v = literal(el.value)
            if v is UNKNOWN:
                return UNKNOWN
            out.append(v)
        return out
    return UNKNOWN


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:
        return False


UNKNOWN = _Unknown()


def dotted(expr: cst.BaseExpression) -> str | None:
    """``a.b.c`` → ``"a.b.c"`` for Name/Attribute chains, else None."""
    parts = []
    while isinstance(expr, cst.Attribute):
        parts.append(expr.attr.value)
        expr = expr.value
    if isinstance(expr, cst.Name):
        parts.append(expr.value)
        return ".".join(reversed(parts))
    return None


def keyword(call: cst.Call, name: str) -> cst.Arg | None:
    for a in call.args:
        if a.keyword is not None and a.keyword.value == name:
            return a
    return None


def has_star_kwargs(call: cst.Call) -> bool:
    return any(a.star == "**" for a in call.args)


def positional(call: cst.Call) -> list[cst.Arg]:
    return [a for a in call.args if a.keyword is None and not a.star]


def argument(call: cst.Call, name: str, position: int | None = None) -> cst.BaseExpression | None:
    """The expression given for parameter ``name`` (by keyword, or at ``position``)."""
    kw = keyword(call, name)
    if kw is not None:
        return kw.value
    if position is not None:
        pos = positional(call)
        if position < len(pos) and not any(a.star for a in call.args[: position + 1]):
            return pos[position].value
    return None


def given(call: cst.Call, name: str, position: int | None = None) -> cst.BaseExpression | None:
    """Like :func:`argument`, but an explicit ``None`` (``Trainer(model, args, None, ds)``) counts as
    not given."""
    expr = argument(call, name, position)
    return None if isinstance(expr, cst.Name) and expr.value == "None" else expr


def method_name(call: cst.Call) -> str | None:
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None


def iter_calls(node: cst.CSTNode) -> Iterator[cst.Call]:
    """Every Call below ``node`` (a small local walk, for function bodies)."""
    return iter_nodes(node, (cst.Call,))


def iter_nodes(node: cst.CSTNode, types: tuple[type, ...]) -> Iterator[cst.CSTNode]:
    """Every node of one of ``types`` below ``node`` (a small local walk)."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, types):
            yield n
        for name in _fields(type(n)):
            v = getattr(n, name)
            if isinstance(v, cst.CSTNode):
                stack.append(v)
            elif type(v) is tuple or type(v) is list:
                stack.extend(c for c in v if isinstance(c, cst.CSTNode))


# ---------------------------------------------------------------------------------------------
# Imports.

_KERAS_PREFIXES = ("tensorflow.keras", "tensorflow.python.keras", "tf_keras", "keras.src", "keras")


def canonical(qn: str) -> str:
    """Canonical qualified name: the keras flavours become ``keras.…``; transformers submodules
    collapse to the top-level export (``transformers.models.bert.modeling_bert.X`` → ``transformers.X``)."""
    for p in _KERAS_PREFIXES:
        if qn == p or qn.startswith(p + "."):
            return "keras" + qn[len(p):]
    if qn.startswith("transformers."):
        parts = qn.split(".")
        for i, part in enumerate(parts[1:], 1):
            if part[:1].isupper():
                return ".".join(["transformers", *parts[i:]])
    return qn


class Imports:
    def __init__(self) -> None:
        self.names: dict[str, str] = {}  # local name -> qualified name (raw)
        self.modules: set[str] = set()  # every imported module (raw)
        self._qualified: dict[cst.CSTNode, str | None] = {}  # memo of qualify(); cleared by add()

    def add(self, node: cst.Import | cst.ImportFrom) -> None:
        self._qualified.clear()
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = dotted(alias.name)
                if full is None:
                    continue
                self.modules.add(full)
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    self.names[alias.asname.name.value] = full
                else:
                    top = full.split(".")[0]
                    self.names[top] = top
            return
        if node.relative or node.module is None:
            return
        mod = dotted(node.module)
        if mod is None:
            return
        self.modules.add(mod)
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = alias.name.value if isinstance(alias.name, cst.Name) else dotted(alias.name)
            if name is None:
                continue
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self.names[local] = f"{mod}.{name}"

    def qualify(self, expr: cst.BaseExpression) -> str | None:
        """Raw qualified name of a Name/Attribute chain rooted in an import, else None."""
        # memoised per node: every rule asks it of every call's function (a third of a re-lint)
        try:
            return self._qualified[expr]
        except KeyError:
            pass
        except TypeError:  # pragma: no cover - unhashable
            return self._qualify(expr)
        q = self._qualified[expr] = self._qualify(expr)
        return q

    def _qualify(self, expr: cst.BaseExpression) -> str | None:
        d = dotted(expr)
        if d is None:
            return None
        head, _, rest = d.partition(".")
        base = self.names.get(head)
        if base is None:
            return None
        return f"{base}.{rest}" if rest else base

    def uses(self, *prefixes: str) -> bool:
        return any(m == p or m.startswith(p + ".") for m in self.modules for p in prefixes)


# ---------------------------------------------------------------------------------------------
# Abstract values.


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
_DATASET_KEEPING_METHODS = frozenset(
    {
        "shuffle", "select", "filter", "remove_columns", "rename_column", "rename_columns",
        "with_format", "train_test_split", "flatten", "cast", "cast_column", "sort", "take",
        "skip", "class_encode_column", "with_transform", "select_columns", "flatten_indices",
        "shard", "unique", "align_labels_with_mapping",
    }
)
_TOKENIZER_NAME = re.compile(r"token", re.I)


@dataclasses.dataclass
class Binding:
    order: int
    value: cst.CSTNode | None  # the bound expression (or the FunctionDef/ClassDef); None: unknown
    target: cst.CSTNode


class Facts:
    """Shared facts over one module. Built by the engine from the single walk."""

    def __init__(self, module: cst.Module, index: dict[str, list[cst.CSTNode]], where: dict[cst.CSTNode, Where]):
        self.module = module
        self.index = index
        self.where = where
        self.imports = Imports()
        for node in index.get("Import", ()) + index.get("ImportFrom", ()):
            self.imports.add(node)
        # scope (FunctionDef/Lambda or None for module) -> name -> bindings in order
        self.bindings: dict[cst.CSTNode | None, dict[str, list[Binding]]] = {}
        #: `a, b = helper(...)`: target name -> (the call, the position unpacked)
        self._unpacked: dict[cst.CSTNode, tuple[cst.Call, int]] = {}
        self._collect_bindings()
        self._values: dict[cst.CSTNode, Value | None] = {}
        self._tok: dict[cst.CSTNode, Tokenization] = {}
        self._rhs_ids: dict[int, set[int]] = {}
        self._trainer_calls: list[cst.Call] | None = None
        self._method_calls: dict[str, list[cst.Call]] | None = None

    # -- bindings -------------------------------------------------------------------------
    def _bind(self, scope, name: str, order: int, value, target) -> None:
        self.bindings.setdefault(scope, {}).setdefault(name, []).append(Binding(order, value, target))

    def _collect_bindings(self) -> None:
        for node in self.index.get("Assign", ()):
            w = self.where[node]
            scope = w.function
            for t in node.targets:
                self._bind_target(scope, t.target, node.value, w.order)
        for node in self.index.get("AnnAssign", ()):
            if node.value is not None:
                w = self.where[node]
                self._bind_target(w.function, node.target, node.value, w.order)
        for node in self.index.get("For", ()):
            w = self.where[node]
            self._bind_target(w.function, node.target, None, w.order)
        for node in self.index.get("FunctionDef", ()) + self.index.get("ClassDef", ()):
            w = self.where[node]
            # a def binds its name in the enclosing function (or module)
            self._bind(w.function, node.name.value, w.order, node, node.name)
            if isinstance(node, cst.FunctionDef):
                params = node.params
                for p in (*params.posonly_params, *params.params, *params.kwonly_params):
                    self._bind(node, p.name.value, w.order, p.default, p.name)
                for p in (params.star_arg, params.star_kwarg):
                    if isinstance(p, cst.Param):
                        self._bind(node, p.name.value, w.order, None, p.name)

    def _bind_target(self, scope, target, value, order) -> None:
        if isinstance(target, cst.Name):
            self._bind(scope, target.value, order, value, target)
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = [e.value for e in target.elements]
            values: Sequence = [None] * len(elements)
            if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(elements):
                values = [e.value for e in value.elements]
            elif isinstance(value, cst.Call) and all(isinstance(e, cst.Element) for e in target.elements):
                for i, t in enumerate(elements):
                    if isinstance(t, cst.Name):
                        self._unpacked[t] = (value, i)
            for t, v in zip(elements, values):
                self._bind_target(scope, t, v, order)

    def lookup(self, name: str, at: cst.CSTNode) -> Binding | None:
        """The binding of ``name`` visible at node ``at`` (which must be a recorded node, or we
        fall back to the last module-level binding)."""
        w = self.where.get(at)
        scopes: list = []
        order = w.order if w else 1 << 60
        if w is not None:
            scopes = [b for b in w.blocks if isinstance(b, (cst.FunctionDef, cst.Lambda))]
        chain = list(reversed(scopes)) + [None]
        for i, scope in enumerate(chain):
            bs = self.bindings.get(scope, {}).get(name)
            if not bs:
                continue
            if i == 0:
                before = [b for b in bs if b.order <= order]
                # `ds = ds.map(f)`: the `ds` read on the right-hand side is the previous binding
                while before and w is not None and self._in_bound_value(before[-1], at):
                    before.pop()
                if before:
                    return before[-1]
                if scope is not None:
                    return None  # local name used before assignment: unknown
                return None
            # an enclosing scope: a function body runs after the module has been executed
            return bs[-1]
        return None

    def _in_bound_value(self, binding: Binding, at: cst.CSTNode) -> bool:
        """``at`` is part of the expression ``binding`` assigns (so that binding is not made yet)."""
        value = binding.value
        if value is None or isinstance(value, (cst.FunctionDef, cst.ClassDef)) or not isinstance(value, cst.BaseExpression):
            return False
        if value is at:
            return True
        ids = self._rhs_ids.get(id(value))
        if ids is None:
            ids = self._rhs_ids[id(value)] = {id(n) for n in iter_nodes(value, (cst.CSTNode,))}
        return id(at) in ids

    def assigned_later(self, name: str, at: cst.CSTNode) -> list[Binding]:
        """Bindings of ``name`` in the same scope after ``at``."""
        w = self.where.get(at)
        if w is None:
            return []
        bs = self.bindings.get(w.function, {}).get(name, [])
        return [b for b in bs if b.order > w.order]

    # -- qualified names ------------------------------------------------------------------
    def qualname(self, expr: cst.BaseExpression) -> str | None:
        """Canonical qualified name of an imported thing (``T`` → ``transformers.Trainer``)."""
        q = self.imports.qualify(expr)
        return canonical(q) if q else None

    def raw_qualname(self, expr: cst.BaseExpression) -> str | None:
        return self.imports.qualify(expr)

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

    # -- abstract values ------------------------------------------------------------------
    def value_of(self, expr: cst.BaseExpression | None, at: cst.CSTNode | None = None, _depth: int = 0) -> Value | None:
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
        bases = []
        for arg in node.bases:
            qn = self.qualname(arg.value)
            if qn:
                bases.append(qn)
            elif isinstance(arg.value, cst.Name):
                v = self.value_of(arg.value, node)
                if isinstance(v, ClassValue):
                    bases.extend(v.bases)
        return ClassValue(node, tuple(bases))

    def _compute(self, expr: cst.BaseExpression, at: cst.CSTNode, depth: int) -> Value | None:
        if isinstance(expr, cst.Subscript):
            base = self.value_of(expr.value, at, depth + 1)
            if isinstance(base, DatasetValue) and len(expr.slice) == 1:
                sl = expr.slice[0].slice
                if isinstance(sl, cst.Index):
                    key = literal(sl.value)
                    if isinstance(key, str):
                        return dataclasses.replace(base, node=expr, split=key)
                    return dataclasses.replace(base, node=expr)
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

    def _value_of_qualified_call(self, call: cst.Call, qn: str, at, depth) -> Value | None:
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
        if qn in ("evaluate.load", "datasets.load_metric"):
            return MetricValue(call, call=call)
        if qn in TRAINER_CLASSES:
            return TrainerValue(call, call=call)
        if qn.startswith("transformers.") and short.endswith(".from_pretrained") is False:
            pass
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

    def _tf_dataset(self, call: cst.Call, base: DatasetValue | None) -> TFDatasetValue:
        cols = argument(call, "columns", 0)
        label_cols = argument(call, "label_cols")
        return TFDatasetValue(
            call,
            columns=self.constant(cols, call) if cols is not None else None,
            label_cols=None if label_cols is None else self.constant(label_cols, call),
            base=base,
        )

    def constant(self, expr: cst.BaseExpression | None, at: cst.CSTNode | None = None, _depth: int = 0):
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

    # -- .map(f): what does f do? ---------------------------------------------------------
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

    def _callable_instance(self, expr: cst.BaseExpression | None, at) -> cst.FunctionDef | None:
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

    def _map_tokenization(self, call: cst.Call, at) -> Tokenization:
        expr = argument(call, "function", 0)
        fn = self.function_def(expr, at) or self._callable_instance(expr, at)
        if fn is None:
            return Tokenization(calls_tokenizer=False, padding=UNKNOWN)
        return self.tokenization_of(fn)

    def tokenization_of(self, fn: cst.FunctionDef | cst.Lambda, _depth: int = 0) -> Tokenization:
        if fn in self._tok:
            return self._tok[fn]
        self._tok[fn] = Tokenization()
        calls_tok = False
        padding: object = None
        truncation: object = None
        groups = knowledge.looks_like_group_texts(fn)
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
            return bool(_TOKENIZER_NAME.search(target.value)) and target.value != "tokenize"
        if isinstance(target, cst.Attribute):  # self.tokenizer(...)
            return bool(_TOKENIZER_NAME.search(target.attr.value))
        return False

    # -- queries used by several rules ------------------------------------------------------
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

    def function_named(self, name: str) -> cst.FunctionDef | None:
        for fn in self.index.get("FunctionDef", ()):
            if fn.name.value == name:
                return fn
        return None
