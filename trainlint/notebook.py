"""Jupyter notebooks (``.ipynb``): lint the code cells as one module, report by cell and row.

The code cells are concatenated, in order, into one *virtual module* so that the dataflow crosses
cells the way it does in the kernel (``tokenizer`` defined in cell 3, used by the ``Trainer`` of
cell 7). Between two cells the virtual module holds one marker comment line (``# tl-cell N``), so
that a fixed virtual module can be split back into its cells.

IPython syntax is read the way IPython reads it (see "IPython syntax" below), line numbers
preserved: every line of a construct that is not Python (``%pip install ...``, ``!pip install a \\``
and its continuation line, ``files = !ls``, ``model?``, a cell magic's line) becomes ``pass  #
tl-magic-K <original text>`` (the indent of the construct's first line). A cell magic keeps its
body when the body is Python (``%%time``, ``%%timeit``, ``%%capture``, ``%%prun``, ``%%debug``),
else every line of the cell is such a ``pass``.

Cell by cell: each cell is checked on its own first. A cell that does not parse even as IPython
(a typo, a cell cut off in an open bracket) is one TL001 *in that cell*, and its lines are left out
of the virtual module (never rewritten); all the other cells are still linted together, with the
facts that cross cells.

Locations: :attr:`Finding.cell` is the **1-based index of the cell among all cells of the notebook**
(markdown and raw cells count: cell 3 is the third cell from the top, as Ruff counts), and the
finding's rows are 1-based rows *within that cell*.

Fixing (``--fix``): fixes are computed and applied on the virtual module, then written back with
:meth:`Notebook.with_source` (or :func:`fix_notebook_text` given any ``source -> fixed source``
function, e.g. :func:`trainlint.fixes.apply_edits` of edits in virtual-module coordinates). Only the
``source`` values of the cells that changed are rewritten, where they stand in the file's JSON text
and in its style: every other byte (outputs, execution counts, metadata, key order, indentation or
compact one-line JSON, separators, escaping, the trailing newline) is kept. The edits carried by notebook findings
(``Finding.fix``) are mapped to rows within the cell of each edit; for display only.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from typing import Any

from trainlint.config import Settings
from trainlint.findings import Edit, Finding, Fix, Position
from trainlint.noqa import file_noqa
from trainlint.syntax import syntax_error

#: cell magics whose body is Python code (kept in the virtual module)
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})

_MARKER_RE = re.compile(r"^# tl-cell (\d+)$")
_MAGIC_RE = re.compile(r"^(?P<indent>[ \t]*)pass  # tl-magic-(?P<k>\d+)(?: .*)?$")
_MAGIC_SUB_RE = re.compile(r"(?m)^(?P<indent>[ \t]*)pass  # tl-magic-(?P<k>\d+)(?: .*)?$")


class NotebookError(ValueError):
    """The file is not a notebook trainlint can read (invalid JSON, no cells)."""


@dataclasses.dataclass
class _Cell:
    index: int  # 1-based among all cells
    raw: dict[str, Any]  # the cell's JSON object (shared with Notebook.data)
    text: str  # the original source
    virtual: list[str]  # its lines in the virtual module
    python: bool  # False: never rewritten (a cell magic with a non-Python body, a broken cell)
    start: int = 0  # first row of the cell in the virtual module (1-based)
    #: the cell does not parse even as IPython: (row, column, message) within the cell; its lines
    #: are left out of the virtual module (``pass``), the other cells are linted as usual
    error: tuple[int, int, str] | None = None


@dataclasses.dataclass
class Notebook:
    data: dict[str, Any]
    cells: list[_Cell]  # the code cells
    #: the lines replaced by ``pass  # tl-magic-K``: the placeholder's indent, NUL, the original line
    magics: list[str]
    #: the notebook's JSON text as read (rewritten in place: only the ``source`` values of edited cells)
    text: str
    source: str = ""  # the virtual module
    _row_cell: list[int] = dataclasses.field(default_factory=list)  # virtual row -> position in cells

    def __post_init__(self) -> None:
        lines: list[str] = []
        row_cell: list[int] = [0]  # row 0 unused
        for i, cell in enumerate(self.cells):
            if i:
                lines.append(f"# tl-cell {cell.index}")
                row_cell.append(i)  # the marker belongs to the next cell (row 0 of it)
            cell.start = len(lines) + 1
            lines.extend(cell.virtual)
            row_cell.extend([i] * len(cell.virtual))
        self.source = "\n".join(lines) + "\n" if lines else ""
        self._row_cell = row_cell

    # -- locations ---------------------------------------------------------------------------
    def locate(self, pos: Position) -> tuple[int, Position]:
        """A virtual-module position → (cell index among all cells, position within the cell)."""
        if not self.cells:
            return 1, pos
        row = min(max(pos.row, 1), len(self._row_cell) - 1) if len(self._row_cell) > 1 else 1
        cell = self.cells[self._row_cell[row]] if len(self._row_cell) > 1 else self.cells[0]
        in_cell = pos.row - cell.start + 1
        if in_cell < 1:  # the marker line before a cell
            return cell.index, Position(1, 1)
        return cell.index, Position(in_cell, pos.column)

    def map_finding(self, f: Finding) -> Finding:
        cell, start = self.locate(f.start)
        end_cell, end = self.locate(f.end)
        if end_cell != cell:
            end = start
        fix = None
        if f.fix is not None:
            fix = Fix(f.fix.applicability, f.fix.message,
                      tuple(Edit(self.locate(e.start)[1], self.locate(e.end)[1], e.content) for e in f.fix.edits))
        return dataclasses.replace(f, start=start, end=end, fix=fix, cell=cell)

    # -- writing back ------------------------------------------------------------------------
    def cell_sources(self, new_source: str) -> dict[int, tuple[str, list[str]]]:
        """The cells a changed virtual module changes: cell index among all cells → (its new source,
        its new lines in the virtual module). Cells never rewritten (see :class:`_Cell`) are left out."""
        parts = _split_cells(new_source, [c.index for c in self.cells])
        changed: dict[int, tuple[str, list[str]]] = {}
        for cell, lines in zip(self.cells, parts):
            if lines == cell.virtual or not cell.python:
                continue
            text = "\n".join(self._restore(line) for line in lines)
            if cell.text.endswith("\n") and not text.endswith("\n"):
                text += "\n"
            if text != cell.text:
                changed[cell.index] = (text, list(lines))
        return changed

    def with_source(self, new_source: str) -> str:
        """The notebook's JSON text with the cells rebuilt from a changed virtual module: only the
        ``source`` values of the cells that changed are rewritten, in the file's own JSON style; every
        other byte of the file is kept."""
        sources = self.cell_sources(new_source)
        changed: dict[int, str] = {}
        for cell in self.cells:
            if cell.index not in sources:
                continue
            text, lines = sources[cell.index]
            raw_source = cell.raw.get("source")
            cell.raw["source"] = text if isinstance(raw_source, str) else _source_lines(text)
            cell.text = text
            cell.virtual = lines
            changed[cell.index - 1] = text
        self.__post_init__()
        if changed:
            self.text = _rewrite_sources(self.text, {i: self.data["cells"][i]["source"] for i in changed})
        return self.text

    def _restore(self, line: str) -> str:
        m = _MAGIC_RE.match(line)
        if m and int(m.group("k")) < len(self.magics):
            return _restore_line(m.group("indent"), self.magics[int(m.group("k"))])
        return line


# ---------------------------------------------------------------------------------------------
# The notebook's JSON text, rewritten in place: a fixed cell's ``source`` value is replaced where it
# stands, in the style of the file (compact one-line JSON as Colab saves it, indent 1 or 2, the key
# order, the separators, the trailing newline and the escaping of non-ASCII characters all stay as
# they are); the lines a fix did not change keep their JSON text byte for byte.

_WS = " \t\r\n"
#: a JSON string (unrolled: linear on the long strings of outputs and embedded images)
_JSON_STRING_RE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_JSON_SCALAR_RE = re.compile(r"[^,:\[\]{}\s]*")
_JSON_TOKEN_RE = re.compile(r'["\[\]{}]')


def _skip_ws(t: str, i: int) -> int:
    while i < len(t) and t[i] in _WS:
        i += 1
    return i


def _value_end(t: str, i: int) -> int:
    """The end of the JSON value that starts at ``i``."""
    if t[i] == '"':
        m = _JSON_STRING_RE.match(t, i)
        if m is None:
            raise NotebookError("invalid notebook JSON: an unterminated string")
        return m.end()
    if t[i] not in "[{":
        return _JSON_SCALAR_RE.match(t, i).end()  # type: ignore[union-attr]
    depth = 0
    j = i
    while True:
        m = _JSON_TOKEN_RE.search(t, j)
        if m is None:
            raise NotebookError("invalid notebook JSON: an unclosed bracket")
        ch = m.group()
        if ch == '"':
            j = _value_end(t, m.start())
            continue
        depth += 1 if ch in "[{" else -1
        j = m.end()
        if depth == 0:
            return j


def _members(t: str, i: int):
    """(key, start of the whitespace before the key, value start, value end) of the object at ``i``."""
    j = _skip_ws(t, i + 1)
    if t[j] == "}":
        return
    before = i + 1
    while True:
        key_end = _value_end(t, j)
        key = json.loads(t[j:key_end])
        v = _skip_ws(t, _skip_ws(t, key_end) + 1)  # past the colon
        end = _value_end(t, v)
        yield key, before, v, end
        j = _skip_ws(t, end)
        if t[j] != ",":
            return
        before = j + 1
        j = _skip_ws(t, j + 1)


def _elements(t: str, i: int):
    """(start, end) of each element of the array at ``i``."""
    j = _skip_ws(t, i + 1)
    if t[j] == "]":
        return
    while True:
        end = _value_end(t, j)
        yield j, end
        j = _skip_ws(t, end)
        if t[j] != ",":
            return
        j = _skip_ws(t, j + 1)


def _source_spans(t: str) -> dict[int, tuple[int, int, int]]:
    """Cell position (0-based among all cells) → (start of the whitespace before its ``"source"`` key,
    start, end of the value)."""
    top = _skip_ws(t, 0)
    cells = None
    for key, _, v, _ in _members(t, top):
        if key == "cells":
            cells = v  # the last one counts, as for json.loads
    out: dict[int, tuple[int, int, int]] = {}
    if cells is None or t[cells] != "[":
        return out
    for n, (start, _) in enumerate(_elements(t, cells)):
        if t[start] != "{":
            continue
        for key, before, v, end in _members(t, start):
            if key == "source":
                out[n] = (before, v, end)
    return out


def source_row_lines(t: str) -> dict[int, list[int]]:
    """Where each row of each cell's source is in the notebook's JSON text: cell index (1-based among all
    cells) → the 1-based line of the file on which row 1, 2, ... of the cell starts. A JSON string never
    spans lines, so in an indented notebook (``source`` a list of lines, one a line) each row has its own
    line; a source written as one string, or a notebook saved as one line of JSON, gives every row the
    same line. ``{}`` when the text is not a notebook's JSON."""
    import bisect

    try:
        spans = _source_spans(t)
    except (NotebookError, ValueError, IndexError):
        return {}
    newlines = [m.start() for m in re.finditer("\n", t)]

    def line(offset: int) -> int:
        return bisect.bisect_left(newlines, offset) + 1

    out: dict[int, list[int]] = {}
    for n, (_, start, end) in spans.items():
        if t[start] == "[":
            rows: list[int] = []
            pending = False  # the element before ended its row: the next element starts one
            for a, b in _elements(t, start):
                try:
                    value = json.loads(t[a:b])
                except ValueError:
                    continue
                if not isinstance(value, str):
                    continue
                value = value.replace("\r\n", "\n").replace("\r", "\n")
                if not rows or pending:
                    rows.append(line(a))
                rows.extend([line(a)] * value[:-1].count("\n"))  # rows that start inside this element
                pending = value.endswith("\n")
            out[n + 1] = rows or [line(start)]
        else:  # one string: every row on the line of the string
            out[n + 1] = [line(start)] * (_cell_text({"source": _json_value(t[start:end])}).count("\n") + 1)
    return out


def _json_value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return ""


def _ensure_ascii(t: str) -> bool:
    """The file writes non-ASCII characters as ``\\uXXXX`` escapes (none appears raw, one is escaped)."""
    if any(ord(ch) > 127 for ch in t):
        return False
    return re.search(r"\\u(?:00[89a-fA-F]|0[1-9a-fA-F]|[1-9a-fA-F])", t) is not None


def _indent_unit(t: str) -> int:
    m = re.search(r"[\[{]\r?\n( +)\S", t)
    return len(m.group(1)) if m else 1


def _rewrite_sources(t: str, sources: dict[int, str | list[str]]) -> str:
    """``t`` with the ``source`` value of the cells in ``sources`` (by position) replaced."""
    spans = _source_spans(t)
    ascii_only = _ensure_ascii(t)
    out = t
    for n in sorted(sources, reverse=True):
        if n not in spans:
            raise NotebookError("the notebook's JSON changed shape while it was fixed; notebook left unchanged")
        before, start, end = spans[n]
        value = _render_source(t, before, start, end, sources[n], ascii_only)
        out = out[:start] + value + out[end:]
    return out


def _render_source(t: str, before: int, start: int, end: int, value: str | list[str], ascii_only: bool) -> str:
    """The JSON text of a cell's new ``source`` in the layout of its old one (``t[start:end]``)."""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=ascii_only)
    if not value:
        return "[]"
    # the old elements' text, reused for every line the fix left as it was
    old = list(_elements(t, start)) if t[start] == "[" else []
    raw: dict[str, str] = {}
    for a, b in old:
        try:
            decoded = json.loads(t[a:b])
        except ValueError:
            continue
        if isinstance(decoded, str):
            raw.setdefault(decoded.replace("\r\n", "\n").replace("\r", "\n"), t[a:b])
    items = [raw.get(line) or json.dumps(line, ensure_ascii=ascii_only) for line in value]
    # the layout: the old list's own whitespace, else that around the "source" key
    gap = t[before:_skip_ws(t, before)]  # the whitespace before the key: "\n   " (indented) or "" / " "
    if "\n" in gap:
        key_indent = gap[gap.rindex("\n") + 1:]
        newline = gap[:gap.rindex("\n") + 1].lstrip(" \t")
        open_ws = newline + key_indent + " " * _indent_unit(t)
        close_ws = newline + key_indent
        sep = "," + open_ws
    else:
        open_ws = close_ws = ""
        sep = "," + gap
    seps: list[str] = []  # the text between two elements, by position
    if old:
        open_ws = t[start + 1:old[0][0]]
        close_ws = t[old[-1][1]:end - 1]
        seps = [t[a[1]:b[0]] for a, b in zip(old, old[1:])]
        if seps:
            sep = seps[0]
        elif "\n" in open_ws:
            sep = "," + open_ws
    body = items[0] + "".join((seps[k] if k < len(seps) else sep) + item for k, item in enumerate(items[1:]))
    return "[" + open_ws + body + close_ws + "]"


def _split_cells(source: str, indices: list[int]) -> list[list[str]]:
    lines = source.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    parts: list[list[str]] = [[]]
    expected = iter(indices[1:])
    want = next(expected, None)
    for line in lines:
        m = _MARKER_RE.match(line)
        if m and want is not None and int(m.group(1)) == want:
            parts.append([])
            want = next(expected, None)
            continue
        parts[-1].append(line)
    if len(parts) != len(indices):
        raise NotebookError("the fixed code lost a cell boundary marker (`# tl-cell N`); notebook left unchanged")
    return parts


def _source_lines(text: str) -> list[str]:
    """nbformat's list form: every line keeps its newline except the last."""
    if not text:
        return []
    lines = text.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


def _cell_text(raw: dict[str, Any]) -> str:
    src = raw.get("source", "")
    if isinstance(src, list):
        src = "".join(s for s in src if isinstance(s, str))
    if not isinstance(src, str):
        return ""
    return src.replace("\r\n", "\n").replace("\r", "\n")


# ---------------------------------------------------------------------------------------------
# IPython syntax → line-for-line Python.
#
# A cell that compiles as Python is kept as it is (IPython runs it unchanged). Any other cell goes
# through IPython's own input transformations (``IPython.core.inputtransformer2``, the code the
# kernel runs before compiling a cell: cell magics, ``!cmd`` with ``\`` continuation lines, line
# magics, ``x = !cmd``, ``x = %magic``, ``obj?``, prompts), tracking which original lines each
# transformation consumed; those lines become ``pass  # tl-magic-K <original text>`` (the indent of
# the first line of the construct, the original text as a comment: ``!pip install x==1.0`` stays
# visible to the version evidence of :mod:`trainlint.pins`), so rows are preserved. Without IPython
# installed (the ``notebooks`` extra: ``pip install ipython``) a small fallback recognises the common forms.

_FLAGS = 0x400 | 0x2000  # ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT (IPython's autoawait)


def _syntax_error(text: str) -> SyntaxError | None:
    """The cell's syntax error in every Python trainlint knows (see :func:`trainlint.syntax.syntax_error`)."""
    return syntax_error(text, "<cell>", _FLAGS)


_TRANSFORMER = None  # IPython's TransformerManager; False: IPython is not installed


def _ipython():
    global _TRANSFORMER
    if _TRANSFORMER is None:
        try:
            from IPython.core.inputtransformer2 import TransformerManager
        except Exception:  # not installed (or broken): the fallback
            _TRANSFORMER = False
        else:
            _TRANSFORMER = TransformerManager()
    return _TRANSFORMER or None


def _special_lines_ipython(tm, lines: list[str]) -> tuple[list[list[int]], list[str]]:
    """Runs IPython's cleanup and token transformations over ``lines`` (no line endings) and
    returns the groups of original line indices each special construct replaced, and the lines
    after IPython's line-preserving clean-ups (prompts, common indentation)."""
    keep = [line + "\n" for line in lines]
    cleaned = keep
    for transform in tm.cleanup_transforms:
        if getattr(transform, "__name__", "") == "leading_empty_lines":
            continue  # drops lines: blank lines are valid Python anyway
        out = transform(cleaned)
        if len(out) == len(cleaned):
            cleaned = out
    current = list(cleaned)
    origin: list[list[int]] = [[i] for i in range(len(current))]
    groups: list[list[int]] = []
    from IPython.core.inputtransformer2 import TokenTransformBase, make_tokens_by_line

    for _ in range(500):
        tokens_by_line = make_tokens_by_line(current)
        candidates = [t for t in (cls.find(tokens_by_line) for cls in tm.token_transformers) if t]
        if not candidates:
            break
        for transformer in sorted(candidates, key=TokenTransformBase.sortby):
            try:
                new = transformer.transform(current)
            except SyntaxError:
                continue
            break
        else:
            break
        start = transformer.start_line
        consumed = len(current) - len(new) + 1
        if consumed < 1 or start + consumed > len(current):
            break  # not the one-construct-to-one-line shape every IPython transform has today
        group = sorted({i for row in origin[start:start + consumed] for i in row})
        groups = [g for g in groups if not set(g) & set(group)] + [group]
        origin[start:start + consumed] = [group]
        current = new
    return groups, [line[:-1] if line.endswith("\n") else line for line in cleaned]


_ESCAPES = ("!", "%", "?", ",", ";", "/")
#: ``x = !ls``, ``out = %timeit f()``
_ASSIGN_MAGIC_RE = re.compile(r"^[\w.,\s\[\]()*]+=\s*[!%]")


def _is_magic(stripped: str) -> bool:
    if not stripped or stripped.startswith("#"):
        return False
    if stripped[0] in "%!":
        return True
    if "?" in stripped and re.fullmatch(r"\?{1,2}%{0,2}[\w.]+|%{0,2}[\w.]+\?{1,2}", stripped):
        return True  # `?model`, `model??`, `%timeit?` (IPython help)
    return _ASSIGN_MAGIC_RE.match(stripped) is not None


def _leading_indent(lines: list[str]) -> list[str]:
    """IPython's `leading_indent` clean-up without IPython: the indentation of the cell's first non-blank
    line is removed from every line that starts with it (a cell pasted with a leading space runs)."""
    first = next((line for line in lines if line.strip()), "")
    space = first[: len(first) - len(first.lstrip(" \t"))]
    if not space:
        return lines
    return [line[len(space):] if line.startswith(space) else line for line in lines]


def _special_lines_fallback(lines: list[str]) -> list[list[int]]:
    r"""Without IPython: ``%``/``!`` lines (and their ``\`` continuation lines), ``x = !cmd``, ``obj?``."""
    groups: list[list[int]] = []
    i = 0
    while i < len(lines):
        if _is_magic(lines[i].strip()):
            group = [i]
            while lines[group[-1]].endswith("\\") and group[-1] + 1 < len(lines):
                group.append(group[-1] + 1)
            groups.append(group)
            i = group[-1] + 1
        else:
            i += 1
    return groups


#: line magics and default shell aliases IPython runs without their `%` in a one-line cell (automagic:
#: the kernel's prefilter applies to single-line cells only; a name the cell assigns is not one)
AUTOMAGICS = frozenset({
    "pip", "conda", "mamba", "micromamba", "uv", "cd", "pwd", "env", "set_env", "load_ext", "reload_ext",
    "unload_ext", "matplotlib", "time", "timeit", "run", "who", "whos", "who_ls", "history", "reset", "store",
    "pinfo", "pinfo2", "pdb", "debug", "autoreload", "aimport", "tensorboard", "alias", "bookmark", "dhist",
    "dirs", "popd", "pushd", "sx", "sc", "system", "config", "lsmagic", "magic", "page", "precision", "prun",
    "psearch", "psource", "pycat", "rerun", "save", "xdel", "xmode", "load", "notebook", "killbgscripts",
    # default aliases (posix)
    "cat", "cp", "ldir", "lf", "lk", "ll", "ls", "lx", "mkdir", "mv", "rm", "rmdir", "clear", "more", "less", "man",
})
_AUTOMAGIC_RE = re.compile(r"^\s*(?P<name>[A-Za-z_]\w*)(?:\s+(?P<rest>.*))?$")


def _automagic(line: str) -> bool:
    m = _AUTOMAGIC_RE.match(line)
    if m is None or m.group("name") not in AUTOMAGICS:
        return False
    rest = (m.group("rest") or "").lstrip()
    # only a cell that does not compile gets here: `ls = 1`, `time.sleep(1)` never do; a broken
    # assignment (`pip = `) stays broken
    return not rest.startswith("=") or rest.startswith("==")


def _cell_magic(lines: list[str]) -> tuple[int, str] | None:
    """(row of the ``%%magic`` line, the magic's name) when the cell is a cell magic."""
    for i, line in enumerate(lines):
        if line.strip():
            if line.startswith("%%"):
                return i, line[2:].split(None, 1)[0] if line[2:].strip() else ""
            return None
    return None


def _virtual_lines(text: str, magics: list[str]) -> tuple[list[str], bool]:
    """The cell's lines as Python, row for row; False: the cell is never rewritten (a cell magic
    whose body is not Python, or a cell IPython had to clean up: prompts, common indentation)."""
    lines = text.split("\n")
    if lines and lines[-1] == "" and len(lines) > 1:
        lines.pop()

    def placeholder(i: int, indent: str) -> str:
        magics.append(f"{indent}\0{lines[i]}")
        tail = lines[i].strip()
        return f"{indent}pass  # tl-magic-{len(magics) - 1}" + (f" {tail}" if tail else "")

    magic = _cell_magic(lines)
    if magic is not None:
        row, name = magic
        if name not in PYTHON_CELL_MAGICS:
            return [placeholder(i, "") for i in range(len(lines))], False
        head = [line if i < row else placeholder(i, "") for i, line in enumerate(lines[: row + 1])]
        body, python = _virtual_lines("\n".join(lines[row + 1:]), magics) if row + 1 < len(lines) else ([], True)
        return head + body, python
    if _syntax_error("\n".join(lines) + "\n") is None:
        return lines, True
    tm = _ipython()
    python = True
    groups = None
    if tm is not None:
        try:
            groups, cleaned = _special_lines_ipython(tm, lines)
        except Exception:  # IPython's tokenizer refuses the cell (bad indentation, ...): it is broken
            groups = None
        else:
            if cleaned != lines:
                python, lines = False, cleaned
    if groups is None:
        cleaned = _leading_indent(lines)
        if cleaned != lines:
            python, lines = False, cleaned
        groups = _special_lines_fallback(lines)
    nonblank = [i for i, line in enumerate(lines) if line.strip()]
    if not groups and len(nonblank) == 1 and _automagic(lines[nonblank[0]]):
        groups = [nonblank]  # IPython's automagic: a one-line cell `pip install x` is `%pip install x`
    out = list(lines)
    for group in groups:
        first = lines[group[0]]
        indent = first[: len(first) - len(first.lstrip(" \t"))]
        for i in group:
            out[i] = placeholder(i, indent)
    return out, python


def mask_magics(cell_source: str) -> str:
    """One cell's source with its IPython lines (``%``, ``!``, ``%%`` cell magics, ``x?``) made
    ``pass`` lines, line for line (the language server lints notebook cells one by one)."""
    text = cell_source.replace("\r\n", "\n").replace("\r", "\n")
    lines, _ = _virtual_lines(text, [])
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def unmask_magics(masked: str, cell_source: str) -> str:
    """``masked`` (from :func:`mask_magics` of ``cell_source``, then edited) with the IPython lines
    of ``cell_source`` put back in place of their ``pass  # tl-magic-K`` lines."""
    magics: list[str] = []
    _virtual_lines(cell_source.replace("\r\n", "\n").replace("\r", "\n"), magics)

    def restore(m: re.Match) -> str:
        k = int(m.group("k"))
        return _restore_line(m.group("indent"), magics[k]) if k < len(magics) else m.group(0)

    return _MAGIC_SUB_RE.sub(restore, masked)


def _restore_line(indent: str, entry: str) -> str:
    """The original line of a placeholder (``entry``: the placeholder's indent when it was made,
    NUL, the original line), re-indented only when a fix changed the placeholder's indent."""
    made, _, original = entry.rpartition("\0")
    return original if made == indent or not original.strip() else indent + original.lstrip(" \t")


def parse_notebook(text: str) -> Notebook:
    """Read a notebook's JSON text. Raises :class:`NotebookError` when it is not one."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"invalid notebook JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise NotebookError("invalid notebook JSON: nesting too deep") from None
    return notebook_from_data(data, text)


def notebook_from_cells(cells: list[tuple[str, str]]) -> Notebook:
    """A notebook given its cells in order, each ``(cell type, source)`` (``"code"``, ``"markdown"``,
    ...): what an editor holds of an open notebook (the language server's notebook documents)."""
    return notebook_from_data({"cells": [{"cell_type": kind, "source": source} for kind, source in cells]}, "")


def notebook_from_data(data: Any, text: str) -> Notebook:
    """A notebook from its decoded JSON (``text``: the JSON text, for rewriting it)."""
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        if isinstance(data, dict) and "worksheets" in data:
            raise NotebookError("nbformat 3 notebooks are not supported: convert with `jupyter nbconvert --to notebook`")
        raise NotebookError("not a Jupyter notebook: no `cells` list")
    magics: list[str] = []
    cells: list[_Cell] = []
    for i, raw in enumerate(data["cells"], 1):
        if not isinstance(raw, dict) or raw.get("cell_type") != "code":
            continue
        src = _cell_text(raw)
        virtual, python = _virtual_lines(src, magics)
        error = None
        err = _syntax_error("\n".join(virtual) + "\n")
        if err is not None:
            # one broken cell costs only itself: a TL001 in it, its lines out of the module
            row = min(max(err.lineno or 1, 1), max(len(virtual), 1))
            error = (row, max(err.offset or 1, 1), f"cannot parse: SyntaxError: {err.msg}")
            virtual = [f"pass  # tl-magic-{_add(magics, chr(0) + line)}" + (f" {line.strip()}" if line.strip() else "")
                       for line in (src.split("\n")[: len(virtual)] or [""])]
            python = False
        cells.append(_Cell(i, raw, src, virtual, python, error=error))
    return Notebook(data, cells, magics, text)


def _add(items: list[str], item: str) -> int:
    items.append(item)
    return len(items) - 1


def is_python_notebook(nb: Notebook) -> bool:
    meta = nb.data.get("metadata") or {}
    if not isinstance(meta, dict):
        return True
    for key, field in (("language_info", "name"), ("kernelspec", "language")):
        v = meta.get(key)
        if isinstance(v, dict) and isinstance(v.get(field), str):
            return v[field].lower() in ("python", "python3", "ipython", "ipython3")
    return True


def lint_notebook_text(text: str, filename: str, settings: Settings):
    """Lint a notebook given its JSON text: a ``FileResult`` whose findings name cell and row."""
    from trainlint.core import FileResult, meta_finding

    try:
        nb = parse_notebook(text)
    except NotebookError as exc:
        return FileResult(filename, [meta_finding("TL002", filename, f"cannot read: {exc}", 1, 1)])
    result = lint_virtual_module(nb, filename, settings)
    result.findings = sorted((nb.map_finding(f) for f in result.findings), key=Finding.sort_key)
    return result


def lint_virtual_module(nb: Notebook, filename: str, settings: Settings, parse=None, positions=None):
    """Lint a notebook's code cells together: a ``FileResult`` whose findings are in the coordinates
    of the virtual module (:meth:`Notebook.map_finding` maps them to cell and row). ``parse`` and
    ``positions``: as for :func:`trainlint.core.lint_text` (the language server's incremental parser)."""
    from trainlint.core import FRAMEWORK_RE, FileResult, lint_text, meta_finding

    if not is_python_notebook(nb):
        return FileResult(filename, [], note="not a Python notebook, nothing to lint")
    if not nb.source.strip():
        return FileResult(filename, [], note="no code cells, nothing to lint")
    result = lint_text(nb.source, filename, settings, parse=parse, positions=positions)
    broken = [(c, c.error) for c in nb.cells if c.error is not None]
    if broken and settings.codes_for(filename) and not file_noqa(nb.source) \
            and any(FRAMEWORK_RE.search(c.text) for c in nb.cells):
        for cell, (row, col, msg) in broken:
            result.findings.append(meta_finding("TL001", filename, msg, cell.start + row - 1, col))
    return result


def changed_cells(old: str, new: str) -> list[tuple[int, str, str]]:
    """(cell index among all cells, 1-based; old source; new source) of each cell whose source differs
    between two versions of a notebook's JSON text (what ``--diff`` shows of a fixed notebook)."""
    before = json.loads(old).get("cells", [])
    after = json.loads(new).get("cells", [])
    out = []
    for i, (a, b) in enumerate(zip(before, after), 1):
        if isinstance(a, dict) and isinstance(b, dict) and a.get("source") != b.get("source"):
            out.append((i, _cell_text(a), _cell_text(b)))
    return out


def fix_notebook_text(text: str, fix_source: Callable[[str], str]) -> str:
    """Run ``fix_source`` (Python source → fixed Python source) on the notebook's virtual module
    and return the rewritten notebook JSON (``text`` unchanged when nothing changed)."""
    nb = parse_notebook(text)
    new = fix_source(nb.source)
    if new == nb.source:
        return text
    return nb.with_source(new)
