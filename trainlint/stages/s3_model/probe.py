"""Runtime checks of the model stage (child side: standard library + frameworks only).

- the forward pass on one batch on the CPU (errors mapped: label index out of range → TL106/TL301,
  unexpected keyword → TL207);
- TL305: every parameter frozen; TL308: trainable parameters with no gradient or a non-finite one;
- ``--tiny-model``: ``from_pretrained`` builds a small randomly initialised model of the same config.
"""

from __future__ import annotations

import copy
import functools
import re
from typing import Any

from trainlint.probe.child.checks import probe_check
from trainlint.probe.child.torch_util import classes_of, error_text, no_loss_message, unwrap_model
from trainlint.probe.child.harness import Harness


@probe_check("TL207", "TL106", "TL301", "TL707", framework="torch", path="trainer", phase="model")
def check_forward(h: Harness, st: Any) -> None:
    trainer = st.trainer
    if st.batch is None:
        return
    model = trainer.model
    model.train()
    inputs = trainer._prepare_inputs(dict(st.batch)) if hasattr(trainer, "_prepare_inputs") else dict(st.batch)
    st.inputs = inputs
    try:
        loss, outputs = trainer.compute_loss(model, dict(inputs), return_outputs=True)
    except Exception as exc:  # noqa: BLE001
        _forward_error(h, st, exc)
        st.stop = True
        return
    st.loss = loss
    st.outputs = outputs
    h.checked("TL207")
    h.detail(f"forward on one batch: loss {float(loss.detach().float().mean()):.4f}")


def label_error(exc: BaseException, labels: Any, model: Any) -> tuple[str, str] | None:
    """(message, evidence) of a forward/loss error caused by a label outside the head's range, else None.
    The number of classes is read from the head itself (its ``out_features``) and a disagreeing
    ``config.num_labels`` is named."""
    m = re.search(r"Target (-?\d+) is out of bounds", str(exc))
    if not (m or isinstance(exc, IndexError) and "out of bounds" in str(exc)):
        return None
    n, source, mismatch = classes_of(model)
    shown = labels.reshape(-1).tolist()[:16] if labels is not None and hasattr(labels, "reshape") else []
    label = m.group(1) if m else "?"
    message = f"label {label} is outside [0, {n}) of the classification head" + (
        f": {mismatch}" if mismatch else f" ({source})")
    evidence = f"batch labels {shown}; {source}" + (f"; {mismatch}" if mismatch else "") + f"; {error_text(exc)}"
    return message, evidence


def _forward_error(h: Harness, st: Any, exc: Exception) -> None:
    text = error_text(exc)
    model = unwrap_model(st.trainer.model)
    labels = st.inputs.get("labels") if st.inputs else None
    got = label_error(exc, labels, model)
    if got is not None:
        message, evidence = got
        h.finding("TL106", f"the forward pass fails on one batch: {message}", evidence=evidence, line=st.line,
                  confirms=("TL301",))
        return
    m = re.search(r"unexpected keyword argument '([^']+)'", str(exc))
    if isinstance(exc, TypeError) and m:
        h.finding(
            "TL207",
            f"batch key `{m.group(1)}` is not an argument of {type(model).__name__}.forward",
            evidence=f"batch keys {list(st.inputs or {})}; {text}",
            line=st.line,
        )
        return
    if "did not return a loss" in str(exc):
        keys = list(st.inputs or {})
        h.finding("TL707", no_loss_message(keys), evidence=f"batch keys {keys}; {text}", line=st.line)
        return
    line = h.user_line(exc.__traceback__) or st.line
    h.finding(
        "TL707",
        f"the forward pass fails on one training batch (CPU): {text}",
        evidence=text + (f" at {h.where(line)}" if line != st.line else ""),
        line=line,
    )


@probe_check("TL305", "TL308", "TL707", framework="torch", path="trainer", order=450, phase="gradients")
def check_gradients(h: Harness, st: Any) -> None:
    import torch

    if st.loss is None:
        return
    model = st.trainer.model
    params = list(model.named_parameters())
    trainable = [(n, p) for n, p in params if p.requires_grad]
    if not trainable:
        h.finding(
            "TL305",
            f"no trainable parameters: all {len(params)} parameters of {type(unwrap_model(model)).__name__} "
            "have requires_grad=False",
            evidence=f"0 of {len(params)} parameters ({sum(p.numel() for _, p in params)} values) require grad",
            line=st.line,
        )
        st.stop = True
        return
    h.checked("TL305")
    model.zero_grad(set_to_none=True)
    loss = st.loss
    if loss.dim() > 0:
        loss = loss.mean()
    if not loss.requires_grad:
        h.finding(
            "TL308",
            "the loss does not depend on any trainable parameter (no graph to back-propagate)",
            evidence=f"loss {float(loss):.4f} has requires_grad=False; {len(trainable)} trainable parameters",
            line=st.line,
        )
        st.stop = True
        return
    try:
        loss.backward()
    except Exception as exc:  # noqa: BLE001  # training would fail on exactly this
        line = h.user_line(exc.__traceback__) or st.line
        h.finding("TL707", f"loss.backward() fails on one training batch: {error_text(exc)}",
                  evidence=f"{error_text(exc)} at {h.where(line)}", line=line)
        st.stop = True
        return
    no_grad = [n for n, p in trainable if p.grad is None]
    bad = [n for n, p in trainable if p.grad is not None and not torch.isfinite(p.grad).all()]
    if no_grad or bad:
        parts = []
        if no_grad:
            parts.append(f"{len(no_grad)} of {len(trainable)} trainable parameters got no gradient: {no_grad[:5]}")
        if bad:
            parts.append(f"{len(bad)} got a non-finite gradient: {bad[:5]}")
        h.finding(
            "TL308",
            "; ".join(parts),
            evidence="after loss.backward() on one batch: " + "; ".join(parts),
            line=st.line,
        )
    else:
        h.checked("TL308")
    norm = torch.sqrt(sum((p.grad.float() ** 2).sum() for _, p in trainable if p.grad is not None))
    h.detail(f"gradients: {len(trainable)} trainable parameters, global grad norm {float(norm):.4g}")


# ---------------------------------------------------------------- --tiny-model

_LAYER_ATTRS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers", "encoder_layers", "decoder_layers")


def _shrink(config: Any, width: bool) -> Any:
    config = copy.deepcopy(config)
    for name in _LAYER_ATTRS:
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 2:
            setattr(config, name, 2)
    if width:
        if isinstance(getattr(config, "hidden_size", None), int) and getattr(config, "hidden_size") > 64:
            config.hidden_size = 64
            if isinstance(getattr(config, "num_attention_heads", None), int):
                config.num_attention_heads = 2
            if isinstance(getattr(config, "num_key_value_heads", None), int):
                config.num_key_value_heads = 1
            if isinstance(getattr(config, "head_dim", None), int):
                config.head_dim = 32
            if isinstance(getattr(config, "intermediate_size", None), int):
                config.intermediate_size = 128
        for name, small in (("n_embd", 64), ("d_model", 64), ("dim", 64)):
            if isinstance(getattr(config, name, None), int) and getattr(config, name) > small:
                setattr(config, name, small)
        for name in ("n_head", "encoder_attention_heads", "decoder_attention_heads", "n_heads"):
            if isinstance(getattr(config, name, None), int):
                setattr(config, name, 2)
        for name in ("n_inner", "hidden_dim", "encoder_ffn_dim", "decoder_ffn_dim", "d_ff"):
            if isinstance(getattr(config, name, None), int):
                setattr(config, name, 128)
    return config


def install_tiny_model(h: Harness, modeling_utils: Any) -> None:
    PreTrainedModel = modeling_utils.PreTrainedModel
    original = PreTrainedModel.from_pretrained.__func__
    config_keys = {"config", "num_labels", "id2label", "label2id", "problem_type", "pad_token_id", "output_attentions"}

    @functools.wraps(original)
    def from_pretrained(cls: Any, pretrained_model_name_or_path: Any, *args: Any, **kwargs: Any) -> Any:
        if h.is_busy():
            return original(cls, pretrained_model_name_or_path, *args, **kwargs)
        from transformers import AutoConfig

        config = kwargs.get("config")
        try:
            if config is None or isinstance(config, str):
                extra = {k: v for k, v in kwargs.items() if k in config_keys and k != "config"}
                config = AutoConfig.from_pretrained(config or pretrained_model_name_or_path, **extra)
            else:
                for k, v in kwargs.items():
                    if k in config_keys and k != "config":
                        setattr(config, k, v)
        except Exception:  # noqa: BLE001  # no config available: let the real loader explain
            return original(cls, pretrained_model_name_or_path, *args, **kwargs)
        model = None
        for width in (True, False):
            try:
                small = _shrink(config, width)
                with h.busy():
                    model = cls._from_config(small)
                break
            except Exception:  # noqa: BLE001
                continue
        if model is None:
            return original(cls, pretrained_model_name_or_path, *args, **kwargs)
        model = model.float()
        n = sum(p.numel() for p in model.parameters())
        h.note(
            f"--tiny-model: {cls.__name__}.from_pretrained({pretrained_model_name_or_path!r}) replaced by a random "
            f"{n / 1e6:.2f}M-parameter model of the same config (num_labels={getattr(small, 'num_labels', '?')})"
        )
        return model

    PreTrainedModel.from_pretrained = classmethod(from_pretrained)


__all__ = ["check_forward", "check_gradients", "install_tiny_model"]
