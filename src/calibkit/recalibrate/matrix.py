"""Vector and matrix scaling (Guo et al. 2017), with the regularisation of Kull et al. 2019.

Both maps are a linear map of the logits followed by the softmax:

* vector scaling: ``softmax(w * z + b)`` with ``w, b`` in R^C (one scale and one offset per class);
* matrix scaling: ``softmax(W z + b)`` with ``W`` (C, C) and ``b`` in R^C. On log-probabilities
  (``from_logits=False``) this is the Dirichlet calibration map of Kull et al. (2019).

Both are fitted by minimising the mean negative log-likelihood (NLL) of the calibration labels
plus a quadratic penalty that pulls the map towards the identity (``w = 1`` / ``W = I``, ``b = 0``:
the uncalibrated model). The objective is convex in the parameters; it is minimised from the
identity by scipy's trust-region Newton-CG (``trust-ncg``) with the exact gradient and exact
Hessian-vector products, computed stably in float64 (log-sum-exp with the row maximum
subtracted) chunk by chunk, so float32 logits are never copied whole. Convergence is checked
from the final gradient and recorded; a fit that did not converge, or whose unpenalised optimum
lies at infinity (separable data, a class absent from the labels), warns with
:class:`calibkit.CalibkitWarning`.

Unlike temperature scaling, both maps can change the argmax (each class has its own scale and
offset, and matrix scaling mixes classes), so the accuracy can move, up or down. Guo et al.
found that they overfit more easily than temperature scaling; the penalties are the remedy Kull
et al. recommend.
"""

from __future__ import annotations

import abc
import math
import warnings
from typing import Any, Self

import numpy as np

from .. import _validate as v
from .._errors import CalibkitWarning, InputError
from ._inputs import warn_extreme_logits
from ._linear_map import _LinearMap
from ._linear_objective import _Problem
from ._weights import fit_weights
from .base import array, flag, number

__all__ = ["MatrixScaling", "VectorScaling"]

#: The solver is asked for a gradient this small (L2 norm, relative to the logit scale) ...
_SOLVER_GTOL = 1e-10
#: ... and the fit counts as converged when the largest gradient entry is below this (relative).
_CONVERGED_GTOL = 1e-6
_MAX_ITER = 500


class _LinearSoftmax(_LinearMap):
    """Shared machinery: ``softmax(A(z) + b)`` with a linear ``A`` (per-class scale or matrix),
    fitted here; the fitted map (prediction, JSON state) is
    :class:`~calibkit.recalibrate._linear_map._LinearMap`, the objective
    :class:`~calibkit.recalibrate._linear_objective._Problem`."""

    # ------------------------------------------------------------------ subclass hooks
    @abc.abstractmethod
    def _penalty_weights(self, n_classes: int, where: str) -> tuple[np.ndarray, bool]:
        """Per-parameter weights h of the penalty sum h * (x - x0)^2 and whether it bounds
        every direction of the parameter space (so the optimum is finite for any data)."""

    def _unpack(self, x: np.ndarray, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
        if self._matrix:
            return x[: n_classes * n_classes].reshape(n_classes, n_classes), x[-n_classes:]
        return x[:n_classes], x[n_classes:]

    def _identity(self, n_classes: int) -> np.ndarray:
        if self._matrix:
            return np.concatenate([np.eye(n_classes).ravel(), np.zeros(n_classes)])
        return np.concatenate([np.ones(n_classes), np.zeros(n_classes)])

    # ------------------------------------------------------------------ API
    def fit(self, scores: Any, labels: Any, *, sample_weight: Any = None) -> Self:
        """Fit the map on calibration logits (N, C) (or probabilities with
        ``from_logits=False``) and labels 0..C-1; returns ``self``.

        ``sample_weight`` (one finite weight >= 0 per row, not all 0) fits the weighted mean
        NLL ``sum_i w_i NLL_i / sum_i w_i`` plus the same penalty: integer weights fit what the
        rows repeated that many times fit, a row of weight 0 is left out, and w and c * w fit
        the same map. ``nll_before_`` and ``nll_after_`` are then weighted means.
        """
        where = f"{type(self).__name__}.fit"
        z = self._logits(scores, where=where)
        n_classes = int(z.shape[1])
        y = v.labels(labels, n=z.shape[0], n_classes=n_classes, where=where)
        counted = fit_weights(sample_weight, n=z.shape[0], where=where)
        h, coercive = self._penalty_weights(n_classes, where)
        if self.from_logits:
            v.logits_not_probabilities(z, where=where, check=self.check_logits)
        if counted is not None:
            z, y = counted.rows(z), counted.rows(y)
        if self.from_logits:
            warn_extreme_logits(z, y, where=where)
        w = None if counted is None else counted.w
        problem = _Problem(z, y, self._matrix, h, self._identity(n_classes), w)

        absent = np.flatnonzero(np.bincount(y, minlength=n_classes) == 0)
        if absent.size and not coercive:
            _warn(
                f"{where}: class{'es' if absent.size > 1 else ''} "
                f"{', '.join(str(k) for k in absent[:10])} never appear"
                f"{'' if absent.size > 1 else 's'} in the labels, so the unpenalised fit drives "
                f"{'their' if absent.size > 1 else 'its'} probability towards 0 without bound. "
                f"{self._coercive_hint()}, or calibrate on a split that has every class."
            )

        x0 = problem.identity
        value0, grad0 = problem.value_and_grad(x0)
        nll0 = problem.last_nll
        scale = problem.scale
        gtol = _SOLVER_GTOL * scale * math.sqrt(x0.size)
        from scipy.optimize import minimize  # lazy: keeps `import calibkit` light

        if self._matrix:  # (C^2 + C) parameters: Hessian-vector products, never the Hessian
            result = minimize(
                problem.value_and_grad,
                x0,
                jac=True,
                hessp=problem.hessp,
                method="trust-ncg",
                options={"gtol": gtol, "maxiter": _MAX_ITER},
            )
        else:  # 2C parameters: the whole Hessian costs one pass, so use it
            result = minimize(
                problem.value_and_grad,
                x0,
                jac=True,
                hess=problem.hess,
                method="trust-exact",
                options={"gtol": gtol, "maxiter": _MAX_ITER},
            )
        x = np.asarray(result.x, dtype=np.float64)
        value, grad = problem.value_and_grad(x)
        nll = problem.last_nll
        if value > value0:  # cannot happen for a descent method; never report worse than start
            x, value, grad, nll = x0, value0, grad0, nll0
        gnorm = float(np.max(np.abs(grad)))
        weights, bias = self._unpack(x, n_classes)

        self.weights_ = weights.copy()
        self.bias_ = bias.copy()
        self.n_classes_ = n_classes
        self.nll_before_ = nll0
        self.nll_after_ = nll
        self.objective_ = float(value)
        self.gradient_norm_ = gnorm
        self.n_iter_ = int(result.nit)
        self.n_evaluations_ = problem.n_passes
        self.converged_ = bool(gnorm <= _CONVERGED_GTOL * scale)

        if not self.converged_:
            _warn(
                f"{where}: the fit did not converge after {self.n_iter_} iterations "
                f"(largest gradient entry {gnorm:.3g}, tolerance {_CONVERGED_GTOL * scale:.3g}; "
                f"solver: {result.message}). The map may be far from the optimum; "
                f"{self._coercive_hint().lower()} or check the data."
            )
        elif not coercive and problem.separated(x):
            _warn(
                f"{where}: the calibration data are separable by this map (every fitted "
                "prediction is right with a margin), so the unpenalised NLL keeps falling as the "
                "parameters grow without bound and the fitted map is overconfident. "
                f"{self._coercive_hint()}, or fit on more held-out data."
            )
        return self

    @abc.abstractmethod
    def _coercive_hint(self) -> str:
        """How to make the penalty bound every direction (for the separability warning)."""


class VectorScaling(_LinearSoftmax):
    """Per-class scale and offset of the logits: ``softmax(w * z + b)``, w and b in R^C
    (Guo et al. 2017).

    With every ``w_k`` equal to ``1 / T`` and ``b = 0`` it is temperature scaling, so on the
    same data its fitted NLL is never above temperature scaling's. Unlike temperature scaling
    it can change the argmax (and so the accuracy).

    Parameters
    ----------
    l2 : float
        Strength (>= 0) of the L2 penalty towards the identity map (w = 1, b = 0). The
        objective minimised is::

            mean_i NLL_i + l2 / C * (sum_k (w_k - 1)^2 + sum_k b_k^2)

        where the NLL is averaged over the N calibration rows, so the penalty does not fade as
        N grows. ``l2 > 0`` also keeps the fit finite on separable data.
    from_logits : bool
        ``True`` (default): the scores are logits (N, C). ``False``: they are probabilities,
        whose natural logs are used as logits.
    clip : float, optional
        With ``from_logits=False``: ``None`` (default) refuses probabilities of exactly 0 (their
        log is -inf, which a linear map cannot use), naming the first row and value; a small
        eps such as 1e-7 moves every probability into [eps, 1 - eps] first, in fit and predict
        alike, with a :class:`~calibkit.CalibkitWarning` counting the rows moved.
    check_logits : bool
        With ``from_logits=True``, ``fit`` refuses logits that look like probabilities (every
        entry in [0, 1], every row summing to 1). ``False`` insists that they are logits.

    Attributes
    ----------
    weights_ : ndarray of shape (C,)
        The per-class scales w.
    bias_ : ndarray of shape (C,)
        The per-class offsets b (defined up to a common constant when ``l2 = 0``).
    n_classes_ : int
    nll_before_, nll_after_ : float
        Mean NLL of the calibration data at the identity map and at the fitted map.
    objective_ : float
        The penalised objective at the fitted map.
    gradient_norm_ : float
        Largest absolute entry of the objective's gradient at the fitted map.
    n_iter_, n_evaluations_ : int
        Solver iterations, and passes over the data (gradients and Hessian-vector products).
    converged_ : bool
        Whether ``gradient_norm_`` fell below 1e-6 times the logit scale (max(1, rms logit)).

    Examples
    --------
    Logits 2.5 times too confident: each class's fitted scale is near 1 / 2.5 = 0.4.

    >>> import numpy as np
    >>> from calibkit.recalibrate.matrix import VectorScaling
    >>> rng = np.random.default_rng(0)
    >>> true = 1.5 * rng.normal(size=(20_000, 3))
    >>> p = np.exp(true) / np.exp(true).sum(axis=1, keepdims=True)
    >>> labels = (rng.random((20_000, 1)) > p.cumsum(axis=1)).sum(axis=1)
    >>> vs = VectorScaling().fit(2.5 * true, labels)
    >>> vs.weights_.round(1).tolist(), bool(vs.converged_)
    ([0.4, 0.4, 0.4], True)
    """

    kind = "vector"
    _matrix = False
    _params_spec = {
        "l2": number(minimum=0.0),
        "from_logits": flag(),
        "clip": number(minimum=0.0, maximum=0.5, nullable=True),
        "check_logits": flag(),
    }
    _state_spec = _LinearSoftmax._state_fields(array(number()))

    def __init__(
        self,
        *,
        l2: float = 0.0,
        from_logits: bool = True,
        clip: float | None = None,
        check_logits: bool = True,
    ) -> None:
        self.l2 = l2
        self.from_logits = from_logits
        self.clip = clip
        self.check_logits = check_logits

    def _penalty_weights(self, n_classes: int, where: str) -> tuple[np.ndarray, bool]:
        l2 = _strength(self.l2, "l2", where)
        return np.full(2 * n_classes, l2 / n_classes), l2 > 0

    def _coercive_hint(self) -> str:
        return "Set l2 > 0 to keep the map near the identity"


class MatrixScaling(_LinearSoftmax):
    """A full linear map of the logits: ``softmax(W z + b)``, W of shape (C, C), b in R^C
    (Guo et al. 2017); on log-probabilities (``from_logits=False``) the Dirichlet calibration map
    of Kull et al. (2019), with their off-diagonal and intercept regularisation ("ODIR").

    The fit starts at the identity (W = I, b = 0: the uncalibrated model), so data that are
    already calibrated leave the map near the identity. The map mixes classes, so it can change
    the argmax: a model that systematically confuses two classes can be corrected (and an
    overfitted map can make accuracy worse). Rows of the output always sum to 1.

    Parameters
    ----------
    l2 : float
        Strength (>= 0) of a plain L2 penalty on every entry of W - I.
    off_diagonal : float
        lambda (>= 0) of Kull et al.: penalises the off-diagonal entries of W (towards 0, which
        is where the identity has them), leaving the per-class scales free.
    intercept : float
        mu (>= 0) of Kull et al.: penalises the offsets b (towards 0).
    from_logits : bool
        ``True`` (default): the scores are logits (N, C). ``False``: they are probabilities,
        whose natural logs are used as logits (Dirichlet calibration).
    clip : float, optional
        With ``from_logits=False``: ``None`` (default) refuses probabilities of exactly 0 (their
        log is -inf, which a linear map cannot use), naming the first row and value; a small
        eps such as 1e-7 moves every probability into [eps, 1 - eps] first, in fit and predict
        alike, with a :class:`~calibkit.CalibkitWarning` counting the rows moved.
    check_logits : bool
        With ``from_logits=True``, ``fit`` refuses logits that look like probabilities (every
        entry in [0, 1], every row summing to 1). ``False`` insists that they are logits.

    Notes
    -----
    The objective minimised, with the NLL averaged over the N calibration rows (so the penalty
    does not fade as N grows) and each penalty averaged over the entries it covers, is::

        mean_i NLL_i
          + l2 / C^2 * sum_{j,k} (W - I)_{jk}^2
          + off_diagonal / (C (C - 1)) * sum_{j != k} W_{jk}^2
          + intercept / C * sum_k b_k^2

    The last two terms are Kull et al.'s ODIR penalty. The optimum is finite for any data when
    ``l2 > 0`` and ``intercept > 0`` (with ``l2 > 0`` alone, when every class appears in the
    labels); otherwise separable data or an absent class send it to infinity, and the fit warns.

    Attributes
    ----------
    weights_ : ndarray of shape (C, C)
        The matrix W (row k gives class k's new logit); a common vector added to every row
        leaves the probabilities unchanged.
    bias_ : ndarray of shape (C,)
        The offsets b (defined up to a common constant when ``intercept = 0``).
    n_classes_ : int
    nll_before_, nll_after_ : float
        Mean NLL of the calibration data at the identity map and at the fitted map.
    objective_ : float
        The penalised objective at the fitted map.
    gradient_norm_ : float
        Largest absolute entry of the objective's gradient at the fitted map.
    n_iter_, n_evaluations_ : int
        Solver iterations, and passes over the data (gradients and Hessian-vector products).
    converged_ : bool
        Whether ``gradient_norm_`` fell below 1e-6 times the logit scale (max(1, rms logit)).

    Examples
    --------
    A model that confuses classes 0 and 1. With only three distinct inputs the map can give each
    one any probabilities, so the fit returns each input's label frequencies: (0.2, 0.6, 0.2)
    for a class-0 logit, whose argmax moves to class 1.

    >>> from calibkit.recalibrate.matrix import MatrixScaling
    >>> logits = [[3, 0, 0]] * 5 + [[0, 3, 0]] * 5 + [[0, 0, 3]] * 5
    >>> labels = [1, 1, 1, 0, 2] + [0, 0, 0, 1, 2] + [2, 2, 2, 0, 1]
    >>> ms = MatrixScaling().fit(logits, labels)
    >>> p = ms.predict_proba([[3.0, 0.0, 0.0]])
    >>> p.round(3).tolist(), int(p.argmax())
    ([[0.2, 0.6, 0.2]], 1)
    """

    kind = "matrix"
    _matrix = True
    _params_spec = {
        "l2": number(minimum=0.0),
        "off_diagonal": number(minimum=0.0),
        "intercept": number(minimum=0.0),
        "from_logits": flag(),
        "clip": number(minimum=0.0, maximum=0.5, nullable=True),
        "check_logits": flag(),
    }
    _state_spec = _LinearSoftmax._state_fields(array(array(number())))

    def __init__(
        self,
        *,
        l2: float = 0.0,
        off_diagonal: float = 0.0,
        intercept: float = 0.0,
        from_logits: bool = True,
        clip: float | None = None,
        check_logits: bool = True,
    ) -> None:
        self.l2 = l2
        self.off_diagonal = off_diagonal
        self.intercept = intercept
        self.from_logits = from_logits
        self.clip = clip
        self.check_logits = check_logits

    def _penalty_weights(self, n_classes: int, where: str) -> tuple[np.ndarray, bool]:
        l2 = _strength(self.l2, "l2", where)
        off = _strength(self.off_diagonal, "off_diagonal", where)
        mu = _strength(self.intercept, "intercept", where)
        c = n_classes
        w = np.full((c, c), l2 / (c * c) + off / (c * (c - 1)))
        np.fill_diagonal(w, l2 / (c * c))
        return np.concatenate([w.ravel(), np.full(c, mu / c)]), l2 > 0 and mu > 0

    def _coercive_hint(self) -> str:
        return "Set l2 > 0 and intercept > 0 to keep the map near the identity"


# ---------------------------------------------------------------------------- helpers


def _warn(message: str) -> None:
    warnings.warn(message, CalibkitWarning, stacklevel=3)


def _strength(value: Any, name: str, where: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float, np.integer, np.floating))
        or not math.isfinite(float(value))
        or value < 0
    ):
        raise InputError(
            f"{where}: {name} must be a finite number >= 0 (0 = no penalty), got {value!r}."
        )
    return float(value)
