"""The real-code accuracy benchmark (benchmarks/accuracy.py): its committed data is consistent, its
document is generated, and its machinery (lock, materialise, match) works on a local git repository.

The corpus itself (third-party code) is not in the repository: it is materialised from pinned
commits into a gitignored directory. The part of it that is present is re-linted here (all of the
sources written for this project, a fixed sample of the rest); `python benchmarks/accuracy.py`
re-lints all of it.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from support import ROOT

_spec = importlib.util.spec_from_file_location("accuracy", ROOT / "benchmarks" / "accuracy.py")
acc = importlib.util.module_from_spec(_spec)
sys.modules["accuracy"] = acc
_spec.loader.exec_module(acc)

SETS = [d for d in acc.SETS.values() if (d / "sources.toml").exists()]


def test_docs_accuracy_is_what_the_renderer_makes():
    assert (ROOT / "docs" / "accuracy.md").read_text(encoding="utf-8") == acc.render() + "\n", \
        "run `python benchmarks/accuracy.py render`"


@pytest.mark.parametrize("set_dir", SETS, ids=lambda d: d.name)
def test_sources_and_lock_are_well_formed(set_dir):
    sources = acc.load_sources(set_dir)
    assert sources
    assert acc.validate_sources(sources) == []
    ids = {s.id for s in sources}
    lock = acc.load_lock(set_dir)
    assert lock, "no files.lock: run `python benchmarks/accuracy.py lock`"
    seen = set()
    for e in lock:
        assert re.fullmatch(r"[0-9a-f]{64}", e.sha256), e
        assert e.role in ("lint", "context"), e
        assert e.source in ids, e
        assert not e.path.startswith("/") and ".." not in e.path.split("/"), e
        assert (e.source, e.path) not in seen, e
        seen.add((e.source, e.path))
    # every source contributes, and no text is linted twice
    lint = [e for e in lock if e.role == "lint"]
    assert {e.source for e in lint} == ids
    assert len({e.sha256 for e in lint}) == len(lint)


def test_corpus_size_and_breadth():
    corpus = acc.SETS["corpus"]
    sources = acc.load_sources(corpus)
    lint = [e for e in acc.load_lock(corpus) if e.role == "lint"]
    assert len(lint) >= 600
    assert len({s.repo for s in sources if s.kind == "git"} | {s.package for s in sources if s.kind == "pypi"}) >= 10
    assert len({s.stack for s in sources}) >= 2


@pytest.mark.parametrize("set_dir", SETS, ids=lambda d: d.name)
def test_snapshot_is_well_formed_and_covers_the_lock(set_dir):
    meta, rows = acc._snapshot(set_dir)
    assert meta.get("files") == len([e for e in acc.load_lock(set_dir) if e.role == "lint"])
    locked = {(e.source, e.path) for e in acc.load_lock(set_dir) if e.role == "lint"}
    for r in rows:
        assert set(acc.KEY_FIELDS) <= set(r) and r["severity"] in ("error", "warning", "info"), r
        assert (r["source"], r["path"]) in locked, r
        assert re.fullmatch(r"[0-9a-f]{12}", r["hash"]), r


def test_every_finding_in_the_snapshot_is_judged_with_a_reason():
    corpus = acc.SETS["corpus"]
    verdicts = acc.read_jsonl(corpus / "verdicts.jsonl")
    assert acc.validate_verdicts(verdicts) == []
    _, rows = acc._snapshot(corpus)
    unjudged = [acc.key(r) for r, v in zip(rows, acc.match(rows, verdicts)) if v is None]
    assert unjudged == [], "judge them in benchmarks/corpus/verdicts.jsonl"


def test_expected_bugs_are_well_formed():
    buggy = acc.SETS["buggy"]
    expected = acc.read_jsonl(buggy / "expected.jsonl")
    if not (buggy / "sources.toml").exists():
        assert expected == []
        return
    locked = {(e.source, e.path) for e in acc.load_lock(buggy) if e.role == "lint"}
    for e in expected:
        for k in ("source", "path", "code", "line", "evidence", "reason"):
            assert e.get(k) not in (None, ""), (k, e)
        assert (e["source"], e["path"]) in locked, e
        assert re.fullmatch(r"TL\d{3}", e["code"]), e


# ---------------------------------------------------------------------------------------------
# The machinery, on a repository made here


def test_matcher_follows_a_moved_line_and_refuses_another_text():
    judged = [{"source": "s", "path": "a.py", "code": "TL101", "line": 10, "cell": None, "hash": "aaa"},
              {"source": "s", "path": "a.py", "code": "TL101", "line": 40, "cell": None, "hash": "aaa"}]
    f = {"source": "s", "path": "a.py", "code": "TL101", "cell": None}
    assert acc.match([f | {"line": 10, "hash": "aaa"}], judged) == [judged[0]]
    assert acc.match([f | {"line": 37, "hash": "aaa"}], judged) == [judged[1]]  # shifted: nearest
    assert acc.match([f | {"line": 10, "hash": "bbb"}], judged) == [None]  # another text
    assert acc.match([f | {"line": 10, "hash": "aaa", "code": "TL102"}], judged) == [None]
    assert acc.match([f | {"line": 10, "hash": "aaa", "cell": 3}], judged) == [None]


def test_glob_patterns():
    assert acc.glob_match("examples/a/b.py", "examples/**")
    assert acc.glob_match("train.py", "**/*.py") and acc.glob_match("x/y/train.py", "**/*.py")
    assert acc.glob_match("examples/dreambooth/train_x.py", "examples/*/train_*.py")
    assert not acc.glob_match("examples/a/b/train_x.py", "examples/*/train_*.py")
    assert not acc.glob_match("src/examples/a.py", "examples/**")


NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# Fine-tune\n"]},
        {"cell_type": "code", "execution_count": 3, "metadata": {}, "outputs": [
            {"output_type": "stream", "name": "stdout", "text": ["secret output\n"]}],
         "source": ["!pip install transformers\n", "from transformers import AdamW\n", "import torch"]},
    ],
    "metadata": {"widgets": {"state": {"x": 1}}, "kernelspec": {"name": "python3"}},
    "nbformat": 4, "nbformat_minor": 5,
}

SCRIPT = """import torch
from torch.utils.data import DataLoader

model = torch.nn.Linear(4, 2)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(list(range(8)), batch_size=2)
for batch in loader:
    loss = model(batch).sum()
    loss.backward()
    optimizer.step()
"""


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
                               "HOME": str(cwd), "PATH": "/usr/bin:/bin"}).stdout.strip()


def test_lock_materialise_and_lint_a_local_git_repository(tmp_path):
    repo = tmp_path / "upstream"
    (repo / "examples" / "nb").mkdir(parents=True)
    (repo / "examples" / "train.py").write_text(SCRIPT)
    (repo / "examples" / "copy.py").write_text(SCRIPT)  # the same text twice: locked once
    (repo / "examples" / "util.py").write_text("import os\n")  # not training code
    (repo / "examples" / "requirements.txt").write_text("transformers<4.40\n")
    (repo / "examples" / "nb" / "demo.ipynb").write_text(json.dumps(NOTEBOOK))
    (repo / "tests").mkdir()
    (repo / "tests" / "test_x.py").write_text("import torch\n")  # outside the include globs
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "x")
    commit = _git(repo, "rev-parse", "HEAD")
    bare = tmp_path / "bare.git"
    _git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))

    set_dir = tmp_path / "set"
    set_dir.mkdir()
    (set_dir / "sources.toml").write_text(f"""
[[source]]
id = "me+up"
kind = "git"
repo = "me/up"
commit = "{commit}"
license = "MIT"
stack = "torch-2"
include = ["examples/**"]
""")
    assert acc.validate_sources(acc.load_sources(set_dir)) == []
    for git_dir in (repo, bare):  # a clone with a work tree, and a bare one
        entries = acc.build_lock(set_dir, {"me/up": git_dir}, log=lambda *a: None)
        lint = sorted(e.path for e in entries if e.role == "lint")
        assert lint == ["examples/copy.py", "examples/nb/demo.ipynb"]  # copy.py sorts before train.py
        assert sorted(e.path for e in entries if e.role == "context") == ["examples/requirements.txt"]
    out = tmp_path / "out"
    assert acc.materialise(set_dir, {"me/up": bare}, out=out, log=lambda *a: None) == 3
    nb = json.loads((out / "me+up" / "examples" / "nb" / "demo.ipynb").read_text())
    code = nb["cells"][1]
    assert code["outputs"] == [] and code["execution_count"] is None and "widgets" not in nb["metadata"]
    assert "secret output" not in (out / "me+up" / "examples" / "nb" / "demo.ipynb").read_text()
    assert (out / "me+up" / "examples" / "copy.py").read_text() == SCRIPT
    assert (out / "me+up" / ".git").is_dir()  # the source's root, as in a clone

    rows, missing = acc.lint_set(set_dir, root=out, jobs=1)
    assert missing == []
    assert all(r["source"] == "me+up" for r in rows)
    nb_rows = [r for r in rows if r["path"].endswith(".ipynb")]
    for r in nb_rows:  # notebook findings carry the cell and the hash of the row in that cell
        line = "".join(nb["cells"][r["cell"] - 1]["source"]).splitlines()[r["line"] - 1]
        assert r["hash"] == acc.line_hash(line)

    # a changed file is refused
    (set_dir / "files.lock").write_text((set_dir / "files.lock").read_text().replace(
        next(e.sha256 for e in acc.load_lock(set_dir) if e.path == "examples/copy.py"), "0" * 64))
    with pytest.raises(ValueError, match="differs from the lock"):
        acc.materialise(set_dir, {"me/up": bare}, out=tmp_path / "out2", log=lambda *a: None)


def test_lock_takes_version_files_from_every_directory_above_a_linted_file(tmp_path):
    # the linter reads requirements next to a script and in each directory up to the repository root
    repo = tmp_path / "upstream"
    (repo / "apps" / "chat" / "training").mkdir(parents=True)
    (repo / "apps" / "chat" / "training" / "main.py").write_text(SCRIPT)
    (repo / "apps" / "chat" / "requirements.txt").write_text("transformers==4.33.3\n")  # one level up
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")  # the root
    (repo / "docs").mkdir()
    (repo / "docs" / "requirements.txt").write_text("sphinx\n")  # beside no linted file
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "x")
    set_dir = tmp_path / "set"
    set_dir.mkdir()
    (set_dir / "sources.toml").write_text(f"""
[[source]]
id = "me+up"
kind = "git"
repo = "me/up"
commit = "{_git(repo, 'rev-parse', 'HEAD')}"
license = "MIT"
stack = "torch-2"
include = ["apps/**"]
""")
    entries = acc.build_lock(set_dir, {"me/up": repo}, log=lambda *a: None)
    assert sorted(e.path for e in entries if e.role == "context") == ["apps/chat/requirements.txt", "pyproject.toml"]


# ---------------------------------------------------------------------------------------------
# Held-out rounds

def _local_set(tmp_path: Path, name: str, source: str = "cases", files: dict | None = None) -> Path:
    """A set of one local source (``source`` is its id and directory) holding ``files``, locked."""
    if files is None:
        files = {"loop.py": SCRIPT,  # never calls zero_grad: TL701 on line 10
                 "other.py": SCRIPT.replace("optimizer.step()", "optimizer.step()\n    optimizer.zero_grad()")}
    set_dir = tmp_path / name
    (set_dir / source).mkdir(parents=True)
    for file, text in files.items():
        (set_dir / source / file).write_text(text)
    (set_dir / "sources.toml").write_text(f"""
[[source]]
id = "{source}"
kind = "local"
dir = "{source}"
license = "MIT"
stack = "torch-2"
include = ["*.py"]
""")
    acc.build_lock(set_dir, {}, log=lambda *a: None)
    return set_dir


def test_a_held_out_round_of_real_bugs_is_measured_and_recorded(tmp_path, monkeypatch, capsys):
    set_dir = _local_set(tmp_path, "buggy")
    acc.write_jsonl(set_dir / "expected.jsonl", [
        {"source": "cases", "path": "loop.py", "code": "TL701", "line": 10, "cell": None, "evidence": "o/r#1", "reason": "r"},
        {"source": "cases", "path": "other.py", "code": "TL403", "line": 3, "cell": None, "evidence": "o/r#2", "reason": "r"},
    ])
    monkeypatch.setitem(acc.SETS, "buggy", set_dir)
    monkeypatch.setattr(acc, "HELDOUT", tmp_path / "heldout.jsonl")
    monkeypatch.setattr(acc, "MATERIALISED", tmp_path / "not-materialised")
    # TL701 on by default: found; then off by default: found with every rule only
    monkeypatch.setattr("trainlint.rule.default_codes", lambda: {"TL403", "TL701"})
    assert acc.heldout("buggy", ["cases/loop.py", "cases/other.py"], write=True, jobs=1) == 0
    monkeypatch.setattr("trainlint.rule.default_codes", lambda: {"TL403"})
    assert acc.heldout("buggy", ["cases/loop.py", "cases/other.py"], write=True, jobs=1) == 0
    record, off = acc.read_jsonl(tmp_path / "heldout.jsonl")
    assert record["set"] == "buggy" and record["added"] == ["cases/loop.py", "cases/other.py"]
    assert record["default_rules"] == ["TL403", "TL701"] and off["default_rules"] == ["TL403"]
    assert (record["expected"], record["found"], record["found_every_rule"], record["by_rule"]) == \
        (2, 1, 1, {"TL403": [0, 1], "TL701": [1, 1]})
    assert (off["expected"], off["found"], off["found_every_rule"], off["by_rule"]) == \
        (2, 0, 1, {"TL403": [0, 1], "TL701": [0, 1]})
    assert "missed TL403 cases/other.py:3" in capsys.readouterr().out
    assert acc.heldout("buggy", ["cases/absent.py"], write=True, jobs=1) == 2  # not in the lock
    md = "\n".join(acc.render_first_sight([record], {"TL403", "TL701"}))
    assert f"| buggy | 1 | {record['date']} | `{record['rules']}` | 2 | 2 | – | – | – | – | – | – | 2 | 1 | 50.0 % | 1 (50.0 %) |" in md


def test_a_held_out_round_of_new_code_measures_every_rule_and_needs_every_finding_judged(tmp_path, monkeypatch, capsys):
    forward = SCRIPT.replace("model(batch)", "model.forward(batch)").replace(
        "optimizer.step()", "optimizer.step()\n    optimizer.zero_grad()")
    set_dir = _local_set(tmp_path, "corpus", files={"loop.py": SCRIPT, "forward.py": forward})
    monkeypatch.setitem(acc.SETS, "corpus", set_dir)
    monkeypatch.setattr(acc, "HELDOUT", tmp_path / "heldout.jsonl")
    monkeypatch.setattr(acc, "MATERIALISED", tmp_path / "not-materialised")
    monkeypatch.setattr("trainlint.rule.default_codes", lambda: {"TL701"})  # TL705 off by default
    assert acc.heldout("corpus", ["cases"], write=True, jobs=1) == 1  # the TL701 and TL705 are not judged yet
    assert not (tmp_path / "heldout.jsonl").exists()
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines() if x.startswith("  {")]
    assert sorted(x["code"] for x in lines) == ["TL701", "TL705"]
    acc.write_jsonl(set_dir / "verdicts.jsonl", [{k: x[k] for k in acc.KEY_FIELDS} | {
        "verdict": "false" if x["code"] == "TL701" else "true", "reason": "r"} for x in lines])
    assert acc.heldout("corpus", ["cases"], write=True, jobs=1) == 0
    [record] = acc.read_jsonl(tmp_path / "heldout.jsonl")
    # the totals are the default rules'; every rule's verdicts are kept per rule
    assert record["default_rules"] == ["TL701"]
    assert record["files"] == 2 and record["findings"] == 1
    assert record["verdicts"] == {"true": 0, "false": 1, "version": 0, "debatable": 0}
    assert record["by_rule"] == {"TL701": {"false": 1}, "TL705": {"true": 1}}
    md = "\n".join(acc.render_first_sight([record], {"TL701"}))
    assert f"| corpus | 1 | {record['date']} | `{record['rules']}` | 1 | 2 | 1 | 0 | 1 | 0 | 0 | 0.0 % | – | – | – | –" in md
    assert "| TL701 | yes | round 1 | 1 | 0 | 1 | 0 | 0 | 0.0 % | 0 | 0 | – |" in md
    assert "| TL705 | no | round 1 | 1 | 1 | 0 | 0 | 0 | 100.0 % | 0 | 0 | – |" in md
    assert "which should become opt-in: TL701 (0.0 %, 1 false)." in md


# Two corpus rounds and a buggy round, as `heldout` records them
ROUNDS = [
    {"set": "corpus", "date": "2026-01-02", "rules": "aaaaaaaaaaaa", "added": ["a+x", "b+y"], "files": 300,
     "findings": 30, "verdicts": {"true": 18, "false": 2, "version": 9, "debatable": 1},
     "by_rule": {"TL001": {"true": 10}, "TL702": {"true": 4, "false": 2}, "TL703": {"true": 4, "debatable": 1},
                 "TL805": {"version": 9}}},
    {"set": "buggy", "date": "2026-01-03", "rules": "bbbbbbbbbbbb", "added": ["cases/a.py", "cases/b.py", "cases/c.py"],
     "files": 3, "expected": 4, "found": 1, "found_every_rule": 2,
     "by_rule": {"TL702": [1, 2], "TL204": [0, 1], "TL403": [0, 1]}},
    {"set": "corpus", "date": "2026-01-04", "rules": "cccccccccccc", "added": ["c+z"], "files": 100,
     "findings": 5, "verdicts": {"true": 1, "false": 4, "version": 0, "debatable": 0},
     "by_rule": {"TL003": {"false": 1}, "TL702": {"false": 3}, "TL703": {"true": 1}}},
]
DEFAULTS = {"TL001", "TL003", "TL403", "TL702", "TL703", "TL805"}


def test_first_sight_sums_the_rounds_per_rule_and_names_the_rules_below_the_bar():
    fs = acc.FirstSight.of(ROUNDS)
    assert fs.verdicts["TL702"] == {"true": 4, "false": 5} and fs.verdicts["TL703"] == {"true": 5, "debatable": 1}
    assert (fs.found, fs.expected) == ({"TL702": 1, "TL204": 0, "TL403": 0}, {"TL702": 2, "TL204": 1, "TL403": 1})
    v, expected, found, every = fs.totals()
    assert (v, expected, found, every) == ({"true": 19, "false": 6, "version": 9, "debatable": 1}, 4, 1, 2)
    # TL702: 4 of 9; TL703: 5 of 5; TL001: 10 of 10; TL003 is an engine code; TL204 is not a default rule
    assert fs.below_bar(DEFAULTS) == (["TL702"], ["TL003"])
    assert fs.below_bar(DEFAULTS | {"TL204"}) == (["TL702"], ["TL003"])  # no finding: nothing to judge


def test_a_rule_counts_only_the_corpus_rounds_from_the_one_it_is_measured_from():
    # TL702 was reworked after the first corpus round: only the second one (3 false) measured it as it is
    fs = acc.FirstSight.of(ROUNDS, {"TL702": 2, "TL703": 3})
    assert [(n, r["set"]) for n, r in fs.numbered()] == [(1, "corpus"), (1, "buggy"), (2, "corpus")]
    assert fs.verdicts["TL702"] == {"false": 3}
    assert fs.verdicts["TL703"] == {}  # no round measured it yet: nothing to judge
    assert fs.verdicts["TL001"] == {"true": 10} and fs.first_round("TL001") == 1
    assert (fs.found["TL702"], fs.expected["TL702"]) == (1, 2)  # the buggy rounds all count
    assert fs.below_bar(DEFAULTS) == (["TL702"], ["TL003"])
    # reworked again: the next round measures it, none has yet
    assert acc.FirstSight.of(ROUNDS, {"TL702": 3}).below_bar(DEFAULTS) == ([], ["TL003"])
    md = "\n".join(acc.render_first_sight(ROUNDS, DEFAULTS, {"TL702": 2}))
    assert _md_rows(md, "TL702") == [["TL702", "yes", "round 2", "3", "0", "3", "0", "0", "0.0 %", "2", "1", "50.0 %"]]
    assert "which should become opt-in: TL702 (0.0 %, 3 false)." in md
    # the rounds' own totals are as measured: every rule of the round
    assert [r[:2] + r[6:12] for r in _md_rows(md, "corpus")][-1] == ["corpus", "all", "35", "19", "6", "9", "1", "76.0 %"]


def test_the_bar_names_the_rule_its_figures_and_the_two_ways_out():
    [failure] = acc.bar_failures(acc.FirstSight.of(ROUNDS, {}), DEFAULTS)  # TL003 is an engine code
    assert failure.startswith("TL702 is on by default but 44.4 % precise at first sight (4 true, 5 false over "
                              "the corpus rounds 1 to 2;")
    assert "`default = False`" in failure and "`measured_from = 3`" in failure
    # measured again from a round not recorded yet: nothing counts against it
    assert acc.bar_failures(acc.FirstSight.of(ROUNDS, {"TL702": 3}), DEFAULTS) == []
    assert acc.bar_failures(acc.FirstSight.of(ROUNDS, {}), DEFAULTS - {"TL702"}) == []  # off by default


def test_every_default_rule_meets_the_precision_bar_at_first_sight():
    """A rule is on by default only while its first-sight precision over the held-out corpus rounds
    that measured it as it is (from its ``measured_from`` on) is at least 95 % (with fewer than 5 true
    + false findings: none false). Engine codes (TL0xx) are fixed in the engine instead."""
    from trainlint.rule import default_codes

    failures = acc.bar_failures(acc.FirstSight.of(acc.read_jsonl(acc.HELDOUT)), default_codes())
    assert not failures, "\n".join(failures)


def _md_rows(md: str, first_cell: str) -> list[list[str]]:
    return [[c.strip() for c in line.strip("|").split("|")] for line in md.splitlines()
            if line.startswith(f"| {first_cell} |")]


def test_the_document_opens_with_the_rounds_as_first_measured(tmp_path):
    heldout = tmp_path / "heldout.jsonl"
    acc.write_jsonl(heldout, ROUNDS)
    md = acc.render(heldout_path=heldout, defaults=DEFAULTS)
    headings = [line for line in md.splitlines() if line.startswith("## ")]
    assert headings[:2] == ["## First sight: the held-out rounds", "## After the fixes, on the same files"]
    first, _, after = md.partition("## After the fixes, on the same files")
    assert "### Per rule, after the fixes" in after and "### Per rule, at first sight" in first
    # a row a round and a row of totals a set, precision on the findings that are not about versions
    corpus = _md_rows(first, "corpus")
    assert corpus == [
        ["corpus", "1", "2026-01-02", "`aaaaaaaaaaaa`", "2", "300", "30", "18", "2", "9", "1", "90.0 %", "–", "–", "–", "–", "–"],
        ["corpus", "2", "2026-01-04", "`cccccccccccc`", "1", "100", "5", "1", "4", "0", "0", "20.0 %", "–", "–", "–", "–", "–"],
        ["corpus", "all", "", "", "3", "400", "35", "19", "6", "9", "1", "76.0 %", "–", "–", "–", "–", "–"]]
    assert _md_rows(first, "buggy") == [
        ["buggy", "1", "2026-01-03", "`bbbbbbbbbbbb`", "3", "3", *["–"] * 6, "4", "1", "25.0 %", "2 (50.0 %)", "4 (100.0 %)"],
        ["buggy", "all", "", "", "3", "3", *["–"] * 6, "4", "1", "25.0 %", "2 (50.0 %)", "4 (100.0 %)"]]
    assert "right on 19 of the 25 findings not about versions in 2 corpus rounds (400 files): precision **76.0 %**" in first
    assert "they found 1 of 4 real bugs in 1 buggy round: recall **25.0 %**" in first
    # per rule: precision summed over the corpus rounds, recall over the buggy rounds
    assert _md_rows(first, "TL702") == [["TL702", "yes", "round 1", "9", "4", "5", "0", "0", "44.4 %", "2", "1", "50.0 %"]]
    assert _md_rows(first, "TL703") == [["TL703", "yes", "round 1", "6", "5", "0", "0", "1", "100.0 %", "0", "0", "–"]]
    opt_in = re.search(r"which should become opt-in: (.*)\.$", first, re.M).group(1)
    assert re.findall(r"TL\d{3}", opt_in) == ["TL702"] and "TL702 (44.4 %, 5 false)" in opt_in
    engine = re.search(r"^Engine codes below it .*: (.*)\.$", first, re.M).group(1)
    assert re.findall(r"TL\d{3}", engine) == ["TL003"]


def test_the_committed_document_states_the_recorded_rounds():
    """The opening table of docs/accuracy.md, read back, says what heldout.jsonl records."""
    doc = (ROOT / "docs" / "accuracy.md").read_text(encoding="utf-8")
    first = doc.partition("## After the fixes")[0]
    rounds = acc.read_jsonl(acc.HELDOUT)
    assert rounds
    number = Counter()  # the rounds are numbered within their set, in the order recorded
    for r in rounds:
        number[r["set"]] += 1
        [row] = [x for x in _md_rows(first, r["set"]) if x[1] == str(number[r["set"]])]
        assert row[2:6] == [r["date"], f"`{r['rules']}`", str(len(r["added"])), str(r["files"])]
        if r["set"] == "corpus":
            v = r["verdicts"]
            assert row[6:11] == [str(r["findings"]), str(v["true"]), str(v["false"]), str(v["version"]), str(v["debatable"])]
            assert row[11] == f"{100 * v['true'] / (v['true'] + v['false']):.1f} %"
        else:
            assert row[12:15] == [str(r["expected"]), str(r["found"]), f"{100 * r['found'] / r['expected']:.1f} %"]


# ---------------------------------------------------------------------------------------------
# Re-lint what is reachable here and compare with the committed snapshot

SAMPLE_EVERY = 25  # of all locked files
SAMPLE_EVERY_WITH_FINDINGS = 5  # of the files with a finding in the snapshot


@pytest.mark.parametrize("set_dir", SETS, ids=lambda d: d.name)
def test_reachable_part_of_the_corpus_lints_as_in_the_snapshot(set_dir, tmp_path):
    """Sources written for this project (``kind = "local"``) are always linted; materialised
    third-party files, when present, by a fixed sample (every 25th locked file, and every 5th of
    those with a finding)."""
    sources = {s.id: s for s in acc.load_sources(set_dir)}
    local = [s for s in sources.values() if s.kind == "local"]
    lint = [e for e in acc.load_lock(set_dir) if e.role == "lint"]
    if local:
        acc.materialise(set_dir, {}, out=tmp_path / "m", log=lambda *a: None)
    materialised = acc.MATERIALISED / set_dir.name
    with_findings = sorted({(r["source"], r["path"]) for r in acc._snapshot(set_dir)[1]})
    sampled = {p for i, p in enumerate(with_findings) if i % SAMPLE_EVERY_WITH_FINDINGS == 0}
    chosen = []
    for i, e in enumerate(lint):
        if sources[e.source].kind == "local":
            chosen.append((tmp_path / "m", e))
        elif (i % SAMPLE_EVERY == 0 or (e.source, e.path) in sampled) and (materialised / e.source / e.path).is_file():
            chosen.append((materialised, e))
    if not chosen:
        pytest.skip("no file of this set is reachable here (materialise it with benchmarks/accuracy.py)")
    _, snapshot = acc._snapshot(set_dir)
    wanted = {(e.source, e.path) for _, e in chosen}
    expected = [acc.key(r) | {"message": r["message"]} for r in snapshot if (r["source"], r["path"]) in wanted]
    got = []
    for root in {r for r, _ in chosen}:
        sub = tmp_path / "lock-view"
        sub.mkdir(exist_ok=True)
        entries = [e for r, e in chosen if r == root]
        acc.write_lock(sub, entries)
        rows, missing = acc.lint_set(sub, root=root, jobs=1)
        assert missing == []
        got += rows
    got.sort(key=lambda r: (r["source"], r["path"], r["cell"] or 0, r["line"], r["code"], r["message"]))
    assert [acc.key(r) | {"message": r["message"]} for r in got] == expected, \
        "the findings changed: run `python benchmarks/accuracy.py` and judge the new ones"


def test_recall_counts_a_bug_found_on_its_line_or_on_the_same_text():
    f = {"source": "s", "path": "a.py", "code": "TL701", "cell": None, "hash": "h1", "line": 12}
    expected = [{"source": "s", "path": "a.py", "code": "TL701", "cell": None, "line": 12},  # same line
                {"source": "s", "path": "a.py", "code": "TL701", "cell": None, "line": 9, "hash": "h1"},  # moved
                {"source": "s", "path": "a.py", "code": "TL702", "cell": None, "line": 12},  # another rule
                {"source": "s", "path": "b.py", "code": "TL701", "cell": None, "line": 12}]  # another file
    stats = acc.Stats()
    missed = acc.recall_stats([f], expected, stats)
    assert stats.found == {"TL701": 2} and stats.expected == {"TL701": 3, "TL702": 1}
    assert missed == expected[2:]


def test_precision_target():
    assert not acc.below_target(Counter(true=19, false=1))  # 95 %
    assert acc.below_target(Counter(true=18, false=2))
    assert acc.below_target(Counter(true=3, false=1))  # few findings: no false one allowed
    assert not acc.below_target(Counter(true=3, version=9))


def test_run_without_the_materialised_corpus_prints_the_committed_numbers(tmp_path, monkeypatch, capsys):
    """A clean clone has no materialised third-party code: the run says so and prints the snapshot's
    numbers (corpus size, per-rule precision, default totals) without failing."""
    monkeypatch.setattr(acc, "MATERIALISED", tmp_path / "nothing")
    assert acc.run(["corpus"], write=False, jobs=1) == 0
    out = capsys.readouterr().out
    lint = [e for e in acc.load_lock(acc.SETS["corpus"]) if e.role == "lint"]
    assert f"[corpus] {len(lint)} files from " in out and "the committed snapshot" in out
    _, rows = acc._snapshot(acc.SETS["corpus"])
    total = re.search(r"^default\s+(\d+)\s", out, re.M)
    assert total is not None
    from trainlint.rule import default_codes

    assert int(total.group(1)) == sum(1 for r in rows if r["code"] in default_codes())
    # the first-sight summary of every held-out round comes first, before the numbers after the fixes
    first, _, after = out.partition("After the fixes, on the same files")
    assert first.startswith("First sight: the held-out rounds") and after
    assert re.search(r"^rule\s+default\s+n\s+true", after, re.M) and not re.search(r"^rule\s+default\s+n\s", first, re.M)
    for r in acc.read_jsonl(acc.HELDOUT):
        row = re.search(rf"^{r['set']}\s+\d+\s+{r['date']}\s+{r['rules']}\s+{len(r['added'])}\s+{r['files']}\s", first, re.M)
        assert row is not None, r


def test_clones_are_found_under_a_root_in_the_usual_layouts(tmp_path):
    for rel in ("alpha", "bob/beta", "carol+gamma/repo"):
        (tmp_path / rel).mkdir(parents=True)
        _git(tmp_path / rel, "init", "-q")
    (tmp_path / "delta.git").mkdir()
    _git(tmp_path / "delta.git", "init", "-q", "--bare")
    found = acc.find_git_dirs(tmp_path, ["ann/alpha", "bob/beta", "carol/gamma", "dan/delta", "eve/missing"])
    assert found == {"ann/alpha": tmp_path / "alpha", "bob/beta": tmp_path / "bob" / "beta",
                     "carol/gamma": tmp_path / "carol+gamma" / "repo", "dan/delta": tmp_path / "delta.git"}


def test_a_local_source_is_linted_in_place_without_materialising(tmp_path):
    set_dir = _local_set(tmp_path, "buggy", source="ours", files={"loop.py": SCRIPT})  # never calls zero_grad: TL701
    rows, missing = acc.lint_set(set_dir, root=tmp_path / "not-materialised", jobs=1)
    assert missing == []
    assert [(r["source"], r["path"], r["code"], r["line"]) for r in rows] == [("ours", "loop.py", "TL701", 10)]
    stats = acc.Stats()
    assert acc.recall_stats(rows, [{"source": "ours", "path": "loop.py", "code": "TL701", "line": 10, "cell": None}],
                            stats) == []


@pytest.mark.parametrize("archive_name", ["tinypkg-1.0.tar.gz", "tinypkg-1.0-py3-none-any.whl"])
def test_a_pypi_source_is_read_from_its_verified_archive(tmp_path, monkeypatch, archive_name):
    """An sdist (top directory stripped) or a wheel, taken from the download cache when present and
    refused when its sha256 is not the pinned one."""
    import io
    import tarfile
    import zipfile

    monkeypatch.setattr(acc, "MATERIALISED", tmp_path / "m")
    cache = tmp_path / "m" / ".downloads"
    cache.mkdir(parents=True)
    files = {"examples/train.py": SCRIPT.encode(), "tinypkg/__init__.py": b"VERSION = 1\n"}
    archive = cache / archive_name
    if archive_name.endswith(".whl"):
        with zipfile.ZipFile(archive, "w") as zf:
            for name, data in files.items():
                zf.writestr(name, data)
    else:
        with tarfile.open(archive, "w:gz") as tf:
            for name, data in files.items():
                info = tarfile.TarInfo(f"tinypkg-1.0/{name}")
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
    digest = acc.sha256(archive.read_bytes())
    set_dir = tmp_path / "set"
    set_dir.mkdir()
    toml = f"""
[[source]]
id = "tinypkg"
kind = "pypi"
package = "tinypkg"
version = "1.0"
filename = "{archive_name}"
sha256 = "{digest}"
license = "MIT"
stack = "torch-2"
include = ["examples/**"]
"""
    (set_dir / "sources.toml").write_text(toml)
    assert acc.validate_sources(acc.load_sources(set_dir)) == []
    entries = acc.build_lock(set_dir, {}, log=lambda *a: None)
    assert [(e.role, e.path) for e in entries] == [("lint", "examples/train.py")]
    assert acc.materialise(set_dir, {}, out=tmp_path / "out", log=lambda *a: None) == 1
    assert (tmp_path / "out" / "tinypkg" / "examples" / "train.py").read_text() == SCRIPT
    (set_dir / "sources.toml").write_text(toml.replace(digest, "f" * 64))
    with pytest.raises(ValueError, match="sha256"):
        acc.materialise(set_dir, {}, out=tmp_path / "out2", log=lambda *a: None)
