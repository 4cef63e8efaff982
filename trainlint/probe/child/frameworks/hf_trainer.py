"""Child-side plugin for PyTorch, transformers and datasets (see PROTOCOL.md).

Post-import hooks only: nothing here imports torch/transformers/datasets before the script does.

- ``transformers.training_args``: ``TrainingArguments.__post_init__`` redirects ``output_dir`` into the
  probe's temporary directory, turns hub pushes and reporting integrations off.
- ``transformers.trainer``: ``Trainer.train`` / ``evaluate`` / ``predict`` are intercepted; the checks of
  each pipeline stage run on the Trainer, then the script is stopped.
- ``transformers.modeling_utils``: with ``--tiny-model``, ``from_pretrained`` builds a small randomly
  initialised model of the same config.
- ``torch``: global optimizer step hooks and ``Tensor.backward`` observe a hand-written loop for two
  steps, then stop the script.
- ``datasets``: ``load_dataset`` results are cut to ``rows`` rows (after recording the whole label
  column), before the script's own ``.map()``; a dataset the (offline) cache lacks is served the copy
  ``trainlint probe --prefetch`` saved, if there is one (:mod:`trainlint.probe.child.prefetched`).
"""

from __future__ import annotations

import functools
import os
import types
from typing import Any

from trainlint.probe.child.checks import emits
from trainlint.probe.child.harness import Harness

emits("TL804", "TL805", "TL801", "TL802", framework="torch", where="Trainer built (API breaks did not happen)")


def install(h: Harness) -> None:
    h.when_imported("torch", lambda m: _on_torch(h, m))
    h.when_imported("datasets", lambda m: _on_datasets(h, m))
    h.when_imported("transformers", lambda m: h.versions(transformers=getattr(m, "__version__", "?")))
    h.when_imported("transformers.training_args", lambda m: _on_training_args(h, m))
    h.when_imported("transformers.trainer", lambda m: _on_trainer(h, m))
    if h.config.tiny_model:
        h.when_imported("transformers.modeling_utils", lambda m: _on_modeling_utils(h, m))


# ---------------------------------------------------------------- torch: hand-written loops


def _on_torch(h: Harness, torch: types.ModuleType) -> None:
    h.versions(torch=getattr(torch, "__version__", "?"))
    from trainlint.stages.s7_loop import probe as loop_probe

    loop_probe.install_loop_observer(h, torch)


# ---------------------------------------------------------------- datasets: the row cut


def _prefetched(args: tuple, kwargs: dict) -> Any:
    from trainlint.probe.child.prefetched import load_prefetched

    return load_prefetched(args, kwargs)


def _on_datasets(h: Harness, datasets: types.ModuleType) -> None:
    h.versions(datasets=getattr(datasets, "__version__", "?"))
    from trainlint.stages.s1_data import probe as data_probe

    rows = (h.config.rows or 256)
    original = datasets.load_dataset

    @functools.wraps(original)
    def load_dataset(*args: Any, **kwargs: Any) -> Any:
        t0 = h.elapsed()
        try:
            result = original(*args, **kwargs)
        except Exception:
            # not in the datasets cache (the probe is offline): a copy saved by `trainlint probe --prefetch`
            result = h.guarded("prefetched dataset", _prefetched, args, kwargs)
            if result is None:
                raise
            h.note(f"load_dataset{args[:2]!r}: served the rows saved by `trainlint probe --prefetch`")
        h.state["load_dataset_seconds"] = h.state.get("load_dataset_seconds", 0.0) + h.elapsed() - t0
        if kwargs.get("streaming"):
            return result
        return h.guarded("load_dataset row cut", data_probe.cut_rows, h, result, rows, args, kwargs) or result

    datasets.load_dataset = load_dataset
    try:
        import datasets.load as load_mod

        load_mod.load_dataset = load_dataset
    except ImportError:
        pass

    # `ds.select(range(1000))` on a dataset the probe cut to 256 rows: clamp instead of IndexError.
    Dataset = datasets.Dataset
    original_select = Dataset.select

    @functools.wraps(original_select)
    def select(self: Any, indices: Any, *args: Any, **kwargs: Any) -> Any:
        if h.state.get("rows_cut") and isinstance(indices, range) and indices.step == 1:
            n = len(self)
            if indices.stop > n:
                indices = range(min(indices.start, n), n)
        return original_select(self, indices, *args, **kwargs)

    Dataset.select = select


# ---------------------------------------------------------------- transformers


def _on_training_args(h: Harness, mod: types.ModuleType) -> None:
    TrainingArguments = mod.TrainingArguments
    original = TrainingArguments.__post_init__
    out_root = os.path.join(h.workdir, "output")

    @functools.wraps(original)
    def __post_init__(self: Any) -> None:
        asked = getattr(self, "output_dir", None)
        h.state.setdefault("output_dirs", []).append(asked)
        self.output_dir = os.path.join(out_root, str(len(h.state["output_dirs"])))
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


def _on_trainer(h: Harness, mod: types.ModuleType) -> None:
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


class PipelineState:
    """What one stage hands to the next: the Trainer, the batch, the outputs, the optimizer."""

    def __init__(self, trainer: Any, method: str, line: int | None) -> None:
        self.trainer = trainer
        self.method = method
        self.line = line
        self.model = trainer.model
        self.stop = False  # a stage failed in a way that makes the next stages meaningless
        self.stop_at: int | None = None  # the pipeline stops before this order (checks.run)
        self.raw_dataset = False
        self.batch: dict | None = None
        self.inputs: dict | None = None
        self.outputs: Any = None
        self.loss: Any = None
        self.optimizer: Any = None
        self.label_counts: dict | None = None
        self.main_input = "input_ids"
        self.raw_check_in_batch = False  # TL101 decided on the batch (remove_unused_columns=False)


def probe_trainer(h: Harness, trainer: Any, method: str, line: int | None) -> None:
    """Run the registered Trainer checks of every stage (``@probe_check(..., framework="torch",
    path="trainer")`` in ``stages/s*/probe.py``) in pipeline order on the Trainer."""
    from trainlint.probe.child import checks

    # The Trainer and its TrainingArguments were built: the API breaks did not happen.
    h.checked("TL804", "TL805", "TL801", "TL802")
    st = PipelineState(trainer, method, line)
    reached = h.elapsed()
    h.note(f"probe reached trainer.{method}() at {h.where(line)}; {type(trainer).__name__} with {type(st.model).__name__}")
    with h.busy():
        checks.run(h, st, "torch", "trainer")
    loading = h.state.get("load_dataset_seconds")
    h.note(f"timings: the script reached trainer.{method}() after {reached:.1f}s (imports, data, model"
           + (f"; load_dataset {loading:.1f}s" if loading is not None else "") + "); "
           f"the checks took {h.elapsed() - reached:.1f}s")


# ---------------------------------------------------------------- --tiny-model


def _on_modeling_utils(h: Harness, mod: types.ModuleType) -> None:
    from trainlint.stages.s3_model import probe as s3

    s3.install_tiny_model(h, mod)
