"""Choosing the probe's sandbox and building its command line (parent side; see docs/probe-sandbox.md
for the threat model): bubblewrap, else unprivileged namespaces through util-linux ``unshare`` with
trainlint's own init (``child/sandbox_init.py``), else no isolation (the init as a subreaper only).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from trainlint.probe.child import sandbox_init
from trainlint.probe.child.sandbox_init import under

#: Made private (an empty, size-limited tmpfs) inside the sandbox, besides $HOME.
COVERED = ("/tmp", "/var/tmp", "/run", "/dev/shm")
#: Size of each private tmpfs over the places above (they are thrown away with the probe).
COVER_SIZE = "256m"
#: Environment variables whose paths are never bound into the sandbox.
_PRIVATE_ENV = re.compile(r"SOCK|XDG_RUNTIME_DIR|DBUS|CREDENTIAL|SECRET|TOKEN|PASSWORD|PASSWD|KEY|^HOME$|^PWD$|"
                          r"^OLDPWD$|^TMPDIR$|^TEMP$|^TMP$|^TRAINLINT_")


@dataclasses.dataclass(frozen=True)
class Sandbox:
    kind: str  # "bwrap", "unshare" or "" (none)
    why: str  # for the "not isolated" note
    pid_ns: bool = True  # a PID namespace (some containers refuse the /proc mount it needs)


def project_dir(script: Path) -> Path:
    """The nearest ancestor holding .git or pyproject.toml, else the script's directory."""
    start = script.resolve().parent
    for d in (start, *start.parents):
        if (d / ".git").exists() or (d / "pyproject.toml").exists():
            if d != Path(d.anchor) and d != Path.home():
                return d
            break
    return start


def detect_sandbox() -> Sandbox:
    """bwrap if it works here, else unprivileged namespaces via unshare, else none.
    ``TRAINLINT_PROBE_SANDBOX=bwrap|unshare|none`` restricts the choice (tests, debugging)."""
    return _detect_sandbox(os.environ.get("TRAINLINT_PROBE_SANDBOX", "").strip().lower())


@functools.lru_cache(maxsize=4)
def _detect_sandbox(mode: str) -> Sandbox:
    if mode == "none":
        return Sandbox("", "disabled by TRAINLINT_PROBE_SANDBOX=none")
    reasons = []
    if mode == "unshare":
        reasons.append("bwrap not wanted (TRAINLINT_PROBE_SANDBOX=unshare)")
    elif bwrap := shutil.which("bwrap"):
        for pid_ns in (True, False):
            pid = ["--unshare-pid", "--proc", "/proc"] if pid_ns else []
            # The options the run uses (--size, --disable-userns: bubblewrap 0.8 or later).
            if _quick([bwrap, "--unshare-user", "--unshare-net", *pid, "--ro-bind", "/", "/", "--dev", "/dev",
                       "--size", "1048576", "--tmpfs", "/tmp", "--cap-drop", "ALL", "--disable-userns",
                       "--die-with-parent", "--", "/bin/sh", "-c", "! touch /x 2>/dev/null && touch /tmp/x"]):
                return Sandbox("bwrap", "", pid_ns)
        reasons.append("bwrap cannot create namespaces here")
    else:
        reasons.append("no bwrap on PATH")
    if mode == "bwrap":
        reasons.append("unshare not wanted (TRAINLINT_PROBE_SANDBOX=bwrap)")
    elif unshare := shutil.which("unshare"):
        if _quick([unshare, "--user", "--map-root-user", "--net", "--mount", "--pid", "--fork", "--kill-child",
                   "--", "/bin/sh", "-c", "mount -t tmpfs none /tmp && touch /tmp/x"]):
            return Sandbox("unshare", "", True)
        reasons.append("unprivileged user/mount/PID/network namespaces unavailable")
    else:
        reasons.append("no unshare on PATH")
    return Sandbox("", ", ".join(reasons))


def _quick(cmd: list[str]) -> bool:
    try:
        return subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def covered_dirs() -> list[str]:
    """The private places of the sandbox, resolved (/var/run is /run), $HOME included."""
    out = []
    for p in (*COVERED, os.path.expanduser("~")):
        real = os.path.realpath(p)
        if os.path.isdir(real) and real != "/" and real not in out:
            out.append(real)
    return sorted(out)


def _python_paths(python: str) -> list[str]:
    """Directories the interpreter reads: its prefixes and sys.path (asked once for a foreign one)."""
    paths: list[str] = []
    chain, p = [], python
    for _ in range(10):  # the symlink chain of a venv's python: each hop's prefix
        chain.append(p)
        if not os.path.islink(p):
            break
        p = os.path.join(os.path.dirname(p), os.readlink(p))
    paths += [os.path.dirname(os.path.dirname(os.path.abspath(c))) for c in chain]
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        paths += [sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path]
    else:
        paths += _foreign_paths(python)
    return paths


@functools.lru_cache(maxsize=8)
def _foreign_paths(python: str) -> tuple[str, ...]:
    code = "import sys, json; print(json.dumps([sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path]))"
    try:
        out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=30,
                             stdin=subprocess.DEVNULL).stdout
        return tuple(json.loads(out.strip().splitlines()[-1]))
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return ()


def _cache_paths() -> list[str]:
    home = os.path.expanduser("~")
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    env = os.environ.get
    return [p for p in (
        env("HF_HOME") or os.path.join(xdg, "huggingface"), env("HF_HUB_CACHE"), env("HUGGINGFACE_HUB_CACHE"),
        env("TRANSFORMERS_CACHE"), env("HF_DATASETS_CACHE"), env("TORCH_HOME") or os.path.join(xdg, "torch"),
        env("KERAS_HOME") or os.path.join(home, ".keras"), os.path.join(home, ".local", "lib"),
        os.path.join(home, "nltk_data"), env("NLTK_DATA"),
    ) if p]


_LITERAL_PATH = re.compile(r"""["'](~?/[^"'\n\\]{1,300})["']""")


def readable_paths(script: Path, python: str, script_args: tuple[str, ...], extra: list[Path]) -> list[str]:
    """What the run must read although it lies in a private place (bound back read-only): the
    interpreter, the project, the caches, and existing paths named by the script's arguments, by the
    environment or as string literals in the script."""
    cands: list[str] = [*map(str, extra), *_python_paths(python), *_cache_paths()]
    cands += os.environ.get("PYTHONPATH", "").split(os.pathsep)
    for key, value in os.environ.items():
        if _PRIVATE_ENV.search(key.upper()):
            continue
        cands += [v for v in value.split(os.pathsep) if v.startswith("/")]
    for arg in script_args:
        for part in (arg, arg.split("=", 1)[-1]):
            if part and not part.startswith("-"):
                cands.append(os.path.abspath(os.path.expanduser(part)))
    try:
        source = script.read_text(encoding="utf-8", errors="replace")
    except OSError:
        source = ""
    cands += [os.path.expanduser(m) for m in _LITERAL_PATH.findall(source)]
    covered = covered_dirs()
    runtime = os.environ.get("XDG_RUNTIME_DIR") or "/run/user"
    out: list[str] = []
    for c in cands:
        if not c or not os.path.isabs(c):
            continue
        for path in dict.fromkeys((os.path.normpath(c), os.path.realpath(c))):
            if path in out or path in covered or not under(path, covered) or under(path, ["/run", runtime]):
                continue
            try:
                st = os.stat(path)
            except (OSError, ValueError):
                continue
            if stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode):  # never a socket or a device
                out.append(path)
    # A directory bound back covers what lies below it.
    out.sort(key=lambda p: (p.count("/"), p))
    kept: list[str] = []
    for p in out:
        if not under(p, kept):
            kept.append(p)
    return kept


@dataclasses.dataclass
class Layout:
    """Where the run reads and writes."""

    tmp: Path  # the probe's temporary directory (config, shim: read-only inside the sandbox)
    work: Path  # the only writable directory (a size-limited tmpfs inside the sandbox)
    cwd: Path
    readable: list[str]  # bound back read-only over the private places
    project: Path | None = None  # for the note of the unisolated path
    work_size: str = "1g"
    work_dirs: tuple[str, ...] = ("tmp",)


def command(sandbox: Sandbox, argv: list[str], layout: Layout, fds: tuple[int, int, int]) -> tuple[list[str], str]:
    """The command line that runs ``argv`` in ``sandbox``, and the one-line isolation note. ``fds``: the
    child's ends of the config, events and stacks pipes (``{fds}`` in ``argv`` becomes their numbers)."""
    argv = [a.replace("{fds}", ",".join(map(str, fds))) for a in argv]
    readonly_note = (f"file system read-only except the probe's temp dir ({layout.work_size} tmpfs); "
                     f"{', '.join(covered_dirs())} private")
    spec = {"kind": sandbox.kind or "none", "argv": argv, "cwd": str(layout.cwd), "work": str(layout.work),
            "work_size": layout.work_size, "work_dirs": list(layout.work_dirs), "events_fd": fds[1],
            "parent_pid": os.getpid(), "uid": os.getuid(), "gid": os.getgid(), "cover": covered_dirs(),
            "cover_size": COVER_SIZE, "binds": [[p, p] for p in [str(layout.tmp), *layout.readable]]}
    init = [sys.executable, "-I", "-S", str(Path(sandbox_init.__file__).resolve())]
    if sandbox.kind == "bwrap":
        bwrap = shutil.which("bwrap") or "bwrap"
        cmd = [bwrap, "--unshare-user", "--unshare-net", "--unshare-ipc", "--die-with-parent", "--new-session",
               "--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev"]
        if sandbox.pid_ns:
            cmd += ["--unshare-pid", "--proc", "/proc"]
        for d in covered_dirs():
            cmd += ["--size", str(_bytes(COVER_SIZE)), "--tmpfs", d]
        for p in [str(layout.tmp), *layout.readable]:
            if under(p, covered_dirs()):
                cmd += ["--ro-bind", p, p]
        cmd += ["--size", str(_bytes(layout.work_size)), "--tmpfs", str(layout.work)]
        cmd += [a for d in layout.work_dirs for a in ("--dir", str(layout.work / d))]
        cmd += ["--disable-userns", "--chdir", str(layout.cwd), "--", *argv]
        pids = "" if sandbox.pid_ns else " (no PID namespace)"
        return cmd, f"isolated (bwrap{pids}): network off, {readonly_note}"
    if sandbox.kind == "unshare":
        unshare = shutil.which("unshare") or "unshare"
        cmd = [unshare, "--user", "--map-root-user", "--net", "--mount", "--ipc", "--pid", "--fork", "--kill-child",
               "--", *init, json.dumps(spec)]
        return cmd, f"isolated (unshare): network off, {readonly_note}"
    where = f"the project {layout.project}, " if layout.project else ""
    return [*init, json.dumps(spec)], (
        f"not isolated: {sandbox.why}; the script ran with network access and could write wherever user "
        f"{_user()} may (e.g. {where}$HOME, /tmp)")


def _user() -> str:
    try:
        import pwd

        return pwd.getpwuid(os.getuid()).pw_name
    except (ImportError, KeyError):
        return str(os.getuid())


def _bytes(size: str) -> int:
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    size = size.strip().lower()
    return int(float(size[:-1]) * units[size[-1]]) if size[-1:] in units else int(size)
