"""Runtime checks of the training-loop stage (child side: standard library + frameworks only).

Hand-written PyTorch loops are observed through ``Tensor.backward``, ``zero_grad`` and the global
optimizer step hooks for two real steps, then the script is stopped:

- TL701: the gradients of step 1 are still in ``p.grad`` when step 2's ``backward()`` runs (no
  ``zero_grad``): they accumulate;
- TL702: a trainable model is in eval mode (``model.training`` False) during a training step;
- TL506: the weights the optimizer holds do not move over the observed steps, whatever the cause
  (no gradient reached them: ``zero_grad()`` between ``backward()`` and ``step()``, a detached loss,
  ``step()`` without ``backward()``; a learning rate of 0), with the cause in the evidence;
- TL308: some trainable parameters the optimizer holds get no / a non-finite gradient; TL504: the
  optimizer holds other parameters than the model that got gradients;
- with the optimizer stage: the effective learning rate, TL502/TL503 (TL503 from the observed rate on
  a pretrained model, whatever the source says).

A crash inside the loop (after the first ``backward()``/``step()``, or in the ``DataLoader``) is
reported by :func:`loop_exception` with its cause and "at step N".

``--overfit N``: N steps on the same batch at the optimizer's base (peak) learning rate, the loss
curve as a small terminal plot, classified as pass / goes up / explodes / oscillates / plateaus →
TL706 when not pass (a plateau of a random ``--tiny-model`` is a note: such a model may not fit).
"""

from __future__ import annotations

import functools
import math
import re
import traceback
from typing import Any

from trainlint.probe.child.checks import emits, incomplete, overfit_requested, probe_check
from trainlint.probe.child.torch_util import (
    base_lrs,
    collation_failure_text,
    collator_name,
    error_text,
    moved,
    no_loss_message,
    optimizer_params,
    snapshot_all,
    use_base_rate,
)
from trainlint.stages.s5_optimizer import probe as s5
from trainlint.probe.child.harness import Harness

_MODE_LAYERS = ("Dropout", "BatchNorm", "InstanceNorm", "GroupNorm")

emits("TL406", "TL504", "TL308", "TL506", "TL502", "TL503", "TL501", "TL701", "TL702", "TL706",
      framework="torch", where="hand-written loop observer")
emits("TL201", "TL202", "TL305", "TL308", "TL707", framework="torch", where="hand-written loop exceptions")


class LoopObserver:
    def __init__(self, h: Harness, torch: Any) -> None:
        self.h = h
        self.torch = torch
        self.steps = 0
        self.backwards = 0
        self.optimizer: Any = None
        self.after_step_checked = False
        self.stale: str | None = None
        self.stale_line: int | None = None
        self.eval_mode_reported = False
        self.backward_line: int | None = None
        self.captured: Any = None
        self.snap: list = []
        self.first_line: int | None = None
        self.zero_grad_after_backward: int | None = None  # line of a zero_grad() between backward and step
        self.pending_backward = False  # backward() ran since the last step()
        self.reported_504 = False
        self.reported_506 = False
        self.moved_checked = False
        self.first_lrs: list[float] = []
        self.closure = False  # the current step() was given a closure

    # -- helpers
    def frame_modules(self) -> list[tuple[str, Any]]:
        frame = self.h.user_frame()
        if frame is None:
            return []
        nn = self.torch.nn
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

    def trained_model(self, optimizer: Any) -> Any:
        held = {id(p) for p in optimizer_params(optimizer)}
        for _, m in self.frame_modules():
            if any(id(p) in held for p in m.parameters()):
                return m
        return None

    # -- hooks
    def on_zero_grad(self, owner: Any) -> None:
        h = self.h
        if h.is_busy() or h.ended():
            return
        # backward() ran since the last step and step() has not: this zero_grad() throws the gradients away.
        if self.pending_backward and self.zero_grad_after_backward is None:
            self.zero_grad_after_backward = h.user_line()

    def on_backward(self, tensor: Any) -> None:
        h = self.h
        if h.is_busy() or h.ended():
            return
        self.backwards += 1
        self.pending_backward = True
        self.zero_grad_after_backward = None
        line = h.user_line()
        if self.first_line is None:
            self.first_line = line
        self.backward_line = line
        if self.backwards == 1 and tensor.numel() >= 1:
            value = tensor.detach().float()
            if not bool(self.torch.isfinite(value).all()):
                self.h.finding(
                    "TL406",
                    f"the loss is not finite at the first training step ({value.flatten()[:4].tolist()})",
                    evidence=f"loss.backward() at {h.where(line)} on a loss of {value.flatten()[:4].tolist()}",
                    line=line,
                )
            else:
                self.h.checked("TL406")
        if self.steps >= 1 and not self.after_step_checked and self.optimizer is not None:
            self.after_step_checked = True
            stale = []
            for p in optimizer_params(self.optimizer):
                g = p.grad
                if g is not None and bool((g != 0).any()):
                    stale.append(float(g.float().norm()))
            if stale:
                self.stale = (
                    f"{len(stale)} parameters still hold step 1's gradients (norm {max(stale):.3g}) "
                    f"when backward() runs again at {h.where(line)}"
                )
                self.stale_line = line

    def on_step_pre(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self.h.is_busy() or self.h.ended():
            return
        self.snap = snapshot_all(optimizer_params(optimizer))
        # `optimizer.step(closure)` (LBFGS & co): the closure computes the gradients inside step().
        self.closure = bool(args and callable(args[0])) or callable((kwargs or {}).get("closure"))
        if self.steps == 0:
            self._check_first_step(optimizer)
            self._check_mode(optimizer)
        elif not self.reported_506 and not self.moved_checked and not self.closure:
            self._check_gradients_arrive(optimizer, self.steps + 1)
        self.zero_grad_after_backward = None
        self.pending_backward = False

    def _check_mode(self, optimizer: Any) -> None:
        """TL702: a model the optimizer trains is in eval mode at the training step (a frozen teacher
        in eval mode, whose parameters the optimizer does not hold, is fine)."""
        h = self.h
        held = {id(p) for p in optimizer_params(optimizer)}
        for name, m in self.frame_modules():
            if not any(id(p) in held for p in m.parameters()):
                continue
            mode_layers = [type(x).__name__ for x in m.modules() if type(x).__name__.startswith(_MODE_LAYERS)]
            eval_layers = [x for x in m.modules() if type(x).__name__.startswith(_MODE_LAYERS) and not x.training]
            if not m.training or (mode_layers and len(eval_layers) == len(mode_layers)):
                if not mode_layers:
                    continue  # no dropout/normalisation layer: the mode changes nothing
                line = getattr(self, "backward_line", None) or h.user_line()
                self.eval_mode_reported = True
                h.finding(
                    "TL702",
                    f"`{name}` is in eval mode during a training step ({name}.training is False at backward())",
                    evidence=(
                        f"{name} ({type(m).__name__}).training == False at {h.where(line)}: "
                        f"{len(mode_layers)} {sorted(set(mode_layers))[:3]} layers run in inference mode while training"
                    ),
                    line=line,
                )
                return

    def _check_gradients_arrive(self, optimizer: Any, step: int) -> bool:
        """TL506 when not one trainable parameter the optimizer holds has a gradient at ``step()``:
        the step cannot move anything. The cause goes into the evidence. True when reported."""
        h = self.h
        line = h.user_line()
        held = optimizer_params(optimizer)
        trainable = [p for p in held if p.requires_grad]
        if self.closure or not trainable or any(p.grad is not None for p in trainable):
            return False
        name = type(optimizer).__name__
        if self.zero_grad_after_backward is not None:
            cause = (
                f"zero_grad() at {h.where(self.zero_grad_after_backward)} runs after backward() "
                f"({h.where(self.backward_line)}) and before step(): it clears every gradient; call it before "
                "the forward pass (or right after step())"
            )
        elif self.backwards == 0:
            cause = "backward() was never called before step(): nothing computed the gradients"
        else:
            cause = (
                f"backward() at {h.where(self.backward_line)} ran but no gradient reached the optimizer's "
                "parameters: the loss is detached from them (.detach(), .item(), a tensor rebuilt from numbers, "
                "torch.no_grad()) or computed from another model"
            )
        self.reported_506 = True
        self.moved_checked = True
        h.finding(
            "TL506",
            f"the weights never move: at optimizer.step() (step {step}) none of the {len(trainable)} trainable "
            f"parameters {name} holds has a gradient",
            evidence=f"every p.grad is None at {name}.step() ({h.where(line)}); {cause}",
            line=self.zero_grad_after_backward or line,
            confirms=("TL308",),
        )
        return True

    def _check_first_step(self, optimizer: Any) -> None:
        h = self.h
        line = h.user_line()
        held = optimizer_params(optimizer)
        with_grad = [p for p in held if p.grad is not None]
        if held and not with_grad:
            others = []
            for name, m in self.frame_modules():
                n = sum(1 for p in m.parameters() if p.grad is not None)
                if n:
                    others.append(f"{name} ({type(m).__name__}): {n} parameters with gradients")
            if others:
                h.finding(
                    "TL504",
                    "optimizer.step() updates parameters that received no gradient: the optimizer was built on "
                    "another model object than the one trained",
                    evidence=f"the optimizer's {len(held)} parameters have no .grad; " + "; ".join(others[:3]),
                    line=line,
                )
                self.reported_504 = True
                return
        h.checked("TL504")
        if self._check_gradients_arrive(optimizer, 1):
            return
        # TL308: trainable parameters the optimizer holds that got no / a non-finite gradient.
        import torch

        names = {}
        for _, m in self.frame_modules():
            for n, p in m.named_parameters():
                names.setdefault(id(p), n)
        trainable = [p for p in held if p.requires_grad]
        no_grad = [names.get(id(p), "?") for p in trainable if p.grad is None]
        bad = [names.get(id(p), "?") for p in trainable if p.grad is not None and not torch.isfinite(p.grad).all()]
        if with_grad and (no_grad or bad):
            parts = []
            if no_grad:
                parts.append(f"{len(no_grad)} of {len(trainable)} trainable parameters got no gradient: {no_grad[:5]}")
            if bad:
                parts.append(f"{len(bad)} got a non-finite gradient: {bad[:5]}")
            h.finding("TL308", "; ".join(parts), evidence="at the first optimizer.step(): " + "; ".join(parts),
                      line=self.backward_line or line)
        elif with_grad:
            h.checked("TL308")
        if not trainable and held:
            self.reported_506 = True
            self.moved_checked = True
            h.finding(
                "TL506",
                f"the weights never move: none of the {len(held)} parameters {type(optimizer).__name__} holds "
                "requires grad (the model is frozen)",
                evidence=f"0 of {len(held)} parameters held by the optimizer have requires_grad=True",
                line=line,
                confirms=("TL305",),
            )

    def on_step_post(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        h = self.h
        if h.is_busy() or h.ended():
            return
        self.steps += 1
        self.optimizer = optimizer
        line = h.user_line()
        lr = max(float(g.get("lr", 0.0)) for g in optimizer.param_groups)
        initial = max(base_lrs(optimizer))
        if self.steps == 1:
            self.first_lrs = [float(g.get("lr", 0.0)) for g in optimizer.param_groups]
            s5.report_lr(h, optimizer, line, user_built=True, model=self.trained_model(optimizer))
        if self.snap and not self.reported_504 and not self.reported_506 and not self.moved_checked:
            if moved(self.snap):
                h.checked("TL506", "TL308")
                self.moved_checked = True
            elif self.steps == 1 and lr == 0 and initial > 0:
                # A warmup scheduler's first rate is 0: judge the second step instead.
                h.note(f"the learning-rate scheduler gives lr 0 at the first step (initial lr {initial:g})")
            elif self.steps >= 2 or any(p.grad is not None for p, _ in self.snap):
                self.moved_checked = True
                self.reported_506 = True
                cause = f"lr={lr:g}" + (" (the scheduler's rate)" if initial != lr else "")
                h.finding(
                    "TL506",
                    f"the weights never move: {self.steps} optimizer step(s) ({type(optimizer).__name__}, {cause}) "
                    "left them unchanged",
                    evidence=f"{len(self.snap)} trainable parameters compared before/after step(): all equal",
                    line=line,
                )
        self.snap = []
        if self.steps == 1:
            if h.config.overfit > 0:
                h.guarded("overfit capture", self._capture_inputs, optimizer)
            return
        # Second step: the loop checks are complete.
        if self.stale:
            h.finding(
                "TL701",
                "gradients accumulate across steps: no zero_grad() between optimizer.step() and the next backward()",
                evidence=self.stale,
                line=self.stale_line or line,
            )
        elif self.after_step_checked:
            h.checked("TL701")
        if not self.eval_mode_reported:
            h.checked("TL702")
        h.checked("TL804", "TL805", "TL801", "TL802")
        overfit = h.config.overfit
        if overfit > 0:
            h.phase("overfit")
            with h.busy():
                h.guarded("overfit", self._overfit, optimizer, overfit, line)
        h.stop(
            "reached-training",
            f"stopped the hand-written loop after observing two optimizer steps ({h.where(line)})",
            line,
        )

    # -- --overfit N for a hand-written loop: replay the model call of step 2 on the same inputs
    def _capture_inputs(self, optimizer: Any) -> None:
        held = {id(p) for p in optimizer_params(optimizer)}
        for name, m in self.frame_modules():
            if any(id(p) in held for p in m.parameters()):
                def pre_hook(module: Any, args: Any, kwargs: Any) -> None:
                    if not self.h.is_busy() and self.captured is None:
                        self.captured = (module, args, dict(kwargs))

                self.capture_handle = m.register_forward_pre_hook(pre_hook, with_kwargs=True)
                return

    def _overfit(self, optimizer: Any, n: int, line: int | None) -> None:
        h = self.h
        handle = getattr(self, "capture_handle", None)
        if handle is not None:
            handle.remove()
        if self.captured is None:
            incomplete(h, "overfit", "the model call of the training step was not seen: nothing to replay",
                       codes=("TL706",))
            return
        module, args, kwargs = self.captured
        module.train()
        rate = use_base_rate(optimizer)
        losses: list[float] = []
        for _ in range(n):
            optimizer.zero_grad(set_to_none=True)
            out = module(*args, **kwargs)
            loss = getattr(out, "loss", None)
            if loss is None and isinstance(out, dict):
                loss = out.get("loss")
            if loss is None:
                incomplete(h, "overfit", "the model does not return its loss (the loop computes it outside): "
                           "not replayed", codes=("TL706",))
                return
            loss = loss.mean() if loss.dim() > 0 else loss
            value = float(loss.detach())
            losses.append(value)
            if not math.isfinite(value):
                break
            loss.backward()
            optimizer.step()
        report_overfit(h, losses, optimizer, f"--overfit {n}: the loop's batch of step 2", line, rate=rate)


# ---------------------------------------------------------------- crashes inside a hand-written loop


def _collation_frame(exc: BaseException) -> tuple[Any, list] | None:
    """(collate_fn, the samples it got) when ``exc`` was raised while a DataLoader formed a batch."""
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        code = frame.f_code
        if code.co_name == "fetch" and "/torch/utils/data/" in code.co_filename.replace("\\", "/"):
            fetcher = frame.f_locals.get("self")
            data = frame.f_locals.get("data")
            if isinstance(data, list):
                return getattr(fetcher, "collate_fn", None), data
    return None


def _batch_keys(h: Harness, exc: BaseException) -> list[str] | None:
    """The keys of the batch the user's loop was working on (a dict-like local of the user's frame)."""
    frame = None
    for f, _ in traceback.walk_tb(exc.__traceback__):
        if h.is_user_file(f.f_code.co_filename):
            frame = f
    if frame is None:
        return None
    for name in ("batch", "inputs", "data", "sample", "features"):
        value = frame.f_locals.get(name)
        if hasattr(value, "keys"):
            return [str(k) for k in value.keys()]
    for value in frame.f_locals.values():
        if hasattr(value, "keys") and hasattr(value, "items") and not isinstance(value, type):
            try:
                if any(hasattr(v, "shape") for v in value.values()):
                    return [str(k) for k in value.keys()]
            except Exception:  # noqa: BLE001
                continue
    return None


def _frozen_models(h: Harness, exc: BaseException) -> list[str]:
    """Names of the models of the user's frame where the error was raised, when every one of them has
    parameters and none requires grad."""
    import sys

    torch = sys.modules.get("torch")
    frame = None
    for f, _ in traceback.walk_tb(exc.__traceback__):
        if h.is_user_file(f.f_code.co_filename):
            frame = f
    if frame is None or torch is None:
        return []
    found = {}
    for scope in (frame.f_locals, frame.f_globals):
        for name, value in list(scope.items()):
            if isinstance(value, torch.nn.Module) and id(value) not in found:
                found[id(value)] = (name, value)
    params = [(n, [p.requires_grad for p in m.parameters()]) for n, m in found.values()]
    params = [(n, flags) for n, flags in params if flags]
    if params and not any(any(flags) for _, flags in params):
        return [f"`{n}`" for n, _ in params]
    return []


def loop_exception(h: Harness, exc: BaseException, line: int | None) -> tuple | None:
    """(code, message, evidence[, confirms]) for an exception raised in a hand-written loop: a DataLoader
    that cannot form a batch (TL201/TL202 with the lengths), a loss that is None (the batch has no
    labels), a loss with no graph (TL308/TL305); "at step N" once the loop has started."""
    obs = h.state.get("loop_observer")
    started = obs is not None and (obs.steps > 0 or obs.backwards > 0)
    step = (obs.steps + 1) if obs is not None else 1
    when = f"at step {step}" if started else "in the training loop"
    at = h.where(line)
    text = error_text(exc)
    collation = _collation_frame(exc)
    if collation is not None:
        collate_fn, samples = collation
        main_input = "input_ids"
        first = samples[0] if samples else None
        if hasattr(first, "keys") and "input_ids" not in first:
            lists = [k for k, v in first.items() if isinstance(v, (list, tuple)) or hasattr(v, "shape")]
            main_input = lists[0] if lists else main_input
        where = f"the DataLoader {when}" if started else "the DataLoader's first batch"
        return collation_failure_text(text, samples, main_input, collator_name(collate_fn), where, trainer=False)
    msg = str(exc)
    if isinstance(exc, AttributeError) and "'NoneType' object has no attribute" in msg and re.search(
            r"attribute '(backward|item|mean|detach)'", msg):
        keys = _batch_keys(h, exc)
        if keys is not None:
            return ("TL707", f"{when}: " + no_loss_message(keys),
                    f"{text} at {at}: `{h.user_source_line(line)}`; batch keys {keys}")
    if isinstance(exc, TypeError) and re.search(r"unsupported operand type\(s\) for .*'NoneType'", msg):
        # `loss = outputs.loss / accumulation_steps` (transformers' no_trainer examples) with loss None:
        # the arithmetic fails before backward(); only when the line is about the loss and the batch
        # has no label column.
        keys = _batch_keys(h, exc)
        source = h.user_source_line(line) if line else ""
        if keys is not None and "loss" in source and not any("label" in k.lower() for k in keys):
            return ("TL707", f"{when}: " + no_loss_message(keys),
                    f"{text} at {at}: `{source}`; batch keys {keys}")
    if isinstance(exc, RuntimeError) and "does not require grad and does not have a grad_fn" in msg:
        frozen = _frozen_models(h, exc)
        if frozen:
            return (
                "TL305",
                f"{when}: loss.backward() fails: no parameter of {', '.join(frozen[:3])} requires grad (the model "
                "is frozen)",
                f"{text} at {at}: `{h.user_source_line(line)}`; requires_grad=False on every parameter",
            )
        return (
            "TL308",
            f"{when}: loss.backward() fails: the loss does not depend on any trainable parameter (a frozen "
            "model, a detached loss, or a loss computed under torch.no_grad())",
            f"{text} at {at}: `{h.user_source_line(line)}`",
        )
    if started:
        return ("TL707", f"the training loop raised {text} {when} ({at})",
                f"{text} at {at}" + (f": `{h.user_source_line(line)}`" if line else ""))
    return None


def install_loop_observer(h: Harness, torch: Any) -> None:
    obs = LoopObserver(h, torch)
    h.state["loop_observer"] = obs
    original_backward = torch.Tensor.backward

    @functools.wraps(original_backward)
    def backward(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not h.is_busy():
            h.guarded("loop backward", obs.on_backward, self)
        return original_backward(self, *args, **kwargs)

    torch.Tensor.backward = backward
    # `loss.backward()` and `torch.autograd.backward(loss)`/`accelerator.backward(loss)` both end here.
    for owner in (torch.optim.Optimizer, torch.nn.Module):
        original_zero = owner.zero_grad

        def make(original_zero: Any) -> Any:
            @functools.wraps(original_zero)
            def zero_grad(self: Any, *args: Any, **kwargs: Any) -> Any:
                if not h.is_busy():
                    h.guarded("loop zero_grad", obs.on_zero_grad, self)
                return original_zero(self, *args, **kwargs)

            return zero_grad

        owner.zero_grad = make(original_zero)
    h.exception_mappers.append(lambda exc, line: loop_exception(h, exc, line))
    try:
        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
    except ImportError:  # very old torch
        return
    register_optimizer_step_pre_hook(lambda opt, a, k: h.guarded("loop step", obs.on_step_pre, opt, a, k))
    register_optimizer_step_post_hook(lambda opt, a, k: h.guarded("loop step", obs.on_step_post, opt, a, k))


# ---------------------------------------------------------------- --overfit N


@probe_check("TL706", framework="torch", path="trainer", order=700, phase="overfit", enabled=overfit_requested)
def overfit_trainer(h: Harness, st: Any) -> None:
    """--overfit N with a Trainer: N steps on the training batch at the optimizer's base rate."""
    n = h.config.overfit
    if st.inputs is None:
        return
    trainer = st.trainer
    model = trainer.model
    optimizer = st.optimizer or trainer.create_optimizer()
    rate = use_base_rate(optimizer)
    model.train()
    # Start from the loss at initialisation (before the optimizer stage's one step).
    losses: list[float] = [float(st.loss.detach().float().mean())] if st.loss is not None else []
    for _ in range(max(n - len(losses), 1)):
        optimizer.zero_grad(set_to_none=True)
        loss = trainer.compute_loss(model, dict(st.inputs))
        if loss.dim() > 0:
            loss = loss.mean()
        value = float(loss.detach())
        losses.append(value)
        if not math.isfinite(value):
            break
        loss.backward()
        optimizer.step()
    report_overfit(h, losses, optimizer, f"--overfit {n}: one batch", st.line, rate=rate + ", no scheduler")


def report_overfit(h: Harness, losses: list[float], optimizer: Any, what: str, line: Any, rate: str = "") -> None:
    """Classify the loss curve of N steps on one batch (the seeds' four failure shapes) and report
    TL706 unless it went down to near zero; the plot goes to --verbose details. On a random
    ``--tiny-model`` a curve that does not fall is not evidence against the script: a note."""
    from trainlint.probe.child import curve

    verdict, text = curve.report(losses)
    if not rate:
        rate = f"lr={max(float(g.get('lr', 0.0)) for g in optimizer.param_groups):g}"
    head = f"{what}, {type(optimizer).__name__} at {rate}"
    h.detail(head + "\n" + text)
    h.note(f"{head}: {verdict.kind}: {verdict.summary}")
    if verdict.ok:
        h.checked("TL706")
        return
    if h.config.tiny_model and verdict.kind in ("plateaus", "oscillates"):
        h.note(
            f"--overfit on a random --tiny-model: the loss {verdict.kind} ({verdict.summary}); a small randomly "
            "initialised model may not fit the batch, so this says nothing about the script: not reported as "
            "TL706 (run --overfit without --tiny-model to judge the pipeline)"
        )
        return
    h.finding(
        "TL706",
        f"the model cannot overfit one batch: the loss {verdict.kind} ({verdict.summary}) at {rate}; "
        f"likely: {verdict.causes}",
        evidence=f"{head}: loss curve {[round(x, 4) for x in losses[:40]]}\n{curve.plot(losses)}",
        line=line,
    )
