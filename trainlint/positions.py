"""Source positions of the few nodes a file's findings need, without LibCST's full metadata pass.

``MetadataWrapper(module).resolve(PositionProvider)`` records a range for every node of the module
and, before that, walks the whole tree once more for the (empty) batch of batchable providers. It
was about half of a re-lint in the language server (a 500-line script). Here the module's code is
generated once with LibCST's own position-recording codegen state, but ranges are recorded only
inside the requested nodes; lines and columns are tracked for every token, as LibCST does, so the
ranges are the same as ``PositionProvider``'s (``tests/test_positions.py`` checks it).

A lookup of a node that was not requested falls back to the full ``PositionProvider`` map.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import libcst as cst
from libcst._position import CodePosition, CodeRange

try:  # LibCST internals: guarded, the public (slower) path is the fallback
    from libcst.metadata.position_provider import PositionProvider, PositionProvidingCodegenState

    _FAST = True
except ImportError:  # pragma: no cover
    from libcst.metadata import PositionProvider

    _FAST = False

_NULL = contextlib.nullcontext()


class _Done(Exception):
    pass


class _Recorder:
    """Stands in for the provider: the codegen state writes ranges into ``_computed``."""

    def __init__(self) -> None:
        self._computed: dict[cst.CSTNode, CodeRange] = {}


def _provider(recorder: _Recorder) -> Any:
    """The recorder where the codegen state wants a provider (it only writes ``_computed``)."""
    return recorder


if _FAST:
    class _WantedPositionsState(PositionProvidingCodegenState):
        """Records ranges only while generating the code of a wanted node (and its children,
        whose ranges LibCST hoists into their parent's)."""

        # not dataclass fields: set on the instance after __init__ (the parent uses slots, the
        # subclass has a __dict__)
        wanted: set[cst.CSTNode]
        depth: int
        remaining: int

        def _update_position(self, value: str) -> None:
            if "\n" in value or "\r" in value:
                PositionProvidingCodegenState._update_position(self, value)
            else:
                self.column += len(value)

        def before_codegen(self, node: cst.CSTNode) -> None:
            if node in self.wanted:
                self.depth += 1
            if self.depth:
                PositionProvidingCodegenState.before_codegen(self, node)

        def after_codegen(self, node: cst.CSTNode) -> None:
            if self.depth:
                PositionProvidingCodegenState.after_codegen(self, node)
            if node in self.wanted:
                self.depth -= 1
                self.remaining -= 1
                if not self.remaining:
                    raise _Done  # every wanted range is known: the rest of the code is not needed

        def record_syntactic_position(self, node, *, start_node=None, end_node=None):
            if not self.depth:
                return _NULL
            return PositionProvidingCodegenState.record_syntactic_position(
                self, node, start_node=start_node, end_node=end_node)


class Positions(Mapping):
    """node → ``CodeRange`` (1-based lines, 0-based columns), as ``PositionProvider`` gives."""

    def __init__(self, module: cst.Module, wanted: Iterable[cst.CSTNode]) -> None:
        self.module = module
        self._map: dict[cst.CSTNode, CodeRange] = {}
        self._full = False
        wanted = set(wanted)
        if not _FAST or not wanted:
            return
        try:
            recorder = _Recorder()
            state = _WantedPositionsState(default_indent=module.default_indent,
                                          default_newline=module.default_newline, provider=_provider(recorder))
            state.wanted = wanted
            state.depth = 0
            state.remaining = len(wanted)
            try:
                module._codegen(state)
            except _Done:
                pass
            self._map = recorder._computed
        except Exception:  # a LibCST internal changed: the public path below
            self._map = {}
            self._compute_full()

    def _compute_full(self) -> None:
        from libcst.metadata import MetadataWrapper

        self._map = dict(MetadataWrapper(self.module, unsafe_skip_copy=True).resolve(PositionProvider))
        self._full = True

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        try:
            return self._map[node]
        except KeyError:
            if self._full:
                raise
            self._compute_full()
            return self._map[node]

    def __iter__(self) -> Iterator[cst.CSTNode]:
        return iter(self._map)

    def __len__(self) -> int:
        return len(self._map)


def positions_of(module: cst.Module, nodes: Iterable[cst.CSTNode]) -> Positions:
    return Positions(module, nodes)


class StatementPositions:
    """The ranges inside top-level statements, kept while the statement object lives on: the
    language server's incremental parser reuses every statement an edit did not touch, so after an
    edit only the new statements (and those holding a finding for the first time) are generated
    again. Per document; holds the statements of the current module that had findings."""

    def __init__(self) -> None:
        #: statement → ranges of all its nodes, lines relative to the statement's first line (1)
        self.maps: dict[cst.CSTNode, dict[cst.CSTNode, CodeRange]] = {}
        self.generated = 0  # statements generated by the last call (tests, benchmark)

    def positions(self, module: cst.Module, source: str, starts: list[int],
                  wanted: Iterable[cst.CSTNode]) -> Positions | None:
        """Ranges of ``wanted`` in ``module`` printed as ``source`` with its statements starting at
        ``starts`` (offsets, the footer's last); None when this way cannot tell (the caller uses
        :func:`positions_of`)."""
        body = module.body
        if not _FAST or "\r" in source or len(starts) != len(body) + 1:
            return None
        remaining = set(wanted)
        found: dict[cst.CSTNode, CodeRange] = {}
        keep: dict[cst.CSTNode, dict[cst.CSTNode, CodeRange]] = {}
        pending: list[tuple[cst.SimpleStatementLine | cst.BaseCompoundStatement, int]] = []
        line = 1 + source.count("\n", 0, starts[0])
        for k, stmt in enumerate(body):
            ranges = self.maps.get(stmt)
            if ranges is None:
                pending.append((stmt, line))
            else:
                keep[stmt] = ranges
                if remaining:
                    hits = remaining.intersection(ranges)
                    if hits:
                        _shift_into(found, ranges, hits, line - 1)
                        remaining -= hits
            line += source.count("\n", starts[k], starts[k + 1])
        self.generated = 0
        for stmt, first in pending:
            if not remaining:
                break
            ranges = _statement_ranges(module, stmt)
            self.generated += 1
            hits = remaining.intersection(ranges)
            if hits:
                keep[stmt] = ranges
                _shift_into(found, ranges, hits, first - 1)
                remaining -= hits
        self.maps = keep
        if remaining:  # the module itself, its header or footer: the whole-module way
            return None
        positions = Positions(module, ())
        positions._map = found
        return positions


def _statement_ranges(module: cst.Module, stmt: cst.CSTNode) -> dict[cst.CSTNode, CodeRange]:
    recorder = _Recorder()
    state = PositionProvidingCodegenState(default_indent=module.default_indent,
                                          default_newline=module.default_newline, provider=_provider(recorder))
    stmt._codegen(state)
    return recorder._computed


def _shift_into(out: dict, ranges: dict, nodes: Iterable[cst.CSTNode], by: int) -> None:
    for node in nodes:
        r = ranges[node]
        out[node] = r if not by else CodeRange(CodePosition(r.start.line + by, r.start.column),
                                               CodePosition(r.end.line + by, r.end.column))
