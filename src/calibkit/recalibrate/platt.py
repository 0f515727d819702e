"""Platt scaling (Platt 1999): a logistic regression of the label on the model's score,
``p = sigmoid(a * s + b)``, fitted exactly by Newton's method.

See :mod:`calibkit.recalibrate._binary_maps` for the multiclass modes (one-vs-rest or top-label)
and their trade-off.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import InputError
from ._binary_maps import MULTICLASS, BinaryMapCalibrator, maps_state
from ._logistic import fit_logistic, sigmoid, warn_not_converged
from .base import flag, integer, number, text

__all__ = ["PlattMap", "PlattScaling"]


@dataclass(frozen=True)
class PlattMap:
    """One fitted Platt map ``sigmoid(a * s + b)``."""

    a: float
    b: float
    converged: bool
    n_iter: int


class PlattScaling(BinaryMapCalibrator[PlattMap]):
    """Logistic regression of the label on the score: ``p = sigmoid(a * s + b)``.

    Binary scores (N,) are the model's score or logit (``decision_function``). Probabilities
    are passed with ``from_logits=False``, which takes their logit ``log(p / (1 - p))`` here
    (probabilities of exactly 0 or 1 follow ``clip``); read as scores, probabilities are
    refused at fit (``check_logits``). With (N, C) scores, ``multiclass="ovr"`` fits one map
    per class on column k and renormalises; ``"top-label"`` reads the (N, C) array as logits
    (probabilities with ``from_logits=False``), fits one map on the log-odds of the top-label
    confidence, and rescales the other classes to share the rest (see
    :mod:`calibkit.recalibrate._binary_maps`).

    The fit is the exact maximum-likelihood (a, b): Newton's method with a backtracking line
    search, run until the Newton decrement is below 1e-20; ``converged_`` says whether it got
    there (it cannot when ``smooth_targets=False`` and a score separates the labels, and a
    :class:`~calibkit.CalibkitWarning` says so).

    Parameters
    ----------
    smooth_targets : bool
        Fit to Platt's (1999) targets (N+ + 1) / (N+ + 2) for positives and 1 / (N- + 2) for
        negatives instead of 1 and 0, as scikit-learn's sigmoid calibration does. They keep a
        and b finite on separable data. With ``sample_weight``, N+ and N- are the total weights
        of the positives and negatives, as scikit-learn takes them (the targets then depend on
        the weights' scale, as Platt's prior does on N: integer weights fit what the repeated
        rows fit; with ``smooth_targets=False`` w and c * w fit the same map).
    multiclass : {"ovr", "top-label"}
        How (N, C) input is calibrated; 1-D input uses one map either way.
    from_logits : bool
        ``True`` (default): the scores are scores or logits. ``False``: they are probabilities,
        and the map is applied to their logit.
    clip : float, optional
        With ``from_logits=False``: ``None`` (default) refuses probabilities of exactly 0 or 1
        (their logit is infinite), naming the first row and value; a small eps such as 1e-7
        moves every probability into [eps, 1 - eps] first, in fit and predict alike, with a
        :class:`~calibkit.CalibkitWarning` counting the rows moved.
    check_logits : bool
        With ``from_logits=True``, ``fit`` refuses scores that look like probabilities (1-D
        scores all in [0, 1]; (N, C) rows in [0, 1] summing to 1). ``False`` insists that they
        are scores (say, a similarity that lies in [0, 1]).

    Attributes
    ----------
    a_, b_ : ndarray of shape (n_maps,)
        Slope and intercept of each map: one map for 1-D scores and top-label, C for
        one-vs-rest. ``a_ > 0`` when higher scores mean the event is more likely.
    converged_ : bool
        Every map's Newton iteration converged.
    n_iter_ : ndarray of shape (n_maps,)
        Newton iterations of each map.
    maps_ : tuple of PlattMap
    n_classes_ : int
        2 for 1-D scores.
    input_ndim_ : int
        1 or 2, as the calibration scores.

    Examples
    --------
    Two scores, each seen four times: at s = -1 one label in four is 1, at s = 1 three in four.
    Without smoothing the fit reproduces those frequencies: sigmoid(b - a) = 1/4 and
    sigmoid(a + b) = 3/4 give b = 0 and a = log 3 = 1.0986.

    >>> from calibkit.recalibrate.platt import PlattScaling
    >>> s = [-1, -1, -1, -1, 1, 1, 1, 1]
    >>> platt = PlattScaling(smooth_targets=False).fit(s, [0, 0, 0, 1, 0, 1, 1, 1])
    >>> round(float(platt.a_[0]), 4), round(float(platt.b_[0]), 4), platt.converged_
    (1.0986, 0.0, True)
    >>> platt.predict_proba([-1.0, 1.0]).round(6).tolist()
    [0.25, 0.75]
    """

    kind = "platt"
    domain = "scores"

    _params_spec = {
        "smooth_targets": flag(),
        "multiclass": text(*MULTICLASS),
        "from_logits": flag(),
        "clip": number(minimum=0.0, maximum=0.5, nullable=True),
        "check_logits": flag(),
    }
    _state_spec = maps_state(a=number(), b=number(), converged=flag(), n_iter=integer(minimum=0))

    def __init__(
        self,
        *,
        smooth_targets: bool = True,
        multiclass: str = "ovr",
        from_logits: bool = True,
        clip: float | None = None,
        check_logits: bool = True,
    ) -> None:
        self.smooth_targets = smooth_targets
        self.multiclass = multiclass
        self.from_logits = from_logits
        self.clip = clip
        self.check_logits = check_logits

    def _domain(self) -> str:
        return "scores" if self.from_logits else "logit"

    def _check_settings(self, where: str) -> None:
        for name in ("smooth_targets", "from_logits", "check_logits"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise InputError(
                    f"{where}: {name} must be True or False, got {getattr(self, name)!r}."
                )

    def _fit_map(
        self, x: np.ndarray, y: np.ndarray, *, where: str, w: np.ndarray | None = None
    ) -> PlattMap:
        # with weights, N+ and N- are the classes' total weights (scikit-learn's
        # _sigmoid_calibration with sample_weight)
        if w is None:
            positives = float(y.sum())
            negatives = float(y.size) - positives
        else:
            positives = float(w[y == 1].sum())
            negatives = float(w[y != 1].sum())
        if self.smooth_targets:
            targets = np.where(
                y == 1, (positives + 1.0) / (positives + 2.0), 1.0 / (negatives + 2.0)
            )
        else:
            targets = y.astype(np.float64)
        features = np.column_stack([x, np.ones_like(x)])
        start = np.array([0.0, np.log((positives + 1.0) / (negatives + 1.0))])
        fit = fit_logistic(features, targets, start, sample_weight=w)
        if not fit.converged:
            warn_not_converged(
                fit,
                where,
                "smooth_targets=True (Platt's targets) keeps the fit finite.",
            )
        return PlattMap(float(fit.coef[0]), float(fit.coef[1]), fit.converged, fit.n_iter)

    def _apply_map(self, fitted: PlattMap, x: np.ndarray, *, where: str) -> np.ndarray:
        return sigmoid(fitted.a * x + fitted.b)

    def _map_state(self, fitted: PlattMap) -> dict[str, Any]:
        return {
            "a": fitted.a,
            "b": fitted.b,
            "converged": fitted.converged,
            "n_iter": fitted.n_iter,
        }

    def _map_from_state(self, state: dict[str, Any]) -> PlattMap:
        # finite numbers, a flag and an integer: checked against _state_spec (from_dict)
        a, b = float(state["a"]), float(state["b"])
        return PlattMap(a, b, bool(state["converged"]), int(state["n_iter"]))

    def _learned(self) -> None:
        self.a_ = np.array([m.a for m in self.maps_])
        self.b_ = np.array([m.b for m in self.maps_])
        self.converged_ = all(m.converged for m in self.maps_)
        self.n_iter_ = np.array([m.n_iter for m in self.maps_], dtype=np.int64)
