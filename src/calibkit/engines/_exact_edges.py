"""Exact quantile edges of a stream read twice: the first pass's fine bins locate the cells
that hold the order statistics, and a second pass keeps only the rows of those cells, whose
values (pooled by value, weights summed) split the cells at the exact edges."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Protocol

import numpy as np

from .. import _kernels
from ..forecasts import Prepared
from ..measure.bins import (
    BinStats,
    Edges,
    interpolate_order_statistics,
    order_statistic_ranks,
    quantile_edges,
    quantile_levels,
)
from ..measure.weighted import weighted_ranks
from ._chunks import Fingerprint
from ._plan import Need
from .memory import columns_of

__all__ = ["Rereadable", "exact_stats"]

Progress = Callable[[str, int, int], None] | None


class Rereadable(Protocol):
    """An input that can be read again (:class:`calibkit.engines.stream.Reader`)."""

    @property
    def read(self) -> Callable[[], Iterator[Prepared]]: ...

    @property
    def rows(self) -> int | None: ...


def exact_stats(
    reader: Rereadable,
    quantile: dict[str, Need],
    fine: dict[str, BinStats],
    first: Fingerprint,
    where: str,
    progress: Progress,
) -> dict[str, tuple[BinStats, Edges]]:
    """Exact quantile edges and their statistics from a second pass over the cells that hold
    the order statistics; refused when the second pass reads other rows than the first.
    Weighted, the order statistics are those of cumulative weight
    (:func:`calibkit.measure.weighted.weighted_order_statistics`) and the cells are located by
    the fine bins' weights."""
    targets: dict[str, np.ndarray] = {}
    for name, need in quantile.items():
        stats = fine[name]
        if stats.weighted:
            lo, hi, _ = weighted_ranks(stats.total_mass, quantile_levels(need.n_bins))
            targets[name] = _weighted_cells(stats.mass, np.union1d(lo, hi))
            continue
        lo, hi, _ = order_statistic_ranks(stats.n, need.n_bins)
        cumulative = np.cumsum(stats.count)
        ranks = np.union1d(lo, hi)
        targets[name] = np.unique(np.searchsorted(cumulative, ranks, side="right"))
    kept: dict[str, list[tuple[np.ndarray, ...]]] = {name: [] for name in quantile}
    rows = 0
    seen = Fingerprint()
    for f in reader.read():
        seen.add(f)
        seen.check(first, where, False, "its second pass")
        cols = columns_of(f)
        for name, need in quantile.items():
            values, outcome = cols[need.column]
            cells = _kernels.bin_index(
                np.asarray(values, dtype=np.float64), fine[name].edges, need.closed
            )
            mask = np.isin(cells, targets[name])
            w = None if f.weight is None else f.weight[mask]
            kept[name].append(_compress(values[mask], outcome[mask], w))
        rows += f.conf.size
        if progress is not None:
            progress("pass 2 of 2", rows, reader.rows or 0)
    seen.check(first, where, True, "its second pass")
    out = {}
    for name, need in quantile.items():
        if fine[name].weighted:
            values, outcome, counts, w, w_sq = _merge_weighted(kept[name])
            out[name] = _split_weighted(
                fine[name], targets[name], values, outcome, counts, (w, w_sq), need, where
            )
            continue
        values, outcome, counts = _merge([(p, c) for p, c, *_ in kept[name]])
        out[name] = _split(fine[name], targets[name], values, outcome, counts, need, where)
    return out


def _weighted_cells(mass: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    """The fine cells holding the weighted order statistics at real ``ranks``: the first cell
    whose cumulative weight exceeds each rank (a rank below 0 is that of the first row of
    positive weight; one past the total, rounding apart, that of the last)."""
    cumulative = np.cumsum(mass)
    at = np.searchsorted(cumulative, np.maximum(ranks, 0.0), side="right")
    return np.unique(np.minimum(at, int(np.flatnonzero(mass > 0)[-1])))


def _compress(
    values: np.ndarray, outcome: np.ndarray, weight: np.ndarray | None = None
) -> tuple[np.ndarray, ...]:
    """Distinct (value, outcome) pairs of a chunk's kept forecasts, with their counts (and
    the sums of their weights and squared weights)."""
    key = np.stack([np.asarray(values, dtype=np.float64), np.asarray(outcome, dtype=np.float64)])
    if weight is None:
        pairs, counts = np.unique(key, axis=1, return_counts=True)
        return pairs, counts
    pairs, inverse, counts = np.unique(key, axis=1, return_inverse=True, return_counts=True)
    inverse = inverse.ravel()
    size = pairs.shape[1]
    return (
        pairs,
        counts,
        np.bincount(inverse, weights=weight, minlength=size),
        np.bincount(inverse, weights=weight * weight, minlength=size),
    )


def _merge(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, ...]:
    pairs = np.concatenate([p for p, _ in parts], axis=1)
    counts = np.concatenate([c for _, c in parts])
    merged, inverse = np.unique(pairs, axis=1, return_inverse=True)
    total = np.bincount(inverse.ravel(), weights=counts, minlength=merged.shape[1])
    return merged[0], merged[1], total.astype(np.int64)


def _merge_weighted(parts: list[tuple[np.ndarray, ...]]) -> tuple[np.ndarray, ...]:
    """:func:`_merge` of weighted parts: value, outcome, count, weight, squared weight."""
    pairs = np.concatenate([p[0] for p in parts], axis=1)
    merged, inverse = np.unique(pairs, axis=1, return_inverse=True)
    inverse = inverse.ravel()
    size = merged.shape[1]

    def summed(k: int) -> np.ndarray:
        return np.bincount(inverse, weights=np.concatenate([p[k] for p in parts]), minlength=size)

    return merged[0], merged[1], summed(1).astype(np.int64), summed(2), summed(3)


def _split(
    fine: BinStats,
    targets: np.ndarray,
    values: np.ndarray,
    outcome: np.ndarray,
    counts: np.ndarray,
    need: Need,
    where: str,
) -> tuple[BinStats, Edges]:
    """Exact edges from the order statistics in the target cells, and the statistics over
    them: whole fine cells where no edge falls, the target cells' forecasts split exactly."""
    n = fine.n
    lo, hi, gamma = order_statistic_ranks(n, need.n_bins)
    cells = _kernels.bin_index(values, fine.edges, need.closed)
    order = np.lexsort((values, cells))
    values, outcome, counts, cells = values[order], outcome[order], counts[order], cells[order]
    before = np.concatenate(([0], np.cumsum(fine.count)))  # forecasts below each cell
    preceding = np.cumsum(counts) - counts  # kept forecasts before each value, all cells
    first = np.searchsorted(cells, cells, side="left")  # where each value's cell starts
    position = before[cells] + preceding - preceding[first]  # rank of each value's first copy
    # the value at rank r is the last kept value whose first rank is <= r
    lower = values[np.searchsorted(position, lo, side="right") - 1]
    upper = values[np.searchsorted(position, hi, side="right") - 1]
    inner = interpolate_order_statistics(lower, upper, gamma)
    made = quantile_edges(inner, n_bins=need.n_bins, closed=need.closed, where=where, stacklevel=6)
    m = made.values.size - 1
    # whole cells: each goes to the bin of a point inside it (its closed end)
    closed_end = fine.edges[1:] if need.closed == "right" else fine.edges[:-1]
    whole = np.setdiff1d(np.flatnonzero(fine.count), targets)
    bins = _kernels.bin_index(closed_end[whole], made.values, need.closed)
    count = np.bincount(bins, weights=fine.count[whole], minlength=m).astype(np.int64)
    # float64 even when no whole cell is left (bincount of nothing gives integer zeros)
    sums = [
        np.bincount(bins, weights=getattr(fine, f)[whole], minlength=m).astype(np.float64)
        for f in _kernels.SUM_FIELDS
    ]
    # the collected cells, forecast by forecast (each distinct value weighted by its count)
    idx = _kernels.bin_index(values, made.values, need.closed)
    count += np.bincount(idx, weights=counts, minlength=m).astype(np.int64)
    for total, term in zip(sums, _kernels.sum_terms(values, outcome), strict=True):
        total += np.bincount(idx, weights=term * counts, minlength=m)
    return BinStats(made.values, need.closed, count, *sums), made


def _split_weighted(
    fine: BinStats,
    targets: np.ndarray,
    values: np.ndarray,
    outcome: np.ndarray,
    counts: np.ndarray,
    weights: tuple[np.ndarray, np.ndarray],
    need: Need,
    where: str,
) -> tuple[BinStats, Edges]:
    """:func:`_split` of weighted statistics: the edges from the weighted order statistics
    (the value at real rank r: the first, in order, whose cumulative weight exceeds r, rows of
    weight 0 left out, as in :func:`calibkit.measure.weighted.weighted_order_statistics`), and
    the weighted sums, weights and squared weights over them."""
    w, w_sq = weights
    lo, hi, gamma = weighted_ranks(fine.total_mass, quantile_levels(need.n_bins))
    cells = _kernels.bin_index(values, fine.edges, need.closed)
    order = np.lexsort((values, cells))
    values, outcome, counts, cells = values[order], outcome[order], counts[order], cells[order]
    w, w_sq = w[order], w_sq[order]
    before = np.concatenate(([0.0], np.cumsum(fine.mass)))  # weight below each cell
    positive = w > 0
    x, at_cell, wp = values[positive], cells[positive], w[positive]
    cumulative = np.cumsum(wp)
    first = np.searchsorted(at_cell, at_cell, side="left")  # where each value's cell starts
    end = before[at_cell] + cumulative - (cumulative[first] - wp[first])  # weight up to it

    def at(ranks: np.ndarray) -> np.ndarray:
        return x[np.minimum(np.searchsorted(end, ranks, side="right"), x.size - 1)]

    inner = interpolate_order_statistics(at(lo), at(hi), gamma)
    made = quantile_edges(inner, n_bins=need.n_bins, closed=need.closed, where=where, stacklevel=6)
    m = made.values.size - 1
    closed_end = fine.edges[1:] if need.closed == "right" else fine.edges[:-1]
    whole = np.setdiff1d(np.flatnonzero(fine.count), targets)
    bins = _kernels.bin_index(closed_end[whole], made.values, need.closed)

    def spread(per_cell: np.ndarray) -> np.ndarray:
        return np.bincount(bins, weights=per_cell[whole], minlength=m).astype(np.float64)

    count = spread(fine.count).astype(np.int64)
    sums = [spread(getattr(fine, f)) for f in _kernels.SUM_FIELDS]
    mass, mass_sq = spread(fine.mass), spread(fine.mass_sq)
    idx = _kernels.bin_index(values, made.values, need.closed)
    count += np.bincount(idx, weights=counts, minlength=m).astype(np.int64)
    for total, term in zip(sums, _kernels.sum_terms(values, outcome), strict=True):
        total += np.bincount(idx, weights=term * w, minlength=m)
    mass += np.bincount(idx, weights=w, minlength=m)
    mass_sq += np.bincount(idx, weights=w_sq, minlength=m)
    return BinStats.of_sums(
        made.values, need.closed, count, sums, weight=mass, weight_sq=mass_sq
    ), made


# ----------------------------------------------------------------------------- temperature
