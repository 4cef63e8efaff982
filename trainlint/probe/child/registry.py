"""The one registry of probe checks (child side, standard library only).

A probe check lives beside the static rules of the stage whose code it confirms, in
``stages/s<N>_<stage>/probe.py`` (PyTorch) or ``probe_keras.py`` (Keras), subscribes to an observation
point (:mod:`trainlint.probe.child.points`) and declares, in the decorator and nowhere else, every code
it can report::

    from trainlint.probe.child.points import TRAINER_BATCH, TrainerState
    from trainlint.probe.child.registry import check

    @check(TRAINER_BATCH, "TL201", "TL202")
    def check_train_batch(h: Harness, st: TrainerState) -> None:
        ...

A check that confirms several codes lists them all (``@check(TRAINER_EVAL_BATCH, "TL601", "TL602",
...)``); one that can only say a code could not be confirmed here (an ``incomplete`` event) names it
in ``cannot_confirm``. The framework plugins announce the points (:func:`announce`, :func:`classify`);
the checks of a point run in pipeline order: the stage digit of their module, or ``order`` when a check
needs what a later stage computes (the label range of the Keras data stage needs the model's output
width: ``order=350`` puts it after the model stage's forward pass at 300). There is no step list to
edit: a new check is found by importing its stage's probe module.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from trainlint.probe.child.harness import Harness, ProbeStop, error_at
from trainlint.probe.child.points import Classification, Pipeline, Point

S = TypeVar("S")
F = TypeVar("F", bound=Callable[..., Any])
#: The module of each framework's checks inside a stage package.
MODULE_OF = {"torch": "probe", "keras": "probe_keras"}

_STAGE_RE = re.compile(r"\.s(\d)_[a-z0-9_]+\.")
_CODE_RE = re.compile(r"TL\d{3}")


@dataclasses.dataclass(frozen=True)
class Check:
    fn: Callable[[Harness, Any], Any]
    point: Point[Any]
    codes: tuple[str, ...]  # what it can confirm (a finding) or clear (checked)
    cannot_confirm: tuple[str, ...]  # what it can only report as not confirmed here (incomplete)
    stage: int
    order: int  # position among the checks of its point (stage * 100 unless given)
    phase: str  # the `phase` event sent before it runs at a pipeline point

    @property
    def name(self) -> str:
        return f"{self.fn.__module__.rsplit('.', 2)[-2]}.{self.fn.__name__}"


_CHECKS: list[Check] = []


def _stage_of(module: str) -> int:
    m = _STAGE_RE.search(module + ".")
    return int(m.group(1)) if m else 9


def _valid(codes: Iterable[str]) -> tuple[str, ...]:
    out = tuple(codes)
    for c in out:
        if not _CODE_RE.fullmatch(c):
            raise ValueError(f"not a rule code: {c!r}")
    return out


def check(point: Point[S], *codes: str, order: int | None = None, phase: str | None = None,
          cannot_confirm: Iterable[str] = ()) -> Callable[[F], F]:
    """Subscribe ``fn(h, state)`` to ``point``; it reports ``codes`` (and ``cannot_confirm`` as
    incomplete). At a classifier point ``fn`` returns a :class:`Classification` or None."""
    if not isinstance(point, Point):
        raise TypeError(f"not an observation point: {point!r}")
    confirmed = _valid(codes)
    open_only = _valid(cannot_confirm)

    def register(fn: F) -> F:
        stage = _stage_of(fn.__module__)
        entry = Check(fn=fn, point=point, codes=confirmed, cannot_confirm=open_only, stage=stage,
                      order=stage * 100 if order is None else order,
                      phase=phase or fn.__module__.rsplit(".", 2)[-2].split("_", 1)[-1])
        # Re-importing a module (tests) replaces its checks instead of running them twice.
        _CHECKS[:] = [c for c in _CHECKS if (c.fn.__module__, c.fn.__name__) != (fn.__module__, fn.__name__)]
        _CHECKS.append(entry)
        return fn

    return register


def stage_modules(framework: str) -> list[str]:
    """The importable names of every stage's probe module for ``framework`` ("any": both), in stage
    order."""
    import trainlint.stages as stages

    base = os.path.dirname(stages.__file__)
    wanted = list(MODULE_OF.values()) if framework == "any" else [MODULE_OF[framework]]
    names = []
    for entry in sorted(os.listdir(base)):
        if not re.fullmatch(r"s\d_[a-z0-9_]+", entry):
            continue
        for module in wanted:
            if os.path.isfile(os.path.join(base, entry, module + ".py")):
                names.append(f"trainlint.stages.{entry}.{module}")
    return names


def load(framework: str) -> None:
    """Import every stage probe module of ``framework`` (their decorators fill the registry)."""
    for name in stage_modules(framework):
        importlib.import_module(name)


def checks_at(point: Point[Any]) -> list[Check]:
    """The checks subscribed to ``point``, in pipeline order."""
    load(point.framework)
    chosen = [c for c in _CHECKS if c.point is point]
    return sorted(chosen, key=lambda c: (c.order, c.stage))


def announce(h: Harness, point: Point[S], state: S) -> None:
    """The script reached ``point``: run its checks on ``state`` (see the points' kinds in points.py)."""
    for entry in checks_at(point):
        if point.pipeline:
            if isinstance(state, Pipeline) and not point.independent:
                if state.stop or (state.stop_at is not None and entry.order >= state.stop_at):
                    continue
            h.phase(entry.phase)
        try:
            entry.fn(h, state)
        except ProbeStop:
            raise
        except Exception as exc:  # noqa: BLE001  # a bug of trainlint's check: say so, never "all clear"
            if h.strict:  # in-process tests: a bug must fail the test
                raise
            if point.pipeline:
                h.incomplete(entry.name, error_at(exc), entry.codes)
            else:
                h.note(f"probe check '{entry.name}' could not run: {error_at(exc)}")


def classify(h: Harness, point: Point[S], state: S) -> Classification | None:
    """The first classification the checks of the classifier ``point`` give ``state``, if any."""
    for entry in checks_at(point):
        try:
            got = entry.fn(h, state)
        except ProbeStop:
            raise
        except Exception:  # noqa: BLE001  # a broken classifier must not hide the script's error
            if h.strict:
                raise
            continue
        if got is not None:
            return Classification(*got)
    return None


def all_checks() -> list[Check]:
    """Every check of every stage, both frameworks."""
    load("any")
    return list(_CHECKS)


def declared_codes(framework: str | None = None) -> set[str]:
    """Every code the probe can confirm (or clear), from the checks' declarations: with ``framework``,
    only the checks of that framework's points (and the framework-neutral ones)."""
    return {code for c in all_checks() if framework is None or c.point.framework in (framework, "any")
            for code in c.codes}
