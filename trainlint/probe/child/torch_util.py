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
