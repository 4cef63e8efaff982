"""Child-side plugin for the transformers ``Trainer`` (see ../../PROTOCOL.md).

Post-import hooks only: nothing here imports transformers before the script does.

- ``transformers.training_args``: ``TrainingArguments.__post_init__`` redirects ``output_dir`` into the
  probe's temporary directory, turns hub pushes and reporting integrations off.
- ``transformers.trainer``: ``Trainer.train`` / ``evaluate`` / ``predict`` are intercepted: the points
  ``trainer.reached``, ``trainer.batch``, ``trainer.eval_batch`` (and ``trainer.overfit`` with
  ``--overfit``) are announced on a :class:`~trainlint.probe.child.points.TrainerState`, then the
  script is stopped.
- ``transformers.modeling_utils``: with ``--tiny-model``, ``from_pretrained`` builds a small randomly
  initialised model of the same config.
"""

from __future__ import annotations

import copy
import functools
import os
from typing import Any

from trainlint.probe.child import registry
from trainlint.probe.child.harness import Harness
from trainlint.probe.child.points import (
    TRAINER_BATCH,
    TRAINER_EVAL_BATCH,
    TRAINER_OVERFIT,
    TRAINER_REACHED,
    DatasetRecord,
    TrainerState,
)


def install(h: Harness) -> None:
    h.when_imported("transformers", lambda m: h.versions(transformers=getattr(m, "__version__", "?")))
    h.when_imported("transformers.training_args", lambda m: _on_training_args(h, m))
    h.when_imported("transformers.trainer", lambda m: _on_trainer(h, m))
    if h.config.tiny_model:
        h.when_imported("transformers.modeling_utils", lambda m: install_tiny_model(h, m))


def _on_training_args(h: Harness, mod: Any) -> None:
    TrainingArguments = mod.TrainingArguments
    original = TrainingArguments.__post_init__
    out_root = os.path.join(h.workdir, "output")
    output_dirs: list[Any] = []  # the output_dir of each TrainingArguments, as the script asked

    @functools.wraps(original)
    def __post_init__(self: Any) -> None:
        asked = getattr(self, "output_dir", None)
        output_dirs.append(asked)
        self.output_dir = os.path.join(out_root, str(len(output_dirs)))
        for name, value in (("push_to_hub", False), ("report_to", "none"), ("hub_token", None)):
            if hasattr(self, name):
                setattr(self, name, value)
        if getattr(self, "logging_dir", None):
            self.logging_dir = os.path.join(self.output_dir, "logs")
        original(self)
        # CPU only, no mixed precision the CPU cannot do: the probe checks logic, not speed.
        for name in ("fp16", "bf16", "tf32"):
            if getattr(self, name, None):
                h.note(f"TrainingArguments({name}=True) ignored by the probe (CPU run)")
                setattr(self, name, False)

    TrainingArguments.__post_init__ = __post_init__


def _on_trainer(h: Harness, mod: Any) -> None:
    Trainer = mod.Trainer

    def intercept(method_name: str) -> None:
        original = getattr(Trainer, method_name)

        @functools.wraps(original)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            if h.is_busy() or h.ended():
                return original(self, *args, **kwargs)
            line = h.user_line()
            probe_trainer(h, self, method_name, line)
            h.stop(
                "reached-training",
                f"stopped at trainer.{method_name}() ({h.where(line)}) after probing one batch",
                line,
            )

        setattr(Trainer, method_name, wrapper)

    for name in ("train", "evaluate", "predict"):
        intercept(name)


def probe_trainer(h: Harness, trainer: Any, method: str, line: int | None) -> None:
    """Announce the Trainer's points, in pipeline order, on one :class:`TrainerState`."""
    st = TrainerState(line, trainer=trainer, method=method, model=trainer.model)
    registry.announce(h, TRAINER_REACHED, st)
    reached = h.elapsed()
    h.note(f"probe reached trainer.{method}() at {h.where(line)}; {type(trainer).__name__} with {type(st.model).__name__}")
    with h.busy():
        registry.announce(h, TRAINER_BATCH, st)
        registry.announce(h, TRAINER_EVAL_BATCH, st)
        if h.config.overfit > 0:
            registry.announce(h, TRAINER_OVERFIT, st)
    record = h.kept(DatasetRecord)
    loading = record.load_seconds if record is not None else None
    h.note(f"timings: the script reached trainer.{method}() after {reached:.1f}s (imports, data, model"
           + (f"; load_dataset {loading:.1f}s" if loading is not None else "") + "); "
           f"the checks took {h.elapsed() - reached:.1f}s")


# ---------------------------------------------------------------- --tiny-model

_LAYER_ATTRS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers", "encoder_layers", "decoder_layers")


def _shrink(config: Any, width: bool) -> Any:
    config = copy.deepcopy(config)
    for name in _LAYER_ATTRS:
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 2:
            setattr(config, name, 2)
    if width:
        if isinstance(getattr(config, "hidden_size", None), int) and config.hidden_size > 64:
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
