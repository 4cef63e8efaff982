"""Runtime side of the API-compatibility stage for Keras (child side: standard library only).

- TL807, TL808: the script got as far as ``fit``: the TF model classes exist in this environment, and no
  Keras 3 object broke a tf-keras model;
- TL808 as a script error: a Keras 3 object (an optimizer, a loss) given to a tf-keras (transformers)
  model: "Could not interpret optimizer identifier".
"""

from __future__ import annotations

from trainlint.probe.child.harness import Harness
from trainlint.probe.child.points import FIT_REACHED, SCRIPT_EXCEPTION, Classification, KerasState, ScriptError
from trainlint.probe.child.registry import check


@check(FIT_REACHED, "TL807", "TL808")
def fit_reached(h: Harness, st: KerasState) -> None:
    h.checked("TL807", "TL808")


@check(SCRIPT_EXCEPTION, "TL808", order=810)
def classify_keras3_object(h: Harness, err: ScriptError) -> Classification | None:
    """A Keras 3 object given to a tf-keras (transformers) model is TL808 (after the classifiers of
    probe.py)."""
    exc = err.exc
    text = str(exc)
    if "Could not interpret" in text and "keras.src." in text:
        what = text.split("Could not interpret", 1)[1].split(":", 1)[0].strip() or "identifier"
        first = text.strip().splitlines()[0]
        return Classification(
            "TL808",
            f"a Keras 3 object was given to a tf-keras model (could not interpret {what}): "
            "tensorflow.keras meant Keras 3 when it was imported, transformers models use tf-keras",
            f"{type(exc).__name__}: {first[:240]}; import the optimizer from tf_keras (or set "
            "TF_USE_LEGACY_KERAS=1 before importing tensorflow), or use transformers.create_optimizer",
        )
    return None
