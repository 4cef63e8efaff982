"""One walk of the module in document order, and small local walks below a node."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any, TypeVar, overload

import libcst as cst

N = TypeVar("N", bound=cst.CSTNode)
N2 = TypeVar("N2", bound=cst.CSTNode)
N3 = TypeVar("N3", bound=cst.CSTNode)

#: the recorded nodes by the name of their type (``index["Call"]`` holds ``cst.Call`` nodes): the value
#: type follows from the key, which a static type cannot say
Index = dict[str, list[Any]]


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
     "Call", "Return", "For",
     # the other binding forms (Dataflow._bound_names)
     "AsName", "CompFor", "NamedExpr", "Global", "Nonlocal"}
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


def walk(module: cst.Module, types: frozenset[str]) -> tuple[Index, dict[cst.CSTNode, Where]]:
    """Walk ``module`` once, in document order; index nodes whose type name is in ``types``."""
    index: Index = {t: [] for t in types}
    where: dict[cst.CSTNode, Where] = {}
    order = 0
    stack: list[tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]] = [(module, ())]
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
        children: list[cst.CSTNode] = []
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


def iter_calls(node: cst.CSTNode) -> Iterator[cst.Call]:
    """Every Call below ``node`` (a small local walk, for function bodies)."""
    return iter_nodes(node, (cst.Call,))


@overload
def iter_nodes(node: cst.CSTNode, types: tuple[type[N]]) -> Iterator[N]: ...
@overload
def iter_nodes(node: cst.CSTNode, types: tuple[type[N], type[N2]]) -> Iterator[N | N2]: ...
@overload
def iter_nodes(node: cst.CSTNode, types: tuple[type[N], type[N2], type[N3]]) -> Iterator[N | N2 | N3]: ...
@overload
def iter_nodes(node: cst.CSTNode, types: tuple[type[cst.CSTNode], ...]) -> Iterator[cst.CSTNode]: ...


def iter_nodes(node: cst.CSTNode, types: tuple[type[cst.CSTNode], ...]) -> Iterator[cst.CSTNode]:
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


#: the fields of a node that hold a node it binds or names, not one it reads
_NAMING_FIELDS = frozenset({
    ("Attribute", "attr"), ("Arg", "keyword"), ("Param", "name"), ("FunctionDef", "name"), ("ClassDef", "name"),
    ("AssignTarget", "target"), ("AnnAssign", "target"), ("AugAssign", "target"), ("For", "target"),
    ("CompFor", "target"), ("AsName", "name"), ("ImportAlias", "name"), ("ImportAlias", "asname"),
    ("NamedExpr", "target"), ("NameItem", "name"), ("ExceptHandler", "name"), ("WithItem", "asname"),
    ("ImportFrom", "module"), ("Import", "names"), ("ImportFrom", "names"),
})


class Links:
    """The whole tree read once: each node's parent and the parent's field holding it, its place in document
    order (the numbering of :func:`walk`, which records only some node types), and the names the module reads
    (not those it binds, imports, or uses as an attribute or a keyword)."""

    def __init__(self, module: cst.Module) -> None:
        self.parent: dict[int, tuple[cst.CSTNode, str]] = {}
        self.order: dict[int, int] = {}
        self.reads: dict[str, list[cst.Name]] = {}
        #: every name of the code (read, bound, attribute, keyword) and the text of every string literal
        self.words: set[str] = set()
        # the same traversal as `walk`, so that the numbers agree; naming: 0 read, 1 bound or named (the base
        # of a bound attribute or subscript is read), 2 an import's names
        stack: list[tuple[cst.CSTNode, int]] = [(module, 0)]
        order = 0
        while stack:
            node, naming = stack.pop()
            tp = type(node)
            self.order[id(node)] = order
            order += 1
            if isinstance(node, cst.Name):
                self.words.add(node.value)
                if not naming:
                    self.reads.setdefault(node.value, []).append(node)
            elif isinstance(node, cst.SimpleString):
                self.words.add(node.value)
            children: list[tuple[cst.CSTNode, int]] = []
            for name in _fields(tp):
                v = getattr(node, name)
                if naming == 2 or tp in (cst.Import, cst.ImportFrom):
                    inner = 2
                elif (tp.__name__, name) in _NAMING_FIELDS:
                    inner = 1
                elif naming and not (tp in (cst.Attribute, cst.Subscript) and name != "attr"):
                    inner = 1
                else:
                    inner = 0
                for c in (v if type(v) is tuple or type(v) is list else (v,)):
                    if _IS_NODE.get(type(c)) or _node_type(type(c)):
                        self.parent[id(c)] = (node, name)
                        children.append((c, inner))
            stack.extend(reversed(children))

    def blocks(self, node: cst.CSTNode) -> tuple[cst.CSTNode, ...]:
        """The blocks around ``node`` (outermost first), as :class:`Where` records them."""
        out = []
        p = self.parent.get(id(node))
        while p is not None:
            if type(p[0]) in _STRUCTURAL_TYPES:
                out.append(p[0])
            p = self.parent.get(id(p[0]))
        return tuple(reversed(out))
