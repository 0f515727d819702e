"""Ranking quality of a score: the area under the ROC curve (Mann-Whitney form)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate as v
from .._errors import InputError

__all__ = ["auc"]


def auc(scores: Any, labels: Any) -> float:
    """Area under the ROC curve: the share of (positive, negative) pairs that the score orders
    correctly, ties counting one half (Mann-Whitney U / (n_pos n_neg)).

    Depends only on the order of the scores, so any strictly increasing map of them (a
    temperature, a sigmoid) leaves it bit-identical. O(N log N).

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
    n_pos = int(np.count_nonzero(y))
    n_neg = y.size - n_pos
    if n_pos == 0 or n_neg == 0:
        only = "positive" if n_neg == 0 else "negative"
        raise InputError(f"{where}: every label is {only}; AUC needs at least one of each class.")
    from scipy.stats import rankdata

    ranks = rankdata(s)  # average ranks: ties count one half
    u = ranks[y].sum() - n_pos * (n_pos + 1) / 2.0
    return float(u / (n_pos * n_neg))
