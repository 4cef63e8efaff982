"""The overfit-one-batch loss curve (``--overfit N``, TL706): classify it and plot it in the terminal.

Framework-neutral and standard library only: the PyTorch and the Keras probes both hand it the list of
per-step losses measured on one batch (child side), and the parent may call it again on the raw list.

The classes follow the troubleshooting notes of the seeds (Full Stack Deep Learning): on one batch a
healthy model drives the loss to (near) zero; otherwise the curve

- **goes up**     learning rate too high, or the loss has the wrong sign;
- **explodes**    NaN/inf, or a jump by orders of magnitude: learning rate too high, numerical issue
                  (log of 0, division by 0, labels outside the head's range);
- **oscillates**  learning rate too high, noisy data, labels not aligned with their inputs;
- **plateaus**    learning rate too small, gradients do not reach the weights (frozen layers, no
                  gradient through the loss), regularisation too strong, a wrong loss (e.g. a loss that
                  expects probabilities applied to logits).

A curve that is still going down but not near zero after N steps is **slow**: inconclusive, not a
finding (run more steps).

    >>> classify([1.1, 0.7, 0.3, 0.05, 0.01]).kind
    'pass'
    >>> classify([1.1, 1.3, 1.8, 2.5, 3.0]).kind
    'goes up'
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

KINDS = ("pass", "goes up", "explodes", "oscillates", "plateaus", "slow")

CAUSES: dict[str, str] = {
    "pass": "the model can fit one batch: the data, loss and optimizer are wired correctly",
    "goes up": "learning rate too high, or the loss has the wrong sign",
    "explodes": "learning rate too high, or a numerical issue (NaN/inf in the outputs or the loss, "
    "log(0), labels outside the head's range)",
    "oscillates": "learning rate too high, noisy data, or labels not aligned with their inputs "
    "(arrays shuffled separately, unsorted file lists)",
    "plateaus": "learning rate too small, gradients that do not reach the weights (frozen layers, "
    "a loss that expects probabilities applied to logits), regularisation too strong, or a wrong loss",
    "slow": "still decreasing but not near zero: inconclusive, try more steps (--overfit with a larger N)",
}


@dataclasses.dataclass(frozen=True)
class Verdict:
    kind: str  # one of KINDS
    summary: str  # one line: what the curve did, with numbers
    causes: str  # the likely causes for this kind

    @property
    def ok(self) -> bool:
        """True when the curve is not a finding (pass, or inconclusive)."""
        return self.kind in ("pass", "slow")


def _fmt(x: float) -> str:
    if not math.isfinite(x):
        return str(x)
    if x == 0 or 1e-3 <= abs(x) < 1e4:
        return f"{x:.4g}"
    return f"{x:.3e}"


def classify(losses: Sequence[float], near_zero: float = 0.05) -> Verdict:
    """Classify a loss curve measured on the same batch, step after step.

    ``near_zero``: an absolute loss under which the batch counts as fitted (cross-entropy of a
    confident correct prediction); a drop to 10 % of the first loss also passes.
    """
    xs = [float(v) for v in losses]
    n = len(xs)
    if n == 0:
        return Verdict("plateaus", "no loss was measured", CAUSES["plateaus"])
    bad = [i for i, v in enumerate(xs) if not math.isfinite(v)]
    if bad:
        i = bad[0]
        before = f" after {_fmt(xs[i - 1])} at step {i}" if i > 0 else ""
        return Verdict(
            "explodes", f"loss became {xs[i]} at step {i + 1} of {n}{before}", CAUSES["explodes"]
        )
    first, last, lo, hi = xs[0], xs[-1], min(xs), max(xs)
    tail = xs[-max(2, n // 4):] if n >= 4 else xs[-1:]
    tail_mean = sum(tail) / len(tail)
    span = f"{_fmt(first)} → {_fmt(last)} in {n} steps (min {_fmt(lo)}, max {_fmt(hi)})"
    scale = max(abs(first), 1e-12)
    if hi > 10 * scale and hi > first + 1.0:
        return Verdict("explodes", f"loss jumped to {_fmt(hi)}: {span}", CAUSES["explodes"])
    if n == 1:
        if last <= near_zero:
            return Verdict("pass", f"loss {_fmt(last)} after 1 step", CAUSES["pass"])
        return Verdict("slow", f"only one step: loss {_fmt(last)}", CAUSES["slow"])
    if tail_mean <= max(near_zero, 0.1 * first) and last <= max(near_zero, 0.1 * first) * 1.5:
        return Verdict("pass", f"loss fell {span}", CAUSES["pass"])

    diffs = [b - a for a, b in zip(xs, xs[1:])]
    signs = [1 if d > 0 else -1 for d in diffs if abs(d) > 1e-6 * scale]
    turns = sum(1 for a, b in zip(signs, signs[1:]) if a != b)
    ups = sum(1 for s in signs if s > 0)
    amplitude = (hi - lo) / scale
    net = (last - first) / scale  # negative: went down
    if n >= 5 and len(signs) >= 4 and turns >= 0.5 * (len(signs) - 1) and amplitude > 0.1 and abs(net) < 0.5 * amplitude:
        return Verdict(
            "oscillates",
            f"loss changed direction {turns} times in {n} steps: {span}",
            CAUSES["oscillates"],
        )
    if net > 0.1 and ups >= len(signs) / 2:
        return Verdict("goes up", f"loss rose {span}", CAUSES["goes up"])
    # Flat: the last quarter moves less than 2 % of the first loss, or the whole curve less than 5 %.
    if n >= 4:
        tail_change = abs(tail[-1] - tail[0]) / scale
    else:
        tail_change = abs(net)
    if abs(net) < 0.05:
        return Verdict("plateaus", f"loss stayed flat: {span}", CAUSES["plateaus"])
    if tail_change < 0.02 and net > -0.5:
        return Verdict("plateaus", f"loss stopped falling at {_fmt(tail_mean)}: {span}", CAUSES["plateaus"])
    if net < 0:
        return Verdict("slow", f"loss is decreasing but not near zero: {span}", CAUSES["slow"])
    return Verdict("plateaus", f"loss did not decrease: {span}", CAUSES["plateaus"])


def plot(losses: Sequence[float], width: int = 60, height: int = 8) -> str:
    """A small terminal plot of the curve (step on x, loss on y); non-finite points are drawn as ``!``."""
    xs = [float(v) for v in losses]
    if not xs:
        return "(no loss measured)"
    finite = [v for v in xs if math.isfinite(v)]
    lo = min(finite) if finite else 0.0
    hi = max(finite) if finite else 1.0
    if hi - lo < 1e-12:
        hi = lo + (abs(lo) * 0.1 or 1.0)
    n = len(xs)
    cols = min(width, n)
    grid = [[" "] * cols for _ in range(height)]
    for c in range(cols):
        # Each column shows the mean of its steps (or the single step when n <= width).
        a = c * n // cols
        b = max(a + 1, (c + 1) * n // cols)
        chunk = xs[a:b]
        if any(not math.isfinite(v) for v in chunk):
            for r in range(height):
                grid[r][c] = "!" if r == 0 else grid[r][c]
            continue
        v = sum(chunk) / len(chunk)
        r = round((hi - v) / (hi - lo) * (height - 1))
        grid[min(height - 1, max(0, r))][c] = "*"
    label_w = max(len(_fmt(hi)), len(_fmt(lo)))
    lines = []
    for r in range(height):
        if r == 0:
            label = _fmt(hi)
        elif r == height - 1:
            label = _fmt(lo)
        else:
            label = ""
        lines.append(f"{label:>{label_w}} |" + "".join(grid[r]).rstrip())
    lines.append(" " * label_w + " +" + "-" * cols)
    lines.append(" " * label_w + f"  step 1{' ' * max(1, cols - 6 - len(str(n)))}{n}")
    return "\n".join(lines)


def report(losses: Sequence[float]) -> tuple[Verdict, str]:
    """The verdict and a detail text (plot + verdict) for ``--verbose``/the finding's evidence."""
    v = classify(losses)
    return v, f"{plot(losses)}\n{v.kind}: {v.summary}\nlikely causes: {v.causes}"
