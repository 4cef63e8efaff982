"""Helpers shared by the PyTorch probe checks of several stages (``stages/s*/probe.py``). Child side:
standard library at import; torch is imported lazily inside the functions (the caller already has)."""

from __future__ import annotations

import inspect
from collections import Counter
from typing import Any


def unwrap_model(model: Any) -> Any:
    """The model inside DataParallel / DistributedDataParallel / accelerate wrappers (``.module``)."""
    inner = model
    for _ in range(4):
        nxt = getattr(inner, "module", None)
        if nxt is None or nxt is inner:
            break
        inner = nxt
    return inner


def forward_arguments(model: Any) -> tuple[set[str], bool]:
    """Names the model's ``forward`` accepts, and whether it accepts any keyword (**kwargs untyped)."""
    model = unwrap_model(model)
    try:
        sig = inspect.signature(model.forward)
    except (TypeError, ValueError):
        return set(), True
    names: set[str] = set()
    any_kw = False
    for p in sig.parameters.values():
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            ann = p.annotation
            keys = getattr(ann, "__annotations__", None)
            if keys is None:
                # `**kwargs: Unpack[TransformersKwargs]` shows the TypedDict in __args__.
                for arg in getattr(ann, "__args__", ()) or ():
                    keys = getattr(arg, "__annotations__", None)
                    if keys is not None:
                        break
            if keys is None:
                any_kw = True
            else:
                names.update(keys)
        elif p.kind is not inspect.Parameter.VAR_POSITIONAL:
            names.add(p.name)
    return names, any_kw


def num(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return f"{v:.1f}"
    return str(v)


def format_counts(counts: Counter[Any], limit: int = 12) -> str:
    """``0×120, 1×98, 2×110``: label value counts in one line."""
    items = sorted(counts.items(), key=lambda kv: (str(type(kv[0])), kv[0]))
    text = ", ".join(f"{num(v)}×{c}" for v, c in items[:limit])
    if len(items) > limit:
        text += f", … ({len(items)} values)"
    return text


def head_size(model: Any) -> tuple[int | None, str]:
    """The number of outputs the model's head really has: ``out_features`` of the last ``nn.Linear``
    registered in the model (``classifier``, ``score``, ``classifier.out_proj``), and its name."""
    import torch

    last: tuple[int | None, str] = (None, "")
    for name, module in unwrap_model(model).named_modules():
        if isinstance(module, torch.nn.Linear):
            last = (int(module.out_features), name)
    return last


def classes_of(model: Any) -> tuple[int | None, str, str]:
    """(number of classes, where it was read, mismatch sentence or ""). The head's real output size wins
    over ``config.num_labels`` when they differ (e.g. ``id2label`` reassigned after the head was built:
    the config then says 3 while the layer has 2 outputs)."""
    config = getattr(unwrap_model(model), "config", None)
    num_labels = getattr(config, "num_labels", None)
    width, layer = head_size(model)
    leaf = layer.rsplit(".", 1)[-1]
    if not any(w in leaf for w in ("classifier", "score", "out_proj", "head")):
        width = None  # the last Linear is not a classification head: trust the config
    if width is None:
        return num_labels, f"model.config.num_labels = {num_labels}", ""
    if num_labels is None or num_labels == width:
        return width, f"the head `{layer}` has {width} outputs" + (
            f" (model.config.num_labels = {num_labels})" if num_labels is not None else ""), ""
    mismatch = (
        f"model.config.num_labels = {num_labels} but the head `{layer}` has {width} outputs: the config was "
        "changed after the model was built (e.g. id2label/label2id/num_labels reassigned); pass num_labels "
        "(or id2label) to from_pretrained instead"
    )
    return width, f"the head `{layer}` has {width} outputs", mismatch


def optimizer_params(optimizer: Any) -> list[Any]:
    return [p for g in optimizer.param_groups for p in g["params"]]


def snapshot(params: list[Any], limit: int = 16) -> list[Any]:
    """Copies of (at most ``limit``) trainable parameters that have a gradient."""
    chosen = [p for p in params if p.grad is not None and p.requires_grad][:limit]
    return [(p, p.detach().clone()) for p in chosen]


def snapshot_all(params: list[Any], limit: int = 64) -> list[Any]:
    """Copies of (at most ``limit``) trainable parameters, gradient or not."""
    chosen = [p for p in params if p.requires_grad][:limit]
    return [(p, p.detach().clone()) for p in chosen]


def moved(snap: list[Any]) -> bool:
    import torch

    return any(not torch.equal(before, p.detach()) for p, before in snap)


def base_lrs(optimizer: Any) -> list[float]:
    """The configured (peak) rate of each param group: a scheduler keeps it as ``initial_lr``."""
    return [float(g.get("initial_lr", g.get("lr", 0.0))) for g in optimizer.param_groups]


def made_at(optimizer: Any) -> int | None:
    """The script's line that made ``optimizer`` (recorded by the loop plugin), if the script made it."""
    line = getattr(optimizer, "__dict__", {}).get("_trainlint_line")
    return line if isinstance(line, int) else None


def use_base_rate(optimizer: Any) -> str:
    """Set every param group to its base (peak) rate for --overfit, and say which rate that is: the
    schedule's current value (warmup near 0, a finished decay at 0) says nothing about the pipeline."""
    current = getattr(optimizer, "_trainlint_scheduled_lrs", None)  # an earlier call changed them already
    if current is None:
        current = [float(g.get("lr", 0.0)) for g in optimizer.param_groups]
        try:
            optimizer._trainlint_scheduled_lrs = current
        except Exception:  # noqa: BLE001
            pass
    bases = base_lrs(optimizer)
    for g, base in zip(optimizer.param_groups, bases):
        g["lr"] = base
    shown = ", ".join(sorted({f"{b:g}" for b in bases}))
    if bases != current:
        now = ", ".join(sorted({f"{c:g}" for c in current}))
        return f"the optimizer's base rate lr={shown} (the scheduler's current value {now} is not used)"
    return f"lr={shown}"


def is_pretrained(model: Any) -> bool:
    """A transformers model loaded with ``from_pretrained`` (its config names where it came from)."""
    model = unwrap_model(model)
    config = getattr(model, "config", None)
    mod = type(model).__module__ or ""
    return bool(getattr(config, "_name_or_path", "") or getattr(config, "name_or_path", "")) and (
        mod.startswith("transformers.") or any((k.__module__ or "").startswith("transformers.") for k in type(model).__mro__)
    )


def first_batch(loader: Any) -> tuple[Any, str | None, list[Any]]:
    """Form one batch; on failure return (None, error, the features the collator got)."""
    seen: list[Any] = []
    # accelerate's DataLoaderShard/DataLoaderAdapter iterate an inner `base_dataloader`.
    target = getattr(loader, "base_dataloader", None) or loader
    original_collate = getattr(target, "collate_fn", None)

    def recording(features: list[Any]) -> Any:
        seen[:] = list(features)
        return original_collate(features)  # type: ignore[misc]  # set when this is installed

    if original_collate is not None:
        try:
            target.collate_fn = recording
        except Exception:  # noqa: BLE001  # some loaders freeze their attributes after __init__
            pass
    try:
        batch = next(iter(loader))
        return batch, None, seen
    except StopIteration:
        return None, "the dataloader is empty", seen
    except Exception as exc:  # noqa: BLE001
        msg = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        return None, msg, seen
    finally:
        if original_collate is not None:
            try:
                target.collate_fn = original_collate
            except Exception:  # noqa: BLE001
                pass


def no_loss_message(keys: list[Any]) -> str:
    return (
        f"the model returned no loss: the batch has no labels (batch keys {keys}); the label column was "
        "dropped or not named `labels`/`label` (rename it, keep it in set_format/remove_columns)"
    )


def error_text(exc: BaseException) -> str:
    text = str(exc)
    first = text.splitlines()[0] if text else ""
    if len(first) > 300:
        first = first[:297] + "..."
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def collator_name(collator: Any) -> str:
    if collator is None:
        return "None"
    name: Any = type(collator).__name__
    if name in ("function", "method", "partial"):
        name = getattr(collator, "__name__", None) or getattr(getattr(collator, "func", None), "__name__", name)
    return str(name)


def _floats(value: Any, out: list[Any]) -> list[Any]:
    """The floating-point tensors of a model's output (a tensor, a ModelOutput, a dict, a tuple)."""
    import torch

    if isinstance(value, torch.Tensor):
        if value.is_floating_point():
            out.append(value.detach())
    elif isinstance(value, dict):
        for v in value.values():
            _floats(v, out)
    elif isinstance(value, (tuple, list)):
        for v in value:
            _floats(v, out)
    return out


def eval_twice(h: Any, model: Any, call: Any) -> tuple[float, list[tuple[str, int | None]]] | None:
    """``call()`` (a forward of ``model``) twice with the model in eval mode and no gradient, on the same
    inputs: the largest difference between the two outputs (0.0: deterministic), and the random
    dropouts that ran in training form during the second call (``F.dropout(..., training=True)``,
    attention with ``dropout_p > 0``), each with the line of the user's script that called it. None when
    the forward fails. The model's mode and the random state are restored."""
    import torch
    from torch.overrides import TorchFunctionMode

    F = torch.nn.functional
    dropouts = {F.dropout, F.dropout1d, F.dropout2d, F.dropout3d, F.alpha_dropout, F.feature_alpha_dropout,
                torch.dropout}
    attention = getattr(F, "scaled_dot_product_attention", None)
    seen: list[tuple[str, int | None]] = []

    class Random(TorchFunctionMode):  # type: ignore[misc]  # torch is untyped here
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            kwargs = kwargs or {}
            name = getattr(func, "__name__", str(func))
            if func in dropouts:
                training = kwargs.get("training", kwargs.get("train", args[2] if len(args) > 2 else None))
                if training is None or training:
                    seen.append((name, h.user_line()))
            elif func is attention and float(kwargs.get("dropout_p", args[4] if len(args) > 4 else 0.0) or 0.0) > 0:
                seen.append((f"{name}(dropout_p={kwargs.get('dropout_p', args[4] if len(args) > 4 else '?')})",
                             h.user_line()))
            return func(*args, **kwargs)

    modes = [(m, m.training) for m in model.modules()]
    try:
        model.eval()
        with torch.random.fork_rng(devices=[]), torch.no_grad():
            try:
                first = _floats(call(), [])
                with Random():
                    second = _floats(call(), [])
            except Exception:  # noqa: BLE001  # the forward itself fails: other checks say why
                return None
    finally:
        for m, training in modes:
            m.training = training
    diff = 0.0
    for a, b in zip(first, second):
        if a.shape != b.shape:
            return float("inf"), seen
        if a.numel():
            diff = max(diff, float((a.float() - b.float()).abs().max()))
    return diff, seen
