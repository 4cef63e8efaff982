"""Runtime side of the API-compatibility stage (child side: standard library only).

``classify_exception`` maps an exception the script raised before training to the catalog code of a
known API break (TL804 ``Trainer(tokenizer=)``, TL805 ``evaluation_strategy=``, TL801 ``load_metric``,
TL802 ``transformers.AdamW``), and a model that is not in the local cache to a clear "not available
offline" TL707. Anything else is classified later (stage 7: TL707 at the user's line).

A script that reached training got past those API breaks: ``Trainer.train`` was called, or a
hand-written loop made two steps.
"""

from __future__ import annotations

import re

from trainlint.probe.child.harness import Harness
from trainlint.probe.child.offline import offline_resource
from trainlint.probe.child.points import (
    LOOP_STEP_DONE,
    SCRIPT_EXCEPTION,
    TRAINER_REACHED,
    Classification,
    LoopState,
    ScriptError,
    TrainerState,
)
from trainlint.probe.child.registry import check


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    if len(first) > 300:
        first = first[:297] + "..."
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


@check(SCRIPT_EXCEPTION, "TL804", "TL805", "TL801", "TL802", "TL106", "TL301", "TL707")
def classify_exception(h: Harness, err: ScriptError) -> Classification | None:
    """The code of a known exception, else None."""
    exc, line = err.exc, err.line
    msg = str(exc)
    first = _first_line(exc)
    at = h.where(line)
    src = h.user_source_line(line)
    ev_tail = f" at {at}" + (f": `{src}`" if src else "")
    if isinstance(exc, TypeError) and "tokenizer" in msg and ("Trainer" in msg or "__init__" in msg):
        return Classification(
            "TL804",
            f"Trainer(tokenizer=...) raises {first} (transformers 5 removed the argument; use processing_class=)",
            first + ev_tail,
        )
    if isinstance(exc, TypeError) and "evaluation_strategy" in msg:
        return Classification(
            "TL805",
            f"TrainingArguments(evaluation_strategy=...) raises {first} (use eval_strategy=)",
            first + ev_tail,
        )
    if isinstance(exc, (ImportError, AttributeError)) and "load_metric" in msg:
        return Classification("TL801", f"datasets.load_metric is gone: {first}", first + ev_tail)
    if isinstance(exc, (ImportError, AttributeError)) and "AdamW" in msg and "transformers" in msg:
        return Classification("TL802", f"transformers.AdamW is gone: {first}", first + ev_tail)
    m = re.search(r"Target (-?\d+) is out of bounds", msg)
    if isinstance(exc, IndexError) and m:
        return Classification(
            "TL106",
            f"the forward pass fails: label {m.group(1)} is outside the classification head's range ({first})",
            first + ev_tail,
            ("TL301",),
        )
    words = ("offline", "connect", "couldn't reach", "internet", "cached files", "local cache", "huggingface.co",
             "the hub", "on the hub")
    if any(w in (type(exc).__name__ + " " + msg).lower() for w in words):
        found = offline_resource(exc)
        if found is not None:
            kind, name = found
            hint = "download it first or use --tiny-model" if kind == "model" else "download it first (it is read from the local cache)"
            return Classification(
                "TL707",
                f"{kind} {name!r} is not available offline (not in the local cache): the probe runs without "
                f"network; {hint}",
                first + ev_tail,
            )
    return None


@check(TRAINER_REACHED, "TL804", "TL805", "TL801", "TL802")
def trainer_built(h: Harness, st: TrainerState) -> None:
    """The Trainer and its TrainingArguments were built: the API breaks did not happen."""
    h.checked("TL804", "TL805", "TL801", "TL802")


@check(LOOP_STEP_DONE, "TL804", "TL805", "TL801", "TL802")
def loop_ran(h: Harness, loop: LoopState) -> None:
    """A hand-written loop made two steps: the API breaks did not happen."""
    if loop.steps == 2:
        h.checked("TL804", "TL805", "TL801", "TL802")
