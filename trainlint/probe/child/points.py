"""The observation points of the probe, and what a check receives at each: the contract between the
framework plugins (``frameworks/``), which announce a point when the script reaches it, and the checks
(``stages/s<N>_<stage>/probe.py`` for PyTorch, ``probe_keras.py`` for Keras), which subscribe to it with
``@check(POINT, "TL...")`` (:mod:`trainlint.probe.child.registry`). A plugin never names a check, a
check never names a plugin.

=====================  ===========================================================  ==================
point                  announced when                                               state
=====================  ===========================================================  ==================
``trainer.reached``    ``Trainer.train/evaluate/predict`` is called                 :class:`TrainerState`
``trainer.batch``      then: one training batch through the pipeline (pipeline)     :class:`TrainerState`
``trainer.eval_batch`` then: one evaluation batch, even when training failed        :class:`TrainerState`
``trainer.overfit``    then, with ``--overfit N``: N steps on the training batch    :class:`TrainerState`
``loop.backward``      ``Tensor.backward()`` in a hand-written loop                 :class:`LoopState`
``loop.step``          ``optimizer.step()`` is about to run (hand-written loop)     :class:`LoopState`
``loop.step_done``     ``optimizer.step()`` ran (the loop is stopped after two)     :class:`LoopState`
``loop.overfit``       after two steps, with ``--overfit N``                        :class:`LoopState`
``fit.reached``        ``Model.fit`` is called (Keras 3 or tf-keras)                :class:`KerasState`
``fit.batch``          then: ``fit``'s first batch through the pipeline (pipeline)  :class:`KerasState`
``fit.overfit``        then, with ``--overfit N``                                   :class:`KerasState`
``tape.apply``         ``apply_gradients`` of a hand-written ``GradientTape`` loop  :class:`TapeState`
``tape.step_done``     the second ``apply_gradients`` ran (the loop is stopped)     :class:`TapeState`
``cuda.emulated``      the run ends after CUDA was emulated on the CPU              :class:`DeviceEmulation`
``script.exception``   the script raised before training (a classifier point)       :class:`ScriptError`
=====================  ===========================================================  ==================

At a *pipeline* point the checks are the stages of one pipeline, run in order on one state: each is
announced as a ``phase`` event (where a timeout hit), a check that fails is reported as incomplete, and
``state.stop`` (or ``stop_at``) set by one ends the pipeline for the later ones. At a *classifier* point
each check returns a :class:`Classification` or None: the first one wins. At the other points every
check runs; one that fails becomes a note.

Child side: standard library only; the frameworks' objects are held as ``Any``.
"""

from __future__ import annotations

import dataclasses
import sys
import types
from collections import Counter
from typing import Any, Generic, NamedTuple, TypeVar

from trainlint.probe.child.harness import Harness

S = TypeVar("S")
FRAMEWORKS = ("torch", "keras", "any")


@dataclasses.dataclass(frozen=True)
class Point(Generic[S]):
    """One observation point. ``framework``: the stage modules whose checks may subscribe ("torch":
    ``probe.py``, "keras": ``probe_keras.py``, "any": both)."""

    name: str
    framework: str
    pipeline: bool = False
    #: a pipeline point whose checks run even when an earlier pipeline stopped (evaluation)
    independent: bool = False
    #: the first check that returns a Classification wins, the others do not run
    classifier: bool = False

    def __post_init__(self) -> None:
        if self.framework not in FRAMEWORKS:
            raise ValueError(f"unknown framework {self.framework!r}")


@dataclasses.dataclass(eq=False)
class Pipeline:
    """The state of a pipeline point: what one stage hands to the next."""

    line: int | None  # the user's line of the entry point (trainer.train(), model.fit())
    #: a stage failed in a way that makes the next stages meaningless
    stop: bool = dataclasses.field(default=False, init=False)
    #: the pipeline stops before this order (e.g. labels outside the head: no forward pass, but the
    #: batch can still be collated)
    stop_at: int | None = dataclasses.field(default=None, init=False)


# ---------------------------------------------------------------- what plugins record for later checks


@dataclasses.dataclass
class LabelColumn:
    """One label column over whole datasets, counted before the probe cut them to ``rows``."""

    counts: Counter[Any] = dataclasses.field(default_factory=Counter)
    rows: int = 0
    sources: list[str] = dataclasses.field(default_factory=list)  # "'glue'[train]"
    names: list[str] | None = None  # the ClassLabel names


@dataclasses.dataclass
class DatasetRecord:
    """What the ``datasets`` plugin saw of ``load_dataset`` (``h.kept(DatasetRecord)``)."""

    label_columns: dict[str, LabelColumn] = dataclasses.field(default_factory=dict)
    rows_cut: bool = False  # a dataset was cut to the probe's rows
    load_seconds: float | None = None  # time spent in load_dataset


@dataclasses.dataclass
class DeviceEmulation:
    """What the CUDA emulation changed (the state of ``cuda.emulated``)."""

    mapped: dict[str, int] = dataclasses.field(default_factory=dict)  # what → how many times
    world: str = ""  # the one-rank world note
    fp16: bool = False  # float16 autocast or loss scaling ran as float32
    flushed: bool = False
    mode: Any = None  # the TorchFunctionMode mapping CUDA devices to the CPU
    loopback: str | None = None  # why the loopback interface could not be brought up ("" : it is up)
    world_of_one: str | None = None  # the in-process backend registered for a world of one

    def add(self, what: str) -> None:
        self.mapped[what] = self.mapped.get(what, 0) + 1


# ---------------------------------------------------------------- transformers Trainer


@dataclasses.dataclass(eq=False)
class TrainerState(Pipeline):
    """The Trainer, and what each stage of its pipeline hands to the next."""

    trainer: Any = None
    method: str = "train"
    model: Any = None  # trainer.model
    raw_dataset: bool = False
    batch: dict[str, Any] | None = None  # one training batch, as the dataloader made it
    inputs: dict[str, Any] | None = None  # the batch as the model receives it (_prepare_inputs)
    outputs: Any = None
    loss: Any = None
    optimizer: Any = None
    label_counts: Counter[Any] | None = None  # over the whole label column
    main_input: str = "input_ids"
    raw_check_in_batch: bool = False  # TL101 decided on the batch (remove_unused_columns=False)


TRAINER_REACHED: Point[TrainerState] = Point("trainer.reached", "torch")
TRAINER_BATCH: Point[TrainerState] = Point("trainer.batch", "torch", pipeline=True)
TRAINER_EVAL_BATCH: Point[TrainerState] = Point("trainer.eval_batch", "torch", pipeline=True, independent=True)
TRAINER_OVERFIT: Point[TrainerState] = Point("trainer.overfit", "torch", pipeline=True)


# ---------------------------------------------------------------- hand-written PyTorch loops


@dataclasses.dataclass(eq=False)
class LoopState:
    """A hand-written loop observed through ``Tensor.backward``, ``zero_grad`` and the optimizer step
    hooks (``h.kept(LoopState)`` once torch is imported). The plugin keeps the counters and lines; the
    checks keep what they decided in the fields below the line."""

    steps: int = 0  # optimizer steps done
    backwards: int = 0
    optimizer: Any = None  # the optimizer of the last step done
    stepping: Any = None  # the optimizer whose step() is running (loop.step, loop.step_done)
    tensor: Any = None  # the tensor backward() runs on (loop.backward)
    line: int | None = None  # the user's line of the call being observed
    first_line: int | None = None  # of the first backward()
    backward_line: int | None = None  # of the last backward()
    zero_grad_after_backward: int | None = None  # line of a zero_grad() between backward and step
    pending_backward: bool = False  # backward() ran since the last step()
    closure: bool = False  # the current step() was given a closure
    snap: list[tuple[Any, Any]] = dataclasses.field(default_factory=list)  # parameters before step()
    captured: Any = None  # (module, args, kwargs) of the model call of step 2 (--overfit)
    capture_handle: Any = None  # the forward pre-hook that captures it
    # ---- what the checks decided
    after_step_checked: bool = False
    stale: str | None = None  # step 1's gradients still there at step 2's backward()
    stale_line: int | None = None
    eval_mode_reported: bool = False
    reported_504: bool = False
    reported_506: bool = False
    moved_checked: bool = False

    def frame_modules(self, h: Harness) -> list[tuple[str, Any]]:
        """The top-level ``nn.Module`` objects the user's frame holds (locals, then globals)."""
        frame = h.user_frame()
        torch = sys.modules.get("torch")
        if frame is None or torch is None:
            return []
        nn = torch.nn
        found: dict[int, tuple[str, Any]] = {}
        for scope in (frame.f_locals, frame.f_globals):
            for name, value in list(scope.items()):
                if isinstance(value, nn.Module) and id(value) not in found:
                    found[id(value)] = (name, value)
        mods = list(found.values())
        # keep top-level modules only (not a submodule of another one found)
        sub: set[int] = set()
        for _, m in mods:
            for child in m.modules():
                if child is not m:
                    sub.add(id(child))
        return [(n, m) for n, m in mods if id(m) not in sub][:20]

    def trained_model(self, h: Harness, optimizer: Any) -> Any:
        """The module of the user's frame whose parameters ``optimizer`` holds."""
        held = {id(p) for g in optimizer.param_groups for p in g["params"]}
        for _, m in self.frame_modules(h):
            if any(id(p) in held for p in m.parameters()):
                return m
        return None


LOOP_BACKWARD: Point[LoopState] = Point("loop.backward", "torch")
LOOP_STEP: Point[LoopState] = Point("loop.step", "torch")
LOOP_STEP_DONE: Point[LoopState] = Point("loop.step_done", "torch")
LOOP_OVERFIT: Point[LoopState] = Point("loop.overfit", "torch")


# ---------------------------------------------------------------- Keras Model.fit


def flavour_of(model: Any) -> tuple[str, types.ModuleType | None]:
    """``("tf_keras" | "keras", module)``: the Keras the model's class is built on."""
    for klass in type(model).__mro__:
        mod = klass.__module__ or ""
        if mod.startswith("tf_keras"):
            return "tf_keras", sys.modules.get("tf_keras")
        if mod.startswith("keras"):
            return "keras", sys.modules.get("keras")
    return "keras", sys.modules.get("keras")


def is_transformers_model(model: Any) -> bool:
    mod = sys.modules.get("transformers.modeling_tf_utils")
    base = getattr(mod, "TFPreTrainedModel", None)
    return base is not None and isinstance(model, base)


@dataclasses.dataclass(eq=False)
class KerasState(Pipeline):
    """The model at ``fit``, and what each stage hands to the next: the batch as fit would see it
    (features, separate labels, sample weights), the outputs, the number of classes."""

    model: Any = None
    fit_args: dict[str, Any] = dataclasses.field(default_factory=dict)
    flavour: str = "keras"  # "keras" (Keras 3) or "tf_keras" (Keras 2)
    kmod: Any = None  # that Keras module
    transformers: bool = False  # a transformers TF model
    compile: dict[str, Any] = dataclasses.field(default_factory=dict)  # what the user passed to compile()
    compile_line: int | None = None
    source: str = ""  # where the batch came from, in words
    dataset: Any = None  # the tf.data.Dataset passed to fit, if any
    dataset_info: dict[str, Any] | None = None  # from to_tf_dataset
    raw_batch: Any = None
    features: Any = None
    y: Any = None
    sample_weight: Any = None
    label_keys: list[str] = dataclasses.field(default_factory=list)  # label keys found inside the feature dict
    labels: Any = None  # numpy labels of the batch (from y or from the features)
    label_name: str = ""  # "y" or the key in the features
    outputs: Any = None  # numpy model outputs (logits or probabilities) on the batch
    num_classes: int | None = None
    num_classes_source: str = ""
    out_of_range: Any = None  # boolean numpy mask over the batch: label outside the head
    step_losses: list[float] = dataclasses.field(default_factory=list)

    @classmethod
    def at_fit(cls, model: Any, fit_args: dict[str, Any], line: int | None) -> KerasState:
        compiled: dict[str, Any] = model.__dict__.get("_trainlint_compile") or {}
        flavour, kmod = flavour_of(model)
        return cls(line, model=model, fit_args=fit_args, flavour=flavour, kmod=kmod,
                   transformers=is_transformers_model(model), compile=compiled, compile_line=compiled.get("line"))


FIT_REACHED: Point[KerasState] = Point("fit.reached", "keras")
FIT_BATCH: Point[KerasState] = Point("fit.batch", "keras", pipeline=True)
FIT_OVERFIT: Point[KerasState] = Point("fit.overfit", "keras", pipeline=True)


# ---------------------------------------------------------------- hand-written GradientTape loops


@dataclasses.dataclass(eq=False)
class TapeState:
    """A hand-written ``GradientTape`` loop (no ``fit``), observed through the optimizer's
    ``apply``/``apply_gradients`` for two steps."""

    steps: int = 0  # apply_gradients calls done
    optimizer: Any = None  # of the call being observed
    grads: list[Any] = dataclasses.field(default_factory=list)
    variables: list[Any] = dataclasses.field(default_factory=list)
    line: int | None = None
    first: list[Any] | None = None  # the variables' values before the first observed step
    watched: list[Any] = dataclasses.field(default_factory=list)  # the variables of the first observed step
    reported: bool = False  # a check reported that the weights never move
    depth: int = 0  # apply_gradients calls in progress (an inner one is not a step of its own)
    traced_optimizer: Any = None  # the optimizer of a train step traced by tf.function


TAPE_APPLY: Point[TapeState] = Point("tape.apply", "keras")
TAPE_STEP_DONE: Point[TapeState] = Point("tape.step_done", "keras")


# ---------------------------------------------------------------- devices, exceptions


CUDA_EMULATED: Point[DeviceEmulation] = Point("cuda.emulated", "torch")


@dataclasses.dataclass(frozen=True)
class ScriptError:
    """An exception the script raised before training, and the user's line where it was raised."""

    exc: BaseException
    line: int | None


class Classification(NamedTuple):
    """A script exception as a finding."""

    code: str
    message: str
    evidence: str
    confirms: tuple[str, ...] = ()


SCRIPT_EXCEPTION: Point[ScriptError] = Point("script.exception", "any", classifier=True)
