"""The result cache: findings of unchanged files are not computed again.

One JSON entry per (file content, file name, settings, trainlint build) under ``.trainlint_cache/``
(the project root, see :func:`default_directory`, or ``--cache-dir``). The key hashes

- the file's bytes,
- its display name (rules and ``per-file-ignores`` may depend on it) and the codes enabled for it,
- ``Settings.cache_key()`` (selection, per-file ignores, target versions, installed library versions),
- the requirement files that speak for the file (``requirements.txt`` & co. up to the repository
  root: :func:`trainlint.pins.project_key`),
- the trainlint version and a fingerprint of its own source files (a rule edited in a development
  checkout invalidates the cache without a version bump).

An entry that cannot be read or decoded is a miss (and is overwritten), never an error. Results with
an internal error are never stored. Entries are written atomically (temp file + rename), so runs in
parallel never read half an entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from trainlint import __version__
from trainlint.pins import project_key

#: The on-disk format; bump when the entry layout changes.
FORMAT = 2
DIRNAME = ".trainlint_cache"

_FINGERPRINT: str | None = None


def build_fingerprint() -> str:
    """trainlint's version plus the size and mtime of each of its modules (the rule set)."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        h = hashlib.blake2b(f"{__version__}/{FORMAT}".encode(), digest_size=16)
        root = Path(__file__).resolve().parent
        for p in sorted(root.rglob("*.py")):
            try:
                st = p.stat()
            except OSError:
                continue
            h.update(f"{p.relative_to(root)}:{st.st_size}:{st.st_mtime_ns};".encode())
        _FINGERPRINT = h.hexdigest()
    return _FINGERPRINT


def default_directory(project_root: Path | None = None, cwd: Path | None = None) -> Path:
    """Where the cache goes when no ``--cache-dir``/``cache-dir`` says: ``.trainlint_cache`` in the
    project root, as ruff does: the directory of the config file, else the nearest ancestor of the
    working directory holding ``pyproject.toml`` or ``.git``; outside any project, the user's cache
    directory (``$XDG_CACHE_HOME/trainlint``), never beside an arbitrary script."""
    if project_root is not None:
        return Path(project_root) / DIRNAME
    start = Path(cwd or Path.cwd()).resolve()
    home = Path.home()
    for d in (start, *start.parents):
        if d == home or d == Path(d.anchor):
            break
        if (d / "pyproject.toml").is_file() or (d / ".git").exists():
            return d / DIRNAME
    xdg = os.environ.get("XDG_CACHE_HOME") or str(home / ".cache")
    return Path(xdg) / "trainlint"


class Cache:
    def __init__(self, directory: Path, settings) -> None:
        self.directory = Path(directory)
        self.settings = settings
        self._base = hashlib.blake2b(
            f"{build_fingerprint()}\0{settings.cache_key()}".encode(), digest_size=16
        ).digest()
        self._dir_ready = False
        self._project_keys: dict[str, str] = {}

    def key(self, data: bytes, display: str) -> str:
        codes = ",".join(sorted(self.settings.codes_for(display)))
        h = hashlib.blake2b(self._base, digest_size=20)
        h.update(display.encode("utf-8", "surrogateescape") + b"\0" + codes.encode() + b"\0")
        # the requirement files next to it and up to the repository root (version evidence)
        h.update(project_key(display, self._project_keys).encode("utf-8", "surrogateescape") + b"\0")
        h.update(data)
        return h.hexdigest()

    def _path(self, key: str) -> Path:
        return self.directory / f"v{FORMAT}" / key[:2] / f"{key}.json"

    def get(self, key: str, display: str):
        """The cached FileResult, or None (missing, unreadable or corrupt entry)."""
        try:
            raw = self._path(key).read_bytes()
            data = json.loads(raw)
            return _result_from_json(data, display)
        except Exception:  # a corrupt or foreign entry is a miss
            return None

    def put(self, key: str, result) -> None:
        if result.internal_error:
            return
        path = self._path(key)
        try:
            if not self._dir_ready:
                self._init_dir()
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(_result_to_json(result), fh, separators=(",", ":"))
            os.replace(tmp, path)
        except OSError:  # a read-only project: run without caching
            pass

    def _init_dir(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        ignore = self.directory / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# created by trainlint\n*\n", encoding="utf-8")
        tag = self.directory / "CACHEDIR.TAG"
        if not tag.exists():
            tag.write_text("Signature: 8a477f597d28d172789f06886806bc55\n"
                           "# This is a trainlint cache directory.\n", encoding="utf-8")
        self._dir_ready = True


# ---------------------------------------------------------------------------------------------
# FileResult <-> JSON


def _pos(p) -> list[int]:
    return [p.row, p.column]


def _result_to_json(result) -> dict[str, Any]:
    return {
        "findings": [_finding_to_json(f) for f in result.findings],
        "note": result.note,
        "parsed": result.parsed,
        "training": result.training,
    }


def _finding_to_json(f) -> dict[str, Any]:
    out: dict[str, Any] = {
        "code": f.code, "name": f.name, "message": f.message, "severity": f.severity.value,
        "start": _pos(f.start), "end": _pos(f.end), "hint": f.hint,
    }
    if f.cell is not None:
        out["cell"] = f.cell
    if f.fix is not None:
        out["fix"] = {
            "applicability": f.fix.applicability.value,
            "message": f.fix.message,
            "edits": [[_pos(e.start), _pos(e.end), e.content] for e in f.fix.edits],
        }
    return out


def _result_from_json(data: dict[str, Any], display: str):
    from trainlint.core import FileResult
    from trainlint.findings import Applicability, Edit, Finding, Fix, Position, Severity

    findings = []
    for d in data["findings"]:
        fix = None
        if d.get("fix") is not None:
            fx = d["fix"]
            fix = Fix(Applicability(fx["applicability"]), str(fx["message"]),
                      tuple(Edit(Position(*s), Position(*e), str(c)) for s, e, c in fx["edits"]))
        findings.append(Finding(
            str(d["code"]), str(d["name"]), str(d["message"]), Severity(d["severity"]), display,
            Position(*d["start"]), Position(*d["end"]), fix=fix, hint=str(d.get("hint", "")),
            cell=d.get("cell"),
        ))
    note = data.get("note")
    return FileResult(display, findings, note=note if isinstance(note, str) else None,
                      parsed=bool(data.get("parsed", False)), training=bool(data.get("training", True)))
