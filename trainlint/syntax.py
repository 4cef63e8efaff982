"""Whether a text is Python, judged as the interpreter that runs it would: code that some supported
Python accepts is never a syntax error (TL001), and code LibCST cannot read but CPython compiles is
analysed all the same.

Two parsers read a script here, and each accepts some code the other refuses:

- CPython's own parser (the interpreter trainlint runs on) refuses syntax of newer Pythons, such as the
  nested quotes of PEP 701 f-strings (3.12): LibCST's grammar, which follows the newest Python, reads them;
- LibCST's tokenizer refuses some indentation CPython accepts (a tab and a space, then two tabs and a
  space, consistently: Instagram/LibCST#829, #951). Such a file is read with each logical line's
  indentation written in spaces, as CPython's tokenizer counts it (tabs to the next multiple of 8), and
  the findings are placed back on the original columns.

A script in the percent format (``# %%`` cells: VS Code's interactive window, Jupytext, Spyder, PyCharm
run it cell by cell in IPython) may hold IPython's lines (``!pip install ...``, ``%matplotlib inline``):
it is read with those lines as ``pass``, row for row, as a notebook's cells are.
"""

from __future__ import annotations

import dataclasses
import io
import re
import tokenize

import libcst as cst

ONLY_AST = 0x400  # ast.PyCF_ONLY_AST: the parser alone, no code object


def cpython_error(source: str, filename: str = "<unknown>", flags: int = ONLY_AST) -> SyntaxError | None:
    """CPython's verdict on ``source``: the SyntaxError, or None when it compiles."""
    try:
        compile(source, filename, "exec", flags=flags, dont_inherit=True)
    except SyntaxError as err:
        return err
    except (ValueError, RecursionError, MemoryError):
        return SyntaxError("the expression nesting is too deep")
    return None


def libcst_reads(source: str) -> bool:
    """LibCST's parser (the newest Python grammar) reads ``source``."""
    try:
        cst.parse_module(source)
    except (cst.ParserSyntaxError, RecursionError, ValueError, MemoryError):
        return False
    return True


def syntax_error(source: str, filename: str = "<unknown>", flags: int = ONLY_AST,
                 newer_grammar: bool = True) -> SyntaxError | None:
    """The error that makes ``source`` invalid in every Python trainlint knows: CPython's, unless LibCST's
    newer grammar reads the text (syntax of a later Python than this interpreter, such as PEP 701).
    ``newer_grammar=False``: CPython's verdict alone (a text LibCST would take too long over)."""
    err = cpython_error(source, filename, flags)
    if err is None or (newer_grammar and err.lineno is not None and libcst_reads(source)):
        return None
    return err


@dataclasses.dataclass(frozen=True)
class Respaced:
    """A source whose indentation was written in spaces; ``rows`` maps each changed row to the lengths of
    its indentation before and after."""

    source: str
    rows: dict[int, tuple[int, int]]

    def column(self, row: int, column: int) -> int:
        """The 1-based column in the original text of a 1-based ``column`` of the respaced text."""
        if row not in self.rows:
            return column
        before, after = self.rows[row]
        return column - after + before if column - 1 >= after else min(column, before + 1)


def respace_indentation(source: str) -> Respaced | None:
    """``source`` with the leading whitespace of every line a token starts on written as spaces, counted as
    CPython's tokenizer does (a tab moves to the next multiple of 8, a form feed resets the count); lines
    inside a multi-line string are left as they are. None when the text does not tokenize or nothing
    changes."""
    rows: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type not in (tokenize.INDENT, tokenize.DEDENT, tokenize.NEWLINE, tokenize.NL,
                                tokenize.ENDMARKER):
                rows.add(tok.start[0])
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    lines = source.splitlines(keepends=True)
    changed: dict[int, tuple[int, int]] = {}
    for row in sorted(rows):
        if row > len(lines):
            continue
        line = lines[row - 1]
        body = line.lstrip(" \t\x0c")
        indent = line[: len(line) - len(body)]
        if "\t" not in indent and "\x0c" not in indent:
            continue
        width = 0
        for ch in indent:
            width = (width // 8 + 1) * 8 if ch == "\t" else 0 if ch == "\x0c" else width + 1
        lines[row - 1] = " " * width + body
        changed[row] = (len(indent), width)
    return Respaced("".join(lines), changed) if changed else None


PERCENT_CELL_RE = re.compile(r"^#[ \t]*%%", re.M)
_IPYTHON_LINE_RE = re.compile(r"^([ \t]*)[!%].*$", re.M)


def mask_ipython_lines(source: str) -> tuple[str, frozenset[int]] | None:
    """A percent-format script whose IPython lines (``!cmd``, ``%magic``, ``%%cell magic``) are all
    that keeps CPython from compiling it: the text with each of those lines made ``pass`` (same rows,
    same indentation) and the rows (1-based) it changed. None for any other text."""
    if "%%" not in source or not PERCENT_CELL_RE.search(source) or cpython_error(source) is None:
        return None
    rows: set[int] = set()

    def blank(m: re.Match[str]) -> str:
        rows.add(source.count("\n", 0, m.start()) + 1)
        return f"{m.group(1)}pass"

    masked = _IPYTHON_LINE_RE.sub(blank, source)
    if not rows or cpython_error(masked) is not None:
        return None
    return masked, frozenset(rows)
