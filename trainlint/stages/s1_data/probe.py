"""Runtime checks of the data stage (child side: standard library + frameworks only).

- TL101: the dataset the Trainer holds lacks the model's input columns (raw text, not tokenized);
- TL106 (confirms TL301): label values over the whole label column (counted before the probe's row
  cut: :class:`~trainlint.probe.child.points.DatasetRecord`) vs the classification head;
- one decoded training example for ``--verbose``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from trainlint.probe.child.harness import Harness
from trainlint.probe.child.labels import LABEL_COLUMNS, arrow_counts
from trainlint.probe.child.points import TRAINER_BATCH, DatasetRecord, TrainerState
from trainlint.probe.child.registry import check
from trainlint.probe.child.torch_util import classes_of, format_counts, forward_arguments, num, unwrap_model


# ---------------------------------------------------------------- the Trainer's dataset


def _columns(ds: Any) -> list[str] | None:
    if hasattr(ds, "column_names") and isinstance(ds.column_names, list):
        return list(ds.column_names)
    try:
        first = ds[0]
    except Exception:  # noqa: BLE001
        return None
    if isinstance(first, dict) or hasattr(first, "keys"):
        return list(first.keys())
    return None


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def label_column(columns: list[str]) -> str | None:
    for c in LABEL_COLUMNS:
        if c in columns:
            return c
    return None


def label_counts(h: Harness, ds: Any, column: str) -> tuple[Counter[Any] | None, str]:
    """Counts over the whole label column: the column recorded before the probe's row cut when the
    Trainer's dataset came from it (its values are a subset), else the dataset's own column."""
    own = arrow_counts(ds, column)
    sampled = ""
    if own is None:
        try:
            if hasattr(ds, "column_names"):
                return None, ""  # not a scalar column (token labels, multi-hot): no range check
            else:  # a torch Dataset: __getitem__ may load images; look at a few rows only
                n = min(len(ds), 256)
                values = [ds[i][column] for i in range(n)]
                sampled = f"first {n} rows of the Trainer's train_dataset"
            own = Counter(v.item() if hasattr(v, "item") else v for v in values)
        except Exception:  # noqa: BLE001
            return None, ""
    if any(isinstance(v, (list, dict)) for v in own):
        return None, ""
    record = h.kept(DatasetRecord)
    recorded = record.label_columns if record is not None else {}
    for col in (column, *LABEL_COLUMNS):
        entry = recorded.get(col)
        if entry and set(own) <= set(entry.counts):
            return entry.counts, (
                f"whole label column, {entry.rows} rows of {', '.join(entry.sources[:3])} "
                "(read before the probe's row cut)"
            )
    return own, sampled or f"whole label column of the Trainer's train_dataset, {sum(own.values())} rows"


@check(TRAINER_BATCH, "TL101", "TL106", "TL301")
def check_trainer_data(h: Harness, st: TrainerState) -> None:
    trainer = st.trainer
    ds = trainer.train_dataset
    model = unwrap_model(trainer.model)
    if ds is None:
        h.note("the Trainer has no train_dataset: data and batching checks skipped")
        return
    columns = _columns(ds)
    main_input = getattr(model, "main_input_name", "input_ids") or "input_ids"
    if columns is not None:
        h.detail(f"train_dataset: {type(ds).__name__}, {len(ds) if hasattr(ds, '__len__') else '?'} rows, columns {columns}")
    # TL101: raw data in the Trainer. With remove_unused_columns=False a custom collator may tokenize
    # on the fly: then the batching stage decides (is the model input in the batch?).
    st.main_input = main_input
    accepted, any_kw = forward_arguments(model)
    if accepted and main_input not in accepted and not any_kw:
        h.note(f"{type(model).__name__}.forward takes no `{main_input}`: the raw-dataset check is skipped")
    elif not getattr(trainer.args, "remove_unused_columns", True):
        st.raw_check_in_batch = True
    elif columns is not None and main_input not in columns and "inputs_embeds" not in columns:
        try:
            first = ds[0]
            row = ", ".join(f"{k}: {_short(v, 60)}" for k, v in list(dict(first).items())[:4])
        except Exception:  # noqa: BLE001
            row = ""
        st.raw_dataset = True
        st.stop = True
        h.finding(
            "TL101",
            f"the Trainer's train_dataset has no `{main_input}` column: it holds raw data "
            f"(columns {', '.join(columns)}), not the tokenized dataset",
            evidence=(
                f"train_dataset columns {columns}; {type(model).__name__}.forward needs `{main_input}`"
                + (f"; first row {{{row}}}" if row else "")
            ),
            line=st.line,
        )
        if row:
            h.detail(f"train example 0 (raw): {{{row}}}")
        return
    else:
        h.checked("TL101")
    # One decoded example.
    h.guarded("decoded example", _decoded_example, h, trainer, ds, main_input, columns)
    # TL106 / TL301: label range over the whole column.
    if columns is None:
        return
    column = label_column(columns)
    config = getattr(model, "config", None)
    if column is None or getattr(config, "num_labels", None) is None:
        return
    num_labels, classes_source, mismatch = classes_of(model)
    counts, source = label_counts(h, ds, column)
    if not counts or num_labels is None:
        return
    st.label_counts = counts
    if not all(isinstance(v, (int, float, bool)) for v in counts):
        return
    integral = all(float(v).is_integer() for v in counts)
    problem_type = getattr(config, "problem_type", None)
    if integral and num_labels > 1 and problem_type in (None, "single_label_classification"):
        bad = Counter({v: c for v, c in counts.items() if v != -100 and (v < 0 or v >= num_labels)})
        if bad:
            values = sorted(bad)
            h.finding(
                "TL106",
                f"label values {', '.join(num(v) for v in values)} are outside [0, {num_labels}): "
                + (f"{mismatch}; " if mismatch else f"the model has num_labels={num_labels} but ")
                + f"the labels have {len(counts)} classes",
                evidence=(
                    f"{source}: {format_counts(counts)}; {classes_source} → out of range: {format_counts(bad)}"
                    + (f"; {mismatch}" if mismatch else "")
                ),
                line=st.line,
                confirms=("TL301",),
            )
            st.stop_at = 300  # the forward pass would fail on exactly this; the batch can still be collated
            return
    h.checked("TL106", "TL301")


def _decoded_example(h: Harness, trainer: Any, ds: Any, main_input: str, columns: list[str] | None) -> None:
    first = ds[0]
    ids = first.get(main_input) if hasattr(first, "get") else None
    label_col = label_column(columns or [])
    label = first.get(label_col) if (label_col and hasattr(first, "get")) else None
    tok = getattr(trainer, "processing_class", None)
    if ids is not None and tok is not None and hasattr(tok, "decode"):
        if hasattr(ids, "tolist"):
            ids = ids.tolist()
        text = tok.decode(ids)
        h.detail(f"train example 0 (decoded): {_short(text, 300)}" + (f"  label={label!r}" if label_col else ""))
    elif ids is not None:
        h.detail(f"train example 0: {main_input}={_short(ids, 200)}" + (f"  label={label!r}" if label_col else ""))
