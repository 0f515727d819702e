"""Calibration measured on the cumulative gap, without bins: the KS calibration error (Gupta et
al. 2021) and the Kolmogorov-Smirnov and Kuiper calibration tests (Arrieta-Ibarra, Gujral,
Tannen, Tygert and Xu 2022).

Sort the forecasts and walk up them: the cumulative gap at forecast t is

    C(t) = (1 / N) sum over forecasts f_i <= t of (y_i - f_i),

the events seen so far minus the events forecast, per row. A calibrated forecaster's C stays
near 0 everywhere; a rising stretch marks forecasts that are too low there (events happen more
often than forecast), a falling stretch forecasts that are too high. The **KS calibration
error** is max |C|, in probability units. Under calibration C is a sum of independent
mean-zero steps whose variance adds up to sigma^2 = sum f_i (1 - f_i) / N^2, so C / sigma
tends to a standard Brownian motion on [0, 1]: the **KS statistic** max |C| / sigma is
compared with the law of the largest absolute value of that motion and the **Kuiper
statistic** (max C - min C) / sigma, the range of the path from its start C = 0, with the law
of its range (:mod:`calibkit.measure.distributions`). The p-values are asymptotic.

Tied forecasts enter the gap together (it is read at each distinct forecast), so the numbers do
not depend on the order of the rows.

With sample weights w_i the gap is C(t) = sum over f_i <= t of w_i (y_i - f_i) / sum w_i, and
sigma^2 its variance under calibration with the weights held fixed, sum w_i^2 f_i (1 - f_i) /
(sum w_i)^2: the rows are independent draws whose importance is w_i, so the tests' null uses the
information the rows hold, not their total weight. Where every f_i (1 - f_i) is the same this is
the average variance over Kish's effective size (sum w)^2 / sum w^2; in general it is the exact
variance that Kish's size approximates. Integer weights as repeated rows would instead give
sum w_i f_i (1 - f_i) / (sum w_i)^2 (a row repeated w times as w independent rows): the gap and
the KS calibration error equal those of the repeated rows, the statistics and p-values do not.

The functions take (confidence, outcome) pairs: P(y = 1) with the event y, or top-label pairs
(max probability, prediction correct) of :func:`calibkit.top_label`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _kernels
from .. import _validate as v
from .distributions import brownian_max_abs_sf, brownian_range_sf
from .pooled import Pooled, pool_ties
from .uncertainty import TestResult

__all__ = [
    "CumulativeCalibration",
    "cumulative_calibration",
    "cumulative_from_pooled",
    "cumulative_of",
    "ks_calibration_error",
    "ks_test",
    "kuiper_test",
]


@dataclass(frozen=True)
class CumulativeCalibration:
    """The cumulative gap and the measures and tests read from it.

    ``x`` are the distinct forecasts (increasing) and ``gap`` the cumulative gap C after each;
    ``ks_error`` is ``max |C|`` (reached at forecast ``ks_at``) and ``kuiper_error`` the range
    max C - min C of the path from 0; ``sigma`` is the standard deviation of C at the end
    under calibration; ``ks`` and ``kuiper`` the tests. Weighted, ``n`` counts the rows of
    positive weight and ``weight`` is their total weight (None when unweighted).
    """

    x: np.ndarray
    gap: np.ndarray
    sigma: float
    ks_error: float
    ks_at: float
    kuiper_error: float
    ks: TestResult
    kuiper: TestResult
    n: int
    weight: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "x": self.x.tolist(),
            "gap": self.gap.tolist(),
            "sigma": self.sigma,
            "ks_error": self.ks_error,
            "ks_at": self.ks_at,
            "kuiper_error": self.kuiper_error,
            "ks": self.ks.to_dict(),
            "kuiper": self.kuiper.to_dict(),
            "n": self.n,
            **({} if self.weight is None else {"weight": self.weight}),
        }

    def __str__(self) -> str:
        where = ""
        if self.ks_error > 0:
            side = "above" if self.gap[np.argmax(np.abs(self.gap))] > 0 else "below"
            where = f" at confidence {self.ks_at:.4g} (events {side} the forecasts up to there)"
        weight = "" if self.weight is None else f" (total weight {self.weight:g})"
        return (
            f"KS calibration error {self.ks_error:.4f}{where}, N = {self.n}{weight}\n"
            f"  {self.ks}\n  {self.kuiper}"
        )


def cumulative_from_pooled(pooled: Pooled) -> CumulativeCalibration:
    """The cumulative gap and its tests from forecasts pooled by value (what
    :func:`cumulative_of` computes; an engine holding per-value counts and events calls it
    directly; weighted pooled forecasts give the weighted gap and tests, see the module)."""
    n = pooled.n
    mass = pooled.total_mass if pooled.weighted else n
    if _kernels.use_numba(pooled.x.size):  # one pass; the numpy code below is its reference
        empty = np.empty(0)
        gap, var, i, high, low = _kernels.numba_distinct().cumulative_gap(
            pooled.x,
            pooled.count,
            pooled.hits,
            empty if pooled.weight is None else pooled.weight,
            empty if pooled.weight_sq is None else pooled.weight_sq,
            pooled.weighted,
            float(mass),
        )
        sigma = math.sqrt(var) / mass
        kuiper_error = float(high - low)
    else:
        if pooled.weighted:
            gap = np.cumsum(pooled.hits - pooled.mass * pooled.x) / mass
            sigma = math.sqrt(float(np.sum(pooled.mass_sq * pooled.x * (1.0 - pooled.x)))) / mass
        else:
            count = pooled.count.astype(np.float64)
            gap = np.cumsum(pooled.hits - count * pooled.x) / n
            sigma = math.sqrt(float(np.sum(count * pooled.x * (1.0 - pooled.x)))) / n
        i = int(np.argmax(np.abs(gap)))
        kuiper_error = float(max(gap.max(), 0.0) - min(gap.min(), 0.0))
    ks_error = float(abs(gap[i]))
    return CumulativeCalibration(
        x=pooled.x,
        gap=gap,
        sigma=sigma,
        ks_error=ks_error,
        ks_at=float(pooled.x[i]),
        kuiper_error=kuiper_error,
        ks=_test("Kolmogorov-Smirnov (cumulative gap)", ks_error, sigma, brownian_max_abs_sf),
        kuiper=_test("Kuiper (cumulative gap)", kuiper_error, sigma, brownian_range_sf),
        n=n,
        weight=pooled.total_mass if pooled.weighted else None,
    )


def _test(name: str, error: float, sigma: float, sf: Any) -> TestResult:
    if sigma > 0.0:
        stat = error / sigma
        return TestResult(name, stat, sf(stat), note="asymptotic, Brownian motion limit")
    if error > 0.0:
        return TestResult(
            name,
            math.inf,
            0.0,
            note="every forecast is exactly 0 or 1 and some are contradicted by the outcome",
        )
    return TestResult(
        name,
        math.nan,
        math.nan,
        note="undefined: every forecast is exactly 0 or 1 (no variance under calibration)",
    )


def cumulative_of(
    conf: np.ndarray, outcome: np.ndarray, sample_weight: np.ndarray | None = None
) -> CumulativeCalibration:
    """:func:`cumulative_calibration` of checked arrays (what the audit calls)."""
    return cumulative_from_pooled(pool_ties(conf, outcome, sample_weight=sample_weight))


def _checked(
    confidence: Any, outcome: Any, sample_weight: Any, where: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    conf = v.confidence(confidence, where=where)
    y = v.outcome(outcome, n=conf.shape[0], where=where)
    return conf, y, v.sample_weight(sample_weight, n=conf.shape[0], where=where)


def cumulative_calibration(
    confidence: Any, outcome: Any, *, sample_weight: Any = None
) -> CumulativeCalibration:
    """The cumulative gap of the forecasts, the KS calibration error, and the KS and Kuiper
    calibration tests.

    Parameters
    ----------
    confidence : array of shape (N,)
        Forecast probabilities of the event, P(y = 1), or top-label confidences
        (``ck.top_label(probs, labels)``).
    outcome : array of shape (N,)
        Whether the event happened (0/1); for top-label pairs, whether the prediction was
        right.
    sample_weight : array of shape (N,), optional
        Non-negative row weights: the weighted gap, and the tests' sigma from the squared
        weights (the module says how).

    Returns
    -------
    CumulativeCalibration
        ``gap`` at each distinct forecast ``x``, ``ks_error``, ``kuiper_error``, and the
        tests ``ks`` and ``kuiper`` (:class:`TestResult`).

    Examples
    --------
    Sorted, the forecasts 0.1, 0.21, 0.5, 0.9, 0.9 with outcomes 0, 0, 0, 1, 1 leave the
    cumulative gaps -0.02, -0.062, -0.162 and, after the tie at 0.9, -0.122; the variance under
    calibration is (0.09 + 0.1659 + 0.25 + 2 * 0.09) / 25:

    >>> import calibkit as ck
    >>> c = ck.cumulative_calibration([0.1, 0.9, 0.21, 0.9, 0.5], [0, 1, 0, 1, 0])
    >>> c.gap.round(4).tolist()
    [-0.02, -0.062, -0.162, -0.122]
    >>> round(c.ks_error, 4), round(c.sigma, 5), round(c.ks.statistic, 3)
    (0.162, 0.16564, 0.978)

    Weighted, the first row counting twice: the gaps divide by the total weight 6 and
    sigma^2 = (4 * 0.09 + 0.1659 + 0.25 + 2 * 0.09) / 36:

    >>> c = ck.cumulative_calibration([0.1, 0.9, 0.21, 0.9, 0.5], [0, 1, 0, 1, 0],
    ...                               sample_weight=[2, 1, 1, 1, 1])
    >>> c.gap.round(4).tolist(), round(c.sigma, 5)
    ([-0.0333, -0.0683, -0.1517, -0.1183], 0.16295)
    """
    return cumulative_of(*_checked(confidence, outcome, sample_weight, "cumulative_calibration"))


def ks_calibration_error(confidence: Any, outcome: Any, *, sample_weight: Any = None) -> float:
    """The KS calibration error (Gupta et al. 2021): ``max |C|`` of the cumulative gap (of the
    weighted gap with ``sample_weight``).

    Examples
    --------
    >>> import calibkit as ck
    >>> round(ck.ks_calibration_error([0.1, 0.9, 0.21, 0.9, 0.5], [0, 1, 0, 1, 0]), 4)
    0.162
    """
    where = "ks_calibration_error"
    return cumulative_of(*_checked(confidence, outcome, sample_weight, where)).ks_error


def ks_test(confidence: Any, outcome: Any, *, sample_weight: Any = None) -> TestResult:
    """The Kolmogorov-Smirnov calibration test: ``max |C| / sigma`` against the largest absolute
    value of a standard Brownian motion on [0, 1] (asymptotic p-value; with ``sample_weight``
    the weighted gap over its sigma from the squared weights, see the module).

    Examples
    --------
    >>> import calibkit as ck
    >>> t = ck.ks_test([0.1, 0.9, 0.21, 0.9, 0.5], [0, 1, 0, 1, 0])
    >>> round(t.statistic, 3), round(t.p_value, 3)
    (0.978, 0.649)
    """
    return cumulative_of(*_checked(confidence, outcome, sample_weight, "ks_test")).ks


def kuiper_test(confidence: Any, outcome: Any, *, sample_weight: Any = None) -> TestResult:
    """The Kuiper calibration test: the range (max C - min C, from C = 0 at the start) over
    sigma, against the range of a standard Brownian motion on [0, 1] (asymptotic p-value;
    weighted as :func:`ks_test`).

    Examples
    --------
    >>> import calibkit as ck
    >>> t = ck.kuiper_test([0.1, 0.9, 0.21, 0.9, 0.5], [0, 1, 0, 1, 0])
    >>> round(t.statistic, 3), round(t.p_value, 3)
    (0.978, 0.947)
    """
    return cumulative_of(*_checked(confidence, outcome, sample_weight, "kuiper_test")).kuiper
