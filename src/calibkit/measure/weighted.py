"""The pieces only the weighted paths of the binned measures need: weighted quantile edges
(equal-weight bins) and the weighted sums that :class:`~calibkit.BinStats` does not hold."""

from __future__ import annotations

import numpy as np

from .bins import Edges, interpolate_order_statistics, quantile_edges, quantile_levels

__all__ = ["weighted_quantile_edges", "weighted_quantiles"]


def weighted_quantiles(conf: np.ndarray, weight: np.ndarray, n_bins: int) -> np.ndarray:
    """Inner equal-weight edges: the ``k / n_bins`` quantiles of ``conf`` with each value
    counted ``weight`` times.

    numpy's default (linear) quantile on the cumulative weight: with W the total weight, the
    quantile at level q lies at the virtual rank (W - 1) q between the order statistics of
    ranks floor and floor + 1, where the order statistic of rank r is the smallest value whose
    cumulative weight exceeds r. With integer weights this is ``np.quantile`` of the rows
    repeated ``weight`` times (a zero weight leaves its row out); fractional weights use the
    same formula on their cumulative sum.

    Examples
    --------
    >>> import numpy as np
    >>> conf, w = np.array([0.1, 0.2, 0.3, 0.4]), np.array([1.0, 0.0, 2.0, 1.0])
    >>> weighted_quantiles(conf, w, 2).tolist() == np.quantile([0.1, 0.3, 0.3, 0.4], [0.5]).tolist()
    True
    """
    order = np.argsort(conf, kind="stable")
    values = conf[order]
    cum = np.cumsum(weight[order])
    top = max(float(cum[-1]) - 1.0, 0.0)
    virtual = top * quantile_levels(n_bins)
    below = np.floor(virtual)
    gamma = virtual - below
    upper = np.minimum(below + 1.0, top)
    last = values.size - 1
    lo = values[np.minimum(np.searchsorted(cum, below, side="right"), last)]
    hi = values[np.minimum(np.searchsorted(cum, upper, side="right"), last)]
    return np.asarray(interpolate_order_statistics(lo, hi, gamma))


def weighted_quantile_edges(
    conf: np.ndarray,
    weight: np.ndarray,
    *,
    n_bins: int,
    closed: str,
    where: str,
    warn: bool = True,
) -> Edges:
    """Equal-weight bin edges of checked confidences and weights (ties collapsed and noted as
    for unweighted quantile edges)."""
    inner = weighted_quantiles(conf, weight, n_bins)
    return quantile_edges(inner, n_bins=n_bins, closed=closed, where=where, stacklevel=5, warn=warn)
