"""`-j N` gives the output of `-j1`; the result cache returns the same findings and is invalidated
by any change of the file or the settings; a corrupt entry is a miss, never an error."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support import ROOT, run_cli
from trainlint.cache import Cache
from trainlint.config import Settings
from trainlint.engine import lint_paths
from trainlint.parallel import lint_files

EXAMPLES = ROOT / "examples"


def _tree(tmp_path: Path) -> Path:
    """Examples with findings, a parse error, an unreadable file, a non-ML file, a notebook-free
    mix; enough files that `-j2` really uses the pool (MIN_PARALLEL_FILES, MIN_PARALLEL_BYTES)."""
    root = tmp_path / "proj"
    root.mkdir()
    for i in range(3):
        for src in sorted(EXAMPLES.glob("*.py")):
            d = root / f"pkg{i}"
            d.mkdir(exist_ok=True)
            # one long string makes the files big enough for the pool, cheap to parse, no finding
            text = src.read_text(encoding="utf-8") + '\n"""' + "padding " * 5000 + '"""\n'
            (d / src.name).write_text(text, encoding="utf-8")
    (root / "broken.py").write_text("import torch\ndef f(:\n    pass\n", encoding="utf-8")
    (root / "plain.py").write_text("print('no framework here')\n", encoding="utf-8")
    (root / "latin1.py").write_bytes(b"import torch\nx = '\xe9'\n")
    (root / "empty.py").write_text("", encoding="utf-8")
    return root


def _flat(results):
    return [(r.filename, r.parsed, r.training, r.note, r.internal_error, [f.to_json() for f in r.findings]) for r in results]


def test_jobs_2_equals_jobs_1(tmp_path):
    root = _tree(tmp_path)
    one = lint_paths([root], Settings(), jobs=1)
    two = lint_paths([root], Settings(), jobs=2)
    assert _flat(two) == _flat(one)
    assert [r.filename for r in two] == sorted(r.filename for r in two)
    codes = {f.code for r in one for f in r.findings}
    assert {"TL001", "TL002", "TL301", "TL101"} <= codes


def test_pool_is_really_used_and_serial_for_few_files(tmp_path, monkeypatch):
    import trainlint.parallel as par

    root = _tree(tmp_path)
    calls = []
    real = par._run_pool
    monkeypatch.setattr(par, "_run_pool", lambda *a: calls.append(1) or real(*a))
    lint_paths([root], Settings(), jobs=2)
    assert calls == [1]
    lint_paths([EXAMPLES / "mnli_trainer_buggy.py"], Settings(), jobs=2)
    assert calls == [1]  # one small file: no pool


def test_cli_jobs_output_identical(tmp_path):
    root = _tree(tmp_path)
    outs = [run_cli("check", str(root), "--no-cache", "-j", j, "--output-format", "json") for j in ("1", "2")]
    assert outs[0].returncode == outs[1].returncode == 1
    assert outs[0].stdout == outs[1].stdout
    assert json.loads(outs[0].stdout)


def test_cache_hit_returns_identical_findings(tmp_path):
    root = _tree(tmp_path)
    cache_dir = tmp_path / "cache"
    cold = lint_paths([root], Settings(), jobs=1, cache_dir=cache_dir)
    entries = list((cache_dir).rglob("*.json"))
    assert entries, "the cold run writes entries"
    assert (cache_dir / ".gitignore").exists() and (cache_dir / "CACHEDIR.TAG").exists()
    warm = lint_paths([root], Settings(), jobs=2, cache_dir=cache_dir)
    assert _flat(warm) == _flat(cold)
    # a hit never calls the engine
    import trainlint.parallel as par

    def boom(*a, **k):
        raise AssertionError("linted again")

    orig = par.lint_file
    par.lint_file = boom
    try:
        again = lint_paths([root / "pkg0"], Settings(), jobs=1, cache_dir=cache_dir)
    finally:
        par.lint_file = orig
    assert _flat(again) == _flat([r for r in cold if r.filename.startswith(str(root / "pkg0"))])


def test_cache_keeps_fixes_and_hints(tmp_path):
    cache_dir = tmp_path / "cache"
    target = EXAMPLES / "mnli_trainer_buggy.py"
    cold = lint_paths([target], Settings(), cache_dir=cache_dir)
    warm = lint_paths([target], Settings(), cache_dir=cache_dir)
    assert [f for r in warm for f in r.findings] == [f for r in cold for f in r.findings]
    assert any(f.fix for r in warm for f in r.findings)


def _misses(root, settings, cache_dir):
    from trainlint.files import discover

    files = discover([root], settings)
    cache = Cache(cache_dir, settings)
    return sum(1 for f in files if f.error is None and cache.get(cache.key(f.path.read_bytes(), f.display), f.display) is None)


def test_changing_the_file_invalidates(tmp_path):
    cache_dir = tmp_path / "cache"
    f = tmp_path / "train.py"
    shutil.copy(EXAMPLES / "mnli_trainer_buggy.py", f)
    first = lint_paths([f], Settings(), cache_dir=cache_dir)[0]
    assert first.findings
    f.write_text(f.read_text(encoding="utf-8").replace("evaluation_strategy", "eval_strategy"), encoding="utf-8")
    second = lint_paths([f], Settings(), cache_dir=cache_dir)[0]
    assert "TL805" in {x.code for x in first.findings}
    assert "TL805" not in {x.code for x in second.findings}
    assert _misses(tmp_path, Settings(), cache_dir) == 0


def test_changing_the_settings_invalidates(tmp_path):
    cache_dir = tmp_path / "cache"
    f = tmp_path / "train.py"
    shutil.copy(EXAMPLES / "mnli_trainer_buggy.py", f)
    lint_paths([f], Settings(), cache_dir=cache_dir)
    assert _misses(tmp_path, Settings(), cache_dir) == 0
    only = Settings(select=["TL805"])
    assert _misses(tmp_path, only, cache_dir) == 1
    res = lint_paths([f], only, cache_dir=cache_dir)[0]
    assert {x.code for x in res.findings} == {"TL805"}
    ignored = Settings(per_file_ignores={"train.py": ["TL3"]}, project_root=tmp_path)
    res = lint_paths([f], ignored, cache_dir=cache_dir)[0]
    assert "TL301" not in {x.code for x in res.findings} and "TL805" in {x.code for x in res.findings}
    # the version of trainlint is part of the key
    import trainlint.cache as cache_mod

    old = cache_mod._FINGERPRINT
    cache_mod._FINGERPRINT = "another-build"
    try:
        assert _misses(tmp_path, Settings(), cache_dir) == 1
    finally:
        cache_mod._FINGERPRINT = old


@pytest.mark.parametrize("garbage", [b"", b"{not json", b'{"findings": [{"code": 1}]}', b"\x00\xff" * 10, b"[]"])
def test_corrupt_cache_entry_is_ignored(tmp_path, garbage):
    cache_dir = tmp_path / "cache"
    f = tmp_path / "train.py"
    shutil.copy(EXAMPLES / "mnli_trainer_buggy.py", f)
    cold = lint_paths([f], Settings(), cache_dir=cache_dir)
    entries = list(cache_dir.rglob("*.json"))
    assert len(entries) == 1
    entries[0].write_bytes(garbage)
    again = lint_paths([f], Settings(), cache_dir=cache_dir)
    assert _flat(again) == _flat(cold)
    assert json.loads(entries[0].read_text(encoding="utf-8"))["findings"]  # rewritten


def test_internal_errors_are_not_cached(tmp_path, monkeypatch):
    from trainlint.stages.s8_compat.rules import EvaluationStrategyArgument

    monkeypatch.setattr(EvaluationStrategyArgument, "visit_Call", lambda self, node: 1 / 0)
    cache_dir = tmp_path / "cache"
    res = lint_paths([EXAMPLES / "mnli_trainer_buggy.py"], Settings(), cache_dir=cache_dir)[0]
    assert res.internal_error
    assert not list(cache_dir.rglob("*.json"))


def test_cli_cache_dir_and_no_cache(tmp_path):
    root = _tree(tmp_path)
    cache_dir = tmp_path / "c"
    a = run_cli("check", str(root), "--cache-dir", str(cache_dir))
    assert list(cache_dir.rglob("*.json"))
    b = run_cli("check", str(root), "--cache-dir", str(cache_dir))
    assert (a.returncode, a.stdout) == (b.returncode, b.stdout) and a.returncode == 1
    nc = tmp_path / "nc"
    nc.mkdir()
    c = run_cli("check", str(root), "--no-cache", cwd=nc)
    assert c.stdout == a.stdout
    assert not (nc / ".trainlint_cache").exists()


def test_lint_files_keeps_input_order_and_reports_unreadable(tmp_path):
    from trainlint.files import SourceFile

    good = EXAMPLES / "mnli_trainer_buggy.py"
    files = [SourceFile(tmp_path / "gone.py", "gone.py", "no such file or directory"), SourceFile(good, "b.py"),
             SourceFile(good, "a.py")]
    res = lint_files(files, Settings(), jobs=2)
    assert [r.filename for r in res] == ["gone.py", "b.py", "a.py"]
    assert [f.code for f in res[0].findings] == ["TL002"]


def test_a_worker_that_dies_loses_no_other_file(tmp_path, monkeypatch):
    """A crash in native code (e.g. the parser overflowing the C stack) kills a worker: that file
    is an internal error, every other file's findings are still there, in order."""
    import os

    import trainlint.parallel as par

    root = _tree(tmp_path)
    crasher = root / "pkg1" / "mnli_keras_fixed.py"
    real = par._lint_one

    def lint_or_die(path, display, settings):
        if path == str(crasher):
            os._exit(70)
        return real(path, display, settings)

    monkeypatch.setattr(par, "_lint_one", lint_or_die)  # inherited by the forked workers
    res = lint_paths([root], Settings(), jobs=2)
    monkeypatch.setattr(par, "_lint_one", real)
    ref = lint_paths([root], Settings(), jobs=1)
    assert [r.filename for r in res] == [r.filename for r in ref]
    for a, b in zip(res, ref):
        if a.filename == str(crasher):
            assert a.internal_error and [f.code for f in a.findings] == ["TL003"]
        else:
            assert _flat([a]) == _flat([b])


def test_cache_dir_from_the_config_file(tmp_path):
    from support import run_cli

    (tmp_path / "pyproject.toml").write_text('[tool.trainlint]\ncache-dir = "build-cache/tl"\n')
    (tmp_path / "train.py").write_text("from transformers import TrainingArguments\n"
                                       "a = TrainingArguments('o', evaluation_strategy='epoch')\n")
    assert run_cli("train.py", cwd=tmp_path).returncode == 1
    assert any((tmp_path / "build-cache" / "tl").rglob("*")), "no cache entry written where the config says"
    assert not (tmp_path / ".trainlint_cache").exists()


def test_default_cache_goes_to_the_project_root_never_beside_a_script(tmp_path, monkeypatch):
    from trainlint.cache import DIRNAME, default_directory

    project = tmp_path / "project"
    (project / "scripts" / "deep").mkdir(parents=True)
    (project / "pyproject.toml").write_text("")
    assert default_directory(None, project / "scripts" / "deep") == project / DIRNAME
    assert default_directory(tmp_path / "cfg") == tmp_path / "cfg" / DIRNAME  # where the config file is
    loose = tmp_path / "loose"  # no pyproject.toml or .git up to the file system root
    loose.mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: tmp_path))
    assert default_directory(None, loose) == tmp_path / "xdg" / "trainlint"
    (loose / "train.py").write_text("x = 1\n")
    assert run_cli("train.py", cwd=loose, env={"XDG_CACHE_HOME": str(tmp_path / "xdg")}).returncode == 0
    assert not (loose / DIRNAME).exists()
