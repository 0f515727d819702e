"""Predictions of a fitted classifier in calibkit's terms: the columns of ``predict_proba`` in the
order of ``classes_``, and the labels as indices into ``classes_``.

Shared by the scorers and the display: scikit-learn hands them class labels (strings, -1/1, ...)
and probabilities (1-D P(positive class) for a binary problem, or (N, C)); calibkit's measures
take probabilities and labels 0..C-1 (0/1 for a binary forecast).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate as v
from .._errors import InputError

__all__ = ["encode_labels", "encoded_predictions"]


def encode_labels(y: Any, classes: np.ndarray, *, where: str, name: str = "y") -> np.ndarray:
    """The index of each label of ``y`` in ``classes`` (in any order); a label that is not among
    them is an :class:`InputError` naming it, its row and the known classes."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise InputError(f"{where}: {name} must be 1-D (one label per row), got shape {y.shape}.")
    order = np.argsort(classes, kind="stable")
    position = np.searchsorted(classes, y, sorter=order)
    index = order[np.clip(position, 0, len(classes) - 1)]
    unseen = classes[index] != y
    if unseen.any():
        row = int(np.argmax(unseen))
        listed = ", ".join(repr(c) for c in classes.tolist()[:10])
        raise InputError(
            f"{where}: {name} has {int(unseen.sum())} label(s) the classifier never saw, first "
            f"at row {row}: {y[row].tolist()!r}; the classes are {listed}. Fit on data with "
            "every class, or drop those rows."
        )
    return index.astype(np.int64)


def encoded_predictions(
    y_true: Any, y_prob: Any, *, classes: Any = None, where: str
) -> tuple[np.ndarray, np.ndarray]:
    """(probs, labels) for calibkit's measures.

    ``y_prob`` is (N, C) with columns in the order of ``classes`` (by default the sorted distinct
    values of ``y_true``, which must then number C), or 1-D: P(the last class) of a binary
    problem, scikit-learn's convention for binary scores. Binary problems come back as 1-D
    P(label = 1) with labels 0/1; multiclass ones as (N, C) with labels 0..C-1.
    """
    y = np.asarray(y_true)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    probs = v.float_array(y_prob, name="y_prob", where=where, ndim=(1, 2))
    if classes is None:
        known = np.unique(y)
        n_columns = 2 if probs.ndim == 1 else probs.shape[1]
        if known.size != n_columns:
            raise InputError(
                f"{where}: y_prob has {n_columns} columns but y_true holds {known.size} distinct "
                "classes, so the columns cannot be matched to the classes; pass classes= (the "
                "estimator's classes_)."
            )
        known_classes = known
    else:
        known_classes = np.asarray(classes)
    labels = encode_labels(y, known_classes, where=where, name="y_true")
    if probs.shape[0] != labels.size:
        raise InputError(
            f"{where}: y_prob has {probs.shape[0]} rows but y_true has {labels.size}; they must "
            "be aligned row by row."
        )
    if probs.ndim == 2 and probs.shape[1] != known_classes.size:
        raise InputError(
            f"{where}: y_prob has {probs.shape[1]} columns but there are {known_classes.size} "
            "classes; pass one column per class, in the order of classes."
        )
    if probs.ndim == 1 and known_classes.size != 2:
        raise InputError(
            f"{where}: 1-D y_prob is P(the last class) of a binary problem, but there are "
            f"{known_classes.size} classes; pass the (N, C) probabilities."
        )
    if probs.ndim == 2 and probs.shape[1] == 2:
        probs = probs[:, 1]
    return probs, labels
