"""Runtime checks of the batching stage (child side: standard library + frameworks only).

- TL201: one batch through ``trainer.get_train_dataloader()``; a collation failure is reported with
  the sequence lengths of the examples the collator received;
- TL202: a collation failure on string columns;
- TL207: batch keys the model's ``forward`` does not accept;
- TL103: a training batch with one class while the label column has several, from an unshuffled loader.
"""

from __future__ import annotations

from typing import Any

from trainlint.stages.s1_data.probe import forward_arguments, unwrap_model

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


def first_batch(h: Any, trainer: Any, loader: Any, main_input: str, where: str) -> tuple[Any, str | None, list]:
    """Form one batch; on failure return (None, evidence, features the collator got)."""
    seen: list = []
    # accelerate's DataLoaderShard/DataLoaderAdapter iterate an inner `base_dataloader`.
    target = getattr(loader, "base_dataloader", None) or loader
    original_collate = getattr(target, "collate_fn", None)

    def recording(features: list) -> Any:
        seen[:] = list(features)
        return original_collate(features)

    if original_collate is not None:
        try:
            target.collate_fn = recording
        except Exception:  # noqa: BLE001  # some loaders freeze their attributes after __init__
            pass
    try:
        batch = next(iter(loader))
        return batch, None, seen
    except StopIteration:
        return None, f"{where}: the dataloader is empty", seen
    except Exception as exc:  # noqa: BLE001
        msg = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        return None, msg, seen
    finally:
        if original_collate is not None:
            try:
                target.collate_fn = original_collate
            except Exception:  # noqa: BLE001
                pass


def report_collation_failure(h: Any, st: Any, error: str, features: list, main_input: str, where: str) -> None:
    lengths = []
    string_cols: list[str] = []
    for f in features[:64]:
        if hasattr(f, "get"):
            n = _length(f.get(main_input))
            if n is not None:
                lengths.append(n)
            for k, v in f.items():
                if isinstance(v, str) and k not in string_cols:
                    string_cols.append(k)
    collator = type(st.trainer.data_collator).__name__ if st.trainer.data_collator is not None else "None"
    if collator == "function":
        collator = getattr(st.trainer.data_collator, "__name__", "function")
    low = error.lower()
    if where != "training" and {"TL201", "TL202", "TL101"} & h.emitted:
        return  # the training batch already failed the same way
    if len(set(lengths)) > 1 or any(w in low for w in _COLLATE_WORDS):
        shown = lengths[:16]
        h.finding(
            "TL201",
            f"{where}: one batch cannot be formed: the examples have different lengths and nothing pads them "
            f"(data collator: {collator}, no tokenizer given to the Trainer)",
            evidence=(
                f"{main_input} lengths in the batch: {shown}{' …' if len(lengths) > 16 else ''} "
                f"(min {min(lengths) if lengths else '?'}, max {max(lengths) if lengths else '?'}); "
                f"collator {collator} raised {error}"
            ),
            line=st.line,
        )
    elif string_cols:
        h.finding(
            "TL202",
            f"{where}: one batch cannot be formed: string columns {string_cols} reach the collator",
            evidence=f"collator {collator} raised {error}",
            line=st.line,
        )
    else:
        h.finding(
            "TL707",
            f"{where}: forming one batch fails: {error}",
            evidence=f"collator {collator} raised {error}",
            line=st.line,
        )


def check_train_batch(h: Any, st: Any) -> None:
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
