"""The distribution's name: `trainlint` on PyPI is another project, so this one is `trainlint-dl`, and
nothing in the repository tells a user to install a distribution named `trainlint`."""

from __future__ import annotations

import re
import subprocess
import tomllib

from support import ROOT

DIST = "trainlint-dl"

#: an install command (pip, pipx, uv) whose arguments name the distribution `trainlint`: bare, quoted,
#: with extras or a version, or as a direct reference (`trainlint @ git+...`); `trainlint-dl` is fine.
#: The arguments end at a shell separator or a comment (`pip install . && trainlint examples/`).
_INSTALL_RE = re.compile(
    r"\b(?:pip3?|pipx|uv(?:\s+pip|\s+tool)?|python3?\s+-m\s+pip)\s+(?:install|add)\b"
    r"(?P<args>[^\n`&;|#]*)"
)
_TRAINLINT_ARG_RE = re.compile(r"""(?:^|[\s'"])trainlint(?![\w.-]*\w)""")
#: tracked files a user reads or runs: not the tests (which speak about such commands) nor third-party
#: training scripts (the buggy sets, the corpus), which are data
_DATA = ("tests/", "benchmarks/buggy/cases/", "benchmarks/corpus/")


def _tracked_text_files() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [p for p in out.splitlines()
            if not p.startswith(_DATA) and p.endswith((".md", ".py", ".ts", ".toml", ".yaml", ".yml", ".txt", ".cfg", ".lua", ".el"))
            or p in ("scripts/test", ".ci/run")]


def installs_of_trainlint(text: str) -> list[str]:
    return [m.group(0) for m in _INSTALL_RE.finditer(text) if _TRAINLINT_ARG_RE.search(m.group("args"))]


def test_the_pattern_finds_what_it_must():
    bad = ["pip install trainlint", "pip install 'trainlint[server]'", 'pip install "trainlint @ git+https://x/y"',
           "pip install -U trainlint==0.1", "pipx install trainlint", "uv tool install trainlint",
           "python -m pip install trainlint"]
    good = ["pip install . && trainlint examples/", "pip install '.[server]'", "pip install trainlint-dl",
            'pip install "trainlint-dl @ git+https://github.com/trainlint/trainlint"', "pip install ipython  # trainlint"]
    assert [b for b in bad if not installs_of_trainlint(b)] == []
    assert [g for g in good if installs_of_trainlint(g)] == []


def test_nothing_tells_a_user_to_install_the_other_trainlint():
    found = []
    for path in _tracked_text_files():
        try:
            text = (ROOT / path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        found += [f"{path}: {cmd.strip()}" for cmd in installs_of_trainlint(text)]
    assert found == []


def test_distribution_name_command_and_package():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["name"] == DIST
    assert project["project"]["scripts"] == {"trainlint": "trainlint.cli:main"}
    assert project["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == ["trainlint"]
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"The distribution is named `{DIST}`" in readme
