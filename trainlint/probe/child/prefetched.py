"""The rows ``trainlint probe --prefetch`` saved (``parent/prefetch.py``), served in the probe (child side:
standard library; ``datasets`` is imported only when a copy is found) to a ``load_dataset`` call that
finds nothing in the (offline) datasets cache."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any


def hf_home(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    xdg = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.expanduser(env.get("HF_HOME") or os.path.join(xdg, "huggingface"))


def dataset_dir(name: str, config: str | None, env: Mapping[str, str] | None = None) -> str:
    """Where the prefetched rows of ``load_dataset(name, config)`` are kept."""
    return os.path.join(hf_home(env), "trainlint", "prefetch", "datasets", name.replace("/", "--"), config or "default")


def load_prefetched(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """In the probe: the prefetched copy for a ``load_dataset(*args, **kwargs)`` call, or None."""
    name = args[0] if args else kwargs.get("path")
    config = args[1] if len(args) > 1 else kwargs.get("name")
    if not isinstance(name, str) or not (config is None or isinstance(config, str)):
        return None
    path = dataset_dir(name, config)
    if not os.path.isdir(path):
        return None
    import datasets

    # in memory (a few hundred rows): the copy is read-only in the sandbox, and .map() would write beside it
    ds = datasets.load_from_disk(path, keep_in_memory=True)
    split = kwargs.get("split", args[2] if len(args) > 2 else None)
    if isinstance(split, str):
        base = split.split("[", 1)[0].strip()  # "train[:10%]": the prefetched rows are already a slice
        if base not in ds:
            return None
        ds = ds[base]
    elif split is not None:
        return None
    if kwargs.get("streaming"):
        if isinstance(ds, datasets.DatasetDict):
            return datasets.IterableDatasetDict({k: v.to_iterable_dataset() for k, v in ds.items()})
        return ds.to_iterable_dataset()
    return ds
