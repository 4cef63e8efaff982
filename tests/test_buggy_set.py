"""The buggy set (benchmarks/buggy/): real bugs written down in the form they had before their fix.

Checks that the set is well formed (every expected finding has its evidence and a code of the
catalog, or a code reserved in ``uncovered.toml`` for a class no rule covers yet; the expected rows are
what the cases' markers say; the lock covers the cases) and that the real bugs trainlint finds today
stay found: ``found.txt`` lists them, a case lost is a regression. Each case is checked with every rule
selected, so the cases of a rule off by default stay protected too.
Recall itself is printed by ``python benchmarks/accuracy.py run --set buggy``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import sys
import tomllib

import pytest

from support import ROOT
from trainlint.rule import all_rules

BUGGY = ROOT / "benchmarks" / "buggy"
CASES = BUGGY / "cases"

_spec = importlib.util.spec_from_file_location("build_expected", BUGGY / "build_expected.py")
build = importlib.util.module_from_spec(_spec)
sys.modules["build_expected"] = build
_spec.loader.exec_module(build)

EXPECTED = build.rows()
RESERVED = {c["code"]: c for c in tomllib.loads((BUGGY / "uncovered.toml").read_text(encoding="utf-8"))["code"]}
FOUND = [line for line in (BUGGY / "found.txt").read_text(encoding="utf-8").splitlines() if line]


def test_expected_jsonl_is_what_the_markers_say():
    assert (BUGGY / "expected.jsonl").read_text(encoding="utf-8") == build.render(), \
        "run `python benchmarks/buggy/build_expected.py --found`"


def test_every_case_has_evidence_and_at_least_one_expected_finding():
    cases = sorted(p.name for p in CASES.glob("*.py"))
    assert cases
    with_rows = {e["path"] for e in EXPECTED}
    assert set(cases) == with_rows, set(cases) ^ with_rows
    for e in EXPECTED:
        assert e["evidence"], e["path"]
        # a thread owner/repo#N, a commit owner/repo@sha, a course file, or a forum/Q&A title with its site
        assert re.search(r"[\w.-]+/[\w.-]+(#\d+|@[0-9a-f]{7,40})|huggingface/course chapters/|"
                         r"discuss\.huggingface\.co|stackoverflow\.com|discuss\.pytorch\.org", e["evidence"]), e
        assert e["reason"], e


def test_expected_codes_are_rules_or_reserved():
    # a registered rule's code, or a code reserved in uncovered.toml for a class no rule covers yet
    rules, reserved = set(all_rules()), set(RESERVED)
    for e in EXPECTED:
        assert e["code"] in rules | reserved, f"{e['code']} is neither a rule nor reserved in uncovered.toml: {e}"
        if e["code"] in rules:
            assert (ROOT / "rules" / f"{e['code']}.md").is_file(), e


def test_a_reserved_code_that_became_a_rule_leaves_the_table():
    taken = sorted(set(RESERVED) & set(all_rules()))
    assert not taken, f"now registered rules, remove them from benchmarks/buggy/uncovered.toml: {taken}"


def test_the_reserved_codes_table_is_well_formed():
    table = tomllib.loads((BUGGY / "uncovered.toml").read_text(encoding="utf-8"))["code"]
    codes = [c["code"] for c in table]
    assert len(codes) == len(set(codes)), codes
    names = [c["name"] for c in table]
    assert len(names) == len(set(names)), names
    for c in table:
        assert set(c) == {"code", "name", "summary"}, c
        assert re.fullmatch(r"TL\d{3}", c["code"]), c
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", c["name"]), c
        assert c["summary"].strip() and "\n" not in c["summary"], c
    # the names of the registered rules are not reused for another code
    taken = {r.name: code for code, r in all_rules().items()}
    assert not [c for c in table if taken.get(c["name"], c["code"]) != c["code"]]


def test_the_lock_covers_the_cases_as_they_are():
    lock = {}
    for line in (BUGGY / "files.lock").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            sha, role, source, path = line.split("\t")
            lock[path] = sha
    for p in CASES.glob("*.py"):
        assert lock.get(p.name) == hashlib.sha256(p.read_bytes()).hexdigest(), \
            f"{p.name}: run `python benchmarks/accuracy.py lock --set buggy`"


def test_found_list_names_expected_findings():
    keys = {f"{e['path']}:{e['line']}:{e['code']}" for e in EXPECTED}
    assert FOUND and set(FOUND) <= keys, set(FOUND) - keys


@pytest.fixture(scope="module")
def found_today():
    return set(build.found(EXPECTED))


def test_the_bugs_found_today_stay_found(found_today):
    lost = [f for f in FOUND if f not in found_today]
    assert not lost, f"real bugs no longer found: {lost}"

