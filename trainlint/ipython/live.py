"""The live probe: the probe's checks on the kernel's own objects (``%trainlint probe ...``).

The sandboxed probe (``trainlint --probe``) re-runs a script up to its training call and announces the
observation points there; here the objects already exist, so the same framework entry points announce
the same points on them, in this process, with the probe's own harness recording the events:

- a transformers ``Trainer`` (trl trainers too): :func:`~trainlint.probe.child.frameworks.hf_trainer.probe_trainer`,
  i.e. one real batch from the Trainer's dataloader, labels against the head, forward/backward, one
  optimizer step, weights move, one evaluation batch through ``compute_metrics``, ``--overfit N``;
- a compiled Keras model and its dataset: :func:`~trainlint.probe.child.frameworks.keras_fit.probe_fit`;
- a PyTorch model, DataLoader, optimizer and loss function: two steps of a loop driven here, observed by
  the hand-written-loop plugin's own observers (``loop.backward``, ``loop.step``, ``loop.step_done``).

The events become a report as the sandboxed probe's do (:func:`trainlint.probe.parent.report.build_report`):
every static finding of the session confirmed, not reproduced or not reached, with the same codes and
evidence. The user's objects are left as they were: parameters, buffers, gradients and ``requires_grad``,
train/eval modes, the optimizer's and scheduler's state, the Trainer's attributes, arguments and state,
the random number generators (Python, NumPy, torch, TensorFlow) are restored afterwards; the checks
write nothing (the Trainer's ``output_dir`` points to a temporary directory while they run).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from trainlint.findings import Finding
from trainlint.ipython.cells import SESSION_NAME
from trainlint.probe import ProbeReport, protocol
from trainlint.probe.child import registry
from trainlint.probe.child.frameworks import PLUGINS
from trainlint.probe.child.harness import Harness, ProbeStop
from trainlint.probe.child.points import SCRIPT_EXCEPTION, LoopState, ScriptError
from trainlint.probe.parent.report import build_report


class LiveProbeError(Exception):
    """The request cannot be run (a name not in the namespace, an object of no known kind)."""


@dataclasses.dataclass
class ProbeRequest:
    name: str
    data: str | None = None
    loader: str | None = None
    optimizer: str | None = None
    loss: str | None = None
    overfit: int = 0

    def describe(self) -> str:
        extra = [f"--{k} {v}" for k in ("data", "loader", "optimizer", "loss") if (v := getattr(self, k))]
        if self.overfit:
            extra.append(f"--overfit {self.overfit}")
        return " ".join([self.name, *extra])


def parse_probe_args(args: list[str]) -> ProbeRequest:
    if not args or args[0].startswith("-"):
        raise LiveProbeError("name the object to probe: `trainer` or a model")
    request = ProbeRequest(args[0])
    rest = args[1:]
    while rest:
        flag = rest.pop(0)
        if flag not in ("--data", "--loader", "--optimizer", "--loss", "--overfit") or not rest:
            raise LiveProbeError(f"unexpected {flag!r}")
        value = rest.pop(0)
        if flag == "--overfit":
            if not value.isdigit() or int(value) < 1:
                raise LiveProbeError("--overfit takes a number of steps (>= 1)")
            request.overfit = int(value)
        else:
            setattr(request, flag[2:], value)
    return request


# ---------------------------------------------------------------- the objects


def _lookup(ns: dict[str, Any], name: str) -> Any:
    if name in ns:
        return ns[name]
    head, *attrs = name.split(".")
    if head in ns and attrs:
        obj = ns[head]
        for a in attrs:
            obj = getattr(obj, a)
        return obj
    raise LiveProbeError(f"no `{name}` in the namespace")


def _is_trainer(obj: Any) -> bool:
    mod = sys.modules.get("transformers.trainer")
    base = getattr(mod, "Trainer", None)
    return base is not None and isinstance(obj, base)


def _is_torch_module(obj: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.nn.Module)


def _is_keras_model(obj: Any) -> bool:
    for klass in type(obj).__mro__:
        if klass.__name__ == "Model" and (klass.__module__ or "").startswith(("keras", "tf_keras")):
            return True
    return False


def _resolve(request: ProbeRequest, ns: dict[str, Any]) -> Any:
    if request.name == "trainer" and "trainer" not in ns:
        trainers = [k for k, v in ns.items() if not k.startswith("_") and _is_trainer(v)]
        if len(trainers) == 1:
            return ns[trainers[0]]
        if trainers:
            raise LiveProbeError(f"several Trainers in the namespace ({', '.join(trainers)}): name one")
        raise LiveProbeError("no Trainer in the namespace")
    return _lookup(ns, request.name)


# ---------------------------------------------------------------- the run


def run_live_probe(request: ProbeRequest, ns: dict[str, Any], static_findings: list[Finding]) -> ProbeReport:
    obj = _resolve(request, ns)
    if _is_trainer(obj):
        kind = "trainer"
    elif _is_keras_model(obj):
        if not request.data:
            raise LiveProbeError("a Keras model is probed with the dataset given to fit(): --data NAME")
        kind = "keras"
    elif _is_torch_module(obj):
        if not (request.loader and request.optimizer and request.loss):
            raise LiveProbeError("a PyTorch model is probed with --loader NAME --optimizer NAME --loss NAME")
        kind = "loop"
    else:
        raise LiveProbeError(f"`{request.name}` is a {type(obj).__name__}: not a transformers Trainer, "
                             "a Keras model or a PyTorch module")
    work = tempfile.mkdtemp(prefix="trainlint-live-")
    events: list[protocol.Event] = []
    config = protocol.Config(script="notebook", argv=[], workdir=work, overfit=request.overfit,
                             plugins=list(PLUGINS), static_codes=sorted({f.code for f in static_findings}))
    h = Harness(config, sink=events.append, exit_on_stop=False)
    started = time.monotonic()
    text = ""
    try:
        if kind == "trainer":
            with trainer_kept(obj, work):
                text = _guard(h, lambda: _probe_trainer(h, obj))
        elif kind == "keras":
            data = _lookup(ns, request.data or "")
            with keras_kept(obj):
                text = _guard(h, lambda: _probe_keras(h, obj, data))
        else:
            named = [(n or "", _lookup(ns, n or "")) for n in (request.name, request.loader, request.optimizer,
                                                                request.loss)]
            with torch_kept(obj, [named[2][1]]):
                text = _guard(h, lambda: _probe_loop(h, named))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    outcome = "reached-training" if not text.startswith("error:") else "script-error"
    h.end(outcome, text)
    report = build_report(Path(SESSION_NAME), static_findings, events, outcome, False)
    # the script's timings say nothing here: the objects were built before
    report.notes = [n for n in report.notes if not n.startswith("timings: the script reached")]
    report.notes.insert(0, "live probe: the checks of `trainlint --probe` on the kernel's objects, "
                           "which are restored afterwards")
    report.notes.append(f"live probe wall time {time.monotonic() - started:.2f}s")
    return report


def _guard(h: Harness, run: Any) -> str:
    """Run the points; an exception of the user's objects is classified as the script's would be."""
    try:
        return str(run() or "")
    except ProbeStop as stop:
        return str(stop)
    except Exception as exc:  # noqa: BLE001  # the user's model/collator/loss raised: a finding
        got = registry.classify(h, SCRIPT_EXCEPTION, ScriptError(exc, None))
        message = got.message if got is not None else f"{type(exc).__name__}: {exc}"
        if got is not None:
            h.finding(got.code, got.message, evidence=got.evidence, confirms=got.confirms)
        return f"error: {message}"


def _probe_trainer(h: Harness, trainer: Any) -> str:
    from trainlint.probe.child.frameworks.hf_trainer import probe_trainer

    probe_trainer(h, trainer, "train", None)
    return "probed one training batch and one evaluation batch of the live Trainer"


def _probe_keras(h: Harness, model: Any, data: Any) -> str:
    from trainlint.probe.child.frameworks.keras_fit import probe_fit

    probe_fit(h, model, (data,), {}, None)
    return "probed the first batch of the dataset through the live Keras model"


def _probe_loop(h: Harness, named: list[tuple[str, Any]]) -> str:
    """Two steps of the loop ``loss_fn(model(inputs), targets)`` on the loader's first batch, observed
    by the hand-written-loop plugin's observers; ``named``: the model, loader, optimizer and loss
    function with the user's names (what the checks would find in a script's frame)."""
    from trainlint.probe.child.frameworks.torch_loop import observe_backward, observe_step_post, observe_step_pre
    from trainlint.probe.child.torch_util import first_batch

    (_, model), (_, loader), (_, optimizer), (_, loss_fn) = named
    loop = h.keep(LoopState(given_values=list(named)))
    batch, error, _ = first_batch(loader)
    if batch is None:
        raise RuntimeError(error or "the DataLoader gave no batch")
    device = next((p.device for p in model.parameters()), None)
    inputs, kwargs, targets = _split(_to(batch, device))
    model.train()
    for _ in range(2):
        optimizer.zero_grad()
        out = model(*inputs, **kwargs)
        logits = getattr(out, "logits", out)
        loss = loss_fn(logits, targets)
        observe_backward(h, loop, loss)
        loss.backward()
        observe_step_pre(h, loop, optimizer, (), {})
        optimizer.step()
        observe_step_post(h, loop, optimizer)  # the second one stops the run (ProbeStop)
    return "observed two optimizer steps on the loader's first batch"


_LABEL_KEYS = ("labels", "label", "targets", "target", "y")


def _split(batch: Any) -> tuple[tuple[Any, ...], dict[str, Any], Any]:
    """(positional inputs, keyword inputs, targets): ``(x, y)`` or ``(x1, ..., y)`` batches, or a dict
    with a label key."""
    if isinstance(batch, dict) or (hasattr(batch, "keys") and hasattr(batch, "__getitem__")):
        key = next((k for k in _LABEL_KEYS if k in batch), None)
        if key is None:
            raise RuntimeError(f"the batch has no labels (batch keys {list(batch.keys())})")
        return (), {k: batch[k] for k in batch.keys() if k != key}, batch[key]
    if isinstance(batch, (list, tuple)) and len(batch) >= 2:
        return tuple(batch[:-1]), {}, batch[-1]
    raise RuntimeError(f"cannot tell inputs from targets in a batch of type {type(batch).__name__}")


def _to(batch: Any, device: Any) -> Any:
    if device is None:
        return batch
    if hasattr(batch, "to") and hasattr(batch, "device"):
        return batch.to(device)
    if isinstance(batch, dict):
        return {k: _to(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        moved = [_to(v, device) for v in batch]
        return moved if isinstance(batch, list) else tuple(moved)
    return batch


# ---------------------------------------------------------------- leaving the objects as they were


@contextlib.contextmanager
def rng_kept() -> Iterator[None]:
    state: list[tuple[Any, Any]] = [(random.setstate, random.getstate())]
    np = sys.modules.get("numpy")
    if np is not None:
        state.append((np.random.set_state, np.random.get_state()))
    torch = sys.modules.get("torch")
    if torch is not None:
        state.append((torch.random.set_rng_state, torch.random.get_rng_state()))
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            state.append((torch.cuda.set_rng_state_all, torch.cuda.get_rng_state_all()))
    tf = sys.modules.get("tensorflow")
    if tf is not None:
        with contextlib.suppress(Exception):
            gen = tf.random.get_global_generator()
            state.append((lambda s, g=gen: g.reset(s), gen.state.numpy()))
    try:
        yield
    finally:
        for restore, saved in reversed(state):
            restore(saved)


@contextlib.contextmanager
def attributes_kept(*objects: Any) -> Iterator[None]:
    """Each object's attributes as they were (the same values: attributes added by the checks removed,
    replaced ones put back, lists given back their items)."""
    saved = [(o, dict(vars(o))) for o in objects if o is not None and hasattr(o, "__dict__")]
    items = [(v, list(v)) for _, attrs in saved for v in attrs.values() if type(v) is list]
    try:
        yield
    finally:
        for target, before in items:
            if len(target) != len(before) or any(a is not b for a, b in zip(target, before)):
                target[:] = before
        for o, attrs in saved:
            for k in [k for k in vars(o) if k not in attrs]:
                with contextlib.suppress(Exception):
                    delattr(o, k)
            for k, v in attrs.items():
                if vars(o).get(k, object()) is not v:
                    with contextlib.suppress(Exception):
                        object.__setattr__(o, k, v)


@contextlib.contextmanager
def torch_kept(model: Any, optimizers: Sequence[Any], schedulers: Sequence[Any] = ()) -> Iterator[None]:
    import torch

    tensors = [(t, t.detach().clone()) for t in [*model.parameters(), *model.buffers()]]
    grads = [(p, p.requires_grad, None if p.grad is None else p.grad.detach().clone()) for p in model.parameters()]
    modes = [(m, m.training) for m in model.modules()]
    opts = [(o, copy.deepcopy(o.state_dict())) for o in optimizers if o is not None]
    scheds = [(s, copy.deepcopy(s.state_dict())) for s in schedulers if s is not None and hasattr(s, "state_dict")]
    try:
        with rng_kept(), attributes_kept(*[o for o, _ in opts], *[s for s, _ in scheds]):
            yield
    finally:
        with torch.no_grad():
            for t, before in tensors:
                if t.shape == before.shape:
                    t.copy_(before)
        for p, flag, grad in grads:
            p.requires_grad_(flag)
            p.grad = grad
        for m, training in modes:
            m.training = training
        for o, state in opts:
            o.load_state_dict(state)
        for s, state in scheds:
            s.load_state_dict(state)


@contextlib.contextmanager
def trainer_kept(trainer: Any, work: str) -> Iterator[None]:
    """The Trainer's model, optimizer, scheduler, attributes, arguments, state, accelerator and its
    gradient state as they were; its output directory pointed to ``work`` while the checks run."""
    args = getattr(trainer, "args", None)
    state = getattr(trainer, "state", None)
    state_attrs = copy.deepcopy(vars(state)) if state is not None and hasattr(state, "__dict__") else None
    accelerator = getattr(trainer, "accelerator", None)
    # accelerate's shared gradient state holds the dataloaders being iterated (the probe's one batch)
    gradient_state = getattr(accelerator, "gradient_state", None)
    output_dir = getattr(args, "output_dir", None)
    existed = bool(output_dir) and os.path.exists(str(output_dir))
    with torch_kept(trainer.model, [trainer.optimizer], [getattr(trainer, "lr_scheduler", None)]), \
            attributes_kept(trainer, args, accelerator, gradient_state):
        if args is not None:
            with contextlib.suppress(Exception):
                object.__setattr__(args, "output_dir", os.path.join(work, "output"))
        try:
            yield
        finally:
            if state is not None and state_attrs is not None:
                vars(state).clear()
                vars(state).update(state_attrs)
            if output_dir and not existed and os.path.isdir(str(output_dir)) and not os.listdir(str(output_dir)):
                os.rmdir(str(output_dir))


@contextlib.contextmanager
def keras_kept(model: Any) -> Iterator[None]:
    weights = model.get_weights()
    optimizer = getattr(model, "optimizer", None)
    variables = getattr(optimizer, "variables", None)
    if callable(variables):
        variables = variables()
    opt_values = [(v, v.numpy()) for v in list(variables or [])]
    try:
        with rng_kept(), attributes_kept(model, optimizer):
            yield
    finally:
        model.set_weights(weights)
        for v, value in opt_values:
            with contextlib.suppress(Exception):
                v.assign(value)
