"""Versions as the script sees them: the version-dependent rules judge a script by the versions its own
context declares (install cells, PEP 723, the project's requirement files), then the configured
target-versions, then what is installed."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from trainlint.config import Settings
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
        "tensorflow": ((2, 16), "pyproject.toml"),
    }


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
    (tmp_path / "sub").mkdir()
    assert _project(tmp_path / "sub" / "train.py") == {}
    assert _project(tmp_path / "train.py") == {"transformers": ((4, 30), "requirements.txt")}


def test_an_edited_requirement_file_is_read_again(repo: Path):
    req = repo / "requirements.txt"
    req.write_text("transformers==4.30\n")
    assert _project(repo / "t.py")["transformers"][0] == (4, 30)
    req.write_text("transformers==4.46.0  # a longer line, a new size\n")
    assert _project(repo / "t.py")["transformers"][0] == (4, 46)


def test_the_order_of_evidence(repo: Path):
    script = repo / "train.py"
    (repo / "requirements.txt").write_text("transformers==4.40\nkeras<3\n")
    settings = Settings(target_versions={"transformers": "4.20", "keras": "3.0", "datasets": "2.0"})
    v = Versions("pass  # tl-magic-0 !pip install transformers==4.30\nimport transformers\n", str(script), settings)
    assert (v.pin("transformers").upper, v.pin("transformers").level) == ((4, 30), INSTALL)
    assert (v.pin("keras").upper, v.pin("keras").level) == ((3,), PROJECT)
    assert (v.pin("datasets").upper, v.pin("datasets").level) == ((2,), CONFIGURED)
    assert v.pin("torch").level == INSTALLED  # the test environment has torch
    assert v.pin("no-such-library") is None
    assert v.below("transformers", (4, 31)) and not v.below("transformers", (4, 30))
