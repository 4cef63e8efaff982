"""The versions a script declares for its dependencies (``!pip install "transformers<5"``, a PEP 723
block), and what they say about the Keras it runs under."""

from __future__ import annotations

import re

#: lines that can declare the script's requirements: `!pip install ...`, `%pip`, `uv add`, and comments
#: (a PEP 723 `# /// script` block: `# dependencies = ["transformers<5"]`)
_REQ_LINE = re.compile(r"^\s*(?:[!%]\s*)?(?:pip3?\b|uv\b|python3?\s+-m\s+pip|#).*$", re.M)
_SPEC = re.compile(r"(==|>=|<=|~=|!=|<|>)\s*([0-9][\w.*]*)")


def _specs(source: str, dist: str) -> list[tuple[str, tuple[int, ...]]]:
    """The version specifiers the script itself declares for ``dist``."""
    if dist not in source:
        return []
    pattern = re.compile(rf"(?<![\w-]){re.escape(dist)}\s*(?:\[[^\]]*\])?\s*((?:(?:==|>=|<=|~=|!=|<|>)\s*[0-9][\w.*]*\s*,?\s*)+)")
    out = []
    for line in _REQ_LINE.finditer(source):
        for m in pattern.finditer(line.group(0)):
            for op, text in _SPEC.findall(m.group(1)):
                nums = []
                for part in text.split("."):
                    if not part.isdigit():
                        break
                    nums.append(int(part))
                if nums:
                    out.append((op, tuple(nums)))
    return out


def script_requires_at_least(source: str, dist: str, version: tuple[int, ...]) -> bool:
    """The script declares ``dist`` at ``version`` or newer (`transformers>=5`, `keras==3.6`)."""
    return any(op in (">=", ">", "==", "~=") and v >= version for op, v in _specs(source, dist))


def script_requires_below(source: str, dist: str, version: tuple[int, ...]) -> bool:
    """The script pins ``dist`` below ``version`` (`transformers<5`, `transformers==4.46.0`)."""
    for op, v in _specs(source, dist):
        if op == "<" and v <= version:
            return True
        if op in ("<=", "==") and v < version:
            return True
        if op == "~=" and len(v) >= 2 and v[:-1] < version[: len(v) - 1]:  # ~=4.40: below 5
            return True
    return False


def legacy_keras_env(source: str) -> bool:
    """The script sets `TF_USE_LEGACY_KERAS=1` itself (then `tensorflow.keras` is tf-keras)."""
    return re.search(r"""TF_USE_LEGACY_KERAS["']\s*(?:\]\s*=|,)\s*["'](?:1|true|True)["']""", source) is not None


def keras3(source: str, settings) -> bool:
    """Evidence of Keras 3: the script's own requirements (`keras>=3`, `tensorflow>=2.16`), else the
    configured or installed keras (``settings.version("keras")``). No evidence: False."""
    if script_requires_below(source, "keras", (3,)) or script_requires_below(source, "tensorflow", (2, 16)):
        return False
    if script_requires_at_least(source, "keras", (3,)) or script_requires_at_least(source, "tensorflow", (2, 16)):
        return True
    keras = settings.version("keras")
    return keras is not None and keras >= (3,)
