"""Runtime checks of the training-loop stage (child side: standard library + frameworks only).

A hand-written PyTorch loop is observed for two real steps (the points ``loop.backward``, ``loop.step``,
``loop.step_done`` announced by ``probe/child/frameworks/torch_loop.py``), then the script is stopped:

- TL701: the gradients of step 1 are still in ``p.grad`` when step 2's ``backward()`` runs (no
  ``zero_grad``): they accumulate;
- TL702: a trainable model is in eval mode (``model.training`` False) during a training step.

(The optimizer stage checks the steps themselves: TL504, TL506, TL308 and the learning rate; the loss
stage the first loss.)

A script error before training is classified at ``script.exception``: a crash inside the loop (after the
first ``backward()``/``step()``, or in the ``DataLoader``) by :func:`loop_exception`, with its cause and
"at step N"; any other error is TL707 at the user's line (:func:`script_error`, the last classifier).

``--overfit N``: N steps on the same batch at the optimizer's base (peak) learning rate, the loss
curve as a small terminal plot, classified as pass / goes up / explodes / oscillates / plateaus →
TL706 when not pass (a plateau of a random ``--tiny-model`` is a note: such a model may not fit).

With CUDA emulated on the CPU, TL703 (GPU memory growth) cannot be confirmed: an incomplete check.
"""

from __future__ import annotations

import math
import re
import traceback
from typing import Any

from trainlint.probe.child import curve
from trainlint.probe.child.harness import Harness
from trainlint.probe.child.points import (
    CUDA_EMULATED,
    LOOP_BACKWARD,
    LOOP_OVERFIT,
    LOOP_STEP,
    LOOP_STEP_DONE,
    SCRIPT_EXCEPTION,
    TRAINER_OVERFIT,
    Classification,
    DeviceEmulation,
    LoopState,
    ScriptError,
    TrainerState,
)
from trainlint.probe.child.registry import check
from trainlint.probe.child.torch_util import (
    collator_name,
    error_text,
    no_loss_message,
    optimizer_params,
    use_base_rate,
)
from trainlint.stages.s2_batching.probe import collation_failure_text

_MODE_LAYERS = ("Dropout", "BatchNorm", "InstanceNorm", "GroupNorm")


# ---------------------------------------------------------------- a hand-written loop's steps


@check(LOOP_BACKWARD)
def record_stale_gradients(h: Harness, loop: LoopState) -> None:
    """At the first backward() after step 1: do parameters still hold step 1's gradients? (TL701 is
    reported at step 2, see :func:`check_loop_after_two_steps`.)"""
    line = loop.line
    if loop.steps >= 1 and not loop.after_step_checked and loop.optimizer is not None:
        loop.after_step_checked = True
        stale = []
        for p in optimizer_params(loop.optimizer):
            g = p.grad
            if g is not None and bool((g != 0).any()):
                stale.append(float(g.float().norm()))
        if stale:
            loop.stale = (
                f"{len(stale)} parameters still hold step 1's gradients (norm {max(stale):.3g}) "
                f"when backward() runs again at {h.where(line)}"
            )
            loop.stale_line = line


@check(LOOP_STEP, "TL702")
def check_train_mode(h: Harness, loop: LoopState) -> None:
    if loop.steps == 0:
        _check_mode(h, loop, loop.stepping)


def _check_mode(h: Harness, loop: LoopState, optimizer: Any) -> None:
    """TL702: a model the optimizer trains is in eval mode at the training step (a frozen teacher
    in eval mode, whose parameters the optimizer does not hold, is fine)."""
    held = {id(p) for p in optimizer_params(optimizer)}
    for name, m in loop.frame_modules(h):
        if not any(id(p) in held for p in m.parameters()):
            continue
        mode_layers = [type(x).__name__ for x in m.modules() if type(x).__name__.startswith(_MODE_LAYERS)]
        eval_layers = [x for x in m.modules() if type(x).__name__.startswith(_MODE_LAYERS) and not x.training]
        if not m.training or (mode_layers and len(eval_layers) == len(mode_layers)):
            if not mode_layers:
                continue  # no dropout/normalisation layer: the mode changes nothing
            line = loop.backward_line or h.user_line()
            loop.eval_mode_reported = True
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


@check(LOOP_STEP_DONE, "TL701", "TL702")
def check_loop_after_two_steps(h: Harness, loop: LoopState) -> None:
    """After the second step: the gradients of step 1 were cleared (TL701), no model ran in eval mode
    (TL702)."""
    if loop.steps != 2:
        return
    if loop.stale:
        h.finding(
            "TL701",
            "gradients accumulate across steps: no zero_grad() between optimizer.step() and the next backward()",
            evidence=loop.stale,
            line=loop.stale_line or loop.line,
        )
    elif loop.after_step_checked:
        h.checked("TL701")
    if not loop.eval_mode_reported:
        h.checked("TL702")


@check(LOOP_OVERFIT, "TL706")
def overfit_loop(h: Harness, loop: LoopState) -> None:
    """--overfit N in a hand-written loop: the model call of step 2 replayed N times on its inputs."""
    optimizer, n, line = loop.optimizer, h.config.overfit, loop.line
    if loop.captured is None:
        h.incomplete("overfit", "the model call of the training step was not seen: nothing to replay",
                     codes=("TL706",))
        return
    module, args, kwargs = loop.captured
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
            h.incomplete("overfit", "the model does not return its loss (the loop computes it outside): "
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


def _collation_frame(exc: BaseException) -> tuple[Any, list[Any]] | None:
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
        value: Any = frame.f_locals.get(name)
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


def loop_exception(h: Harness, loop: LoopState, exc: BaseException, line: int | None) -> Classification | None:
    """(code, message, evidence[, confirms]) for an exception raised in a hand-written loop: a DataLoader
    that cannot form a batch (TL201/TL202 with the lengths), a loss that is None (the batch has no
    labels), a loss with no graph (TL308/TL305); "at step N" once the loop has started."""
    started = loop.steps > 0 or loop.backwards > 0
    step = loop.steps + 1
    when = f"at step {step}" if started else "in the training loop"
    at = h.where(line)
    text = error_text(exc)
    collation = _collation_frame(exc)
    if collation is not None:
        collate_fn, samples = collation
        main_input = "input_ids"
        first: Any = samples[0] if samples else None
        if hasattr(first, "keys") and "input_ids" not in first:
            lists = [k for k, v in first.items() if isinstance(v, (list, tuple)) or hasattr(v, "shape")]
            main_input = lists[0] if lists else main_input
        where = f"the DataLoader {when}" if started else "the DataLoader's first batch"
        return Classification(*collation_failure_text(text, samples, main_input, collator_name(collate_fn), where,
                                                      trainer=False))
    msg = str(exc)
    if isinstance(exc, AttributeError) and "'NoneType' object has no attribute" in msg and re.search(
            r"attribute '(backward|item|mean|detach)'", msg):
        keys = _batch_keys(h, exc)
        if keys is not None:
            return Classification("TL707", f"{when}: " + no_loss_message(keys),
                    f"{text} at {at}: `{h.user_source_line(line)}`; batch keys {keys}")
    if isinstance(exc, TypeError) and re.search(r"unsupported operand type\(s\) for .*'NoneType'", msg):
        # `loss = outputs.loss / accumulation_steps` (transformers' no_trainer examples) with loss None:
        # the arithmetic fails before backward(); only when the line is about the loss and the batch
        # has no label column.
        keys = _batch_keys(h, exc)
        source = h.user_source_line(line) if line else ""
        if keys is not None and "loss" in source and not any("label" in k.lower() for k in keys):
            return Classification("TL707", f"{when}: " + no_loss_message(keys),
                                  f"{text} at {at}: `{source}`; batch keys {keys}")
    if isinstance(exc, RuntimeError) and "does not require grad and does not have a grad_fn" in msg:
        frozen = _frozen_models(h, exc)
        if frozen:
            return Classification(
                "TL305",
                f"{when}: loss.backward() fails: no parameter of {', '.join(frozen[:3])} requires grad (the model "
                "is frozen)",
                f"{text} at {at}: `{h.user_source_line(line)}`; requires_grad=False on every parameter",
            )
        return Classification(
            "TL308",
            f"{when}: loss.backward() fails: the loss does not depend on any trainable parameter (a frozen "
            "model, a detached loss, or a loss computed under torch.no_grad())",
            f"{text} at {at}: `{h.user_source_line(line)}`",
        )
    if started:
        return Classification("TL707", f"the training loop raised {text} {when} ({at})",
                              f"{text} at {at}" + (f": `{h.user_source_line(line)}`" if line else ""))
    return None


@check(SCRIPT_EXCEPTION, "TL201", "TL202", "TL305", "TL308", "TL707", order=900)
def classify_loop_exception(h: Harness, err: ScriptError) -> Classification | None:
    """An exception of a hand-written PyTorch loop (after the API-break classifiers of stage 8)."""
    loop = h.kept(LoopState)
    return loop_exception(h, loop, err.exc, err.line) if loop is not None else None


@check(SCRIPT_EXCEPTION, "TL707", order=1000)
def script_error(h: Harness, err: ScriptError) -> Classification:
    """Any other exception before training: TL707 at the user's line (the last classifier)."""
    exc, line = err.exc, err.line
    text = f"{type(exc).__name__}: {exc}".strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    if len(first) > 300:
        first = first[:297] + "..."
    return Classification(
        "TL707",
        f"the script raised {first} at {h.where(line)} before training",
        f"{first} at {h.where(line)}" + (f": `{h.user_source_line(line)}`" if line else ""),
    )


@check(CUDA_EMULATED, cannot_confirm=("TL703",))
def gpu_memory_not_seen_on_cpu(h: Harness, emulated: DeviceEmulation) -> None:
    """CUDA emulated on the CPU: GPU memory growth cannot be confirmed."""
    if "TL703" in h.config.static_codes:
        h.incomplete("GPU memory", "CUDA emulated on CPU: GPU memory growth could not be confirmed on CPU",
                     ["TL703"])


# ---------------------------------------------------------------- --overfit N


@check(TRAINER_OVERFIT, "TL706", phase="overfit")
def overfit_trainer(h: Harness, st: TrainerState) -> None:
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
