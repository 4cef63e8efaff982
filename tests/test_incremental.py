"""The language server's incremental parse gives the module a full parse gives, edit after edit."""

from __future__ import annotations

import random
from pathlib import Path

import libcst as cst
import pytest

from trainlint.incremental import IncrementalParser

ROOT = Path(__file__).resolve().parent.parent
SOURCES = sorted((ROOT / "examples").glob("*.py"))
SNIPPETS = ["x = 1\n", "    y = 2\n", "def g():\n    return 3\n", "# a comment\n", "\n", "(", ")", ":", "    ",
            "import torch\n", "@decorator\n", "else:\n    pass\n", "'''", "\\\n", "é😀", "\r\n", "\t"]


def full(text: str):
    try:
        return cst.parse_module(text)
    except cst.ParserSyntaxError:
        return None


def random_edit(rng: random.Random, text: str) -> str:
    lines = text.splitlines(keepends=True)
    kind = rng.random()
    if kind < 0.35 and lines:  # replace some characters
        a = rng.randrange(len(text) + 1)
        b = min(len(text), a + rng.randrange(6))
        return text[:a] + rng.choice(SNIPPETS + ["a", "1", "_"]) + text[b:]
    if kind < 0.6:  # insert a line
        k = rng.randrange(len(lines) + 1)
        return "".join(lines[:k] + [rng.choice(SNIPPETS)] + lines[k:])
    if kind < 0.8 and lines:  # delete lines
        k = rng.randrange(len(lines))
        return "".join(lines[:k] + lines[k + rng.randrange(1, 4):])
    a = rng.randrange(len(text) + 1)  # delete characters
    return text[:a] + text[a + rng.randrange(1, 10):]


@pytest.mark.parametrize("path", SOURCES, ids=[p.name for p in SOURCES])
def test_random_edits_match_a_full_parse(path: Path):
    rng = random.Random(path.name)
    parser = IncrementalParser()
    original = path.read_text(encoding="utf-8")
    text = original
    valid = 0
    for step in range(400):
        candidate = random_edit(rng, text) if step % 40 else original  # back to the file now and then
        expected = full(candidate)
        if expected is None:
            with pytest.raises(cst.ParserSyntaxError):
                parser.parse(candidate)
            if rng.random() < 0.9:
                continue  # the edit is finished before the next lint: stay on valid code
            text = candidate
            continue
        text = candidate
        got = parser.parse(text)
        valid += 1
        assert got.code == expected.code  # (LibCST drops a lone `\\` line: not always == text)
        assert got.deep_equals(expected), (step, text)
    assert valid > 30 and parser.reused > valid * 0.6, (valid, parser.reused, parser.full)


def test_typing_in_a_function_reuses_the_other_statements():
    text = (ROOT / "examples" / "mnli_trainer_buggy.py").read_text(encoding="utf-8")
    parser = IncrementalParser()
    first = parser.parse(text)
    edited = text.replace("learning_rate=2e-5", "learning_rate=3e-5")
    second = parser.parse(edited)
    assert parser.reused == 1 and second.code == edited
    reused = [a is b for a, b in zip(first.body, second.body)]
    assert reused.count(False) <= 2 and reused[0]  # only main() (and the one before it) re-parsed


def test_the_lint_process_keeps_no_earlier_module_alive():
    """Each lint of a document may keep its newest parse, never the earlier ones: a per-file cache
    that outlives the file (a weak-keyed cache whose value refers to its key) grew the lint
    process by ~8 MB per lint of a 1 500-line script."""
    import gc

    from trainlint.server import Linter

    text = "\n\n".join(path.read_text(encoding="utf-8") for path in SOURCES if "keras" not in path.name)
    linter = Linter()
    for i in range(4):
        linter.lint(text + f"# edit {i}\n", "train.py", None, "file:///w/train.py", 10**7, None)
        linter.lint(text + f"# other {i}\n", "other.py", None, "file:///w/other.py", 10**7, None)
    gc.collect()
    modules = [o for o in gc.get_objects() if isinstance(o, cst.Module)]
    assert len(modules) <= 4, len(modules)  # each document's last parse (and its incremental state)
