"""How the script runs as processes, where a launcher in the file decides it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from trainlint.facts.expr import argument, dotted, literal

if TYPE_CHECKING:
    from trainlint.facts.core import Facts


#: Lightning strategies that start their processes from the running one (each gets the objects of the
#: parent, pickled or forked): only the hooks the trainer calls (`setup()`, the `*_dataloader()` methods) run
#: again in every process
_SPAWNING = ("spawn", "fork", "notebook")


def lightning_processes(facts: Facts, trainer_only: bool = False) -> str | None:
    """How a Lightning `Trainer(...)` (or `Fabric(...)`) of the file runs as several processes: `"script"`
    when each process runs the script again (`strategy="ddp"`, `"fsdp"`, `"deepspeed"`, a strategy object,
    or several devices or nodes as literals with Lightning 2's automatic strategy: `devices=4`,
    `devices=-1`, `devices=[0, 1]`, `num_nodes=2`); `"hooks"` when the processes are spawned or forked
    (`strategy="ddp_spawn"`; PyTorch Lightning 1.x's default for `gpus=2`), which run again only the
    hooks the trainer calls; None for one process (`strategy="dp"`, a device count that is not a literal:
    `devices=args.gpus` may be 1); `"unknown"` for a strategy the source does not show (`strategy=args.strategy`).
    ``trainer_only``: a `Trainer`'s alone (it gives the training loader a
    `DistributedSampler` that shuffles; Fabric keeps the loader's order)."""
    memo: dict[bool, str | None] = facts.__dict__.setdefault("_lightning_processes", {})
    if trainer_only not in memo:
        memo[trainer_only] = _lightning_processes(facts, (".Trainer",) if trainer_only else (".Trainer", ".Fabric"))
    return memo[trainer_only]


def _lightning_processes(facts: Facts, launchers: tuple[str, ...]) -> str | None:
    found = None
    unknown = False
    for call in facts.index.get("Call", ()):
        qn = facts.callee(call) or ""
        if not (qn.startswith(("lightning.", "pytorch_lightning.")) and qn.endswith(launchers)):
            continue
        strategy = argument(call, "strategy")
        if isinstance(strategy, cst.Name):  # `mp_strategy = ModelParallelStrategy(...)`, then `strategy=mp_strategy`
            b = facts.lookup(strategy.value, call)
            if b is not None and isinstance(b.value, cst.Call):
                strategy = b.value
        if strategy is None and qn.startswith("pytorch_lightning."):  # PyTorch Lightning 1.x: `accelerator="ddp"`
            strategy = argument(call, "distributed_backend") or argument(call, "accelerator")
            if not (isinstance(literal(strategy), str) and literal(strategy).startswith("ddp")):
                strategy = None
        name = literal(strategy) if strategy is not None else None
        if isinstance(name, str):
            if name == "dp":
                continue  # DataParallel: one process
            if name not in ("auto", "single_device", "single_tpu", "single_xla"):
                if not any(w in name for w in _SPAWNING):
                    return "script"
                found = "hooks"
                continue
        elif isinstance(strategy, cst.Call):  # `strategy=DDPStrategy(...)`; not `SingleDeviceStrategy(...)`
            made = (dotted(strategy.func) or "").rsplit(".", 1)[-1]
            if made.endswith("Strategy") and not made.startswith(("SingleDevice", "DataParallel")):
                start = literal(argument(strategy, "start_method"))
                spawned = any(w in start for w in _SPAWNING) if isinstance(start, str) else "Spawn" in made
                if not spawned:
                    return "script"
                found = "hooks"
                continue
        elif strategy is not None and not isinstance(name, str) and not isinstance(strategy, cst.Call):
            unknown = True
        for kw in ("devices", "gpus", "num_nodes", "num_processes", "tpu_cores"):
            arg = argument(call, kw)
            v = literal(arg) if arg is not None else None
            if (isinstance(v, int) and not isinstance(v, bool) and (v > 1 or v == -1)) or v == "-1" or (
                    isinstance(v, (list, tuple)) and len(v) > 1):
                if qn.startswith("pytorch_lightning.") or kw == "tpu_cores":
                    found = "hooks"  # the version decides: PyTorch Lightning 1.x spawns
                    break
                return "script"
    return found or ("unknown" if unknown else None)
