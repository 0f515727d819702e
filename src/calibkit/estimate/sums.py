"""CBPE's resampled intervals on a large target at a cost independent of its size.

Each resample of CBPE's interval refits the calibrator and draws the target's outcomes, each
row right with its refitted probability q. For a large target two things make that cheap:

- **Moments of a piecewise-linear map.** An isotonic map interpolates linearly between its
  fitted points (and is constant outside them), so on each segment q = a + b x, and the sums of
  q and q^2 over the target's rows follow from the prefix sums of 1, x and x^2 over the sorted
  target: O(knots x log N) per resample instead of O(N).
- **The sum of the draws.** The number of right rows is a sum of independent Bernoulli(q_i);
  with variance sum q(1 - q) of at least :data:`MIN_VARIANCE` it is drawn normal with its exact
  mean and variance (the central limit theorem; Berry-Esseen bounds the error of its
  distribution function by about 0.5 / sqrt(variance)), separately for the rows acted on at a
  threshold and the others.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..recalibrate import IsotonicCalibration
from .inputs import Scores
from .methods import Fitted
from .metrics import Policy, Values, threshold_metrics

__all__ = ["MIN_ROWS", "MIN_VARIANCE", "SortedTarget", "Summed", "drawn_sums", "summed_target"]

#: The variance of a drawn sum below which the rows are drawn one by one.
MIN_VARIANCE = 100.0
#: Targets with fewer rows are drawn row by row (already cheap).
MIN_ROWS = 50_000


@dataclass(frozen=True, eq=False)
class SortedTarget:
    """Prefix sums of 1, x and x^2 over a sorted 1-D target (x: the calibrator's input).

    Examples
    --------
    >>> import numpy as np
    >>> t = SortedTarget.of(np.array([0.1, 0.4, 0.6, 0.9]))
    >>> q = np.interp(t.x, [0.2, 0.8], [0.3, 0.9])
    >>> np.allclose(t.moments([0.2, 0.8], [0.3, 0.9], start=0), [q.sum(), (q * q).sum()])
    True
    """

    x: np.ndarray
    s1: np.ndarray
    s2: np.ndarray

    @classmethod
    def of(cls, x_sorted: np.ndarray) -> SortedTarget:
        zero = np.zeros(1)
        return cls(
            x_sorted,
            np.concatenate([zero, np.cumsum(x_sorted)]),
            np.concatenate([zero, np.cumsum(x_sorted * x_sorted)]),
        )

    @property
    def n(self) -> int:
        return int(self.x.shape[0])

    def moments(self, knots_x: object, knots_y: object, *, start: int) -> tuple[float, float]:
        """Sum of q and of q^2 over rows ``start`` onwards, q = ``np.interp(x, knots_x,
        knots_y)``."""
        kx = np.asarray(knots_x, dtype=np.float64)
        ky = np.asarray(knots_y, dtype=np.float64)
        # rows [cut[j], cut[j + 1]) lie in segment j: before the first knot, between knots
        # j - 1 and j, after the last (x == a knot falls in the segment it starts)
        cut = np.concatenate([[0], np.searchsorted(self.x, kx, side="left"), [self.n]])
        cut = np.maximum(cut, start)
        slope = np.diff(ky) / np.diff(kx) if kx.shape[0] > 1 else np.zeros(0)
        b = np.concatenate([[0.0], slope, [0.0]])
        a = np.concatenate([[ky[0]], ky[:-1] - slope * kx[:-1], [ky[-1]]])
        count = np.diff(cut).astype(np.float64)
        s1 = self.s1[cut[1:]] - self.s1[cut[:-1]]
        s2 = self.s2[cut[1:]] - self.s2[cut[:-1]]
        total = float(np.sum(a * count + b * s1))
        squares = float(np.sum(a * a * count + 2.0 * a * b * s1 + b * b * s2))
        return total, squares


def summed_target(fitted: Fitted, target: Scores, policy: Policy | None) -> Summed | None:
    """The prefix sums that draw CBPE's resamples in O(knots) each, when they apply: a large
    target, an isotonic map of the top-label confidence (clipped outside its range), and
    enough variance in each drawn sum for the normal draw (see the module docstring)."""
    cal = fitted.calibrator
    if (
        fitted.method != "cbpe"
        or target.n < MIN_ROWS
        or target.binary
        or not isinstance(cal, IsotonicCalibration)
        or cal.out_of_bounds != "clip"
        or len(cal.maps_) != 1
    ):
        return None
    sorted_target = SortedTarget.of(target.confidence)  # sorted by the caller
    start = (
        target.n if policy is None else int(np.searchsorted(target.confidence, policy.threshold))
    )
    q = fitted.event(target)
    variance = q * (1.0 - q)
    parts = [variance] if policy is None else [variance[:start], variance[start:]]
    if any(part.size and part.sum() < MIN_VARIANCE for part in parts):
        return None
    return Summed(sorted_target, start)


@dataclass(frozen=True)
class Summed:
    target: SortedTarget
    start: int  # the first row acted on (rows are sorted by confidence)


def drawn_sums(
    cal: IsotonicCalibration, summed: Summed, policy: Policy | None, rng: np.random.Generator
) -> Values:
    """One draw of the number right, acted on and not, from the refitted map's moments."""
    fitted_map = cal.maps_[0]
    n, start = summed.target.n, summed.start
    total, squares = summed.target.moments(fitted_map.x, fitted_map.y, start=0)
    acted, acted_squares = summed.target.moments(fitted_map.x, fitted_map.y, start=start)
    right_acts = normal_sum(acted, acted - acted_squares, rng)
    rest = total - acted
    right = right_acts + normal_sum(rest, rest - (squares - acted_squares), rng)
    out: Values = {"accuracy": right / n}
    if policy is not None:
        out.update(threshold_metrics(n, n - start, right_acts, policy))
    return out


def normal_sum(mean: float, variance: float, rng: np.random.Generator) -> float:
    return mean + float(rng.normal(0.0, np.sqrt(max(variance, 0.0)))) if mean or variance else 0.0
