"""The calibration slope's fit from sums (Cox 1958): the sums over the rows at a point
(intercept, slope), and Newton's method on them.

The fit is ``P(outcome = 1) = sigmoid(a + b * logit(p))``, maximised by Newton's method on sums
over the rows (one pass per step), so it merges over chunks and runs where the data lives: an
engine answers an :data:`Evaluate` (the sums of :func:`slope_terms` at the points asked) and
:func:`slope_from_sums` makes the fit, its standard errors and intervals from them.

With sample weights the sums are weighted (each row's terms times its weight): the fit
maximises the weighted log-likelihood, and the standard errors come from the weighted
information (frequency weights; see :mod:`calibkit.measure.slope`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from dataclasses import replace
from typing import Any

import numpy as np

from .distributions import normal_quantile, normal_two_sided
from .slope_result import CalibrationSlope

__all__ = [
    "ACCEPT_STEP",
    "TERMS",
    "WITH_LOGLIK",
    "Evaluate",
    "Point",
    "counted_terms",
    "fit_both",
    "slope_from_sums",
    "slope_terms",
    "undefined_slope",
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
        return counted_terms(x, weight - hit, hit, a, b)
    hit = np.asarray(y, dtype=np.float64)  # a row is one count of its outcome: the same sums
    return counted_terms(x, 1.0 - hit, hit, a, b)


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


def counted_terms(
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
