"""Child-side plugin for Hugging Face ``datasets`` (see ../../PROTOCOL.md).

``load_dataset`` results are cut to ``rows`` rows before the script's own ``.map()`` (the probe needs
one batch, not the whole dataset), after counting the whole label column of every split (cheaply, from
the Arrow table): the checks judge the label range over the whole column, from the
:class:`~trainlint.probe.child.points.DatasetRecord` kept on the harness. A dataset the (offline) cache
lacks is served the copy ``trainlint probe --prefetch`` saved, if there is one
(:mod:`trainlint.probe.child.prefetched`); ``ds.select(range(1000))`` on a dataset the probe cut is
clamped instead of raising IndexError.
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

from trainlint.probe.child.harness import Harness
from trainlint.probe.child.labels import LABEL_COLUMNS, arrow_counts, class_names
from trainlint.probe.child.points import DatasetRecord, LabelColumn


def install(h: Harness) -> None:
    h.when_imported("datasets", lambda m: _on_datasets(h, m))


def _prefetched(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    from trainlint.probe.child.prefetched import load_prefetched

    return load_prefetched(args, kwargs)


def _on_datasets(h: Harness, datasets: Any) -> None:
    h.versions(datasets=getattr(datasets, "__version__", "?"))
    record = h.keep(DatasetRecord())
    rows = h.config.rows or 256
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
        record.load_seconds = (record.load_seconds or 0.0) + h.elapsed() - t0
        if kwargs.get("streaming"):
            return result
        return h.guarded("load_dataset row cut", cut_rows, h, record, result, rows, args, kwargs) or result

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
        if record.rows_cut and isinstance(indices, range) and indices.step == 1:
            n = len(self)
            if indices.stop > n:
                indices = range(min(indices.start, n), n)
        return original_select(self, indices, *args, **kwargs)

    Dataset.select = select


def cut_rows(h: Harness, record: DatasetRecord, result: Any, rows: int, args: tuple[Any, ...],
             kwargs: dict[str, Any]) -> Any:
    """Record the whole label column of every split, then cut each split to ``rows`` rows."""
    import datasets

    source = repr(args[0]) if args else "dataset"
    cuts: list[str] = []

    def one(ds: Any, split: str) -> Any:
        if not isinstance(ds, datasets.Dataset):
            return ds
        for column in LABEL_COLUMNS:
            counts = arrow_counts(ds, column)
            if counts is not None:
                entry = record.label_columns.setdefault(column, LabelColumn(Counter()))
                entry.counts.update(counts)
                entry.rows += len(ds)
                entry.sources.append(f"{source}[{split}]")
                entry.names = entry.names or class_names(ds, column)
        n = len(ds)
        if n <= rows:
            return ds
        record.rows_cut = True
        cuts.append(f"{source}[{split}]: {n} → {rows} rows")
        return ds.select(range(rows))

    if isinstance(result, datasets.DatasetDict):
        out = datasets.DatasetDict({k: one(v, k) for k, v in result.items()})
    elif isinstance(result, datasets.Dataset):
        out = one(result, str(kwargs.get("split") or "split"))
    else:
        return result
    if cuts:
        h.note("load_dataset cut for the probe: " + "; ".join(cuts))
    return out
