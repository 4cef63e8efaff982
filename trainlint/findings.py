"""The one type every check reports: a :class:`Finding`, from source to probe to output."""

from __future__ import annotations

import dataclasses
import enum
from typing import Any


class Severity(str, enum.Enum):
    """How sure trainlint is that the run will fail or train wrong. The members are in THE severity
    order, most severe first (:attr:`rank`); :func:`fails_run` judges ``fail-on`` with it."""

    ERROR = "error"  # the run will crash, or certainly trains wrong
    WARNING = "warning"  # likely wrong
    INFO = "info"  # the source cannot tell; `--probe` decides

    @property
    def rank(self) -> int:
        """0 for the most severe; a higher rank is less severe."""
        return _SEVERITY_RANK[self]


_SEVERITY_RANK = {s: i for i, s in enumerate(Severity)}


class Stage(int, enum.Enum):
    """The stage of the training pipeline a rule belongs to: the hundreds digit of its code. The one
    list of stages: each has its label and its package (``trainlint/stages/sN_<name>/``, whose
    ``rules.py`` the registry imports)."""

    META = 0
    DATA = 1
    BATCHING = 2
    MODEL = 3
    LOSS = 4
    OPTIMIZER = 5
    EVALUATION = 6
    LOOP = 7
    COMPAT = 8

    @property
    def label(self) -> str:
        return _STAGES[self][0]

    @property
    def package(self) -> str:
        """The stage's package: ``trainlint.stages.s1_data``."""
        return f"trainlint.stages.s{self.value}_{_STAGES[self][1]}"


#: each stage's label and the name of its package (after ``sN_``)
_STAGES = {
    Stage.META: ("meta", "meta"),
    Stage.DATA: ("data", "data"),
    Stage.BATCHING: ("batching", "batching"),
    Stage.MODEL: ("model", "model"),
    Stage.LOSS: ("loss", "loss"),
    Stage.OPTIMIZER: ("optimizer", "optimizer"),
    Stage.EVALUATION: ("evaluation", "evaluation"),
    Stage.LOOP: ("training loop", "loop"),
    Stage.COMPAT: ("api compatibility", "compat"),
}


class Applicability(str, enum.Enum):
    SAFE = "safe"  # keeps behaviour: applied by --fix
    UNSAFE = "unsafe"  # changes behaviour (e.g. a learning rate): needs --unsafe-fixes


@dataclasses.dataclass(frozen=True, order=True)
class Position:
    """1-based row and column (columns count characters)."""

    row: int
    column: int


@dataclasses.dataclass(frozen=True)
class Edit:
    """Replace the text between ``start`` and ``end`` (end exclusive) with ``content``."""

    start: Position
    end: Position
    content: str

    def to_json(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "location": dataclasses.asdict(self.start),
            "end_location": dataclasses.asdict(self.end),
        }


@dataclasses.dataclass(frozen=True)
class Fix:
    applicability: Applicability
    message: str
    edits: tuple[Edit, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "applicability": self.applicability.value,
            "message": self.message,
            "edits": [e.to_json() for e in self.edits],
        }


class ProbeStatus(str, enum.Enum):
    CONFIRMED = "confirmed"  # the run showed the failure
    NOT_REPRODUCED = "not reproduced"  # the run got past the point where it would fail
    NOT_REACHED = "not reached"  # the run stopped before the point could be checked
    NOT_CHECKED = "not checked"  # the run reached training, but the probe has no check for this code


@dataclasses.dataclass(frozen=True)
class ProbeOutcome:
    status: ProbeStatus
    evidence: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status.value, "evidence": self.evidence}


@dataclasses.dataclass(frozen=True)
class Finding:
    code: str
    name: str
    message: str
    severity: Severity
    filename: str
    start: Position
    end: Position
    fix: Fix | None = None
    hint: str = ""  # the concrete fix, in words (shown by --output-format full)
    probe: ProbeOutcome | None = None
    cell: int | None = None  # notebook cell (1-based) when linting .ipynb

    @property
    def url(self) -> str:
        from trainlint.docs import rule_url

        return rule_url(self.code)

    def sort_key(self) -> tuple:
        return (self.filename, self.cell or 0, self.start, self.code, self.message)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "code": self.code,
            "name": self.name,
            "message": self.message,
            "severity": self.severity.value,
            "filename": self.filename,
            "location": dataclasses.asdict(self.start),
            "end_location": dataclasses.asdict(self.end),
            "url": self.url,
            "fix": self.fix.to_json() if self.fix else None,
            "hint": self.hint,
        }
        if self.cell is not None:
            data["cell"] = self.cell
        if self.probe is not None:
            data["probe"] = self.probe.to_json()
        return data


def fails_run(f: Finding, fail_on: Severity) -> bool:
    """Whether ``f`` makes the run exit 1 under ``fail_on`` (the one place ``fail-on`` is judged: the
    exit code, the summary's "below fail-on" count, the language server's hints): by its severity,
    except after a probe, where a finding the run confirmed always fails and one it did not reproduce
    never does by itself."""
    if f.probe is not None:
        if f.probe.status is ProbeStatus.CONFIRMED:
            return True
        if f.probe.status is ProbeStatus.NOT_REPRODUCED:
            return False
    return f.severity.rank <= fail_on.rank
