"""The probe's protocol between trainlint's process (the parent) and the user's interpreter (the child),
typed: the configuration the parent sends once, and the events the child sends back, one JSON object
per line (see PROTOCOL.md). Both sides import this module, so it imports only the standard library.

The child says which version of the protocol it speaks in its first event (:class:`Hello`); the
parent does not use the events of a child of another version (a trainlint of another version
imported by ``--python``'s interpreter).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, ClassVar, Union

#: Raised whenever an event or the configuration changes meaning. A child that sends no version
#: speaks version 1 (before the protocol carried one).
PROTOCOL_VERSION = 2


@dataclasses.dataclass
class Config:
    """What the parent tells the child, once, on the config pipe."""

    script: str  # absolute path of the user's script
    argv: list[str]  # sys.argv the script sees
    workdir: str  # the only writable directory of the run
    cwd: str = ""
    launcher: str = ""  # torchrun, accelerate, ... ("": guessed from the source)
    rows: int = 256  # datasets from load_dataset are cut to this many rows
    tiny_model: bool = False
    overfit: int = 0  # --overfit N (0: off)
    verbose: bool = False
    timeout: float = 0.0
    deadline: float = 0.0  # the parent's time.monotonic() at which it kills the run
    plugins: list[str] = dataclasses.field(default_factory=list)  # child-side modules with install(h)
    static_codes: list[str] = dataclasses.field(default_factory=list)  # codes of the static findings
    memory_mb: int = 0
    max_processes: int = 0
    key: str = ""  # every event carries it; the child forgets it before the script runs
    protocol: int = PROTOCOL_VERSION

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str | bytes) -> Config:
        raw = json.loads(text)
        if not isinstance(raw, dict):
            raise ValueError("the probe's configuration is not a JSON object")
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in names})


# ---------------------------------------------------------------- events (child -> parent)


@dataclasses.dataclass(frozen=True)
class Hello:
    """The child started."""

    TYPE: ClassVar[str] = "hello"
    python: str
    implementation: str = ""
    protocol: int = 1


@dataclasses.dataclass(frozen=True)
class Versions:
    """Framework versions, sent when a framework is imported."""

    TYPE: ClassVar[str] = "versions"
    versions: dict[str, str]


@dataclasses.dataclass(frozen=True)
class Phase:
    """The check running now: the last one names where a timeout hit."""

    TYPE: ClassVar[str] = "phase"
    name: str


@dataclasses.dataclass(frozen=True)
class Finding:
    """The run showed the failure of ``code`` (and of ``confirms``: the same observation)."""

    TYPE: ClassVar[str] = "finding"
    code: str
    message: str
    evidence: str = ""
    line: int | None = None
    confirms: tuple[str, ...] = ()
    severity: str | None = None


@dataclasses.dataclass(frozen=True)
class Checked:
    """The run got past the point where these codes would fail."""

    TYPE: ClassVar[str] = "checked"
    codes: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Incomplete:
    """A check could not complete: never an all clear for it or its codes."""

    TYPE: ClassVar[str] = "incomplete"
    check: str
    reason: str
    codes: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Note:
    TYPE: ClassVar[str] = "note"
    text: str


@dataclasses.dataclass(frozen=True)
class Detail:
    """Shown with --verbose."""

    TYPE: ClassVar[str] = "detail"
    text: str


@dataclasses.dataclass(frozen=True)
class End:
    """How the run ended, as the child saw it (the parent believes it only if the child then exits 0)."""

    TYPE: ClassVar[str] = "end"
    outcome: str
    text: str = ""
    line: int | None = None
    elapsed: float = 0.0


@dataclasses.dataclass(frozen=True)
class Sandbox:
    """What the sandbox's init could do: the first line of the channel, without the key (the init
    process writes it before the child starts; it cannot import this module, see sandbox_init.py)."""

    TYPE: ClassVar[str] = "sandbox"
    kind: str
    pid_ns: bool = True
    writable: tuple[str, ...] = ()
    covered: tuple[str, ...] = ()
    bound: tuple[str, ...] = ()


# Union, not `|`: evaluated at run time, also in the user's interpreter
Event = Union[Hello, Versions, Phase, Finding, Checked, Incomplete, Note, Detail, End, Sandbox]  # noqa: UP007
EVENT_TYPES: dict[str, type[Event]] = {
    cls.TYPE: cls for cls in (Hello, Versions, Phase, Finding, Checked, Incomplete, Note, Detail, End, Sandbox)
}


def encode(event: Event, key: str = "") -> str:
    """One line (without the newline) for the channel."""
    data: dict[str, Any] = {"type": event.TYPE}
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        data[f.name] = list(value) if isinstance(value, tuple) else value
    if key:
        data["k"] = key
    return json.dumps(data, default=str)


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _codes(value: Any) -> tuple[str, ...]:
    return tuple(str(c) for c in value) if isinstance(value, (list, tuple)) else ()


def _line(value: Any) -> int | None:
    if value is None or isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _number(value: Any, default: float = 0.0) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def decode(data: dict[str, Any]) -> Event | None:
    """The event of one decoded JSON line, or None for an unknown type. Lenient: a field of the wrong
    type becomes its default (the line came from the user's interpreter)."""
    kind = data.get("type")
    if kind == "hello":
        version = data.get("protocol", 1)
        return Hello(_text(data.get("python", "?")), _text(data.get("implementation")),
                     version if isinstance(version, int) and not isinstance(version, bool) else 0)
    if kind == "versions":
        versions = data.get("versions")
        if not isinstance(versions, dict):
            return Versions({})
        return Versions({_text(k): _text(v) for k, v in versions.items()})
    if kind == "phase":
        return Phase(_text(data.get("name")))
    if kind == "finding":
        severity = data.get("severity")
        return Finding(_text(data.get("code")), _text(data.get("message")), _text(data.get("evidence")),
                       _line(data.get("line")), _codes(data.get("confirms")),
                       None if severity is None else _text(severity))
    if kind == "checked":
        return Checked(_codes(data.get("codes")))
    if kind == "incomplete":
        return Incomplete(_text(data.get("check")), _text(data.get("reason")), _codes(data.get("codes")))
    if kind == "note":
        return Note(_text(data.get("text")))
    if kind == "detail":
        return Detail(_text(data.get("text")))
    if kind == "end":
        return End(_text(data.get("outcome")), _text(data.get("text")), _line(data.get("line")),
                   _number(data.get("elapsed")))
    if kind == "sandbox":
        return Sandbox(_text(data.get("kind")), bool(data.get("pid_ns", True)), _codes(data.get("writable")),
                       _codes(data.get("covered")), _codes(data.get("bound")))
    return None
