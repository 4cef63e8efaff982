"""Child-side plugin for hand-written PyTorch loops (see ../../PROTOCOL.md).

When the script imports torch, ``Tensor.backward``, ``zero_grad`` (of optimizers and modules) and the
global optimizer step hooks are observed for two real steps, then the script is stopped. The plugin
keeps the counters and lines in a :class:`~trainlint.probe.child.points.LoopState` and announces the
points ``loop.backward``, ``loop.step`` (before ``optimizer.step()``), ``loop.step_done`` (after it) and,
with ``--overfit N``, ``loop.overfit``; the checks live in the stages. ``loss.backward()``,
``torch.autograd.backward(loss)`` and ``accelerator.backward(loss)`` all reach ``Tensor.backward``.
"""

from __future__ import annotations

import functools
from typing import Any

from trainlint.probe.child import registry
from trainlint.probe.child.harness import Harness
from trainlint.probe.child.points import LOOP_BACKWARD, LOOP_OVERFIT, LOOP_STEP, LOOP_STEP_DONE, LoopState
from trainlint.probe.child.torch_util import optimizer_params, snapshot_all


def install(h: Harness) -> None:
    h.when_imported("torch", lambda m: _on_torch(h, m))


def _on_torch(h: Harness, torch: Any) -> None:
    h.versions(torch=getattr(torch, "__version__", "?"))
    loop = h.keep(LoopState())
    original_backward = torch.Tensor.backward

    @functools.wraps(original_backward)
    def backward(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not h.is_busy():
            h.guarded("loop backward", _on_backward, h, loop, self)
        return original_backward(self, *args, **kwargs)

    torch.Tensor.backward = backward
    for owner in (torch.optim.Optimizer, torch.nn.Module):
        original_zero = owner.zero_grad

        def make(original_zero: Any) -> Any:
            @functools.wraps(original_zero)
            def zero_grad(self: Any, *args: Any, **kwargs: Any) -> Any:
                if not h.is_busy():
                    h.guarded("loop zero_grad", _on_zero_grad, h, loop)
                return original_zero(self, *args, **kwargs)

            return zero_grad

        owner.zero_grad = make(original_zero)
    try:
        from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
    except ImportError:  # very old torch
        return
    register_optimizer_step_pre_hook(lambda opt, a, k: h.guarded("loop step", _on_step_pre, h, loop, opt, a, k))
    register_optimizer_step_post_hook(lambda opt, a, k: h.guarded("loop step", _on_step_post, h, loop, opt))


def _on_zero_grad(h: Harness, loop: LoopState) -> None:
    if h.is_busy() or h.ended():
        return
    # backward() ran since the last step and step() has not: this zero_grad() throws the gradients away.
    if loop.pending_backward and loop.zero_grad_after_backward is None:
        loop.zero_grad_after_backward = h.user_line()


def _on_backward(h: Harness, loop: LoopState, tensor: Any) -> None:
    if h.is_busy() or h.ended():
        return
    loop.backwards += 1
    loop.pending_backward = True
    loop.zero_grad_after_backward = None
    line = h.user_line()
    if loop.first_line is None:
        loop.first_line = line
    loop.backward_line = line
    loop.tensor, loop.line = tensor, line
    try:
        registry.announce(h, LOOP_BACKWARD, loop)
    finally:
        loop.tensor = None


def _on_step_pre(h: Harness, loop: LoopState, optimizer: Any, args: Any, kwargs: Any) -> None:
    if h.is_busy() or h.ended():
        return
    loop.snap = snapshot_all(optimizer_params(optimizer))
    # `optimizer.step(closure)` (LBFGS & co): the closure computes the gradients inside step().
    loop.closure = bool(args and callable(args[0])) or callable((kwargs or {}).get("closure"))
    loop.stepping, loop.line = optimizer, h.user_line()
    registry.announce(h, LOOP_STEP, loop)
    loop.zero_grad_after_backward = None
    loop.pending_backward = False


def _on_step_post(h: Harness, loop: LoopState, optimizer: Any) -> None:
    if h.is_busy() or h.ended():
        return
    loop.steps += 1
    loop.optimizer = loop.stepping = optimizer
    line = loop.line = h.user_line()
    registry.announce(h, LOOP_STEP_DONE, loop)
    loop.snap = []
    if loop.steps == 1:
        if h.config.overfit > 0:
            h.guarded("overfit capture", _capture_inputs, h, loop, optimizer)
        return
    # Second step: the loop checks are complete.
    if h.config.overfit > 0:
        h.phase("overfit")
        if loop.capture_handle is not None:
            loop.capture_handle.remove()
        with h.busy():
            registry.announce(h, LOOP_OVERFIT, loop)
    h.stop(
        "reached-training",
        f"stopped the hand-written loop after observing two optimizer steps ({h.where(line)})",
        line,
    )


def _capture_inputs(h: Harness, loop: LoopState, optimizer: Any) -> None:
    """--overfit N: record the model call of step 2 (its module and inputs), to replay it N times."""
    held = {id(p) for p in optimizer_params(optimizer)}
    for _, m in loop.frame_modules(h):
        if any(id(p) in held for p in m.parameters()):
            def pre_hook(module: Any, args: Any, kwargs: Any) -> None:
                if not h.is_busy() and loop.captured is None:
                    loop.captured = (module, args, dict(kwargs))

            loop.capture_handle = m.register_forward_pre_hook(pre_hook, with_kwargs=True)
            return
