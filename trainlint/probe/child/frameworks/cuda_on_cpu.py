"""Child-side plugin: scripts written for GPUs and clusters, probed on one CPU (docs/gpu-probes.md).

Post-import hooks only (standard library + the frameworks; nothing is imported before the script
imports it). The TensorFlow half lives in :mod:`trainlint.probe.child.frameworks.tf_devices`.

CUDA on a CPU (torch):

- a global ``TorchFunctionMode`` maps every CUDA device argument to the CPU: ``.to("cuda")``,
  ``.to(0)``, ``.to(torch.device("cuda:1"))``, ``.cuda()``, ``device="cuda"`` of factory functions
  (``torch.zeros``, ``torch.tensor``, ``with torch.device("cuda"):``), ``.pin_memory()``;
- ``torch.cuda.is_available()`` / ``device_count()`` / ``is_bf16_supported()`` answer as a one-GPU
  machine **to the script** (a frame outside the interpreter's library directories), and truthfully
  (no GPU) to libraries: the script takes the branch it takes on the cluster, while transformers,
  accelerate and torch itself keep their CPU paths;
- ``torch.cuda`` queries a script commonly makes (``set_device``, ``current_device``, memory stats,
  ``synchronize``, ``empty_cache``, device name/properties, ``Event``, ``stream``) answer as an idle
  device;
- ``autocast("cuda", ...)`` and ``GradScaler("cuda")`` are turned off: the forward runs in float32,
  no loss scaling. A float16 overflow cannot be seen on the CPU; the notes say so.

A one-rank world (torch.distributed): the script runs as rank 0 of a world of size 1, in this
process: the torchrun environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``, a free
``MASTER_PORT``) when a launcher is named (``--launcher``) or the script reads it;
``init_process_group`` on gloo with an in-process store whatever backend/world size was asked;
``mp.spawn`` calls the function once, in-process, with rank 0; DDP on CPU modules drops
``device_ids``; the loopback interface of the probe's network namespace is brought up for gloo, and
where it cannot be, the group is a world of one in this process (every collective a copy).
``from_pretrained(device_map=<GPUs>)`` loads on the CPU.
DeepSpeed's engine (``deepspeed.initialize``) needs a GPU: the run stops with the status
``unsupported`` (never a finding against the script, never "all clear").
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
import sysconfig
from typing import Any

from trainlint.probe.child import registry
from trainlint.probe.child.harness import Harness
from trainlint.probe.child.points import CUDA_EMULATED, DeviceEmulation

#: Launchers whose processes read the torchrun environment (rank, world size, master address).
DIST_LAUNCHERS = ("torchrun", "torch.distributed.launch", "torch.distributed.run", "deepspeed")
LAUNCHERS = ("python", "accelerate", "mp.spawn", *DIST_LAUNCHERS)



def launcher_name(text: str) -> str | None:
    """The launcher of a command line or a name: ``"torchrun --nproc_per_node=8"`` → ``"torchrun"``,
    ``"python -m torch.distributed.launch"`` → ``"torch.distributed.launch"``, ``"accelerate launch"`` →
    ``"accelerate"``; None when it is none of :data:`LAUNCHERS`."""
    words = [w for w in str(text).split() if not w.startswith("-")]
    for w in words:
        base = os.path.basename(w)
        if base in ("python", "python3") or re.fullmatch(r"python3(\.\d+)?", base):
            continue
        if base == "launch" and "accelerate" in words:
            continue
        if base in ("torch.multiprocessing.spawn", "spawn"):
            return "mp.spawn"
        return base if base in LAUNCHERS else None
    return "python" if words else None


#: The script reads the launcher's environment or starts a process group: probed as rank 0 of 1.
_WORLD_SIGNS = re.compile(
    r"init_process_group|\bLOCAL_RANK\b|\bWORLD_SIZE\b|environ(?:\.get)?\s*[\[(]\s*['\"]RANK['\"]"
    r"|deepspeed\.initialize|init_distributed"
)

_PKG_DIR = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # .../trainlint


def _emulation(h: Harness) -> DeviceEmulation:
    """What was emulated so far (kept on the harness by :func:`install`)."""
    return h.kept(DeviceEmulation) or h.keep(DeviceEmulation())


def install(h: Harness) -> None:
    h.keep(DeviceEmulation())
    raw = h.config.launcher
    launcher = (launcher_name(raw) or raw) if raw else ""
    source = _script_source(h)
    if launcher in DIST_LAUNCHERS or (not launcher and _WORLD_SIGNS.search(source)):
        _setup_world_env(h, launcher, source)
    elif launcher:
        h.note(f"probed as launched by {launcher} (one process)")
    h.when_imported("torch", lambda m: _on_torch(h, m))
    h.when_imported("accelerate.accelerator", lambda m: _on_accelerate(h, m))
    h.when_imported("transformers.modeling_utils", lambda m: _on_modeling_utils(h, m))
    h.when_imported("deepspeed", lambda m: _on_deepspeed(h, m))
    h.exception_hooks.insert(0, lambda exc, line: _cuda_error(h, exc, line))
    h.on_end(lambda: _flush(h))


def _script_source(h: Harness) -> str:
    try:
        with open(h.config.script, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


# ---------------------------------------------------------------- the note at the end


def _flush(h: Harness) -> None:
    st = _emulation(h)
    if st.flushed:
        return
    st.flushed = True
    if st.mapped:
        h.note("CUDA emulated on CPU (the probe has no GPU): " + "; ".join(st.mapped))
        if st.fp16:
            h.note("float16 mixed precision ran as float32 on the CPU: a float16 overflow (inf/NaN loss, "
                   "skipped GradScaler steps) could not be confirmed on CPU")
        registry.announce(h, CUDA_EMULATED, st)
    if st.world:
        h.note(st.world)


# ---------------------------------------------------------------- who is asking


@functools.lru_cache(maxsize=1)
def _library_dirs() -> tuple[str, ...]:
    dirs = {_PKG_DIR}
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            dirs.add(os.path.realpath(path))
    for path in sys.path:
        if path and ("site-packages" in path or "dist-packages" in path):
            dirs.add(os.path.realpath(path))
    return tuple(sorted(dirs))


@functools.lru_cache(maxsize=512)
def _is_library_file(filename: str) -> bool:
    if not filename or filename.startswith("<"):
        return filename.startswith("<frozen")
    real = os.path.realpath(filename)
    return any(real == d or real.startswith(d + os.sep) for d in _library_dirs())


def _asked_by_script(depth: int = 2) -> bool:
    """Whether the caller of the patched function (``depth`` frames up) is the user's code."""
    try:
        frame = sys._getframe(depth)
    except ValueError:
        return False
    return not _is_library_file(frame.f_code.co_filename)


# ---------------------------------------------------------------- torch


def _on_torch(h: Harness, torch: Any) -> None:
    if torch.cuda.is_available():
        return  # a real GPU: nothing to emulate
    _install_device_mode(h, torch)
    _patch_load(h, torch)
    _patch_cuda_queries(h, torch)
    _patch_amp(h, torch)
    _patch_distributed(h, torch)


def _device_type(d: Any, torch: Any) -> str:
    if isinstance(d, str):
        return d.split(":", 1)[0].strip().lower()
    if isinstance(d, torch.device):
        return str(d.type)
    if isinstance(d, int) and not isinstance(d, bool):
        return "cuda"  # a bare index is a CUDA device
    return ""


def _install_device_mode(h: Harness, torch: Any) -> None:
    st = _emulation(h)
    try:
        from torch.overrides import TorchFunctionMode
    except ImportError:
        return
    cpu = torch.device("cpu")

    def to_cpu(d: Any, what: str) -> Any:
        if _device_type(d, torch) == "cuda":
            st.add(what)
            return cpu
        return d

    class CudaOnCpu(TorchFunctionMode):  # type: ignore[misc]  # torch is Any to the type checker
        def __torch_function__(self, func: Any, types_: Any, args: tuple[Any, ...] = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            code = getattr(func, "__code__", None)
            if code is not None and code.co_filename.startswith(_PKG_DIR) and hasattr(func, "__wrapped__"):
                # trainlint's own patched Tensor method (backward): run the original, not the hook twice
                func = func.__wrapped__
            name = getattr(func, "__name__", "")
            if name == "cuda" and args:
                st.add(".cuda() → CPU")
                keep = {k: v for k, v in kwargs.items() if k in ("non_blocking", "memory_format")}
                return args[0].to(cpu, **keep)
            if name == "pin_memory" and args:
                return args[0]
            if "device" in kwargs and kwargs["device"] is not None:
                kwargs["device"] = to_cpu(kwargs["device"], "device='cuda' → CPU")
            if name in ("to", "_parse_to") and args:
                args = tuple(to_cpu(a, ".to('cuda') → CPU") for a in args)
            return func(*args, **kwargs)

    mode = CudaOnCpu()
    mode.__enter__()  # for the whole run, on the main thread (modes are thread-local)
    st.mode = mode


def _patch_load(h: Harness, torch: Any) -> None:
    """``torch.load(..., map_location="cuda:0")`` (or a checkpoint saved on a GPU): onto the CPU."""
    st = _emulation(h)
    original = torch.load

    @functools.wraps(original)
    def load(*args: Any, **kwargs: Any) -> Any:
        where = kwargs.get("map_location", args[1] if len(args) > 1 else None)
        if where is None or isinstance(where, (str, int)) or isinstance(where, torch.device) or isinstance(where, dict):
            if isinstance(where, dict) or (where is not None and _device_type(where, torch) == "cuda"):
                st.add(f"torch.load(map_location={where!r}) → CPU")
            args = args[:1] + args[2:] if len(args) > 1 else args
            kwargs["map_location"] = "cpu"
        return original(*args, **kwargs)

    torch.load = load


class _Props:
    def __init__(self) -> None:
        self.name = "CPU (CUDA emulated by the trainlint probe)"
        self.total_memory = 80 * 1024**3
        self.major, self.minor = 8, 0
        self.multi_processor_count = 1
        self.is_integrated = False
        self.is_multi_gpu_board = False

    def __repr__(self) -> str:
        return f"_CudaDeviceProperties(name='{self.name}', major=8, minor=0, total_memory=81920MB)"


class _Event:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        import time

        self._time = time
        self.t = 0.0

    def record(self, *args: Any, **kwargs: Any) -> None:
        self.t = self._time.perf_counter()

    def synchronize(self) -> None:
        pass

    def wait(self, *args: Any, **kwargs: Any) -> None:
        pass

    def query(self) -> bool:
        return True

    def elapsed_time(self, end: Any) -> float:
        return float(end.t - self.t) * 1000.0


def _patch_cuda_queries(h: Harness, torch: Any) -> None:
    st = _emulation(h)
    cuda = torch.cuda
    real_available, real_count = cuda.is_available, cuda.device_count

    def is_available() -> bool:
        if _asked_by_script():
            st.add("torch.cuda.is_available() → True for the script")
            return True
        return bool(real_available())

    def device_count() -> int:
        if _asked_by_script():
            st.add("torch.cuda.device_count() → 1 for the script")
            return 1
        return int(real_count())

    def is_bf16_supported(*args: Any, **kwargs: Any) -> bool:
        return _asked_by_script()

    def noop(what: str) -> Any:
        def f(*args: Any, **kwargs: Any) -> None:
            st.add(what)

        return f

    def zero(*args: Any, **kwargs: Any) -> int:
        return 0

    @contextlib.contextmanager
    def null_ctx(*args: Any, **kwargs: Any) -> Any:
        yield

    class device:  # torch.cuda.device(i): a context manager that does nothing on the CPU
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            st.add("torch.cuda.device(...) → CPU")

        def __enter__(self) -> None:
            return None

        def __exit__(self, *exc: Any) -> None:
            return None

    total = _Props().total_memory
    replacements = {
        "is_available": is_available,
        "device_count": device_count,
        "is_bf16_supported": is_bf16_supported,
        "set_device": noop("torch.cuda.set_device(...) ignored"),
        "current_device": zero,
        "synchronize": noop("torch.cuda.synchronize() ignored"),
        "empty_cache": noop("torch.cuda.empty_cache() ignored"),
        "ipc_collect": noop("torch.cuda.ipc_collect() ignored"),
        "reset_peak_memory_stats": noop("torch.cuda memory stats → 0"),
        "reset_max_memory_allocated": noop("torch.cuda memory stats → 0"),
        "reset_accumulated_memory_stats": noop("torch.cuda memory stats → 0"),
        "memory_allocated": zero,
        "max_memory_allocated": zero,
        "memory_reserved": zero,
        "max_memory_reserved": zero,
        "memory_cached": zero,
        "memory_stats": lambda *a, **k: {},
        "memory_summary": lambda *a, **k: "CUDA emulated on CPU by the trainlint probe: no GPU memory in use",
        "mem_get_info": lambda *a, **k: (total, total),
        "get_device_name": lambda *a, **k: _Props().name,
        "get_device_properties": lambda *a, **k: _Props(),
        "get_device_capability": lambda *a, **k: (8, 0),
        "Event": _Event,
        "stream": null_ctx,
        "device": device,
        "set_per_process_memory_fraction": noop("torch.cuda.set_per_process_memory_fraction(...) ignored"),
    }
    for name, fn in replacements.items():
        if hasattr(cuda, name):
            setattr(cuda, name, fn)
    for mod_name in ("torch.cuda.memory",):
        mod = sys.modules.get(mod_name)
        if mod is not None:
            for name, fn in replacements.items():
                if hasattr(mod, name):
                    setattr(mod, name, fn)


def _patch_amp(h: Harness, torch: Any) -> None:
    st = _emulation(h)
    try:
        from torch.amp import autocast_mode, grad_scaler
    except ImportError:
        return
    autocast = autocast_mode.autocast
    original_ac = autocast.__init__

    @functools.wraps(original_ac)
    def ac_init(self: Any, device_type: str = "cuda", dtype: Any = None, enabled: bool = True,
                cache_enabled: Any = None) -> None:
        if str(device_type).startswith("cuda") and enabled:
            dt = dtype if dtype is not None else torch.float16
            name = str(dt).replace("torch.", "")
            st.add(f"autocast('cuda', {name}) → off (float32)")
            if dt == torch.float16:
                st.fp16 = True
            enabled = False
        original_ac(self, device_type, dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    autocast.__init__ = ac_init

    Scaler = grad_scaler.GradScaler
    original_gs = Scaler.__init__

    @functools.wraps(original_gs)
    def gs_init(self: Any, device: str = "cuda", *args: Any, **kwargs: Any) -> None:
        if str(device).startswith("cuda") and kwargs.get("enabled", True) is not False:
            st.add("GradScaler('cuda') → off (no loss scaling)")
            st.fp16 = True
            kwargs["enabled"] = False
            if args:  # (init_scale, growth_factor, backoff_factor, growth_interval, enabled)
                args = args[:4]
        original_gs(self, device, *args, **kwargs)

    Scaler.__init__ = gs_init


# ---------------------------------------------------------------- one-rank world


def _free_port() -> int:
    import socket

    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])
    except OSError:
        return 29500


def loopback_up() -> str:
    """Bring the loopback interface up if it is down (a fresh network namespace has it down; gloo
    binds to it). Returns "" when it is up, else why it is not."""
    try:
        import fcntl
        import socket
        import struct
    except ImportError:
        return "no fcntl"
    SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            req = struct.pack("16sH", b"lo", 0)
            flags = struct.unpack("16sH", fcntl.ioctl(s, SIOCGIFFLAGS, req)[:18])[1]
            if flags & IFF_UP:
                return ""
            fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sH", b"lo", flags | IFF_UP))
            return ""
    except OSError as exc:
        return f"the loopback interface is down and cannot be brought up here ({exc.strerror or exc})"


def _setup_world_env(h: Harness, launcher: str, source: str) -> None:
    st = _emulation(h)
    st.loopback = loopback_up()
    env = {
        "RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "1", "GROUP_RANK": "0",
        "ROLE_RANK": "0", "ROLE_WORLD_SIZE": "1", "GROUP_WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1",
    }
    for key, value in env.items():
        os.environ[key] = value
    os.environ["MASTER_PORT"] = str(_free_port())
    # torch.distributed.launch (without --use-env) and the deepspeed launcher pass --local_rank=N.
    if launcher in ("torch.distributed.launch", "deepspeed"):
        m = re.search(r"""add_argument\(\s*['"](--local[-_]rank)['"]""", source)
        argv = list(h.config.argv or [h.config.script])
        if m and not any(a.startswith(m.group(1)) for a in argv[1:]):
            h.config.argv = [argv[0], f"{m.group(1)}=0", *argv[1:]]
    how = f"as `{launcher}` with one process" if launcher else "the script uses torch.distributed; no --launcher given"
    st.world = (f"probed as rank 0 of a world of size 1 ({how}): RANK=0, "
                 f"WORLD_SIZE=1, LOCAL_RANK=0, MASTER_ADDR=127.0.0.1, MASTER_PORT={os.environ['MASTER_PORT']}")


def _register_world_of_one() -> str | None:
    """A process group of one rank, in this process, with no network: every collective of a world of
    size 1 is the identity (a copy from input to output). Registered as the backend "trainlint_one"."""
    import torch.distributed as dist
    from torch.futures import Future

    try:
        from torch._C._distributed_c10d import _create_work_from_future  # type: ignore[attr-defined]
    except ImportError:
        return None

    def done(result: Any) -> Any:
        fut: Any = Future()
        fut.set_result(result)
        return _create_work_from_future(fut)

    def copy(out: Any, inp: Any) -> None:
        if out is not inp and out.data_ptr() != inp.data_ptr():
            out.copy_(inp.reshape(out.shape))

    class WorldOfOne(dist.ProcessGroup):  # type: ignore[misc]  # torch is Any to the type checker
        def __init__(self, rank: Any = 0, world_size: Any = 1) -> None:
            super().__init__(rank, world_size)

        def size(self) -> Any:
            return 1

        @property
        def group_name(self) -> Any:
            try:
                return dist.distributed_c10d._world.pg_names[self]  # noqa: SLF001
            except Exception:  # noqa: BLE001
                return "trainlint_one"

        def getBackendName(self) -> Any:
            return "trainlint_one"

        def allreduce(self, tensors: Any, opts: Any = None) -> Any:
            return done(tensors)

        allreduce_coalesced = allreduce

        def barrier(self, opts: Any = None) -> Any:
            return done(None)

        def broadcast(self, tensors: Any, opts: Any = None) -> Any:
            return done(tensors)

        def reduce(self, tensors: Any, opts: Any = None) -> Any:
            return done(tensors)

        def allgather(self, output_lists: Any, inputs: Any, opts: Any = None) -> Any:
            for outs, inp in zip(output_lists, inputs):
                for out in outs:
                    copy(out, inp)
            return done(output_lists)

        def allgather_coalesced(self, output_lists: Any, inputs: Any, opts: Any = None) -> Any:
            return self.allgather(output_lists, inputs, opts)

        def _allgather_base(self, output: Any, inp: Any, opts: Any = None) -> Any:
            copy(output, inp)
            return done(output)

        all_gather_single = _allgather_base

        def allgather_into_tensor_coalesced(self, outputs: Any, inputs: Any, opts: Any = None) -> Any:
            for out, inp in zip(outputs, inputs):
                copy(out, inp)
            return done(outputs)

        def gather(self, output_lists: Any, inputs: Any, opts: Any = None) -> Any:
            return self.allgather(output_lists, inputs, opts)

        def scatter(self, outputs: Any, input_lists: Any, opts: Any = None) -> Any:
            for out, ins in zip(outputs, input_lists):
                if ins:
                    copy(out, ins[0])
            return done(outputs)

        def reduce_scatter(self, outputs: Any, input_lists: Any, opts: Any = None) -> Any:
            return self.scatter(outputs, input_lists, opts)

        # in a world of one, reduce-scatter is the same copy as all-gather
        _reduce_scatter_base = reduce_scatter_single = _allgather_base
        reduce_scatter_tensor_coalesced = allgather_into_tensor_coalesced

        def alltoall_base(self, output: Any, inp: Any, output_split_sizes: Any, input_split_sizes: Any,
                          opts: Any = None) -> Any:
            copy(output, inp)
            return done(output)

        all_to_all_single = alltoall_base

        def alltoall(self, outputs: Any, inputs: Any, opts: Any = None) -> Any:
            for out, inp in zip(outputs, inputs):
                copy(out, inp)
            return done(outputs)

    def create(store: Any, rank: Any, world_size: Any, timeout: Any) -> Any:
        return WorldOfOne(rank, world_size)

    try:
        dist.Backend.register_backend("trainlint_one", create, devices=["cpu"])
    except Exception:  # noqa: BLE001  # registered already
        pass
    return "trainlint_one"


def _patch_distributed(h: Harness, torch: Any) -> None:
    st = _emulation(h)
    try:
        import torch.distributed as dist
        from torch.distributed import distributed_c10d as c10d
    except ImportError:
        return
    if not dist.is_available():
        return
    original = c10d.init_process_group
    import inspect

    sig = inspect.signature(original)

    @functools.wraps(original)
    def init_process_group(*args: Any, **kwargs: Any) -> Any:
        if h.is_busy():
            return original(*args, **kwargs)
        bound = sig.bind_partial(*args, **kwargs)
        a = bound.arguments
        asked_backend = a.get("backend")
        asked_world = a.get("world_size", -1)
        if asked_world in (-1, None):
            asked_world = os.environ.get("WORLD_SIZE", "?")
        why = st.loopback
        if why is None:
            why = st.loopback = loopback_up()
        backend: str | None = "gloo"
        if why:  # gloo binds to the loopback interface: without it, an in-process world of one
            backend = st.world_of_one or _register_world_of_one()
            if backend is None:
                _unsupported(h, "torch.distributed", f"init_process_group needs the loopback network for gloo: {why}")
            st.world_of_one = backend
        a["backend"] = backend
        a.pop("init_method", None)
        a["store"] = dist.HashStore()
        a["world_size"], a["rank"] = 1, 0
        if a.get("device_id") is not None:
            a["device_id"] = None
        a.pop("pg_options", None)
        if not st.world:
            st.world = "probed as rank 0 of a world of size 1"
        got = "gloo" if backend == "gloo" else "a world of one in this process (collectives are copies; no network)"
        st.world += (f"; init_process_group(backend={asked_backend!r}, world_size={asked_world}) → {got}, "
                      "rank 0 of 1, in-process store")
        return original(**a)

    c10d.init_process_group = init_process_group
    dist.init_process_group = init_process_group

    original_new_group = c10d.new_group

    @functools.wraps(original_new_group)
    def new_group(*args: Any, **kwargs: Any) -> Any:
        # Sub-groups of the one rank: on the default group's backend (no NCCL; gloo only with loopback).
        if "backend" in kwargs and kwargs["backend"] is not None:
            kwargs["backend"] = None
        elif len(args) >= 3 and args[2] is not None:
            args = (*args[:2], None, *args[3:])
        return original_new_group(*args, **kwargs)

    c10d.new_group = new_group
    dist.new_group = new_group

    # mp.spawn: rank 0 only, in this process (the probe's hooks see it and can stop it).
    try:
        import torch.multiprocessing as mp
        from torch.multiprocessing import spawn as spawn_mod
    except ImportError:
        mp = spawn_mod = None
    if mp is not None:
        def spawn(fn: Any, args: tuple[Any, ...] = (), nprocs: int = 1, join: bool = True, daemon: bool = False,
                  start_method: str = "spawn") -> None:
            st.world = (st.world or "probed as rank 0 of a world of size 1") + (
                f"; mp.spawn(nprocs={nprocs}) → one call of {getattr(fn, '__name__', 'fn')}(0, ...) in the probe process")
            fn(0, *args)
            return None

        def start_processes(fn: Any, args: tuple[Any, ...] = (), nprocs: int = 1, join: bool = True,
                            daemon: bool = False,
                            start_method: str = "spawn") -> None:
            return spawn(fn, args, nprocs, join, daemon, start_method)

        for target in (mp, spawn_mod):
            target.spawn = spawn
            target.start_processes = start_processes

    # DDP over a CPU module: device_ids/output_device only apply to CUDA modules.
    try:
        from torch.nn.parallel import distributed as ddp_mod
    except ImportError:
        return
    DDP = ddp_mod.DistributedDataParallel
    original_ddp = DDP.__init__

    @functools.wraps(original_ddp)
    def ddp_init(self: Any, module: Any, *args: Any, **kwargs: Any) -> None:
        dropped = []
        if args:  # device_ids, output_device positional
            dropped.append("device_ids")
            args = ()
        for key in ("device_ids", "output_device"):
            if kwargs.get(key) is not None:
                dropped.append(key)
                kwargs[key] = None
        if dropped:
            st.add(f"DistributedDataParallel({', '.join(sorted(set(dropped)))}=...) → CPU module")
        original_ddp(self, module, *args, **kwargs)

    DDP.__init__ = ddp_init

    try:
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    except ImportError:
        return
    original_fsdp = FSDP.__init__

    @functools.wraps(original_fsdp)
    def fsdp_init(self: Any, module: Any, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("device_id") is not None and _device_type(kwargs["device_id"], torch) == "cuda":
            st.add("FullyShardedDataParallel(device_id=cuda) → CPU")
            kwargs["device_id"] = torch.device("cpu")
        original_fsdp(self, module, *args, **kwargs)

    FSDP.__init__ = fsdp_init


def _unsupported(h: Harness, stack: str, reason: str) -> None:
    """A stack that cannot run on this CPU: a status, never a finding against the script."""
    h.incomplete(stack, reason)
    h.stop("unsupported", f"not probed: {reason}", h.user_line())


# ---------------------------------------------------------------- accelerate, deepspeed


def _on_accelerate(h: Harness, mod: Any) -> None:
    st = _emulation(h)
    Accelerator = getattr(mod, "Accelerator", None)
    if Accelerator is None:
        return
    original = Accelerator.__init__

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        asked = kwargs.get("mixed_precision") or os.environ.get("ACCELERATE_MIXED_PRECISION")
        if str(asked) == "fp16" and not _real_cuda():
            st.add("Accelerator(mixed_precision='fp16') → 'no' (float32)")
            st.fp16 = True
            kwargs["mixed_precision"] = "no"
            os.environ.pop("ACCELERATE_MIXED_PRECISION", None)
        original(self, *args, **kwargs)

    Accelerator.__init__ = __init__


def _cpu_device_map(device_map: Any) -> Any:
    """``device_map`` with every GPU placement on the CPU (None: nothing to change)."""
    if isinstance(device_map, dict):
        mapped = {k: _cpu_device_map(v) or v for k, v in device_map.items()}
        return mapped if mapped != device_map else None
    text = str(device_map)
    if device_map is None or text in ("cpu", "meta", "disk"):
        return None
    return "cpu"  # "cuda", "cuda:0", 0, torch.device("cuda"), "auto"/"balanced"/"sequential" over GPUs


def _on_modeling_utils(h: Harness, mod: Any) -> None:
    st = _emulation(h)
    PreTrainedModel = getattr(mod, "PreTrainedModel", None)
    if PreTrainedModel is None or _real_cuda():
        return
    original = PreTrainedModel.from_pretrained.__func__

    @functools.wraps(original)
    def from_pretrained(cls: Any, *args: Any, **kwargs: Any) -> Any:
        mapped = _cpu_device_map(kwargs.get("device_map"))
        if mapped is not None:
            st.add(f"from_pretrained(device_map={kwargs['device_map']!r}) → 'cpu'")
            kwargs["device_map"] = mapped
        return original(cls, *args, **kwargs)

    PreTrainedModel.from_pretrained = classmethod(from_pretrained)


def _real_cuda() -> bool:
    torch = sys.modules.get("torch")
    try:
        return bool(torch is not None and torch._C._cuda_getDeviceCount() > 0)  # noqa: SLF001
    except Exception:  # noqa: BLE001
        return False


def _on_deepspeed(h: Harness, ds: Any) -> None:
    original = getattr(ds, "initialize", None)
    if original is None:
        return

    @functools.wraps(original)
    def initialize(*args: Any, **kwargs: Any) -> Any:
        if _real_cuda():
            return original(*args, **kwargs)
        _unsupported(h, "DeepSpeed", "deepspeed.initialize() builds a DeepSpeed engine, which needs a GPU "
                     "(CUDA kernels, NCCL); the probe runs on CPU. Probe the same model with a plain "
                     "optimizer loop or the Trainer without --deepspeed")

    ds.initialize = initialize


# ---------------------------------------------------------------- script errors


_CUDA_ERRORS = ("Torch not compiled with CUDA enabled", "Cannot access accelerator device", "Found no NVIDIA driver",
                "No CUDA GPUs are available", "NCCL", "CUDA driver")


def _cuda_error(h: Harness, exc: BaseException, line: int | None) -> None:
    """A CUDA feature the emulation does not provide: a status (unsupported), not a finding."""
    text = f"{type(exc).__name__}: {exc}"
    if any(s in text for s in _CUDA_ERRORS) and not _real_cuda():
        first = text.strip().splitlines()[0][:240]
        _unsupported(h, "CUDA emulation", f"the script uses a CUDA feature the CPU emulation does not provide, "
                     f"at {h.where(line)}: {first}")
