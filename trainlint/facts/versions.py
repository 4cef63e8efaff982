"""What the source itself says about the Keras it runs under. Which *versions* a script runs with
(its install commands, PEP 723 block, the project's requirement files, target-versions, the installed
version) is :mod:`trainlint.pins`."""

from __future__ import annotations

import re


def legacy_keras_env(source: str) -> bool:
    """The script sets `TF_USE_LEGACY_KERAS=1` itself (then `tensorflow.keras` is tf-keras)."""
    return re.search(r"""TF_USE_LEGACY_KERAS["']\s*(?:\]\s*=|,)\s*["'](?:1|true|True)["']""", source) is not None
