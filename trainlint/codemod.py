"""Small, formatting-preserving building blocks rules use to build their autofixes.

Every helper returns :class:`~trainlint.context.PendingEdit`\\ s expressed against the nodes of the
file (positions are resolved by the engine), or ``None`` when the fix cannot be made safely (a name
is taken, a call shape is unusual) — the rule then reports without a fix. Edits touch as little text
as possible: a renamed keyword replaces only the keyword, a new keyword is inserted after the last
argument, an import is added after the module's imports.
"""

from __future__ import annotations

import libcst as cst

from trainlint.context import Context, PendingEdit
from trainlint.facts import iter_nodes

_EMPTY = cst.Module([])


def render(node: cst.CSTNode, indent: str = "") -> str:
    """The code of ``node``; ``indent``: the indentation of its block, for nodes spanning lines."""
    if not indent:
        return _EMPTY.code_for_node(node)
    from libcst._nodes.internal import CodegenState

    state = CodegenState(default_indent="    ", default_newline="\n", indent_tokens=[indent])
    node._codegen(state)
    return "".join(state.tokens)


def name_is_free(ctx: Context, name: str) -> bool:
    """``name`` is neither imported nor bound anywhere in the file."""
    if name in ctx.facts.imports.names:
        return False
    return not any(name in names for names in ctx.facts.bindings.values())


def local_name(ctx: Context, qualname: str) -> str | None:
    """An expression naming ``qualname`` through the file's own imports (``numpy.argmax`` →
    ``np.argmax`` after ``import numpy as np``), or None."""
    names = ctx.facts.imports.names
    best = None
    for local, q in names.items():
        if q == qualname:
            return local
        if qualname.startswith(q + "."):
            cand = local + qualname[len(q):]
            if best is None or len(cand) < len(best):
                best = cand
    return best


def ensure_name(ctx: Context, qualname: str, statement: str, expr: str) -> tuple[str, PendingEdit | None] | None:
    """How to spell ``qualname`` here: through an existing import, else ``expr`` with ``statement``
    added (e.g. ``("numpy.argmax", "import numpy as np", "np.argmax")``). None when ``expr``'s
    first name is already taken by something else."""
    have = local_name(ctx, qualname)
    if have is not None:
        return have, None
    if not name_is_free(ctx, expr.split(".")[0]):
        return None
    return expr, ctx.add_import(statement)


def rename(node: cst.CSTNode, new: str) -> PendingEdit:
    return PendingEdit(node, new)


def add_keyword(ctx: Context, call: cst.Call, name: str, value: str) -> PendingEdit:
    """Add ``name=value`` as the call's last argument, in the call's own layout (one argument per
    line stays one per line; a trailing comma stays)."""
    return add_keywords(ctx, call, [(name, value)])


def add_keywords(ctx: Context, call: cst.Call, pairs: list[tuple[str, str]]) -> PendingEdit:
    """Add ``name=value`` for each pair after the call's last argument (one edit)."""
    args = list(call.args)
    if not args:
        no_space = cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace(""))
        new = [cst.Arg(cst.parse_expression(v), keyword=cst.Name(n), equal=no_space) for n, v in pairs]
        new = [a.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))) for a in new[:-1]] + new[-1:]
        return PendingEdit(call, render(call.with_changes(args=new)))
    last = args[-1]
    sep = " "
    if len(args) > 1 and isinstance(args[-2].comma, cst.Comma):
        sep = _whitespace(ctx, call, args[-2].comma.whitespace_after)
    elif "\n" in render(call.whitespace_before_args):
        sep = _whitespace(ctx, call, call.whitespace_before_args)
    elif isinstance(last.comma, cst.Comma) and "\n" in render(last.comma.whitespace_after):
        sep = _whitespace(ctx, call, last.comma.whitespace_after) + " " * 4  # the bracket's indentation + 1 level
    return PendingEdit(last.value, "".join(f",{sep}{n}={v}" for n, v in pairs), mode="end")


def block_indent(ctx: Context, node: cst.CSTNode) -> str:
    """The indentation of the block that holds ``node`` (a recorded node, e.g. a Call)."""
    where = ctx.facts.where.get(node)
    out = ""
    for b in where.blocks if where else ():
        body = getattr(b, "body", None)
        if isinstance(body, cst.IndentedBlock):
            out += body.indent if body.indent is not None else ctx.module.default_indent
    return out


def _whitespace(ctx: Context, at: cst.CSTNode, ws: cst.BaseParenthesizableWhitespace) -> str:
    """The source text of ``ws`` inside ``at``: an indented line inside brackets also carries the
    indentation of the enclosing block, which rendering the node alone would lose."""
    text = render(ws)
    if isinstance(ws, cst.ParenthesizedWhitespace) and ws.indent and "\n" in text:
        i = text.rindex("\n") + 1
        text = text[:i] + block_indent(ctx, at) + text[i:]
    return text


def replace_import_alias(ctx: Context, stmt: cst.ImportFrom, alias: cst.ImportAlias,
                         replacement: str | None, fallback: str = "pass") -> list[PendingEdit] | None:
    """Take ``alias`` out of ``from m import …``. With ``replacement`` (a statement, e.g.
    ``from torch.optim import AdamW``) the statement is replaced when the alias is its only name,
    else the replacement is added after the imports. Without, a module-level line left empty is
    deleted; a nested one becomes ``fallback``."""
    names = list(stmt.names) if not isinstance(stmt.names, cst.ImportStar) else []
    if alias not in names:
        return None
    if len(names) == 1:
        if replacement is not None:
            return [PendingEdit(stmt, replacement)]
        line = _statement_line(ctx, stmt)
        if line is None:
            return [PendingEdit(stmt, fallback)]
        return [PendingEdit(line, "", mode="delete_line")]
    i = names.index(alias)
    rest = names[:i] + names[i + 1:]
    if i == len(names) - 1:
        # `from m import a, b` → `from m import a`: the new last name ends as the removed one did
        rest[-1] = rest[-1].with_changes(comma=alias.comma)
    edits = [PendingEdit(stmt, render(stmt.with_changes(names=rest), block_indent(ctx, stmt)))]
    if replacement is not None:
        add = ctx.add_import(replacement)
        if add is not None:
            edits.append(add)
    return edits


def _statement_line(ctx: Context, stmt: cst.BaseSmallStatement) -> cst.SimpleStatementLine | None:
    """The module-level line that holds only ``stmt`` (so deleting the line leaves valid code)."""
    for line in ctx.module.body:
        if isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 and line.body[0] is stmt:
            return line if len(ctx.module.body) > 1 else None
    return None


def name_uses(ctx: Context, name: str) -> tuple[list[cst.Name], int]:
    """(Names used as the callee ``name(...)``, how many other loads of ``name`` there are)."""
    calls = [c.func for c in ctx.facts.index.get("Call", ()) if isinstance(c.func, cst.Name) and c.func.value == name]
    call_ids = {id(n) for n in calls}
    excluded: set[int] = set()
    total = []
    for n in iter_nodes(ctx.module, (cst.Name, cst.Attribute, cst.Arg, cst.ImportAlias, cst.Param,
                                     cst.FunctionDef, cst.ClassDef, cst.Import, cst.ImportFrom)):
        if isinstance(n, cst.Attribute):
            excluded.add(id(n.attr))
        elif isinstance(n, cst.Arg) and n.keyword is not None:
            excluded.add(id(n.keyword))
        elif isinstance(n, (cst.Import, cst.ImportFrom)):
            for sub in iter_nodes(n, (cst.Name,)):
                excluded.add(id(sub))
        elif isinstance(n, (cst.Param, cst.FunctionDef, cst.ClassDef)):
            excluded.add(id(n.name))
        elif isinstance(n, cst.Name) and n.value == name:
            total.append(n)
    others = sum(1 for n in total if id(n) not in excluded and id(n) not in call_ids)
    return calls, others


def keras_prefix(ctx: Context, submodule: str, add: bool = True) -> tuple[str, PendingEdit | None] | None:
    """How this file spells ``keras.<submodule>`` (``losses``/``optimizers``): ``tf.keras.losses``
    after ``import tensorflow as tf``, ``keras.losses`` after ``import keras`` or ``from tensorflow
    import keras``, ``losses`` after ``from keras import losses``; else ``tf.keras.<submodule>``
    with ``import tensorflow as tf`` added."""
    names = ctx.facts.imports.names
    prefs = []
    for local, q in names.items():
        for base in ("tensorflow.keras", "tf_keras", "keras"):
            if q == f"{base}.{submodule}":
                prefs.append((0, local))
            elif q == base:
                prefs.append((1, f"{local}.{submodule}"))
        if q == "tensorflow":
            prefs.append((2, f"{local}.keras.{submodule}"))
    if prefs:
        return sorted(prefs)[0][1], None
    if not add or not name_is_free(ctx, "tf"):
        return None
    return f"tf.keras.{submodule}", ctx.add_import("import tensorflow as tf")
