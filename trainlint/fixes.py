"""Applying autofixes: edits → new source, a unified diff, an atomic file write.

The library API the CLI (``--fix`` / ``--unsafe-fixes`` / ``--diff``) and the language server's
code actions share:

* :func:`apply_fixes` applies the fixes of some findings to one source, in one pass, skipping a fix
  whose edits overlap an edit already applied (it is applied by a later pass, on the re-linted
  source, like ruff).
* :func:`fix_source` lints, applies, re-lints … until nothing changes (at most ``MAX_PASSES``).
* :func:`to_unified_diff` renders the change.
* :func:`fix_file` does all of it for a file on disk and writes it atomically (a temporary file in
  the same directory, then ``os.replace``), keeping its permissions, line endings and UTF-8 BOM.

Positions are those of :class:`~trainlint.findings.Edit`: 1-based row and column, columns counting
characters (code points), end exclusive.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
import stat
import tempfile
from pathlib import Path
from collections.abc import Iterable

from trainlint.findings import Applicability, Edit, Finding, Fix

#: a fixed source is re-linted and fixed again until stable, at most this many times
MAX_PASSES = 10

_LINE_RE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_BOM = b"\xef\xbb\xbf"


def applicable(fix: Fix | None, unsafe: bool) -> bool:
    """Whether ``fix`` is applied with or without ``--unsafe-fixes``."""
    if fix is None or not fix.edits:
        return False
    return fix.applicability is Applicability.SAFE or (unsafe and fix.applicability is Applicability.UNSAFE)


def newline_of(source: str) -> str:
    """The line ending of ``source``: that of its first line (``"\\n"`` when it has none)."""
    m = re.search(r"\r\n|\r|\n", source)
    return m.group(0) if m else "\n"


def _line_starts(source: str) -> list[int]:
    """Offset of the start of each line (index 0 = line 1); one more entry for the end."""
    starts = [0]
    for m in _LINE_RE.finditer(source):
        if m.group(0).endswith(("\n", "\r")):
            starts.append(m.end())
    return starts


class _Offsets:
    def __init__(self, source: str) -> None:
        self.source = source
        self.starts = _line_starts(source)

    def __call__(self, row: int, column: int) -> int:
        """Offset of a 1-based (row, column); clamped to the source."""
        if row < 1:
            return 0
        if row > len(self.starts):
            return len(self.source)
        start = self.starts[row - 1]
        end = self.starts[row] if row < len(self.starts) else len(self.source)
        return min(start + max(column - 1, 0), end)


def _content(edit: Edit, newline: str) -> str:
    """The edit's text with the file's line endings."""
    if newline == "\n" or "\n" not in edit.content:
        return edit.content
    return re.sub(r"\r\n|\r|\n", newline, edit.content)


def _spans(edits: Iterable[Edit], offset: _Offsets, newline: str) -> list[tuple[int, int, str]]:
    """A fix's edits as (start offset, end offset, text) in ``offset``'s source, sorted."""
    spans = []
    for e in edits:
        s, t = offset(e.start.row, e.start.column), offset(e.end.row, e.end.column)
        spans.append((s, max(s, t), _content(e, newline)))
    return sorted(spans, key=lambda x: (x[0], x[1]))


def _apply_whole(source: str, groups: list[list[Edit]]) -> tuple[str, list[int]]:
    """THE edit-application path: apply each group of edits (the edits of one fix) whole or not at all.

    Groups are taken in order of their first edit (ties: their order in ``groups``); a group whose
    edits overlap an edit already applied is left out (an edit identical to one already applied, e.g.
    the same added import, counts as applied; two different insertions at one point overlap: their
    order would be unclear). Returns the new source and the indices of the groups applied, in the
    order they were taken."""
    offset = _Offsets(source)
    newline = newline_of(source)
    candidates = []
    for i, edits in enumerate(groups):
        spans = _spans(edits, offset, newline)
        if spans:
            candidates.append((spans[0][0], spans[0][1], i, spans))
    candidates.sort(key=lambda c: (c[0], c[1], c[2]))
    applied_spans: list[tuple[int, int, str]] = []
    applied: list[int] = []
    for _, _, i, spans in candidates:
        new_spans: list[tuple[int, int, str]] = []
        for span in spans:
            if span in applied_spans or span in new_spans:
                continue  # the same edit (e.g. the same import) is already there
            if any(_overlaps(span, other) for other in applied_spans + new_spans):
                break
            new_spans.append(span)
        else:
            applied_spans.extend(new_spans)
            applied.append(i)
    if not applied_spans:
        return source, applied
    # apply from the end so earlier offsets stay valid
    out = source
    for s, t, text in sorted(applied_spans, key=lambda x: (x[0], x[1]), reverse=True):
        out = out[:s] + text + out[t:]
    return out, applied


def apply_fixes(source: str, findings: Iterable[Finding], unsafe: bool = False) -> tuple[str, list[Finding]]:
    """Apply the fixes of ``findings`` to ``source`` in one pass.

    Only safe fixes are applied, unsafe ones too with ``unsafe``. Fixes are taken in order of their
    first edit; a fix whose edits overlap an edit already applied is left for a later pass (an edit
    identical to one already applied, e.g. the same added import, counts as applied). A fix is
    applied whole or not at all. Returns the new source and the findings whose fix was applied.

    ``--fix``, ``--diff``, the language server's quick fix and "fix all", the ``full`` format's
    preview and rdjson's suggestions all apply edits through here.
    """
    chosen = sorted((f for f in findings if applicable(f.fix, unsafe)), key=Finding.sort_key)
    new, applied = _apply_whole(source, [list(f.fix.edits) for f in chosen if f.fix is not None])
    return new, [chosen[i] for i in applied]


def apply_edits(source: str, edits: Iterable[Edit]) -> str:
    """``source`` with ``edits`` (the edits of one change) applied together; ``source`` unchanged
    when they overlap one another (a change is applied whole or not at all)."""
    return _apply_whole(source, [list(edits)])[0]


def _overlaps(a: tuple[int, int, str], b: tuple[int, int, str]) -> bool:
    (s1, e1, _), (s2, e2, _) = a, b
    if s1 == e1 and s2 == e2:
        return s1 == s2  # two different insertions at one point: their order is unclear
    if s1 == e1:
        return s2 < s1 < e2
    if s2 == e2:
        return s1 < s2 < e1
    return s1 < e2 and s2 < e1


@dataclasses.dataclass
class FixResult:
    source: str  # the fixed source (the original when nothing was applied)
    fixed: list[Finding]  # the findings whose fix was applied, over all passes
    remaining: list[Finding]  # the findings of the fixed source
    #: a fix produced code that does not parse: that pass was dropped (a bug in a rule)
    error: str | None = None

    @property
    def changed(self) -> bool:
        return bool(self.fixed)


def fix_source(source: str, filename: str, settings, unsafe: bool = False,
               findings: list[Finding] | None = None, max_passes: int = MAX_PASSES) -> FixResult:
    """Lint ``source``, apply the applicable fixes, and repeat on the result until stable.

    ``findings`` are those of ``source`` when the caller has already linted it. A pass whose result
    does not parse (while the input did) is dropped and fixing stops.
    """
    from trainlint.engine import lint_text

    if findings is None:
        findings = lint_text(source, filename, settings).findings
    fixed: list[Finding] = []
    current = source
    error = None
    for _ in range(max_passes):
        new, applied = apply_fixes(current, findings, unsafe)
        if not applied or new == current:
            break
        problem = _syntax_error(new)
        if problem is not None and _syntax_error(current) is None:
            error = (f"fixing {', '.join(sorted({f.code for f in applied}))} produced code that does not parse "
                     f"({problem}); those fixes were not applied — please report this trainlint bug")
            break
        result = lint_text(new, filename, settings)
        fixed.extend(applied)
        current, findings = new, result.findings
    else:
        if any(applicable(f.fix, unsafe) for f in findings):
            # a fix that does not silence its finding would be applied again and again: keep the original
            codes = ", ".join(sorted({f.code for f in findings if applicable(f.fix, unsafe)}))
            error = (f"the fixes of {codes} did not converge after {max_passes} passes; nothing was changed — "
                     "please report this trainlint bug")
            return FixResult(source, [], lint_text(source, filename, settings).findings, error)
    return FixResult(current, fixed, findings, error)


def _syntax_error(source: str) -> str | None:
    """Why ``source`` does not parse (as Python, and for LibCST), or None."""
    import ast

    import libcst as cst

    try:
        ast.parse(source)
        cst.parse_module(source)
    except SyntaxError as exc:
        return f"line {exc.lineno}: {exc.msg}"
    except cst.ParserSyntaxError as exc:
        return f"line {exc.raw_line}: {str(exc.message).strip().splitlines()[0] if exc.message else 'syntax error'}"
    except (RecursionError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def preview(finding: Finding, source: str) -> list[str]:
    """The lines a finding's fix changes, as diff lines (``@@ …``, ``-old``, ``+new``; no file
    headers): what ``--output-format full`` shows under the finding."""
    if finding.fix is None or finding.cell is not None:
        return []
    new, applied = apply_fixes(source, [finding], unsafe=True)
    if not applied:
        return []
    diff = to_unified_diff(source, new, finding.filename, context=0)
    return [line for line in diff.splitlines() if not line.startswith(("--- ", "+++ "))]


def fix_text(text: str, filename: str, settings, unsafe: bool = False) -> str:
    """The fixed source (the language server's "fix all" action)."""
    return fix_source(text, filename, settings, unsafe).source


def to_unified_diff(old: str, new: str, filename: str = "<stdin>", context: int = 3) -> str:
    """A unified diff of ``old`` → ``new`` (``--- a/`` and ``+++ b/`` headers; "" when equal)."""
    if old == new:
        return ""
    a = [m.group(0) for m in _LINE_RE.finditer(old)]
    b = [m.group(0) for m in _LINE_RE.finditer(new)]
    out = []
    for line in difflib.unified_diff(a, b, f"a/{filename}", f"b/{filename}", n=context):
        if line.startswith(("---", "+++", "@@")):
            out.append(line if line.endswith("\n") else line + "\n")
        elif not line.endswith(("\n", "\r")):
            out.append(line + "\n\\ No newline at end of file\n")
        else:
            out.append(line)
    return "".join(out)


# ---------------------------------------------------------------------------------------------
# Files.


@dataclasses.dataclass
class FileFix:
    path: Path
    display: str
    original: str
    result: FixResult
    written: bool = False

    @property
    def diff(self) -> str:
        """A unified diff of the fix; for a notebook, one per changed cell (``--- a/x.ipynb:cell 5``), of
        the cell's source: a compact one-line notebook shows the edited lines, not the whole file."""
        if self.path.suffix != ".ipynb" or self.original == self.result.source:
            return to_unified_diff(self.original, self.result.source, self.display)
        from trainlint.notebook import changed_cells

        return "".join(to_unified_diff(old, new, f"{self.display}:cell {index}")
                       for index, old, new in changed_cells(self.original, self.result.source))


def _read_text_encoding(path: Path) -> tuple[str, bool, str]:
    """(text, BOM?, encoding): UTF-8, or the PEP 263 encoding the file declares (written back in it)."""
    data = path.read_bytes()
    bom = data.startswith(_BOM)
    if bom:
        return data[len(_BOM):].decode("utf-8"), True, "utf-8"
    try:
        return data.decode("utf-8"), False, "utf-8"
    except UnicodeDecodeError:
        from trainlint.core import declared_encoding

        declared = declared_encoding(data)
        if declared is None:
            raise
        return data.decode(declared), False, declared


def write_atomic(path: Path, text: str, bom: bool = False, encoding: str = "utf-8") -> None:
    """Replace ``path``'s content with ``text`` atomically: a temporary file in the same directory,
    flushed to disk, given the original's permission bits, then ``os.replace``. A symlink is
    followed (its target is rewritten). On any error the original is left untouched."""
    target = Path(os.path.realpath(path))
    data = (_BOM if bom else b"") + text.encode(encoding)
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = None
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".trainlint-tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def fix_file(path: Path, settings, unsafe: bool = False, write: bool = True, display: str | None = None,
             findings: list[Finding] | None = None) -> FileFix:
    """Fix one ``.py`` file (or ``.ipynb`` notebook); write it (atomically) when ``write`` and
    something changed."""
    display = display or str(path)
    original, bom, encoding = _read_text_encoding(path)
    if path.suffix == ".ipynb":
        result = fix_notebook(original, display, settings, unsafe)
    else:
        result = fix_source(original, display, settings, unsafe, findings)
    ff = FileFix(path, display, original, result)
    if write and result.source != original:
        write_atomic(path, result.source, bom, encoding)
        ff.written = True
    return ff


def fix_notebook(text: str, display: str, settings, unsafe: bool) -> FixResult:
    """Fix the code cells of a notebook (through its virtual module); outputs and metadata kept.
    ``FixResult.source`` is the notebook's JSON text; ``remaining`` name cell and row."""
    from trainlint.notebook import fix_notebook_text, lint_notebook_text

    passes: list[FixResult] = []

    def fix_module(source: str) -> str:
        passes.append(fix_source(source, display, settings, unsafe))
        return passes[-1].source

    new = fix_notebook_text(text, fix_module)
    remaining = lint_notebook_text(new, display, settings).findings
    done = passes[-1] if passes else None
    return FixResult(new, done.fixed if done else [], remaining, done.error if done else None)
