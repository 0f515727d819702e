"""Calibration slope and intercept (Cox 1958): logistic recalibration of the outcomes on the
logit of the forecasts.

The fit is ``P(outcome = 1) = sigmoid(a + b * logit(p))``. A calibrated forecaster has slope
``b = 1`` and intercept ``a = 0``. A slope below 1 means the forecasts are spread too wide
(too close to 0 and 1: overconfident); above 1, too narrow (too close to the middle:
underconfident). Calibration-in-the-large is the intercept with the slope held at 1
(``sigmoid(a + logit(p))``): positive when the event happens more often than forecast.

Forecasts of exactly 0 or 1 have an infinite logit. One whose outcome agrees contributes
nothing to the likelihood at any positive slope, so leaving it out of the fit changes nothing
(``n_certain`` counts them). One whose outcome disagrees (a certainty that failed) has
likelihood zero at every positive slope, so no fit of all the rows exists: the fit is then made
on the forecasts strictly between 0 and 1, and the result says so (``n_failed`` counts the
failed certainties, ``note`` names them): an infinite miscalibration on those rows, reported
beside the slope of the others, never hidden by clipping them.

The fit is Newton's method on sums over the rows (:mod:`calibkit.measure.slope_fit`), so it
merges over chunks and runs where the data lives. In memory, a large input is read once: its
logit moment histogram (:mod:`calibkit.measure.slope_grid`) gives every Newton step's sums to
rounding; small inputs, and the reference, sum over the rows at each step.

With sample weights the fit maximises the weighted log-likelihood sum w_i log L_i (what
scikit-learn's ``LogisticRegression(penalty=None)`` and statsmodels' GLM with ``freq_weights``
fit), and the standard errors come from the weighted information sum w_i q_i (1 - q_i) x_i x_i^T:
the weights read as frequency weights, so integer weights give the fit, intervals and p-values
of the rows repeated that many times. For importance (survey) weights, where a row stands for w
rows but was observed once, these intervals are too narrow; those need the sandwich variance
H^-1 (sum w_i^2 r_i^2 x_i x_i^T) H^-1 (statsmodels' ``cov_type="HC0"`` with ``var_weights``),
which this module does not give.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _kernels
from .. import _validate as v
from .slope_fit import (
    TERMS,
    WITH_LOGLIK,
    Evaluate,
    Point,
    slope_from_sums,
    slope_terms,
    undefined_slope,
)
from .slope_grid import (
    GRID_CELLS,
    GRID_SPAN,
    GRID_STEPS,
    MOMENT_CELLS,
    MOMENT_SLOPE,
    MOMENT_STEPS,
    MOMENTS,
    grid_counts,
    grid_start,
    moment_evaluate,
    start_from,
)
from .slope_result import CalibrationSlope

__all__ = [  # with the names the engines take from here (defined in slope_fit, slope_grid)
    "GRID_CELLS",
    "GRID_SPAN",
    "GRID_STEPS",
    "TERMS",
    "WITH_LOGLIK",
    "CalibrationSlope",
    "calibration_slope",
    "certain_and_grid",
    "grid_counts",
    "grid_start",
    "slope_from_sums",
    "slope_of",
    "rows_slope",
    "slope_terms",
    "split_certain",
    "terms_at",
    "undefined_slope",
    "weighted_rows",
]


def split_certain(conf: np.ndarray, outcome: np.ndarray) -> tuple[np.ndarray, np.ndarray, int, int]:
    """The logits of the forecasts strictly inside (0, 1) with their outcomes, the number of
    forecasts of exactly 0 or 1, and how many of those failed."""
    conf = np.asarray(conf, dtype=np.float64)
    y = np.asarray(outcome, dtype=np.float64)
    certain = (conf <= 0.0) | (conf >= 1.0)
    n_certain = int(np.count_nonzero(certain))
    n_failed = 0
    if n_certain:
        n_failed = int(np.count_nonzero(certain & ((conf >= 1.0) != (y == 1.0))))
        keep = ~certain
        conf, y = conf[keep], y[keep]
    x = np.log(conf) - np.log1p(-conf)
    return x, y, n_certain, n_failed


def calibration_slope(
    confidence: Any, outcome: Any, *, level: float = 0.95, sample_weight: Any = None
) -> CalibrationSlope:
    """Calibration slope and intercept: the logistic fit of the outcome on logit(confidence).

    Parameters
    ----------
    confidence : array of shape (N,)
        Forecast probabilities of the event (P(y = 1), or a top-label confidence).
    outcome : array of shape (N,)
        Whether the event happened (0/1).
    level : float
        Level of the Wald intervals.
    sample_weight : array of shape (N,), optional
        Non-negative row weights: the weighted logistic fit, with intervals for frequency
        weights (integer weights give those of the rows repeated; the module says what
        importance weights would need). Rows of weight 0 are left out.

    Returns
    -------
    CalibrationSlope
        ``slope`` (1 = calibrated; below 1: forecasts spread too wide, overconfident; above 1:
        too narrow), ``intercept``, ``in_the_large`` (intercept with the slope fixed at 1; 0 =
        calibrated), each with its standard error, interval and p-value.

    Examples
    --------
    Forecasts whose logits are twice what they should be are fitted with slope 1/2:

    >>> import numpy as np, calibkit as ck
    >>> from calibkit.measure.slope import calibration_slope
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(0, 1.5, 20000)
    >>> y = (rng.random(20000) < 1 / (1 + np.exp(-z))).astype(int)
    >>> s = calibration_slope(1 / (1 + np.exp(-2 * z)), y)
    >>> round(s.slope, 1), s.spread
    (0.5, 'too wide')

    Weighted, a row of weight 2 is fitted as two rows:

    >>> p, y = [0.2, 0.4, 0.6, 0.8, 0.3, 0.7], [0, 1, 0, 1, 1, 0]
    >>> a = calibration_slope(p, y, sample_weight=[2, 1, 1, 1, 1, 1])
    >>> b = calibration_slope([0.2] + p, [0] + y)
    >>> round(a.slope, 8) == round(b.slope, 8), round(a.slope_se, 8) == round(b.slope_se, 8)
    (True, True)
    """
    where = "calibration_slope"
    conf = v.confidence(confidence, where=where)
    y = v.outcome(outcome, n=conf.shape[0], where=where)
    level = v.level(level, where=where)
    w = v.sample_weight(sample_weight, n=conf.shape[0], where=where)
    return slope_of(conf, y, level=level, sample_weight=w)


def certain_and_grid(conf: np.ndarray, outcome: np.ndarray) -> tuple[int, int, np.ndarray]:
    """The forecasts of exactly 0 or 1, how many of them failed, and the :func:`grid_counts` of
    the others, of validated arrays (one pass of the numba kernel for large inputs)."""
    if _kernels.use_numba(conf.shape[0]):
        n_certain, n_failed, counts = _kernels.numba_slope().grid(
            conf, outcome, GRID_STEPS, GRID_SPAN, GRID_CELLS
        )
        return int(n_certain), int(n_failed), counts
    x, y, n_certain, n_failed = split_certain(conf, outcome)
    return n_certain, n_failed, grid_counts(x, y)


def terms_at(conf: np.ndarray, outcome: np.ndarray, points: list[Point]) -> list[np.ndarray]:
    """The sums of :func:`slope_terms` at each point over the validated forecasts strictly
    inside (0, 1) (one pass of the numba kernel for large inputs)."""
    if _kernels.use_numba(conf.shape[0]):
        return list(_kernels.numba_slope().terms(conf, outcome, points))
    x, y, _, _ = split_certain(conf, outcome)
    return [slope_terms(x, y, a, b) for a, b, *_ in points]


def slope_of(
    conf: np.ndarray,
    outcome: np.ndarray,
    *,
    level: float = 0.95,
    sample_weight: np.ndarray | None = None,
) -> CalibrationSlope:
    """:func:`calibration_slope` of validated arrays (what the audit calls; weights checked).

    Large inputs take one pass of the numba kernel (``_numba_slope.moments``: the logit moment
    histogram, the logits computed in the loop), and the fit is made on its cells
    (:func:`~calibkit.measure.slope_grid.moment_evaluate`); where a logit lies outside the
    cells, or the slope is steeper than
    :data:`~calibkit.measure.slope_grid.MOMENT_SLOPE`, the fit is finished on the rows
    (:func:`rows_slope`). Small inputs, and the reference, go to :func:`split_certain`,
    :func:`~calibkit.measure.slope_grid.grid_counts` and
    :func:`~calibkit.measure.slope_fit.slope_terms`."""
    n = int(conf.shape[0])
    if not _kernels.use_numba(n):
        if sample_weight is not None:
            return _weighted_slope(conf, outcome, sample_weight, level)
        x, y, n_certain, n_failed = split_certain(conf, outcome)  # the logits once, every round

        def rows(points: list[Point]) -> list[np.ndarray]:
            return [slope_terms(x, y, a, b) for a, b, *_ in points]

        return slope_from_sums(
            rows,
            n=n,
            n_certain=n_certain,
            n_failed=n_failed,
            level=level,
            start=grid_start(grid_counts(x, y)),
        )
    n_certain, n_failed, n_outside, moments = _kernels.numba_slope().moments(
        conf, outcome, sample_weight, MOMENT_STEPS, GRID_SPAN, MOMENT_CELLS, MOMENTS
    )
    weight = None
    if sample_weight is not None:
        n, weight = int(np.count_nonzero(sample_weight > 0)), float(sample_weight.sum())
    if n_outside:
        return rows_slope(conf, outcome, level=level, sample_weight=sample_weight)
    cells = moment_evaluate(moments)
    start = start_from(cells)
    # beyond MOMENT_SLOPE the expansion's remainder is not negligible: the rows finish the fit
    steep = abs(start[0][1]) > MOMENT_SLOPE
    return slope_from_sums(
        _rows(conf, outcome, sample_weight) if steep else cells,
        n=n,
        n_certain=int(n_certain),
        n_failed=int(n_failed),
        level=level,
        start=start,
        weight=weight,
    )


def _rows(conf: np.ndarray, outcome: np.ndarray, w: np.ndarray | None) -> Evaluate:
    """Each round's sums over the rows (the numba kernel; numpy with weights)."""
    if w is None:

        def unweighted(points: list[Point]) -> list[np.ndarray]:
            return terms_at(conf, outcome, points)

        return unweighted
    x, y, wx, _, _, _ = weighted_rows(conf, outcome, w)

    def weighted(points: list[Point]) -> list[np.ndarray]:
        return [slope_terms(x, y, a, b, wx) for a, b, *_ in points]

    return weighted


def rows_slope(
    conf: np.ndarray,
    outcome: np.ndarray,
    *,
    level: float = 0.95,
    sample_weight: np.ndarray | None = None,
) -> CalibrationSlope:
    """:func:`slope_of` finished on the rows: the fit on the count histogram (which clips the
    logits beyond +-37: that only moves the start), then Newton rounds over the rows (one
    kernel pass each on large inputs, usually one). What ``slope_of`` does where a logit lies
    beyond the moment cells; weighted, the numpy path."""
    if sample_weight is not None:
        return _weighted_slope(conf, outcome, sample_weight, level)
    n_certain, n_failed, counts = certain_and_grid(conf, outcome)
    return slope_from_sums(
        _rows(conf, outcome, None),
        n=int(conf.shape[0]),
        n_certain=n_certain,
        n_failed=n_failed,
        level=level,
        start=grid_start(counts),
    )


def weighted_rows(
    conf: np.ndarray, outcome: np.ndarray, w: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int, int]:
    """What a weighted fit uses of checked arrays: the logits, outcomes and weights of the
    rows of positive weight strictly inside (0, 1), then the number of rows of positive weight,
    of those of exactly 0 or 1, and of those that failed (:func:`split_certain`)."""
    keep = w > 0
    if not keep.all():
        conf, outcome, w = conf[keep], outcome[keep], w[keep]
    conf = np.asarray(conf, dtype=np.float64)
    x, y, n_certain, n_failed = split_certain(conf, outcome)
    wx = w[(conf > 0.0) & (conf < 1.0)] if n_certain else w
    return x, y, wx, int(conf.shape[0]), n_certain, n_failed


def _weighted_slope(
    conf: np.ndarray, outcome: np.ndarray, w: np.ndarray, level: float
) -> CalibrationSlope:
    """:func:`slope_of` with weights: the rows of weight 0 left out, every sum weighted."""
    x, y, wx, n, n_certain, n_failed = weighted_rows(conf, outcome, w)

    def evaluate(points: list[Point]) -> list[np.ndarray]:
        return [slope_terms(x, y, a, b, wx) for a, b, *_ in points]

    return slope_from_sums(
        evaluate,
        n=n,
        n_certain=n_certain,
        n_failed=n_failed,
        level=level,
        start=grid_start(grid_counts(x, y, wx)),
        weight=float(w.sum()),
    )
