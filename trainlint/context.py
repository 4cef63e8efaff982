"""What a rule sees while checking one file: the shared facts, the settings, and ``report()``."""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING

import libcst as cst

from trainlint.facts import Facts
from trainlint.findings import Applicability, Severity

if TYPE_CHECKING:
    from trainlint.config import Settings
    from trainlint.rule import Rule


@dataclasses.dataclass(frozen=True)
class PendingEdit:
    """A text edit expressed against a node; positions are resolved once per file, lazily."""

    node: cst.CSTNode
    content: str
    mode: str = "replace"  # "replace" | "before" | "after" | "end" | "delete_line" | "module_start"


@dataclasses.dataclass(frozen=True)
class PendingFix:
    applicability: Applicability
    message: str
    edits: tuple[PendingEdit, ...]


@dataclasses.dataclass(frozen=True)
class Report:
    rule: type[Rule]
    node: cst.CSTNode
    message: str
    hint: str
    severity: Severity
    fix: PendingFix | None


class Context:
    def __init__(self, facts: Facts, settings: Settings, filename: str, source: str) -> None:
        self.facts = facts
        self.settings = settings
        self.filename = filename
        self.source = source
        self.reports: list[Report] = []

    @property
    def module(self) -> cst.Module:
        return self.facts.module

    def report(self, rule: Rule, node: cst.CSTNode, message: str, *, hint: str = "",
               severity: Severity | None = None, fix: PendingFix | None = None) -> None:
        self.reports.append(Report(type(rule), node, message, hint, severity or rule.severity, fix))

    # -- fixes ------------------------------------------------------------------------------
    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    @staticmethod
    def replace(node: cst.CSTNode, new: cst.CSTNode | str) -> PendingEdit:
        return PendingEdit(node, new if isinstance(new, str) else cst.Module([]).code_for_node(new))

    def fix(self, applicability: Applicability, message: str, *edits: PendingEdit) -> PendingFix:
        """A fix of ``edits``. A fix marked safe never turns running code into failing code: one that imports
        a module the script neither imports already nor installs (its install commands, its PEP 723 block or
        version comments, its project's requirement files: trainlint.pins) is unsafe, since where that module
        is missing the fixed script stops at the import."""
        if applicability is Applicability.SAFE and not all(map(self.provides, _imported_modules(edits))):
            applicability = Applicability.UNSAFE
        return PendingFix(applicability, message, tuple(edits))

    def provides(self, module: str) -> bool:
        """The script's own evidence provides ``module`` (a top-level module name): it imports it already, it
        uses an API that cannot run without it (``knowledge.REQUIRED_BY``: a transformers TensorFlow class
        needs tensorflow), or its install commands, PEP 723 block, version comments or project requirement
        files name it."""
        from trainlint.knowledge import REQUIRED_BY
        from trainlint.pins import PROJECT, normalize, versions_of

        imports = self.facts.imports
        if any(m.split(".")[0] == module for m in imports.modules):
            return True
        needs = REQUIRED_BY.get(module, ())
        if needs and any(q.startswith(needs) for q in imports.names.values()):
            return True
        aliases = [local for local, q in imports.names.items() if q == "transformers"]
        if needs and aliases and re.search(
                rf"\b(?:{'|'.join(map(re.escape, aliases))})\.({'|'.join(n.split('.', 1)[1] for n in needs)})", self.source):
            return True
        return versions_of(self).pin(normalize(module), down_to=PROJECT) is not None

    def add_import(self, statement: str) -> PendingEdit | None:
        """An edit adding ``statement`` (e.g. ``import evaluate``) after the module's imports,
        or None when the module already has it."""
        body = self.module.body
        for stmt in body:
            if isinstance(stmt, cst.SimpleStatementLine) and self.code(stmt).strip() == statement:
                return None
        last_import = None
        for stmt in body:
            if isinstance(stmt, cst.SimpleStatementLine) and all(
                isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body
            ):
                last_import = stmt
            elif last_import is not None or not _is_docstring(stmt):
                break
        if last_import is not None:
            return PendingEdit(last_import, statement + "\n", mode="after")
        if body and _is_docstring(body[0]):  # keep the docstring first
            return PendingEdit(body[0], statement + "\n", mode="after")
        if body:  # below a shebang / encoding line / header comments
            return PendingEdit(body[0], statement + "\n", mode="before")
        return PendingEdit(self.module, statement + "\n", mode="module_start")


_IMPORT_LINE_RE = re.compile(r"^[ \t]*(?:import|from)[ \t]+([A-Za-z_]\w*)", re.M)


def _imported_modules(edits: tuple[PendingEdit, ...]) -> set[str]:
    """The top-level modules the import statements among ``edits``' new text import."""
    return {m for e in edits if "import" in e.content for m in _IMPORT_LINE_RE.findall(e.content)}


def _is_docstring(stmt: cst.CSTNode) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )
