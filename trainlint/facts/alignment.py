"""Whether features and labels stay aligned: the row order each array of a function holds, shuffles made
on one array alone, file listings in file-system order, and the calls that pair arrays example by example.

TL104 asks :func:`alignment` (memoised per file) for a :class:`Misalignment` at a pairing call or in a
dataset class; ``None`` when the source does not establish one.
"""

from __future__ import annotations

import builtins
import dataclasses
from typing import TYPE_CHECKING

import libcst as cst

from trainlint.facts.expr import argument, dotted, positional, self_item
from trainlint.facts.scopes import Scope
from trainlint.facts.walk import iter_nodes

if TYPE_CHECKING:
    from trainlint.facts.core import Facts
    from trainlint.facts.scopes import Binding

#: an order a variable's rows are in: (the source they come from, the shuffle that reordered them; None: the
#: order the source was made in)
Order = tuple[str, cst.CSTNode | None]
Orders = frozenset[Order]


@dataclasses.dataclass(frozen=True)
class Misalignment:
    """Two sequences paired example by example that do not follow one order.

    ``kind``: "shuffle" (``moved`` shuffled on its own, ``other`` not), "listing" (``moved`` listed in file-system
    order, ``other`` another unsorted listing when ``both``, else not built from it), "copied" (``moved`` taken
    out of ``table`` before ``node`` reordered it, ``other`` read after). ``node``: the shuffle or the listing.
    ``pairing``: how the two are paired (`zip(...)`, `__getitem__` pairs `self.a[idx]` with `self.b[idx]`).
    """

    kind: str
    node: cst.CSTNode
    moved: str
    other: str
    pairing: str
    both: bool = False
    table: str = ""


INPLACE_SHUFFLES = frozenset({"random.shuffle", "numpy.random.shuffle"})
_COPY_SHUFFLES = frozenset({"numpy.random.permutation", "sklearn.utils.shuffle", "random.sample"})
_LISTINGS = frozenset({"glob.glob", "glob.iglob", "os.listdir", "os.scandir", "tensorflow.io.gfile.glob",
                       "tensorflow.io.gfile.listdir"})
_PATH_LISTING_METHODS = frozenset({"glob", "rglob", "iterdir"})
#: the words a listing call says: the last part of each qualified listing, and the pathlib methods
LISTING_WORDS = tuple(sorted({q.rsplit(".", 1)[-1] for q in _LISTINGS} | _PATH_LISTING_METHODS))
#: calls that pair their arguments example by example
PAIRING = frozenset({"zip", "fit", "train_test_split", "TensorDataset", "from_tensor_slices", "from_dict",
                      "train_on_batch", "partial_fit"})


def pairing_args(call: cst.Call) -> list[cst.BaseExpression]:
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


def _same_loop(facts: Facts, a: cst.CSTNode, b: cst.CSTNode) -> bool:
    """``a`` and ``b`` run in the body of one loop."""
    wa, wb = facts.where.get(a), facts.where.get(b)
    if wa is None or wb is None:
        return False
    loops_b = {id(x) for x in wb.blocks if isinstance(x, (cst.For, cst.While))}
    return any(id(x) in loops_b for x in wa.blocks if isinstance(x, (cst.For, cst.While)))


def pairing_name(facts: Facts, call: cst.Call) -> str | None:
    func = call.func
    if isinstance(func, cst.Name):
        if func.value == "zip" and facts.lookup("zip", call) is None:
            return "zip"
        qn = facts.callee(call) or ""
        last = qn.rsplit(".", 1)[-1]
        return last if last in PAIRING and last != "zip" else None
    if isinstance(func, cst.Attribute) and func.attr.value in PAIRING and func.attr.value != "zip":
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


def _var_key(expr: cst.CSTNode | None) -> str | None:
    """The variable an expression names: `x`, or `self.x` (an attribute of the instance)."""
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value == "self":
        return "self." + expr.attr.value
    return None


class RowOrders:
    """The row order each variable of one function holds, statement by statement (document order).

    A variable read from others holds the orders they had when it was read (`labels = list(df["labels"])`,
    `names = df["image"].tolist()`, `self.labels = self._prepare_labels()` through the methods of the class);
    a shuffle (`df = df.sample(frac=1)`, `random.shuffle(files)`, `X = shuffle(X)`) gives the shuffled
    variable a new order of its sources, while what was read from it before keeps the old one. An order is
    a pair (source, the shuffle that made it, or None for the order the source was made in). Each variable
    also keeps the variables it was read from (`lineage`): a copy made to be shuffled and paired with its
    original (`new = list(nodes); rng.shuffle(new); zip(nodes, new)`, a random relabelling, negatives for a
    contrastive loss) is not taken from what was shuffled."""

    def __init__(self, alignment: Alignment, nodes: list[cst.CSTNode], methods: dict[str, cst.FunctionDef]) -> None:
        """``nodes``: the assignments, `for` loops and calls of the function, in document order."""
        self.alignment = alignment
        self.facts = facts = alignment.facts
        self.methods = methods
        self.state: dict[str, Orders] = {}
        self.lineage: dict[str, frozenset[str]] = {}  # variable -> the variables it was read from
        self.shuffled: dict[cst.CSTNode, str] = {}  # shuffle call -> the variable it shuffled
        #: pairing call -> (its arguments, the orders each holds there, the variables each was read from)
        self.pairings: dict[cst.Call, list[tuple[cst.BaseExpression, Orders, frozenset[str]]]] = {}
        self._external = set(facts.imports.names) | _BUILTIN_NAMES
        for n in nodes:
            self._step(n)

    # -- statements ------------------------------------------------------------------------
    def _step(self, n: cst.CSTNode) -> None:
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
        elif isinstance(n, (cst.Assign, cst.AnnAssign)) and n.value is not None:
            targets: list[cst.BaseAssignTargetExpression] = (
                [t.target for t in n.targets] if isinstance(n, cst.Assign) else [n.target])
            for target in targets:
                self._assign(target, n.value, self.facts.where[n].order)

    def _call(self, call: cst.Call) -> None:
        f = call.func
        if pairing_name(self.facts, call) is not None:
            pairs: list[tuple[cst.BaseExpression, Orders, frozenset[str]]] = []
            self.pairings[call] = pairs
            for expr in pairing_args(call):
                keys: set[str] = set()
                pairs.append((expr, self.reads(expr, keys), frozenset(keys)))
            return
        if isinstance(f, cst.Attribute) and f.attr.value in _GROWING:
            key = _var_key(f.value)
            if key is not None and key in self.state:  # `labels.append(label_of(f))`
                for arg in call.args:
                    self._grow(key, arg.value)
            return
        if (self.facts.callee(call) or "") in INPLACE_SHUFFLES or self.alignment.rng_shuffle(call):
            key = _var_key(argument(call, "x", 0))
            if key is not None:
                self._shuffle(key, call)

    def _grow(self, key: str, value: cst.BaseExpression) -> None:
        keys: set[str] = set()
        self.state[key] = self.get(key) | self.reads(value, keys)
        self.lineage[key] = self.lineage.get(key, frozenset()) | keys

    def _bind(self, key: str, value: cst.BaseExpression, order: int) -> None:
        keys: set[str] = set()
        self.state[key] = self.reads(value, keys) or frozenset({(f"{key}#{order}", None)})
        self.lineage[key] = frozenset(keys)

    def _assign(self, target: cst.BaseExpression, value: cst.BaseExpression, order: int) -> None:
        key = _var_key(target)
        if key is not None:
            shuffle = self._reordering(key, value)
            if shuffle is not None:
                self._shuffle(key, shuffle)
            else:
                self._bind(key, value, order)
            return
        if isinstance(target, (cst.Tuple, cst.List)):
            elements: list[cst.BaseExpression] = [e.value for e in target.elements]
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

    def _reordering(self, key: str, value: cst.BaseExpression) -> cst.Call | None:
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

    def _joint_shuffle(self, value: cst.BaseExpression, n: int) -> list[cst.BaseExpression] | None:
        """`shuffle(X, y)`: the arrays shuffled together, one per target."""
        if isinstance(value, cst.Call) and (self.facts.callee(value) or "") == "sklearn.utils.shuffle":
            pos = positional(value)
            if len(pos) == n:
                return [a.value for a in pos]
        return None

    # -- expressions -----------------------------------------------------------------------
    def get(self, key: str) -> Orders:
        return self.state.get(key) or frozenset({(key, None)})

    def reads(self, expr: cst.CSTNode, keys: set[str] | None = None) -> Orders:
        """The orders an expression holds: those of every variable it reads (a method of the class called on
        `self` reads what its body reads); imported names, builtins and called functions hold none. ``keys``
        collects the variables read, and those they were read from."""
        out: set[Order] = set()
        stack: list[cst.CSTNode] = [expr]
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

    def _method_reads(self, name: str, seen: frozenset[str], keys: set[str] | None) -> Orders:
        out: Orders = frozenset()
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
    def split(self, a: Orders, b: Orders) -> tuple[cst.CSTNode, bool] | None:
        """The shuffle that puts one of two values in a new order of a source the other holds in the order
        the source was made in (each in that one order only): (the shuffle, whether `b` is the shuffled one)."""
        va: dict[str, set[cst.CSTNode | None]] = {}
        vb: dict[str, set[cst.CSTNode | None]] = {}
        for src, v in a:
            va.setdefault(src, set()).add(v)
        for src, v in b:
            vb.setdefault(src, set()).add(v)
        for src in sorted(va.keys() & vb.keys()):
            xs, ys = va[src], vb[src]
            if len(xs) == 1 and len(ys) == 1 and xs != ys:
                (x,), (y,) = xs, ys
                if x is None and y is not None:
                    return y, True
                if y is None and x is not None:
                    return x, False
        return None


def indexed_together(method: cst.FunctionDef, through: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """index name -> the attributes ``method`` reads as `self.<attribute>[<index>]` (in order, each once)."""
    out: dict[str, list[str]] = {}
    for sub in iter_nodes(method.body, (cst.Subscript,)):
        item = self_item(sub, through)
        if item is not None:
            attrs = out.setdefault(item[1], [])
            if item[0] not in attrs:
                attrs.append(item[0])
    return out


class Alignment:
    """The alignment questions of one file (built once by :func:`alignment`)."""

    def __init__(self, facts: Facts) -> None:
        self.facts = facts
        self._orders: dict[Scope, RowOrders | None] = {}
        self._scopes: dict[Scope, tuple[list[cst.CSTNode], bool]] | None = None
        self._shuffles: dict[Scope, list[cst.Call]] | None = None

    # -- what TL104 asks ------------------------------------------------------------------------
    def at_pairing(self, node: cst.Call) -> Misalignment | None:
        """The misalignment a pairing call (`zip`, `fit`, `TensorDataset`, ...) shows, if any."""
        kind = pairing_name(self.facts, node)
        if kind is None:
            return None
        return self.lone_shuffle_or_listing(node, kind) or self.copied_before_shuffle(node, kind)

    def in_class(self, node: cst.ClassDef) -> Misalignment | None:
        """A dataset class that pairs by one index two attributes its `__init__` put out of line."""
        methods = {s.name.value: s for s in node.body.body if isinstance(s, cst.FunctionDef)}
        init = methods.get("__init__")
        if init is None:
            return None
        return self.class_copied_before_shuffle(methods, init) or self.class_listings(node, methods, init)

    def class_listings(self, node: cst.ClassDef, methods: dict[str, cst.FunctionDef],
                       init: cst.FunctionDef) -> Misalignment | None:
        """Two unsorted listings kept by `__init__` (`self.features = os.listdir(a)`, `self.labels =
        os.listdir(b)`) and paired by position in a method (`self.features[idx]`, `self.labels[idx]`)."""
        listings: dict[str, cst.Call] = {}
        for assign in iter_nodes(init.body, (cst.Assign,)):
            for t in assign.targets:
                tgt = t.target
                if (isinstance(tgt, cst.Attribute) and isinstance(tgt.value, cst.Name) and tgt.value.value == "self"):
                    call = self.listing_in(assign.value)
                    if call is not None:
                        listings[tgt.attr.value] = call
        if len(listings) < 2:
            return None
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
            by_index = {idx: [a for a in attrs if a in listings] for idx, attrs in indexed_together(method).items()}
            for idx, attrs in by_index.items():
                if len(attrs) < 2:
                    continue
                a, b = sorted(attrs[:2], key=lambda n: self.facts.where[listings[n]].order)
                return Misalignment("listing", listings[a], f"self.{a}", f"self.{b}",
                                    f"`{name}` pairs `self.{a}[{idx}]` with `self.{b}[{idx}]`", both=True)
        return None

    def copied_before_shuffle(self, node: cst.Call, kind: str) -> Misalignment | None:
        """`labels = list(df["label"])`, then `df = df.sample(frac=1)`, then `zip(df["text"], labels)`: the
        labels keep the order the table had before the shuffle, the texts take the new one."""
        facts = self.facts
        scope = facts.where[node].function
        methods: dict[str, cst.FunctionDef] = {}
        cls = facts.where[node].inside(cst.ClassDef)
        if isinstance(cls, cst.ClassDef) and isinstance(scope, cst.FunctionDef):
            methods = {s.name.value: s for s in cls.body.body if isinstance(s, cst.FunctionDef)}
        orders = self.orders(scope, methods)
        if orders is None:
            return None
        args = orders.pairings.get(node, [])
        for i, (a, oa, ka) in enumerate(args):
            for b, ob, kb in args[i + 1:]:
                found = orders.split(oa, ob)
                if found is not None and orders.shuffled.get(found[0], "") in (ka if found[1] else kb):
                    shuffle, b_newer = found
                    old, new = (a, b) if b_newer else (b, a)
                    code = facts.module.code_for_node
                    return Misalignment("copied", shuffle, code(old), code(new), f"`{kind}(...)` pairs them",
                                        table=orders.shuffled.get(shuffle, "the data"))
        return None

    def class_copied_before_shuffle(self, methods: dict[str, cst.FunctionDef],
                                    init: cst.FunctionDef) -> Misalignment | None:
        """A dataset class whose `__init__` copies a column out of its table, shuffles the table, reads another
        column, and whose `__getitem__` indexes both with one index (`self.img_names[idx]`, `self.labels[idx]`)."""
        method = methods.get("__getitem__")
        if method is None:
            return None
        # `self.labels[idx]`, `self.data.iloc[idx]` (positional rows; not `.loc`, which reads by index label)
        for idx, attrs in indexed_together(method, through=("iloc",)).items():
            keys = [f"self.{a}" for a in attrs]
            if len(keys) < 2:
                continue
            orders = self.orders(init, methods)
            if orders is None:
                return None
            for i, a in enumerate(keys):
                if a not in orders.state:
                    continue
                for b in keys[i + 1:]:
                    found = orders.split(orders.state[a], orders.state[b]) if b in orders.state else None
                    if found is not None and orders.shuffled.get(found[0]) in orders.lineage.get(
                            a if found[1] else b, frozenset()):
                        shuffle, b_newer = found
                        old, new = (a, b) if b_newer else (b, a)
                        return Misalignment("copied", shuffle, old, new,
                                            f"`__getitem__` pairs `{old}[{idx}]` with `{new}[{idx}]`",
                                            table=orders.shuffled.get(shuffle, "the data"))
        return None

    def lone_shuffle_or_listing(self, node: cst.Call, kind: str) -> Misalignment | None:
        """Two arrays given to a pairing call by name, one of them shuffled on its own (or derived from an
        array shuffled on its own) while the other was complete before, or a file listing in file-system
        order paired with another listing or with an array not built from it."""
        facts = self.facts
        names = [e for e in pairing_args(node) if isinstance(e, cst.Name)]
        if len(names) < 2 or len({n.value for n in names}) != len(names):
            return None
        scope = facts.where[node].function
        # each array and the arrays it was derived from (`x_train = x[k:]`, `x = pad_sequences(x)`)
        shuffled: dict[str, cst.Call | None] = {}
        root: dict[str, str] = {}  # the array each argument comes from (the one shuffled, if one is)
        for n in names:
            shuffled[n.value] = self.shuffled(n.value, node, scope)
            lineage = self.lineage(n.value, node)
            root[n.value] = lineage[-1][0]
            if shuffled[n.value] is not None:
                root[n.value] = n.value
                continue
            for name, binding, read in lineage[1:]:
                found = self.shuffled_between(name, binding, read, scope)
                if found is not None:
                    shuffled[n.value], root[n.value] = found, name
                    break
        if len(set(root.values())) != len(names):
            return None  # two arguments derived from one array
        listed = {n.value: self.unsorted_listing(n.value, node, scope) for n in names}
        # one array shuffled alone
        lone = [(n, shuffle) for n in names if (shuffle := shuffled[n.value]) is not None]
        if len(lone) == 1 and self.copy_made_to_shuffle(root[lone[0][0].value], lone[0][1]):
            return None  # `random_labels = labels[:]; np.random.shuffle(random_labels)`: randomised on purpose
        if len(lone) == 1:
            arg, alone = lone[0][0].value, lone[0][1]
            x = root[arg]
            others = [n.value if root[n.value] == n.value else root[n.value] for n in names if n.value != arg
                      and self.independent(root[n.value], node if root[n.value] == n.value else alone, alone, x)]
            if others:
                return Misalignment("shuffle", alone, x, others[0], f"`{kind}(...)` pairs them")
        # unsorted file listings
        lists = [n.value for n in names if listed[n.value] is not None]
        if not lists:
            return None
        x = lists[0]
        since = listed[x]
        if since is None:
            return None
        partners = [n.value for n in names if n.value != x
                    and (listed[n.value] is not None or self.independent(n.value, node, since, x))]
        if not partners:
            return None
        y = partners[0]
        return Misalignment("listing", since, x, y, f"`{kind}(...)` pairs `{x}` with `{y}`",
                            both=listed.get(y) is not None)

    # -- the row orders of a function ------------------------------------------------------------
    def orders(self, scope: Scope, methods: dict[str, cst.FunctionDef] | None = None) -> RowOrders | None:
        """The row orders of one function (None when it shuffles nothing: nothing can be out of order)."""
        if scope not in self._orders:
            nodes, shuffles = self._scope_nodes().get(scope, ([], False))
            self._orders[scope] = RowOrders(self, nodes, methods or {}) if shuffles else None
        return self._orders[scope]

    def _scope_nodes(self) -> dict[Scope, tuple[list[cst.CSTNode], bool]]:
        """function → (its assignments, `for` loops and calls in document order, whether one of its calls is
        named like a shuffle): one pass over the file."""
        if self._scopes is None:
            facts = self.facts
            nodes: dict[Scope, list[cst.CSTNode]] = {}
            shuffles: set[Scope] = set()
            for kind in ("Assign", "AnnAssign", "AugAssign", "For", "Call"):
                for n in facts.index.get(kind, ()):
                    scope = facts.where[n].function
                    nodes.setdefault(scope, []).append(n)
                    if isinstance(n, cst.Call):
                        f = n.func
                        name = f.attr.value if isinstance(f, cst.Attribute) else f.value if isinstance(f, cst.Name) else ""
                        if name in ("shuffle", "sample", "permutation"):
                            shuffles.add(scope)
            self._scopes = {}
            for scope, found in nodes.items():
                found.sort(key=lambda n: facts.where[n].order)
                self._scopes[scope] = (found, scope in shuffles)
        return self._scopes


    def lineage(self, name: str, at: cst.CSTNode) -> list[tuple[str, Binding | None, int]]:
        """``name`` and the arrays it was derived from, newest first: (name, its binding, the order it is read
        at) for `x_train = x[k:]` (a slice), `x = pad_sequences(x, ...)` (a function of one array), `x.copy()`."""
        facts = self.facts
        scope = facts.where[at].function
        b = facts.lookup(name, at)
        out: list[tuple[str, Binding | None, int]] = [(name, b, facts.where[at].order)]
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

    def shuffled_between(self, name: str, binding: Binding | None, read_order: int, scope: Scope) -> cst.Call | None:
        """An in-place shuffle of ``name`` after ``binding`` and before ``read_order``."""
        facts = self.facts
        if binding is None:
            return None
        for call in self.shuffle_calls(scope):
            w = facts.where[call]
            if not binding.order < w.order < read_order:
                continue
            qn = facts.callee(call) or ""
            if qn in INPLACE_SHUFFLES or self.rng_shuffle(call):
                arg = argument(call, "x", 0)
                if isinstance(arg, cst.Name) and arg.value == name:
                    return call
        return None

    # -- shuffles --------------------------------------------------------------------------
    def shuffled(self, name: str, at: cst.Call, scope: Scope) -> cst.Call | None:
        """The call that shuffled `name` on its own before `at` (in place, or `x = permutation(x)`)."""
        facts = self.facts
        order = facts.where[at].order
        b = facts.lookup(name, at)
        if b is None:
            return None
        found = None
        for call in self.shuffle_calls(scope):
            w = facts.where[call]
            if w.order >= order:
                continue
            qn = facts.callee(call) or ""
            if qn in INPLACE_SHUFFLES or self.rng_shuffle(call):
                arg = argument(call, "x", 0)
                if isinstance(arg, cst.Name) and arg.value == name and w.order > b.order:
                    found = call
            elif qn in _COPY_SHUFFLES and b.value is call:
                args = [a for a in call.args if a.keyword is None]
                if len(args) == 1 and isinstance(args[0].value, cst.Name):
                    found = call
        return found

    def copy_made_to_shuffle(self, name: str, shuffle: cst.Call) -> bool:
        """`name` is bound to a copy of another array (`y[:]`, `y.copy()`, `np.copy(y)`, `list(y)`) and
        shuffled in place: the experiment of fitting randomly shuffled labels, not a misalignment."""
        b = self.facts.lookup(name, shuffle)
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

    def shuffle_calls(self, scope: Scope) -> list[cst.Call]:
        """The shuffling calls of one scope (all scopes computed in one pass over the calls)."""
        cache = self._shuffles
        if cache is None:
            cache = self._shuffles = {}
            facts = self.facts
            for call in facts.index.get("Call", ()):
                func = call.func
                name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
                if name not in ("shuffle", "permutation", "sample"):
                    continue
                qn = facts.callee(call) or ""
                if qn in INPLACE_SHUFFLES or qn in _COPY_SHUFFLES or self.rng_shuffle(call):
                    cache.setdefault(facts.where[call].function, []).append(call)
        return cache.get(scope, [])

    def rng_shuffle(self, call: cst.Call) -> bool:
        """`rng.shuffle(x)` with `rng = np.random.default_rng(...)` / `RandomState(...)` / `random.Random(...)`."""
        func = call.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "shuffle" and isinstance(func.value, cst.Name)):
            return False
        b = self.facts.lookup(func.value.value, call)
        if b is None or not isinstance(b.value, cst.Call):
            return False
        return (self.facts.callee(b.value) or "") in ("numpy.random.default_rng", "numpy.random.RandomState",
                                                          "random.Random")

    def independent(self, name: str, at: cst.Call, since: cst.CSTNode, other: str) -> bool:
        """`name` does not follow the order of `other` (shuffled or listed by `since`): bound before
        `since`, or to an expression not built from `other`, and never mutated (an `append` per file)."""
        facts = self.facts
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
    def unsorted_listing(self, name: str, at: cst.Call, scope: Scope) -> cst.Call | None:
        facts = self.facts
        b = facts.lookup(name, at)
        if b is None or not isinstance(b.value, cst.BaseExpression):
            return None
        call = self.listing_in(b.value)
        if call is None:
            return None
        for c in facts.index.get("Call", ()):  # name.sort() afterwards
            f = c.func
            if (isinstance(f, cst.Attribute) and f.attr.value == "sort" and isinstance(f.value, cst.Name)
                    and f.value.value == name and facts.where[c].function is scope):
                return None
        return call

    def listing_in(self, expr: cst.BaseExpression) -> cst.Call | None:
        """The unsorted listing call `expr` is made of: `glob(...)`, `list(glob(...))`, `path.glob(...)`, a
        comprehension over `os.listdir(...)`; None when sorted (or not a listing)."""
        facts = self.facts
        if isinstance(expr, cst.Call):
            qn = facts.callee(expr)
            if qn in _LISTINGS:
                return expr
            f = expr.func
            if qn is None and isinstance(f, cst.Attribute) and f.attr.value in _PATH_LISTING_METHODS:
                return expr  # pathlib: Path(d).glob("*.png")
            if isinstance(f, cst.Name) and f.value in ("list", "tuple") and len(expr.args) == 1:
                return self.listing_in(expr.args[0].value)
            return None
        if isinstance(expr, (cst.ListComp, cst.GeneratorExp)) and expr.for_in.inner_for_in is None:
            return self.listing_in(expr.for_in.iter)
        return None


def alignment(facts: Facts) -> Alignment:
    """The alignment questions of a file (built once, kept with the file's facts)."""
    a: Alignment | None = facts.__dict__.get("_alignment")
    if a is None:
        a = facts.__dict__["_alignment"] = Alignment(facts)
    return a
