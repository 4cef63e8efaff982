"""Whether two datasets hold the same examples (child side, standard library only; the frameworks'
values are read through ``tolist()``/``tobytes()`` when they have one).

Used by the checks that compare the evaluation data with the training data: an example is a row (a
dict of columns, a tuple of tensors, an array row), reduced to a hashable key of its values.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

#: Columns that number the rows rather than describe them: two copies of one example differ there.
_INDEX_COLUMNS = frozenset({"idx", "id", "index", "__index_level_0__", "guid", "uid"})


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(sorted((str(k), _plain(v)) for k, v in value.items() if str(k) not in _INDEX_COLUMNS))
    if isinstance(value, (list, tuple)):
        return tuple(_plain(v) for v in value)
    if hasattr(value, "detach"):  # a torch tensor
        value = value.detach().cpu()
    if hasattr(value, "numpy") and not hasattr(value, "tobytes"):  # a TF tensor
        try:
            value = value.numpy()
        except Exception:  # noqa: BLE001
            return repr(value)
    if hasattr(value, "tobytes") and hasattr(value, "shape"):
        return (str(getattr(value, "dtype", "")), tuple(value.shape), hashlib.sha1(value.tobytes()).hexdigest())
    if hasattr(value, "tolist"):
        return _plain(value.tolist())
    if isinstance(value, bytes):
        return hashlib.sha1(value).hexdigest()
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)


def key(example: Any) -> Any:
    """A hashable key of one example's values (the columns that number rows left out)."""
    plain = _plain(example)
    try:
        hash(plain)
    except TypeError:
        return repr(example)
    return plain


def shared(train: Iterable[Any], evaluation: Iterable[Any], train_limit: int = 2000,
           eval_limit: int = 32) -> tuple[int, int]:
    """(how many of the first ``eval_limit`` evaluation examples are among the first ``train_limit``
    training examples, how many evaluation examples were compared)."""
    seen = set()
    for i, example in enumerate(train):
        if i >= train_limit:
            break
        seen.add(key(example))
    compared = found = 0
    for i, example in enumerate(evaluation):
        if i >= eval_limit:
            break
        compared += 1
        found += key(example) in seen
    return found, compared
