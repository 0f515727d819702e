"""A Newton solver for the small logistic regressions of the binary maps (Platt scaling, beta
calibration), with the separation check of Konis (2007), and the sigmoid they predict with."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from .._errors import CalibkitWarning

__all__ = ["LogisticFit", "fit_logistic", "sigmoid", "warn_not_converged"]


def sigmoid(z: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-z))`` in float64 without overflow (no warning for any finite z)."""
    return np.exp(-np.logaddexp(0.0, -z))


# --------------------------------------------------------------------------- Newton solver


#: Newton decrement (g' H^-1 g, in units of the mean log-loss) below which the fit has converged.
NEWTON_TOL = 1e-20
NEWTON_MAX_ITER = 100


@dataclass(frozen=True)
class LogisticFit:
    """Coefficients of a logistic regression and how the solver got there. ``separable``: the
    0/1 labels are (quasi-)separated by the features, so no finite maximum exists."""

    coef: np.ndarray
    converged: bool
    n_iter: int
    decrement: float
    loss: float
    separable: bool = False


#: A fit on 0/1 labels that takes more Newton iterations than this is checked for separation
#: by a linear program (separable data converge only linearly, in 30 or more iterations; data
#: with a finite optimum, quadratically, in under 20).
_SEPARATION_ITERATIONS = 20


def fit_logistic(
    features: np.ndarray,
    targets: np.ndarray,
    start: np.ndarray | None = None,
    *,
    max_iter: int = NEWTON_MAX_ITER,
    tol: float = NEWTON_TOL,
    sample_weight: np.ndarray | None = None,
) -> LogisticFit:
    """Minimise the mean log-loss ``mean(log(1 + exp(X w)) - t * X w)`` by Newton's method.

    With ``sample_weight`` (positive weights, one per row) the mean is the weighted mean
    ``sum_i s_i loss_i / sum_i s_i``, and so are the gradient and the Hessian: integer weights
    give the fit of the rows repeated that many times.

    ``features`` is (n, k) float64 (include a column of ones for an intercept) and ``targets``
    lie in [0, 1] (Platt's smoothed targets or 0/1 labels). Columns are scaled by their largest
    absolute value for conditioning (Newton's iterates do not depend on it otherwise). Each step
    solves with the pseudo-inverse of the Hessian (so collinear columns are harmless) and
    backtracks until the loss falls enough, except once the Newton decrement is below 1e-10, in
    the region of quadratic convergence, where the full step is taken. Convergence: the Newton
    decrement ``g' H^-1 g`` (affine invariant) falls below ``tol``; that last step is taken too.

    With 0/1 targets the maximum may not exist: when the features separate the labels the loss
    only approaches 0 as the coefficients grow without bound (and the decrement shrinks with
    it). A fit whose coefficients grow large is therefore checked with the linear program of
    Konis (2007): is there a direction w with (2 y_i - 1) x_i . w >= 0 for every row and > 0
    for some? If so the result has ``separable=True`` and ``converged=False``.
    """
    scale = np.abs(features).max(axis=0)
    scale[scale == 0.0] = 1.0
    x = features / scale
    w = np.zeros(x.shape[1]) if start is None else np.asarray(start, dtype=np.float64) * scale
    fit = _newton(x, targets, w, max_iter=max_iter, tol=tol, weight=sample_weight)
    hard = bool(np.all((targets == 0.0) | (targets == 1.0)))
    if hard and _separable(x, targets, slow=fit.n_iter > _SEPARATION_ITERATIONS):
        fit = LogisticFit(fit.coef, False, fit.n_iter, fit.decrement, fit.loss, True)
    return LogisticFit(
        fit.coef / scale, fit.converged, fit.n_iter, fit.decrement, fit.loss, fit.separable
    )


def _evaluate(
    z: np.ndarray, targets: np.ndarray, weight: np.ndarray | None = None
) -> tuple[float, np.ndarray, np.ndarray]:
    """Mean log-loss (weighted by ``weight``, which sums to 1, when given), sigmoid(z) and
    sigmoid'(z) = p (1 - p), from one exp and one log1p."""
    e = np.exp(-np.abs(z))
    terms = np.maximum(z, 0.0) + np.log1p(e) - targets * z
    loss = float(np.mean(terms) if weight is None else np.dot(weight, terms))
    inverse = 1.0 / (1.0 + e)
    p = np.where(z >= 0.0, inverse, e * inverse)
    return loss, p, e * inverse * inverse


def _newton(
    x: np.ndarray,
    targets: np.ndarray,
    w: np.ndarray,
    *,
    max_iter: int,
    tol: float,
    weight: np.ndarray | None = None,
) -> LogisticFit:
    n = x.shape[0]
    share = None if weight is None else weight / np.sum(weight)  # the weighted mean's weights
    decrement = math.inf
    current, p, slope = _evaluate(x @ w, targets, share)
    for iteration in range(1, max_iter + 1):
        if share is None:
            gradient = x.T @ (p - targets) / n
            hessian = (x.T * slope) @ x / n
        else:
            gradient = x.T @ (share * (p - targets))
            hessian = (x.T * (share * slope)) @ x
        step = np.linalg.pinv(hessian, rcond=1e-13, hermitian=True) @ gradient
        decrement = float(gradient @ step)
        if not math.isfinite(decrement):
            return LogisticFit(w, False, iteration, decrement, current)
        if decrement <= tol:  # converged; the last (tiny) step squares the error once more
            return LogisticFit(w - step, True, iteration, max(decrement, 0.0), current)
        t = 1.0
        while True:
            trial = w - t * step
            value, p_trial, slope_trial = _evaluate(x @ trial, targets, share)
            # in the region of quadratic convergence the full step is taken: the decrease is
            # then below what the loss can resolve
            if decrement < 1e-10 or value <= current - 0.25 * t * decrement:
                break
            t *= 0.5
            if t < 1e-10:
                return LogisticFit(w, False, iteration, decrement, current)
        w, current, p, slope = trial, value, p_trial, slope_trial
    return LogisticFit(w, False, max_iter, decrement, current)


def _separable(x: np.ndarray, labels: np.ndarray, *, slow: bool) -> bool:
    """Whether the rows' features (quasi-)completely separate the 0/1 labels: some direction w
    gives every row a margin (2 y_i - 1) x_i . w >= 0, and some row a positive one.

    One feature plus an intercept (Platt scaling, the one-feature refits of beta calibration),
    one feature alone, or the intercept alone: an exact O(n) comparison. Otherwise, when
    ``slow`` (the Newton iteration was slow to converge, as it is on separable data), Konis's
    (2007) linear program: maximise sum_i m_i . w subject to m_i . w >= 0 and -1 <= w_j <= 1,
    with m_i = (2 y_i - 1) x_i; a positive optimum means separation.
    """
    positive = labels == 1.0
    if positive.all() or not positive.any():
        return True  # one outcome: the intercept alone runs off to +-infinity
    constant = np.all(x == x[:1], axis=0)
    varying = np.flatnonzero(~constant)
    if varying.size == 1 and x.shape[1] - 1 <= 1:
        f = x[:, varying[0]]
        if x.shape[1] == 1:  # one feature through the origin: margins of one sign
            signed = f * np.where(positive, 1.0, -1.0)
            return bool(np.all(signed >= 0) or np.all(signed <= 0))
        return bool(
            f[~positive].max() <= f[positive].min() or f[positive].max() <= f[~positive].min()
        )
    if varying.size == 0 or not slow:
        return False
    from scipy.optimize import linprog

    margins = x * np.where(positive, 1.0, -1.0)[:, None]
    result = linprog(
        -margins.sum(axis=0),
        A_ub=-margins,
        b_ub=np.zeros(x.shape[0]),
        bounds=[(-1.0, 1.0)] * x.shape[1],
        method="highs",
    )
    return bool(result.status == 0 and -result.fun > 1e-9 * x.shape[0])


def warn_not_converged(fit: LogisticFit, where: str, hint: str) -> None:
    if fit.separable:
        reason = (
            "the features separate the labels, so the maximum-likelihood map is a step "
            "(infinite coefficients); the returned map is the last Newton iterate, nearly that "
            "step."
        )
    else:
        reason = (
            f"Newton's method did not converge after {fit.n_iter} iterations (Newton "
            f"decrement {fit.decrement:.3g})."
        )
    warnings.warn(
        f"{where}: {reason} {hint} converged_ is False.",
        CalibkitWarning,
        stacklevel=4,
    )
