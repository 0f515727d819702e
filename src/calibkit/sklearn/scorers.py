"""Calibration losses as scikit-learn scorers, for ``scoring=`` in model selection.

A scorer is called as ``scorer(estimator, X, y)``: it takes ``estimator.predict_proba(X)``,
whose columns follow ``estimator.classes_``, and returns the loss **negated** (scikit-learn
maximises scores), so the names in :data:`SCORERS` start with ``neg_``. A binary problem is
measured on P(the second class), the ``classes_[1]`` scikit-learn calls positive; a multiclass
one on the top label (confidence = largest probability, outcome = prediction correct), except
``classwise_ece`` (every class) and Brier and NLL, which take the whole probability vector
(multiclass Brier sums over classes, from 0 to 2).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._errors import InputError
from ..forecasts import top_label
from ..measure.errors import classwise_ece, ece
from ..measure.scores import brier, nll
from ..measure.smooth import smooth_ece
from .predictions import encoded_predictions

__all__ = ["METRICS", "SCORERS", "CalibrationScorer", "calibration_loss", "make_scorer"]

_BINNED = ("n_bins", "strategy", "closed")


def _binary_event(probs: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(confidence, outcome): P(label = 1) for a binary forecast, the top label otherwise."""
    if probs.ndim == 1:
        return probs, (labels == 1).astype(np.int64)
    forecast = top_label(probs, labels)
    return forecast.confidence, forecast.outcome


def _ece(norm: str) -> Callable[..., float]:
    def loss(probs: np.ndarray, labels: np.ndarray, w: Any, **options: Any) -> float:
        confidence, outcome = _binary_event(probs, labels)
        return ece(confidence, outcome, norm=norm, sample_weight=w, **options)

    return loss


def _classwise(probs: np.ndarray, labels: np.ndarray, w: Any, **options: Any) -> float:
    if probs.ndim == 1:  # binary: the two classes of [1 - p, p]
        probs = np.column_stack([1.0 - probs, probs])
    return classwise_ece(probs, labels, sample_weight=w, **options)


def _smooth(probs: np.ndarray, labels: np.ndarray, w: Any, **options: Any) -> float:
    confidence, outcome = _binary_event(probs, labels)
    return float(smooth_ece(confidence, outcome, sample_weight=w, **options).value)


def _brier(probs: np.ndarray, labels: np.ndarray, w: Any) -> float:
    return brier(probs, labels, sample_weight=w)


def _nll(probs: np.ndarray, labels: np.ndarray, w: Any) -> float:
    return nll(probs, labels, sample_weight=w)


#: metric name -> (loss of (probs, labels, sample_weight, **options), the options it takes)
METRICS: dict[str, tuple[Callable[..., float], tuple[str, ...]]] = {
    "ece": (_ece("l1"), _BINNED),
    "mce": (_ece("max"), _BINNED),
    "rmsce": (_ece("l2"), _BINNED),
    "classwise_ece": (_classwise, _BINNED),
    "smooth_ece": (_smooth, ("bandwidth",)),
    "brier": (_brier, ()),
    "nll": (_nll, ()),
}


def calibration_loss(
    metric: str,
    y_true: Any,
    y_prob: Any,
    *,
    classes: Any = None,
    sample_weight: Any = None,
    **options: Any,
) -> float:
    """A calibration loss of predicted probabilities, as a scorer computes it (not negated).

    Parameters
    ----------
    metric : {"ece", "mce", "rmsce", "classwise_ece", "smooth_ece", "brier", "nll"}
    y_true : array of shape (N,)
        Class labels, of any type scikit-learn takes.
    y_prob : array of shape (N, C) or (N,)
        ``predict_proba`` output (columns in the order of ``classes``), or for a binary
        problem 1-D P(the second class).
    classes : array of shape (C,), optional
        The estimator's ``classes_``; by default the sorted distinct labels of ``y_true``.
    sample_weight : array of shape (N,), optional
    **options
        ``n_bins``, ``strategy``, ``closed`` (the ECE family) or ``bandwidth`` (smooth ECE).

    Examples
    --------
    >>> from calibkit.sklearn import calibration_loss
    >>> round(calibration_loss("brier", ["no", "yes"], [[0.8, 0.2], [0.4, 0.6]]), 12)
    0.1
    >>> round(calibration_loss("ece", ["no", "yes", "yes"], [0.2, 0.6, 0.9], n_bins=10), 4)
    0.2333
    """
    where = f"calibration_loss({metric!r})"
    loss, valid = _metric(metric, options, where=where)
    probs, labels = encoded_predictions(y_true, y_prob, classes=classes, where=where)
    return float(loss(probs, labels, sample_weight, **options))


def _metric(
    metric: Any, options: dict[str, Any], *, where: str
) -> tuple[Callable[..., float], tuple[str, ...]]:
    if not isinstance(metric, str) or metric not in METRICS:
        raise InputError(
            f"{where}: unknown metric {metric!r}; choose one of {', '.join(METRICS)} (the "
            "scorers are named neg_<metric>)."
        )
    loss, valid = METRICS[metric]
    unknown = [key for key in options if key not in valid]
    if unknown:
        raise InputError(
            f"{where}: {metric} takes no option {', '.join(repr(u) for u in unknown)}; valid: "
            f"{', '.join(valid) or 'none'}."
        )
    return loss, valid


class CalibrationScorer:
    """A scikit-learn scorer: ``scorer(estimator, X, y)`` is minus the loss of
    ``estimator.predict_proba(X)`` against ``y`` (see :func:`calibration_loss`). Made by
    :func:`make_scorer`."""

    def __init__(self, metric: str, **options: Any) -> None:
        _metric(metric, options, where="make_scorer")
        self.metric = metric
        self.options = dict(options)

    @property
    def name(self) -> str:
        """``neg_<metric>``, the key in :data:`SCORERS`."""
        return f"neg_{self.metric}"

    def __call__(self, estimator: Any, X: Any, y_true: Any, sample_weight: Any = None) -> float:
        if not hasattr(estimator, "predict_proba"):
            raise InputError(
                f"{self.name}: {type(estimator).__name__} has no predict_proba, which a "
                "calibration loss needs; wrap it in ck.CalibratedClassifier."
            )
        y_prob = estimator.predict_proba(X)
        classes = getattr(estimator, "classes_", None)
        loss = calibration_loss(
            self.metric,
            y_true,
            y_prob,
            classes=classes,
            sample_weight=sample_weight,
            **self.options,
        )
        return -loss

    def __repr__(self) -> str:
        args = "".join(f", {k}={val!r}" for k, val in self.options.items())
        return f"make_scorer({self.metric!r}{args})"


def make_scorer(metric: str, **options: Any) -> CalibrationScorer:
    """A scorer of a calibration loss, for ``scoring=`` (GridSearchCV, cross_validate, ...).

    ``metric`` is one of :data:`METRICS` (``"neg_ece"`` and the other names of :data:`SCORERS`
    are accepted too); ``options`` are passed to the loss (``n_bins=10``, ...). The scorer
    returns the loss negated: greater is better.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from calibkit.sklearn import make_scorer
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]]); y = np.array([0, 0, 1, 1])
    >>> clf = LogisticRegression().fit(X, y)
    >>> scorer = make_scorer("brier")
    >>> p = clf.predict_proba(X)[:, 1]
    >>> bool(np.isclose(scorer(clf, X, y), -np.mean((p - y) ** 2)))
    True
    """
    name = metric[4:] if isinstance(metric, str) and metric.startswith("neg_") else metric
    return CalibrationScorer(name, **options)


#: The scorers with their default options, by scikit-learn-style name.
SCORERS: dict[str, CalibrationScorer] = {f"neg_{m}": CalibrationScorer(m) for m in METRICS}
