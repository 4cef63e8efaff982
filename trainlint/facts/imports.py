"""Imports: local names resolved to qualified names, and their canonical spelling."""

from __future__ import annotations

import re

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
        self.star: list[str] = []  # modules imported with `from m import *`, in file order

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
            self.star.append(mod)
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
# Names no import binds: `from transformers import *`, and snippets that use names without importing them.

#: the conventional module aliases of the ML stack (`np.`, `tf.`, `F.` in a snippet)
CONVENTIONAL_ALIASES = {
    "torch": "torch", "nn": "torch.nn", "F": "torch.nn.functional", "optim": "torch.optim", "np": "numpy",
    "tf": "tensorflow", "keras": "keras", "tf_keras": "tf_keras", "transformers": "transformers",
    "datasets": "datasets", "evaluate": "evaluate", "accelerate": "accelerate", "pd": "pandas",
}
#: names whose home is transformers / datasets / accelerate by their shape or as their well-known exports
_TRANSFORMERS_NAME = re.compile(
    r"(?:TF|Flax)?(?:Auto\w+|\w+For[A-Z]\w*|\w+LMHeadModel|\w+(?:TokenizerFast|Tokenizer|Config|PreTrainedModel)"
    r"|(?:Seq2Seq)?Trainer|(?:Seq2Seq)?TrainingArguments|DataCollator\w*|\w+Callback)"
    r"|pipeline|create_optimizer|get_scheduler|get_\w+_schedule\w*|set_seed|AdamWeightDecay"
)
_DATASETS_NAMES = frozenset({"load_dataset", "load_metric", "load_from_disk", "DatasetDict", "concatenate_datasets",
                             "ClassLabel"})
_ACCELERATE_NAMES = frozenset({"Accelerator", "notebook_launcher"})


def implied_modules(words: set[str]) -> set[str]:
    """The top-level modules that a file's identifiers imply without naming them (a snippet that calls
    `AutoTokenizer` or `load_dataset` and never imports transformers / datasets): the gate words the
    facts' resolution of unbound names can reach."""
    out = {m.split(".")[0] for w, m in CONVENTIONAL_ALIASES.items() if w in words}
    if "transformers" not in words and any(_TRANSFORMERS_NAME.fullmatch(w) for w in words if w[:1].isupper()
                                           or w in ("pipeline", "create_optimizer", "get_scheduler", "set_seed")
                                           or w.startswith("get_")):
        out.add("transformers")
    if not _DATASETS_NAMES.isdisjoint(words):
        out.add("datasets")
    if not _ACCELERATE_NAMES.isdisjoint(words):
        out.add("accelerate")
    return out - words


def home_of(name: str, candidates: list[str] | tuple[str, ...] = ()) -> str | None:
    """The module an unbound ``name`` comes from: one of the star-imported ``candidates`` (the one its
    shape names when there are several, else the last, as Python's later star import wins), else a
    conventional alias or a well-known export of the stack."""
    known = CONVENTIONAL_ALIASES.get(name)
    if known is not None and not candidates:
        return known
    if _TRANSFORMERS_NAME.fullmatch(name):
        shaped = "transformers"
    elif name in _DATASETS_NAMES:
        shaped = "datasets"
    elif name in _ACCELERATE_NAMES:
        shaped = "accelerate"
    else:
        shaped = None
    if candidates:
        if shaped is not None:
            for mod in reversed(candidates):
                if mod == shaped or mod.startswith(shaped + "."):
                    return mod
        if known is not None:
            return known
        return candidates[-1]
    return shaped
