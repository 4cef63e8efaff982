"""Output formats: small, separate writers over one finding type.

Each writer is ``write(findings, stream, run)`` where ``run`` (:class:`Run`) carries what a format
may need besides the findings (the rules in play, probe notes, a source reader for excerpts).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TextIO

from trainlint.findings import Finding, Severity


@dataclasses.dataclass
class Run:
    files_checked: int = 0
    #: files that name no ML framework: not training scripts, not analysed (``FileResult.training``)
    not_analysed: int = 0
    probe_notes: list[str] = dataclasses.field(default_factory=list)
    probe_details: list[str] = dataclasses.field(default_factory=list)
    probed: bool = False
    #: With --probe: why the run may not read as all clear (the probe did not reach training, or a
    #: check could not complete); empty when every check ran.
    probe_incomplete: str = ""
    show_fixes: bool = False
    #: --unsafe-fixes: unsafe fixes count as available ([*])
    unsafe_fixes: bool = False
    #: findings fixed by --fix in this run
    fixed: int = 0
    verbose: bool = False
    #: the settings' `fail-on`: findings below it do not change the exit code (the summary says so)
    fail_on: Severity = Severity.WARNING
    #: filename -> source text (for excerpts); filled lazily by the writers that need it
    sources: dict[str, str] = dataclasses.field(default_factory=dict)

    def source_lines(self, filename: str) -> list[str]:
        text = self.sources.get(filename)
        if text is None:
            try:
                with open(filename, encoding="utf-8-sig", errors="replace", newline="") as f:
                    text = f.read()
            except OSError:
                text = ""
            self.sources[filename] = text
        return text.splitlines()


Writer = Callable[[list[Finding], TextIO, Run], None]


def get_writer(name: str) -> Writer:
    from importlib import import_module

    module = import_module(f"trainlint.formats.{FORMATS[name]}")
    return module.write


#: format name -> module
FORMATS = {
    "concise": "concise",
    "full": "full",
    "json": "json_",
    "github": "github",
    "sarif": "sarif",
    "rdjson": "rdjson",
    "gitlab": "gitlab",
    "junit": "junit",
}
