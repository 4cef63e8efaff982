"""Imports: local names resolved to qualified names, and their canonical spelling."""

from __future__ import annotations

import libcst as cst

from trainlint.facts.expr import dotted

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
