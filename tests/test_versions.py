"""Versions as the script sees them: the version-dependent rules judge a script by the versions its own
context declares (install cells, PEP 723, the project's requirement files), then the configured
target-versions, then what is installed."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from support import run_cli
from trainlint.config import Settings
from trainlint.engine import lint_file
from trainlint.findings import Severity
from trainlint.notebook import lint_notebook_text
from trainlint.pins import (
    CONFIGURED,
    INSTALL,
    INSTALLED,
    PROJECT,
    SCRIPT,
    Versions,
    project_pins,
    script_pins,
    upper_bound,
)


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("==4.30", ((4, 30), True)),
        ("==4.30.0", ((4, 30), True)),
        ("<5", ((5,), False)),
        ("<=4.46.1", ((4, 46, 1), True)),
        ("~=4.40", ((5,), False)),
        ("~=2.15.0", ((2, 16), False)),
        ("==4.*", ((5,), False)),
        (">=4.30,<4.45", ((4, 45), False)),
        ("=4.30", ((4, 31), False)),  # conda: 4.30.*
        ("^4.30", ((5,), False)),  # Poetry
        ("^0.3", ((0, 4), False)),
        ("~4.30", ((4, 31), False)),
        (">=4.30", (None, False)),  # pip installs the newest: the latest release
        ("", (None, False)),
        ("!=4.0", (None, False)),
    ],
)
def test_a_requirement_means_the_newest_release_it_allows(spec, expected):
    assert upper_bound(spec) == expected


def _pins(source: str) -> dict[str, tuple]:
    return {d: (p.upper, p.inclusive, p.level) for d, p in script_pins(textwrap.dedent(source)).items()}


def test_install_commands_in_every_form():
    src = """\
    pass  # tl-magic-0 !pip install -q transformers==4.30 \\
    pass  # tl-magic-1     datasets "evaluate>=0.4"
    import os, subprocess, sys
    os.system("pip install 'accelerate<0.20'")
    subprocess.run([sys.executable, "-m", "pip", "install", "torch==2.1.0"])
    # !pip install tensorflow-cpu==2.15.0
    """
    assert _pins(src) == {
        "transformers": ((4, 30), True, INSTALL),
        "datasets": (None, False, INSTALL),  # unpinned: the latest release
        "evaluate": (None, False, INSTALL),
        "accelerate": ((0, 20), False, INSTALL),
        "torch": ((2, 1), True, INSTALL),
        "tensorflow": ((2, 15), True, INSTALL),  # tensorflow-cpu is TensorFlow
    }


def test_the_last_install_wins_and_other_names_are_not_confused():
    src = """\
    pass  # tl-magic-0 !pip install transformers
    pass  # tl-magic-1 !pip install sentence-transformers==2.2 transformers==4.28.0
    pass  # tl-magic-2 !pip uninstall -y keras
    import transformers
    """
    assert _pins(src) == {"transformers": ((4, 28), True, INSTALL)}


def test_pep_723_block_and_comments_rank_below_install_commands():
    src = """\
    # /// script
    # dependencies = ["transformers<5", "keras>=3"]
    # ///
    # tested with datasets==2.14.0
    pass  # tl-magic-0 %pip install keras==2.15
    import transformers
    """
    assert _pins(src) == {
        "transformers": ((5,), False, SCRIPT),
        "keras": ((2, 15), True, INSTALL),
        "datasets": ((2, 14), True, SCRIPT),
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    (tmp_path / "examples" / "glue").mkdir(parents=True)
    return tmp_path


def _project(path: Path) -> dict[str, tuple]:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    return {d: (p.upper, p.where) for d, p in project_pins(str(path)).items()}


def test_requirement_files_next_to_the_script_then_up_to_the_repository_root(repo: Path):
    script = repo / "examples" / "glue" / "run_glue.py"
    (repo / "pyproject.toml").write_text(
        '[project]\nname = "x"\ndependencies = ["transformers>=4.30,<5", "torch"]\n'
        '[project.optional-dependencies]\ntf = ["tensorflow~=2.15.0"]\n')
    (repo / "examples" / "requirements.txt").write_text("# examples\n-r ../base.txt\ndatasets==2.14.0  # pinned\naccelerate\n")
    (repo / "examples" / "glue" / "setup.cfg").write_text("[options]\ninstall_requires =\n    evaluate==0.4.0\n    datasets>=3\n")
    assert _project(script) == {
        "evaluate": ((0, 4), "setup.cfg"),
        "datasets": (None, "setup.cfg"),  # the nearest file wins
        "accelerate": (None, "requirements.txt"),
        "transformers": ((5,), "pyproject.toml"),
        "torch": (None, "pyproject.toml"),
    }  # not tensorflow: an optional dependency describes another environment, not the scripts' stack


def test_poetry_and_conda_environment_files(repo: Path):
    (repo / "pyproject.toml").write_text('[tool.poetry.dependencies]\npython = "^3.10"\ntransformers = "^4.30"\n'
                                         'torch = {version = "~2.1", optional = true}\n')
    (repo / "examples" / "environment.yml").write_text(
        "name: glue\ndependencies:\n  - python=3.10\n  - tensorflow=2.15\n  - pip:\n    - keras==2.15.0\n")
    assert _project(repo / "examples" / "glue" / "t.py") == {
        "tensorflow": ((2, 16), "environment.yml"),
        "keras": ((2, 15), "environment.yml"),
        "transformers": ((5,), "pyproject.toml"),
        "torch": ((2, 2), "pyproject.toml"),
    }


def test_outside_a_repository_only_the_scripts_own_directory_counts(tmp_path: Path):
    (tmp_path / "requirements.txt").write_text("transformers==4.30\n")
    assert _project(tmp_path / "sub" / "train.py") == {}
    assert _project(tmp_path / "train.py") == {"transformers": ((4, 30), "requirements.txt")}


def test_a_name_that_is_not_a_file_has_no_project(tmp_path: Path):
    (tmp_path / "requirements.txt").write_text("transformers==4.30\n")
    assert project_pins(str(tmp_path / "snippet.py")) == {} and project_pins("<stdin>") == {}


def test_an_edited_requirement_file_is_read_again(repo: Path, monkeypatch):
    import trainlint.pins as pins

    monkeypatch.setattr(pins, "STAMP_TTL", 0.0)  # looked at again at once (a server: after 2 s)
    req = repo / "requirements.txt"
    req.write_text("transformers==4.30\n")
    assert _project(repo / "t.py")["transformers"][0] == (4, 30)
    req.write_text("transformers==4.46.0  # a longer line, a new size\n")
    assert _project(repo / "t.py")["transformers"][0] == (4, 46)


def test_the_order_of_evidence(repo: Path):
    script = repo / "train.py"
    (repo / "requirements.txt").write_text("transformers==4.40\nkeras<3\n")
    settings = Settings(target_versions={"transformers": "4.20", "keras": "3.0", "datasets": "2.0"})
    script.touch()
    v = Versions("pass  # tl-magic-0 !pip install transformers==4.30\nimport transformers\n", str(script), settings)
    assert (v.pin("transformers").upper, v.pin("transformers").level) == ((4, 30), INSTALL)
    assert (v.pin("keras").upper, v.pin("keras").level) == ((3,), PROJECT)
    assert (v.pin("datasets").upper, v.pin("datasets").level) == ((2,), CONFIGURED)
    assert v.pin("libcst").level == INSTALLED  # a dependency of trainlint: installed wherever the tests run
    assert v.pin("no-such-library") is None
    assert v.below("transformers", (4, 31)) and not v.below("transformers", (4, 30))


# ---------------------------------------------------------------------------------------------
# The rules: code pinned to an old stack is judged for that stack.

TRAINER_CELLS = [
    "from transformers import AdamW, Trainer, TrainingArguments\n"
    "args = TrainingArguments('out', evaluation_strategy='epoch')\n"
    "trainer = Trainer(model=model, args=args, tokenizer=tokenizer)\n",
]


def _notebook(install: str | None, cells=TRAINER_CELLS) -> str:
    sources = ([install] if install else []) + cells
    return json.dumps({
        "cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": s}
                  for s in sources],
        "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5,
    })


def _compat(result) -> dict[str, Severity]:
    return {f.code: f.severity for f in result.findings if f.code.startswith("TL8")}


#: every rule selected: the API rules judged here are on by default or not (TL804 is off)
EVERY_RULE = Settings(select=["ALL"])


def test_a_notebook_pinned_to_an_old_stack_is_judged_there(tmp_path: Path):
    """transformers 4.30: `AdamW` deprecated there (a warning); `tokenizer=` (deprecated in 4.46) and
    `evaluation_strategy=` (deprecated in 4.41) are simply the arguments of that release: nothing."""
    nb = _notebook("!pip install -q transformers==4.30.2 \\\n    datasets evaluate")
    result = lint_notebook_text(nb, str(tmp_path / "course.ipynb"), EVERY_RULE)
    assert _compat(result) == {"TL802": Severity.WARNING}
    tl802 = next(f for f in result.findings if f.code == "TL802")
    assert "deprecated since transformers 4.16" in tl802.message and "transformers==4.30.2" in tl802.message


def test_an_unpinned_install_means_the_latest_release(tmp_path: Path):
    """`!pip install transformers` installs transformers 5, whatever the linting environment has."""
    old = Settings(select=["ALL"], target_versions={"transformers": "4.30"})
    pinned_by_config = lint_notebook_text(_notebook(None), str(tmp_path / "a.ipynb"), old)
    assert set(_compat(pinned_by_config).values()) == {Severity.WARNING}
    latest = lint_notebook_text(_notebook("!pip install transformers datasets"), str(tmp_path / "b.ipynb"), old)
    assert _compat(latest) == {"TL802": Severity.ERROR, "TL804": Severity.ERROR, "TL805": Severity.ERROR}


def test_the_projects_requirements_decide_for_its_scripts(repo: Path, monkeypatch):
    import trainlint.pins as pins

    monkeypatch.setattr(pins, "STAMP_TTL", 0.0)  # the test edits requirements.txt between two lints
    script = repo / "examples" / "glue" / "train.py"
    script.write_text(TRAINER_CELLS[0])
    (repo / "requirements.txt").write_text("transformers>=4.30,<5\n")
    # the newest 4.x: `tokenizer=` deprecated there, `AdamW` gone since 4.50, `evaluation_strategy=` since 4.51
    assert _compat(lint_file(script, EVERY_RULE)) == {"TL802": Severity.ERROR, "TL804": Severity.WARNING,
                                                       "TL805": Severity.ERROR}
    (repo / "requirements.txt").write_text("transformers>=4.30,<4.40\n")
    assert _compat(lint_file(script, EVERY_RULE)) == {"TL802": Severity.WARNING}
    # the script's own install command is stronger evidence than the project's files
    script.write_text("# !pip install -U transformers\n" + TRAINER_CELLS[0])
    assert set(_compat(lint_file(script, EVERY_RULE)).values()) == {Severity.ERROR}


TF_SCRIPT = textwrap.dedent(
    """\
    from transformers import TFAutoModelForSequenceClassification

    model = TFAutoModelForSequenceClassification.from_pretrained("bert-base-cased", num_labels=2)
    """
)


def test_tensorflow_classes_are_judged_by_the_notebooks_pin(tmp_path: Path):
    old = lint_notebook_text(_notebook("%pip install transformers==4.44 tensorflow", [TF_SCRIPT]),
                             str(tmp_path / "tf.ipynb"), Settings())
    assert _compat(old) == {}
    new = lint_notebook_text(_notebook("%pip install transformers tensorflow", [TF_SCRIPT]),
                             str(tmp_path / "tf.ipynb"), Settings())
    assert _compat(new) == {"TL807": Severity.ERROR}
    assert "`transformers` (latest) in its install command" in next(f.message for f in new.findings if f.code == "TL807")


def test_the_result_cache_sees_an_edited_requirement_file(repo: Path):
    script = repo / "train.py"
    script.write_text(TRAINER_CELLS[0])
    (repo / "requirements.txt").write_text("transformers==4.45\n")
    first = run_cli("--output-format", "json", "--select", "TL805", "train.py", cwd=repo)
    assert [f["severity"] for f in json.loads(first.stdout)] == ["warning"]
    (repo / "requirements.txt").write_text("transformers>=5\n")
    second = run_cli("--output-format", "json", "--select", "TL805", "train.py", cwd=repo)
    assert [f["severity"] for f in json.loads(second.stdout)] == ["error"]


KERAS_SCRIPT = textwrap.dedent(
    """\
    from tensorflow.keras.optimizers import Adam
    from transformers import TFAutoModelForSequenceClassification

    model = TFAutoModelForSequenceClassification.from_pretrained("distilbert-base-uncased", num_labels=2)
    model.compile(optimizer=Adam(learning_rate=5e-5))
    """
)


@pytest.mark.parametrize(
    "install, expected",
    [
        ("!pip install transformers==4.44 tensorflow==2.15", {}),  # TensorFlow 2.15: Keras 2
        ("!pip install transformers==4.44 tensorflow==2.17", {"TL808": Severity.ERROR}),  # Keras 3
        ("!pip install transformers==4.44 'keras<3' tensorflow", {}),  # Keras 2 named: it decides
    ],
)
def test_keras_3_is_judged_by_the_notebooks_install_cell(tmp_path: Path, install, expected):
    result = lint_notebook_text(_notebook(install, [KERAS_SCRIPT]), str(tmp_path / "k.ipynb"), Settings())
    assert _compat(result) == expected


# ---------------------------------------------------------------------------------------------
# Each version rule at pins just before and just after each change of its API (the version table,
# trainlint.knowledge.API_VERSIONS): silent where the API is valid, a warning where it is deprecated, an
# error where it is gone; the fix only where its replacement exists.

E, W = Severity.ERROR, Severity.WARNING

VERSION_CASES = [
    # (code, snippet, [(the script's install command, severity or None, fix offered)])
    ("TL801", "from datasets import load_metric\nmetric = load_metric('accuracy')\n",
     [("datasets<2.5", None, False), ("datasets==2.5.0", W, True), ("datasets<3", W, True),
      ("datasets==3.0.0", E, True)]),
    ("TL802", "from transformers import AdamW\nopt = AdamW(params, lr=1e-3)\n",
     [("transformers<4.16", None, False), ("transformers==4.16.0", W, True), ("transformers<4.50", W, True),
      ("transformers==4.50.0", E, True),
      ("transformers==4.50.0 torch==1.1.0", E, False)]),  # torch.optim.AdamW came with torch 1.2
    ("TL803", "from transformers import TFTrainer\n",
     [("transformers<4.9", None, False), ("transformers==4.9.0", W, False), ("transformers<4.37", W, False),
      ("transformers==4.37.0", E, False)]),
    ("TL804", "from transformers import Trainer\ntrainer = Trainer(model=model, tokenizer=tok)\n",
     [("transformers<4.46", None, False), ("transformers==4.46.0", W, True), ("transformers<5", W, True),
      ("transformers==5.0.0", E, True)]),
    ("TL804", "from trl import SFTTrainer\ntrainer = SFTTrainer(model=m, train_dataset=d, tokenizer=tok)\n",
     [("trl<0.12", None, False), ("trl==0.12.0", W, True), ("trl<0.16", W, True), ("trl==0.16.0", E, True)]),
    ("TL804", "from trl import ORPOTrainer\ntrainer = ORPOTrainer(model=m, train_dataset=d, tokenizer=tok)\n",
     [("trl<0.12", None, False), ("trl==0.12.0", E, True)]),
    ("TL805", "from transformers import TrainingArguments\nargs = TrainingArguments('o', evaluation_strategy='epoch')\n",
     [("transformers<4.41.0", None, False), ("transformers==4.41.0", W, True), ("transformers<4.51", W, True),
      ("transformers==4.51.0", E, True)]),
    ("TL807", TF_SCRIPT,
     [("transformers<5 tensorflow", None, False), ("transformers==5.0.0 tensorflow", E, False)]),
    ("TL808", KERAS_SCRIPT,
     [("transformers==4.44 tensorflow<2.16", None, False), ("transformers==4.44 tensorflow==2.16.1", E, False),
      ("transformers==4.44 keras<3", None, False), ("transformers==4.44 keras==3.0.0", E, False)]),
    ("TL809", 'from transformers import BertTokenizerFast\ntok = BertTokenizerFast(vocab_file="v.txt")\n',
     [("transformers<5", None, False), ("transformers==5.0.0", E, False)]),
]


@pytest.mark.parametrize(("code", "snippet", "install", "severity", "fix"), [
    (code, snippet, install, severity, fix) for code, snippet, rows in VERSION_CASES for install, severity, fix in rows
], ids=lambda v: v if isinstance(v, str) and "\n" not in v else None)
def test_each_version_rule_just_before_and_after_each_change(code, snippet, install, severity, fix):
    from support import lint

    quoted = " ".join(f"'{req}'" for req in install.split())
    found = [f for f in lint(f"# pip install {quoted}\n{snippet}", code) if f.code == code]
    assert [f.severity for f in found] == ([severity] if severity else [])
    assert [f.fix is not None for f in found] == ([fix] if severity else [])


def test_tl206_just_before_and_after_transformers_converts_a_batch_encoding():
    from support import codes

    src = ("from transformers import AutoTokenizer, TFAutoModelForSequenceClassification\n"
           "tok = AutoTokenizer.from_pretrained('bert-base-cased')\n"
           "model = TFAutoModelForSequenceClassification.from_pretrained('bert-base-cased', num_labels=2)\n"
           "data = tok(['a', 'b'], padding=True, return_tensors='tf')\nmodel.fit(data, labels)\n")
    assert codes("# pip install 'transformers<4.38'\n" + src, "TL206") == ["TL206"]
    assert codes("# pip install 'transformers==4.38.0'\n" + src, "TL206") == []


def test_no_fix_renames_to_an_argument_the_pinned_release_lacks(tmp_path: Path):
    """A notebook pinning transformers<4.41.0 (before `eval_strategy` existed): `--fix` leaves it as it is."""
    nb = _notebook('!pip install "transformers<4.41.0" datasets',
                   ["from transformers import TrainingArguments\nargs = TrainingArguments('o', evaluation_strategy='epoch')\n"])
    path = tmp_path / "old.ipynb"
    path.write_text(nb, encoding="utf-8")
    proc = run_cli("--fix", "--unsafe-fixes", "--select", "TL8", path.name, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert path.read_text(encoding="utf-8") == nb


def test_the_version_table_covers_the_distributions_pins_read():
    from trainlint.knowledge import API_VERSIONS
    from trainlint.pins import KNOWN

    assert {a.dist for a in API_VERSIONS.values()} <= set(KNOWN)
    for key, a in API_VERSIONS.items():
        assert a.source, key
        assert a.replacement is None or a.replacement in API_VERSIONS, key
        known = [v for v in (a.introduced, a.deprecated, a.removed) if v is not None]
        assert known == sorted(known), key


def test_each_version_rules_document_states_its_versions():
    """The document of each rule that reads the version table names the releases of every API it reads."""
    import re

    from support import ROOT
    from trainlint.knowledge import API_VERSIONS
    from trainlint.pins import version_text

    rules = {"TL801": ["datasets.load_metric", "evaluate.load"], "TL802": ["transformers.AdamW", "torch.optim.AdamW"],
             "TL803": ["transformers.TFTrainer"],
             "TL804": ["transformers.Trainer(tokenizer=)", "transformers.Trainer(processing_class=)",
                       "trl.SFTTrainer(tokenizer=)", "trl.ORPOTrainer(tokenizer=)"],
             "TL805": ["transformers.TrainingArguments(evaluation_strategy=)",
                       "transformers.TrainingArguments(eval_strategy=)"],
             "TL807": ["transformers.TF*"], "TL808": ["keras 3", "tensorflow.keras is Keras 3"],
             "TL809": ["transformers.*Tokenizer(vocab_file=)"], "TL206": ["transformers.TF*.fit(BatchEncoding)"]}
    missing = []
    for code, keys in rules.items():
        doc = (ROOT / "rules" / f"{code}.md").read_text(encoding="utf-8")
        section = re.search(r"^## Versions\n(.*?)(?=^## |\Z)", doc, re.M | re.S)
        if section is None:
            missing.append(f"{code}: no `## Versions` section")
            continue
        for key in keys:
            a = API_VERSIONS[key]
            for v in (a.introduced, a.deprecated, a.removed):
                if v is not None and f"{a.dist} {version_text(v)}" not in section.group(1):
                    missing.append(f"{code}: {a.dist} {version_text(v)} ({key})")
    assert missing == []
