"""Accuracy of the rules on real code: precision on a corpus of correct training code, recall on a
set of real bugs, for the default rules and for every rule (a rule off by default is measured too, so
that it can earn its place). Prints numbers; the committed snapshot and docs/accuracy.md follow.

    python benchmarks/accuracy.py lock        --git owner/name=GIT_DIR ...  [--set corpus]
    python benchmarks/accuracy.py materialize --git owner/name=GIT_DIR ...  [--set corpus]
    python benchmarks/accuracy.py materialize --git-root DIR   # clones as DIR/name, DIR/owner/name, ...
    python benchmarks/accuracy.py [run]       [--set corpus --set buggy] [--no-write]   # held-out rounds first
    python benchmarks/accuracy.py render      # docs/accuracy.md from the committed files only
    python benchmarks/accuracy.py heldout --set corpus --new SOURCE_ID ...   # record a held-out round
    python benchmarks/accuracy.py heldout --set buggy --new cases/x.py ...

No third-party code is committed. A *set* is a directory of pinned metadata (``benchmarks/corpus/``
for correct code, ``benchmarks/buggy/`` for real bugs), materialised into the gitignored
``benchmarks/.corpus-real/<set>/<source id>/<path>``:

``sources.toml``
    ``[[source]]`` tables. Every source has ``id`` (unique in the set, a directory name), ``kind``,
    ``license`` (SPDX; permissive only: MIT, Apache-2.0, BSD-2-Clause, BSD-3-Clause, ...), ``stack``
    (what the code was written for, e.g. ``"transformers-4/keras-2"``), ``include`` (glob patterns,
    ``**`` crosses directories) and optionally ``exclude``.

    - ``kind = "git"``: ``repo = "owner/name"``, ``commit`` (40 hex). Materialised from a local git
      directory (a clone, bare or not) given as ``--git owner/name=DIR``.
    - ``kind = "pypi"``: ``package``, ``version``, ``filename`` (the sdist or wheel), ``sha256`` of
      that archive. Fetched with ``pip download`` (cached in ``benchmarks/.corpus-real/.downloads``).
    - ``kind = "local"``: ``dir``, relative to the set directory; files written for this project
      and committed there (e.g. a bug in the shape of a public script). Always reachable offline.

``files.lock``
    One materialised file a line, tab-separated: ``sha256  role  source-id  path``. ``role`` is
    ``lint`` (a file of the set) or ``context`` (a requirements.txt / pyproject.toml / setup.cfg /
    environment.yml beside a linted file or in a directory above it: the version evidence the linter
    reads). The sha256 is that of the materialised text (notebooks: outputs stripped), so a
    materialised corpus is verified exact. ``lock`` writes it: the files matching ``include`` that
    are training code (import torch, tensorflow, keras or transformers), each distinct text once.

``snapshot.jsonl``
    The last run on that set, every rule selected: a first line ``{"meta": ...}`` (files, sources,
    library versions, ``default_rules``: the codes on by default then), then one finding a line: ``source``, ``path``, ``code``, ``line`` (row; in a notebook the row
    within ``cell``), ``cell`` (1-based, null outside notebooks), ``hash`` (of the stripped source
    line, so judgements survive line shifts), ``severity``, ``message``.

``verdicts.jsonl`` (the correct-code set)
    One judged finding a line: the key fields (``source``, ``path``, ``code``, ``line``, ``cell``,
    ``hash``), ``verdict`` (``true``: the code is really broken as said; ``false``: it works;
    ``version``: right about a removed/renamed API of a version the code was not written for;
    ``debatable``) and ``reason`` (one line). Precision = true / (true + false).

``expected.jsonl`` (the buggy set)
    One real bug a line: ``source``, ``path``, ``code`` (the rule that should report it), ``line``,
    ``cell`` (or null), ``evidence`` (the fix commit, issue thread or forum answer: owner/repo#N,
    owner/repo@commit or a URL) and ``reason``. Found when a finding of that code is on that line (or
    on a line with the same text in that file). Recall = found / expected.

``uncovered.toml`` (the buggy set)
    ``[[code]]`` tables: ``code``, ``name``, ``summary``: codes reserved for classes of real bugs that
    no rule covers yet. A bug of the set is marked with a registered rule's code or with one of these.
    Coverage = the share of the set's bugs whose code is a registered rule (the catalog's reach);
    recall counts every bug, so an uncovered bug is a bug missed.

``benchmarks/heldout.jsonl``
    The held-out rounds: code or bugs added to a set and measured with the rules as they were before
    anything was changed for them (``heldout``: every new finding judged first). One round a line:
    ``set``, ``date``, ``rules`` (the commit linted with), ``added`` (source ids or case paths),
    ``default_rules`` (the codes on by default then) and the counts: ``findings`` and ``verdicts`` of
    the default rules and ``by_rule`` of every rule for the corpus, ``expected``/``found`` (default
    rules)/``found_every_rule``, ``covered`` (the bugs whose code was a registered rule then) and
    ``by_rule`` (found by the default rules, expected) for the buggy set. Every rule is linted, so that
    a rule off by default is measured at first sight like the others. Rounds recorded before
    ``default_rules`` existed linted the default rules only: every code in them was on by default;
    rounds recorded before ``covered`` existed held only codes of registered rules, so for them
    covered = expected. The rounds say how the rules did on code they
    had never seen, so they come first: docs/accuracy.md opens with them (a row a round, numbered
    1, 2, 3 ... within its set in the order recorded; then per rule the first-sight precision summed
    over the corpus rounds that measured the rule as it is now, those numbered from its
    ``Rule.measured_from`` on, and the recall over the buggy rounds; then the default rules short of
    the precision target at first sight, which should be opt-in), and ``run`` prints the same
    summary before anything else. The per-rule tables after them measure the rules after they were
    fixed on these very files.

A finding matches a verdict with the same source, path, code and cell when the line and hash are
equal, else with the same hash at the nearest line. ``run`` lints the materialised files with every
rule (``trainlint.parallel.lint_files`` with ``Settings(select=["ALL"])``), prints the first-sight
summary of the held-out rounds, then the per-rule numbers after the fixes, and lists the findings
nobody judged (exit 1 if any). When every file of the set is materialised it
rewrites the set's snapshot and docs/accuracy.md (unless ``--no-write``); otherwise it lints what is
there and compares it with the snapshot.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
MATERIALISED = BENCH / ".corpus-real"
DOC = ROOT / "docs" / "accuracy.md"
HELDOUT = BENCH / "heldout.jsonl"
SETS = {"corpus": BENCH / "corpus", "buggy": BENCH / "buggy"}

PERMISSIVE = frozenset({"MIT", "Apache-2.0", "BSD-2-Clause", "BSD-3-Clause", "ISC", "0BSD", "Unlicense",
                        "CC0-1.0", "Python-2.0", "Zlib"})
VERDICTS = ("true", "false", "version", "debatable")
LINT_SUFFIXES = (".py", ".ipynb")
_CONTEXT_RE = re.compile(r"^(requirements[\w.-]*\.txt|pyproject\.toml|setup\.cfg|environment\.ya?ml)$")
#: training code: imports one of the frameworks trainlint is about
TRAINING_RE = re.compile(r"^[ \t]*(?:import|from)[ \t]+(?:torch|tensorflow|tf_keras|keras|transformers)\b", re.M)
KEY_FIELDS = ("source", "path", "code", "line", "cell", "hash")


# ---------------------------------------------------------------------------------------------
# Formats


@dataclass
class Source:
    id: str
    kind: str
    license: str
    stack: str
    include: list[str]
    exclude: list[str] = field(default_factory=list)
    repo: str = ""
    commit: str = ""
    package: str = ""
    version: str = ""
    filename: str = ""
    sha256: str = ""
    dir: str = ""


@dataclass
class LockEntry:
    sha256: str
    role: str  # "lint" | "context"
    source: str
    path: str


def load_sources(set_dir: Path) -> list[Source]:
    data = tomllib.loads((set_dir / "sources.toml").read_text(encoding="utf-8"))
    return [Source(**table) for table in data.get("source", [])]


def validate_sources(sources: list[Source]) -> list[str]:
    """Problems with a sources.toml (empty list: well-formed)."""
    problems = []
    seen = set()
    for s in sources:
        where = f"source {s.id!r}"
        if not re.fullmatch(r"[A-Za-z0-9][\w.+@-]*", s.id or ""):
            problems.append(f"{where}: id must be a plain directory name")
        if s.id in seen:
            problems.append(f"{where}: duplicate id")
        seen.add(s.id)
        if s.license not in PERMISSIVE:
            problems.append(f"{where}: license {s.license!r} is not a permissive SPDX id")
        if not s.stack:
            problems.append(f"{where}: no stack")
        if not s.include:
            problems.append(f"{where}: no include patterns")
        if s.kind == "git":
            if not re.fullmatch(r"[\w.-]+/[\w.-]+", s.repo):
                problems.append(f"{where}: repo must be owner/name")
            if not re.fullmatch(r"[0-9a-f]{40}", s.commit):
                problems.append(f"{where}: commit must be 40 hex digits")
        elif s.kind == "pypi":
            if not (s.package and s.version and s.filename and re.fullmatch(r"[0-9a-f]{64}", s.sha256)):
                problems.append(f"{where}: pypi needs package, version, filename and a sha256")
        elif s.kind == "local":
            if not s.dir:
                problems.append(f"{where}: local needs dir")
        else:
            problems.append(f"{where}: unknown kind {s.kind!r}")
    return problems


def load_lock(set_dir: Path) -> list[LockEntry]:
    path = set_dir / "files.lock"
    if not path.exists():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            sha, role, source, rel = line.split("\t")
            entries.append(LockEntry(sha, role, source, rel))
    return entries


def write_lock(set_dir: Path, entries: list[LockEntry]) -> None:
    lines = ["# sha256\trole\tsource\tpath (written by `benchmarks/accuracy.py lock`)"]
    lines += [f"{e.sha256}\t{e.role}\t{e.source}\t{e.path}" for e in sorted(entries, key=lambda e: (e.source, e.path))]
    (set_dir / "files.lock").write_text("\n".join(lines) + "\n", encoding="utf-8")


def read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False, sort_keys=False) + "\n" for r in rows), encoding="utf-8")


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def line_hash(text: str) -> str:
    return hashlib.sha1(text.strip().encode("utf-8")).hexdigest()[:12]


# ---------------------------------------------------------------------------------------------
# Reading sources


def glob_match(path: str, pattern: str) -> bool:
    """``**`` matches any number of directories (also none); ``*`` stays within one."""
    regex = ""
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            regex += "(?:.*/)?"
            i += 3
        elif pattern.startswith("**", i):
            regex += ".*"
            i += 2
        else:
            c = pattern[i]
            regex += "[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c)
            i += 1
    return re.fullmatch(regex, path) is not None


def selected(source: Source, path: str) -> bool:
    return any(glob_match(path, p) for p in source.include) and not any(glob_match(path, p) for p in source.exclude)


class Tree:
    """Read-only view of one source's files: ``paths()`` and ``read(path) -> bytes``."""

    def paths(self) -> list[str]:
        raise NotImplementedError

    def read(self, path: str) -> bytes:
        raise NotImplementedError


class GitTree(Tree):
    def __init__(self, git_dir: Path, commit: str):
        self.git_dir, self.commit = Path(git_dir), commit
        self._git("cat-file", "-e", f"{commit}^{{commit}}")

    def _git(self, *args: str) -> bytes:
        return subprocess.run(["git", "--git-dir" if (self.git_dir / "HEAD").exists() and not (self.git_dir / ".git").exists() else "-C",
                               str(self.git_dir), *args], check=True, capture_output=True).stdout

    def paths(self) -> list[str]:
        out = self._git("ls-tree", "-r", "-z", "--name-only", self.commit)
        return sorted(p for p in out.decode("utf-8", "surrogateescape").split("\0") if p)

    def read(self, path: str) -> bytes:
        return self._git("show", f"{self.commit}:{path}")


class ArchiveTree(Tree):
    """An sdist (.tar.gz) or wheel (.whl/.zip); paths without the sdist's top directory."""

    def __init__(self, archive: Path):
        self.files: dict[str, bytes] = {}
        if archive.name.endswith((".whl", ".zip")):
            with zipfile.ZipFile(archive) as zf:
                for info in zf.infolist():
                    if not info.is_dir():
                        self.files[info.filename] = zf.read(info)
        else:
            with tarfile.open(archive) as tf:
                for member in tf.getmembers():
                    if member.isfile():
                        name = member.name.split("/", 1)[1] if "/" in member.name else member.name
                        self.files[name] = tf.extractfile(member).read()

    def paths(self) -> list[str]:
        return sorted(self.files)

    def read(self, path: str) -> bytes:
        return self.files[path]


class DirTree(Tree):
    def __init__(self, root: Path):
        self.root = root

    def paths(self) -> list[str]:
        return sorted(p.relative_to(self.root).as_posix() for p in self.root.rglob("*") if p.is_file())

    def read(self, path: str) -> bytes:
        return (self.root / path).read_bytes()


def strip_notebook(data: bytes) -> bytes:
    """The notebook without outputs, execution counts or widget state; written as Jupyter does."""
    nb = json.loads(data.decode("utf-8"))
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
        cell.get("metadata", {}).pop("executionInfo", None)
        cell.get("metadata", {}).pop("outputId", None)
    nb.get("metadata", {}).pop("widgets", None)
    return (json.dumps(nb, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def code_text(path: str, data: bytes) -> str:
    """The code of a file (a notebook's code cells joined)."""
    if path.endswith(".ipynb"):
        nb = json.loads(data.decode("utf-8"))
        return "\n".join("".join(c.get("source", "")) if isinstance(c.get("source"), list) else c.get("source", "")
                         for c in nb.get("cells", []) if c.get("cell_type") == "code")
    return data.decode("utf-8", "replace")


def materialised_bytes(path: str, data: bytes) -> bytes:
    return strip_notebook(data) if path.endswith(".ipynb") else data


def open_tree(source: Source, set_dir: Path, git_dirs: dict[str, Path]) -> Tree:
    if source.kind == "git":
        if source.repo not in git_dirs:
            raise LookupError(f"{source.id}: no git directory for {source.repo} (pass --git {source.repo}=DIR)")
        return GitTree(git_dirs[source.repo], source.commit)
    if source.kind == "pypi":
        return ArchiveTree(download(source))
    return DirTree(set_dir / source.dir)


def download(source: Source) -> Path:
    cache = MATERIALISED / ".downloads"
    archive = cache / source.filename
    if not archive.exists():
        cache.mkdir(parents=True, exist_ok=True)
        flags = ["--no-binary", ":all:"] if not source.filename.endswith(".whl") else ["--only-binary", ":all:"]
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", *flags, "-d", str(cache),
                        f"{source.package}=={source.version}"], check=True)
    got = sha256(archive.read_bytes())
    if got != source.sha256:
        raise ValueError(f"{source.id}: {source.filename} has sha256 {got}, the lock says {source.sha256}")
    return archive


# ---------------------------------------------------------------------------------------------
# lock / materialize


def build_lock(set_dir: Path, git_dirs: dict[str, Path], log=print) -> list[LockEntry]:
    entries: list[LockEntry] = []
    seen_text: set[str] = set()
    for source in load_sources(set_dir):
        tree = open_tree(source, set_dir, git_dirs)
        all_paths = tree.paths()
        chosen, skipped = [], Counter()
        for path in all_paths:
            if not path.endswith(LINT_SUFFIXES) or not selected(source, path):
                continue
            try:
                raw = tree.read(path)
            except (subprocess.CalledProcessError, KeyError, OSError):
                skipped["absent from this copy"] += 1  # e.g. a large blob a partial clone lacks
                continue
            try:
                data = materialised_bytes(path, raw)
                text = code_text(path, data)
            except (ValueError, UnicodeDecodeError):
                skipped["unreadable"] += 1
                continue
            if not TRAINING_RE.search(text):
                skipped["not training code"] += 1
                continue
            digest = sha256(data)
            if digest in seen_text:
                skipped["duplicate"] += 1
                continue
            seen_text.add(digest)
            chosen.append(path)
            entries.append(LockEntry(digest, "lint", source.id, path))
        # the linter reads version pins next to a script and in every directory above it up to the root
        dirs = {str(d) for p in chosen for d in PurePosixPath(p).parents} | {"."}
        for path in all_paths:
            parent = str(PurePosixPath(path).parent)
            if parent in dirs and _CONTEXT_RE.match(PurePosixPath(path).name):
                try:
                    entries.append(LockEntry(sha256(tree.read(path)), "context", source.id, path))
                except (subprocess.CalledProcessError, KeyError, OSError):
                    pass
        log(f"{source.id}: {len(chosen)} files" + "".join(f", {n} {why}" for why, n in sorted(skipped.items())))
    write_lock(set_dir, entries)
    return entries


def materialise(set_dir: Path, git_dirs: dict[str, Path], out: Path | None = None, log=print) -> int:
    """Extract every locked file of the set into ``out`` (default: the gitignored corpus directory),
    verified against its sha256. Sources without a git directory are skipped (said so). Returns the
    number of files written."""
    out = out or MATERIALISED / set_dir.name
    by_source = defaultdict(list)
    for e in load_lock(set_dir):
        by_source[e.source].append(e)
    written = 0
    for source in load_sources(set_dir):
        try:
            tree = open_tree(source, set_dir, git_dirs)
        except LookupError as exc:
            log(f"skipped: {exc}")
            continue
        root = out / source.id
        (root / ".git").mkdir(parents=True, exist_ok=True)  # the source's root, as in a clone
        for e in by_source.get(source.id, []):
            data = tree.read(e.path)
            if e.role == "lint":
                data = materialised_bytes(e.path, data)
            if sha256(data) != e.sha256:
                raise ValueError(f"{source.id}/{e.path}: sha256 {sha256(data)} differs from the lock")
            target = root / e.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            written += 1
        log(f"{source.id}: {len(by_source.get(source.id, []))} files")
    return written


# ---------------------------------------------------------------------------------------------
# Linting and matching


def source_line(text: str, cell: int | None, line: int, notebook: bool) -> str:
    if notebook:
        nb = json.loads(text)
        cells = nb.get("cells", [])
        if cell is None or not 1 <= cell <= len(cells):
            return ""
        src = cells[cell - 1].get("source", "")
        text = "".join(src) if isinstance(src, list) else src
    lines = text.splitlines()
    return lines[line - 1] if 1 <= line <= len(lines) else ""


def lint_set(set_dir: Path, root: Path | None = None, jobs: int = 0) -> tuple[list[dict], list[LockEntry]]:
    """Findings of every rule, on by default or not (``select = ["ALL"]``), on the materialised files of
    a set (snapshot rows), and the locked files missing. Every rule is measured so that a rule off by
    default earns its way back (or in) on the same evidence as the others."""
    from trainlint.config import Settings
    from trainlint.files import SourceFile
    from trainlint.parallel import lint_files

    root = root or MATERIALISED / set_dir.name
    local = {s.id: set_dir / s.dir for s in load_sources(set_dir) if s.kind == "local"} \
        if (set_dir / "sources.toml").exists() else {}
    present, missing = [], []  # present: (entry, path)
    for e in load_lock(set_dir):
        if e.role != "lint":
            continue
        path = root / e.source / e.path
        if not path.is_file() and e.source in local:  # committed here: linted in place
            path = local[e.source] / e.path
        if path.is_file():
            present.append((e, path))
        else:
            missing.append(e)
    # the real path as the name: version evidence (requirement files up to the source's root) is
    # looked up from it
    files = [SourceFile(path, str(path)) for _, path in present]
    results = lint_files(files, Settings(select=["ALL"]), jobs or None)
    rows = []
    for (e, path), result in zip(present, results):
        text = path.read_text(encoding="utf-8", errors="replace")
        for f in result.findings:
            rows.append({
                "source": e.source, "path": e.path, "code": f.code, "line": f.start.row, "cell": f.cell,
                "hash": line_hash(source_line(text, f.cell, f.start.row, e.path.endswith(".ipynb"))),
                "severity": f.severity.value, "message": f.message,
            })
    rows.sort(key=lambda r: (r["source"], r["path"], r["cell"] or 0, r["line"], r["code"], r["message"]))
    return rows, missing


def _group(rows: list[dict]) -> dict[tuple, list[dict]]:
    groups = defaultdict(list)
    for r in rows:
        groups[(r["source"], r["path"], r["code"], r.get("cell"))].append(r)
    return groups


def match(findings: list[dict], judged: list[dict]) -> list[dict | None]:
    """For each finding, the judged row (verdict or expected bug) it matches, or None: same source,
    path, code and cell; equal line and hash, else equal hash at the nearest line."""
    groups = _group(judged)
    out = []
    for f in findings:
        candidates = groups.get((f["source"], f["path"], f["code"], f.get("cell")), [])
        exact = [c for c in candidates if c["line"] == f["line"] and c.get("hash", f["hash"]) == f["hash"]]
        if exact:
            out.append(exact[0])
            continue
        same_text = [c for c in candidates if c.get("hash") == f["hash"]]
        out.append(min(same_text, key=lambda c: abs(c["line"] - f["line"])) if same_text else None)
    return out


def key(row: dict) -> dict:
    return {k: row.get(k) for k in KEY_FIELDS}


def validate_verdicts(verdicts: list[dict]) -> list[str]:
    problems = []
    seen = set()
    for i, v in enumerate(verdicts, 1):
        where = f"verdict {i} ({v.get('source')}/{v.get('path')}:{v.get('line')} {v.get('code')})"
        missing = [k for k in (*KEY_FIELDS, "verdict", "reason") if k not in v]
        if missing:
            problems.append(f"{where}: missing {missing}")
            continue
        if v["verdict"] not in VERDICTS:
            problems.append(f"{where}: verdict must be one of {VERDICTS}")
        if not str(v["reason"]).strip() or "\n" in str(v["reason"]):
            problems.append(f"{where}: the reason must be one non-empty line")
        k = tuple(v[f] for f in KEY_FIELDS)
        if k in seen:
            problems.append(f"{where}: judged twice")
        seen.add(k)
    return problems


# ---------------------------------------------------------------------------------------------
# Statistics and the document


@dataclass
class Stats:
    findings: Counter = field(default_factory=Counter)  # code -> n
    verdicts: dict = field(default_factory=lambda: defaultdict(Counter))  # code -> verdict -> n
    unjudged: list = field(default_factory=list)
    expected: Counter = field(default_factory=Counter)  # code -> real bugs
    found: Counter = field(default_factory=Counter)  # code -> real bugs found


def precision_stats(findings: list[dict], verdicts: list[dict], stats: Stats) -> None:
    for f, v in zip(findings, match(findings, verdicts)):
        stats.findings[f["code"]] += 1
        if v is None:
            stats.unjudged.append(f)
        else:
            stats.verdicts[f["code"]][v["verdict"]] += 1


def recall_stats(findings: list[dict], expected: list[dict], stats: Stats, hashes: dict | None = None) -> list[dict]:
    """Counts the expected bugs found; returns those missed. ``hashes``: expected row -> line hash
    (when the expected rows carry none, the snapshot's findings' hashes at the same line are used)."""
    missed = []
    by_place = defaultdict(list)
    for f in findings:
        by_place[(f["source"], f["path"], f["code"], f.get("cell"))].append(f)
    for e in expected:
        stats.expected[e["code"]] += 1
        near = by_place.get((e["source"], e["path"], e["code"], e.get("cell")), [])
        want = e.get("hash") or (hashes or {}).get(id(e))
        if any(f["line"] == e["line"] or (want and f["hash"] == want) for f in near):
            stats.found[e["code"]] += 1
        else:
            missed.append(e)
    return missed


def below_target(verdicts: Counter) -> bool:
    """Short of the precision target: < 95 % with 5 or more true + false findings, else any false one."""
    judged = verdicts["true"] + verdicts["false"]
    return verdicts["false"] > 0 if judged < 5 else verdicts["true"] < 0.95 * judged


def _pct(num: int, den: int) -> str:
    return f"{100 * num / den:.1f} %" if den else "–"


# ---------------------------------------------------------------------------------------------
# First sight: the held-out rounds


@dataclass
class FirstSight:
    """The held-out rounds (``heldout.jsonl``), as measured before anything was changed for them, and
    their sums per rule: verdicts over the corpus rounds that measured the rule as it is now (those
    numbered from its ``Rule.measured_from`` on), real bugs found over the buggy rounds."""

    rounds: list[dict]
    measured_from: dict = field(default_factory=dict)  # code -> first corpus round counted (default 1)
    verdicts: dict = field(default_factory=lambda: defaultdict(Counter))  # code -> verdict -> n
    expected: Counter = field(default_factory=Counter)  # code -> real bugs
    found: Counter = field(default_factory=Counter)  # code -> real bugs found (default rules)

    @classmethod
    def of(cls, rounds: list[dict], measured_from: dict[str, int] | None = None) -> FirstSight:
        """``measured_from``: code -> the first corpus round (counted from 1) that measured the rule
        as it is; by default each registered rule's ``measured_from``."""
        if measured_from is None:
            from trainlint.rule import all_rules

            measured_from = {code: rule.measured_from for code, rule in all_rules().items()}
        fs = cls(list(rounds), dict(measured_from))
        for number, r in fs.numbered():
            if r["set"] == "corpus":
                for code, counts in r["by_rule"].items():
                    if number >= fs.first_round(code):
                        fs.verdicts[code].update(counts)
            else:
                for code, (found, expected) in r["by_rule"].items():
                    fs.found[code] += found
                    fs.expected[code] += expected
        return fs

    def numbered(self) -> list[tuple[int, dict]]:
        """Each round with its number within its set (1, 2, 3 ... in the order recorded)."""
        seen = Counter()
        out = []
        for r in self.rounds:
            seen[r["set"]] += 1
            out.append((seen[r["set"]], r))
        return out

    def first_round(self, code: str) -> int:
        return self.measured_from.get(code, 1)

    def codes(self) -> list[str]:
        return sorted(set(self.verdicts) | set(self.expected))

    def below_bar(self, defaults: set[str]) -> tuple[list[str], list[str]]:
        """The default codes whose first-sight precision is short of the target: (rules, engine
        codes). A rule short of it should be opt-in; an engine code (stage 0: the file could not be
        read, a rule crashed) is fixed in the engine."""
        short = [c for c in self.codes() if c in defaults and below_target(self.verdicts[c])]
        return [c for c in short if c[2] != "0"], [c for c in short if c[2] == "0"]

    def totals(self) -> tuple[Counter, int, int, int]:
        """Verdicts over every corpus round, and real bugs, found and found with every rule over
        every buggy round."""
        v = Counter()
        for r in self.rounds:
            if r["set"] == "corpus":
                v.update(r["verdicts"])
        bugs = [r for r in self.rounds if r["set"] != "corpus"]
        return (v, sum(r["expected"] for r in bugs), sum(r["found"] for r in bugs),
                sum(r["found_every_rule"] for r in bugs))


FIRST_SIGHT_ROUND_COLUMNS = ("set", "round", "date", "rules", "added", "files", "findings", "true", "false",
                             "version", "debatable", "precision", "real bugs", "found", "recall", "found, every rule",
                             "coverage")
FIRST_SIGHT_RULE_COLUMNS = ("rule", "default", "measured from", "findings", "true", "false", "version", "debatable",
                            "precision", "real bugs", "found", "recall")


def _first_sight_round_rows(fs: FirstSight) -> list[list[str]]:
    """One row a round (corpus rounds: verdicts and precision; buggy rounds: real bugs and recall),
    then one row of totals a set."""
    rows = []
    for number, r in fs.numbered():
        head = [r["set"], str(number), r["date"], r["rules"], str(len(r["added"])), str(r["files"])]
        if r["set"] == "corpus":
            v = r["verdicts"]
            rows.append(head + [str(r["findings"]), *(str(v.get(k, 0)) for k in VERDICTS),
                                _pct(v.get("true", 0), v.get("true", 0) + v.get("false", 0)), "–", "–", "–", "–", "–"])
        else:
            cov = r.get("covered", r["expected"])  # rounds before `covered` held registered codes only
            rows.append(head + ["–"] * 6 + [str(r["expected"]), str(r["found"]), _pct(r["found"], r["expected"]),
                                            f"{r['found_every_rule']} ({_pct(r['found_every_rule'], r['expected'])})",
                                            f"{cov} ({_pct(cov, r['expected'])})"])
    v, expected, found, every = fs.totals()
    corpus = [r for r in fs.rounds if r["set"] == "corpus"]
    if corpus:
        rows.append(["corpus", "all", "", "", str(sum(len(r["added"]) for r in corpus)),
                     str(sum(r["files"] for r in corpus)), str(sum(r["findings"] for r in corpus)),
                     *(str(v[k]) for k in VERDICTS), _pct(v["true"], v["true"] + v["false"]), "–", "–", "–", "–", "–"])
    bugs = [r for r in fs.rounds if r["set"] != "corpus"]
    cov = sum(r.get("covered", r["expected"]) for r in bugs)
    if bugs:
        rows.append(["buggy", "all", "", "", str(sum(len(r["added"]) for r in bugs)),
                     str(sum(r["files"] for r in bugs)), *["–"] * 6, str(expected), str(found),
                     _pct(found, expected), f"{every} ({_pct(every, expected)})",
                     f"{cov} ({_pct(cov, expected)})"])
    return rows


def _first_sight_rule_rows(fs: FirstSight, defaults: set[str]) -> list[list[str]]:
    rows = []
    for code in sorted(fs.codes(), key=lambda c: (c not in defaults, c)):
        v = fs.verdicts[code]
        rows.append([code, "yes" if code in defaults else "no", f"round {fs.first_round(code)}", str(sum(v.values())),
                     *(str(v[k]) for k in VERDICTS), _pct(v["true"], v["true"] + v["false"]),
                     str(fs.expected[code]), str(fs.found[code]), _pct(fs.found[code], fs.expected[code])])
    return rows


def _below_bar_lines(fs: FirstSight, defaults: set[str]) -> list[str]:
    rules, engine = fs.below_bar(defaults)

    def named(codes: list[str]) -> str:
        return ", ".join(f"{c} ({_pct(fs.verdicts[c]['true'], fs.verdicts[c]['true'] + fs.verdicts[c]['false'])}, "
                         f"{fs.verdicts[c]['false']} false)" for c in codes) or "none"

    return [f"Default rules below the bar at first sight (precision ≥ 95 % over the corpus rounds that measured "
            f"the rule as it is, from the round it is measured from; with fewer than 5 true + false findings, "
            f"no false one), which should become opt-in: {named(rules)}.",
            f"Engine codes below it (fixed in the engine, not made opt-in): {named(engine)}."]


def bar_failures(fs: FirstSight, defaults: set[str]) -> list[str]:
    """One line per default rule (not an engine code) below the precision bar at first sight over the
    corpus rounds counted for it: the rule, its figures and the two ways out."""
    rules, _ = fs.below_bar(defaults)
    last = sum(1 for _, r in fs.numbered() if r["set"] == "corpus")
    out = []
    for code in rules:
        v = fs.verdicts[code]
        out.append(f"{code} is on by default but {_pct(v['true'], v['true'] + v['false'])} precise at first sight "
                   f"({v['true']} true, {v['false']} false over the corpus rounds {fs.first_round(code)} to {last}; "
                   f"the bar: ≥ 95 %, and no false finding while fewer than 5 are judged): either set "
                   f"`default = False` on it (saying why in rules/{code}.md), or rework it by its premises and set "
                   f"`measured_from = {last + 1}`, the next corpus round, which then measures it at first sight")
    return out


def _first_sight_headline(fs: FirstSight) -> str:
    v, expected, found, _ = fs.totals()
    corpus = [r for r in fs.rounds if r["set"] == "corpus"]
    bugs = [r for r in fs.rounds if r["set"] != "corpus"]
    return (f"At first sight the default rules were right on {v['true']} of the {v['true'] + v['false']} findings "
            f"not about versions in {len(corpus)} corpus round{'s' * (len(corpus) != 1)} "
            f"({sum(r['files'] for r in corpus)} files): precision **{_pct(v['true'], v['true'] + v['false'])}**; "
            f"they found {found} of {expected} real bugs in {len(bugs)} buggy round{'s' * (len(bugs) != 1)}: "
            f"recall **{_pct(found, expected)}**.")


def _md_table(columns: tuple[str, ...], rows: list[list[str]], text_columns: int) -> list[str]:
    """A Markdown table; the first ``text_columns`` columns left-aligned, the others right-aligned."""
    return (["| " + " | ".join(columns) + " |",
             "|" + "|".join("---" if i < text_columns else "---:" for i in range(len(columns))) + "|"]
            + ["| " + " | ".join(row) + " |" for row in rows])


def _text_table(columns: tuple[str, ...], rows: list[list[str]], text_columns: int) -> list[str]:
    widths = [max(len(x) for x in col) for col in zip(columns, *rows)]
    return ["  ".join(x.ljust(w) if i < text_columns else x.rjust(w) for i, (x, w) in enumerate(zip(row, widths)))
            for row in [list(columns), *rows]]


def render_first_sight(rounds: list[dict], defaults: set[str], measured_from: dict[str, int] | None = None) -> list[str]:
    """The opening of docs/accuracy.md: the held-out rounds, per rule, and the rules below the bar
    (``measured_from``: as for :meth:`FirstSight.of`)."""
    out = ["## First sight: the held-out rounds", "",
           "A held-out round is code or bugs added to a set and linted with the rules as they were before",
           "anything changed for them (`python benchmarks/accuracy.py heldout`, after every new finding is",
           "judged); *rules* is the commit linted with. These are the numbers to expect on code trainlint has",
           "not seen. *precision* = true / (true + false): *version* and *debatable* findings are left out.", ""]
    if not rounds:
        return out + ["None recorded yet.", ""]
    fs = FirstSight.of(rounds, measured_from)
    rows = [[*r[:3], f"`{r[3]}`" if r[3] else "", *r[4:]] for r in _first_sight_round_rows(fs)]
    out += [_first_sight_headline(fs), ""]
    out += _md_table(FIRST_SIGHT_ROUND_COLUMNS, rows, 4)
    out += ["", "Added in each round: " + "; ".join(f"{r['set']} round {n}, {r['date']} (`{r['rules']}`): "
                                                   f"{', '.join(r['added'])}" for n, r in fs.numbered()) + ".", ""]
    out += ["### Per rule, at first sight", "",
            "Precision summed over the corpus rounds that measured the rule as it is now: those from the round",
            "it is *measured from* on (`Rule.measured_from`; a rule whose reasoning changes is measured again",
            "from the next round). Recall of the default rules summed over the buggy rounds.", ""]
    out += _md_table(FIRST_SIGHT_RULE_COLUMNS, _first_sight_rule_rows(fs, defaults), 3)
    out += [""] + [x for line in _below_bar_lines(fs, defaults) for x in (line, "")]
    return out


def print_first_sight(rounds: list[dict], defaults: set[str], measured_from: dict[str, int] | None = None) -> None:
    """The same summary as the opening of docs/accuracy.md, as text."""
    print("First sight: the held-out rounds, measured before any change made for them")
    if not rounds:
        print("  none recorded yet\n")
        return
    fs = FirstSight.of(rounds, measured_from)
    print(_first_sight_headline(fs).replace("**", ""))
    print("\n".join(_text_table(FIRST_SIGHT_ROUND_COLUMNS, _first_sight_round_rows(fs), 4)))
    print("\nper rule, at first sight (precision over the corpus rounds from the one it is measured from):")
    print("\n".join(_text_table(FIRST_SIGHT_RULE_COLUMNS, _first_sight_rule_rows(fs, defaults), 3)))
    print("\n".join(_below_bar_lines(fs, defaults)) + "\n")


def reserved_codes(set_dir: Path | None = None) -> dict[str, dict]:
    """The codes reserved in the set's ``uncovered.toml`` for bug classes no rule covers yet."""
    path = (set_dir or SETS["buggy"]) / "uncovered.toml"
    if not path.exists():
        return {}
    return {c["code"]: c for c in tomllib.loads(path.read_text(encoding="utf-8")).get("code", [])}


def covered(expected: list[dict]) -> int:
    """How many of the expected bugs have a code of a registered rule (the rest are reserved codes)."""
    from trainlint.rule import all_rules

    rules = all_rules()
    return sum(1 for e in expected if e["code"] in rules)


def _coverage_text(expected: list[dict], found: int) -> str:
    n, cov = len(expected), covered(expected)
    return (f"coverage {_pct(cov, n)} ({cov}/{n} bugs of a class with a registered rule); recall on those "
            f"{_pct(found, cov)} ({found}/{cov})")


def render(corpus_dir: Path = SETS["corpus"], buggy_dir: Path = SETS["buggy"], heldout_path: Path | None = None,
           defaults: set[str] | None = None) -> str:
    """docs/accuracy.md, from the committed held-out rounds, sources, lock, snapshots, verdicts and
    expected bugs: first the held-out rounds as first measured, then the figures after the fixes.
    ``defaults``: the codes on by default (by default those of the corpus snapshot's run)."""
    from trainlint.rule import all_rules

    rules = all_rules()
    stats = Stats()
    corpus_meta, corpus_rows = _snapshot(corpus_dir)
    if defaults is None:
        defaults = set(corpus_meta.get("default_rules") or [c for c, r in rules.items() if r.default])
    out = ["# Accuracy on real code", "",
           "<!-- generated by `python benchmarks/accuracy.py` (or `render`); checked by tests/test_accuracy.py -->", "",
           "How often trainlint's rules are right on code nobody here wrote: the rules on by default, and",
           "every rule (each is measured, so that a rule off by default can earn its place). The **corpus** is real",
           "training code written to work (scripts and notebooks from public repositories, each pinned to a",
           "commit, permissive licenses only); every finding on it is judged by reading the code:",
           "`true` (the code is broken as the message says), `false` (it works: a false alarm), `version`",
           "(right about an API removed or renamed in a version the code was not written for) or",
           "`debatable`. Precision = true / (true + false). The **buggy set** holds real bugs confirmed by",
           "their fix commit or issue thread; recall = the share trainlint reports with the expected rule.", ""]
    out += render_first_sight(read_jsonl(heldout_path or HELDOUT), defaults)
    sources = load_sources(corpus_dir) if (corpus_dir / "sources.toml").exists() else []
    lock = [e for e in load_lock(corpus_dir) if e.role == "lint"]
    per_source = Counter(e.source for e in lock)
    per_kind = defaultdict(Counter)
    for e in lock:
        per_kind[e.source][PurePosixPath(e.path).suffix] += 1
    precision_stats(corpus_rows, read_jsonl(corpus_dir / "verdicts.jsonl"), stats)
    found_in = Counter(r["source"] for r in corpus_rows)
    buggy_meta, buggy_rows = _snapshot(buggy_dir)
    expected = read_jsonl(buggy_dir / "expected.jsonl")
    hashes = _expected_hashes(buggy_dir, expected, buggy_rows)
    # per rule: each rule's own recall (the snapshot lints with every rule); in total: the default
    # rules' (what a user gets), and every rule's
    missed = recall_stats(buggy_rows, expected, stats, hashes)
    by_default = Stats()
    buggy_defaults = set(buggy_meta.get("default_rules") or defaults)
    missed_by_default = recall_stats(of_codes(buggy_rows, buggy_defaults), expected, by_default, hashes)
    reserved = reserved_codes(buggy_dir)
    codes = sorted((set(stats.findings) | set(stats.expected)) - (set(reserved) - set(rules)))
    quiet = sorted(defaults - set(codes))
    out += ["## After the fixes, on the same files", "",
            "The figures below are measured on every file of the sets with the rules as they are now, and",
            "the rules have been corrected on many of these very files after their round was recorded (the",
            "findings that went away stay judged in `verdicts.jsonl`): they flatter the rules. Quote the",
            "first-sight numbers above for code trainlint has not seen.", "",
            "### Per rule, after the fixes", "",
            "Every rule with a finding on the corpus or a real bug in the buggy set, measured with every",
            "rule selected (a rule off by default counts what it finds when it is selected). *version* and",
            "*debatable* findings are not counted in the precision.", "",
            "| rule | default | findings | true | false | version | debatable | unjudged | precision | real bugs | found | recall |",
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    unjudged = Counter(f["code"] for f in stats.unjudged)
    for code in sorted(codes, key=lambda c: (c not in defaults, c)):
        v = stats.verdicts[code]
        out.append(f"| {code} | {'yes' if code in defaults else 'no'} | {stats.findings[code]} | {v['true']} | "
                   f"{v['false']} | {v['version']} | {v['debatable']} | {unjudged[code]} | "
                   f"{_pct(v['true'], v['true'] + v['false'])} | {stats.expected[code]} | {stats.found[code]} | "
                   f"{_pct(stats.found[code], stats.expected[code])} |")
    short = [f"{c} ({_pct(stats.verdicts[c]['true'], stats.verdicts[c]['true'] + stats.verdicts[c]['false'])}, "
             f"{stats.verdicts[c]['false']} false)" for c in codes if c in defaults and below_target(stats.verdicts[c])]
    out += ["", "Default rules short of the target after the fixes (precision ≥ 95 %; with fewer than 5 true + "
            "false findings, no false one): " + (", ".join(short) if short else "none") + "."]
    if quiet:
        out += ["", f"Default rules with no finding on the corpus and no real bug recorded: {', '.join(quiet)}."]
    tot = Counter()
    for code in codes:
        if code in defaults:
            tot.update(stats.verdicts[code])
            tot["findings"] += stats.findings[code]
    all_v = Counter()
    for c in stats.verdicts.values():
        all_v.update(c)
    exp_total, found_total = sum(stats.expected.values()), sum(by_default.found.values())
    found_every = sum(stats.found.values())
    uncovered = Counter(e["code"] for e in expected if e["code"] not in rules)
    out += ["", "### Totals, after the fixes", "",
            f"- Default rules: {tot['findings']} findings on the corpus: {tot['true']} true, {tot['false']} false, "
            f"{tot['version']} version, {tot['debatable']} debatable; precision "
            f"**{_pct(tot['true'], tot['true'] + tot['false'])}**.",
            f"- All rules (default or not): {sum(stats.findings.values())} findings, precision "
            f"{_pct(all_v['true'], all_v['true'] + all_v['false'])}; unjudged: {len(stats.unjudged)}.",
            _severity_line(corpus_rows, read_jsonl(corpus_dir / "verdicts.jsonl")),
            _stale_line(corpus_rows, read_jsonl(corpus_dir / "verdicts.jsonl")),
            f"- Buggy set: {exp_total} real bugs"
            + (f" in {len({(e['source'], e['path']) for e in expected})} files, {found_total} found by the default "
               f"rules: recall **{_pct(found_total, exp_total)}**; with every rule selected {found_every} found: "
               f"recall {_pct(found_every, exp_total)}; the catalog's {_coverage_text(expected, found_total)}."
               if exp_total else " (none recorded yet)."), ""]
    missed_covered = [e for e in missed_by_default if e["code"] in rules]
    if missed_covered:
        out += ["### Real bugs not found", "", "By the default rules; those a rule off by default finds when it is "
                "selected say so.", ""]
        out += [f"- {e['code']} `{e['source']}/{e['path']}`:{e['line']}"
                + (f" (cell {e['cell']})" if e.get("cell") else "")
                + (" (found with the rule selected)" if e not in missed else "") + f" — {e.get('reason', '')}"
                for e in missed_covered]
        out.append("")
    if uncovered:
        out += ["### Real bugs of classes no rule covers yet", "",
                "Codes reserved in `benchmarks/buggy/uncovered.toml` for bug classes of the buggy set that no",
                "rule covers yet; they count in the recall as bugs missed.", "",
                "| code | class | real bugs |", "|---|---|---:|"]
        out += [f"| {c} | {reserved.get(c, {}).get('name', '?')} | {n} |" for c, n in sorted(uncovered.items())]
        out.append("")
    out += ["## Corpus", "",
            f"{len(lock)} files ({sum(c['.py'] for c in per_kind.values())} scripts, "
            f"{sum(c['.ipynb'] for c in per_kind.values())} notebooks) from {len(per_source)} sources "
            f"({len({s.repo or s.package or s.id for s in sources})} repositories); "
            f"linted with {_versions(corpus_meta)}.", "",
            "Reproduce: clone the repositories listed in `benchmarks/corpus/sources.toml` into one directory,",
            "then `python benchmarks/accuracy.py materialize --git-root DIR` (or `--git owner/name=PATH` for",
            "each) and `python benchmarks/accuracy.py`, which prints the first-sight summary, lints the corpus,",
            "prints the numbers after the fixes and lists any finding nobody has judged yet. The file formats",
            "are described at the top of that script.", "",
            "| source | pinned at | license | written for | .py | .ipynb | findings |",
            "|---|---|---|---|---:|---:|---:|"]
    for s in sources:
        pin = f"`{s.repo}` @ `{s.commit[:12]}`" if s.kind == "git" else (
            f"`{s.package}=={s.version}`" if s.kind == "pypi" else f"`{s.dir}` (in this repository)")
        out.append(f"| {s.id} | {pin} | {s.license} | {s.stack} | {per_kind[s.id]['.py']} | "
                   f"{per_kind[s.id]['.ipynb']} | {found_in[s.id]} |")
    return "\n".join(out)


def _severity_line(findings: list[dict], verdicts: list[dict]) -> str:
    """Severity by verdict: an error should be a true finding; a version finding on code pinned to
    the old stack should not be an error."""
    by = defaultdict(Counter)
    for f, v in zip(findings, match(findings, verdicts)):
        by[v["verdict"] if v else "unjudged"][f["severity"]] += 1
    parts = [f"{k}: " + ", ".join(f"{by[k][s]} {s}" for s in ("error", "warning", "info") if by[k][s])
             for k in (*VERDICTS, "unjudged") if by[k]]
    return "- Severity of the findings by verdict — " + "; ".join(parts) + "."


def _stale_line(findings: list[dict], verdicts: list[dict]) -> str:
    """The judged findings that are no longer reported (kept: they are recognised if they return)."""
    used = {id(v) for v in match(findings, verdicts) if v is not None}
    stale = Counter(v["verdict"] for v in verdicts if id(v) not in used)
    if not stale:
        return "- Every verdict matches a finding of the snapshot."
    return (f"- Judged findings no longer reported (kept in verdicts.jsonl): {sum(stale.values())} ("
            + ", ".join(f"{stale[k]} {k}" for k in VERDICTS if stale[k]) + ").")


def _snapshot(set_dir: Path) -> tuple[dict, list[dict]]:
    rows = read_jsonl(set_dir / "snapshot.jsonl")
    if rows and "meta" in rows[0]:
        return rows[0]["meta"], rows[1:]
    return {}, rows


def _versions(meta: dict) -> str:
    v = meta.get("versions") or {}
    return ", ".join(f"{k} {v[k]}" for k in sorted(v)) or "the libraries installed"


def _expected_hashes(set_dir: Path, expected: list[dict], findings: list[dict]) -> dict:
    """Line hashes of expected bugs, from the materialised files when present."""
    out = {}
    root = MATERIALISED / set_dir.name
    for e in expected:
        path = root / e["source"] / e["path"]
        if path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            out[id(e)] = line_hash(source_line(text, e.get("cell"), e["line"], e["path"].endswith(".ipynb")))
    return out


def library_versions() -> dict:
    from importlib import metadata

    out = {}
    for name in ("torch", "transformers", "tensorflow", "keras", "tf-keras"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


# ---------------------------------------------------------------------------------------------
# CLI


def find_git_dirs(root: Path, repos: list[str]) -> dict[str, Path]:
    """Clones of ``repos`` under ``root``: ``root/name``, ``root/owner/name``, ``root/owner+name``
    (each also with ``.git`` appended or a ``repo`` subdirectory)."""
    out = {}
    for repo in repos:
        owner, name = repo.split("/")
        for base in (root / name, root / owner / name, root / f"{owner}+{name}"):
            for cand in (base, Path(f"{base}.git"), base / "repo"):
                if (cand / "HEAD").is_file() or (cand / ".git").exists():
                    out[repo] = cand
                    break
            if repo in out:
                break
    return out


def _git_dirs(values: list[str], root: str | None = None, set_names: list[str] = ()) -> dict[str, Path]:
    out = {}
    if root:
        repos = sorted({s.repo for n in set_names for s in load_sources(SETS[n]) if s.kind == "git"})
        out.update(find_git_dirs(Path(root), repos))
    for v in values or []:
        repo, _, path = v.partition("=")
        if not path:
            raise SystemExit(f"--git wants owner/name=DIR, got {v!r}")
        out[repo] = Path(path)
    return out


def run(set_names: list[str], write: bool, jobs: int, reuse: bool = False) -> int:
    from trainlint.rule import default_codes

    print_first_sight(read_jsonl(HELDOUT), default_codes())
    print("After the fixes, on the same files (rules since corrected on many of them: these numbers flatter):")
    status = 0
    for name in set_names:
        set_dir = SETS[name]
        if not (set_dir / "files.lock").exists():
            print(f"[{name}] no files.lock: nothing to lint")
            continue
        lock = [e for e in load_lock(set_dir) if e.role == "lint"]
        last = MATERIALISED / f"{name}.last.jsonl"
        if reuse and last.exists():
            rows, missing = read_jsonl(last), []
        else:
            rows, missing = lint_set(set_dir, jobs=jobs)
            if not missing:
                last.parent.mkdir(parents=True, exist_ok=True)
                write_jsonl(last, rows)
        meta, old = _snapshot(set_dir)
        complete = not missing
        repos = {s.repo or s.package or s.id for s in load_sources(set_dir)}
        print(f"[{name}] {len(lock)} files from {len({e.source for e in lock})} sources ({len(repos)} repositories); "
              f"{len(lock) - len(missing)} materialised, {len(rows)} findings")
        if not complete:
            have = {(e.source, e.path) for e in lock} - {(e.source, e.path) for e in missing}
            old_here = [r for r in old if (r["source"], r["path"]) in have]
            same = [key(r) | {"message": r["message"]} for r in rows] == [key(r) | {"message": r["message"]} for r in old_here]
            print(f"[{name}] {len(missing)} files not materialised (run `materialize`); on the "
                  f"{len(have)} present the findings {'equal' if same else 'DIFFER FROM'} the snapshot")
            if not same:
                status = 1
            if len(have) < len(lock):
                print(f"[{name}] the numbers below are those of the committed snapshot")
                rows = old
        if name == "corpus":
            stats = Stats()
            precision_stats(rows, read_jsonl(set_dir / "verdicts.jsonl"), stats)
            _print_precision(stats)
            short = [c for c, v in sorted(stats.verdicts.items()) if c in default_codes() and below_target(v)]
            print(f"default rules short of the precision target: {', '.join(short) or 'none'}")
            if stats.unjudged:
                status = 1
                print(f"\n[{name}] {len(stats.unjudged)} findings nobody judged (add them to {set_dir.name}/verdicts.jsonl):")
                for f in stats.unjudged:
                    print("  " + json.dumps(key(f) | {"severity": f["severity"], "message": f["message"]}, ensure_ascii=False))
        else:
            expected = read_jsonl(set_dir / "expected.jsonl")
            stats = Stats()
            hashes = _expected_hashes(set_dir, expected, rows)
            missed = recall_stats(of_codes(rows, default_codes()), expected, stats, hashes)
            every = Stats()
            missed_every = recall_stats(rows, expected, every, hashes)
            print(f"[{name}] recall of the default rules {_pct(sum(stats.found.values()), sum(stats.expected.values()))} "
                  f"({sum(stats.found.values())}/{sum(stats.expected.values())}); "
                  f"{_coverage_text(expected, sum(stats.found.values()))}")
            for code in sorted(stats.expected):
                print(f"  {code}: {stats.found[code]}/{stats.expected[code]}"
                      + ("" if code in default_codes() or code not in every.found else
                         f" ({every.found[code]} with the rule selected: off by default)"))
            for e in missed_every:
                print(f"  missed {e['code']} {e['source']}/{e['path']}:{e['line']}")
            also = [e for e in missed if e not in missed_every]
            if also:
                n = sum(every.found.values())
                print(f"[{name}] with the off-by-default rules selected too (--select ALL): recall "
                      f"{_pct(n, sum(every.expected.values()))} ({n}/{sum(every.expected.values())}); "
                      f"then also found: {', '.join(sorted(e['code'] + ' ' + e['path'] for e in also))}")
        if complete and write:
            meta = {"set": name, "files": len(lock), "sources": len({e.source for e in lock}),
                    "versions": library_versions(), "default_rules": sorted(default_codes())}
            write_jsonl(set_dir / "snapshot.jsonl", [{"meta": meta}, *rows])
    if write:
        DOC.write_text(render() + "\n", encoding="utf-8")
    return status


def _rules_commit() -> str:
    """The commit the rules are linted at (`+changes` when trainlint/ differs from it)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True).stdout.strip()
    commit = git("rev-parse", "--short=12", "HEAD") or "unknown"
    return commit + ("+changes" if git("status", "--porcelain", "--", "trainlint") else "")


def heldout(name: str, new: list[str], write: bool, jobs: int = 0) -> int:
    """Measure a held-out round: the files of ``new`` (source ids of the corpus, case paths of the buggy
    set) linted with every rule as it is, before any change made for them; append it to heldout.jsonl.
    The record keeps ``default_rules`` (the codes on by default then); its totals (``findings``,
    ``verdicts``; ``found``) count those, its ``by_rule`` verdicts every rule."""
    import datetime
    import tempfile

    from trainlint.rule import default_codes

    set_dir = SETS[name]
    lock = load_lock(set_dir)
    if name == "corpus":
        chosen = [e for e in lock if e.source in new]
    else:
        chosen = [e for e in lock if f"{e.source}/{e.path}" in new or e.path in new]
    absent = sorted(set(new) - {e.source for e in chosen} - {f"{e.source}/{e.path}" for e in chosen}
                    - {e.path for e in chosen})
    if absent or not chosen:
        print(f"[{name}] not in {set_dir.name}/files.lock: {', '.join(absent) or 'nothing given'} (run `lock` first)")
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        view = Path(tmp)
        write_lock(view, chosen)
        (view / "sources.toml").write_text((set_dir / "sources.toml").read_text(encoding="utf-8"), encoding="utf-8")
        for s in load_sources(set_dir):  # local sources are read from the set's own directory
            if s.kind == "local":
                (view / s.dir).symlink_to((set_dir / s.dir).resolve(), target_is_directory=True)
        rows, missing = lint_set(view, root=MATERIALISED / name, jobs=jobs)
    if missing:
        print(f"[{name}] {len(missing)} files not materialised (run `materialize`)")
        return 2
    defaults = default_codes()
    record = {"set": name, "date": datetime.date.today().isoformat(), "rules": _rules_commit(), "added": sorted(new),
              "files": sum(1 for e in chosen if e.role == "lint"), "default_rules": sorted(defaults)}
    stats = Stats()
    if name == "corpus":
        precision_stats(rows, read_jsonl(set_dir / "verdicts.jsonl"), stats)
        if stats.unjudged:
            print(f"[{name}] judge these {len(stats.unjudged)} findings first ({set_dir.name}/verdicts.jsonl):")
            for f in stats.unjudged:
                print("  " + json.dumps(key(f) | {"severity": f["severity"], "message": f["message"]}, ensure_ascii=False))
            return 1
        # the round's totals are those of the default rules (what a user gets); every rule's verdicts
        # are kept per rule, where a rule off by default earns its promotion
        tot = Counter()
        for code in defaults & set(stats.verdicts):
            tot.update(stats.verdicts[code])
        record |= {"findings": len(of_codes(rows, defaults)), "verdicts": {v: tot[v] for v in VERDICTS},
                   "by_rule": {c: {v: n for v, n in sorted(stats.verdicts[c].items()) if n}
                               for c in sorted(stats.verdicts)}}
        print(f"[{name}] held-out round: {record['files']} files, {record['findings']} findings of the default rules: "
              + ", ".join(f"{tot[v]} {v}" for v in VERDICTS)
              + f"; precision {_pct(tot['true'], tot['true'] + tot['false'])}; {len(rows)} findings of every rule")
    else:
        cases = {(e.source, e.path) for e in chosen}
        expected = [e for e in read_jsonl(set_dir / "expected.jsonl") if (e["source"], e["path"]) in cases]
        hashes = _expected_hashes(set_dir, expected, rows)
        missed = recall_stats(of_codes(rows, defaults), expected, stats, hashes)
        missed_every = recall_stats(rows, expected, Stats(), hashes)
        also = [e for e in missed if e not in missed_every]
        found = sum(stats.found.values())
        record |= {"expected": len(expected), "found": found, "found_every_rule": found + len(also),
                   "covered": covered(expected),
                   "by_rule": {c: [stats.found[c], stats.expected[c]] for c in sorted(stats.expected)}}
        print(f"[{name}] held-out round: {len(expected)} real bugs in {record['files']} cases, {found} found "
              f"({_pct(found, len(expected))}); with every rule {found + len(also)} "
              f"({_pct(found + len(also), len(expected))}); {_coverage_text(expected, found)}")
        for e in missed:
            print(f"  missed {e['code']} {e['source']}/{e['path']}:{e['line']}")
    if write:
        with HELDOUT.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        print(f"recorded in {HELDOUT}")
    return 0


def of_codes(rows: list[dict], codes: set[str]) -> list[dict]:
    """The findings of ``codes`` (e.g. the default rules) among ``rows``."""
    return [r for r in rows if r["code"] in codes]


def _print_precision(stats: Stats) -> None:
    from trainlint.rule import all_rules

    rules = all_rules()
    print(f"\n{'rule':7} {'default':7} {'n':>5} {'true':>5} {'false':>5} {'vers':>5} {'debat':>5} {'new':>5}  precision")
    tot = Counter()
    for code in sorted(stats.findings):
        v = stats.verdicts[code]
        new = sum(1 for f in stats.unjudged if f["code"] == code)
        default = code in rules and rules[code].default
        if default:
            tot.update(v)
            tot["n"] += stats.findings[code]
        print(f"{code:7} {'yes' if default else 'no':7} {stats.findings[code]:5} {v['true']:5} {v['false']:5} "
              f"{v['version']:5} {v['debatable']:5} {new:5}  {_pct(v['true'], v['true'] + v['false'])}")
    print(f"{'default':15} {tot['n']:5} {tot['true']:5} {tot['false']:5} {tot['version']:5} {tot['debatable']:5} "
          f"{'':5}  {_pct(tot['true'], tot['true'] + tot['false'])}")
    every = Counter()
    for v in stats.verdicts.values():
        every.update(v)
    print(f"{'all rules':15} {sum(stats.findings.values()):5} {every['true']:5} {every['false']:5} "
          f"{every['version']:5} {every['debatable']:5} {len(stats.unjudged):5}  "
          f"{_pct(every['true'], every['true'] + every['false'])}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("command", nargs="?", default="run", choices=("run", "lock", "materialize", "render", "heldout"))
    parser.add_argument("--set", dest="sets", action="append", choices=sorted(SETS),
                        help="the set(s) to work on (default: every set with a sources.toml)")
    parser.add_argument("--git", action="append", metavar="OWNER/NAME=DIR", help="a local git directory of a source")
    parser.add_argument("--git-root", metavar="DIR",
                        help="a directory holding the clones (as DIR/name, DIR/owner/name or DIR/owner+name)")
    parser.add_argument("--no-write", action="store_true", help="run: do not rewrite the snapshot or docs/accuracy.md")
    parser.add_argument("--reuse", action="store_true",
                        help="run: take the findings of the last complete run instead of linting (to judge them)")
    parser.add_argument("-j", "--jobs", type=int, default=0, help="run: worker processes (default: all cores)")
    parser.add_argument("--new", nargs="+", default=[], metavar="ID_OR_PATH",
                        help="heldout: the corpus sources (ids) or buggy cases (paths) of the round")
    args = parser.parse_args(argv)
    names = args.sets or [n for n, d in SETS.items() if (d / "sources.toml").exists()]
    if args.command == "render":
        DOC.write_text(render() + "\n", encoding="utf-8")
        return 0
    if args.command == "lock":
        for n in names:
            build_lock(SETS[n], _git_dirs(args.git, args.git_root, names))
        return 0
    if args.command == "heldout":
        if len(names) != 1:
            parser.error("heldout: give one --set")
        return heldout(names[0], args.new, not args.no_write, args.jobs)
    if args.command == "materialize":
        for n in names:
            materialise(SETS[n], _git_dirs(args.git, args.git_root, names))
        return 0
    return run(names, not args.no_write, args.jobs, args.reuse)


if __name__ == "__main__":
    sys.exit(main())
