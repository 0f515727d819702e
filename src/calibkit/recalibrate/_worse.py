"""Did a map make the held-out numbers worse, beyond what noise explains?

The ledger judges a map on rows it never saw. A rise of ECE or NLL there can be noise; these
two tests say when it is not:

* **ECE**: the rise (after minus before) exceeds the 95th percentile of the noise floor after
  the map, the ECE that a forecaster perfectly calibrated at the after-map confidences reaches
  in only 5% of simulations. Even if the model had been perfectly calibrated before, noise
  alone would rarely add that much.
* **NLL**: the mean per-row rise of the log-loss exceeds 1.96 standard errors of the paired
  per-row differences (the same rows before and after), the one-sided 97.5% bound of a paired
  z-test.

With sample weights the NLL's mean is the weighted mean of the paired differences and its
standard error sqrt(n / (n - 1) sum w^2 (d - mean)^2) / sum w, over the n rows of positive
weight: the usual (linearised) variance of a weighted mean, read as independent rows each
carrying its weight (Kish 1965); equal weights give the unweighted standard error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..forecasts import log_softmax
from ..measure.uncertainty import NoiseFloor

__all__ = ["Worse", "row_losses", "worse_beyond_noise"]

#: The paired z bound of the NLL test (one-sided 97.5%).
Z_BOUND = 1.96


@dataclass(frozen=True)
class Worse:
    """One instrument the map made worse on the held-out rows, beyond ``noise`` (the margin the
    rise had to exceed), and why in words."""

    instrument: str
    before: float
    after: float
    noise: float
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "instrument": self.instrument,
            "before": self.before,
            "after": self.after,
            "noise": self.noise,
            "why": self.why,
        }


def row_losses(x: np.ndarray, y: np.ndarray, *, from_logits: bool) -> np.ndarray:
    """Each row's log-loss: from logits in log space, from probabilities as -log p (inf for a
    true-label probability of exactly 0)."""
    if from_logits:
        z = x.astype(np.float64, copy=False)
        if z.ndim == 1:
            return np.logaddexp(0.0, np.where(y == 1, -z, z))
        return -log_softmax(z, axis=1)[np.arange(y.size), y]
    p = x.astype(np.float64, copy=False)
    true = p[np.arange(y.size), y] if p.ndim == 2 else np.where(y == 1, p, 1.0 - p)
    with np.errstate(divide="ignore"):
        return -np.log(true)


def worse_beyond_noise(
    *,
    ece_before: float,
    ece_after: float,
    floor_after: NoiseFloor,
    loss_before: np.ndarray,
    loss_after: np.ndarray,
    sample_weight: np.ndarray | None = None,
) -> tuple[Worse, ...]:
    """The instruments (ECE, NLL) the map made worse beyond noise (see the module docstring).

    Examples
    --------
    Four rows whose log-loss each rises by 0.1 (a rise with no spread at all) and an ECE that
    rises by 0.05 against an after-map floor whose 95th percentile is 0.02:

    >>> import numpy as np
    >>> from calibkit.measure.uncertainty import NoiseFloor
    >>> floor = NoiseFloor(0.01, 0.02, 100, 4, 15, "l1", 0, "exact")
    >>> before = np.array([0.1, 0.2, 0.3, 0.4])
    >>> worse = worse_beyond_noise(ece_before=0.1, ece_after=0.15, floor_after=floor,
    ...                            loss_before=before, loss_after=before + 0.1)
    >>> [w.instrument for w in worse]
    ['ECE', 'NLL']
    """
    out = []
    rise = ece_after - ece_before
    if rise > floor_after.p95:
        out.append(
            Worse(
                "ECE",
                ece_before,
                ece_after,
                floor_after.p95,
                f"ECE {ece_before:.4f} -> {ece_after:.4f}, a rise beyond the 95th percentile of "
                f"the noise floor after the map ({floor_after.p95:.4f})",
            )
        )
    w = sample_weight
    if w is not None:  # a row of weight 0 is left out (its loss may be infinite)
        counted = w > 0
        loss_before, loss_after, w = loss_before[counted], loss_after[counted], w[counted]
    # an infinite loss (a true label given probability 0) is reported by the ledger itself
    finite = bool(np.all(np.isfinite(loss_before)) and np.all(np.isfinite(loss_after)))
    if finite and loss_after.size >= 2:
        d = loss_after - loss_before
        if w is None:
            mean = float(d.mean())
            bound = Z_BOUND * float(d.std(ddof=1)) / math.sqrt(d.size)
        else:
            mean, se = _weighted_mean_se(d, w)
            bound = Z_BOUND * se
        if mean > 0.0 and mean > bound:
            if w is None:
                before, after = float(loss_before.mean()), float(loss_after.mean())
            else:
                before, after = _weighted_mean(loss_before, w), _weighted_mean(loss_after, w)
            out.append(
                Worse(
                    "NLL",
                    before,
                    after,
                    bound,
                    f"NLL {before:.4f} -> {after:.4f}, a mean per-row rise of {mean:.4g}, beyond "
                    f"{Z_BOUND:g} standard errors of the paired per-row differences "
                    f"({bound:.4g})",
                )
            )
    return tuple(out)


def _weighted_mean(x: np.ndarray, w: np.ndarray) -> float:
    return float(np.sum(w * x) / np.sum(w))


def _weighted_mean_se(d: np.ndarray, w: np.ndarray) -> tuple[float, float]:
    """The weighted mean of ``d`` and its standard error (see the module docstring)."""
    total = float(np.sum(w))
    mean = float(np.sum(w * d) / total)
    n = d.size
    var = n / (n - 1) * float(np.sum((w * (d - mean)) ** 2)) / total**2
    return mean, math.sqrt(var)
