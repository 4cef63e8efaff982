"""The package's modules import each other in layers: no import cycle (lazy imports inside functions
and ``TYPE_CHECKING`` imports count too); a stage's rules import no other stage and no stage module
imports another's private names (shared pieces live in ``facts/``, ``knowledge.py``, ``probe/``).
Read from the source with ``ast``."""

from __future__ import annotations

import ast
import re

from support import ROOT

SRC = ROOT


def _modules() -> dict[str, object]:
    mods = {}
    for p in (SRC / "trainlint").rglob("*.py"):
        parts = p.relative_to(SRC).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = p
    return mods


def _graph() -> dict[str, set[str]]:
    mods = _modules()

    def owner(name: str) -> str | None:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in mods.items():
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("trainlint"):
                for alias in node.names:  # `from trainlint import engine` imports the module engine
                    full = f"{node.module}.{alias.name}"
                    deps.add(full if full in mods else owner(node.module))
            elif isinstance(node, ast.Import):
                deps.update(owner(a.name) for a in node.names if a.name.startswith("trainlint"))
        # importing a submodule runs its packages' __init__: an edge to a parent package is not a dependency
        graph[name] = {d for d in deps if d and d != name and not name.startswith(d + ".")}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles():
    graph = _graph()
    assert "trainlint.engine" in graph and graph["trainlint.engine"]
    assert _cycles(graph) == []


def test_stages_share_through_facts_not_through_each_other():
    """A stage's rules import no other stage; no stage module imports another stage's private name."""
    stage = re.compile(r"^trainlint\.stages\.(s\d_[a-z0-9_]+)")
    crossing = []
    for name, deps in _graph().items():
        m = stage.match(name)
        if m is None or not name.endswith(".rules"):
            continue
        crossing += [f"{name} imports {d}" for d in deps if (n := stage.match(d)) and n.group(1) != m.group(1)]
    for path in (SRC / "trainlint" / "stages").rglob("*.py"):
        own = path.parent.name
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (m := stage.match(node.module or "")) and m.group(1) != own:
                crossing += [f"{path.relative_to(SRC)} imports {node.module}.{a.name}"
                             for a in node.names if a.name.startswith("_")]
    assert crossing == []
