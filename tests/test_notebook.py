"""Notebooks: the course's MNLI Trainer script split into cells, with a `!pip install` cell, a line
magic and a `%%time` cell. Findings name the cell (1-based among all cells) and the row within it;
fixes rewrite only the changed cell sources and keep outputs, metadata and Jupyter's formatting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from trainlint.config import Settings
from trainlint.engine import lint_file
from trainlint.findings import Edit, Position
from trainlint.fixes import apply_edits
from trainlint.notebook import (
    NotebookError,
    fix_notebook_text,
    lint_notebook_text,
    mask_magics,
    parse_notebook,
    unmask_magics,
)

CELLS = [
    ("markdown", "# Fine-tuning a model on MNLI\nThe course notebook, with its bugs."),
    ("code", "!pip install datasets evaluate transformers[sentencepiece]"),
    ("code", 'import evaluate\n'
             'from datasets import load_dataset\n'
             'from transformers import (\n'
             '    AutoModelForSequenceClassification,\n'
             '    AutoTokenizer,\n'
             '    Trainer,\n'
             '    TrainingArguments,\n'
             ')\n'
             '\n'
             'raw_datasets = load_dataset("glue", "mnli")\n'
             'checkpoint = "distilbert-base-uncased"\n'
             'tokenizer = AutoTokenizer.from_pretrained(checkpoint)\n'),
    ("code", 'def tokenize(batch):\n'
             '    return tokenizer(batch["premise"], batch["hypothesis"], truncation=True)\n'
             '\n'
             'tokenized = raw_datasets.map(tokenize, batched=True)\n'
             'model = AutoModelForSequenceClassification.from_pretrained(checkpoint)'),
    ("code", '%load_ext autoreload\n'
             'args = TrainingArguments(\n'
             '    "mnli-distilbert",\n'
             '    evaluation_strategy="epoch",\n'
             '    save_strategy="epoch",\n'
             '    learning_rate=2e-5,\n'
             ')\n'
             'accuracy = evaluate.load("glue", "mnli")\n'
             '\n'
             'def compute_metrics(eval_pred):\n'
             '    logits, labels = eval_pred\n'
             '    return accuracy.compute(predictions=logits, references=labels)'),
    ("markdown", "Now train (this takes a while)."),
    ("code", '%%time\n'
             'trainer = Trainer(\n'
             '    model,\n'
             '    args,\n'
             '    train_dataset=raw_datasets["train"],\n'
             '    eval_dataset=raw_datasets["validation_matched"],\n'
             '    compute_metrics=compute_metrics,\n'
             ')\n'
             'trainer.train()'),
]

#: (cell among all cells, row in cell, column, code) — cell 1 is the markdown title
EXPECTED = [
    (4, 5, 9, "TL301"),  # from_pretrained without num_labels (glue/mnli loaded in cell 3)
    (5, 4, 5, "TL805"),  # evaluation_strategy=
    (5, 12, 12, "TL601"),  # logits to the metric
    (7, 2, 11, "TL201"),  # Trainer without collator
    (7, 5, 19, "TL101"),  # raw train split
    (7, 6, 18, "TL101"),  # raw validation split
]


def _source(text: str) -> list[str]:
    lines = text.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


def make_notebook(cells=CELLS) -> dict:
    nb_cells = []
    for i, (kind, text) in enumerate(cells):
        cell = {"cell_type": kind, "id": f"c{i}", "metadata": {}, "source": _source(text)}
        if kind == "code":
            cell["execution_count"] = i
            cell["outputs"] = [{"name": "stdout", "output_type": "stream", "text": [f"output of cell {i + 1} — ok\n"]}]
        nb_cells.append(cell)
    return {
        "cells": nb_cells,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python", "version": "3.11.4"},
            "colab": {"provenance": []},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def jupyter_dumps(nb: dict) -> str:
    """What Jupyter writes (nbformat.writes): indent 1, sorted keys, no ASCII escaping, newline."""
    return json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


@pytest.fixture
def course(tmp_path: Path) -> Path:
    p = tmp_path / "course.ipynb"
    p.write_text(jupyter_dumps(make_notebook()), encoding="utf-8")
    return p


def found(result) -> list[tuple]:
    return [(f.cell, f.start.row, f.start.column, f.code) for f in result.findings]


def test_findings_name_cell_and_row(course: Path):
    result = lint_file(course, Settings(), "course.ipynb")
    assert found(result) == EXPECTED
    assert not result.internal_error
    tl805 = next(f for f in result.findings if f.code == "TL805")
    assert (tl805.end.row, tl805.end.column) == (4, 24)  # `evaluation_strategy` within the cell
    # the row/column address the cell's own text
    line = CELLS[4][1].split("\n")[tl805.start.row - 1]
    assert line[tl805.start.column - 1: tl805.end.column - 1] == "evaluation_strategy"


def test_magics_and_shell_lines_are_tolerated():
    cells = [
        ("code", "%pip install transformers\n!nvidia-smi\nfiles = !ls data\nimport torch\ntorch?"),
        ("code", "%%bash\nfor f in *.csv; do\n  echo $f\ndone"),
        ("code", "for i in range(2):\n    !echo $i\n    %time print(i)\nfrom transformers import TrainingArguments\n"
                 "args = TrainingArguments('out', evaluation_strategy='epoch')"),
    ]
    result = lint_notebook_text(jupyter_dumps(make_notebook(cells)), "magic.ipynb", Settings(select=["ALL"]))
    assert result.parsed
    assert found(result) == [(3, 5, 33, "TL805")]


def test_syntax_error_is_located_in_its_cell():
    cells = [("code", "from transformers import TrainingArguments\nx = 1"), ("markdown", "text"),
             ("code", "y = (1,\nargs = TrainingArguments('out', evaluation_strategy='epoch')")]
    result = lint_notebook_text(jupyter_dumps(make_notebook(cells)), "broken.ipynb", Settings())
    assert [f.code for f in result.findings] == ["TL001"]
    assert result.findings[0].cell == 3


@pytest.mark.parametrize("text", ['{"cells": [', "not json at all", "[1, 2, 3]", '{"worksheets": []}'])
def test_invalid_notebook_gives_one_tl002(tmp_path: Path, text: str):
    p = tmp_path / "bad.ipynb"
    p.write_text(text, encoding="utf-8")
    result = lint_file(p, Settings(), "bad.ipynb")
    assert [f.code for f in result.findings] == ["TL002"]
    assert result.findings[0].start == Position(1, 1)
    with pytest.raises(NotebookError):
        parse_notebook(text)


def test_non_python_notebook_is_skipped():
    nb = make_notebook([("code", "library(torch)\nx <- 1")])
    nb["metadata"] = {"kernelspec": {"language": "R", "name": "ir"}, "language_info": {"name": "R"}}
    result = lint_notebook_text(jupyter_dumps(nb), "r.ipynb", Settings())
    assert result.findings == []


def test_round_trip_is_byte_identical(course: Path):
    text = course.read_text(encoding="utf-8")
    nb = parse_notebook(text)
    assert nb.with_source(nb.source) == text
    assert fix_notebook_text(text, lambda s: apply_edits(s, [])) == text
    assert fix_notebook_text(text, lambda s: s) == text


def test_edits_rewrite_only_the_changed_cell(course: Path):
    text = course.read_text(encoding="utf-8")
    nb = parse_notebook(text)
    # the edit as the engine reports it on the virtual module
    from trainlint.engine import lint_text

    virtual = lint_text(nb.source, "course.ipynb", Settings())
    tl805 = next(f for f in virtual.findings if f.code == "TL805")
    new_text = fix_notebook_text(text, lambda s: apply_edits(s, [Edit(tl805.start, tl805.end, "eval_strategy")]))

    assert new_text.endswith("}\n") and new_text.startswith('{\n "cells": [\n  {\n')  # indent 1, newline
    before, after = json.loads(text), json.loads(new_text)
    assert after["metadata"] == before["metadata"]
    for b, a in zip(before["cells"], after["cells"]):
        assert a.get("outputs") == b.get("outputs") and a.get("execution_count") == b.get("execution_count")
        assert a["metadata"] == b["metadata"] and a["id"] == b["id"]
    changed = [i for i, (b, a) in enumerate(zip(before["cells"], after["cells"])) if a["source"] != b["source"]]
    assert changed == [4]
    assert after["cells"][4]["source"][0] == "%load_ext autoreload\n"  # the magic is restored
    assert after["cells"][4]["source"][3] == '    eval_strategy="epoch",\n'
    # only that one line differs in the file
    diff = [(x, y) for x, y in zip(text.splitlines(), new_text.splitlines()) if x != y]
    assert diff == [('    "    evaluation_strategy=\\"epoch\\",\\n",', '    "    eval_strategy=\\"epoch\\",\\n",')]
    # and the fixed notebook no longer has the finding, the others stay in place
    p2 = course.with_name("fixed.ipynb")
    p2.write_text(new_text, encoding="utf-8")
    assert found(lint_file(p2, Settings(), "fixed.ipynb")) == [e for e in EXPECTED if e[3] != "TL805"]


def test_fix_that_adds_lines_keeps_cell_boundaries(course: Path):
    text = course.read_text(encoding="utf-8")

    def add_import_and_collator(src: str) -> str:
        src = src.replace("import evaluate\n", "import evaluate\nimport numpy as np\n", 1)
        return src.replace("    compute_metrics=compute_metrics,\n",
                           "    compute_metrics=compute_metrics,\n    processing_class=tokenizer,\n", 1)

    new = json.loads(fix_notebook_text(text, add_import_and_collator))
    assert len(new["cells"]) == len(CELLS)
    assert new["cells"][2]["source"][:2] == ["import evaluate\n", "import numpy as np\n"]
    assert new["cells"][6]["source"][0] == "%%time\n"
    assert "    processing_class=tokenizer,\n" in new["cells"][6]["source"]
    assert new["cells"][1]["source"] == ["!pip install datasets evaluate transformers[sentencepiece]"]


def test_fix_that_breaks_a_cell_marker_is_refused(course: Path):
    text = course.read_text(encoding="utf-8")
    with pytest.raises(NotebookError):
        fix_notebook_text(text, lambda s: s.replace("# tl-cell 5\n", ""))


def test_cli_reports_cells(course: Path, cli):
    proc = cli(str(course), "--output-format", "concise")
    assert proc.returncode == 1, proc.stderr
    assert f"{course}:cell 5:4:5: TL805" in proc.stdout
    proc = cli(str(course), "--output-format", "json")
    data = json.loads(proc.stdout)
    assert [(d["cell"], d["location"]["row"], d["code"]) for d in data] == [(c, r, code) for c, r, _, code in EXPECTED]


def test_directory_walk_includes_notebooks(course: Path, cli):
    proc = cli(str(course.parent))
    assert "course.ipynb:cell 7:2:11: TL201" in proc.stdout


def test_pre_commit_hook_covers_notebooks(tmp_path: Path):
    import yaml
    from identify.identify import tags_from_path

    hooks = yaml.safe_load((Path(__file__).resolve().parent.parent / ".pre-commit-hooks.yaml").read_text())
    (hook,) = [h for h in hooks if h["id"] == "trainlint"]
    assert set(hook["types_or"]) == {"python", "jupyter"} and "types" not in hook
    nb = tmp_path / "course.ipynb"
    nb.write_text(jupyter_dumps(make_notebook()), encoding="utf-8")
    py = tmp_path / "train.py"
    py.write_text("import torch\n", encoding="utf-8")
    for path in (nb, py):  # what pre-commit matches the hook's types against
        assert tags_from_path(str(path)) & set(hook["types_or"])


def test_mask_and_unmask_one_cell():
    cell = "%%time\nimport torch\nfor i in range(2):\n    !echo $i\nx = torch.zeros(2)\n"
    masked = mask_magics(cell)
    assert masked == ("pass  # tl-magic-0 %%time\nimport torch\nfor i in range(2):\n    pass  # tl-magic-1 !echo $i\n"
                      "x = torch.zeros(2)\n")
    edited = masked.replace("import torch\n", "import torch\nimport numpy as np\n")
    assert unmask_magics(edited, cell) == cell.replace("import torch\n", "import torch\nimport numpy as np\n")
    assert mask_magics("x = 1") == "x = 1"


# ---------------------------------------------------------------------------------------------
# IPython syntax, as IPython itself reads it, and one broken cell costing only itself.

#: every form IPython accepts that is not Python; the last cell has a finding that must survive
IPYTHON_CELLS = [
    ("code", "!pip install -q transformers datasets \\\n    evaluate accelerate"),  # a continued shell line
    ("code", "%%capture\n!pip install -U transformers \\\n  sentencepiece\nimport torch"),
    ("code", "%%bash\nif [ -d data ]; then\n  echo ok\nfi"),
    ("code", "%%writefile train_script.py\nimport torch\ndef (:\n"),  # not Python: not linted
    ("code", "files = !ls data\nenv = %env\n%matplotlib inline\n!!nvidia-smi\nimport torch\ntorch.zeros?\n??torch.ones"),
    ("code", "for f in files:\n    !echo {f} \\\n        done\n    %time print(f)\nawait asyncio.sleep(0)"),
    ("code", "pip install -q transformers"),  # automagic: a one-line cell runs `%pip`
    ("code", "ls ./data/train/"),  # a default shell alias, one-line cell
    ("code", "from transformers import TrainingArguments\n"
             "args = TrainingArguments('out', evaluation_strategy='epoch')"),
]


def test_no_tl001_on_any_cell_ipython_accepts():
    result = lint_notebook_text(jupyter_dumps(make_notebook(IPYTHON_CELLS)), "ipy.ipynb", Settings(select=["ALL"]))
    assert [f.code for f in result.findings if f.code.startswith("TL0")] == []
    assert found(result) == [(9, 2, 33, "TL805")]


def test_automagic_is_only_for_one_line_cells():
    """IPython's prefilter (automagic) applies to one-line cells only: in a longer cell a bare
    `pip install x` is a SyntaxError in the kernel too."""
    cells = [("code", "import torch\npip install -q transformers"), ("code", "ls = 3\nls -l")]
    result = lint_notebook_text(jupyter_dumps(make_notebook(cells)), "auto.ipynb", Settings())
    assert [(f.cell, f.code) for f in result.findings] == [(1, "TL001")]  # `ls -l` is `ls - l`: Python


def test_ipython_continuation_lines_are_restored_by_a_fix():
    text = jupyter_dumps(make_notebook(IPYTHON_CELLS))
    new = json.loads(fix_notebook_text(text, lambda s: s.replace("evaluation_strategy", "eval_strategy")))
    before = json.loads(text)
    assert [c["source"] for c in new["cells"][:8]] == [c["source"] for c in before["cells"][:8]]
    assert new["cells"][8]["source"][1] == "args = TrainingArguments('out', eval_strategy='epoch')"


def test_fallback_without_ipython_reads_the_common_forms(monkeypatch):
    import trainlint.notebook as notebook

    monkeypatch.setattr(notebook, "_TRANSFORMER", False)  # as if IPython were not installed
    cells = [IPYTHON_CELLS[0], IPYTHON_CELLS[4], IPYTHON_CELLS[-1]]
    result = lint_notebook_text(jupyter_dumps(make_notebook(cells)), "ipy.ipynb", Settings())
    assert found(result) == [(3, 2, 33, "TL805")]


def test_linting_python_files_does_not_import_ipython(tmp_path: Path):
    import subprocess
    import sys

    (tmp_path / "train.py").write_text("from transformers import TrainingArguments\nTrainingArguments('o', evaluation_strategy='no')\n")
    code = ("import sys; from pathlib import Path; from trainlint.engine import lint_file; from trainlint.config import Settings; "
            f"r = lint_file(Path({str(tmp_path / 'train.py')!r}), Settings()); print([f.code for f in r.findings], 'IPython' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['TL805'] False"


def _with_cell(cells, at: int, cell) -> list:
    return cells[:at] + [cell] + cells[at:]


def test_one_broken_cell_costs_only_that_cell():
    """The model of cell 4 still reaches the Trainer of the last cell across a broken cell between them."""
    cells = _with_cell(CELLS, 5, ("code", "def plot(history:\n    plt.plot(history)"))
    result = lint_notebook_text(jupyter_dumps(make_notebook(cells)), "broken.ipynb", Settings())
    shifted = [(c + (c > 5), r, col, code) for c, r, col, code in EXPECTED]
    assert found(result) == sorted(shifted + [(6, 1, 9, "TL001")])
    tl001 = next(f for f in result.findings if f.code == "TL001")
    assert "SyntaxError" in tl001.message


def test_a_truncated_cell_is_reported_in_itself():
    """A cell cut off in an open bracket: the error is in that cell, not in the next one."""
    cells = _with_cell(CELLS, 3, ("code", "labels = [\n    'entailment',\n    'neutral',"))
    result = lint_notebook_text(jupyter_dumps(make_notebook(cells)), "cut.ipynb", Settings())
    tl001 = [(f.cell, f.start.row) for f in result.findings if f.code == "TL001"]
    assert tl001 == [(4, 1)]
    assert len(result.findings) == len(EXPECTED) + 1


def test_a_broken_cell_is_never_rewritten_by_a_fix():
    cells = _with_cell(CELLS, 5, ("code", "def plot(history:\n    plt.plot(history)"))
    text = jupyter_dumps(make_notebook(cells))
    new = json.loads(fix_notebook_text(text, lambda s: s.replace("plot", "PLOT").replace("evaluation_strategy", "eval_strategy")))
    assert new["cells"][5]["source"] == json.loads(text)["cells"][5]["source"]
    assert '    eval_strategy="epoch",\n' in new["cells"][4]["source"]


def test_a_cell_ipythons_tokenizer_refuses_is_one_tl001():
    """IPython's tokenizer raises on a bad dedent: that cell is broken, the notebook is still linted."""
    cells = _with_cell(CELLS, 2, ("code", "try:\n        x = 1\n    except OverflowError:\n        pass\n!ls"))
    result = lint_notebook_text(jupyter_dumps(make_notebook(cells)), "dedent.ipynb", Settings())
    assert [(f.cell, f.code) for f in result.findings if f.code == "TL001"] == [(3, "TL001")]
    assert len(result.findings) == len(EXPECTED) + 1


# ---------------------------------------------------------------------------------------------
# --fix rewrites only the edited cells' source, in the file's own JSON style.

STYLE_CELLS = [
    ("markdown", "# Réglage fin — «MNLI» 🚀"),
    ("code", "!pip install transformers datasets"),
    ("code", "from transformers import TrainingArguments\n"
             "# l'entraînement: données « propres »\n"
             'args = TrainingArguments(\n    "out",\n    evaluation_strategy="epoch",\n)\n'
             'print("fini ✓")'),
    ("code", 'x = "\\t tab and \\u001b escape"'),
]

#: how notebooks are written: (name, json.dumps keywords, trailing newline, key order)
STYLES = [
    ("colab-compact", {"separators": (",", ":"), "ensure_ascii": False}, False, "colab"),
    ("compact-spaced", {"ensure_ascii": False}, False, "colab"),
    ("jupyter-indent-1", {"indent": 1, "sort_keys": True, "ensure_ascii": False}, True, "jupyter"),
    ("indent-2-ascii", {"indent": 2, "ensure_ascii": True}, True, "colab"),
    ("indent-4-ascii-no-newline", {"indent": 4, "ensure_ascii": True}, False, "jupyter"),
]


def _styled_notebook(order: str, source_as_string: bool = False) -> dict:
    nb = make_notebook(STYLE_CELLS)
    if source_as_string:
        for cell in nb["cells"]:
            cell["source"] = "".join(cell["source"])
    if order == "colab":  # Colab writes nbformat, metadata, then the cells
        nb = {"nbformat": nb["nbformat"], "nbformat_minor": nb["nbformat_minor"], "metadata": nb["metadata"],
              "cells": nb["cells"]}
    return nb


def _fixed_notebook(nb: dict) -> dict:
    out = json.loads(json.dumps(nb))
    cell = out["cells"][2]
    if isinstance(cell["source"], str):
        cell["source"] = cell["source"].replace("evaluation_strategy", "eval_strategy")
    else:
        cell["source"] = [line.replace("evaluation_strategy", "eval_strategy") for line in cell["source"]]
    return out


@pytest.mark.parametrize("as_string", [False, True], ids=["source-lines", "source-string"])
@pytest.mark.parametrize(("name", "dumps", "newline", "order"), STYLES, ids=[s[0] for s in STYLES])
def test_fix_keeps_the_files_json_byte_for_byte(tmp_path: Path, name, dumps, newline, order, as_string):
    """Every byte but the edited cell's source stays: the file is what its own writer would have
    written with the fixed source."""
    from trainlint.fixes import fix_file

    nb = _styled_notebook(order, as_string)
    text = json.dumps(nb, **dumps) + ("\n" if newline else "")
    p = tmp_path / "nb.ipynb"
    p.write_bytes(text.encode("utf-8"))
    ff = fix_file(p, Settings())
    assert [f.code for f in ff.result.fixed] == ["TL805"]
    expected = json.dumps(_fixed_notebook(nb), **dumps) + ("\n" if newline else "")
    assert p.read_bytes().decode("utf-8") == expected


def test_fix_keeps_an_unusual_json_layout(tmp_path: Path):
    """A hand-edited file: odd spacing, an escaped slash, one non-ASCII character escaped and another
    raw, CRLF line endings. Only the edited line's string changes."""
    from trainlint.fixes import fix_file

    text = ('{ "nbformat" : 4 , "nbformat_minor":5,\r\n  "metadata" : {"language_info": {"name":"python"}},\r\n'
            '  "cells" : [\r\n'
            '    {"cell_type":"code" , "metadata":{}, "outputs":[{"output_type":"stream","name":"stdout",'
            '"text":["http:\\/\\/x caf\\u00e9\\n"]}], "execution_count":null,\r\n'
            '     "source" : [ "from transformers import TrainingArguments\\n" ,\r\n'
            '        "args = TrainingArguments(\\"out\\", evaluation_strategy=\\"epoch\\")\\n",  "# café"  ] }\r\n'
            '  ]\r\n}')
    p = tmp_path / "odd.ipynb"
    p.write_bytes(text.encode("utf-8"))
    fix_file(p, Settings())
    assert p.read_bytes().decode("utf-8") == text.replace("evaluation_strategy", "eval_strategy")


def test_fix_that_adds_and_removes_lines_keeps_the_layout(tmp_path: Path):
    """A fix that adds a line to a cell (an import) writes the new element in the list's own layout."""
    from trainlint.fixes import fix_file

    cells = [("code", "from datasets import load_metric\nimport evaluate\n\nmetric = load_metric(\"accuracy\")")]
    for dumps, newline in (({"separators": (",", ":")}, False), ({"indent": 1}, True)):
        nb = make_notebook(cells)
        nb["cells"][0]["source"] = _source(cells[0][1])
        text = json.dumps(nb, **dumps) + ("\n" if newline else "")
        p = tmp_path / "nb.ipynb"
        p.write_text(text, encoding="utf-8")
        ff = fix_file(p, Settings(), unsafe=True)
        assert [f.code for f in ff.result.fixed] == ["TL801"]
        after = json.loads(p.read_text(encoding="utf-8"))
        assert after["cells"][0]["source"] == ["import evaluate\n", "\n", "metric = evaluate.load(\"accuracy\")"]
        nb["cells"][0]["source"] = after["cells"][0]["source"]
        assert p.read_text(encoding="utf-8") == json.dumps(nb, **dumps) + ("\n" if newline else "")


def test_diff_of_a_compact_notebook_shows_only_the_edited_lines(tmp_path: Path, cli):
    nb = _styled_notebook("colab")
    big = {"output_type": "display_data", "metadata": {}, "data": {"image/png": "iVBORw0KGgo" * 20000}}
    nb["cells"][1]["outputs"].append(big)  # a 220 KB image on the one line of the file
    p = tmp_path / "colab.ipynb"
    text = json.dumps(nb, separators=(",", ":"), ensure_ascii=False)
    p.write_text(text, encoding="utf-8")
    proc = cli(str(p), "--diff")
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == (
        f"--- a/{p}:cell 3\n+++ b/{p}:cell 3\n"
        "@@ -2,6 +2,6 @@\n"
        " # l'entraînement: données « propres »\n"
        " args = TrainingArguments(\n"
        '     "out",\n'
        '-    evaluation_strategy="epoch",\n'
        '+    eval_strategy="epoch",\n'
        " )\n"
        ' print("fini ✓")\n'
        "\\ No newline at end of file\n"
    )
    assert p.read_text(encoding="utf-8") == text
