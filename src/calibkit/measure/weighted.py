"""The pieces only the weighted paths need: weighted quantiles (those of the rows repeated by
their weights), the order statistics behind them, and equal-weight bin edges."""

from __future__ import annotations

from typing import Any

import numpy as np

from .bins import Edges, interpolate_order_statistics, quantile_edges, quantile_levels

__all__ = [
    "weighted_order_statistics",
    "weighted_quantile_edges",
    "weighted_quantiles",
    "weighted_ranks",
]


def weighted_ranks(total: float, levels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`order_statistic_ranks` of weighted values of total weight ``total`` at quantile
    ``levels``: the (real) ranks ``(total - 1) q`` lies between, and the interpolation weight.
    With integer weights these are the ranks in the data with each row repeated w times."""
    virtual = (total - 1.0) * np.asarray(levels, dtype=np.float64)
    below = np.floor(virtual)
    return below, below + 1.0, virtual - below


def weighted_order_statistics(
    values: np.ndarray, weights: np.ndarray, ranks: np.ndarray
) -> np.ndarray:
    """The value at each (real) rank of weighted data: the smallest value whose cumulative
    weight (values in order, rows of weight 0 left out) exceeds the rank; the largest value for
    a rank past the total weight."""
    order = np.argsort(values, kind="stable")
    kept = weights[order] > 0
    x, cum = values[order][kept], np.cumsum(weights[order][kept])
    at = np.searchsorted(cum, np.asarray(ranks, dtype=np.float64), side="right")
    return x[np.minimum(at, x.size - 1)]


def weighted_quantiles(values: Any, weights: Any, levels: Any) -> np.ndarray:
    """Quantiles of weighted values: those of the data with each row repeated by its weight.

    With integer weights this is ``np.quantile(np.repeat(values, weights), levels)`` (numpy's
    default, linear, method), without repeating anything; other weights extend it by
    cumulative weight: with total weight W, the level q lies at rank (W - 1) q, between the
    values at ranks floor and floor + 1 (the value at rank r: the first, in order, whose
    cumulative weight exceeds r), and is interpolated between them as numpy does. Rows of
    weight 0 take no part. The engines that bin a weight column (DuckDB, Spark) use the same
    definition for quantile edges.

    Examples
    --------
    >>> weighted_quantiles([0.1, 0.4, 0.8], [1, 2, 1], [0.25, 0.5]).tolist()
    [0.325, 0.4]
    >>> np.quantile([0.1, 0.4, 0.4, 0.8], [0.25, 0.5]).tolist()
    [0.325, 0.4]
    """
    x = np.asarray(values, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    lo, hi, gamma = weighted_ranks(float(w.sum()), np.asarray(levels, dtype=np.float64))
    return interpolate_order_statistics(
        weighted_order_statistics(x, w, lo), weighted_order_statistics(x, w, hi), gamma
    )


def weighted_quantile_edges(
    conf: np.ndarray,
    weight: np.ndarray,
    *,
    n_bins: int,
    closed: str,
    where: str,
    warn: bool = True,
) -> Edges:
    """Equal-weight bin edges of checked confidences and weights: the inner edges are
    :func:`~calibkit.measure.bins.weighted_quantiles` at the ``k / n_bins`` levels (with integer
    weights, ``np.quantile`` of the rows repeated), ties collapsed and noted as for unweighted
    quantile edges.

    Examples
    --------
    >>> import numpy as np
    >>> conf, w = np.array([0.1, 0.2, 0.3, 0.4]), np.array([1.0, 0.0, 2.0, 1.0])
    >>> e = weighted_quantile_edges(conf, w, n_bins=2, closed="right", where="x")
    >>> e.values.tolist() == [0.0, *np.quantile([0.1, 0.3, 0.3, 0.4], [0.5]), 1.0]
    True
    """
    inner = weighted_quantiles(conf, weight, quantile_levels(n_bins))
    return quantile_edges(inner, n_bins=n_bins, closed=closed, where=where, stacklevel=5, warn=warn)
