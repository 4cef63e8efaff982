"""Runtime side of the API-compatibility stage (child side: standard library only).

``classify_exception`` maps an exception the script raised before training to the catalog code of a
known API break (TL804 ``Trainer(tokenizer=)``, TL805 ``evaluation_strategy=``, TL801 ``load_metric``,
TL802 ``transformers.AdamW``), and a model that is not in the local cache to a clear "not available
offline" TL707. Anything else stays TL707 (script error before training), at the user's line.
"""

from __future__ import annotations

import re
import traceback

from trainlint.probe import harness as h


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    if len(first) > 300:
        first = first[:297] + "..."
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _in_from_pretrained(exc: BaseException) -> str | None:
    """The name passed to the outermost ``from_pretrained`` frame of the traceback, if any."""
    for frame, _ in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_name in ("from_pretrained", "cached_file", "cached_files"):
            loc = frame.f_locals
            for key in ("pretrained_model_name_or_path", "path_or_repo_id"):
                if key in loc:
                    return str(loc[key])
            return "?"
    return None


def classify_exception(exc: BaseException, line: int | None) -> tuple | None:
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
    if isinstance(exc, (OSError, ValueError)) or type(exc).__name__.endswith(("NotFoundError", "OfflineModeIsEnabled")):
        name = _in_from_pretrained(exc)
        if name is not None:
            return (
                "TL707",
                f"{name!r} is not available offline (not in the local cache): the probe runs without network; "
                "download it first or use --tiny-model",
                first + ev_tail,
            )
    return None

