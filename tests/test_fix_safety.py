"""A fix marked safe never turns running code into failing code. `--fix` (safe fixes only) over the
bundled examples and every ```python block of rules/*.md gives code that compiles and imports only what
the script's own evidence provides: the modules it imports already, those its install commands, PEP 723
block, version comments or project requirement files name, and those an API it uses cannot run without
(``knowledge.REQUIRED_BY``). The same check over the whole real corpus runs where the corpus is
materialised (``benchmarks/.corpus-real``, see benchmarks/accuracy.py): one shard of it in the default tier,
the whole in the ``slow`` tier."""

from __future__ import annotations

import ast
import re
import warnings
from pathlib import Path

import pytest

from support import ROOT, shard_of, shard_params
from trainlint.config import Settings
from trainlint.docs import load_doc
from trainlint.fixes import fix_source
from trainlint.knowledge import REQUIRED_BY
from trainlint.pins import PROJECT, normalize, project_pins, script_pins
from trainlint.rule import all_rules

CORPUS = ROOT / "benchmarks" / ".corpus-real" / "corpus"


def _imported(source: str) -> set[str]:
    """Top-level modules the code imports (at any depth)."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module.split(".")[0])
    return out


def _provided(source: str, filename: str) -> set[str]:
    """What the script's own evidence provides (normalised distribution names)."""
    names = {normalize(m) for m in _imported(source)}
    pins = {**project_pins(filename), **script_pins(source)}
    names |= {d for d, p in pins.items() if p.level <= PROJECT}
    for module, needs in REQUIRED_BY.items():
        if any(re.search(rf"\b{re.escape(n.split('.', 1)[1])}\b", source) for n in needs) and "transformers" in names:
            names.add(module)
    return names


def _check(source: str, filename: str) -> str | None:
    """Why the safe fixes of ``source`` are not safe (None: they are)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the corpus's own invalid escape sequences
        try:
            ast.parse(source)
        except SyntaxError:
            return None  # not running code to begin with
        result = fix_source(source, filename, Settings(select=["ALL"]), unsafe=False)
        if result.source == source:
            return None
        codes = sorted({f.code for f in result.fixed})
        try:
            compile(result.source, filename, "exec")
        except SyntaxError as exc:
            return f"{codes}: the fixed code does not compile: {exc}"
    added = {normalize(m) for m in _imported(result.source) - _imported(source)}
    missing = added - _provided(source, filename)
    if missing:
        return f"{codes}: imports {sorted(missing)}, which the script's evidence does not provide"
    return None


def _doc_blocks():
    for code in sorted(all_rules()):
        doc = load_doc(code)
        if doc is None:
            continue
        for kind, blocks in (("example", doc.bad), ("use-instead", doc.good)):
            for i, ex in enumerate(blocks, 1):
                if not ex.filename.endswith(".ipynb"):
                    yield pytest.param(ex.code, ex.filename, id=f"{code}-{kind}-{i}")


@pytest.mark.parametrize("source, filename", list(_doc_blocks()))
def test_safe_fixes_of_the_rule_documents_keep_the_script_running(source, filename):
    assert _check(source, filename) is None


EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_safe_fixes_of_the_examples_keep_the_script_running(path: Path):
    assert _check(path.read_text(encoding="utf-8"), str(path)) is None


def test_the_check_catches_an_import_the_script_does_not_install():
    source = "from datasets import load_metric\nmetric = load_metric('accuracy')\n"
    fixed = fix_source(source, "train.py", Settings(), unsafe=True).source
    assert "import evaluate" in fixed
    assert "evaluate" not in _provided(source, "train.py")
    assert "evaluate" in _provided("# pip install datasets evaluate\n" + source, "train.py")


@pytest.mark.parametrize("shard", shard_params())
def test_safe_fixes_of_the_real_corpus_keep_each_script_running(shard):
    """Every materialised file of the correct-code corpus (python scripts; notebooks through their code),
    one shard of the files per test (shard 1 is the default tier's sample, the others are ``slow``)."""
    if not CORPUS.is_dir():
        pytest.skip("the corpus is not materialised here: python benchmarks/accuracy.py materialize ...")
    from trainlint.notebook import NotebookError, parse_notebook

    problems = []
    paths = [p for p in sorted(CORPUS.rglob("*")) if p.suffix in (".py", ".ipynb") and p.is_file()]
    for path in shard_of(paths, shard):
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix == ".ipynb":
            try:
                text = parse_notebook(text).source
            except NotebookError:
                continue
        why = _check(text, str(path))
        if why is not None:
            problems.append(f"{path.relative_to(CORPUS)}: {why}")
    assert problems == []


LOAD_METRIC = "from datasets import load_metric\nmetric = load_metric('accuracy')\n"


@pytest.mark.parametrize(("prefix", "safe"), [
    ("", False),  # nothing says evaluate is installed: `import evaluate` may fail
    ("# !pip install datasets evaluate\n", True),
    ('# /// script\n# dependencies = ["datasets<3", "evaluate"]\n# ///\n', True),
    ("import evaluate\n", True),  # imported already: the fix adds no import
])
def test_tl801_fix_is_safe_only_where_the_script_provides_evaluate(prefix, safe):
    from support import lint

    [f] = lint(prefix + LOAD_METRIC, "TL801")
    assert f.fix is not None and (f.fix.applicability.value == "safe") is safe


def test_tl801_fix_is_safe_with_evaluate_in_the_projects_requirements(tmp_path: Path):
    from trainlint.engine import lint_file

    (tmp_path / "requirements.txt").write_text("datasets<3\nevaluate\n", encoding="utf-8")
    script = tmp_path / "train.py"
    script.write_text(LOAD_METRIC, encoding="utf-8")
    [f] = [f for f in lint_file(script, Settings()).findings if f.code == "TL801"]
    assert f.fix.applicability.value == "safe"
    (tmp_path / "requirements.txt").write_text("datasets<3\n", encoding="utf-8")
    other = tmp_path / "sub"
    other.mkdir()
    (other / "train.py").write_text(LOAD_METRIC, encoding="utf-8")
    [f] = [f for f in lint_file(other / "train.py", Settings()).findings if f.code == "TL801"]
    assert f.fix.applicability.value == "unsafe"


def test_an_import_the_used_api_needs_keeps_the_fix_safe():
    """`import torch` for `transformers.AdamW` (whose module imports torch), `import tensorflow as tf` for a
    transformers TF model's loss: a script that runs has them."""
    from support import lint

    [f] = lint("import transformers\nopt = transformers.AdamW(params, lr=1e-3)\n", "TL802")
    assert any("import torch" in e.content for e in f.fix.edits) and f.fix.applicability.value == "safe"
    [f] = lint("from transformers import TFAutoModelForSequenceClassification\n"
               "model = TFAutoModelForSequenceClassification.from_pretrained('bert-base-cased', num_labels=2)\n"
               "model.compile(loss='sparse_categorical_crossentropy', optimizer='adam')\n", "TL402")
    assert any("import tensorflow as tf" in e.content for e in f.fix.edits) and f.fix.applicability.value == "safe"
