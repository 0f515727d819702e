"""The pieces only the weighted paths of the binned measures need: weighted quantile edges
(equal-weight bins) and the weighted sums that :class:`~calibkit.BinStats` does not hold."""

from __future__ import annotations

import numpy as np

from .bins import Edges, quantile_edges, quantile_levels, weighted_quantiles

__all__ = ["weighted_quantile_edges"]


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
