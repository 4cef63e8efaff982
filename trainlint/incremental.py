"""Incremental parsing for the language server: after an edit, re-parse only the top-level
statements the edit touched and reuse the other statements of the previous module.

LibCST's parse was more than half of a re-lint of a 500-line script. An edit usually changes one
function; the text before and after it is unchanged, and so are the top-level statements there
(LibCST nodes are immutable: reusing them is safe).

How: the common prefix and suffix of the old and new text give the changed region; the top-level
statements it overlaps, plus one statement before it (an inserted indented line may belong to the
previous block), are re-parsed from the new text as a module of their own, and spliced between the
unchanged statements. Anything unusual falls back to a full parse: a change in the module's header
or footer, a chunk that does not parse (the full parse then reports the syntax error), a chunk
whose detected indentation or newline differs from the module's. The result is checked: the code
of the spliced statements must be exactly the new text there (the reused ones are unchanged
nodes), else the full parse is used.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import libcst as cst

from trainlint.textdiff import common_prefix, common_suffix

if TYPE_CHECKING:
    from trainlint.positions import Positions, StatementPositions

log = logging.getLogger("trainlint.incremental")


class IncrementalParser:
    """``parse(text)`` → ``cst.Module``, reusing the previous module's unchanged statements.

    Raises :class:`libcst.ParserSyntaxError` like ``cst.parse_module`` (from a full parse)."""

    def __init__(self, verify: bool = True) -> None:
        self.text: str | None = None
        self.module: cst.Module | None = None
        #: starts[k]: offset of top-level statement k (its leading lines included);
        #: starts[len(body)]: offset of the footer
        self.starts: list[int] = []
        self.verify = verify
        self.reused = 0  # statistics, for tests and the benchmark
        self.full = 0
        self._positions: StatementPositions | None = None

    def positions(self, module: cst.Module, text: str, wanted: Iterable[cst.CSTNode]) -> Positions | None:
        """Ranges of ``wanted`` from the ranges kept for unchanged statements (see
        :class:`trainlint.positions.StatementPositions`); None if ``module`` is not the last parse."""
        if module is not self.module or text != self.text:
            return None
        if self._positions is None:
            from trainlint.positions import StatementPositions

            self._positions = StatementPositions()
        return self._positions.positions(module, text, self.starts, wanted)

    def parse(self, text: str) -> cst.Module:
        if self.module is not None and self.text is not None:
            if text == self.text:
                return self.module
            try:
                module = self._splice(text)
            except cst.ParserSyntaxError:
                module = None
            except Exception:  # never worse than a full parse
                log.debug("incremental parse failed", exc_info=True)
                module = None
            if module is not None:
                self.reused += 1
                return module
        module = cst.parse_module(text)  # raises on a syntax error: the last good state is kept
        self.full += 1
        self._remember(text, module)
        return module

    def _remember(self, text: str, module: cst.Module, starts: list[int] | None = None) -> None:
        if starts is None:
            offset = len("".join(module.code_for_node(line) for line in module.header))
            starts = [offset]
            for stmt in module.body:
                offset += len(module.code_for_node(stmt))
                starts.append(offset)
            footer = len("".join(module.code_for_node(line) for line in module.footer))
            if offset + footer != len(text):  # a layout this class does not understand
                self.module = self.text = None
                return
        self.text, self.module, self.starts = text, module, starts

    def _splice(self, new: str) -> cst.Module | None:
        old, module, starts = self.text, self.module, self.starts
        if old is None or module is None:
            return None
        n = len(module.body)
        if n == 0:
            return None
        p = common_prefix(old, new)
        s = common_suffix(old, new, min(len(old), len(new)) - p)
        old_end = len(old) - s  # the changed region is old[p:old_end] → new[p:len(new) - s]
        if p < starts[0] or old_end > starts[n]:
            return None  # the header or the footer changed
        # statements i..j-1 are re-parsed: the one holding p, one before it, up to the one holding old_end
        i = 0
        while i + 1 < n and starts[i + 1] <= p:
            i += 1
        i = max(i - 1, 0)
        j = i + 1
        while j < n and starts[j] < old_end:
            j += 1
        delta = len(new) - len(old)
        chunk_start = starts[i]
        at_end = j == n
        chunk_end = len(new) if at_end else starts[j] + delta
        chunk_text = new[chunk_start:chunk_end]
        chunk = cst.parse_module(chunk_text)
        if (chunk.default_newline != module.default_newline or chunk.default_indent != module.default_indent
                or not chunk.body):
            return None
        if not at_end and not chunk.has_trailing_newline:
            return None
        if chunk.header and (i == 0 or any(line.whitespace.value for line in chunk.header)):
            return None  # module header lines, or lines a full parse may give to the previous block
        body = list(chunk.body)
        if chunk.header:
            body[0] = body[0].with_changes(leading_lines=(*chunk.header, *body[0].leading_lines))
        after = list(module.body[j:])
        if chunk.footer and not at_end:  # comment/blank lines at the chunk's end lead the next statement
            after[0] = after[0].with_changes(leading_lines=(*chunk.footer, *after[0].leading_lines))
        changes: dict[str, Any] = {"body": (*module.body[:i], *body, *after)}
        if at_end:
            changes["footer"] = chunk.footer
            changes["has_trailing_newline"] = chunk.has_trailing_newline
        result = module.with_changes(**changes)
        # offsets of the new statements: the reused ones shift by delta after the chunk
        new_starts = starts[: i + 1]
        offset = chunk_start
        for stmt in body:
            offset += len(result.code_for_node(stmt))
            new_starts.append(offset)
        if at_end:
            footer = len("".join(result.code_for_node(line) for line in result.footer))
            if offset + footer != len(new):
                return None
        else:
            footer = len("".join(result.code_for_node(line) for line in chunk.footer))
            if offset + footer != chunk_end:
                return None
            new_starts.extend(x + delta for x in starts[j + 1:])
        if self.verify:
            # the spliced region must print as the new text: the new statements (and the next one,
            # which may have received the chunk's trailing comment lines). The reused statements
            # print as before (unchanged nodes), so the whole module need not be printed again,
            # which cost as much as a full parse.
            stop = len(body) + (0 if at_end else 1)
            code = "".join(result.code_for_node(stmt) for stmt in result.body[i:i + stop])
            if at_end:
                code += "".join(result.code_for_node(line) for line in result.footer)
                expected = new[chunk_start:]
            else:
                expected = new[chunk_start:new_starts[i + stop]]
            if code != expected:
                log.warning("incremental parse produced different code; using a full parse")
                return None
        self._remember(new, result, new_starts)
        return result
