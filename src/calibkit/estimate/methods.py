"""The three label-free estimators, each fitted on labelled reference rows and read on target
rows as a per-row estimate of "this prediction is right".

- **CBPE** (confidence-based performance estimation, as NannyML's): a calibrator fitted on the
  reference; a target row's estimate is its calibrated probability of being right (for two
  classes: the calibrated P(label = 1), from which the expected confusion matrix follows).
- **ATC** (average thresholded confidence, Garg et al. 2022): a threshold t on a score (the
  top-label confidence, or the negative entropy of the probabilities) such that the reference's
  share above t equals its accuracy; a target row counts 1 above t, 0 below. Rows exactly at t
  count a fraction lambda, chosen so the reference share is exactly its accuracy (random
  tie-breaking in expectation: stated confidences such as 0.9 repeat often).
- **DoC** (difference of confidences, Guillory et al. 2021): target accuracy = reference
  accuracy - (mean reference confidence - mean target confidence); a row's estimate is its
  confidence plus the reference's accuracy minus its mean confidence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import InputError
from ..recalibrate import (
    Calibrator,
    MatrixScaling,
    TemperatureScaling,
    VectorScaling,
    make_calibrator,
)
from .inputs import Scores

__all__ = ["METHODS", "SCORES", "Fitted", "correct_of", "fit_method", "new_calibrator"]

METHODS = ("cbpe", "atc", "doc")
SCORES = ("confidence", "negative_entropy")
#: Calibrators fitted on the (N, C) probabilities of a multiclass model; others on its top-label
#: confidence.
_MULTICLASS_MAPS = (TemperatureScaling, VectorScaling, MatrixScaling)


@dataclass(frozen=True, eq=False)
class Fitted:
    """One method fitted on the reference: :meth:`correct` gives each target row's estimate."""

    method: str
    calibrator: Calibrator | None = None
    threshold: float = 0.0
    tie_share: float = 0.0
    score: str = "confidence"
    offset: float = 0.0

    def event(self, target: Scores) -> np.ndarray:
        """CBPE's calibrated probability of the event: P(label = 1) for two classes, else P(the
        prediction is right)."""
        if self.calibrator is None:
            raise InputError(f"{self.method}: only CBPE gives a per-row probability.")
        cal = self.calibrator
        if target.binary:
            return np.asarray(cal.predict_proba(target.positive), dtype=np.float64)
        if isinstance(cal, _MULTICLASS_MAPS) and target.probs is not None:
            p = np.asarray(cal.predict_proba(target.probs), dtype=np.float64)
            return p[np.arange(target.n), target.predicted]
        return np.asarray(cal.predict_proba(target.confidence), dtype=np.float64)

    def correct(self, target: Scores) -> np.ndarray:
        """Each target row's estimate of being right (its mean is the estimated accuracy)."""
        if self.method == "cbpe":
            return correct_of(self.event(target), target)
        if self.method == "atc":
            s = score_of(target, self.score, where="atc")
            return (s > self.threshold) + self.tie_share * (s == self.threshold)
        return target.confidence + self.offset


def correct_of(event: np.ndarray, target: Scores) -> np.ndarray:
    """Right or not (or its probability) from the event: the event itself, or for two classes
    P(label = 1) where 1 is predicted and 1 - P(label = 1) where 0 is."""
    if not target.binary:
        return event
    return np.where(target.predicted == 1, event, 1.0 - event)


def score_of(scores: Scores, score: str, *, where: str) -> np.ndarray:
    """ATC's score: the top-label confidence, or the negative entropy sum p log p."""
    if score == "confidence":
        return scores.confidence
    if scores.probs is None:
        raise InputError(
            f"{where}: score='negative_entropy' needs (N, C) probabilities; a 1-D confidence "
            "has none. Use score='confidence'."
        )
    p = scores.probs
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, p * np.log(np.where(p > 0, p, 1.0)), 0.0)
    return terms.sum(axis=1)


def new_calibrator(calibrator: Any, *, where: str) -> Calibrator:
    """A fresh, unfitted calibrator: by name, or a copy of an instance's settings."""
    if isinstance(calibrator, str):
        if calibrator == "temperature":
            return make_calibrator("temperature", from_logits=False)
        if calibrator not in ("isotonic", "platt", "histogram", "beta"):
            raise InputError(
                f"{where}: calibrator {calibrator!r} is not one to estimate with; choose "
                "'isotonic', 'temperature', 'platt', 'histogram', 'beta' or pass a calibrator "
                "instance."
            )
        return make_calibrator(calibrator)
    if not isinstance(calibrator, Calibrator):
        raise InputError(
            f"{where}: calibrator must be a name such as 'isotonic' or a calibkit calibrator "
            f"(e.g. ck.IsotonicCalibration()), got {type(calibrator).__name__}."
        )
    if isinstance(calibrator, TemperatureScaling) and calibrator.from_logits:
        raise InputError(
            f"{where}: the estimator hands the calibrator probabilities; use "
            "ck.TemperatureScaling(from_logits=False) (logits are turned into probabilities "
            "with from_logits=True on the estimator)."
        )
    return type(calibrator)(**calibrator.get_params())


def fit_method(
    method: str,
    reference: Scores,
    labels: np.ndarray,
    *,
    calibrator: Any,
    score: str,
    where: str,
) -> Fitted:
    """Fit ``method`` on reference rows and their labels (class labels, or 0/1 outcomes for a
    1-D confidence)."""
    right = labels if reference.probs is None else (labels == reference.predicted)
    if method == "cbpe":
        cal = new_calibrator(calibrator, where=where)
        if reference.binary:
            cal.fit(reference.positive, labels)
        elif isinstance(cal, _MULTICLASS_MAPS) and reference.probs is not None:
            cal.fit(reference.probs, labels)
        else:
            cal.fit(reference.confidence, right)
        return Fitted("cbpe", calibrator=cal)
    n_right = int(right.sum())
    if method == "atc":
        s = score_of(reference, score, where=where)
        ordered = np.sort(s)
        t = float(ordered[max(reference.n - n_right - 1, 0)])
        above = int(np.count_nonzero(s > t))
        at = int(np.count_nonzero(s == t))
        return Fitted("atc", threshold=t, tie_share=(n_right - above) / at, score=score)
    offset = n_right / reference.n - float(reference.confidence.mean())
    return Fitted("doc", offset=offset)
