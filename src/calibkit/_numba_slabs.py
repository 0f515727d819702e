"""The two classes' order a slab at a time: what an audit asks of the order of many scores
(the AUC's pair counts, the bins' sums, order statistics) without holding all of their keys
(optional; importing this module needs numba).

The scores are laid out in coarse buckets once (``_numba_ranking.layout``: two counting
passes). An order statistic then needs only the buckets holding its rank, gathered in one pass
and each sorted (:func:`order_statistics`). The pair counts and the bins' sums are additive
over ranges of whole buckets: each range (a slab, about N / ``slabs`` values) is placed and
sorted in the same two buffers by ``_numba_ranking.fill`` (one pass over the rows that keeps
that slab's keys), counted, summed and overwritten by the next. The first slab is placed by
the pass that gathers the order statistics' buckets, so they cost no pass of their own. The
negatives of lower slabs are all below a slab's positives, the one term the pair counts carry
from slab to slab. Held memory: the keys of the largest slab, not of every score (all of them
when one coarse bucket holds most scores, as for all-equal ones).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._numba_ranking import (
    _COARSE_MIN,
    _FLIP,
    _HALF,
    _KEY_MAX,
    _SORTED,
    COARSE,
    _prepared,
    _ranges,
    bin_sums,
    fill,
    layout,
    pairs_of,
    select,
)


class Gather(NamedTuple):
    """The coarse buckets to gather for order statistics: each rank's bucket (``holder``),
    the buckets gathered (``wanted``) and each bucket's place among them (``slot``, -1: not
    gathered), each row block's first positions in ``out`` and where each gathered bucket
    starts there (``offsets``)."""

    holder: np.ndarray
    wanted: np.ndarray
    slot: np.ndarray
    at: np.ndarray
    offsets: np.ndarray
    out: np.ndarray


def gather_plan(lay, ranks, skip=0):
    """The :class:`Gather` of the buckets holding the 0-based ``ranks`` of the merged classes,
    those below bucket ``skip`` left out (they are held in order already)."""
    per_block = np.stack([c.sum(axis=0) for c in lay.counts])  # (blocks, n_coarse)
    holder = np.searchsorted(np.cumsum(per_block.sum(axis=0)), ranks, side="right")
    wanted = np.unique(holder[holder >= skip])
    slot = np.full(per_block.shape[1], -1, dtype=np.int64)
    slot[wanted] = np.arange(wanted.size)
    sizes = per_block[:, wanted]
    offsets = np.concatenate(([0], np.cumsum(sizes.sum(axis=0))))
    at = offsets[:-1] + np.cumsum(sizes, axis=0) - sizes  # each block's first positions
    return Gather(holder, wanted, slot, at, offsets, np.empty(int(offsets[-1]), dtype=np.int64))


def gathered_values(lay, g, ranks, values):
    """Into ``values``: the value of each rank whose bucket ``g`` gathered (each such bucket
    sorted once)."""
    starts = np.concatenate(([0], lay.ends[0] + lay.ends[1]))
    for i, b in enumerate(g.wanted.tolist()):
        keys = np.sort(g.out[g.offsets[i] : g.offsets[i + 1]])
        mine = g.holder == b
        values[mine] = _values(keys[ranks[mine] - starts[b]])


def order_statistics(s, ranks):
    """The values (float64) of the sorted 0-based ``ranks`` among checked finite ``s``, as
    ``np.partition(s, ranks)[ranks]``: two counting passes, then one pass that gathers only the
    coarse buckets holding a requested rank, each sorted in cache."""
    s = np.ascontiguousarray(s)
    n = s.shape[0]
    positive = np.zeros(n, dtype=np.uint8)
    return gathered_ranks(s, positive, layout(s, positive, max(_COARSE_MIN, n // COARSE)), ranks)


def gathered_ranks(s, positive, lay, ranks):
    """The values (float64) of the sorted 0-based ``ranks`` among ``s`` (both classes of its
    :class:`Layout`): one pass that gathers only the coarse buckets holding a requested rank,
    each then sorted."""
    ranks = np.asarray(ranks, dtype=np.int64)
    g = gather_plan(lay, ranks)
    none = np.empty(0, dtype=np.int64)
    fill(s, positive, lay, 0, 0, none, none, gather=g)
    values = np.empty(ranks.size)
    gathered_values(lay, g, ranks, values)
    return values


def _values(keys: np.ndarray) -> np.ndarray:
    """The float64 values of keys (vectorised inverse of the key map)."""
    bits = np.where(keys >= 0, keys, keys ^ _FLIP)
    return bits.view(np.float64)


class Slabs:
    """Checked finite scores and their 0/1 classes, laid out in coarse buckets once and put
    in order ``slabs`` ranges of buckets at a time (about N / ``slabs`` values each).

    Examples
    --------
    >>> import numpy as np
    >>> s = np.array([0.1, 0.4, 0.4, 0.8, 0.3, 0.9])
    >>> slabs = Slabs(s, np.array([0, 0, 1, 1, 0, 1], dtype=np.uint8), slabs=2)
    >>> slabs.order_statistics(np.array([0, 5])).tolist()
    [0.1, 0.9]
    >>> pairs, [(count, sums)] = slabs.sweep([(np.array([0.0, 0.5, 1.0]), True)])
    >>> pairs, count.tolist()
    ((17, 3, 3), [4, 2])
    """

    def __init__(self, scores: np.ndarray, positive: np.ndarray, *, slabs: int) -> None:
        self.scores, self.positive = _prepared(scores, positive)
        target = max(_COARSE_MIN, self.scores.shape[0] // _SORTED)
        lay = self.layout = layout(self.scores, self.positive, target)
        self.ranges = _ranges(lay.ends, slabs) if lay.ends.shape[1] else []
        self.sizes = [lay.base(b) - lay.base(a) for a, b in self.ranges]
        self._buffers = tuple(
            np.empty(max((int(z[c]) for z in self.sizes), default=0), dtype=np.int64)
            for c in (0, 1)
        )
        self._held = -1  # the slab in the buffers (-1: none yet)

    def _slab(self, i: int, gather: Gather | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The sorted keys of slab ``i`` (negatives, positives), placed unless held."""
        neg, pos = (buf[: int(self.sizes[i][c])] for c, buf in enumerate(self._buffers))
        if self._held != i:
            a, b = self.ranges[i]
            fill(self.scores, self.positive, self.layout, a, b, neg, pos, gather)
            self._held = i
        return neg, pos

    def order_statistics(self, ranks: np.ndarray) -> np.ndarray:
        """The scores (float64) at the sorted 0-based ``ranks``, as ``np.partition``: the
        first slab is placed in the same pass that gathers the buckets of the other ranks."""
        ranks = np.asarray(ranks, dtype=np.int64)
        if not self.ranges:
            return gathered_ranks(self.scores, self.positive, self.layout, ranks)
        g = gather_plan(self.layout, ranks, self.ranges[0][1])
        self._held = -1
        neg, pos = self._slab(0, g)
        values = np.empty(ranks.size)
        first = g.holder < self.ranges[0][1]
        values[first] = select(neg, pos, ranks[first])
        gathered_values(self.layout, g, ranks, values)
        return values

    def sweep(
        self, bins: list[tuple[np.ndarray, bool]]
    ) -> tuple[tuple[int, int, int], list[tuple[np.ndarray, np.ndarray]] | None]:
        """(2U, n_pos, n_neg) and, per ``(edges, right)`` of ``bins``, the per-bin count and
        sums as ``_numba_ranking.bin_sums`` gives them (None for every bin when a score is
        below 0), slab by slab (the one held first)."""
        lay = self.layout
        ends = lay.ends
        summed = not (ends.shape[1] and lay.kmin[:_HALF].min() != _KEY_MAX)  # none below 0
        order = sorted(range(len(self.ranges)), key=lambda i: i != self._held)
        twice = 0
        totals: list[tuple[np.ndarray, np.ndarray]] = []
        for i in order:
            a, b = self.ranges[i]
            base = lay.base(a)
            neg, pos = self._slab(i)
            # the pairs inside the slab, and every positive of it above the lower negatives
            twice += pairs_of(neg, pos, ends - base[:, None], a, b)[0] + 2 * pos.size * base[0]
            if not summed:
                continue
            for j, (edges, right) in enumerate(bins):
                count, sums = bin_sums(neg, pos, edges, right)
                if j < len(totals):
                    totals[j][0][:] += count
                    totals[j][1][:] += sums
                else:
                    totals.append((count, sums))
        if summed and not self.ranges:
            empty = np.empty(0, dtype=np.int64)
            totals = [bin_sums(empty, empty, edges, right) for edges, right in bins]
        n_neg, n_pos = (int(ends[0, -1]), int(ends[1, -1])) if ends.shape[1] else (0, 0)
        return (int(twice), n_pos, n_neg), totals if summed else None
