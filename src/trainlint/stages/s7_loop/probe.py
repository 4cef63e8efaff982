"""Runtime checks of the training-loop stage (child side: standard library + frameworks only).

Hand-written PyTorch loops are observed through ``Tensor.backward`` and the global optimizer step
hooks for two real steps, then the script is stopped:

- TL701: the gradients of step 1 are still in ``p.grad`` when step 2's ``backward()`` runs (no
  ``zero_grad``): they accumulate;
- TL702: a trainable model is in eval mode (``model.training`` False) during a training step;
- with the optimizer stage helpers: effective lr, TL504, TL506.

``--overfit N`` (Trainer): N steps on the same batch, the loss curve as a small terminal plot,
classified as pass / goes up / explodes / oscillates / plateaus → TL706 when not pass.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from trainlint.stages.s5_optimizer import probe as s5

_MODE_LAYERS = ("Dropout", "BatchNorm", "InstanceNorm", "GroupNorm")


class LoopObserver:
    def __init__(self, h: Any, torch: Any) -> None:
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

    # -- hooks
    def on_backward(self, tensor: Any) -> None:
        h = self.h
        if h.is_busy() or h.ended():
            return
        self.backwards += 1
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
            for p in s5.optimizer_params(self.optimizer):
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
        self.snap = s5.snapshot(s5.optimizer_params(optimizer))
        if self.steps == 0:
            self._check_first_step(optimizer)
            self._check_mode(optimizer)

    def _check_mode(self, optimizer: Any) -> None:
        """TL702: a model the optimizer trains is in eval mode at the training step (a frozen teacher
        in eval mode, whose parameters the optimizer does not hold, is fine)."""
        h = self.h
        held = {id(p) for p in s5.optimizer_params(optimizer)}
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

    def _check_first_step(self, optimizer: Any) -> None:
        h = self.h
        line = h.user_line()
        held = s5.optimizer_params(optimizer)
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

    def on_step_post(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        h = self.h
        if h.is_busy() or h.ended():
            return
        self.steps += 1
        self.optimizer = optimizer
        line = h.user_line()
        lr = max(float(g.get("lr", 0.0)) for g in optimizer.param_groups)
        initial = max(float(g.get("initial_lr", 0.0)) for g in optimizer.param_groups)
        if self.steps == 1:
            s5.report_lr(h, optimizer, line, user_built=True)
        if self.snap and not getattr(self, "reported_504", False) and self.steps <= 2 and not getattr(self, "moved_checked", False):
            if s5.moved(self.snap):
                h.checked("TL506")
                self.moved_checked = True
            elif self.steps == 1 and lr == 0 and initial > 0:
                # A warmup scheduler's first rate is 0: judge the second step instead.
                h.note(f"the learning-rate scheduler gives lr 0 at the first step (initial lr {initial:g})")
            else:
                self.moved_checked = True
                h.finding(
                    "TL506",
                    f"one optimizer step ({type(optimizer).__name__}, lr={lr:g}) left the weights unchanged",
                    evidence=f"{len(self.snap)} parameters with gradients compared before/after step(): all equal",
                    line=line,
                )
        self.snap = []
        if self.steps == 1:
            if int(h.options.get("overfit") or 0) > 0:
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
        overfit = int(h.options.get("overfit") or 0)
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
        held = {id(p) for p in s5.optimizer_params(optimizer)}
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
            h.note("--overfit: the model call of the training step was not seen; nothing replayed")
            return
        module, args, kwargs = self.captured
        module.train()
        losses: list[float] = []
        for _ in range(n):
            optimizer.zero_grad(set_to_none=True)
            out = module(*args, **kwargs)
            loss = getattr(out, "loss", None)
            if loss is None and isinstance(out, dict):
                loss = out.get("loss")
            if loss is None:
                h.note("--overfit: the model does not return its loss (the loop computes it outside): not replayed")
                return
            loss = loss.mean() if loss.dim() > 0 else loss
            value = float(loss.detach())
            losses.append(value)
            if not math.isfinite(value):
                break
            loss.backward()
            optimizer.step()
        report_overfit(h, losses, optimizer, f"--overfit {n}: the loop's batch of step 2", line)


def install_loop_observer(h: Any, torch: Any) -> None:
    obs = LoopObserver(h, torch)
    h.state["loop_observer"] = obs
    original_backward = torch.Tensor.backward

    @functools.wraps(original_backward)
    def backward(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not h.is_busy():
            h.guarded("loop backward", obs.on_backward, self)
        return original_backward(self, *args, **kwargs)

    torch.Tensor.backward = backward
    try:
        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
    except ImportError:  # very old torch
        return
    register_optimizer_step_pre_hook(lambda opt, a, k: h.guarded("loop step", obs.on_step_pre, opt, a, k))
    register_optimizer_step_post_hook(lambda opt, a, k: h.guarded("loop step", obs.on_step_post, opt, a, k))


# ---------------------------------------------------------------- --overfit N


def overfit_trainer(h: Any, st: Any, n: int) -> None:

    if st.inputs is None:
        return
    trainer = st.trainer
    model = trainer.model
    optimizer = st.optimizer or trainer.create_optimizer()
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
    report_overfit(h, losses, optimizer, f"--overfit {n}: one batch", st.line, suffix=", no scheduler")


def report_overfit(h: Any, losses: list[float], optimizer: Any, what: str, line: Any, suffix: str = "") -> None:
    """Classify the loss curve of N steps on one batch (the seeds' four failure shapes) and report
    TL706 unless it went down to near zero; the plot goes to --verbose details."""
    from trainlint.probe import curve

    verdict, text = curve.report(losses)
    lr = max(float(g.get("lr", 0.0)) for g in optimizer.param_groups)
    head = f"{what}, {type(optimizer).__name__} lr={lr:g}{suffix}"
    h.detail(head + "\n" + text)
    h.note(f"{head}: {verdict.kind}: {verdict.summary}")
    if verdict.ok:
        h.checked("TL706")
        return
    h.finding(
        "TL706",
        f"the model cannot overfit one batch: the loss {verdict.kind} ({verdict.summary}); likely: {verdict.causes}",
        evidence=f"loss curve {[round(x, 4) for x in losses[:40]]}\n{curve.plot(losses)}",
        line=line,
    )
