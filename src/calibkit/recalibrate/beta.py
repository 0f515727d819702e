"""Beta calibration (Kull, Silva Filho and Flach 2017): the map

    p' = 1 / (1 + 1 / (e^c * p^a / (1 - p)^b)),   i.e.   logit(p') = a log p - b log(1 - p) + c,

a logistic regression on the features (log p, -log(1 - p)) with a, b >= 0, so the map is
monotone and includes the identity (a = b = 1, c = 0).

See :mod:`calibkit.recalibrate._binary_maps` for the multiclass modes (one-vs-rest or top-label)
and their trade-off.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _validate as v
from .._errors import InputError
from ._binary_maps import MULTICLASS, BinaryMapCalibrator, maps_state
from ._logistic import LogisticFit, fit_logistic, sigmoid, warn_not_converged
from .base import flag, integer, number, text

__all__ = ["BetaCalibration", "BetaMap"]

PARAMETERS = ("abm", "ab", "am")
#: float64's machine epsilon, the clip of the authors' ``betacal`` package: ``clip=EPS``
#: reproduces it (calibkit clips only when asked, see ``clip``).
EPS = float(np.finfo(np.float64).eps)
_LOG2 = math.log(2.0)


@dataclass(frozen=True)
class BetaMap:
    """One fitted beta map ``logit(p') = a log p - b log(1 - p) + c``; ``m`` is the input whose
    output is 1/2 (``None`` when the map never crosses 1/2 inside (0, 1))."""

    a: float
    b: float
    c: float
    m: float | None
    converged: bool
    n_iter: int


class BetaCalibration(BinaryMapCalibrator[BetaMap]):
    """Beta calibration: ``logit(p') = a log p - b log(1 - p) + c`` with a, b >= 0.

    The family (Kull, Silva Filho and Flach 2017) comes from assuming the scores of each class
    follow a beta distribution. It can fix over- and under-confidence and asymmetric
    distortions, and contains the identity. Following the paper, it is fitted as a logistic
    regression on features (log p, -log(1 - p)) (Newton's method, to the exact maximum of the
    likelihood); when a coefficient comes out negative the fit is repeated without that
    feature (the coefficient becomes 0), and if the remaining one is negative too, with the
    intercept alone (a constant map at the event rate).

    ``parameters`` chooses the family, with m the input that maps to 1/2, and
    c = b log(1 - m) - a log m:

    - ``"abm"``: a, b and c free (three parameters, the full family).
    - ``"ab"``: m fixed at 1/2, so c = (a - b) log 2: features log(2p) and -log(2(1 - p)), no
      intercept.
    - ``"am"``: a = b, so logit(p') = a logit(p) + c: Platt scaling on the log-odds (a >= 0).

    Inputs are probabilities: 1-D P(label = 1) in [0, 1], or (N, C) rows summing to 1.
    **Probabilities of exactly 0 or 1** have infinite features log p or log(1 - p): they are
    refused unless ``clip`` is given (the same policy as every map that takes logs of
    probabilities; in top-label mode only a top-label confidence of exactly 1 counts).

    Parameters
    ----------
    parameters : {"abm", "ab", "am"}
    multiclass : {"ovr", "top-label"}
        How (N, C) input is calibrated; 1-D input uses one map either way.
    clip : float, optional
        ``None`` (default) refuses probabilities of exactly 0 or 1, naming the first row and
        value; a small eps such as 1e-7 (:data:`EPS` = 2.2e-16 is the authors' ``betacal``
        clip) moves every probability into [eps, 1 - eps] first, in fit and predict alike, with
        a :class:`~calibkit.CalibkitWarning` counting the rows moved. Clipping keeps the map
        monotone and defined everywhere.

    Attributes
    ----------
    a_, b_, c_ : ndarray of shape (n_maps,)
        Parameters of each map: one for 1-D scores and top-label, C for one-vs-rest.
    m_ : tuple of (float or None)
        The input each map sends to 1/2 (``None`` when the map never crosses 1/2).
    converged_ : bool
        Every map's Newton iteration converged (it cannot when a score separates the labels).
    maps_ : tuple of BetaMap
    n_classes_ : int
        2 for 1-D scores.
    input_ndim_ : int

    Examples
    --------
    Probabilities 0.2 and 0.8, each seen five times, with events 2 of 5 and 4 of 5. With
    a = b ("am") the fit is a logistic regression on logit(p) = -/+ log 4 that reproduces
    both frequencies: a log 4 + c = logit(0.8) = log 4, and -a log 4 + c = logit(0.4), so
    c = (log 4 + log(2/3)) / 2 = log(8/3) / 2 = 0.4904 and a = (log 4 - c) / log 4 = 0.6462.

    >>> from calibkit.recalibrate.beta import BetaCalibration
    >>> p = [0.2] * 5 + [0.8] * 5
    >>> y = [1, 1, 0, 0, 0] + [1, 1, 1, 1, 0]
    >>> beta = BetaCalibration(parameters="am").fit(p, y)
    >>> round(float(beta.a_[0]), 4), round(float(beta.c_[0]), 4)
    (0.6462, 0.4904)
    >>> beta.predict_proba([0.2, 0.8]).round(6).tolist()
    [0.4, 0.8]
    """

    kind = "beta"
    domain = "probs"
    takes_logs = True

    _params_spec = {
        "parameters": text(*PARAMETERS),
        "multiclass": text(*MULTICLASS),
        "clip": number(minimum=0.0, maximum=0.5, nullable=True),
    }
    _state_spec = maps_state(
        a=number(),
        b=number(),
        c=number(),
        m=number(minimum=0.0, maximum=1.0, nullable=True),
        converged=flag(),
        n_iter=integer(minimum=0),
    )

    def __init__(
        self, *, parameters: str = "abm", multiclass: str = "ovr", clip: float | None = None
    ) -> None:
        self.parameters = parameters
        self.multiclass = multiclass
        self.clip = clip

    def _check_settings(self, where: str) -> None:
        v.choice(self.parameters, name="parameters", allowed=PARAMETERS, where=where)

    def _fit_map(
        self, x: np.ndarray, y: np.ndarray, *, where: str, w: np.ndarray | None = None
    ) -> BetaMap:
        parameters = v.choice(self.parameters, name="parameters", allowed=PARAMETERS, where=where)
        log_p, log_q = np.log(x), np.log1p(-x)
        targets = y.astype(np.float64)
        ones = np.ones_like(x)
        if parameters == "am":
            fit = fit_logistic(np.column_stack([log_p - log_q, ones]), targets, sample_weight=w)
            a, c = fit.coef
            if a < 0:
                fit = fit_logistic(ones[:, None], targets, sample_weight=w)
                a, c = 0.0, fit.coef[0]
            b = a
        else:
            if parameters == "abm":
                u, v_, extra = log_p, -log_q, [ones]
            else:  # "ab": c = (a - b) log 2 is folded into the features
                u, v_, extra = log_p + _LOG2, -(log_q + _LOG2), []
            fit = fit_logistic(np.column_stack([u, v_, *extra]), targets, sample_weight=w)
            a, b = fit.coef[0], fit.coef[1]
            if a < 0 or b < 0:  # drop the negative feature and refit (the paper's recipe)
                keep_a = b < 0 and a >= 0
                a, b, fit = self._refit(u if keep_a else v_, extra, targets, keep_a, w)
            c = fit.coef[-1] if parameters == "abm" else (a - b) * _LOG2
        if not fit.converged:
            warn_not_converged(
                fit,
                where,
                "Use more calibration data, or a map that cannot overfit as far (Platt "
                "scaling with smoothed targets).",
            )
        a, b, c = float(a), float(b), float(c)
        return BetaMap(a, b, c, _midpoint(a, b, c), fit.converged, fit.n_iter)

    @staticmethod
    def _refit(
        feature: np.ndarray,
        extra: list[np.ndarray],
        targets: np.ndarray,
        keep_a: bool,
        w: np.ndarray | None = None,
    ) -> tuple[float, float, LogisticFit]:
        fit = fit_logistic(np.column_stack([feature, *extra]), targets, sample_weight=w)
        coef = float(fit.coef[0])
        if coef < 0:
            coef = 0.0
            if extra:
                fit = fit_logistic(np.column_stack(extra), targets, sample_weight=w)
            else:
                fit = LogisticFit(np.zeros(1), True, 0, 0.0, math.log(2.0))
        return (coef, 0.0, fit) if keep_a else (0.0, coef, fit)

    def _apply_map(self, fitted: BetaMap, x: np.ndarray, *, where: str) -> np.ndarray:
        z = fitted.c
        if fitted.a != 0.0:
            z = z + fitted.a * np.log(x)
        if fitted.b != 0.0:
            z = z - fitted.b * np.log1p(-x)
        return sigmoid(np.broadcast_to(z, x.shape).astype(np.float64))

    def _map_state(self, fitted: BetaMap) -> dict[str, Any]:
        return {
            "a": fitted.a,
            "b": fitted.b,
            "c": fitted.c,
            "m": fitted.m,
            "converged": fitted.converged,
            "n_iter": fitted.n_iter,
        }

    def _map_from_state(self, state: dict[str, Any]) -> BetaMap:
        # finite numbers, m null or in [0, 1]: checked against _state_spec (from_dict)
        a, b, c = float(state["a"]), float(state["b"]), float(state["c"])
        if a < 0 or b < 0:
            raise InputError(f"a beta map needs finite a, b >= 0 and finite c, got {a}, {b}, {c}.")
        m = None if state["m"] is None else float(state["m"])
        return BetaMap(a, b, c, m, bool(state["converged"]), int(state["n_iter"]))

    def _learned(self) -> None:
        self.a_ = np.array([m.a for m in self.maps_])
        self.b_ = np.array([m.b for m in self.maps_])
        self.c_ = np.array([m.c for m in self.maps_])
        self.m_ = tuple(m.m for m in self.maps_)
        self.converged_ = all(m.converged for m in self.maps_)


def _midpoint(a: float, b: float, c: float) -> float | None:
    """The m in (0, 1) with a log m - b log(1 - m) + c = 0, if there is one."""

    def g(m: float) -> float:
        return a * math.log(m) - b * math.log1p(-m) + c

    lo, hi = EPS, 1.0 - EPS
    if a + b == 0.0 or g(lo) > 0.0 or g(hi) < 0.0:
        return None
    from scipy.optimize import brentq  # lazy: keeps `import calibkit` light

    return float(brentq(g, lo, hi, xtol=1e-15, rtol=4 * EPS))
