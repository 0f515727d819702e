"""Forecasts pooled by value, and the isotonic (pool-adjacent-violators) fit on them.

Every measure that walks along the sorted forecasts (the CORP reliability curve, the cumulative
gap of the KS and Kuiper tests, the isotonic calibrator) first pools the rows that share a
forecast value: one point per distinct value, with its count and its number of events. Pooling
ties is what makes those measures functions of the forecast rather than of the row order: R's
``reliabilitydiag`` gets the same by ordering tied forecasts by decreasing outcome before PAV
(``isoreg`` on ``order(x, -y)``), which makes PAV pool each tie into one block, and
scikit-learn's ``IsotonicRegression`` by averaging tied targets first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _kernels
from .masses import Masses

__all__ = ["Pooled", "isotonic_fit", "isotonic_of_sums", "pav", "pool_ties", "step_at"]


@dataclass(frozen=True)
class Pooled(Masses):
    """Rows pooled by forecast value: ``x`` strictly increasing (float64), ``count`` rows at
    each (int64) and ``hits`` the sum of their outcomes (float64).

    Weighted (``weight`` not None): ``hits`` is the sum of w y, ``weight`` the sum of w and
    ``weight_sq`` the sum of w^2 at each value; rows of weight 0 are not pooled (they stand
    for no row), so ``count`` counts the rows of positive weight."""

    x: np.ndarray
    count: np.ndarray
    hits: np.ndarray
    weight: np.ndarray | None = None
    weight_sq: np.ndarray | None = None

    @property
    def mean(self) -> np.ndarray:
        """The observed (weighted) event rate at each value."""
        return self.hits / (self.count if self.weight is None else self.weight)


def pool_ties(
    conf: np.ndarray, outcome: np.ndarray, *, sample_weight: np.ndarray | None = None
) -> Pooled:
    """Pool checked (forecast, outcome) arrays by forecast value (one sort, vectorised).

    Forecasts in [0, 1] are sorted as bit patterns with the outcome packed in; other real
    scores (an isotonic calibrator's) by an argsort. With (checked) ``sample_weight``: the
    weighted sums of :class:`Pooled`, by an argsort carrying the weights (rows of weight 0
    left out).

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.measure.pooled import pool_ties
    >>> p = pool_ties(np.array([0.7, 0.2, 0.7, 0.7]), np.array([1, 0, 0, 1]))
    >>> p.x.tolist(), p.count.tolist(), p.hits.tolist()
    ([0.2, 0.7], [1, 3], [0.0, 2.0])
    >>> p = pool_ties(np.array([0.7, 0.2, 0.7, 0.7]), np.array([1, 0, 0, 1]),
    ...               sample_weight=np.array([2.0, 1.0, 0.5, 0.0]))
    >>> p.count.tolist(), p.hits.tolist(), p.weight.tolist(), p.mean.tolist()
    ([1, 2], [0.0, 2.0], [1.0, 2.5], [0.0, 0.8])
    """
    x = np.asarray(conf, dtype=np.float64)
    hit = np.asarray(outcome) == 1
    if sample_weight is not None:
        return _pool_weighted(x, hit, sample_weight)
    if x.size and 0.0 <= x.min() and x.max() <= 1.0:
        # One sort of (value, outcome) keys, no argsort and no gathers: a float in [0, 1]
        # sorts as its bit pattern (an int64 below 2**62), so the pattern shifted left by one
        # bit, the outcome in the freed bit, sorts by value and decodes exactly.
        key = (x.view(np.int64) << 1) | hit
        key.sort()
        xs = (key >> 1).view(np.float64)
        events = (key & 1).astype(np.float64)
    else:  # any real scores (an isotonic calibrator's): sort by value, carry the outcomes
        order = np.argsort(x)
        xs, events = x[order], hit[order].astype(np.float64)
    new = np.empty(xs.size, dtype=bool)
    new[:1] = True
    np.not_equal(xs[1:], xs[:-1], out=new[1:])
    if new.all():  # every forecast distinct (continuous forecasts): nothing to pool
        return Pooled(xs, np.ones(xs.size, dtype=np.int64), events)
    starts = np.flatnonzero(new)
    count = np.diff(np.append(starts, xs.size)).astype(np.int64)
    return Pooled(xs[starts], count, np.add.reduceat(events, starts))


def _pool_weighted(x: np.ndarray, hit: np.ndarray, w: np.ndarray) -> Pooled:
    """:func:`pool_ties` with weights: the rows of positive weight sorted by value (stable),
    their weights and weighted outcomes summed per value."""
    keep = w > 0
    if not keep.all():
        x, hit, w = x[keep], hit[keep], w[keep]
    x = x + 0.0  # -0.0 becomes 0.0: equal values must pool as one
    order = np.argsort(x, kind="stable")
    xs, ws = x[order], w[order]
    new = np.empty(xs.size, dtype=bool)
    new[:1] = True
    np.not_equal(xs[1:], xs[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    return Pooled(
        xs[starts],
        np.diff(np.append(starts, xs.size)).astype(np.int64),
        np.add.reduceat(np.where(hit[order], ws, 0.0), starts),
        weight=np.add.reduceat(ws, starts),
        weight_sq=np.add.reduceat(ws * ws, starts),
    )


#: While the fits to come hold at most this many values in all, each isotonic fit is a Python
#: loop (the numba kernel's algorithm, the same arithmetic; about 0.4 us a value): importing
#: scipy.optimize costs more (about 0.35 s, a third of a small audit's whole process). Above
#: it (a large fit, or a band's resamples), scipy's compiled PAVA (about 0.03 us a value).
PYTHON_PAV_MAX = 1 << 18


def pav(hits: np.ndarray, mass: np.ndarray, *, fits: int = 1) -> np.ndarray:
    """The ``mass``-weighted least-squares non-decreasing fit of the rates ``hits / mass``
    (pool-adjacent-violators; ``mass`` positive), clipped to [0, 1]: a pool's rate of 0/1
    outcomes lies there, but for an ulp of rounding that a probability must not keep.

    ``fits``: how many fits of this size the caller makes (a band's resamples). Up to
    :data:`PYTHON_PAV_MAX` values in all, one pass with a stack of blocks, each block's value
    its sum of hits over its sum of mass (as ``_numba_distinct.pav``); above it
    ``scipy.optimize.isotonic_regression`` (imported there, so a small audit never loads
    scipy).

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.measure.pooled import pav
    >>> pav(np.array([1.0, 0.0, 0.0, 0.0, 1.0, 1.0]), np.ones(6)).tolist()
    [0.25, 0.25, 0.25, 0.25, 1.0, 1.0]
    >>> pav(np.array([3.0, 1.0]), np.array([3.0, 2.0])).tolist()
    [0.8, 0.8]
    """
    if hits.size * fits > PYTHON_PAV_MAX:
        from scipy.optimize import isotonic_regression

        fitted = isotonic_regression(hits / mass, weights=mass, increasing=True).x
        return np.clip(fitted, 0.0, 1.0)
    starts: list[int] = []
    sums: list[float] = []
    masses: list[float] = []
    for i, (h, m) in enumerate(zip(hits.tolist(), mass.tolist(), strict=True)):
        start = i
        # pool while the block below has a higher rate (a / b > c / d as a d > c b, b, d > 0)
        while sums and sums[-1] * m > h * masses[-1]:
            h += sums.pop()
            m += masses.pop()
            start = starts.pop()
        starts.append(start)
        sums.append(h)
        masses.append(m)
    values = np.clip(np.array(sums) / np.array(masses), 0.0, 1.0)
    return np.repeat(values, np.diff(np.append(starts, hits.size)))


def isotonic_fit(pooled: Pooled) -> np.ndarray:
    """The isotonic recalibration at each pooled value: PAV of the event rates weighted by
    the counts (by the sums of the sample weights when weighted).

    Many values take the numba kernel (``_numba_distinct.pav``: one pass, each block's value
    its sum of events over its mass); :func:`pav` is its reference, equal to rounding.

    >>> import numpy as np
    >>> isotonic_fit(Pooled(np.array([0.1, 0.2, 0.3]), np.array([2, 1, 1]),
    ...                     np.array([2.0, 0.0, 1.0]))).tolist()
    [0.6666666666666666, 0.6666666666666666, 1.0]
    """
    return isotonic_of_sums(pooled.hits, pooled.mass)


def isotonic_of_sums(hits: np.ndarray, mass: np.ndarray, *, fits: int = 1) -> np.ndarray:
    """The isotonic fit of the rates ``hits / mass`` weighted by ``mass`` (positive): the
    numba kernel for many values, else :func:`pav` (what :func:`isotonic_fit` and the CORP
    bands' resamples call; ``fits``: how many such fits the caller makes)."""
    if _kernels.use_numba(hits.size):
        return np.asarray(_kernels.numba_distinct().pav(hits, mass))
    return pav(hits, mass, fits=fits)


def step_at(x: np.ndarray, values: np.ndarray, at: np.ndarray) -> np.ndarray:
    """A right-continuous step function through ``(x, values)`` at the points ``at``: the
    value of the highest ``x`` at or below each point, the lowest one's below the range."""
    i = np.searchsorted(x, at, side="right") - 1
    return values[np.maximum(i, 0)]
