"""Settings: the rule selection and options, from ``[tool.trainlint]`` in ``pyproject.toml`` and
the command line (which overrides the file)."""

from __future__ import annotations

import dataclasses
import fnmatch
import re
import sys
from pathlib import Path, PurePosixPath
from collections.abc import Iterable
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from trainlint.findings import Severity
from trainlint.rule import default_codes, expand_selectors


class ConfigError(Exception):
    """A bad configuration file or option (exit code 2)."""


KNOWN_KEYS = {
    "select", "ignore", "extend-select", "extend-ignore", "per-file-ignores", "exclude",
    "extend-exclude", "target-versions", "cache-dir", "fail-on",
}

DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".venv", "venv", ".venv-*", "env", ".tox", ".nox", "__pycache__",
    "build", "dist", "node_modules", "site-packages", ".mypy_cache", ".pytest_cache", ".ruff_cache",
    ".trainlint_cache", ".ipynb_checkpoints", "*.egg-info",
)


@dataclasses.dataclass
class Settings:
    select: list[str] | None = None  # None: the default rule set
    ignore: list[str] = dataclasses.field(default_factory=list)
    extend_select: list[str] = dataclasses.field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    exclude: list[str] = dataclasses.field(default_factory=list)
    #: library versions to lint against ({"transformers": "5.0"}); default: what is installed
    target_versions: dict[str, str] = dataclasses.field(default_factory=dict)
    #: `cache-dir` from the config file, relative to it (the CLI's --cache-dir overrides it)
    cache_dir: Path | None = None
    #: the least severe finding that makes the run fail (exit code 1); findings below it are shown
    #: but do not change the exit code. Default: warning (info findings say "the source cannot
    #: tell, `--probe` decides": blocking a commit on them would be a false alarm).
    fail_on: Severity = Severity.WARNING
    project_root: Path | None = None  # where the config file was found
    config_file: Path | None = None
    #: Not a config key. False: every enabled rule runs on every training script, whatever its
    #: gate says (the tests compare both ways: gates save time, never a finding).
    gate: bool = True

    def __post_init__(self) -> None:
        self._codes: set[str] | None = None
        self._per_file_cache: dict[str, frozenset[str]] = {}

    # -- selection ---------------------------------------------------------------------------
    def codes(self) -> set[str]:
        if self._codes is None:
            try:
                base = expand_selectors(self.select) if self.select is not None else default_codes()
                base |= expand_selectors(self.extend_select)
                base -= expand_selectors(self.ignore)
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
            self._codes = base
        return self._codes

    def codes_for(self, filename: str) -> frozenset[str]:
        cached = self._per_file_cache.get(filename)
        if cached is not None:
            return cached
        codes = set(self.codes())
        if self.per_file_ignores:
            rel = self.relative(filename)
            for pattern, sels in self.per_file_ignores.items():
                if _match(rel, pattern):
                    try:
                        codes -= expand_selectors(sels)
                    except ValueError as exc:
                        raise ConfigError(f"per-file-ignores: {exc}") from None
        out = frozenset(codes)
        self._per_file_cache[filename] = out
        return out

    def relative(self, filename: str) -> str:
        p = Path(filename)
        root = self.project_root or Path.cwd()
        try:
            return p.resolve().relative_to(root.resolve()).as_posix()
        except (ValueError, OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
            return p.as_posix()

    def is_excluded(self, path: Path) -> bool:
        rel = self.relative(str(path))
        return any(_match(rel, pat) for pat in self.exclude)

    def version(self, dist: str) -> tuple[int, ...] | None:
        """Target version of a library: configured, else installed (read from package metadata
        without importing the package), else None (unknown: assume the current release)."""
        text = self.target_versions.get(dist)
        if text is None:
            text = installed_version(dist)
        if text is None:
            return None
        return _parse_version(text)

    def cache_key(self) -> str:
        return repr((sorted(self.codes()), sorted(self.per_file_ignores.items()),
                     sorted(self.target_versions.items()), self.gate,
                     {d: installed_version(d) for d in ("transformers", "datasets", "keras")}))


def _parse_version(text: str) -> tuple[int, ...]:
    m = re.match(r"\d+(?:\.\d+)*", text.strip())
    return tuple(int(x) for x in m.group(0).split(".")) if m else (0,)


_VERSIONS: dict[str, str | None] = {}


def installed_version(dist: str) -> str | None:
    """The installed version of a distribution, from its ``.dist-info`` / ``.egg-info`` directory
    name on ``sys.path`` (a directory listing; ``importlib.metadata`` alone costs ~15 ms to import,
    a visible part of a cold single-file run). Zipped path entries go through importlib.metadata."""
    if dist not in _VERSIONS:
        _VERSIONS[dist] = _scan_version(dist)
    return _VERSIONS[dist]


def _scan_version(dist: str) -> str | None:
    import os

    want = re.sub(r"[-_.]+", "_", dist).lower()
    for entry in sys.path:
        entry = entry or "."
        try:
            names = os.listdir(entry)
        except NotADirectoryError:
            return _metadata_version(dist)
        except OSError:
            continue
        for name in names:
            stem, _, ext = name.rpartition(".")
            if ext not in ("dist-info", "egg-info") or "-" not in stem:
                continue
            project, _, version = stem.partition("-")
            if re.sub(r"[-_.]+", "_", project).lower() == want:
                return version.partition("-")[0]  # egg-info: name-1.0-py3.11
    return None


def _metadata_version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _match(rel: str, pattern: str) -> bool:
    """gitignore-like: a pattern with a slash matches from the root; without, any component."""
    pat = pattern.strip()
    if not pat:
        return False
    if pat.endswith("/"):
        pat = pat.rstrip("/")
        return any(fnmatch.fnmatch(prefix, pat) for prefix in _prefixes(rel)) or rel.startswith(pat + "/")
    if "/" in pat:
        return fnmatch.fnmatch(rel, pat) or any(fnmatch.fnmatch(p, pat) for p in _prefixes(rel))
    return any(fnmatch.fnmatch(part, pat) for part in PurePosixPath(rel).parts)


def _prefixes(rel: str) -> Iterable[str]:
    parts = PurePosixPath(rel).parts
    for i in range(1, len(parts) + 1):
        yield "/".join(parts[:i])


#: a ``[tool.trainlint]`` table (or one of its sub-tables) in a TOML text, read without parsing it
_TRAINLINT_TABLE_RE = re.compile(r"""(?m)^[ \t]*\[[ \t]*tool[ \t]*\.[ \t]*["']?trainlint\b""")


def find_config(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` with a ``[tool.trainlint]`` table, from ``start`` upwards.

    A ``pyproject.toml`` that is not valid TOML is a :class:`ConfigError` when it may hold the
    configuration: the project's own (the first one found) or one whose text has a
    ``[tool.trainlint]`` header. Skipping it would silently lint with other settings than the user's."""
    start = start.resolve()
    first = True
    for d in (start, *start.parents):
        candidate = d / "pyproject.toml"
        if not candidate.is_file():
            continue
        ours, first = first, False
        try:
            text = candidate.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            if ours:
                raise ConfigError(f"cannot read {candidate}: {exc}") from None
            continue
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            if ours or _TRAINLINT_TABLE_RE.search(text):
                raise ConfigError(f"{candidate}: invalid TOML: {exc}") from None
            continue
        if "trainlint" in data.get("tool", {}):
            return candidate
    return None


def load_settings(config: Path | None = None, start: Path | None = None) -> Settings:
    """Settings from ``config`` (a pyproject.toml or a trainlint.toml) or the nearest pyproject."""
    path = config if config is not None else find_config(start or Path.cwd())
    if path is None:
        return Settings()
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None
    table: dict[str, Any] = data.get("tool", {}).get("trainlint", data if Path(path).name != "pyproject.toml" else {})
    return settings_from_table(table, Path(path))


def settings_from_table(table: dict[str, Any], path: Path) -> Settings:
    unknown = set(table) - KNOWN_KEYS
    if unknown:
        raise ConfigError(f"{path}: unknown option(s) in [tool.trainlint]: {', '.join(sorted(unknown))}")

    def codes(key: str) -> list[str]:
        v = table.get(key, [])
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise ConfigError(f"{path}: `{key}` must be a list of rule codes or prefixes")
        return v

    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict) or not all(isinstance(v, list) for v in pfi.values()):
        raise ConfigError(f"{path}: `per-file-ignores` must map glob patterns to lists of codes")
    tv = table.get("target-versions", {})
    if not isinstance(tv, dict) or not all(isinstance(v, str) for v in tv.values()):
        raise ConfigError(f'{path}: `target-versions` must map package names to versions, e.g. {{transformers = "5.0"}}')
    settings = Settings(
        select=codes("select") if "select" in table else None,
        fail_on=parse_fail_on(table.get("fail-on", "warning"), f"{path}: `fail-on`"),
        ignore=codes("ignore") + codes("extend-ignore"),
        extend_select=codes("extend-select"),
        per_file_ignores={k: list(v) for k, v in pfi.items()},
        exclude=codes("exclude") + codes("extend-exclude"),
        target_versions=dict(tv),
        cache_dir=_cache_dir(table, path),
        project_root=path.parent.resolve(),
        config_file=path,
    )
    # selectors checked now, each where it is written: a typo is a config error (exit 2) naming the key
    for key in ("select", "extend-select", "ignore", "extend-ignore"):
        check_selectors(table.get(key, []), f"{path}: [tool.trainlint] `{key}`")
    for pattern, sels in pfi.items():
        check_selectors(sels, f"{path}: [tool.trainlint] `per-file-ignores` {pattern!r}")
    return settings


def check_selectors(selectors: list[str], where: str) -> None:
    """A :class:`ConfigError` naming ``where`` (the file and key, or the option) for an unknown selector."""
    try:
        expand_selectors(selectors)
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc} (`trainlint rules` lists the codes)") from None


def parse_fail_on(value: Any, what: str = "fail-on") -> Severity:
    """``"error"`` / ``"warning"`` / ``"info"`` as a :class:`Severity`; a :class:`ConfigError` otherwise."""
    if isinstance(value, Severity):
        return value
    if isinstance(value, str):
        try:
            return Severity(value.strip().lower())
        except ValueError:
            pass
    raise ConfigError(f'{what} must be one of "error", "warning", "info" (got {value!r})')


def _cache_dir(table: dict[str, Any], path: Path) -> Path | None:
    value = table.get("cache-dir")
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigError(f"{path}: `cache-dir` must be a path")
    return (path.parent / value).resolve()
