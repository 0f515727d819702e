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

The fit is Newton's method on sums over the rows (one pass per step), so it merges over chunks
and runs where the data lives.

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

import math
from collections.abc import Callable, Generator
from dataclasses import replace
from typing import Any

import numpy as np

from .. import _kernels
from .. import _validate as v
from .distributions import normal_quantile, normal_two_sided
from .slope_result import CalibrationSlope

__all__ = [
    "CalibrationSlope",
    "calibration_slope",
    "certain_and_grid",
    "grid_counts",
    "grid_start",
    "slope_from_sums",
    "slope_terms",
    "split_certain",
    "terms_at",
    "undefined_slope",
    "weighted_rows",
]

#: Newton steps before the fit gives up (a fit from slope 1 takes 4 to 8).
MAX_STEPS = 50


# ----------------------------------------------------------------------------- sums


def slope_terms(
    x: np.ndarray, y: np.ndarray, a: float, b: float, weight: np.ndarray | None = None
) -> np.ndarray:
    """Sums of the log-likelihood of ``sigmoid(a + b x)``, its gradient in (a, b), the
    information matrix and the information's derivatives: ``[loglik, g_a, g_b, h_aa, h_ab,
    h_bb, t_0, t_1, t_2, t_3]`` (float64), t_k the sum of w (1 - 2 q) x^k with q the sigmoid and
    w = q (1 - q) (the information moves by t when (a, b) moves: see :data:`TERMS`). With
    sample ``weight``: each row's terms times its weight."""
    if weight is not None:
        hit = weight * y
        return _weighted_terms(x, weight - hit, hit, a, b)
    eta = a + b * x
    # log sigmoid(eta) and log(1 - sigmoid(eta)) without overflow
    log_p = -np.logaddexp(0.0, -eta)
    log_q = -np.logaddexp(0.0, eta)
    p = np.exp(log_p)
    w = p * (1.0 - p)
    r = y - p
    skew = w * (1.0 - 2.0 * p)
    return np.array(
        [
            float(np.sum(np.where(y == 1, log_p, log_q))),
            float(np.sum(r)),
            float(np.sum(r * x)),
            float(np.sum(w)),
            float(np.sum(w * x)),
            float(np.sum(w * x * x)),
            float(np.sum(skew)),
            float(np.sum(skew * x)),
            float(np.sum(skew * x * x)),
            float(np.sum(skew * x * x * x)),
        ]
    )


#: The sums an engine gives at each point (:func:`slope_terms`).
TERMS = 10


#: (intercept, slope) at which an engine evaluates :func:`slope_terms`.
Point = tuple[float, ...]
#: An engine's evaluation: the sums of :func:`slope_terms` at each point, in one pass. A point
#: is (intercept, slope), or (intercept, slope, WITH_LOGLIK) when the solver compares its
#: log-likelihood; at a point without the flag an engine may leave the log-likelihood out
#: (NaN), which saves the logarithms of a pass that ends the fit (the usual single round).
WITH_LOGLIK = 1.0
Evaluate = Callable[[list[Point]], list[np.ndarray]]


#: A Newton step this small (relative) is taken without evaluating its end point: the
#: convergence is quadratic, so the error after it is of order 1e-12; the information there is
#: the evaluated one moved along the step by its derivatives (t_k of :func:`slope_terms`),
#: exact to the same order.
ACCEPT_STEP = 1e-6


def _newton(
    fixed_slope: float | None, start: Point = (0.0, 1.0)
) -> Generator[Point, np.ndarray, tuple[float, float, Any]]:
    """Maximise the log-likelihood from ``start``, asking for the sums at each point it needs
    (yield a point, receive its sums); returns a, b and the sums at the last point evaluated
    (a and b NaN when no maximum was reached). With ``fixed_slope`` only the intercept moves.

    A step below :data:`ACCEPT_STEP` ends the fit without evaluating its end point, so a start
    within about 1e-6 of the maximum (a fit on the fine logit histogram) costs one evaluation;
    the sums returned then hold the information carried to the end point (:func:`_moved`)."""
    a, b = start[0], start[1] if fixed_slope is None else fixed_slope
    s = yield (a, b)  # an engine may leave out the log-likelihood here (s[0] NaN)
    for _ in range(MAX_STEPS):
        if fixed_slope is None:
            h = np.array([[s[3], s[4]], [s[4], s[5]]])
            try:
                delta = np.linalg.solve(h, s[1:3])
            except np.linalg.LinAlgError:
                return math.nan, math.nan, s
        else:
            if s[3] <= 0:
                return math.nan, b, s
            delta = np.array([s[1] / s[3], 0.0])
        if max(abs(delta[0]), abs(delta[1])) <= ACCEPT_STEP * (1.0 + abs(a) + abs(b)):
            return a + delta[0], b + delta[1], _moved(s, delta[0], delta[1])
        t = 1.0
        while True:  # halve the step until the likelihood does not fall
            trial = yield (a + t * delta[0], b + t * delta[1], WITH_LOGLIK)
            if math.isnan(s[0]) and _rose(s, trial, t * delta, (1.0 + abs(a) + abs(b))):
                break
            if math.isnan(s[0]):  # left out at the start, and needed: ask for it
                s = yield (a, b, WITH_LOGLIK)
            if trial[0] >= s[0] - 1e-12 * abs(s[0]) or t < 1e-10:
                break
            t /= 2.0
        a, b, s = a + t * delta[0], b + t * delta[1], trial
    return math.nan, math.nan, s  # no maximum in reach: separated outcomes


#: A step this small (relative) is short enough for the log-likelihood to be near quadratic
#: along it (see :func:`_rose`).
SHORT_STEP = 1e-4


def _rose(start: np.ndarray, trial: np.ndarray, step: np.ndarray, scale: float) -> bool:
    """Whether the log-likelihood rose from ``start`` to ``trial`` (``start + step``), decided
    from the gradients alone (the start's log-likelihood was left out): along the step the
    log-likelihood is concave, so a slope still rising at the trial means it rose; on a short
    step it is quadratic to third order, so it rose when the end slope fell by less than 1.5
    times the start slope (the mean of the two, half the rise, stays above a quarter of the
    start slope)."""
    begin = float(start[1] * step[0] + start[2] * step[1])
    end = float(trial[1] * step[0] + trial[2] * step[1])
    if end >= 0.0:
        return True
    short = max(abs(step[0]), abs(step[1])) <= SHORT_STEP * scale
    return bool(short and begin > 0.0 and end >= -0.5 * begin)


def _moved(s: np.ndarray, da: float, db: float) -> np.ndarray:
    """The sums ``s`` with the information carried from (a, b) to (a + da, b + db) to first
    order: d w / d eta = w (1 - 2 q), so the information sum of w x^(j + k) moves by
    t_(j + k) da + t_(j + k + 1) db."""
    out = np.array(s, dtype=np.float64)
    if out.size >= TERMS:
        t = out[6:10]
        out[3] += da * t[0] + db * t[1]
        out[4] += da * t[1] + db * t[2]
        out[5] += da * t[2] + db * t[3]
    return out


def fit_both(
    evaluate: Evaluate, start: tuple[Point, Point] = ((0.0, 1.0), (0.0, 1.0))
) -> tuple[tuple[float, float, Any], tuple[float, float, Any]]:
    """The joint fit and the in-the-large fit run in lock step: each round asks ``evaluate``
    for the sums at every point the two need, so an engine makes one pass a round."""
    solvers = [_newton(None, start[0]), _newton(1.0, start[1])]
    wanted: list[Point | None] = [next(g) for g in solvers]
    done: list[Any] = [None, None]
    while any(w is not None for w in wanted):
        points = sorted({w for w in wanted if w is not None})
        answers = dict(zip(points, evaluate(points), strict=True))
        for i, g in enumerate(solvers):
            point = wanted[i]
            if point is None:
                continue
            try:
                wanted[i] = g.send(answers[point])
            except StopIteration as stop:
                done[i], wanted[i] = stop.value, None
    return done[0], done[1]


#: The logit histogram a start is fitted on: cells of 1/GRID_STEPS of a logit unit, logits
#: clipped at +-GRID_SPAN (a start only: the fit is then polished on the rows themselves).
GRID_STEPS = 1024
GRID_SPAN = 37.0
GRID_CELLS = int(2 * GRID_SPAN * GRID_STEPS) + 1


def grid_cells(x: np.ndarray) -> np.ndarray:
    """The histogram cell of each finite logit."""
    return np.rint((np.clip(x, -GRID_SPAN, GRID_SPAN) + GRID_SPAN) * GRID_STEPS).astype(np.int64)


def grid_counts(x: np.ndarray, y: np.ndarray, weight: np.ndarray | None = None) -> np.ndarray:
    """(2, GRID_CELLS) counts of outcomes 0 and 1 per cell (mergeable: counts add); the sums
    of the weights (float) with ``weight``."""
    cells = grid_cells(x)
    hit = y == 1
    if weight is not None:
        return np.stack(
            [
                np.bincount(cells[~hit], weights=weight[~hit], minlength=GRID_CELLS),
                np.bincount(cells[hit], weights=weight[hit], minlength=GRID_CELLS),
            ]
        )
    return np.stack(
        [
            np.bincount(cells[~hit], minlength=GRID_CELLS),
            np.bincount(cells[hit], minlength=GRID_CELLS),
        ]
    )


def grid_start(counts: np.ndarray) -> tuple[Point, Point]:
    """Starts for :func:`fit_both`: the two fits made on the histogram's cells (each cell's rows
    at its centre), which lie within about 1e-6 of the fits on the rows (1e-7 from a million
    rows)."""
    x = np.arange(GRID_CELLS) / GRID_STEPS - GRID_SPAN
    neg, pos = counts[0].astype(np.float64), counts[1].astype(np.float64)
    used = (neg + pos) > 0
    x, neg, pos = x[used], neg[used], pos[used]

    def evaluate(points: list[Point]) -> list[np.ndarray]:
        return [_weighted_terms(x, neg, pos, a, b) for a, b, *_ in points]

    (a, b, _), (a1, _, _) = fit_both(evaluate)
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(a1)):
        return (0.0, 1.0), (0.0, 1.0)
    return (a, b), (a1, 1.0)


def _weighted_terms(
    x: np.ndarray, neg: np.ndarray, pos: np.ndarray, a: float, b: float
) -> np.ndarray:
    """:func:`slope_terms` of ``pos`` rows with outcome 1 and ``neg`` with 0 at each ``x``."""
    eta = a + b * x
    log_p, log_q = -np.logaddexp(0.0, -eta), -np.logaddexp(0.0, eta)
    p = np.exp(log_p)
    w = (pos + neg) * p * (1.0 - p)
    r = pos - (pos + neg) * p
    skew = w * (1.0 - 2.0 * p)
    return np.array(
        [
            float(np.sum(pos * log_p + neg * log_q)),
            float(np.sum(r)),
            float(np.sum(r * x)),
            float(np.sum(w)),
            float(np.sum(w * x)),
            float(np.sum(w * x * x)),
            float(np.sum(skew)),
            float(np.sum(skew * x)),
            float(np.sum(skew * x * x)),
            float(np.sum(skew * x * x * x)),
        ]
    )


def slope_from_sums(
    evaluate: Evaluate,
    *,
    n: int,
    n_certain: int,
    n_failed: int,
    level: float = 0.95,
    start: tuple[Point, Point] = ((0.0, 1.0), (0.0, 1.0)),
    weight: float | None = None,
) -> CalibrationSlope:
    """The calibration fit from ``evaluate``: given points (a, b), the sums of
    :func:`slope_terms` over the rows strictly inside (0, 1) at each (what an engine provides:
    one pass per call). ``n`` counts every row, ``n_certain`` those of exactly 0 or 1, and
    ``n_failed`` the certainties whose outcome disagrees; ``start`` (from :func:`grid_start`)
    saves rounds; ``weight`` the total sample weight of weighted sums."""
    if n - n_certain < 3:
        return replace(
            _undefined(
                n, n_certain, level, "fewer than 3 forecasts strictly between 0 and 1", n_failed
            ),
            weight=weight,
        )
    (a, b, s), (a1, _, s1) = fit_both(evaluate, start)
    det = s[3] * s[5] - s[4] ** 2
    if not (math.isfinite(a) and math.isfinite(b) and math.isfinite(a1)) or det <= 0:
        return replace(
            _undefined(
                n,
                n_certain,
                level,
                n_failed=n_failed,
                note="the outcomes are separated by the forecasts (or every forecast is the "
                "same), so the slope grows without bound",
            ),
            weight=weight,
        )
    z = normal_quantile(0.5 + level / 2.0)
    a, b, a1 = float(a), float(b), float(a1)
    se_a, se_b = math.sqrt(s[5] / det), math.sqrt(s[3] / det)
    se_l = math.sqrt(1.0 / s1[3]) if s1[3] > 0 else math.nan
    return CalibrationSlope(
        slope=b,
        slope_se=se_b,
        slope_ci=(b - z * se_b, b + z * se_b),
        slope_p=normal_two_sided((b - 1.0) / se_b),
        intercept=a,
        intercept_se=se_a,
        intercept_ci=(a - z * se_a, a + z * se_a),
        intercept_p=normal_two_sided(a / se_a),
        in_the_large=a1,
        in_the_large_se=se_l,
        in_the_large_ci=(a1 - z * se_l, a1 + z * se_l),
        in_the_large_p=normal_two_sided(a1 / se_l),
        level=level,
        n=n,
        n_certain=n_certain,
        n_failed=n_failed,
        note=(
            f"fitted on the {n - n_certain} forecasts strictly between 0 and 1; {n_failed} "
            f"{'forecast' if n_failed == 1 else 'forecasts'} of exactly 0 or 1 failed "
            "(infinitely overconfident there)"
            if n_failed
            else ""
        ),
        weight=weight,
    )


def _undefined(
    n: int, n_certain: int, level: float, note: str, n_failed: int = 0
) -> CalibrationSlope:
    nan, nan2 = math.nan, (math.nan, math.nan)
    return CalibrationSlope(
        *(nan, nan, nan2, nan), *(nan, nan, nan2, nan), *(nan, nan, nan2, nan),
        level=level, n=n, n_certain=n_certain, n_failed=n_failed, defined=False, note=note,
    )  # fmt: skip


def undefined_slope(n: int, note: str, *, level: float = 0.95) -> CalibrationSlope:
    """A slope that could not be fitted, with the reason (an engine that cannot make the
    passes a fit needs)."""
    return _undefined(n, 0, level, note)


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

    Large inputs go to the numba kernels (``_numba_slope``: the histogram and each round's sums
    at every point in one pass, the logits computed in the loop); the others, and the
    reference, to :func:`split_certain`, :func:`grid_counts` and :func:`slope_terms`. Weighted
    input takes the numpy path."""
    if sample_weight is not None:
        return _weighted_slope(conf, outcome, sample_weight, level)
    if _kernels.use_numba(conf.shape[0]):
        n_certain, n_failed, counts = certain_and_grid(conf, outcome)

        def evaluate(points: list[Point]) -> list[np.ndarray]:
            return terms_at(conf, outcome, points)

    else:  # the logits once, for every round
        x, y, n_certain, n_failed = split_certain(conf, outcome)
        counts = grid_counts(x, y)

        def evaluate(points: list[Point]) -> list[np.ndarray]:
            return [slope_terms(x, y, a, b) for a, b, *_ in points]

    return slope_from_sums(
        evaluate,
        n=int(conf.shape[0]),
        n_certain=int(n_certain),
        n_failed=int(n_failed),
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
