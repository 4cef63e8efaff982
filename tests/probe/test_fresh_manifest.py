"""The manifest of the first-sight probe measurement (tests/probe/fresh/manifest.toml) is complete:
every script pinned to a commit, every case with an expectation a run can check, every port a case
undoes exists. The scripts themselves are third-party code, materialised by benchmarks/probe_fresh.py,
never committed."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

MANIFEST = Path(__file__).resolve().parent / "fresh" / "manifest.toml"
CODE = re.compile(r"TL\d{3}")


def load() -> list[dict]:
    return tomllib.loads(MANIFEST.read_text(encoding="utf-8"))["script"]


def test_every_script_is_pinned_and_has_a_correct_case_and_two_bugs():
    scripts = load()
    assert len({s["id"] for s in scripts}) == len(scripts)
    for s in scripts:
        assert re.fullmatch(r"[0-9a-f]{40}", s["commit"]), s["id"]
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", s["repo"]), s["id"]
        names = [c["name"] for c in s["case"]]
        assert len(set(names)) == len(names), s["id"]
        assert [c for c in s["case"] if c["expect"] == "clear" and not c.get("replace") and not c.get("args")
                and not c.get("unport")], s["id"]
        bugs = [c for c in s["case"] if c["expect"] != "clear" and (c.get("replace") or c.get("args"))]
        assert len(bugs) >= 2, s["id"]


def test_every_bug_case_names_a_code_and_a_line_and_undoes_only_existing_ports():
    for s in load():
        for case in s["case"]:
            for index in case.get("unport", []):
                assert 0 <= index < len(s.get("port", [])), (s["id"], case["name"])
            for pair in case.get("replace", []) + s.get("port", []):
                assert len(pair) == 2 and pair[0] and pair[0] != pair[1], (s["id"], case["name"])
            if case["expect"] == "clear":
                continue
            codes = [case["expect"]] if isinstance(case["expect"], str) else case["expect"]
            assert codes and all(CODE.fullmatch(c) for c in codes), (s["id"], case["name"])
            assert case.get("at"), (s["id"], case["name"])
