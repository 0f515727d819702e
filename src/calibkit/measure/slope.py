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
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from statistics import NormalDist
from typing import Any

import numpy as np

from .. import _validate as v

__all__ = ["CalibrationSlope", "calibration_slope", "slope_from_sums"]

#: Newton steps before the fit gives up (a fit from slope 1 takes 4 to 8).
MAX_STEPS = 50


@dataclass(frozen=True)
class CalibrationSlope:
    """The logistic calibration fit, with Wald standard errors, intervals and p-values.

    ``slope_p`` tests slope = 1, ``intercept_p`` tests intercept = 0 in the joint fit, and
    ``in_the_large_p`` tests the calibration-in-the-large intercept = 0. When ``defined`` is
    False the numbers are NaN and ``note`` says why.
    """

    slope: float
    slope_se: float
    slope_ci: tuple[float, float]
    slope_p: float
    intercept: float
    intercept_se: float
    intercept_ci: tuple[float, float]
    intercept_p: float
    in_the_large: float
    in_the_large_se: float
    in_the_large_ci: tuple[float, float]
    in_the_large_p: float
    level: float
    n: int
    n_certain: int
    n_failed: int = 0
    defined: bool = True
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        return {k: _finite_or_none(x) for k, x in d.items()}

    def at_level(self, level: float) -> CalibrationSlope:
        """The same fit with its intervals at another ``level`` (the standard errors and
        p-values do not depend on it)."""
        if level == self.level or not self.defined:
            return replace(self, level=level)
        z = NormalDist().inv_cdf(0.5 + level / 2.0)

        def ci(x: float, se: float) -> tuple[float, float]:
            return (x - z * se, x + z * se)

        return replace(
            self,
            slope_ci=ci(self.slope, self.slope_se),
            intercept_ci=ci(self.intercept, self.intercept_se),
            in_the_large_ci=ci(self.in_the_large, self.in_the_large_se),
            level=level,
        )

    @property
    def spread(self) -> str | None:
        """``"too wide"`` (overconfident) or ``"too narrow"`` (underconfident) when the slope's
        interval excludes 1; None when it is consistent with 1 or undefined."""
        if not self.defined:
            return None
        low, high = self.slope_ci
        if high < 1.0:
            return "too wide"
        if low > 1.0:
            return "too narrow"
        return None

    @property
    def frequency(self) -> str | None:
        """``"too often"`` / ``"too rarely"`` (the event forecast more / less often than it
        happens) when the in-the-large interval excludes 0; None otherwise."""
        if not self.defined:
            return None
        low, high = self.in_the_large_ci
        if high < 0.0:
            return "too often"
        if low > 0.0:
            return "too rarely"
        return None

    def __str__(self) -> str:
        if not self.defined:
            return f"calibration slope: undefined ({self.note})"
        pct = f"{self.level * 100:g}%"
        return (
            f"calibration slope {self.slope:.4f} ({pct} CI {_ci(self.slope_ci)}; 1 = calibrated), "
            f"intercept {self.intercept:+.4f} ({_ci(self.intercept_ci)}); calibration-in-the-"
            f"large {self.in_the_large:+.4f} ({_ci(self.in_the_large_ci)}; 0 = calibrated), "
            f"N = {self.n}"
        )


def _ci(ci: tuple[float, float]) -> str:
    return f"[{ci[0]:.4f}, {ci[1]:.4f}]"


def _finite_or_none(x: Any) -> Any:
    if isinstance(x, tuple):
        return [_finite_or_none(y) for y in x]
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def _two_sided(z: float) -> float:
    return math.erfc(abs(z) / math.sqrt(2.0))


# ----------------------------------------------------------------------------- sums


def slope_terms(x: np.ndarray, y: np.ndarray, a: float, b: float) -> np.ndarray:
    """Sums of the log-likelihood of ``sigmoid(a + b x)``, its gradient in (a, b) and the
    information matrix: ``[loglik, g_a, g_b, h_aa, h_ab, h_bb]`` (float64)."""
    eta = a + b * x
    # log sigmoid(eta) and log(1 - sigmoid(eta)) without overflow
    log_p = -np.logaddexp(0.0, -eta)
    log_q = -np.logaddexp(0.0, eta)
    p = np.exp(log_p)
    w = p * (1.0 - p)
    r = y - p
    return np.array(
        [
            float(np.sum(np.where(y == 1, log_p, log_q))),
            float(np.sum(r)),
            float(np.sum(r * x)),
            float(np.sum(w)),
            float(np.sum(w * x)),
            float(np.sum(w * x * x)),
        ]
    )


Sums = Callable[[float, float], np.ndarray]


def _newton(sums: Sums, *, fixed_slope: float | None) -> tuple[float, float, np.ndarray, int]:
    """Maximise the log-likelihood from (a, b) = (0, 1); returns a, b, the last sums and the
    number of steps. With ``fixed_slope`` only the intercept moves."""
    a, b = 0.0, 1.0 if fixed_slope is None else fixed_slope
    s = sums(a, b)
    for step in range(1, MAX_STEPS + 1):
        if fixed_slope is None:
            h = np.array([[s[3], s[4]], [s[4], s[5]]])
            g = s[1:3]
            try:
                delta = np.linalg.solve(h, g)
            except np.linalg.LinAlgError:
                return math.nan, math.nan, s, step
        else:
            if s[3] <= 0:
                return math.nan, b, s, step
            delta = np.array([s[1] / s[3], 0.0])
        t = 1.0
        while True:  # halve the step until the likelihood does not fall
            trial = sums(a + t * delta[0], b + t * delta[1])
            if trial[0] >= s[0] - 1e-12 * abs(s[0]) or t < 1e-10:
                break
            t /= 2.0
        a, b, s = a + t * delta[0], b + t * delta[1], trial
        if max(abs(t * delta[0]), abs(t * delta[1])) <= 1e-12 * (1.0 + abs(a) + abs(b)):
            return a, b, s, step
    return a, b, s, MAX_STEPS


def slope_from_sums(
    sums: Sums, *, n: int, n_certain: int, n_failed: int, level: float = 0.95
) -> CalibrationSlope:
    """The calibration fit from a function of (a, b) returning :func:`slope_terms`' sums over
    the rows with finite logits (what an engine provides: one pass per call)."""
    if n - n_certain < 3:
        return _undefined(
            n, n_certain, level, "fewer than 3 forecasts strictly between 0 and 1", n_failed
        )
    a, b, s, steps = _newton(sums, fixed_slope=None)
    a1, _, s1, _ = _newton(sums, fixed_slope=1.0)
    det = s[3] * s[5] - s[4] ** 2
    if not (math.isfinite(a) and math.isfinite(b)) or det <= 0 or steps >= MAX_STEPS:
        return _undefined(
            n,
            n_certain,
            level,
            n_failed=n_failed,
            note="the outcomes are separated by the forecasts (or every forecast is the same), so "
            "the slope grows without bound",
        )
    z = NormalDist().inv_cdf(0.5 + level / 2.0)
    a, b, a1 = float(a), float(b), float(a1)
    se_a, se_b = math.sqrt(s[5] / det), math.sqrt(s[3] / det)
    se_l = math.sqrt(1.0 / s1[3]) if s1[3] > 0 else math.nan
    return CalibrationSlope(
        slope=b,
        slope_se=se_b,
        slope_ci=(b - z * se_b, b + z * se_b),
        slope_p=_two_sided((b - 1.0) / se_b),
        intercept=a,
        intercept_se=se_a,
        intercept_ci=(a - z * se_a, a + z * se_a),
        intercept_p=_two_sided(a / se_a),
        in_the_large=a1,
        in_the_large_se=se_l,
        in_the_large_ci=(a1 - z * se_l, a1 + z * se_l),
        in_the_large_p=_two_sided(a1 / se_l),
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
    )


def _undefined(
    n: int, n_certain: int, level: float, note: str, n_failed: int = 0
) -> CalibrationSlope:
    nan, nan2 = math.nan, (math.nan, math.nan)
    return CalibrationSlope(
        *(nan, nan, nan2, nan), *(nan, nan, nan2, nan), *(nan, nan, nan2, nan),
        level=level, n=n, n_certain=n_certain, n_failed=n_failed, defined=False, note=note,
    )  # fmt: skip


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


def calibration_slope(confidence: Any, outcome: Any, *, level: float = 0.95) -> CalibrationSlope:
    """Calibration slope and intercept: the logistic fit of the outcome on logit(confidence).

    Parameters
    ----------
    confidence : array of shape (N,)
        Forecast probabilities of the event (P(y = 1), or a top-label confidence).
    outcome : array of shape (N,)
        Whether the event happened (0/1).
    level : float
        Level of the Wald intervals.

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
    """
    where = "calibration_slope"
    conf = v.confidence(confidence, where=where)
    y = v.outcome(outcome, n=conf.shape[0], where=where)
    level = v.level(level, where=where)
    return slope_of(conf, y, level=level)


def slope_of(conf: np.ndarray, outcome: np.ndarray, *, level: float = 0.95) -> CalibrationSlope:
    """:func:`calibration_slope` of validated arrays (what the audit calls)."""
    x, y, n_certain, n_failed = split_certain(conf, outcome)

    def sums(a: float, b: float) -> np.ndarray:
        return slope_terms(x, y, a, b)

    return slope_from_sums(
        sums, n=int(conf.shape[0]), n_certain=n_certain, n_failed=n_failed, level=level
    )
