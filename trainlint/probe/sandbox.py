"""Isolation and process lifecycle of the probe's child (see docs/probe-sandbox.md for the threat model).

Parent side (imported by ``runner.py``): choose a sandbox (bubblewrap, else unprivileged namespaces
through util-linux ``unshare``, else none), build the command, start it with pipes for the script's
output and the event channel, read them into bounded buffers until the deadline, and kill everything
the probe started, also when trainlint itself is stopped (SIGTERM/SIGINT/SIGHUP) or dies.

Sandbox side: run as a file (``python -I -S sandbox.py SPEC``), this module is the init process of the
``unshare`` and ``none`` paths. Standard library only below the parent-side section's imports.

- ``unshare``: PID 1 of new user, mount, network and PID namespaces. It remounts every mount read-only,
  mounts a fresh /proc, puts private size-limited tmpfs over /tmp, /var/tmp, /run, /dev/shm and
  $HOME, binds back read-only what the run must read (the interpreter, the project, the caches, paths
  named in the arguments or environment), mounts a size-limited tmpfs as the probe's work directory,
  then forks the child, which enters a nested user namespace (no capability over those mounts: they
  cannot be unmounted or made writable again), sets no_new_privs, enters the working directory and
  execs the interpreter. When the child exits, PID 1 exits and the kernel kills every process left in
  the namespace.
- ``none``: a subreaper that forks the child and, when it exits (or trainlint dies), kills every process
  left below it.
"""

from __future__ import annotations

# Only what the init needs is imported before it runs (it starts once per probe: every import counts).
import ctypes
import errno
import json
import os
import signal
import sys

# ---------------------------------------------------------------- sandbox side (stdlib only)

MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC = 32, 1024, 2048, 4096, 16384
MS_PRIVATE, MS_RELATIME, MS_STRICTATIME = 1 << 18, 1 << 21, 1 << 24
CLONE_NEWUSER = 0x10000000
PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER, PR_SET_NO_NEW_PRIVS = 1, 36, 38
_FLAG_WORDS = {"nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": MS_NOATIME,
               "nodiratime": MS_NODIRATIME, "relatime": MS_RELATIME, "strictatime": MS_STRICTATIME}
#: exit status of the init when the sandbox could not be set up (the script did not run)
SETUP_FAILED = 97

_libc = None


def _c():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def prctl(option: int, arg: int) -> None:
    _check(_c().prctl(option, ctypes.c_ulong(arg), 0, 0, 0), f"prctl({option})")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = (lambda s: s.encode() if s is not None else None)
    _check(_c().mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)), f"mount {target}")


def _unescape(field: str) -> str:
    return field.encode().decode("unicode_escape").encode("latin-1").decode(errors="surrogateescape")


def mounts() -> list[tuple[str, int]]:
    """(mount point, per-mount flags that a bind remount must keep) of this mount namespace."""
    out = []
    with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as f:
        for line in f:
            parts = line.split()
            flags = 0
            for word in parts[5].split(","):
                flags |= _FLAG_WORDS.get(word, 0)
            out.append((_unescape(parts[4]), flags))
    return out


def _under(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _flags_of(path: str, table: list[tuple[str, int]]) -> int:
    best, flags = "", 0
    for point, f in table:
        if _under(path, [point]) and len(point) >= len(best):
            best, flags = point, f
    return flags


def _emit(fd: int, event: dict) -> None:
    os.write(fd, (json.dumps(event) + "\n").encode())


def _setup_unshare(spec: dict) -> dict:
    """Mounts of the unshare path (we are root of fresh user+mount+PID namespaces)."""
    report: dict = {"writable": [], "covered": [], "bound": [], "pid_ns": True}
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    table = mounts()
    # What is bound back after the tmpfs covers: opened now, while the paths are still reachable.
    binds = []
    for src, dst in spec["binds"]:
        try:
            binds.append((os.open(src, os.O_PATH | os.O_CLOEXEC), os.path.isdir(src), dst, _flags_of(src, table)))
        except OSError:
            continue
    # 1. Everything read-only, whatever the path form. /proc is replaced below.
    for point, flags in table:
        if _under(point, ["/proc"]):
            continue
        try:
            mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
        except OSError as exc:
            if point == "/":
                raise OSError(exc.errno, f"cannot make / read-only: {exc.strerror}") from None
            if exc.errno not in (errno.ENOENT, errno.EACCES) and not _under(point, ["/sys"]):
                report["writable"].append(point)
    # The new network namespace's loopback up, as bubblewrap does (gloo over 127.0.0.1 and the like):
    # it reaches nothing outside the namespace.
    try:
        import fcntl
        import socket
        import struct

        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            flags = struct.unpack("16sH", fcntl.ioctl(sock, 0x8913, struct.pack("16sH", b"lo", 0))[:18])[1]
            fcntl.ioctl(sock, 0x8914, struct.pack("16sH", b"lo", flags | 1))  # SIOCSIFFLAGS |= IFF_UP
    except OSError:
        pass
    # 2. A /proc of the new PID namespace (the host's processes are not visible).
    try:
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError:
        report["pid_ns"] = False  # a container hides parts of /proc: the host's /proc stays (read-write)
    # 3. Private, size-limited tmpfs over the places scripts (and their sockets) usually live.
    for path in spec["cover"]:
        try:
            os.makedirs(path, exist_ok=True)
            mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, f"size={spec['cover_size']},mode=1777")
            report["covered"].append(path)
        except OSError as exc:
            if os.path.isdir(path):
                report["writable"].append(f"{path} ({exc.strerror})")
    # 4. Back, read-only: the interpreter, the project, the caches, what the arguments name.
    covered = report["covered"]
    for fd, is_dir, dst, flags in binds:
        if not _under(dst, covered):
            continue
        try:
            if is_dir:
                os.makedirs(dst, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                if not os.path.exists(dst):
                    os.close(os.open(dst, os.O_CREAT | os.O_WRONLY, 0o600))
            mount(f"/proc/self/fd/{fd}", dst, None, MS_BIND | MS_REC)
            mount(None, dst, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | flags)
            report["bound"].append(dst)
        except OSError:
            continue
        finally:
            os.close(fd)
    # 5. The only writable place: the probe's work directory, a size-limited tmpfs.
    work = spec["work"]
    os.makedirs(work, exist_ok=True)
    mount("tmpfs", work, "tmpfs", MS_NOSUID | MS_NODEV, f"size={spec['work_size']},mode=0700")
    for sub in spec.get("work_dirs", ()):
        os.makedirs(os.path.join(work, sub), exist_ok=True)
    return report


def _nest_user_namespace(uid: int, gid: int) -> None:
    """Enter a user namespace below the one that owns the mounts: no capability over them is left."""
    _check(_c().unshare(CLONE_NEWUSER), "unshare(CLONE_NEWUSER)")
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} 0 1"), ("gid_map", f"{gid} 0 1")):
        with open(f"/proc/self/{name}", "w", encoding="ascii") as f:
            f.write(text)


def _children_of(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="latin-1") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == pid:
            out.append(int(entry))
    return out


def _kill_descendants() -> None:
    """As a subreaper: kill and reap every process below us (orphans are re-parented to us)."""
    me = os.getpid()
    for _ in range(200):
        kids = _children_of(me)
        if not kids:
            return
        for pid in kids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    break
            except ChildProcessError:
                break


def _init(spec: dict) -> int:
    events_fd = spec["events_fd"]
    kind = spec["kind"]
    if kind == "none":
        # Subreaper: orphans of the script (setsid daemons too) come to us and die with the probe.
        prctl(PR_SET_CHILD_SUBREAPER, 1)
        signal.signal(signal.SIGTERM, lambda *_: (_kill_descendants(), os._exit(128 + signal.SIGTERM)))
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        report = {"pid_ns": False}
    else:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        try:
            report = _setup_unshare(spec)
        except OSError as exc:
            sys.stderr.write(f"trainlint sandbox: {exc}\n")
            return SETUP_FAILED
    if os.getppid() != spec["parent_pid"] and kind == "none":
        return SETUP_FAILED  # trainlint died before we could notice
    _emit(events_fd, {"type": "sandbox", "kind": kind, **report})
    pid = os.fork()
    if pid == 0:
        try:
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            if kind == "unshare":
                _nest_user_namespace(spec["uid"], spec["gid"])
            prctl(PR_SET_NO_NEW_PRIVS, 1)
            try:
                os.chdir(spec["cwd"])
            except OSError:
                os.chdir(spec["work"])
            os.execve(spec["argv"][0], spec["argv"], os.environ)
        except BaseException as exc:  # noqa: BLE001
            sys.stderr.write(f"trainlint sandbox: cannot start the child: {exc}\n")
        os._exit(SETUP_FAILED)
    status = 0
    while True:
        try:
            got, st = os.wait()
        except ChildProcessError:
            break
        if got == pid:
            status = os.waitstatus_to_exitcode(st)
            break
    if kind == "none":
        _kill_descendants()
    # In a PID namespace, our exit makes the kernel kill every process left in it.
    return status if status >= 0 else 128 - status


if __name__ == "__main__":
    os._exit(_init(json.loads(sys.argv[1])))

# ---------------------------------------------------------------- parent side

import contextlib  # noqa: E402
import dataclasses  # noqa: E402
import fcntl  # noqa: E402
import functools  # noqa: E402
import re  # noqa: E402
import secrets  # noqa: E402
import selectors  # noqa: E402
import shutil  # noqa: E402
import stat  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable, Iterator  # noqa: E402

#: Made private (an empty, size-limited tmpfs) inside the sandbox, besides $HOME.
COVERED = ("/tmp", "/var/tmp", "/run", "/dev/shm")
#: Size of each private tmpfs over the places above (they are thrown away with the probe).
COVER_SIZE = "256m"
#: The script's stdout and stderr are each kept in a ring buffer of this many bytes (the last ones).
OUTPUT_LIMIT = 2 * 1024 * 1024
#: A line of the script's output shown in the report is cut at this many characters.
LINE_LIMIT = 400
#: One event line on the channel longer than this is dropped; in all, at most EVENTS_LIMIT bytes.
EVENT_LINE_LIMIT = 1024 * 1024
EVENTS_LIMIT = 32 * 1024 * 1024
#: Seconds the child may keep running after it reported the end of the run before it is killed.
END_GRACE = 10.0
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
            if path in out or path in covered or not _under(path, covered) or _under(path, ["/run", runtime]):
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
        if not _under(p, kept):
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
    init = [sys.executable, "-I", "-S", str(Path(__file__).resolve())]
    if sandbox.kind == "bwrap":
        bwrap = shutil.which("bwrap") or "bwrap"
        cmd = [bwrap, "--unshare-user", "--unshare-net", "--unshare-ipc", "--die-with-parent", "--new-session",
               "--cap-drop", "ALL", "--ro-bind", "/", "/", "--dev", "/dev"]
        if sandbox.pid_ns:
            cmd += ["--unshare-pid", "--proc", "/proc"]
        for d in covered_dirs():
            cmd += ["--size", str(_bytes(COVER_SIZE)), "--tmpfs", d]
        for p in [str(layout.tmp), *layout.readable]:
            if _under(p, covered_dirs()):
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


# ---------------------------------------------------------------- the run: pipes, bounded reading, kill


class Ring:
    """The last ``limit`` bytes of a stream, and how many bytes there were in all."""

    def __init__(self, limit: int = OUTPUT_LIMIT) -> None:
        self.limit = limit
        self.buf = bytearray()
        self.total = 0

    def feed(self, data: bytes) -> None:
        self.total += len(data)
        self.buf += data
        if len(self.buf) > 2 * self.limit:
            del self.buf[: len(self.buf) - self.limit]

    def tail(self, lines: int = 15, prefix: str = "  | ") -> str:
        """The last lines, each cut at LINE_LIMIT characters and prefixed (visibly the script's)."""
        data = bytes(self.buf[-self.limit:])
        text = data.decode("utf-8", errors="replace")
        out = []
        for line in text.rstrip().splitlines()[-lines:]:
            line = "".join(ch if ch.isprintable() or ch == "\t" else "?" for ch in line)
            if len(line) > LINE_LIMIT:
                line = line[:LINE_LIMIT] + f" [... {len(line) - LINE_LIMIT} more characters]"
            out.append(prefix + line)
        dropped = self.total - len(data)
        if dropped > 0 and out:
            out.insert(0, f"{prefix}[... {dropped} earlier bytes not kept]")
        return "\n".join(out)


@dataclasses.dataclass
class Collected:
    events: list[dict[str, Any]]
    stdout: Ring
    stderr: Ring
    stacks: str
    returncode: int | None
    timed_out: bool = False
    lingered: bool = False  # it reported its end but did not exit: killed
    sandbox: dict[str, Any] | None = None  # the init's report (first line of the channel only)
    forged: int = 0  # lines on the channel without the run's key
    dropped: int = 0  # event lines too long, or beyond EVENTS_LIMIT


_LIVE: set[Child] = set()


class Child:
    """The sandboxed child: started at once, read with :meth:`collect`, killed by :meth:`kill`."""

    def __init__(self, build: Callable[[tuple[int, int, int]], list[str]], env: dict[str, str],
                 config: dict[str, Any], kind: str) -> None:
        self.key = secrets.token_hex(16)
        self.kind = kind
        config = {**config, "key": self.key}
        cfg_r, cfg_w = os.pipe()
        ev_r, ev_w = os.pipe()
        st_r, st_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        payload = json.dumps(config).encode()
        with contextlib.suppress(OSError):
            fcntl.fcntl(cfg_w, 1031, max(len(payload) + 1, 65536))  # F_SETPIPE_SZ
        os.write(cfg_w, payload)
        os.close(cfg_w)
        fds = (cfg_r, ev_w, st_w)
        cmd = build(fds)
        self._read = {ev_r: "events", st_r: "stacks", out_r: "stdout", err_r: "stderr"}
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out_w, stderr=err_w, env=env,
                                         pass_fds=fds, start_new_session=True, preexec_fn=_die_with_parent)
        except BaseException:
            for fd in (*self._read, *fds, out_w, err_w):
                os.close(fd)
            raise
        for fd in (*fds, out_w, err_w):
            os.close(fd)
        _LIVE.add(self)

    def kill(self) -> None:
        """Kill the sandbox and everything in it. In a PID namespace, the kernel kills every process of
        the namespace when its init dies; without one, the subreaper init kills what is below it."""
        proc = self.proc
        if proc.poll() is None and self.kind == "none":
            with contextlib.suppress(OSError):
                os.kill(proc.pid, signal.SIGTERM)  # the init kills every descendant, then exits
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=3)
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
        _LIVE.discard(self)

    def collect(self, timeout: float) -> Collected:
        """Read the pipes until the child exits, or until the deadline (then kill it): in bounded
        buffers, whatever the script prints."""
        started = time.monotonic()
        deadline = started + timeout
        rings = {"stdout": Ring(), "stderr": Ring(), "stacks": Ring(256 * 1024)}
        events: list[dict[str, Any]] = []
        got = Collected(events, rings["stdout"], rings["stderr"], "", None)
        partial = bytearray()
        skipping = False
        events_bytes = 0
        first = True
        end_at: float | None = None
        exited_at: float | None = None
        sel = selectors.DefaultSelector()
        for fd in self._read:
            os.set_blocking(fd, False)
            sel.register(fd, selectors.EVENT_READ)

        def feed_events(data: bytes) -> None:
            nonlocal skipping, events_bytes, first, end_at
            partial.extend(data)
            while True:
                nl = partial.find(b"\n")
                if nl < 0:
                    if len(partial) > EVENT_LINE_LIMIT:
                        partial.clear()
                        skipping = True
                    return
                line = bytes(partial[:nl])
                del partial[: nl + 1]
                if skipping:
                    skipping = False
                    got.dropped += 1
                    continue
                events_bytes += len(line)
                if events_bytes > EVENTS_LIMIT:
                    got.dropped += 1
                    continue
                try:
                    event = json.loads(line)
                except ValueError:
                    got.forged += 1
                    continue
                if not isinstance(event, dict):
                    got.forged += 1
                    continue
                if first and event.get("type") == "sandbox" and "k" not in event:
                    got.sandbox = event
                    first = False
                    continue
                first = False
                if event.pop("k", None) != self.key:
                    got.forged += 1
                    continue
                events.append(event)
                if event.get("type") == "end" and end_at is None:
                    end_at = time.monotonic()

        killed = False
        while sel.get_map():
            now = time.monotonic()
            limit = deadline if end_at is None else min(deadline, end_at + END_GRACE)
            if exited_at is not None:
                limit = min(limit, exited_at + 1.0)  # something outside the sandbox kept a pipe open
            if now >= limit:
                if exited_at is None:
                    got.timed_out = end_at is None or now >= deadline
                    got.lingered = not got.timed_out
                    self.kill()
                    killed = True
                    deadline = now + 1.0  # drain what is left, briefly
                    end_at = None
                    exited_at = now
                    continue
                break
            for key, _ in sel.select(timeout=min(0.25, max(limit - now, 0.0))):
                fd = key.fd
                try:
                    data = os.read(fd, 1 << 16)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    sel.unregister(fd)
                    continue
                name = self._read[fd]
                if name == "events":
                    feed_events(data)
                else:
                    rings[name].feed(data)
            if exited_at is None and self.proc.poll() is not None:
                exited_at = time.monotonic()
        sel.close()
        for fd in self._read:
            with contextlib.suppress(OSError):
                os.close(fd)
        if not killed and self.proc.poll() is None:
            self.kill()
        else:
            self.kill()  # the process group: whatever is left of it
        got.returncode = self.proc.returncode
        got.stacks = bytes(rings["stacks"].buf).decode("utf-8", errors="replace")
        return got


def _die_with_parent() -> None:
    # The sandbox (bwrap, unshare, or the init without isolation) is killed when trainlint dies.
    with contextlib.suppress(OSError, AttributeError):
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


@contextlib.contextmanager
def signals_kill_children(cleanup: Any = None) -> Iterator[None]:
    """While active, SIGTERM/SIGINT/SIGHUP to trainlint first kill every live probe child and run
    ``cleanup`` (remove the temp dir), then take their usual course."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}

    def handler(signum, frame):  # noqa: ANN001
        for child in list(_LIVE):
            child.kill()
        if cleanup is not None:
            with contextlib.suppress(Exception):
                cleanup()
        old = previous.get(signum, signal.SIG_DFL)
        signal.signal(signum, old)
        if callable(old):
            old(signum, frame)
        else:
            signal.raise_signal(signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        try:
            previous[sig] = signal.signal(sig, handler)
        except (OSError, ValueError):
            continue
    try:
        yield
    finally:
        for sig, old in previous.items():
            with contextlib.suppress(OSError, ValueError, TypeError):
                signal.signal(sig, old if old is not None else signal.SIG_DFL)


def make_tmp() -> Path:
    return Path(tempfile.mkdtemp(prefix="trainlint-probe-"))
