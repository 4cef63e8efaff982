"""Runtime side of the API-compatibility stage (child side: standard library only).

``classify_exception`` maps an exception the script raised before training to the catalog code of a
known API break (TL804 ``Trainer(tokenizer=)``, TL805 ``evaluation_strategy=``, TL801 ``load_metric``,
TL802 ``transformers.AdamW``), and a model that is not in the local cache to a clear "not available
offline" TL707. Anything else stays TL707 (script error before training), at the user's line.
"""

from __future__ import annotations

import re
import traceback
from typing import Any

from trainlint.probe.child.checks import emits
from trainlint.probe.child.harness import Harness

emits("TL804", "TL805", "TL801", "TL802", "TL106", "TL301", "TL707", framework="any", where="classify_exception")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    if len(first) > 300:
        first = first[:297] + "..."
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _offline_resource(exc: BaseException) -> tuple[str, str] | None:
    """(kind, name) of the hub resource being loaded where the exception was raised, if any: the
    outermost ``from_pretrained`` (model/tokenizer), ``load_dataset`` or ``evaluate.load`` frame."""
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        name = frame.f_code.co_name
        filename = frame.f_code.co_filename.replace("\\", "/")
        loc = frame.f_locals
        if name in ("from_pretrained", "cached_file", "cached_files"):
            for key in ("pretrained_model_name_or_path", "path_or_repo_id"):
                if key in loc:
                    return "model", str(loc[key])
            return "model", "?"
        if name in ("load_dataset", "load_dataset_builder") and "/datasets/" in filename:
            return "dataset", str(loc.get("path", "?"))
        if name == "load" and "/evaluate/" in filename:
            return "metric", str(loc.get("path", "?"))
    return None


def classify_exception(h: Harness, exc: BaseException, line: int | None) -> tuple[Any, ...] | None:
    """(code, message, evidence[, confirms]) for a known exception, else None."""
    msg = str(exc)
    first = _first_line(exc)
    at = h.where(line)
    src = h.user_source_line(line)
    ev_tail = f" at {at}" + (f": `{src}`" if src else "")
    if isinstance(exc, TypeError) and "tokenizer" in msg and ("Trainer" in msg or "__init__" in msg):
        return (
            "TL804",
            f"Trainer(tokenizer=...) raises {first} (transformers 5 removed the argument; use processing_class=)",
            first + ev_tail,
        )
    if isinstance(exc, TypeError) and "evaluation_strategy" in msg:
        return (
            "TL805",
            f"TrainingArguments(evaluation_strategy=...) raises {first} (use eval_strategy=)",
            first + ev_tail,
        )
    if isinstance(exc, (ImportError, AttributeError)) and "load_metric" in msg:
        return ("TL801", f"datasets.load_metric is gone: {first}", first + ev_tail)
    if isinstance(exc, (ImportError, AttributeError)) and "AdamW" in msg and "transformers" in msg:
        return ("TL802", f"transformers.AdamW is gone: {first}", first + ev_tail)
    m = re.search(r"Target (-?\d+) is out of bounds", msg)
    if isinstance(exc, IndexError) and m:
        return (
            "TL106",
            f"the forward pass fails: label {m.group(1)} is outside the classification head's range ({first})",
            first + ev_tail,
            ("TL301",),
        )
    words = ("offline", "connect", "couldn't reach", "internet", "cached files", "local cache", "huggingface.co",
             "the hub", "on the hub")
    if any(w in (type(exc).__name__ + " " + msg).lower() for w in words):
        found = _offline_resource(exc)
        if found is not None:
            kind, name = found
            hint = "download it first or use --tiny-model" if kind == "model" else "download it first (it is read from the local cache)"
            return (
                "TL707",
                f"{kind} {name!r} is not available offline (not in the local cache): the probe runs without "
                f"network; {hint}",
                first + ev_tail,
            )
    return None

