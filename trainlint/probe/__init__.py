"""Runtime probes: run the script in a sandboxed child process up to the training call, take one
real batch, and confirm or refute each static finding under the same code.

Parent side (this package, may import anything of trainlint) and child side (``child*.py`` and the
``stages/*/probe*.py`` modules: standard library + the frameworks only, because they run inside the
user's own interpreter given by ``--python``).

Contract used by the CLI, the language server never calls it:

    report = run_probe(script, static_findings, ProbeOptions(...))
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from trainlint.findings import Finding


@dataclasses.dataclass(frozen=True)
class ProbeOptions:
    python: str | None = None  # interpreter of the training environment; default: sys.executable
    timeout: float = 600.0  # hard limit for the whole child process group, in seconds
    rows: int = 256  # datasets from load_dataset are cut to this many rows before the script's .map()
    tiny_model: bool = False  # replace from_pretrained models by small random ones of the same config
    overfit: int = 0  # --overfit N: N steps on the same batch (0: off)
    verbose: bool = False
    script_args: tuple[str, ...] = ()
    memory_mb: int = 0  # --probe-memory: address-space limit of each process of the script (0: none)
    max_processes: int = 512  # --probe-processes: processes the script may run at once (in a sandbox only)
    disk_mb: int = 1024  # size of the probe's writable temporary directory (a tmpfs, in a sandbox)
    #: how the script is launched for real (torchrun, accelerate, deepspeed, ...; see docs/gpu-probes.md):
    #: a distributed launcher makes the probe run it as rank 0 of a world of size 1. "": guessed from the source
    launcher: str = ""


@dataclasses.dataclass
class ProbeReport:
    #: Every static finding of the script, with ``.probe`` set (confirmed / not reproduced / not
    #: reached), followed by the findings only the run could see (status confirmed).
    findings: list[Finding]
    #: Whether the child ran with network off and the project read-only.
    isolated: bool = False
    #: One-line notes for the user: isolation, framework versions, timings, the stop reason.
    notes: list[str] = dataclasses.field(default_factory=list)
    #: Shown with --verbose: e.g. one decoded training example.
    details: list[str] = dataclasses.field(default_factory=list)
    #: How the run ended, as the parent saw it: "reached-training" (the probe ran its checks and the
    #: child then exited on its own), "script-error" (the script raised before training), "exited"
    #: (sys.exit before training), "finished" (the script ended without a training call),
    #: "asset-missing" (a model or dataset is not in the local cache), "resource-limit" (memory or
    #: process limit of the probe hit), "timeout", "did-not-stop" (the child reported its end but kept
    #: running), "crashed" (the child died without a result, or with an error status after it).
    outcome: str = ""
    #: Checks that could not complete, one line each ("check: reason"): never "All checks passed".
    incomplete: list[str] = dataclasses.field(default_factory=list)

    @property
    def complete(self) -> bool:
        """The probe reached training and every check ran: only then may the run read as all clear."""
        return self.outcome == "reached-training" and not self.incomplete


def run_probe(script: Path, static_findings: list[Finding], options: ProbeOptions) -> ProbeReport:
    from trainlint.probe.parent.runner import run

    return run(script, static_findings, options)
