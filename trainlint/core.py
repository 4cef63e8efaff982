"""The static pass over one source text: cheap text check → parse once → walk once → rules → noqa →
findings; and reading a source file. :mod:`trainlint.engine` is the API over it (files, notebooks,
directories, worker processes, the cache)."""

from __future__ import annotations

import dataclasses
import re
import stat
import traceback
from pathlib import Path

import libcst as cst

from trainlint.config import Settings
from trainlint.context import Context, PendingEdit, PendingFix
from trainlint.facts import FACT_TYPES, Facts, walk
from trainlint.facts.imports import implied_modules
from trainlint.findings import Edit, Finding, Fix, Position
from trainlint.noqa import file_noqa, noqa_lines, suppressed
from trainlint.rule import Rule, all_rules
from trainlint.syntax import Respaced, cpython_error, mask_ipython_lines, respace_indentation, syntax_error

#: A file that mentions none of these is not a training script: it is not parsed at all. (A snippet
#: that never imports its framework still says `from_pretrained` or `load_dataset`.)
FRAMEWORK_RE = re.compile(
    r"\b(?:torch|tensorflow|keras|tf_keras|transformers|datasets|evaluate|accelerate|trl|peft|from_pretrained|load_dataset)\b"
)
_STRING = (
    r'"""(?:[^"\\]|\\.|"(?!""))*+(?:"""|\Z)'
    r"|'''(?:[^'\\]|\\.|'(?!''))*+(?:'''|\Z)"
    r'|"(?:[^"\\\n]|\\.)*+"?'
    r"|'(?:[^'\\\n]|\\.)*+'?"
)
#: Comments and string literals (their prefixes stay behind as harmless one-letter words). An
#: f-string is kept whole (group ``f``): the code in its braces counts, its text words harmlessly
#: too. Possessive repeats: an unterminated string costs one scan, never a backtracking storm.
_NOT_CODE_RE = re.compile(
    rf"(?P<f>(?:[fF][rR]?|[rR][fF])(?:{_STRING}))|#[^\n]*+|{_STRING}",
    re.DOTALL,
)
_WORD_RE = re.compile(r"[^\W\d]\w*")


@dataclasses.dataclass
class FileResult:
    filename: str
    findings: list[Finding]
    #: an internal error (a rule raised): the run exits 2, other findings are kept
    internal_error: bool = False
    #: a one-line note for the user that is not a finding (e.g. "empty file")
    note: str | None = None
    #: parsed by LibCST (the rules ran)
    parsed: bool = False
    #: only syntax-checked by CPython's parser (no enabled rule's gate opened)
    syntax_checked: bool = False
    #: False: the text names no ML framework (:data:`FRAMEWORK_RE`), so it is not a training script and
    #: was not analysed at all (not even its syntax); the summary says so instead of "All checks passed!"
    training: bool = True


def lint_source(source: str, filename: str = "<stdin>", settings: Settings | None = None) -> list[Finding]:
    """Lint one source string; the findings, sorted by position."""
    return lint_text(source, filename, settings or Settings()).findings


def lint_text(source: str, filename: str, settings: Settings, *, raise_errors: bool = False,
              parse=None, positions=None) -> FileResult:
    """``parse``: a replacement for ``libcst.parse_module`` (the language server's incremental
    parser, which reuses the unchanged statements of the previous version); ``positions``:
    ``(module, source, nodes)`` → their ranges, or None (its parser's ranges of unchanged statements)."""
    if file_noqa(source):
        return FileResult(filename, [])
    enabled = settings.codes_for(filename)
    if not enabled:
        return FileResult(filename, [])
    if not FRAMEWORK_RE.search(source):
        return FileResult(filename, [], training=False)
    rules = [r for code, r in all_rules().items() if code in enabled and r.has_static_check()]
    if settings.gate:
        words = code_words(source)
        rules = [r for r in rules if r.gate_open(words)]
    masked = mask_ipython_lines(source)
    if masked is not None:
        return _ipython_script(masked, source, filename, settings, raise_errors=raise_errors)
    nested = _deeply_nested(source)
    if not rules or nested:
        # No rule can fire (or LibCST would choke on the nesting): CPython's parser, ~10x faster
        # than LibCST's, is enough to report a syntax error in a training script (LibCST's newer
        # grammar is asked only on that error path, and never about a text it would choke on).
        error = _cpython_syntax_finding(source, filename, newer_grammar=not nested)
        if error is not None or not rules:
            return FileResult(filename, [error] if error else [], syntax_checked=True)
    respaced = None
    try:
        module = (parse or cst.parse_module)(source)
    except cst.ParserSyntaxError as exc:
        if cpython_error(source, filename) is not None:
            return FileResult(filename, [_syntax_finding(source, filename, exc)], parsed=False)
        # CPython compiles what LibCST's tokenizer refuses (tabs and spaces it counts otherwise): read it
        # with the indentation in spaces, and place the findings back on the original columns
        respaced = respace_indentation(source)
        if respaced is None:
            return FileResult(filename, [], note=_NOT_ANALYSED)
        try:
            module = cst.parse_module(respaced.source)
        except cst.ParserSyntaxError:
            return FileResult(filename, [], note=_NOT_ANALYSED)
    except RecursionError:
        return FileResult(filename, [meta_finding("TL001", filename, "cannot parse: the expression nesting is too deep", 1, 1)])
    result = FileResult(filename, [], parsed=True)
    if not rules:
        return result
    text = respaced.source if respaced is not None else source
    try:
        ctx = _run_rules(module, text, filename, settings, rules, result)
    except RecursionError:
        result.findings.append(meta_finding("TL003", filename, "internal error: nesting too deep to analyse", 1, 1))
        result.internal_error = True
        return result
    if ctx.reports:
        found = _resolve(ctx, module, text, filename, enabled, positions if respaced is None else None)
        if respaced is not None:
            found = [_placed_back(f, respaced) for f in found]
        result.findings.extend(found)
    result.findings.sort(key=Finding.sort_key)
    return result


def _ipython_script(masked: tuple[str, frozenset[int]], source: str, filename: str, settings: Settings, *,
                    raise_errors: bool) -> FileResult:
    """A percent-format script with IPython lines, linted with those lines as ``pass``; a fix that would
    edit one of them is dropped (its edits were written against the ``pass``)."""
    text, rows = masked
    result = lint_text(text, filename, settings, raise_errors=raise_errors)
    result.findings = [
        dataclasses.replace(f, fix=None)
        if f.fix is not None and any(r in rows for e in f.fix.edits for r in range(e.start.row, e.end.row + 1))
        else f
        for f in result.findings
    ]
    return result


_NOT_ANALYSED = "not analysed: Python compiles this file, but LibCST, which trainlint reads it with, cannot parse it"


def _placed_back(f: Finding, respaced: Respaced) -> Finding:
    """A finding of the respaced text on the original columns, without its fix (the fix's edits were
    written against the respaced text)."""
    start = Position(f.start.row, respaced.column(f.start.row, f.start.column))
    end = Position(f.end.row, respaced.column(f.end.row, f.end.column))
    return dataclasses.replace(f, start=start, end=end, fix=None)


def _run_rules(module, source, filename, settings, rules: list[type[Rule]], result: FileResult) -> Context:
    dispatch: dict[str, list] = {}
    instances: list[Rule] = []
    types = set(FACT_TYPES)
    for rule_cls in rules:
        types.update(rule_cls.visit_methods())
    index, where = walk(module, frozenset(types))
    facts = Facts(module, index, where)
    ctx = Context(facts, settings, filename, source)
    for rule_cls in rules:
        inst = rule_cls(ctx)
        instances.append(inst)
        for tname, meth in rule_cls.visit_methods().items():
            dispatch.setdefault(tname, []).append(getattr(inst, meth))
    # nodes in document order, each handed to the rules that asked for its type
    nodes = [n for t in dispatch for n in index.get(t, ())]
    nodes.sort(key=lambda n: where[n].order)
    failed: set[str] = set()
    for node in nodes:
        for method in dispatch[type(node).__name__]:
            code = method.__self__.code
            if code in failed:
                continue
            try:
                method(node)
            except Exception as exc:  # a bug in a rule must not lose the other findings
                failed.add(code)
                _internal_error(result, filename, code, exc)
    for inst in instances:
        finish = getattr(inst, "finish", None)
        if finish is not None and inst.code not in failed:
            try:
                finish()
            except Exception as exc:
                _internal_error(result, filename, inst.code, exc)
    return ctx


def _internal_error(result: FileResult, filename: str, code: str, exc: BaseException) -> None:
    result.internal_error = True
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" ({Path(tb[-1].filename).name}:{tb[-1].lineno})" if tb else ""
    result.findings.append(
        meta_finding("TL003", filename, f"internal error in rule {code}: {type(exc).__name__}: {exc}{where}", 1, 1)
    )


#: CPython's tokenizer refuses more than 200 nested brackets; LibCST's native parser does not
#: check and can overflow the C stack (a segfault) on a few thousand, so deeper text is refused first.
MAX_NESTING = 200
#: Long operator chains nest too (``x + x + ...`` is a left-deep tree): LibCST crashes at some
#: thousands of operators in one statement. A statement longer than this many characters (one
#: bracketed group, or one logical line) is therefore checked by CPython's parser first (~1 % of
#: real files: big literal tables).
MAX_STATEMENT_CHARS = 4000
_BRACKET_RE = re.compile(r"[()\[\]{}]")


def _deeply_nested(source: str) -> bool:
    """A cheap over-estimate: brackets in strings and comments count too."""
    depth = 0
    start = 0
    for m in _BRACKET_RE.finditer(source):
        if m.group() in "([{":
            if not depth:
                start = m.start()
            depth += 1
            if depth > MAX_NESTING:
                return True
        elif depth:
            depth -= 1
            if not depth and m.start() - start > MAX_STATEMENT_CHARS:
                return True
    if len(source) <= MAX_STATEMENT_CHARS:
        return False
    logical = source
    if "\\\n" in source or "\\\r" in source:  # backslash continuations join lines
        logical = source.replace("\\\r\n", "").replace("\\\n", "")
    return max(map(len, logical.split("\n"))) > MAX_STATEMENT_CHARS


def code_words(source: str) -> set[str]:
    """The identifiers of a file's code (what rule gates look at): comments and strings removed."""
    words = set(_WORD_RE.findall(_NOT_CODE_RE.sub(r"\g<f> ", source)))
    words |= implied_modules(words)  # `AutoTokenizer` unimported: the facts resolve it to transformers
    return words


def _cpython_syntax_finding(source: str, filename: str, newer_grammar: bool = True) -> Finding | None:
    """TL001 when the text is Python for no interpreter trainlint knows (CPython's parser refuses it, and so
    does LibCST's grammar of the newest Python, asked unless ``newer_grammar`` is False); None when one of
    them accepts it."""
    err = syntax_error(source, filename, newer_grammar=newer_grammar)
    if err is None:
        return None
    if err.lineno is None:
        return meta_finding("TL001", filename, f"cannot parse: {err.msg}", 1, 1)
    return meta_finding("TL001", filename, f"cannot parse: SyntaxError: {err.msg}", err.lineno, err.offset or 1)


def _syntax_finding(source: str, filename: str, exc: cst.ParserSyntaxError) -> Finding:
    """One TL001 finding. CPython's own parser points at the offending token more precisely than
    LibCST's, so ask it (only on this error path); fall back to LibCST's location."""
    try:
        compile(source, filename, "exec", flags=0x400, dont_inherit=True)  # ast.PyCF_ONLY_AST
    except SyntaxError as err:
        if err.lineno:
            return meta_finding("TL001", filename, f"cannot parse: SyntaxError: {err.msg}", err.lineno, err.offset or 1)
    except (ValueError, RecursionError, MemoryError):
        pass
    msg = str(exc.message).strip().splitlines()[0] if exc.message else "syntax error"
    return meta_finding("TL001", filename, f"cannot parse: {msg}", exc.raw_line, exc.raw_column + 1)


def meta_finding(code: str, filename: str, message: str, row: int, col: int) -> Finding:
    rule = all_rules()[code]
    pos = Position(max(row, 1), max(col, 1))
    return Finding(code, rule.name, message, rule.severity, filename, pos, pos)


# ---------------------------------------------------------------------------------------------
# Positions, fixes and suppression: only for files that have findings.


def _resolve(ctx: Context, module: cst.Module, source: str, filename: str, enabled: frozenset[str],
             known=None) -> list[Finding]:
    from trainlint.positions import positions_of

    # ranges of the reported nodes and of the fixes' nodes only (a full PositionProvider pass
    # was half of a re-lint in the language server)
    wanted = [rep.node for rep in ctx.reports]
    wanted += [e.node for rep in ctx.reports if rep.fix for e in rep.fix.edits if e.node is not None]
    positions = (known(module, source, wanted) if known is not None else None) or positions_of(module, wanted)
    noqa = noqa_lines(source)
    out: list[Finding] = []
    seen: set[tuple] = set()
    for rep in ctx.reports:
        code = rep.rule.code
        if code not in enabled:
            continue
        rng = positions[rep.node]
        start = Position(rng.start.line, rng.start.column + 1)
        end = Position(rng.end.line, rng.end.column + 1)
        if suppressed(noqa.get(start.row), code):
            continue
        key = (code, start, rep.message)
        if key in seen:
            continue
        seen.add(key)
        fix = _resolve_fix(rep.fix, positions, source) if rep.fix else None
        out.append(Finding(code, rep.rule.name, rep.message, rep.severity, filename, start, end, fix=fix, hint=rep.hint))
    return out


def _resolve_fix(fix: PendingFix, positions, source: str) -> Fix:
    edits = []
    for e in fix.edits:
        edits.append(_resolve_edit(e, positions))
    return Fix(fix.applicability, fix.message, tuple(sorted(edits, key=lambda e: (e.start, e.end))))


def _resolve_edit(e: PendingEdit, positions) -> Edit:
    if e.mode == "module_start":
        p = Position(1, 1)
        return Edit(p, p, e.content)
    rng = positions[e.node]
    start = Position(rng.start.line, rng.start.column + 1)
    end = Position(rng.end.line, rng.end.column + 1)
    if e.mode == "replace":
        return Edit(start, end, e.content)
    if e.mode == "before":
        return Edit(start, start, e.content)
    if e.mode == "end":  # right after the node (e.g. a new keyword after the last argument)
        return Edit(end, end, e.content)
    if e.mode == "delete_line":  # the node's whole lines, newline included
        return Edit(Position(start.row, 1), Position(end.row + 1, 1), e.content)
    # after a statement line: at the start of the next line
    nxt = Position(rng.end.line + 1, 1)
    return Edit(nxt, nxt, e.content)


# ---------------------------------------------------------------------------------------------
# Files.


#: LibCST needs ~550 bytes of memory per byte of source (a 10 MB file: 5.6 GB, a minute of CPU);
#: bigger files are generated data, reported as unreadable (TL002) rather than risk the machine.
MAX_FILE_BYTES = 4_000_000


def read_source(path: Path) -> tuple[str | None, str | None]:
    """(text, None) or (None, reason). Accepts a UTF-8 BOM; keeps line endings as they are."""
    try:
        st = path.stat()
        if stat.S_ISDIR(st.st_mode):
            return None, "is a directory"
        if not stat.S_ISREG(st.st_mode):  # opening a FIFO would wait for a writer forever
            return None, "not a regular file (a pipe, socket or device)"
        if st.st_size > MAX_FILE_BYTES:
            return None, (f"too large to analyse ({st.st_size / 1e6:.1f} MB; the limit is "
                          f"{MAX_FILE_BYTES / 1e6:.0f} MB): exclude it, it is not a training script")
        data = path.read_bytes()
    except IsADirectoryError:
        return None, "is a directory"
    except PermissionError:
        return None, "permission denied"
    except FileNotFoundError:
        return None, "no such file"
    except OSError as exc:
        return None, exc.strerror or str(exc)
    return decode_source(data)


def decode_source(data: bytes) -> tuple[str | None, str | None]:
    """A file's bytes (read from disk or from stdin) as text: (text, None) or (None, why it is no
    source text: too large, binary, not UTF-8 and no PEP 263 encoding declared)."""
    if len(data) > MAX_FILE_BYTES:
        return None, (f"too large to analyse ({len(data) / 1e6:.1f} MB; the limit is "
                      f"{MAX_FILE_BYTES / 1e6:.0f} MB): exclude it, it is not a training script")
    if b"\x00" in data[:8192]:
        return None, "binary file (contains NUL bytes)"
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        declared = declared_encoding(data)
        if declared is not None:  # PEP 263: `# -*- coding: latin-1 -*-` is valid Python
            try:
                return data.decode(declared), None
            except (UnicodeDecodeError, LookupError):
                pass
        line = data[: exc.start].count(b"\n") + 1
        return None, f"not valid UTF-8 (byte 0x{data[exc.start]:02x} on line {line}) and no encoding declared"
    return text, None


def declared_encoding(data: bytes) -> str | None:
    """The PEP 263 encoding declared on the first two lines, if any (and not UTF-8)."""
    import io
    import tokenize

    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError:
        return None
    return None if encoding in ("utf-8", "utf-8-sig") else encoding
