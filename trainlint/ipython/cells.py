"""The session linter of the IPython extension: the cells the kernel ran, in the order it ran them, as
one notebook (:func:`trainlint.notebook.notebook_from_cells`).

``%trainlint`` lints every cell of the session. The cell about to run is linted with the earlier cells
it depends on, not the whole session (a long session would cost a whole-module analysis per cell): a
backward slice over names, from the last cell to the first — an earlier cell is taken when it binds a
name still needed or changes its object (``model.train()``, ``args.lr = ...``); the names it reads
become needed, a binding hides the earlier ones. Cells that install packages (``%pip install``: the
version evidence) are always taken.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from trainlint.config import ConfigError, Settings, load_settings
from trainlint.findings import Finding, Severity

#: the name the session's findings are reported under (per-file settings match it like a notebook file)
SESSION_NAME = "session.ipynb"


@dataclasses.dataclass(frozen=True)
class Cell:
    label: str  # how the user knows the cell: "In [7]"
    source: str


@dataclasses.dataclass
class SessionResult:
    """The findings of the session, by cell (1-based position among the cells linted)."""

    cells: list[Cell]
    findings: list[Finding]
    note: str | None = None

    def of_cell(self, index: int) -> list[Finding]:
        return [f for f in self.findings if f.cell == index]

    def last_cell(self) -> list[Finding]:
        return self.of_cell(len(self.cells))

    def label(self, f: Finding) -> str:
        k = (f.cell or 1) - 1
        return self.cells[k].label if 0 <= k < len(self.cells) else "cell"


class SessionLinter:
    """The cells run so far and the state that makes linting the next one cheap."""

    def __init__(self, settings: Settings | None = None, cwd: Path | None = None) -> None:
        self.cells: list[Cell] = []
        self.config_error: str | None = None
        if settings is None:
            try:
                settings = load_settings(start=cwd or Path.cwd())
            except ConfigError as exc:
                self.config_error = str(exc)
                settings = Settings()
        self.settings = settings
        self.filename = str((cwd or Path.cwd()) / SESSION_NAME)
        self._parser: Any = None

    def add(self, source: str, label: str) -> None:
        """A cell that ran (or is about to run)."""
        if source and not source.isspace():
            self.cells.append(Cell(label, source))

    def lint(self, cells: list[Cell] | None = None) -> SessionResult:
        """Lint ``cells`` (default: every cell so far) as one notebook."""
        from trainlint.core import FileResult, meta_finding
        from trainlint.notebook import lint_virtual_module, notebook_from_cells

        cells = list(self.cells if cells is None else cells)
        if not cells:
            return SessionResult(cells, [])
        nb = notebook_from_cells([("code", c.source) for c in cells])
        if self._parser is None:
            from trainlint.incremental import IncrementalParser

            self._parser = IncrementalParser()
        try:
            result = lint_virtual_module(nb, self.filename, self.settings, parse=self._parser.parse,
                                         positions=self._parser.positions)
            result.findings = sorted((nb.map_finding(f) for f in result.findings), key=Finding.sort_key)
        except Exception as exc:  # noqa: BLE001  # a bug of trainlint must not stop the user's cell
            self._parser = None
            result = FileResult(self.filename, [meta_finding("TL003", self.filename,
                                                             f"internal error: {type(exc).__name__}: {exc}", 1, 1)])
            result.findings = [dataclasses.replace(f, cell=len(cells)) for f in result.findings]
        return SessionResult(cells, result.findings, result.note)

    def lint_next(self, source: str, label: str) -> list[Finding]:
        """Add the cell about to run and return its findings (with the earlier cells it depends on)."""
        self.add(source, label)
        if not source or source.isspace():
            return []
        return self.lint(depends(self.cells)).last_cell()


_INSTALL_RE = re.compile(r"(?m)^\s*[%!]\s*(pip|conda|mamba|uv)\b|^\s*pip\s+install\b")


@dataclasses.dataclass(frozen=True)
class Names:
    binds: frozenset[str]  # names the cell binds at module level (assignments, imports, def, class)
    uses: frozenset[str]  # every name the cell reads (function bodies included: they read globals)
    changes: frozenset[str]  # names whose object the cell changes (a method called for its effect, attribute/item store)
    installs: bool


@lru_cache(maxsize=4096)
def names_of(source: str) -> Names:
    from trainlint.notebook import mask_magics

    installs = bool(_INSTALL_RE.search(source))
    try:
        tree = ast.parse(mask_magics(source))
    except (SyntaxError, ValueError, RecursionError):
        return Names(frozenset(), frozenset(), frozenset(), installs)
    binds: set[str] = set()
    changes: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            binds.add(stmt.name)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            binds.update((a.asname or a.name).split(".")[0] for a in stmt.names if a.name != "*")
    binds |= _stores(tree.body)
    for node in _module_level(tree.body):
        if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, ast.Store):
            root = _root(node)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) \
                and isinstance(node.value.func, ast.Attribute):
            root = _root(node.value.func.value)  # `model.train()`: a call for its effect
        else:
            continue
        if root:
            changes.add(root)
    return Names(frozenset(binds), frozenset(_free(tree, set())), frozenset(changes), installs)


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
           ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _module_level(body: list[ast.stmt]) -> list[ast.AST]:
    """The nodes of ``body`` outside function, class and comprehension scopes."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, _SCOPES):
            continue
        out.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return out


def _stores(body: list[ast.stmt]) -> set[str]:
    return {n.id for n in _module_level(body) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _free(node: ast.AST, local: set[str]) -> set[str]:
    """The names ``node`` reads that its own scopes (functions, comprehensions) do not bind."""
    if isinstance(node, _SCOPES) and not isinstance(node, ast.ClassDef):
        inner = set(local)
        args = getattr(node, "args", None)
        if isinstance(args, ast.arguments):
            inner |= {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
            inner |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        inner |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        out: set[str] = set()
        for child in ast.iter_child_nodes(node):
            out |= _free(child, inner)
        return out
    if isinstance(node, ast.Name):
        return {node.id} if isinstance(node.ctx, ast.Load) and node.id not in local else set()
    out = set()
    for child in ast.iter_child_nodes(node):
        out |= _free(child, local)
    return out


def _root(node: ast.AST) -> str | None:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def depends(cells: list[Cell]) -> list[Cell]:
    """The last cell and the earlier cells it depends on, in the order they ran (see the module's doc)."""
    if not cells:
        return []
    last = names_of(cells[-1].source)
    needed = set(last.uses) | set(last.changes)
    chosen = [cells[-1]]
    for cell in reversed(cells[:-1]):
        n = names_of(cell.source)
        if n.binds & needed:
            needed -= n.binds
            needed |= n.uses
            chosen.append(cell)
        elif n.changes & needed:
            needed |= n.uses
            chosen.append(cell)
        elif n.installs:
            chosen.append(cell)
    chosen.reverse()
    return chosen


def stops(findings: list[Finding]) -> bool:
    """Whether a cell with these findings is stopped when errors stop cells."""
    return any(f.severity is Severity.ERROR for f in findings)
