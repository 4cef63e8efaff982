"""A rule document (Markdown) rendered for the terminal: headings, paragraphs re-flowed to the width,
lists, tables as aligned columns and code blocks indented, without Markdown's markup (fences,
backticks, ``**``, ``#``, link syntax). With ``color``, ANSI styles mark headings, emphasis and code;
without, the text is plain.

Only the Markdown the rule documents use is understood; anything else is printed as it is.
"""

from __future__ import annotations

import re
import textwrap

_BOLD, _CODE, _HEADING, _DIM, _RESET = "\x1b[1m", "\x1b[36m", "\x1b[1;4m", "\x1b[2m", "\x1b[0m"

_FENCE_RE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>```+|~~~+)(?P<info>.*)$")
_HEADING_RE = re.compile(r"^(?P<hashes>#{1,6})[ \t]+(?P<text>.*?)[ \t#]*$")
_ITEM_RE = re.compile(r"^(?P<indent>[ \t]*)(?P<marker>[-*+]|\d+[.)])[ \t]+(?P<text>.*)$")
_TABLE_RE = re.compile(r"^[ \t]*\|.*\|[ \t]*$")
_TABLE_RULE_RE = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_INLINE_RE = re.compile(
    r"(?P<code>`+)(?P<code_text>.+?)(?P=code)"  # `code`, ``co`de``
    r"|\*\*(?P<bold>.+?)\*\*|__(?P<bold2>.+?)__"
    r"|(?<![\w*])\*(?P<em>[^*\s][^*]*?)\*(?![\w*])|(?<!\w)_(?P<em2>[^_\s][^_]*?)_(?!\w)"
    r"|\[(?P<link>[^\]]+)\]\((?P<url>[^)\s]+)\)"
)


def _inline(text: str, color: bool) -> str:
    def sub(m: re.Match) -> str:
        if m.group("code") is not None:
            body = m.group("code_text").strip() if m.group("code") != "`" else m.group("code_text")
            return f"{_CODE}{body}{_RESET}" if color else body
        if m.group("bold") is not None or m.group("bold2") is not None:
            body = _inline(m.group("bold") or m.group("bold2"), color)
            return f"{_BOLD}{body}{_RESET}" if color else body
        if m.group("em") is not None or m.group("em2") is not None:
            return _inline(m.group("em") or m.group("em2"), color)
        label, url = _inline(m.group("link"), color), m.group("url")
        if url.startswith(("http://", "https://")):
            return f"{label} <{url}>"
        code = re.fullmatch(r"(?:\.\./rules/|\./)?(TL\d{3})\.md(?:#.*)?", url)
        return f"{label} (`trainlint rule {code.group(1)}`)" if code and not color else (
            f"{label} ({_CODE}trainlint rule {code.group(1)}{_RESET})" if code else label)

    return _INLINE_RE.sub(sub, text)


def _visible_len(text: str) -> int:
    return len(re.sub(r"\x1b\[[0-9;]*m", "", text))


def _wrap(text: str, width: int, first: str, rest: str) -> list[str]:
    """Wrap text that may hold ANSI styles (they take no columns)."""
    words = text.split()
    lines: list[str] = []
    line, used = first, _visible_len(first)
    fresh = True
    for word in words:
        n = _visible_len(word)
        if not fresh and used + 1 + n > width:
            lines.append(line)
            line, used, fresh = rest, _visible_len(rest), True
        if fresh:
            line += word
            used += n
            fresh = False
        else:
            line += " " + word
            used += 1 + n
    lines.append(line)
    return lines


def _table(rows: list[str], color: bool) -> list[str]:
    cells = [[_inline(c.strip(), color) for c in row.strip().strip("|").split("|")] for row in rows
             if not _TABLE_RULE_RE.match(row)]
    if not cells:
        return []
    ncols = max(len(r) for r in cells)
    cells = [r + [""] * (ncols - len(r)) for r in cells]
    widths = [max(_visible_len(r[i]) for r in cells) for i in range(ncols)]

    def line(r: list[str]) -> str:
        return "  " + "  ".join(c + " " * (w - _visible_len(c)) for c, w in zip(r, widths)).rstrip()

    out = [line(cells[0])]
    if len(rows) > 1 and _TABLE_RULE_RE.match(rows[1]):  # a header row
        out[0] = f"{_BOLD}{out[0]}{_RESET}" if color else out[0]
        out.append("  " + "  ".join("-" * w for w in widths))
    out += [line(r) for r in cells[1:]]
    return out


def render(markdown: str, width: int = 100, color: bool = False) -> str:
    """The document as terminal text, re-flowed to ``width`` columns."""
    lines = markdown.replace("\r\n", "\n").split("\n")
    out: list[str] = []
    para: list[str] = []
    item: tuple[str, str, list[str]] | None = None  # (first-line prefix, continuation prefix, text)

    def flush() -> None:
        nonlocal para, item
        if para:
            out.extend(_wrap(_inline(" ".join(para), color), width, "", ""))
            para = []
        if item is not None:
            first, rest, words = item
            out.extend(_wrap(_inline(" ".join(words), color), width, first, rest))
            item = None

    def blank() -> None:
        if out and out[-1] != "":
            out.append("")

    i = 0
    while i < len(lines):
        raw = lines[i]
        stripped = raw.strip()
        fence = _FENCE_RE.match(raw)
        if fence:
            flush()
            close = fence.group("fence")
            body: list[str] = []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith(close):
                body.append(lines[i])
                i += 1
            i += 1  # the closing fence
            for b in textwrap.dedent("\n".join(body)).split("\n"):
                out.append(("    " + (f"{_CODE}{b}{_RESET}" if color and b else b)).rstrip())
            continue
        heading = _HEADING_RE.match(raw)
        if heading:
            flush()
            blank()
            text = _inline(heading.group("text"), False)
            if color:
                out.append(f"{_HEADING}{text}{_RESET}")
            else:
                out += [text, ("=" if len(heading.group("hashes")) == 1 else "-") * len(text)]
            i += 1
            continue
        if _TABLE_RE.match(raw):
            flush()
            rows = []
            while i < len(lines) and _TABLE_RE.match(lines[i]):
                rows.append(lines[i])
                i += 1
            out += _table(rows, color)
            continue
        if not stripped:
            flush()
            blank()
            i += 1
            continue
        m = _ITEM_RE.match(raw)
        if m:
            flush()
            depth = len(m.group("indent").expandtabs(4)) // 2
            marker = "-" if m.group("marker") in "-*+" else m.group("marker")
            first = "  " * (depth + 1) + marker + " "
            item = (first, " " * len(first), [m.group("text")])
        elif item is not None:
            item[2].append(stripped)  # the item's continuation line (indented or not)
        else:
            para.append(stripped)
        i += 1
    flush()
    while out and out[-1] == "":
        out.pop()
    while out and out[0] == "":
        out.pop(0)
    return "\n".join(out) + "\n"
