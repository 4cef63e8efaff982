"""trainlint.positions gives the same ranges as LibCST's PositionProvider, for the nodes asked."""

from __future__ import annotations

import random
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from trainlint.positions import positions_of

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "examples").glob("*.py")) + [ROOT / "trainlint" / "engine.py"]
TRICKY = (
    "import torch\r\nx = (1,\r\n     2)\r\n"  # CRLF
    "s = '''a\nb'''  # comment\n"
    "@decorator\n# between\n@other(1)\ndef f(a, *, b=2):\n    '''doc'''\n    return [i for i in a if i]\n"
    "class C(torch.nn.Module):\n\n    def forward(self, x):  # noqa\n        return x @ x\n"
    "y = f'{x!r:>{10}}' + \"😀\" + 'é'\n"
    "if x:\n    pass\nelif y:\n    pass\nelse:\n    z = lambda q: q\n"
)


def all_nodes(module: cst.Module) -> list[cst.CSTNode]:
    out, stack = [], [module]
    while stack:
        node = stack.pop()
        out.append(node)
        stack.extend(node.children)
    return out


@pytest.mark.parametrize("source", [p.read_text(encoding="utf-8") for p in SOURCES] + [TRICKY],
                         ids=[p.name for p in SOURCES] + ["tricky"])
def test_same_ranges_as_position_provider(source: str):
    module = cst.parse_module(source)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    nodes = [n for n in all_nodes(module) if n is not module]
    rng = random.Random(0)
    for wanted in (nodes, rng.sample(nodes, min(25, len(nodes))), nodes[-3:]):
        got = positions_of(module, wanted)
        for node in wanted:
            assert got[node] == expected[node], (type(node).__name__, module.code_for_node(node)[:60])


def test_a_node_not_asked_for_falls_back_to_the_full_map():
    module = cst.parse_module(TRICKY)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    nodes = all_nodes(module)
    got = positions_of(module, nodes[5:6])
    assert got[nodes[-1]] == expected[nodes[-1]]


def test_ranges_kept_for_unchanged_statements_match_position_provider_edit_after_edit():
    """The language server's way (ranges of the statements an edit did not touch are kept) gives
    PositionProvider's ranges after every edit, and generates only a few statements again."""
    from trainlint.incremental import IncrementalParser

    rng = random.Random(7)
    text = "\n\n".join(p.read_text(encoding="utf-8") for p in SOURCES[:3])
    parser = IncrementalParser()
    wanted: list[cst.CSTNode] = []
    lines = text.splitlines(keepends=True)
    for step in range(25):
        row = rng.randrange(len(lines))
        if lines[row].strip() and not lines[row].rstrip().endswith(("\\", ",", "(", "[", "{")) \
                and '"""' not in lines[row] and "'''" not in lines[row]:
            lines[row] = lines[row].rstrip("\n") + f"  # edit {step}\n"
        if step % 5 == 4:
            lines.insert(row, "\n")  # lines move
        text = "".join(lines)
        module = parser.parse(text)
        nodes = [n for n in all_nodes(module) if not isinstance(n, (cst.Module, cst.EmptyLine, cst.Newline,
                                                                     cst.TrailingWhitespace, cst.Comment))]
        alive = set(nodes)
        wanted = [n for n in wanted if n in alive][:10] + rng.sample(nodes, 5)
        got = parser.positions(module, text, wanted)
        assert got is not None
        expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        for node in wanted:
            assert got[node] == expected[node], (step, type(node).__name__)
    assert parser.reused >= 12


def test_an_edit_generates_only_the_statements_it_touched():
    from trainlint.incremental import IncrementalParser

    text = "\n\n".join(p.read_text(encoding="utf-8") for p in SOURCES[:3])
    parser = IncrementalParser()
    module = parser.parse(text)
    calls = [n for n in all_nodes(module) if isinstance(n, cst.Call)]
    wanted = calls[::7]
    assert parser.positions(module, text, wanted) is not None
    first = parser._positions.generated
    # a comment typed at the end of the 10th statement's first line: one statement is new
    lines = text.splitlines(keepends=True)
    row = 1 + text.count("\n", 0, text.index(module.code_for_node(module.body[10]).lstrip("\n")))
    lines[row - 1] = lines[row - 1].rstrip("\n") + "  # typed\n"
    text = "".join(lines)
    module = parser.parse(text)
    assert parser.reused == 1
    alive = set(all_nodes(module))
    kept = [n for n in wanted if n in alive]
    got = parser.positions(module, text, kept)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    assert all(got[n] == expected[n] for n in kept)
    assert first > 5 and parser._positions.generated == 0  # every kept node is in a kept statement
