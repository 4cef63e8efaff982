"""The facts of one module: one object per file that every rule asks."""

from __future__ import annotations

import libcst as cst

from trainlint.facts.dataflow import Dataflow
from trainlint.facts.datasets import DatasetFacts
from trainlint.facts.imports import Imports
from trainlint.facts.scopes import Binding, Scopes
from trainlint.facts.values import Tokenization, Value
from trainlint.facts.walk import Where


class Facts(Scopes, Dataflow, DatasetFacts):
    """Shared facts over one module. Built by the engine from the single walk."""

    def __init__(self, module: cst.Module, index: dict[str, list[cst.CSTNode]], where: dict[cst.CSTNode, Where]):
        self.module = module
        self.index = index
        self.where = where
        self.imports = Imports()
        for node in index.get("Import", ()) + index.get("ImportFrom", ()):
            self.imports.add(node)
        # scope (FunctionDef/Lambda or None for module) -> name -> bindings in order
        self.bindings: dict[cst.CSTNode | None, dict[str, list[Binding]]] = {}
        #: `a, b = helper(...)`: target name -> (the call, the position unpacked)
        self._unpacked: dict[cst.CSTNode, tuple[cst.Call, int]] = {}
        self._collect_bindings()
        self._values: dict[cst.CSTNode, Value | None] = {}
        self._tok: dict[cst.CSTNode, Tokenization] = {}
        self._rhs_ids: dict[int, set[int]] = {}
        self._trainer_calls: list[cst.Call] | None = None
        self._method_calls: dict[str, list[cst.Call]] | None = None
