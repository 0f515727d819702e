"""The forecasts an estimator reads: (N, C) probabilities (or logits) with class labels, or a 1-D
top-label confidence with 0/1 outcomes (whether each prediction was right)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _validate as v
from .._errors import InputError
from ..forecasts import softmax_of

__all__ = ["Scores", "read_labels", "read_scores"]


@dataclass(frozen=True, eq=False)
class Scores:
    """Checked forecasts: each row's top-label confidence, and the probabilities when given."""

    confidence: np.ndarray
    probs: np.ndarray | None

    @property
    def n(self) -> int:
        return int(self.confidence.shape[0])

    @property
    def n_classes(self) -> int | None:
        return None if self.probs is None else int(self.probs.shape[1])

    @property
    def binary(self) -> bool:
        """Two-class probabilities: precision, recall, F1 and ROC AUC are estimated too."""
        return self.n_classes == 2

    @property
    def predicted(self) -> np.ndarray:
        """The predicted class (argmax, ties to the first); only with probabilities."""
        if self.probs is None:
            raise InputError("a 1-D confidence carries no predicted class.")
        return np.argmax(self.probs, axis=1)

    @property
    def positive(self) -> np.ndarray:
        """P(label = 1) of two-class probabilities."""
        if self.probs is None or self.probs.shape[1] != 2:
            raise InputError("P(label = 1) needs (N, 2) probabilities.")
        return self.probs[:, 1]

    def rows(self, index: np.ndarray) -> Scores:
        return Scores(self.confidence[index], None if self.probs is None else self.probs[index])


def read_scores(x: Any, *, from_logits: bool, where: str, name: str) -> Scores:
    """Checked scores: (N, C) probabilities (logits with ``from_logits=True``) or a 1-D
    top-label confidence in [0, 1]."""
    arr = v.to_numpy(x, name=name, where=where)
    if arr.ndim == 2:
        if arr.shape[1] < 2:
            raise InputError(
                f"{where}: {name} has {arr.shape[1]} column; pass (N, C) probabilities with "
                "C >= 2, or a 1-D top-label confidence."
            )
        if from_logits:
            probs = softmax_of(v.scores(arr, where=where, name=name, ndim=2))
        else:
            probs = v.probabilities(arr, where=where, name=name).astype(np.float64)
        if probs.shape[0] == 0:
            raise InputError(f"{where}: {name} has no rows.")
        return Scores(probs.max(axis=1), probs)
    if from_logits:
        raise InputError(
            f"{where}: from_logits=True needs (N, C) logits; {name} is 1-D. Pass a 1-D "
            "top-label confidence with from_logits=False."
        )
    conf = v.confidence(arr, where=where, name=name).astype(np.float64)
    if conf.shape[0] == 0:
        raise InputError(f"{where}: {name} has no rows.")
    return Scores(conf, None)


def read_labels(y: Any, scores: Scores, *, where: str, name: str) -> np.ndarray:
    """Class labels for probabilities; 0/1 outcomes (1 = the prediction was right) for a 1-D
    confidence."""
    if y is None:
        what = "class labels" if scores.probs is not None else "0/1 outcomes (1 = right)"
        raise InputError(
            f"{where}: {name} is missing; the reference needs {what} to fit on. Only the "
            "target is unlabelled."
        )
    if scores.probs is None:
        hint = (
            "With a 1-D confidence, pass 0/1 outcomes (whether each prediction was right); "
            "with class labels, pass the (N, C) probabilities."
        )
        return v.outcome(y, n=scores.n, where=where, name=name, hint=hint).astype(np.int64)
    return v.labels(y, n=scores.n, n_classes=scores.probs.shape[1], where=where, name=name)
