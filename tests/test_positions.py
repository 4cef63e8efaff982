"""trainlint.positions gives the same ranges as LibCST's PositionProvider, for the nodes asked."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from trainlint.positions import positions_of

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "examples").glob("*.py")) + [ROOT / "src" / "trainlint" / "engine.py"]
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
