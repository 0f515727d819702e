"""Ranking quality of a score: the area under the ROC curve (Mann-Whitney form)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate as v
from .._errors import InputError

__all__ = ["auc", "auc_of", "pair_counts"]


def auc(scores: Any, labels: Any) -> float:
    """Area under the ROC curve: the share of (positive, negative) pairs that the score orders
    correctly, ties counting one half (Mann-Whitney U / (n_pos n_neg)).

    Depends only on the order of the scores, so any strictly increasing map of them (a
    temperature, a sigmoid) leaves it bit-identical. Exact: the pairs are counted as integers
    (:func:`auc_of`).

    Examples
    --------
    >>> import calibkit as ck
    >>> ck.auc([0.1, 0.4, 0.4, 0.8], [0, 0, 1, 1])
    0.875
    """
    where = "auc"
    s = v.float_array(scores, name="scores", where=where, ndim=1)
    v.finite(s, name="scores", where=where)
    y = v.labels(labels, n=s.shape[0], n_classes=2, where=where) == 1
    if y.all() or not y.any():
        only = "positive" if y.all() else "negative"
        raise InputError(f"{where}: every label is {only}; AUC needs at least one of each class.")
    return auc_of(s, y)


def pair_counts(scores: np.ndarray, positive: np.ndarray) -> tuple[int, int, int]:
    """(2U, n_pos, n_neg) of checked scores: U counts the (positive, negative) pairs a score
    orders correctly, ties one half, so 2U is a whole number.

    The positives' and the negatives' scores are sorted apart (two plain sorts, no argsort) and
    each positive counts the negatives below it and those equal to it by binary search.
    """
    s = scores + 0  # -0.0 becomes 0.0: equal values must sort as one
    pos = np.sort(s[positive])
    neg = np.sort(s[~positive])
    below = np.searchsorted(neg, pos, side="left")
    upto = np.searchsorted(neg, pos, side="right")
    twice_u = 2 * int(below.sum(dtype=np.int64)) + int((upto - below).sum(dtype=np.int64))
    return twice_u, int(pos.size), int(neg.size)


def auc_of(scores: np.ndarray, positive: np.ndarray) -> float:
    """:func:`auc` of checked arrays (finite scores, a boolean ``positive`` holding both
    classes): the exact pair count, divided once."""
    twice_u, n_pos, n_neg = pair_counts(scores, positive)
    return twice_u / (2.0 * n_pos * n_neg)
