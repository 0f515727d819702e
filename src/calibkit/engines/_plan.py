"""Which bins an audit needs, and their edges from order statistics an engine supplies.

An audit bins three things: the reliability table (``Binning``), the Hosmer-Lemeshow deciles of
the event's confidence, and, for top-label input, each class's probability (class-wise ECE, with
the table's strategy as in :func:`calibkit.audit`). Quantile edges need order statistics of a
column ("c" for the event's confidence, "p0", "p1", ... for the classes); an engine answers
one request for all of them at once, and the edges are interpolated exactly as ``np.quantile``
does, so every engine bins identically.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _validate as v
from ..measure.bins import (
    CLOSED,
    STRATEGIES,
    Edges,
    interpolate_order_statistics,
    order_statistic_ranks,
    quantile_edges,
    quantile_levels,
    resolve_edges,
)
from ..measure.summary import HL_GROUPS
from ..measure.weighted import weighted_ranks

#: Requests of order statistics: column -> sorted unique 0-based ranks; answered with the values.
OrderStatistics = Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]


@dataclass(frozen=True)
class Binning:
    """The table's binning, as :func:`calibkit.audit` takes it."""

    n_bins: int = 15
    strategy: str = "uniform"
    closed: str = "right"
    edges: np.ndarray | None = None

    @classmethod
    def checked(cls, *, n_bins: int, strategy: str, closed: str, edges: Any, where: str) -> Binning:
        n_bins = v.n_bins(n_bins, where=where)
        strategy = v.choice(strategy, name="strategy", allowed=STRATEGIES, where=where)
        closed = v.choice(closed, name="closed", allowed=CLOSED, where=where)
        return cls(n_bins, strategy, closed, None if edges is None else v.edges(edges, where=where))


@dataclass(frozen=True)
class Need:
    """One set of bins: over ``column``, ``closed`` on that side, ``n_bins`` quantile groups
    (``fixed`` instead when the edges need no data)."""

    column: str
    closed: str
    n_bins: int
    fixed: Edges | None = None


@dataclass(frozen=True)
class EdgePlan:
    table: Edges
    deciles: Edges
    classwise: tuple[Edges, ...]


def needs(binning: Binning, *, kind: str, n_classes: int, where: str) -> dict[str, Need]:
    """The sets of bins of an audit, by name: "table", "deciles", "class0", ..."""
    out = {"table": table_need(binning, where=where)}
    out["deciles"] = Need("c", "right", HL_GROUPS)
    if kind == "top-label":
        for k in range(n_classes):
            out[f"class{k}"] = _need(f"p{k}", binning, where=where, explicit=False)
    return out


def table_need(binning: Binning, *, where: str) -> Need:
    """The reliability table's bins over the event's confidence "c"."""
    return _need("c", binning, where=where, explicit=True)


def _need(column: str, binning: Binning, *, where: str, explicit: bool) -> Need:
    if explicit and binning.edges is not None:
        edges = binning.edges
        return Need(
            column, binning.closed, edges.size - 1, Edges(edges, "explicit", edges.size - 1)
        )
    if binning.strategy == "uniform":
        fixed = resolve_edges(
            None, n_bins=binning.n_bins, strategy="uniform", edges=None, where=where
        )
        return Need(column, binning.closed, binning.n_bins, fixed)
    return Need(column, binning.closed, binning.n_bins)


def plan_edges(
    wanted: dict[str, Need],
    *,
    n: int,
    order_statistics: OrderStatistics,
    where: str,
    total_weight: float | None = None,
) -> dict[str, Edges]:
    """Edges of every set of bins; quantile edges from one request of order statistics.

    With ``total_weight`` (weighted input) the quantiles are weighted
    (:func:`calibkit.measure.weighted.weighted_quantiles`): the request asks for the values at
    real ranks of cumulative weight (float64), which ``order_statistics`` answers so."""

    def ranks_of(n_bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if total_weight is None:
            return order_statistic_ranks(n, n_bins)
        return weighted_ranks(total_weight, quantile_levels(n_bins))

    ranks: dict[str, set[Any]] = {}
    for need in wanted.values():
        if need.fixed is None:
            lo, hi, _ = ranks_of(need.n_bins)
            ranks.setdefault(need.column, set()).update(lo.tolist() + hi.tolist())
    dtype = np.int64 if total_weight is None else np.float64
    request = {col: np.array(sorted(r), dtype=dtype) for col, r in ranks.items()}
    values = order_statistics(request) if request else {}
    out: dict[str, Edges] = {}
    for name, need in wanted.items():
        if need.fixed is not None:
            out[name] = need.fixed
            continue
        lo, hi, gamma = ranks_of(need.n_bins)
        table = dict(zip(request[need.column].tolist(), values[need.column], strict=True))
        inner = interpolate_order_statistics(
            np.array([table[r] for r in lo.tolist()], dtype=np.float64),
            np.array([table[r] for r in hi.tolist()], dtype=np.float64),
            gamma,
        )
        out[name] = quantile_edges(  # the deciles' ties are noted by the test, not warned of
            inner, n_bins=need.n_bins, closed=need.closed, where=where, warn=name != "deciles"
        )
    return out


def classwise_names(n_classes: int) -> list[str]:
    return [f"class{k}" for k in range(n_classes)]
