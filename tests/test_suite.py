"""How the suite itself runs: ./scripts/test runs every tier with one pytest-xdist worker per core, the
corpus-wide runs are split into shards that cover every file once (the first one in the default tier,
the others ``slow``), and the tests are grouped and ordered for the workers."""

from __future__ import annotations

import re
import shlex
import tomllib
from types import SimpleNamespace

import pytest

from support import ROOT, SHARDS, group_for_workers, shard_of, shard_params


@pytest.mark.parametrize("count", [0, 1, SHARDS - 1, SHARDS, 3 * SHARDS + 5, 2860])
def test_the_shards_cover_every_file_once(count):
    files = [f"f{i}.py" for i in range(count)]
    shards = [shard_of(files, i) for i in range(SHARDS)]
    assert sorted(f for shard in shards for f in shard) == sorted(files)
    assert max(map(len, shards)) - min(map(len, shards)) <= 1
    if count >= SHARDS:  # the default tier's sample is spread over the whole corpus, not its first files
        assert files[0] in shards[0] and shards[0][-1] in files[-SHARDS:]


def test_only_the_first_shard_runs_in_the_default_tier():
    params = shard_params()
    assert [p.values for p in params] == [(i,) for i in range(SHARDS)]
    assert [[m.name for m in p.marks] for p in params] == [[]] + [["slow"]] * (SHARDS - 1)


def _item(module: str, shard: int | None = None, marker: str | None = None):
    markers = {marker: SimpleNamespace(name=marker)} if marker else {}
    item = SimpleNamespace(module=SimpleNamespace(__name__=module), name=f"{module}-{shard}-{marker}")
    item.callspec = SimpleNamespace(params={"shard": shard} if shard is not None else {})
    item.get_closest_marker = lambda name: markers.get(name)
    item.add_marker = lambda mark: markers.setdefault(mark.name, mark)
    return item


def test_groups_keep_a_module_on_one_worker_and_start_with_the_longest():
    items = [
        _item("test_cli"), _item("test_cli"),
        _item("test_robustness", shard=0), _item("test_robustness", shard=1), _item("test_robustness"),
        _item("test_torch_probe", marker="probe"), _item("test_torch_probe", marker="probe"),
        _item("test_keras_probe", marker="keras"),
        _item("test_zz"),
    ]
    before = list(items)
    group_for_workers(items)
    assert [i.name for i in items] == [i.name for i in (before[2], before[3], before[5], before[6], before[7],
                                                        before[0], before[1], before[4], before[8])]
    groups = [i.get_closest_marker("xdist_group") for i in items]
    # a shard is a group of its own (no mark); every other test is in its module's group
    assert groups[:2] == [None, None]
    assert [g.args[0] for g in groups[2:]] == [i.module.__name__ for i in items[2:]]


def test_scripts_test_runs_every_tier_on_every_core():
    script = (ROOT / "scripts" / "test").read_text()
    (pytest_line,) = [line for line in script.splitlines() if re.search(r"-m pytest\b", line)]
    args = shlex.split(pytest_line)
    assert args[args.index("-n") + 1] == "$(nproc 2>/dev/null || echo 2)"
    assert args[args.index("--dist") + 1] == "loadgroup" and "--no-loadscope-reorder" in args
    assert "-m" not in args[args.index("pytest") + 1:], "./scripts/test must run the slow tier too"


def test_the_parallel_runner_is_installed_and_pinned():
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    assert any(re.fullmatch(r"pytest-xdist>=3\.8", req) for req in extra)  # --no-loadscope-reorder: 3.8
    pins = dict(line.split("==") for line in (ROOT / "constraints" / "test.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    assert pins["pytest-xdist"].startswith("3.") and int(pins["pytest-xdist"].split(".")[1]) >= 8
    assert "execnet" in pins
