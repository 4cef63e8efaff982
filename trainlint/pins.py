"""Versions as the script sees them: which release of a library a script runs with, from the
evidence closest to the script.

The order of evidence (the first that names the distribution wins):

1. **The script's own install commands**: ``!pip install transformers==4.30`` and ``%pip install``
   lines or cells (also inside ``%%capture`` / ``%%bash`` cells), ``pip install`` in a comment
   (``# pip install transformers==4.30``) or in a string (``os.system("pip install ...")``),
   ``uv add``, ``conda install``. When several name the library, the last one counts: it is what
   ends up installed.
2. **The script's metadata**: a PEP 723 ``# /// script`` block (``dependencies = ["transformers<5"]``),
   then any other comment naming a version (``# transformers==4.30.2``).
3. **The project's requirement files**: ``requirements.txt``, ``pyproject.toml`` (``[project]``
   and Poetry dependencies; optional dependencies and dev groups are not evidence: a ``test`` extra
   describes a test environment), ``setup.cfg`` (``install_requires``), ``environment.yml`` (conda
   and its ``pip:`` list),
   next to the script, then in each directory above it up to the repository root (the directory
   holding ``.git``); the nearest file that names the library wins.
4. The configured ``target-versions``.
5. The installed version (read from the package metadata, never imported).

What a requirement means: pip installs the newest release it allows, so a requirement is judged by
its upper bound — ``==4.30`` is 4.30, ``<5`` / ``~=4.40`` / ``==4.*`` / ``^4.30`` the newest 4.x, and
an unpinned ``pip install transformers`` (or a lower bound only, ``>=4.30``) the latest release.

:func:`versions_of` gives the :class:`Versions` of one file; it is computed once per file, on first
use (most files never reach a version-dependent rule), and the requirement files of a directory are
parsed once per process (again when they change).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import re
import sys
import time
from pathlib import Path
from collections.abc import Iterable

from trainlint.findings import Severity
from trainlint.knowledge import ApiVersions, Version, api_versions

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

#: levels of evidence, strongest first (see the module docstring)
INSTALL, SCRIPT, PROJECT, CONFIGURED, INSTALLED = 1, 2, 3, 4, 5
LEVEL_NAMES = {
    INSTALL: "its install command",
    SCRIPT: "its own requirements",
    PROJECT: "the project's requirements",
    CONFIGURED: "the configured target-versions",
    INSTALLED: "the installed version",
}

#: distributions that are the same library for the question "which version" (TensorFlow builds)
_ALIASES = {
    "tensorflow-cpu": "tensorflow", "tensorflow-gpu": "tensorflow", "tensorflow-macos": "tensorflow",
    "tensorflow-intel": "tensorflow", "tensorflow-aarch64": "tensorflow", "tf-nightly": "tensorflow",
    "tf-keras": "tf-keras", "torch-cpu": "torch", "pytorch": "torch",
}

#: the distributions trainlint's rules ask about (a quick check before any parsing)
KNOWN = ("transformers", "datasets", "keras", "tensorflow", "torch", "evaluate", "accelerate", "tf-keras", "trl")


@functools.lru_cache(maxsize=1024)
def normalize(name: str) -> str:
    n = re.sub(r"[-_.]+", "-", name).lower()
    return _ALIASES.get(n, n)


@dataclasses.dataclass(frozen=True)
class Pin:
    """What one piece of evidence says about a distribution: the newest version it allows."""

    dist: str
    #: the highest version allowed; None: no upper bound (the latest release)
    upper: Version | None
    #: ``upper`` itself is allowed (``==4.30``, ``<=4.30``) or only what is below it (``<5``)
    inclusive: bool
    level: int
    #: the requirement as written (``transformers==4.30``), or the configured/installed version
    text: str = ""
    where: str = ""  # the file it came from, for messages ("requirements.txt")

    def below(self, version: Version) -> bool:
        """The script runs a release older than ``version``."""
        if self.upper is None:
            return False
        up = _trim(self.upper)
        return up < _trim(version) if self.inclusive else up <= _trim(version)

    def at_least(self, version: Version) -> bool:
        return not self.below(version)

    @property
    def latest(self) -> bool:
        return self.upper is None

    def describe(self) -> str:
        """The evidence in words, for messages: ``transformers==4.30 in its install command``."""
        if self.level == INSTALLED:
            return f"the installed {self.dist} {self.text}"
        if self.level == CONFIGURED:
            return f"target-versions {self.dist} = {self.text!r}"
        latest = " (latest)" if self.latest else ""
        where = {INSTALL: "its install command", SCRIPT: self.where or "its comments",
                 PROJECT: self.where}.get(self.level, self.where)
        return f"`{self.text}`{latest} in {where}"


def _trim(v: Version) -> Version:
    """(5, 0) and (5,) are the same release."""
    v = tuple(v)
    while len(v) > 1 and v[-1] == 0:
        v = v[:-1]
    return v


def _nums(text: str) -> Version | None:
    out = []
    for part in text.split("."):
        m = re.match(r"\d+", part)
        if not m:
            break
        out.append(int(m.group(0)))
        if m.end() != len(part):
            break
    return tuple(out) if out else None


def _bump(v: Version, at: int) -> Version:
    """(4, 30, 2) bumped at 1 → (4, 31)."""
    return v[:at] + (v[at] + 1,)


_OP_RE = re.compile(r"(===|==|~=|!=|<=|>=|<|>|\^|~|=)\s*v?([0-9][\w.*+!-]*)")


def upper_bound(spec: str) -> tuple[Version | None, bool]:
    """The newest version a specifier set allows: (upper, inclusive); (None, False) when unbounded.
    Understands PEP 440 (``==``, ``~=``, ``<``, ``<=``, ``==4.*``), conda (``=4.30``) and Poetry
    (``^4.30``, ``~4.30``) forms."""
    best: tuple[Version, bool] | None = None

    def take(v: Version, inclusive: bool) -> None:
        nonlocal best
        v = _trim(v)
        if best is None or v < best[0] or (v == best[0] and not inclusive and best[1]):
            best = (v, inclusive)

    for op, text in _OP_RE.findall(spec):
        v = _nums(text)
        if v is None:
            continue
        wildcard = text.rstrip(".").endswith("*")
        if op in ("==", "==="):
            take(_bump(v, len(v) - 1), False) if wildcard else take(v, True)
        elif op == "=":  # conda: `=4.30` is 4.30.*
            take(_bump(v, len(v) - 1), False)
        elif op == "~=":
            if len(v) >= 2:
                take(_bump(v, len(v) - 2), False)
        elif op == "<":
            take(v, False)
        elif op == "<=":
            take(v, True)
        elif op == "^":  # Poetry: up to the next change of the first non-zero part
            nz = next((i for i, x in enumerate(v) if x), len(v) - 1)
            take(_bump(v, nz), False)
        elif op == "~":  # Poetry: ~4.30 is <4.31, ~4 is <5
            take(_bump(v, min(1, len(v) - 1)), False)
    return (best[0], best[1]) if best else (None, False)


#: the names of the distributions rules ask about, as a requirement can spell them
_NAMES = (r"(?:transformers|datasets|evaluate|accelerate|trl|torch|pytorch|keras|tf[-_.]keras|tf[-_.]nightly"
          r"|tensorflow(?:[-_.](?:cpu|gpu|macos|intel|aarch64))?)")
_KNOWN_RE = re.compile(_NAMES)  # a quick look at the lowercased text: which lines can name one
#: one requirement: a distribution name, optional extras, then an optional specifier set
_REQ_RE = re.compile(
    rf"(?<![\w.\-=<>~^])(?P<name>{_NAMES})(?![\w\-]|\.[A-Za-z0-9])\s*(?:\[[^\]]*\])?"
    r"(?P<spec>(?:\s*(?:===|==|~=|!=|<=|>=|<|>|=|\^|~)\s*v?[0-9][\w.*+!-]*\s*,?)*)",
    re.I,
)


def _requirements(text: str, with_spec_only: bool = False) -> Iterable[tuple[str, str, str]]:
    """(normalized name, specifier text, the requirement as written) for the requirements in ``text``."""
    for m in _REQ_RE.finditer(text):
        name = normalize(m.group("name"))
        if name not in KNOWN:
            continue
        spec = m.group("spec").strip()
        if with_spec_only and not spec:
            continue
        yield name, spec, m.group(0).strip()


def _pin(name: str, spec: str, text: str, level: int, where: str = "") -> Pin:
    upper, inclusive = upper_bound(spec)
    return Pin(name, upper, inclusive, level, text, where)


# ---------------------------------------------------------------------------------------------
# The script itself.

#: a line that installs packages: pip/uv/conda in code, a shell line, a comment or a string
_INSTALL_RE = re.compile(
    r"(?:\b(?:pip3?|uv\s+pip|python3?\s+-m\s+pip|conda|mamba|micromamba)\b[\"',\s]+install\b|\buv\s+add\b)"
    r"(?P<args>.*)$"
)
#: the placeholder the notebook reader leaves for an IPython line, with the original text after it
_MAGIC_PREFIX = re.compile(r"(?m)^[ \t]*pass  # tl-magic-\d+ ?")
#: a backslash continuation (a continued comment line goes on after its `#`)
_CONTINUATION = re.compile(r"\\\n[ \t]*#?")
#: where a pin of the script's PEP 723 block comes from (``Pin.where``)
PEP723 = "its `# /// script` block"
_PEP723_RE = re.compile(r"(?m)^# /// script\s*$\n(?P<body>(?:^#(?:| .*)$\n)+?)^# ///\s*$")


_KNOWN_RE_I = re.compile(_NAMES, re.I)


def _find_known(text: str):
    """The mentions of the distributions in ``text``; matching the lowercased text is ten times faster
    than ``re.I``, when lowering keeps every offset (it may not, outside ASCII)."""
    lowered = text.lower()
    return _KNOWN_RE.finditer(lowered) if len(lowered) == len(text) else _KNOWN_RE_I.finditer(text)


def _lines_naming_a_library(source: str) -> list[str]:
    """The logical lines (notebook placeholders unwrapped, backslash continuations joined) that
    mention one of the distributions the rules ask about, in order."""
    text = _MAGIC_PREFIX.sub("", source) if "tl-magic-" in source else source
    if "\\\n" in text:
        text = _CONTINUATION.sub(" ", text)
    out: list[str] = []
    last = -1
    for m in _find_known(text):
        start = text.rfind("\n", 0, m.start()) + 1
        if start == last:
            continue
        last = start
        end = text.find("\n", m.end())
        out.append(text[start:] if end < 0 else text[start:end])
    return out


def script_pins(source: str) -> dict[str, Pin]:
    """Evidence from the script itself (levels 1 and 2), one pin per distribution."""
    if next(_find_known(source), None) is None:
        return {}
    installs: dict[str, Pin] = {}
    comments: dict[str, Pin] = {}
    pep723: dict[str, Pin] = {}
    for line in _lines_naming_a_library(source):
        m = _INSTALL_RE.search(line) if "install" in line or "uv" in line else None
        if m is not None and "uninstall" not in line[: m.start("args")]:
            for name, spec, text in _requirements(m.group("args")):
                installs[name] = _pin(name, spec, text, INSTALL)  # the last one wins
            continue
        hash_at = line.find("#")
        if hash_at >= 0:
            for name, spec, text in _requirements(line[hash_at + 1:], with_spec_only=True):
                comments.setdefault(name, _pin(name, spec, text, SCRIPT))
    block = _PEP723_RE.search(source) if "# /// script" in source else None
    if block is not None:
        toml = "\n".join(line[2:] if line.startswith("# ") else line[1:] for line in block.group("body").splitlines())
        try:
            deps = tomllib.loads(toml).get("dependencies", [])
        except tomllib.TOMLDecodeError:
            deps = []
        for dep in deps if isinstance(deps, list) else []:
            if isinstance(dep, str):
                for name, spec, text in _requirements(dep.split(";")[0]):
                    pep723.setdefault(name, _pin(name, spec, text, SCRIPT, PEP723))
    return {**comments, **pep723, **installs}


# ---------------------------------------------------------------------------------------------
# The project's requirement files.

PROJECT_FILES = ("requirements.txt", "pyproject.toml", "setup.cfg", "environment.yml", "environment.yaml")

_DIR_CACHE: dict[Path, tuple[tuple, dict[str, Pin]]] = {}
_ROOT_CACHE: dict[Path, Path | None] = {}


#: a directory's requirement files are looked at again after this many seconds (a long-running
#: language server sees an edited requirements.txt; a run over many files stats each directory once)
STAMP_TTL = 2.0
_STAMPS: dict[Path, tuple[float, tuple]] = {}


def _stamp(directory: Path) -> tuple:
    now = time.monotonic()
    hit = _STAMPS.get(directory)
    if hit is not None and now - hit[0] < STAMP_TTL:
        return hit[1]
    out = _stat_files(directory)
    _STAMPS[directory] = (now, out)
    return out


def _stat_files(directory: Path) -> tuple:
    out = []
    for name in PROJECT_FILES:
        try:
            st = os.stat(directory / name)
        except OSError:
            continue
        out.append((name, st.st_mtime_ns, st.st_size))
    return tuple(out)


def _parse_file(path: Path) -> dict[str, Pin]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    where = path.name
    reqs: list[str] = []
    if path.name == "requirements.txt":
        reqs = [line.split(" #")[0].split(";")[0] for line in text.splitlines()
                if line.strip() and not line.lstrip().startswith(("#", "-"))]
    elif path.name == "pyproject.toml":
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            return {}
        project = data.get("project", {}) if isinstance(data.get("project"), dict) else {}
        deps = project.get("dependencies", [])
        reqs = [d.split(";")[0] for d in deps if isinstance(d, str)] if isinstance(deps, list) else []
        # optional dependencies and dev groups are not evidence: a project's `test` extra describes
        # its test environment, not the stack its scripts were written for
        poetry = data.get("tool", {}).get("poetry", {}) if isinstance(data.get("tool"), dict) else {}
        for key in ("dependencies",):
            table = poetry.get(key, {}) if isinstance(poetry, dict) else {}
            for name, value in (table.items() if isinstance(table, dict) else ()):
                if isinstance(value, dict):
                    value = value.get("version", "")
                if isinstance(value, str):
                    reqs.append(f"{name}{'' if value.strip() in ('', '*') else value.strip()}")
    elif path.name == "setup.cfg":
        import configparser

        cp = configparser.ConfigParser(interpolation=None)
        try:
            cp.read_string(text)
        except configparser.Error:
            return {}
        if cp.has_option("options", "install_requires"):
            reqs += cp.get("options", "install_requires").splitlines()
    else:  # environment.yml: `- transformers=4.30` (conda) and `- transformers==4.30` (its pip list)
        reqs = [m.group(1) for m in re.finditer(r"(?m)^\s*-\s+([A-Za-z][^#\n]*)", text)]
    out: dict[str, Pin] = {}
    for req in reqs:
        req = req.strip().strip("'\"")
        for name, spec, written in _requirements(req):
            out.setdefault(name, _pin(name, spec, written, PROJECT, where))
            break  # one requirement per line
    return out


def _dir_pins(directory: Path) -> dict[str, Pin]:
    stamp = _stamp(directory)
    cached = _DIR_CACHE.get(directory)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    pins: dict[str, Pin] = {}
    for name, *_ in stamp:
        for dist, pin in _parse_file(directory / name).items():
            pins.setdefault(dist, pin)
    _DIR_CACHE[directory] = (stamp, pins)
    return pins


def _repo_root(directory: Path) -> Path | None:
    if directory not in _ROOT_CACHE:
        root = None
        for d in (directory, *directory.parents):
            if (d / ".git").exists():
                root = d
                break
        _ROOT_CACHE[directory] = root
    return _ROOT_CACHE[directory]


def project_dirs(filename: str) -> list[Path]:
    """The directories whose requirement files speak for ``filename``: its own, then each one up to
    the repository root (only its own when it is in no repository). None for a name that is not a
    file (``<stdin>``, a snippet's made-up name)."""
    if not filename or filename.startswith("<") or filename == "-" or not os.path.isfile(filename):
        return []
    try:
        directory = Path(filename).resolve().parent
    except (OSError, RuntimeError):
        return []
    root = _repo_root(directory)
    if root is None:
        return [directory]
    dirs = [directory]
    for d in directory.parents:
        if d == root or root in d.parents:
            dirs.append(d)
        if d == root:
            break
    return dirs


def project_pins(filename: str) -> dict[str, Pin]:
    pins: dict[str, Pin] = {}
    for d in project_dirs(filename):
        for dist, pin in _dir_pins(d).items():
            pins.setdefault(dist, pin)
    return pins


def project_key(filename: str, memo: dict | None = None) -> str:
    """The requirement files that speak for ``filename`` (name, mtime, size): part of the result
    cache's key, so that editing requirements.txt re-lints the scripts under it. ``memo``: the
    answers of this run by directory (one look per directory, not per file)."""
    parent = os.path.dirname(os.path.abspath(filename)) if filename and not filename.startswith("<") else ""
    if memo is not None and parent in memo:
        return memo[parent]
    key = repr([(str(d), _stamp(d)) for d in project_dirs(filename)])
    if memo is not None:
        memo[parent] = key
    return key


# ---------------------------------------------------------------------------------------------


class Versions:
    """The versions one file runs with, from the evidence in the order of the module docstring."""

    def __init__(self, source: str, filename: str, settings) -> None:
        self._source = source
        self._filename = filename
        self._settings = settings
        self._script: dict[str, Pin] | None = None
        self._project: dict[str, Pin] | None = None
        self._memo: dict[tuple[str, int], Pin | None] = {}

    def pin(self, dist: str, *, down_to: int = INSTALLED) -> Pin | None:
        """The strongest evidence for ``dist`` (levels ``1..down_to``); None: nothing says."""
        dist = normalize(dist)
        key = (dist, down_to)
        if key in self._memo:
            return self._memo[key]
        found = None
        if self._script is None:
            self._script = script_pins(self._source)
        found = self._script.get(dist)
        if found is None and down_to >= PROJECT:
            if self._project is None:
                self._project = project_pins(self._filename)
            found = self._project.get(dist)
        if found is None and down_to >= CONFIGURED:
            text = (self._settings.target_versions or {}).get(dist) if self._settings is not None else None
            if text is not None:
                found = _pin(dist, f"=={text}", text, CONFIGURED)
        if found is None and down_to >= INSTALLED:
            from trainlint.config import installed_version

            names = [dist] + [a for a, d in _ALIASES.items() if d == dist and a != dist]
            text = next((t for t in map(installed_version, names) if t), None)
            if text is not None:
                found = _pin(dist, f"=={text}", text, INSTALLED)
        self._memo[key] = found
        return found

    def below(self, dist: str, version: Version, *, down_to: int = INSTALLED) -> bool:
        """The evidence says ``dist`` is older than ``version`` (False when nothing says)."""
        p = self.pin(dist, down_to=down_to)
        return p is not None and p.below(version)

    def at_least(self, dist: str, version: Version, *, down_to: int = INSTALLED) -> bool:
        """The evidence says ``dist`` is ``version`` or newer (False when nothing says)."""
        p = self.pin(dist, down_to=down_to)
        return p is not None and p.at_least(version)


def versions_of(ctx) -> Versions:
    """The :class:`Versions` of the file a rule is checking (computed once per file)."""
    v = getattr(ctx, "_versions", None)
    if v is None:
        v = Versions(ctx.source, ctx.filename, ctx.settings)
        ctx._versions = v
    return v


# ---------------------------------------------------------------------------------------------
# An API judged at the version the script runs (the table: trainlint.knowledge.API_VERSIONS).

#: what an API is in the release a script runs
ABSENT, VALID, DEPRECATED, REMOVED = "absent", "valid", "deprecated", "removed"


@dataclasses.dataclass(frozen=True)
class Status:
    """An API of the version table, judged at the version the script runs."""

    api: ApiVersions
    state: str  # ABSENT (not yet there), VALID, DEPRECATED, REMOVED
    pin: Pin | None  # the evidence; None: nothing says which version (the rule's default state)

    @property
    def severity(self) -> Severity | None:
        """Error where the API is gone, warning where it is deprecated, None (silent) elsewhere."""
        return {REMOVED: Severity.ERROR, DEPRECATED: Severity.WARNING}.get(self.state)

    @property
    def runs(self) -> str:
        """`` (this script runs with `transformers==4.30` in its install command)``; "" for the installed
        version or no evidence."""
        return f" (this script runs with {self.pin.describe()})" if self.pin is not None and self.pin.level != INSTALLED else ""


def version_text(v: Version) -> str:
    return ".".join(map(str, v))


def state_at(api: ApiVersions, pin: Pin) -> str:
    """What ``api`` is in the newest release ``pin`` allows."""
    if api.removed is not None and pin.at_least(api.removed):
        return REMOVED
    if api.deprecated is not None and pin.at_least(api.deprecated):
        return DEPRECATED
    if api.introduced is not None and pin.below(api.introduced):
        return ABSENT
    return VALID


def status(versions: Versions, key: str, *, default: str = REMOVED, down_to: int = INSTALLED) -> Status:
    """``key`` of the version table judged at the version ``versions`` says the script runs (evidence of
    levels ``1..down_to``); with no evidence at all, ``default`` (the latest release: ``REMOVED`` for an
    API that is gone there; ``VALID`` for a rule that reports only on evidence)."""
    api = api_versions(key)
    pin = versions.pin(api.dist, down_to=down_to)
    return Status(api, default if pin is None else state_at(api, pin), pin)


def available(versions: Versions, key: str) -> bool:
    """The API exists in the version the script runs (no evidence: the latest release, where it does): a
    fix may use it."""
    return status(versions, key, default=VALID).state in (VALID, DEPRECATED)


def keras_3(ctx) -> bool:
    """The script runs under Keras 3 (where `tensorflow.keras` is Keras 3 too): the strongest evidence
    about `keras` (3 or newer) or about TensorFlow (2.16 or newer, which brings Keras 3) decides; on
    equal footing, evidence of Keras 2 wins. TensorFlow counts only when the script or its project
    names it (an installed TensorFlow says nothing about the Keras a script imports). No evidence:
    False (nothing is reported)."""
    v = versions_of(ctx)
    says = []
    keras = v.pin("keras")
    if keras is not None:
        says.append((keras.level, state_at(api_versions("keras 3"), keras) != ABSENT))
    tf = v.pin("tensorflow", down_to=PROJECT)
    if tf is not None:
        says.append((tf.level, state_at(api_versions("tensorflow.keras is Keras 3"), tf) != ABSENT))
    if not says:
        return False
    strongest = min(level for level, _ in says)
    return all(yes for level, yes in says if level == strongest)


def lists_environment(pin: Pin | None) -> bool:
    """``pin`` comes from a description of the whole environment the script runs in: its PEP 723 block (``uv run``
    builds an environment of exactly those packages and their dependencies) or the project's requirement files.
    An install command adds to an environment nobody describes (a notebook's kernel comes with its own packages)."""
    return pin is not None and (pin.level == PROJECT or (pin.level == SCRIPT and pin.where == PEP723))
