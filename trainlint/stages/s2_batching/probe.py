"""Runtime checks of the batching stage (child side: standard library + frameworks only).

- TL201: one batch through ``trainer.get_train_dataloader()``; a collation failure is reported with
  the sequence lengths of the examples the collator received;
- TL202: a collation failure on string columns;
- TL207: batch keys the model's ``forward`` does not accept;
- TL103: a training batch with one class while the label column has several, from an unshuffled loader.

``collation_failure_text`` names the code of a batch that cannot be formed (TL201 with the lengths, TL202,
else TL707): the evaluation stage and the hand-written loop use it too.
"""

from __future__ import annotations

import re
from typing import Any

from trainlint.probe.child.harness import Harness
from trainlint.probe.child.points import TRAINER_BATCH, TrainerState
from trainlint.probe.child.registry import check
from trainlint.probe.child.torch_util import collator_name, forward_arguments, unwrap_model
from trainlint.probe.child.torch_util import first_batch as _first_batch


# ---------------------------------------------------------------- a batch that cannot be formed


_COLLATE_WORDS = (
    "unable to create tensor",
    "expected sequence of length",
    "stack expects each tensor to be equal size",
    "sequence item",
    "padding",
    "must have the same length",
    "same size",
)


def _length(value: Any) -> int | None:
    if hasattr(value, "shape") and len(getattr(value, "shape", ())) >= 1:
        return int(value.shape[0])
    if isinstance(value, (list, tuple)):
        return len(value)
    return None


#: transformers names the feature it could not make a tensor of (`tokenizer.pad`, `BatchEncoding`)
_NAMED_FEATURE = re.compile(r"features \(`([^`]+)` in this case\)")


def unstackable_column(error: str, features: list[Any], main_input: str) -> str:
    """The column a collator could not stack: the one transformers' error names, else the first whose lengths
    differ across the examples, in the order `default_data_collator` stacks them (`label`/`label_ids` first,
    then the first example's keys); ``main_input`` when none shows."""
    m = _NAMED_FEATURE.search(error)
    if m:
        return m.group(1)
    rows = [f for f in features[:64] if hasattr(f, "get") and hasattr(f, "keys")]
    if not rows:
        return main_input
    keys = [k for k in ("label", "label_ids") if k in rows[0].keys()]
    keys += [k for k in rows[0].keys() if k not in keys]
    for k in keys:
        if len({_length(f.get(k)) for f in rows}) > 1:
            return k
    return main_input


def collation_failure_text(error: str, features: list[Any], main_input: str, collator: str, where: str,
                           trainer: bool = False) -> tuple[str, str, str]:
    """(code, message, evidence) of a batch that cannot be formed: TL201 (a column whose lengths differ that
    nothing pads, with its lengths), TL202 (string columns reach the collator), else TL707."""
    column = unstackable_column(error, features, main_input)
    lengths = []
    string_cols: list[str] = []
    for f in features[:64]:
        if hasattr(f, "get"):
            n = _length(f.get(column))
            if n is not None:
                lengths.append(n)
            for k, v in f.items():
                if isinstance(v, str) and k not in string_cols:
                    string_cols.append(k)
    low = error.lower()
    if len(set(lengths)) > 1 or any(w in low for w in _COLLATE_WORDS):
        shown = lengths[:16]
        return (
            "TL201",
            f"{where}: one batch cannot be formed: the examples' `{column}` have different lengths and the "
            f"collator does not pad them (data collator: {collator}"
            + (", no tokenizer given to the Trainer)" if trainer else ")"),
            f"{column} lengths in the batch: {shown}{' …' if len(lengths) > 16 else ''} "
            f"(min {min(lengths) if lengths else '?'}, max {max(lengths) if lengths else '?'}); "
            f"collator {collator} raised {error}",
        )
    if string_cols:
        return (
            "TL202",
            f"{where}: one batch cannot be formed: string columns {string_cols} reach the collator",
            f"collator {collator} raised {error}",
        )
    return ("TL707", f"{where}: forming one batch fails: {error}", f"collator {collator} raised {error}")


def collation_failure(h: Harness, error: str, features: list[Any], main_input: str, collator: str, where: str,
                      line: int | None, trainer: bool = False) -> str:
    """Report a batch that cannot be formed (see :func:`collation_failure_text`); returns the code."""
    code, message, evidence = collation_failure_text(error, features, main_input, collator, where, trainer)
    h.finding(code, message, evidence=evidence, line=line)
    return code


def first_batch(h: Harness, trainer: Any, loader: Any, main_input: str,
                where: str) -> tuple[Any, str | None, list[Any]]:
    """Form one batch; on failure return (None, evidence, features the collator got)."""
    batch, error, seen = _first_batch(loader)
    if error == "the dataloader is empty":
        error = f"{where}: {error}"
    return batch, error, seen


def report_collation_failure(h: Harness, st: TrainerState, error: str, features: list[Any], main_input: str,
                             where: str) -> None:
    if where != "training" and {"TL201", "TL202", "TL101"} & h.emitted:
        return  # the training batch already failed the same way
    # "no tokenizer given to the Trainer" only when none was: with an explicit data_collator the
    # tokenizer given as processing_class pads nothing either, and the message must not deny it exists.
    tokenizer = getattr(st.trainer, "processing_class", None) or getattr(st.trainer, "tokenizer", None)
    collation_failure(h, error, features, main_input, collator_name(st.trainer.data_collator), where, st.line,
                      trainer=tokenizer is None)


@check(TRAINER_BATCH, "TL201", "TL202", "TL207", "TL103", "TL101", "TL707")
def check_train_batch(h: Harness, st: TrainerState) -> None:
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
