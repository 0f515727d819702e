"""Ranking quality of a score: the area under the ROC curve (Mann-Whitney form)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _kernels
from .. import _validate as v
from .._errors import InputError
from .pooled import Pooled

__all__ = [
    "Ranking",
    "auc",
    "auc_of",
    "order_statistics",
    "pair_counts",
    "pair_counts_numpy",
    "weighted_pair_sums",
]


def auc(scores: Any, labels: Any, *, sample_weight: Any = None) -> float:
    """Area under the ROC curve: the share of (positive, negative) pairs that the score orders
    correctly, ties counting one half (Mann-Whitney U / (n_pos n_neg)).

    Depends only on the order of the scores, so any strictly increasing map of them (a
    temperature, a sigmoid) leaves it bit-identical. Exact: the pairs are counted as integers
    (:func:`auc_of`).

    With ``sample_weight`` each pair counts w_i w_j: sum over (positive i, negative j) of
    w_i w_j ([s_i > s_j] + [s_i = s_j] / 2), over (sum of positive weights) (sum of negative
    weights), scikit-learn's ``roc_auc_score(..., sample_weight=w)`` (to rounding: the weighted
    sums are floats).

    Examples
    --------
    >>> import calibkit as ck
    >>> ck.auc([0.1, 0.4, 0.4, 0.8], [0, 0, 1, 1])
    0.875

    Weighted, the negative tied with a positive counts 3 times: the pairs of the positive at
    0.4 with the negatives weigh 1 (below) and 3 (tied, half), those of 0.8 weigh 1 and 3,
    so U = 1 + 1.5 + 1 + 3 = 6.5 of 2 * 4 = 8:

    >>> ck.auc([0.1, 0.4, 0.4, 0.8], [0, 0, 1, 1], sample_weight=[1, 3, 1, 1])
    0.8125
    """
    where = "auc"
    s = v.float_array(scores, name="scores", where=where, ndim=1)
    v.finite(s, name="scores", where=where)
    y = v.labels(labels, n=s.shape[0], n_classes=2, where=where) == 1
    w = v.sample_weight(sample_weight, n=s.shape[0], where=where)
    counted = y if w is None else y[w > 0]
    if counted.all() or not counted.any():
        only = "positive" if counted.all() else "negative"
        weighted = "" if w is None else " of positive weight"
        raise InputError(
            f"{where}: every label{weighted} is {only}; AUC needs at least one of each class"
            f"{'' if w is None else ' with a positive weight'}."
        )
    return auc_of(s, y, sample_weight=w)


def pair_counts(scores: np.ndarray, positive: np.ndarray) -> tuple[int, int, int]:
    """(2U, n_pos, n_neg) of checked scores: U counts the (positive, negative) pairs a score
    orders correctly, ties one half, so 2U is a whole number.

    Large inputs go to the numba kernel (``_numba_ranking``: counting passes over the scores'
    order-preserving integer keys, no comparison sort), the others to
    :func:`pair_counts_numpy`, the reference it agrees with integer for integer.
    """
    return Ranking(scores, positive).pair_counts()


def pair_counts_numpy(scores: np.ndarray, positive: np.ndarray) -> tuple[int, int, int]:
    """:func:`pair_counts` by numpy (the reference): the positives' and the negatives' scores
    sorted apart (two plain sorts, no argsort), and each positive counts the negatives below
    it and those equal to it by binary search."""
    s = scores + 0  # -0.0 becomes 0.0: equal values must sort as one
    pos = np.sort(s[positive])
    neg = np.sort(s[~positive])
    below = np.searchsorted(neg, pos, side="left")
    upto = np.searchsorted(neg, pos, side="right")
    twice_u = 2 * int(below.sum(dtype=np.int64)) + int((upto - below).sum(dtype=np.int64))
    return twice_u, int(pos.size), int(neg.size)


def auc_of(
    scores: np.ndarray, positive: np.ndarray, *, sample_weight: np.ndarray | None = None
) -> float:
    """:func:`auc` of checked arrays (finite scores, a boolean ``positive`` holding both
    classes, with a positive weight when weighted): the exact pair count, divided once."""
    return Ranking(scores, positive, sample_weight=sample_weight).auc()


def weighted_pair_sums(
    scores: np.ndarray, positive: np.ndarray, weight: np.ndarray
) -> tuple[float, float, float]:
    """(2U, W+, W-) with weights: U the sum over (positive, negative) pairs of w_i w_j, ties
    one half, W+ and W- the classes' weights (numpy: one sort, the weights summed per distinct
    score).

    Examples
    --------
    >>> weighted_pair_sums(np.array([0.1, 0.4, 0.4, 0.8]), np.array([False, False, True, True]),
    ...                    np.array([1.0, 3.0, 1.0, 1.0]))
    (13.0, 2.0, 4.0)
    """
    s = scores + 0  # -0.0 becomes 0.0: equal values must sort as one
    order = np.argsort(s, kind="stable")
    xs = s[order]
    pos = np.where(positive, weight, 0.0)[order]
    neg = np.where(positive, 0.0, weight)[order]
    new = np.empty(xs.size, dtype=bool)
    new[:1] = True
    np.not_equal(xs[1:], xs[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    pos_at, neg_at = np.add.reduceat(pos, starts), np.add.reduceat(neg, starts)
    below = np.cumsum(neg_at) - neg_at
    twice_u = float(np.dot(pos_at, 2.0 * below + neg_at))
    return twice_u, float(pos_at.sum()), float(neg_at.sum())


#: Above this many scores the numba path orders them :data:`SLABS` ranges at a time (about
#: N / SLABS keys held at once) rather than whole (N keys, one copy of float64 scores).
SLAB_ROWS = 1 << 24
SLABS = 2


class Ranking:
    """Checked finite scores and a boolean ``positive``, ordered once for the AUC's pair counts,
    the bins' sums and any order statistics of the scores (what an audit needs of them).

    On the numba path the scores are sorted apart by class (as integer keys: one copy of the
    scores) and every question reads that order; above :data:`SLAB_ROWS` scores the order is
    made a slab of :data:`SLABS` at a time (``_numba_slabs``) for :meth:`order_statistics` and
    :meth:`sweep`, so that about half a copy is held. On the numpy path they are the
    references :func:`pair_counts_numpy`, ``np.partition`` and the binning kernel.

    Examples
    --------
    >>> import numpy as np
    >>> r = Ranking(np.array([0.1, 0.4, 0.4, 0.8]), np.array([False, False, True, True]))
    >>> r.pair_counts(), r.auc(), r.order_statistics(np.array([0, 3])).tolist()
    ((7, 2, 2), 0.875, [0.1, 0.8])
    >>> r.sweep([(np.array([0.0, 0.5, 1.0]), "right")], auc=True)[0]
    0.875
    """

    def __init__(
        self, scores: np.ndarray, positive: np.ndarray, *, sample_weight: np.ndarray | None = None
    ) -> None:
        self.scores = scores
        self.positive = positive
        self.sample_weight = sample_weight
        self._fast = _kernels.use_numba(scores.shape[0])
        self._classes: Any = None
        self._slabs: Any = None
        self._slabbed = self._fast and scores.shape[0] > SLAB_ROWS

    def _sorted(self) -> Any:
        if self._classes is None:
            ranking = _kernels.numba_ranking()
            self._classes = ranking.sorted_classes(self.scores, self.positive)
        return self._classes

    def _laid_out(self) -> Any:
        if self._slabs is None:
            self._slabs = _kernels.numba_slabs().Slabs(self.scores, self.positive, slabs=SLABS)
        return self._slabs

    def pair_counts(self) -> tuple[int, int, int]:
        """(2U, n_pos, n_neg), as :func:`pair_counts`: the rows' counts, whatever their
        weights (:func:`weighted_pair_sums` has the weighted ones)."""
        if not self._fast:
            return pair_counts_numpy(self.scores, self.positive)
        twice_u, n_pos, n_neg = _kernels.numba_ranking().pairs_of(*self._sorted())
        return int(twice_u), int(n_pos), int(n_neg)

    def auc(self) -> float:
        """The AUC (both classes present): the exact pair count, divided once; with weights,
        the weighted pair sums (:func:`weighted_pair_sums`)."""
        if self.sample_weight is not None:
            wu, w_pos, w_neg = weighted_pair_sums(self.scores, self.positive, self.sample_weight)
            return wu / (2.0 * w_pos * w_neg)
        twice_u, n_pos, n_neg = self.pair_counts()
        return twice_u / (2.0 * n_pos * n_neg)

    def sweep(
        self, bins: list[tuple[np.ndarray, str]], *, auc: bool
    ) -> tuple[float | None, list[tuple[np.ndarray, np.ndarray]] | None]:
        """The AUC (with ``auc``; both classes present) and, per ``(edges, closed)`` of
        ``bins``, the per-bin count and the sums of :data:`~calibkit._kernels.SUM_FIELDS` of
        scores in [0, 1] with 0/1 outcomes ``positive``, as
        :func:`calibkit._kernels.bin_sums` gives them: read off one order of the scores (each
        bin a run of each class's sorted scores: no pass over the rows for them). The sums
        are None on the numpy path, with weights, or for scores below 0."""
        if not self._fast or self.sample_weight is not None:
            return (self.auc() if auc else None), None
        if self._slabbed and self._classes is None:
            requests = [(edges, closed == "right") for edges, closed in bins]
            (twice_u, n_pos, n_neg), sums = self._laid_out().sweep(requests)
            return (twice_u / (2.0 * n_pos * n_neg) if auc else None), sums
        kneg, kpos, _ = self._sorted()
        if (kneg.size and kneg[0] < 0) or (kpos.size and kpos[0] < 0):
            sums = None
        else:
            ranking = _kernels.numba_ranking()
            sums = [ranking.bin_sums(kneg, kpos, e, closed == "right") for e, closed in bins]
        return (self.auc() if auc else None), sums

    def pooled(self) -> Pooled | None:
        """The scores pooled by value, as :func:`~calibkit.measure.pooled.pool_ties` pools
        them (the same values, counts and events), merged off the order the numba path holds
        (no second sort); None on the numpy path or with weights."""
        if not self._fast or self.sample_weight is not None:
            return None
        kneg, kpos, _ = self._sorted()
        n = kneg.size + kpos.size
        x = np.empty(n, dtype=np.float64)
        count = np.empty(n, dtype=np.int64)
        hits = np.empty(n, dtype=np.float64)
        m = _kernels.numba_distinct().pool_sorted(kneg, kpos, x.view(np.int64), count, hits)
        if m == n:  # every forecast distinct: nothing was pooled
            return Pooled(x, count, hits)
        return Pooled(x[:m].copy(), count[:m].copy(), hits[:m].copy())

    def order_statistics(self, ranks: np.ndarray) -> np.ndarray:
        """The scores (float64) at the sorted 0-based ``ranks``, as ``np.partition``."""
        if not self._fast:
            return np.partition(self.scores, ranks)[ranks].astype(np.float64)
        if self._slabbed and self._classes is None:
            return np.asarray(self._laid_out().order_statistics(ranks))
        kneg, kpos, _ = self._sorted()
        return np.asarray(_kernels.numba_ranking().select(kneg, kpos, ranks))


def order_statistics(values: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """The checked finite ``values`` (float64) at the sorted 0-based ``ranks``, as
    ``np.partition(values, ranks)[ranks]``: on the numba path by two counting passes over
    their integer keys and one that gathers only the buckets holding a requested rank (one
    selection pass, whatever the number of ranks)."""
    if not _kernels.use_numba(values.shape[0]):
        return np.partition(values, ranks)[ranks].astype(np.float64)
    return np.asarray(_kernels.numba_slabs().order_statistics(values, ranks))
