"""One mechanism per job: suppression comments are read by one parser (trainlint.noqa), severities
are ordered in one place (``Severity.rank``), ``fail-on`` is judged by one function
(``findings.fails_run``), the stages are listed once (``findings.Stage``) and edits are applied by one
path (``fixes.apply_fixes``, whole fixes or nothing). The structural checks read the package's source
with ``ast``; the probe's modules are left to their own layering tests."""

from __future__ import annotations

import ast
import fnmatch

import pytest
from support import ROOT

from trainlint import noqa
from trainlint.findings import Edit, Finding, Position, ProbeOutcome, ProbeStatus, Severity, Stage, fails_run
from trainlint.fixes import apply_edits, apply_fixes

NOT_CHECKED = ("trainlint/probe/*", "trainlint/stages/*/probe*.py")
SEVERITY_WORDS = {"error", "warning", "info"}


def _package() -> list[tuple[str, ast.Module]]:
    out = []
    for path in sorted((ROOT / "trainlint").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if not any(fnmatch.fnmatch(rel, p) for p in NOT_CHECKED):
            out.append((rel, ast.parse(path.read_text(encoding="utf-8"))))
    return out


def _is_severity_key(node: ast.AST | None) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in SEVERITY_WORDS
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Severity"


def test_one_noqa_parser():
    """Only trainlint/noqa.py holds a pattern for `# noqa` comments."""
    places = [rel for rel, tree in _package() for node in ast.walk(tree)
              if isinstance(node, ast.Constant) and isinstance(node.value, str) and "noqa" in node.value
              and "\\s" in node.value]
    assert places == ["trainlint/noqa.py", "trainlint/noqa.py"]


def test_one_severity_order():
    """No module but findings.py numbers the severities or lists them in an order."""
    places = []
    for rel, tree in _package():
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict) and node.keys and all(_is_severity_key(k) for k in node.keys) \
                    and all(isinstance(v, ast.Constant) and isinstance(v.value, int) for v in node.values):
                places.append(f"{rel}:{node.lineno}")
            if isinstance(node, (ast.List, ast.Tuple)) and len(node.elts) == 3 \
                    and {getattr(e, "value", None) for e in node.elts} == SEVERITY_WORDS:
                places.append(f"{rel}:{node.lineno}")
    assert places == []
    assert sorted(Severity, key=lambda s: s.rank) == [Severity.ERROR, Severity.WARNING, Severity.INFO]


def test_fail_on_is_judged_in_one_place():
    """Severity ranks are compared only by findings.fails_run."""
    places = {rel for rel, tree in _package() for node in ast.walk(tree)
              if isinstance(node, ast.Compare)
              and any(isinstance(x, ast.Attribute) and x.attr == "rank" for x in [node.left, *node.comparators])}
    assert places == {"trainlint/findings.py"}


@pytest.mark.parametrize(("severity", "fail_on", "status", "fails"), [
    (Severity.ERROR, Severity.ERROR, None, True),
    (Severity.WARNING, Severity.ERROR, None, False),
    (Severity.WARNING, Severity.WARNING, None, True),
    (Severity.INFO, Severity.WARNING, None, False),
    (Severity.INFO, Severity.INFO, None, True),
    (Severity.INFO, Severity.ERROR, ProbeStatus.CONFIRMED, True),
    (Severity.ERROR, Severity.INFO, ProbeStatus.NOT_REPRODUCED, False),
    (Severity.WARNING, Severity.ERROR, ProbeStatus.NOT_REACHED, False),
])
def test_fails_run(severity, fail_on, status, fails):
    p = Position(1, 1)
    f = Finding("TL805", "x", "m", severity, "t.py", p, p, probe=ProbeOutcome(status) if status else None)
    assert fails_run(f, fail_on) is fails


def test_one_stage_list():
    """The stage packages are the members of findings.Stage, and no module names them otherwise."""
    from trainlint.rule import STAGE_MODULES

    dirs = sorted(p.name for p in (ROOT / "trainlint" / "stages").iterdir() if p.is_dir() and p.name[:1] == "s")
    assert [s.package.rsplit(".", 1)[1] for s in Stage] == dirs
    assert STAGE_MODULES == tuple(f"{s.package}.rules" for s in Stage)
    places = [f"{rel}:{node.lineno}" for rel, tree in _package() if rel != "trainlint/findings.py"
              for node in ast.walk(tree)
              if isinstance(node, ast.Constant) and isinstance(node.value, str)
              and node.value.startswith("trainlint.stages.s")]
    assert places == []


@pytest.mark.parametrize(("line", "codes"), [
    ("x = 1  # noqa", frozenset()),
    ("x = 1  # noqa: TL805", frozenset({"TL805"})),
    ("x = 1  # NOQA:tl805, TL301", frozenset({"TL805", "TL301"})),
    ("x = 1  # noqa: E501 TL805", frozenset({"E501", "TL805"})),
    ("x = '# noqa'", frozenset()),  # as Ruff and flake8: the comment is looked for in the line's text
    ("x = 1", None),
])
def test_noqa_comments(line: str, codes):
    assert noqa.noqa_lines(f"import torch\n{line}\n").get(2) == codes


def test_file_noqa():
    assert noqa.file_noqa("# trainlint: noqa\nimport torch\n")
    assert not noqa.file_noqa("# trainlint: noqa: TL805\nimport torch\n")


def _edit(r1, c1, r2, c2, text):
    return Edit(Position(r1, c1), Position(r2, c2), text)


def test_edits_of_one_change_apply_whole_or_not_at_all():
    src = "a = 1\nb = 2\n"
    assert apply_edits(src, [_edit(1, 1, 1, 2, "x"), _edit(2, 1, 2, 2, "y")]) == "x = 1\ny = 2\n"
    # two edits of one change that overlap: nothing is applied, never the first alone
    assert apply_edits(src, [_edit(1, 1, 1, 4, "x"), _edit(1, 3, 1, 6, "y")]) == src


def test_a_fix_that_meets_another_waits_whole():
    src = "import a\n\nf(1)\ng(2)\n"
    p = Position(1, 1)

    def finding(code, *edits):
        from trainlint.findings import Applicability, Fix

        return Finding(code, "x", "m", Severity.ERROR, "t.py", p, p, fix=Fix(Applicability.SAFE, "m", tuple(edits)))

    first = finding("TL801", _edit(2, 1, 2, 1, "import b\n"), _edit(3, 1, 3, 2, "b.f"))
    second = finding("TL802", _edit(2, 1, 2, 1, "import c\n"), _edit(4, 1, 4, 2, "c.g"))
    out, applied = apply_fixes(src, [second, first])
    assert out == "import a\nimport b\n\nb.f(1)\ng(2)\n" and applied == [first]
