"""The facts of one module: one object per file that every rule asks."""

from __future__ import annotations

import libcst as cst

from trainlint.facts.datasets import DatasetFacts
from trainlint.facts.imports import Imports
from trainlint.facts.walk import Index, Where


class Facts(DatasetFacts):
    """Shared facts over one module. Built by the engine from the single walk. Its parts build on each
    other: :class:`Scopes` (the state, bindings), :class:`Dataflow` (values), :class:`DatasetFacts`."""

    def __init__(self, module: cst.Module, index: Index, where: dict[cst.CSTNode, Where]) -> None:
        self.module = module
        self.index = index
        self.where = where
        self.imports = Imports()
        for node in (*index.get("Import", ()), *index.get("ImportFrom", ())):
            self.imports.add(node)
        self.bindings = {}
        self._unpacked = {}
        self._collect_bindings()
        self._values = {}
        self._tok = {}
        self._rhs_ids = {}
        self._trainer_calls = None
        self._method_calls = None
