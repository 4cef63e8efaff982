"""The rule base class and the registry of the catalog.

One rule is one known failure of the training pipeline. Its code is ``TL`` + three digits whose
hundreds digit is the pipeline stage (:class:`~trainlint.findings.Stage`). Rules live by stage in
``trainlint/stages/s<N>_<stage>/rules.py``; the runtime checks of the same stage sit beside them in
``probe.py``. The document of each rule is ``rules/<CODE>.md`` at the top of the repository.

A rule's static check is a set of ``visit_<NodeType>(self, node, ctx)`` methods. The engine parses a
file once, walks it once, and calls these methods for every node of that type, with a
:class:`~trainlint.context.Context` that holds the facts shared by all rules (imports, what each
name holds). A rule without visit methods is confirmed by the probe only.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable
from typing import ClassVar

from trainlint.findings import Applicability, Severity, Stage

CODE_RE = re.compile(r"^TL\d{3}$")

#: the rule modules, one per stage of :class:`~trainlint.findings.Stage`
STAGE_MODULES = tuple(f"{stage.package}.rules" for stage in Stage)


class Rule:
    """Base class of every rule. Subclasses set the class attributes below."""

    code: ClassVar[str]
    name: ClassVar[str]  # kebab-case, stable, e.g. "string-optimizer"
    severity: ClassVar[Severity]
    #: In the default selection. Opinionated/advice-level rules set this to False.
    default: ClassVar[bool] = True
    #: The first corpus held-out round that measured the rule as it is now (``benchmarks/heldout.jsonl``,
    #: corpus rounds counted from 1): its first-sight precision counts from that round on. A rule whose
    #: reasoning changes sets the next round, which then measures it at first sight.
    measured_from: ClassVar[int] = 1
    #: What the runtime probe does to confirm it ("" when only the source can tell).
    probe: ClassVar[str] = ""
    #: Applicability of the autofix this rule offers, if any.
    fix: ClassVar[Applicability | None] = None
    #: When the engine runs this rule's static check on a file (see ``gate_open``): a tuple of
    #: groups, every group must have one of its words among the identifiers of the file's code.
    #: Strings and comments do not count (a docstring that mentions ``Trainer`` opens nothing); a
    #: word with ``*`` at one end matches any identifier with that suffix or prefix
    #: (``"*ForSequenceClassification"``, ``"TF*"``). Each group must be a necessary condition of
    #: a finding: ``tests/test_gate.py`` lints every corpus with and without the gates and wants the
    #: same findings. Empty: always run.
    gate: ClassVar[tuple[tuple[str, ...], ...]] = ()

    @classmethod
    def stage(cls) -> Stage:
        return Stage(int(cls.code[2]))

    @classmethod
    def summary(cls) -> str:
        return (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else cls.name

    @classmethod
    def visit_methods(cls) -> dict[str, str]:
        """Map of CST node type name → method name for this rule's static checks (memoised per
        class: ``dir()`` on every rule of every file was a visible part of a run)."""
        found = _VISIT_METHODS.get(cls)
        if found is None:
            found = _VISIT_METHODS[cls] = {
                attr[len("visit_") :]: attr
                for attr in dir(cls)
                if attr.startswith("visit_") and attr != "visit_methods" and callable(getattr(cls, attr))
            }
        return found

    @classmethod
    def gate_open(cls, words: set[str] | frozenset[str]) -> bool:
        """Whether the file whose code identifiers are ``words`` can hold a finding of this rule."""
        compiled = _GATES.get(cls)
        if compiled is None:
            compiled = _GATES[cls] = tuple(_compile_group(g) for g in cls.gate)
        for exact, suffixes, prefixes in compiled:
            if not exact.isdisjoint(words):
                continue
            if (suffixes or prefixes) and any(w.endswith(suffixes) or w.startswith(prefixes) for w in words):
                continue
            return False
        return True

    @classmethod
    def has_static_check(cls) -> bool:
        return bool(cls.visit_methods()) or hasattr(cls, "finish")

    def __init__(self, ctx) -> None:
        #: the file's :class:`~trainlint.context.Context` (facts, source, settings, report); not
        #: imported here: the context module depends on the rules, not the other way round
        self.ctx = ctx

    def report(self, node, message: str, **kwargs) -> None:
        self.ctx.report(self, node, message, **kwargs)


_REGISTRY: dict[str, type[Rule]] = {}
_VISIT_METHODS: dict[type, dict[str, str]] = {}
_GATES: dict[type, tuple[tuple[frozenset[str], tuple[str, ...], tuple[str, ...]], ...]] = {}


def _compile_group(group: tuple[str, ...]) -> tuple[frozenset[str], tuple[str, ...], tuple[str, ...]]:
    if isinstance(group, str):
        raise TypeError(f"a gate is a tuple of groups of words, not {group!r}")
    exact = frozenset(w for w in group if "*" not in w)
    suffixes = tuple(w[1:] for w in group if w.startswith("*"))
    prefixes = tuple(w[:-1] for w in group if w.endswith("*") and not w.startswith("*"))
    return exact, suffixes, prefixes


def register(cls: type[Rule]) -> type[Rule]:
    """Class decorator: add a rule to the catalog."""
    if not CODE_RE.match(cls.code):
        raise ValueError(f"bad rule code {cls.code!r}")
    if cls.code in _REGISTRY and _REGISTRY[cls.code] is not cls:
        raise ValueError(f"duplicate rule code {cls.code}")
    _REGISTRY[cls.code] = cls
    return cls


def all_rules() -> dict[str, type[Rule]]:
    if not _REGISTRY:
        for mod in STAGE_MODULES:
            importlib.import_module(mod)
    return dict(sorted(_REGISTRY.items()))


def get_rule(code: str) -> type[Rule] | None:
    return all_rules().get(code.upper())


def find_rule(code_or_name: str) -> type[Rule] | None:
    """A rule by its code (``TL301``, any case) or its name (``missing-num-labels``, ``missing_num_labels``)."""
    key = code_or_name.strip()
    rule = get_rule(key)
    if rule is not None:
        return rule
    name = key.lower().replace("_", "-")
    return next((r for r in all_rules().values() if r.name == name), None)


def expand_selectors(selectors: Iterable[str]) -> set[str]:
    """``ALL``, a full code, or a prefix (``TL3``, ``TL30``) → the set of codes it names."""
    rules = all_rules()
    out: set[str] = set()
    for sel in selectors:
        s = sel.strip().upper()
        if not s:
            continue
        if s == "ALL":
            out.update(rules)
            continue
        matched = {c for c in rules if c.startswith(s)}
        if not matched:
            raise ValueError(f"unknown rule selector {sel!r}")
        out |= matched
    return out


def default_codes() -> set[str]:
    return {c for c, r in all_rules().items() if r.default}
