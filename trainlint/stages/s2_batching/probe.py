"""Runtime checks of the batching stage (child side: standard library + frameworks only).

- TL201: one batch through ``trainer.get_train_dataloader()``; a collation failure is reported with
  the sequence lengths of the examples the collator received;
- TL202: a collation failure on string columns;
- TL207: batch keys the model's ``forward`` does not accept;
- TL103: a training batch with one class while the label column has several, from an unshuffled loader.
"""

from __future__ import annotations

from typing import Any

from trainlint.probe.child.checks import probe_check
from trainlint.probe.child.torch_util import first_batch as _first_batch
from trainlint.probe.child.torch_util import collation_failure, collator_name, forward_arguments, unwrap_model
from trainlint.probe.child.harness import Harness


def first_batch(h: Harness, trainer: Any, loader: Any, main_input: str, where: str) -> tuple[Any, str | None, list]:
    """Form one batch; on failure return (None, evidence, features the collator got)."""
    batch, error, seen = _first_batch(loader)
    if error == "the dataloader is empty":
        error = f"{where}: {error}"
    return batch, error, seen


def report_collation_failure(h: Harness, st: Any, error: str, features: list, main_input: str, where: str) -> None:
    if where != "training" and {"TL201", "TL202", "TL101"} & h.emitted:
        return  # the training batch already failed the same way
    # "no tokenizer given to the Trainer" only when none was: with an explicit data_collator the
    # tokenizer given as processing_class pads nothing either, and the message must not deny it exists.
    tokenizer = getattr(st.trainer, "processing_class", None) or getattr(st.trainer, "tokenizer", None)
    collation_failure(h, error, features, main_input, collator_name(st.trainer.data_collator), where, st.line,
                      trainer=tokenizer is None)


@probe_check("TL201", "TL202", "TL207", "TL103", "TL101", "TL707", framework="torch", path="trainer", phase="batching")
def check_train_batch(h: Harness, st: Any) -> None:
    trainer = st.trainer
    if trainer.train_dataset is None:
        return
    model = unwrap_model(trainer.model)
    main_input = getattr(model, "main_input_name", "input_ids") or "input_ids"
    try:
        loader = trainer.get_train_dataloader()
    except Exception as exc:  # noqa: BLE001
        h.finding(
            "TL707",
            f"trainer.get_train_dataloader() fails: {type(exc).__name__}: {exc}",
            evidence=f"{type(exc).__name__}: {exc}",
            line=st.line,
        )
        st.stop = True
        return
    batch, error, features = first_batch(h, trainer, loader, main_input, "training")
    if batch is None:
        report_collation_failure(h, st, error or "no batch", features, main_input, "training")
        st.stop = True
        return
    h.checked("TL201", "TL202")
    st.batch = batch
    if st.raw_check_in_batch:
        keys = list(dict(batch))
        if main_input not in keys and "inputs_embeds" not in keys:
            h.finding(
                "TL101",
                f"one training batch has no `{main_input}`: the Trainer's dataset is not tokenized and the "
                "collator does not tokenize it",
                evidence=f"batch keys {keys}; {type(model).__name__}.forward needs `{main_input}`",
                line=st.line,
            )
            st.stop = True
            return
        h.checked("TL101")
    shapes = {k: (tuple(v.shape) if hasattr(v, "shape") else type(v).__name__) for k, v in dict(batch).items()}
    h.detail(f"one training batch: {shapes}")
    # TL207: keys forward() does not accept.
    accepted, any_kw = forward_arguments(model)
    if accepted and not any_kw:
        extra = [k for k in dict(batch) if k not in accepted]
        if extra:
            h.finding(
                "TL207",
                f"batch keys {extra} are not arguments of {type(model).__name__}.forward",
                evidence=f"batch keys {list(dict(batch))}; forward accepts {sorted(accepted)[:12]}",
                line=st.line,
            )
        else:
            h.checked("TL207")
    # TL103: single-class batch from an unshuffled loader while the column has several classes.
    labels = dict(batch).get("labels")
    sequential = getattr(trainer.args, "train_sampling_strategy", "random") == "sequential"
    if labels is not None and sequential and st.label_counts and len(st.label_counts) > 1:
        flat = labels.reshape(-1).tolist() if hasattr(labels, "reshape") else list(labels)
        values = set(flat)
        if len(values) == 1 and len(flat) > 1:
            h.finding(
                "TL103",
                f"the first training batch has only label {flat[0]} while the label column has "
                f"{len(st.label_counts)} classes, and the loader does not shuffle",
                evidence=f"batch labels {flat[:16]}; column classes {sorted(st.label_counts)[:10]}",
                line=st.line,
            )
