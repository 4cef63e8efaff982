"""The registry of probe checks (child side, standard library only).

A probe check lives beside the static rules of its stage, in ``stages/s<N>_<stage>/probe.py`` (PyTorch)
or ``probe_keras.py`` (Keras), and declares what it confirms with a decorator::

    from trainlint.probe.child.checks import probe_check

    @probe_check("TL201", "TL202", framework="torch", path="trainer", phase="batching")
    def check_train_batch(h, st):
        ...

The framework plugin (``hooks_torch.py`` for ``Trainer.train``, ``child_keras.py`` for ``Model.fit``)
calls :func:`run` with its pipeline state: every registered check of that framework and path runs in
pipeline order — the stage digit of its module, then ``order`` within the pipeline when a check needs
what a later stage computes (e.g. the label range of the Keras data stage needs the model's output
width: ``order=350`` puts it after the model stage's forward pass at 300). There is no step list to
edit: a new check is found by importing its stage's probe module.

Codes reported outside a check (the hand-written loop observer, the exception mappers that turn a
script's own error into a finding) are declared with :func:`emits`, so that the set of codes the probe
can confirm is known without running it (``declared_codes``).
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import re
from typing import Any, Callable, Iterable

from trainlint.probe.child.harness import Harness, error_at

FRAMEWORKS = ("torch", "keras")
#: The module of each framework's checks inside a stage package.
MODULE_OF = {"torch": "probe", "keras": "probe_keras"}
#: The plugin of each framework (its hooks report a few codes themselves, declared with `emits`).
PLUGIN_OF = {"torch": "trainlint.probe.child.frameworks.hf_trainer", "keras": "trainlint.probe.child.frameworks.keras_fit"}

_STAGE_RE = re.compile(r"\.s(\d)_[a-z0-9_]+\.")


@dataclasses.dataclass(frozen=True)
class ProbeCheck:
    fn: Callable[..., Any]
    codes: tuple[str, ...]
    framework: str
    path: str  # "trainer" / "fit" / "*" ...: which entry point of the framework runs it
    stage: int
    order: int  # position in the pipeline (stage * 100 unless given)
    phase: str  # the `phase` event sent before it runs (names where a timeout hit)
    after_stop: bool  # runs even when an earlier check stopped the pipeline (e.g. evaluation)
    enabled: Callable[[Any], bool] | None  # h -> run it? (e.g. only with --overfit)

    @property
    def name(self) -> str:
        return f"{self.fn.__module__.rsplit('.', 2)[-2]}.{self.fn.__name__}"


_CHECKS: list[ProbeCheck] = []
#: Codes reported outside registered checks: (framework, where) -> codes.
_EMITTERS: dict[tuple[str, str], tuple[str, ...]] = {}


def _stage_of(module: str) -> int:
    m = _STAGE_RE.search(module + ".")
    return int(m.group(1)) if m else 9


def _valid(codes: Iterable[str]) -> tuple[str, ...]:
    out = tuple(codes)
    for c in out:
        if not re.fullmatch(r"TL\d{3}", c):
            raise ValueError(f"not a rule code: {c!r}")
    return out


def probe_check(
    *codes: str,
    framework: str,
    path: str = "*",
    order: int | None = None,
    phase: str | None = None,
    after_stop: bool = False,
    enabled: Callable[[Any], bool] | None = None,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``fn(h, st)`` as a probe check confirming (or clearing) ``codes``."""
    if framework not in FRAMEWORKS:
        raise ValueError(f"unknown framework {framework!r}")
    codes = _valid(codes)

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        stage = _stage_of(fn.__module__)
        check = ProbeCheck(
            fn=fn,
            codes=codes,
            framework=framework,
            path=path,
            stage=stage,
            order=stage * 100 if order is None else order,
            phase=phase or fn.__module__.rsplit(".", 2)[-2].split("_", 1)[-1],
            after_stop=after_stop,
            enabled=enabled,
        )
        # Re-importing a module (tests) replaces its checks instead of running them twice.
        _CHECKS[:] = [c for c in _CHECKS if (c.fn.__module__, c.fn.__name__) != (fn.__module__, fn.__name__)]
        _CHECKS.append(check)
        fn.probe_check = check  # type: ignore[attr-defined]
        return fn

    return register


def emits(*codes: str, framework: str, where: str) -> None:
    """Declare codes that ``where`` (an observer, an exception mapper) reports outside a registered check."""
    if framework not in FRAMEWORKS + ("any",):
        raise ValueError(f"unknown framework {framework!r}")
    _EMITTERS[(framework, where)] = _valid(codes)


def stage_modules(framework: str) -> list[str]:
    """The importable names of every stage's probe module for ``framework``, in stage order."""
    import trainlint.stages as stages

    base = os.path.dirname(stages.__file__)
    module = MODULE_OF[framework]
    names = []
    for entry in sorted(os.listdir(base)):
        if re.fullmatch(r"s\d_[a-z0-9_]+", entry) and os.path.isfile(os.path.join(base, entry, module + ".py")):
            names.append(f"trainlint.stages.{entry}.{module}")
    return names


def load(framework: str) -> None:
    """Import every stage probe module of ``framework`` (their decorators fill the registry)."""
    for name in stage_modules(framework):
        importlib.import_module(name)
    importlib.import_module(PLUGIN_OF[framework])


def checks(framework: str, path: str) -> list[ProbeCheck]:
    """The registered checks of ``framework`` for the entry point ``path``, in pipeline order."""
    load(framework)
    chosen = [c for c in _CHECKS if c.framework == framework and c.path in (path, "*")]
    return sorted(chosen, key=lambda c: (c.order, c.stage))


def run(h: Harness, st: Any, framework: str, path: str) -> None:
    """Run the checks in pipeline order on ``st`` (the pipeline state: ``st.stop`` set by a check
    ends the pipeline; ``st.stop_at = order`` ends it before that point, e.g. labels outside the head
    make the forward pass meaningless but the batch can still be collated; checks with
    ``after_stop`` still run)."""
    for check in checks(framework, path):
        stop_at = getattr(st, "stop_at", None)
        stopped = st.stop or (stop_at is not None and check.order >= stop_at)
        if stopped and not check.after_stop:
            continue
        if check.enabled is not None and not check.enabled(h):
            continue
        h.phase(check.phase)
        try:
            check.fn(h, st)
        except Exception as exc:  # noqa: BLE001  # a bug of trainlint's check: say so, never "all clear"
            if h.strict:  # in-process tests: a bug must fail the test
                raise
            h.incomplete(check.name, error_at(exc), check.codes)


def declared_codes(framework: str | None = None) -> set[str]:
    """Every code the probe can report: the registered checks and the declared emitters."""
    frameworks = FRAMEWORKS if framework is None else (framework,)
    for fw in frameworks:
        load(fw)
    out: set[str] = set()
    for c in _CHECKS:
        if c.framework in frameworks:
            out.update(c.codes)
    for (fw, _), codes in _EMITTERS.items():
        if fw in frameworks or fw == "any":
            out.update(codes)
    return out


def overfit_requested(h: Harness) -> bool:
    return h.config.overfit > 0


def incomplete(h: Harness, check: str, reason: str, codes: Iterable[str] = ()) -> None:
    """Say that ``check`` could not complete: never an all clear for it."""
    h.incomplete(check, reason, codes=tuple(codes))
