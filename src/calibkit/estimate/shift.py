"""Has the traffic moved away from the reference? Two-sample tests on what needs no label: the
top-label confidence (Kolmogorov-Smirnov) and the predicted-class mix (chi-squared)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..measure.distributions import chi2_sf, kolmogorov_sf
from .inputs import Scores

__all__ = ["MIN_EXPECTED", "ShiftTest", "class_mix_test", "ks_distance", "ks_test", "shift_test"]

#: Classes expected fewer times than this in either sample are pooled into one cell, so that the
#: chi-squared approximation holds (Cochran's rule of thumb).
MIN_EXPECTED = 5.0


@dataclass(frozen=True)
class ShiftTest:
    """The two-sample tests of one target against the reference.

    ``ks`` is the Kolmogorov-Smirnov distance between the two top-label confidence
    distributions and ``ks_p`` its asymptotic p-value; ``mix_chi2``, ``mix_df`` and ``mix_p``
    the chi-squared test of homogeneity of the predicted classes (None for a 1-D confidence,
    which carries no predicted class, or when one class is predicted everywhere).
    """

    ks: float
    ks_p: float
    mix_chi2: float | None = None
    mix_df: int | None = None
    mix_p: float | None = None

    @property
    def p_values(self) -> tuple[float, ...]:
        return (self.ks_p,) if self.mix_p is None else (self.ks_p, self.mix_p)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ks": self.ks,
            "ks_p": self.ks_p,
            "mix_chi2": self.mix_chi2,
            "mix_df": self.mix_df,
            "mix_p": self.mix_p,
        }


def ks_distance(a: np.ndarray, b: np.ndarray) -> float:
    """The largest gap between the two empirical distribution functions.

    The gap is largest at the last of a run of equal values of one sample, so it is read there
    only: one sort of each sample (cheap when it is sorted already) and a search of each
    sample's distinct values in the other.

    Examples
    --------
    >>> import numpy as np
    >>> ks_distance(np.array([0.1, 0.2]), np.array([0.2, 0.3]))
    0.5
    """
    a, b = np.sort(a), np.sort(b)
    gap = 0.0
    for x, other in ((a, b), (b, a)):
        ends = np.append(np.flatnonzero(np.diff(x)), x.shape[0] - 1)
        own = (ends + 1) / x.shape[0]
        theirs = np.searchsorted(other, x[ends], side="right") / other.shape[0]
        gap = max(gap, float(np.max(np.abs(own - theirs))))
    return gap


def ks_test(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """The two-sample Kolmogorov-Smirnov distance and its asymptotic p-value, Kolmogorov's
    limit at sqrt(n m / (n + m)) D (``scipy.stats.ks_2samp(method="asymp")`` before its finite-n
    correction). With tied values (stated confidences repeat) the test is conservative.

    Examples
    --------
    >>> import numpy as np
    >>> d, p = ks_test(np.linspace(0, 1, 200), np.linspace(0.3, 1, 200))
    >>> round(d, 3), p < 1e-6
    (0.3, True)
    """
    d = ks_distance(a, b)
    n, m = a.shape[0], b.shape[0]
    return d, kolmogorov_sf(math.sqrt(n * m / (n + m)) * d)


def class_mix_test(a: np.ndarray, b: np.ndarray) -> tuple[float, int, float] | None:
    """Chi-squared test that two samples of predicted classes have the same class shares
    (a 2 x C contingency table; classes expected fewer than :data:`MIN_EXPECTED` times in
    either sample are pooled into one cell). None when fewer than two cells are left.

    Examples
    --------
    >>> import numpy as np
    >>> stat, df, p = class_mix_test(np.repeat([0, 1], [50, 50]), np.repeat([0, 1], [70, 30]))
    >>> round(stat, 4), df, round(p, 4)
    (8.3333, 1, 0.0039)
    """
    n_classes = int(max(a.max(), b.max())) + 1
    table = np.stack([np.bincount(a, minlength=n_classes), np.bincount(b, minlength=n_classes)])
    table = table[:, table.sum(axis=0) > 0].astype(np.float64)
    share = table.sum(axis=1, keepdims=True) / table.sum()
    expected = share * table.sum(axis=0, keepdims=True)
    rare = expected.min(axis=0) < MIN_EXPECTED
    if rare.any():
        table = np.column_stack([table[:, ~rare], table[:, rare].sum(axis=1)])
        table = table[:, table.sum(axis=0) > 0]
    if table.shape[1] < 2:
        return None
    expected = share * table.sum(axis=0, keepdims=True)
    stat = float(np.sum((table - expected) ** 2 / expected))
    df = table.shape[1] - 1
    return stat, df, chi2_sf(stat, df)


def shift_test(reference: Scores, target: Scores) -> ShiftTest:
    """Both tests of ``target`` against ``reference`` (the class mix only with probabilities)."""
    d, p = ks_test(reference.confidence, target.confidence)
    if reference.probs is None or target.probs is None:
        return ShiftTest(d, p)
    mix = class_mix_test(reference.predicted, target.predicted)
    if mix is None:
        return ShiftTest(d, p)
    return ShiftTest(d, p, *mix)
