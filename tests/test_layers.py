"""The package's modules import each other in layers: no import cycle (lazy imports inside functions
and ``TYPE_CHECKING`` imports count too); a stage's rules import no other stage and no stage module
imports another's private names (shared pieces live in ``facts/``, ``knowledge.py``, ``probe/``); no
module imports another module's private name.

The probe side too: the stages' rules import nothing of the probe; the child side (``probe/child/``,
``probe/protocol.py`` and the stages' ``probe*.py``, which run in the user's interpreter) imports only
the standard library, the frameworks and the child side, never the parent side, libcst or click; no
framework plugin imports a stage (the checks subscribe to the plugins' points, not the reverse). Read
from the source with ``ast``."""

from __future__ import annotations

import ast
import re
import sys

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


def _private_imports(path) -> list[str]:
    """``from trainlint.x import _name``, and ``m._name`` where ``m`` is a trainlint module this file
    imported (``import trainlint.x as m``, ``from trainlint import x``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules = _modules()
    private = lambda name: name.startswith("_") and not name.startswith("__")  # noqa: E731
    found = []
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("trainlint"):
            for a in node.names:
                if private(a.name) and f"{node.module}.{a.name}" not in modules:
                    found.append(f"line {node.lineno}: from {node.module} import {a.name}")
                elif f"{node.module}.{a.name}" in modules:
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("trainlint"):
                    aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr):
            base = node.value
            parts = []
            while isinstance(base, ast.Attribute):
                parts.insert(0, base.attr)
                base = base.value
            if isinstance(base, ast.Name) and base.id in aliases:
                module = ".".join([aliases[base.id], *parts])
                if module in modules:
                    found.append(f"line {node.lineno}: {module}.{node.attr}")
    return sorted(found, key=lambda hit: int(hit.split()[1].rstrip(":")))


def test_the_private_name_finder_finds_them(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("from trainlint.core import _x, lint_text\nimport trainlint.fixes as f\nfrom trainlint import notebook\n"
                 "f._y()\nnotebook._z\nself._ok\n", encoding="utf-8")
    assert _private_imports(p) == ["line 1: from trainlint.core import _x", "line 4: trainlint.fixes._y",
                                   "line 5: trainlint.notebook._z"]


def test_no_module_imports_another_modules_private_name():
    """What one module needs of another is public; a private name stays in its module."""
    crossing = []
    for path in sorted((SRC / "trainlint").rglob("*.py")):
        crossing += [f"{path.relative_to(SRC).as_posix()} {hit}" for hit in _private_imports(path)]
    assert crossing == []


# ---------------------------------------------------------------- the probe side

#: What the user's interpreter may have besides the standard library: the frameworks and their helpers.
FRAMEWORKS = {"torch", "transformers", "datasets", "tokenizers", "accelerate", "evaluate", "deepspeed",
              "huggingface_hub", "numpy", "pyarrow", "tensorflow", "keras", "tf_keras"}
STAGE_PROBE = re.compile(r"^trainlint\.stages\.s\d_[a-z0-9_]+\.probe(_keras)?$")


def _is_child_side(name: str) -> bool:
    return (name.startswith("trainlint.probe.child") or name == "trainlint.probe.protocol"
            or bool(STAGE_PROBE.match(name)))


def _imports(path) -> list[tuple[str, list[str]]]:
    """(module, names) of every absolute import of a file, lazy and TYPE_CHECKING ones included."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names]
    return out


def child_side_violations(name: str, imports: list[tuple[str, list[str]]], modules) -> list[str]:
    """What a child-side module must not import: anything of trainlint outside the child side (the
    package roots, whose imports are lazy, excepted), or a third-party module that is no framework."""
    bad = []
    for module, names in imports:
        top = module.split(".")[0]
        if top == "trainlint":
            # `from trainlint.probe import protocol` imports the module trainlint.probe.protocol
            targets = [f"{module}.{n}" for n in names if f"{module}.{n}" in modules] or [module]
            for target in targets:
                if not (_is_child_side(target) or target in ("trainlint.probe", "trainlint.stages")):
                    bad.append(f"{name} imports {target}")
        elif top not in sys.stdlib_module_names and top not in FRAMEWORKS:
            bad.append(f"{name} imports {module} (neither the standard library nor a framework)")
    return bad


def test_the_layer_checks_can_fail():
    modules = _modules()
    assert child_side_violations("trainlint.probe.child.x", [("trainlint.probe.parent.report", ["build"]),
                                                             ("libcst", []), ("click", []), ("torch", []),
                                                             ("os", []), ("trainlint.probe", ["protocol"]),
                                                             ("trainlint.probe", ["parent"])], modules) == [
        "trainlint.probe.child.x imports trainlint.probe.parent.report",
        "trainlint.probe.child.x imports libcst (neither the standard library nor a framework)",
        "trainlint.probe.child.x imports click (neither the standard library nor a framework)",
        "trainlint.probe.child.x imports trainlint.probe.parent"]
    assert child_side_violations("trainlint.probe.child.x", [("trainlint.findings", ["Finding"])], modules)


def test_the_stages_rules_import_nothing_of_the_probe():
    crossing = [f"{name} imports {d}" for name, deps in _graph().items() if name.endswith(".rules")
                for d in deps if d.startswith("trainlint.probe")]
    assert crossing == []


def test_the_child_side_imports_only_the_standard_library_the_frameworks_and_itself():
    modules = _modules()
    bad = []
    for name, path in modules.items():
        if _is_child_side(name):
            bad += child_side_violations(name, _imports(path), modules)
    assert bad == []


def test_no_framework_plugin_imports_a_stage():
    plugins = {n: p for n, p in _modules().items() if n.startswith("trainlint.probe.child.frameworks")}
    assert len(plugins) >= 6
    bad = [f"{name} imports {module}" for name, path in plugins.items() for module, _ in _imports(path)
           if module.startswith("trainlint.stages")]
    assert bad == []
