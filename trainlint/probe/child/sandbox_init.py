"""The init process of the probe's sandbox (see docs/probe-sandbox.md for the threat model): run as a
file, ``python -I -S sandbox_init.py SPEC``, by the ``unshare`` and ``none`` paths (bubblewrap is its
own init). Standard library only, and nothing of trainlint: ``-I`` keeps the package off ``sys.path``.
The parent (``parent/sandbox.py``) builds SPEC and reads the ``sandbox`` event it writes first on the
events pipe (the fields of :class:`trainlint.probe.protocol.Sandbox`).

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

TYPE_CHECKING = False  # the typing module is not imported at run time: the init starts once per probe
if TYPE_CHECKING:
    from typing import Any

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


def _c() -> Any:
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


def _enc(text: str | None) -> bytes | None:
    return text.encode() if text is not None else None


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = _enc
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


def under(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _flags_of(path: str, table: list[tuple[str, int]]) -> int:
    best, flags = "", 0
    for point, f in table:
        if under(path, [point]) and len(point) >= len(best):
            best, flags = point, f
    return flags


def _emit(fd: int, event: dict[str, Any]) -> None:
    os.write(fd, (json.dumps(event) + "\n").encode())


def _setup_unshare(spec: dict[str, Any]) -> dict[str, Any]:
    """Mounts of the unshare path (we are root of fresh user+mount+PID namespaces)."""
    report: dict[str, Any] = {"writable": [], "covered": [], "bound": [], "pid_ns": True}
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
        if under(point, ["/proc"]):
            continue
        try:
            mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
        except OSError as exc:
            if point == "/":
                raise OSError(exc.errno, f"cannot make / read-only: {exc.strerror}") from None
            if exc.errno not in (errno.ENOENT, errno.EACCES) and not under(point, ["/sys"]):
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
        if not under(dst, covered):
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


def _init(spec: dict[str, Any]) -> int:
    events_fd = spec["events_fd"]
    kind = spec["kind"]
    if kind == "none":
        # Subreaper: orphans of the script (setsid daemons too) come to us and die with the probe.
        prctl(PR_SET_CHILD_SUBREAPER, 1)
        def terminate(*_: Any) -> None:
            _kill_descendants()
            os._exit(128 + signal.SIGTERM)

        signal.signal(signal.SIGTERM, terminate)
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        report: dict[str, Any] = {"pid_ns": False}
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
