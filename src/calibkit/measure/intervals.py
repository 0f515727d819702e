"""Confidence intervals for a binomial proportion (a bin's observed accuracy)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate as v
from .distributions import normal_quantile

__all__ = ["INTERVALS", "binomial_interval", "proportion_interval"]

INTERVALS = ("wilson", "clopper-pearson", "jeffreys")


def binomial_interval(
    successes: Any, trials: Any, *, method: str = "wilson", level: float = 0.95
) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided interval for a proportion, elementwise; NaN where ``trials`` is 0.

    ``"wilson"`` is the score interval, ``"clopper-pearson"`` the exact (conservative) beta
    interval, ``"jeffreys"`` the equal-tailed Beta(k + 1/2, n - k + 1/2) interval. Both beta
    intervals use 0 (1) as the lower (upper) limit when k = 0 (k = n).

    Examples
    --------
    Seven correct out of seven certify only "above 0.652" at one-sided 95%, that is
    the lower end of the two-sided 90% exact interval, 0.05 ** (1 / 7).

    >>> import calibkit as ck
    >>> lo, hi = ck.binomial_interval(7, 7, method="clopper-pearson", level=0.90)
    >>> round(float(lo), 3), float(hi)
    (0.652, 1.0)
    """
    where = "binomial_interval"
    method = v.choice(method, name="method", allowed=INTERVALS, where=where)
    level = v.level(level, where=where)
    scalar = np.ndim(successes) == 0 and np.ndim(trials) == 0
    k, n = v.counts(successes, trials, where=where)
    lo, hi = proportion_interval(k, n, method=method, level=level)
    if scalar:
        return lo[0], hi[0]
    return lo, hi


def proportion_interval(
    successes: np.ndarray, trials: np.ndarray, *, method: str, level: float
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`binomial_interval` of checked arrays, which may be fractional: a weighted
    proportion ``acc`` out of Kish's effective size n_eff enters as ``n_eff * acc`` successes of
    ``n_eff`` trials (the Wilson score formula and the beta quantiles are defined for real
    counts). NaN where ``trials`` is 0.

    Examples
    --------
    >>> import numpy as np
    >>> lo, hi = proportion_interval(np.array([1.5]), np.array([3.0]), method="wilson", level=0.95)
    >>> round(float(lo[0]), 4), round(float(hi[0]), 4)
    (0.1253, 0.8747)
    """
    k = np.asarray(successes, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    alpha = 1.0 - level
    lo = np.full(k.shape, np.nan)
    hi = lo.copy()
    ok = n > 0
    k, n = k[ok], n[ok]
    if method == "wilson":
        z = normal_quantile(1.0 - alpha / 2.0)
        centre = (k + z * z / 2.0) / (n + z * z)
        half = z / (n + z * z) * np.sqrt(np.maximum(k * (n - k), 0.0) / n + z * z / 4.0)
        lo[ok], hi[ok] = np.maximum(centre - half, 0.0), np.minimum(centre + half, 1.0)
    else:
        from scipy.special import betaincinv

        a_lo, b_lo, a_hi, b_hi = (
            (k, n - k + 1, k + 1, n - k)
            if method == "clopper-pearson"
            else (k + 0.5, n - k + 0.5, k + 0.5, n - k + 0.5)
        )
        with np.errstate(invalid="ignore"):
            lo[ok] = np.where(k == 0, 0.0, betaincinv(np.maximum(a_lo, 1e-300), b_lo, alpha / 2))
            hi[ok] = np.where(
                k == n, 1.0, betaincinv(a_hi, np.maximum(b_hi, 1e-300), 1.0 - alpha / 2)
            )
    return lo, hi
