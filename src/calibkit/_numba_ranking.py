"""Exact ranking by buckets of integer keys: the numba kernels behind the AUC's pair counts,
the risk-coverage steps and order statistics (optional; importing this module needs numba).

Every finite float maps to an integer key with the same order: its bits as an int64, the
negative ones with their 63 value bits flipped (-0.0 counts as 0.0). One counting pass over
the leading 16 bits of the keys (with each such bucket's smallest and largest key) shows where
the values lie; from it, coarse buckets are cut, each over its own key range, so that crowded
leading buckets split by further bits and sparse neighbours merge. A second pass counts each
class per coarse bucket and a third places each class's keys in coarse-bucket order (in row
blocks, on threads). The buckets being in key order, sorting a run of whole buckets sorts each
of them: each thread sorts its buckets with numpy's sort (vectorised; it releases the GIL).
``_numba_slabs`` does the same a range of buckets at a time, and gathers only the buckets that
hold an order statistic.

With the two classes' keys in order, the AUC's pairs in different buckets are counted from
prefix sums and those inside one bucket by a merge, as integers; the same order gives the
distinct thresholds of the risk-coverage curve and any order statistic.

The numpy code in ``calibkit._kernels`` (two sorts and a binary search; one argsort) is the
reference these kernels are tested against: they agree exactly, integer for integer.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from ._numba_kernels import BLOCK, block_ranges, map_blocks, n_threads, thread_pool

#: Leading key bits of the first counting pass.
LEAD_BITS = 16
_LEAD = 1 << LEAD_BITS
_HALF = 1 << (LEAD_BITS - 1)
_DROP = 64 - LEAD_BITS
#: About this many coarse buckets for an order statistic (``_numba_slabs``: one gathered).
COARSE = 2048
#: Fewest values a coarse bucket aims at (small inputs: few buckets).
_COARSE_MIN = 4096
#: About this many coarse buckets when whole classes are sorted (:func:`sorted_classes`):
#: enough to share the sorting among the threads, few enough that the scatter's writes stream.
_SORTED = 256
#: Values converted to float64 at a time (a block in L1 cache).
_CHUNK = 1024
_FLIP = np.int64(0x7FFFFFFFFFFFFFFF)
_KEY_MAX = np.int64(0x7FFFFFFFFFFFFFFF)


@numba.njit(cache=True, nogil=True)
def _fill_keys(s, start, n, buf, bits):  # pragma: no cover - compiled
    """Keys of s[start:start + n] into ``bits`` (the int64 view of the float64 ``buf``)."""
    for j in range(n):
        buf[j] = np.float64(s[start + j]) + 0.0  # -0.0 + 0.0 is 0.0: equal values, one key
    for j in range(n):
        b = bits[j]
        if b < 0:
            bits[j] = b ^ _FLIP


@numba.njit(cache=True, nogil=True)
def _bits(k):  # pragma: no cover - compiled
    """The bits (as an int64) of the float64 whose key is k."""
    return k if k >= 0 else k ^ _FLIP


@numba.njit(cache=True, nogil=True)
def _lead_counts(s, lo, hi):  # pragma: no cover - compiled
    """Rows lo..hi: count, smallest and largest key per leading-bits bucket."""
    count = np.zeros(_LEAD, dtype=np.int64)
    kmin = np.empty(_LEAD, dtype=np.int64)
    kmax = np.empty(_LEAD, dtype=np.int64)
    for h in range(_LEAD):
        kmin[h] = _KEY_MAX
        kmax[h] = -_KEY_MAX - 1
    buf = np.empty(_CHUNK)
    bits = buf.view(np.int64)
    for start in range(lo, hi, _CHUNK):
        n = min(_CHUNK, hi - start)
        _fill_keys(s, start, n, buf, bits)
        for j in range(n):
            k = bits[j]
            h = (k >> _DROP) + _HALF
            count[h] += 1
            if k < kmin[h]:
                kmin[h] = k
            if k > kmax[h]:
                kmax[h] = k
    return count, kmin, kmax


@numba.njit(cache=True, nogil=True)
def _bit_length(v):  # pragma: no cover - compiled
    n = 0
    while v > 0:
        v >>= 1
        n += 1
    return n


@numba.njit(cache=True, nogil=True)
def _plan(count, kmin, kmax, target):  # pragma: no cover - compiled
    """Coarse buckets: the keys of leading bucket h go to ``first[h] + ((k - kmin[h]) >>
    shift[h])``. A leading bucket of more than ``target`` values splits into sub-ranges of
    about ``target``; consecutive smaller ones (of one sign) share one bucket. Returns first,
    shift and the number of coarse buckets."""
    first = np.zeros(_LEAD, dtype=np.int64)
    shift = np.zeros(_LEAD, dtype=np.int64)
    total = 0
    filled = target  # values in the open shared bucket (none open yet)
    open_negative = False
    for h in range(_LEAD):
        c = count[h]
        if c == 0:
            continue
        if c <= target:
            # a new shared bucket when the open one is full or holds keys of the other sign
            # (a bucket's key span must fit an int64)
            if filled + c > target or (h >= _HALF and open_negative):
                total += 1
                filled = 0
                open_negative = h < _HALF
            first[h] = total - 1
            shift[h] = 63  # every key of h into the one bucket: k - kmin[h] < 2**48
            filled += c
            continue
        span = kmax[h] - kmin[h]
        width = _bit_length(span)
        sh = max(0, width - _bit_length((c - 1) // target))
        first[h] = total
        shift[h] = sh
        total += (span >> sh) + 1
        filled = target  # close the shared bucket
    return first, shift, total


@numba.njit(cache=True, nogil=True)
def _coarse_counts(s, positive, kmin, first, shift, n_coarse, lo, hi):  # pragma: no cover
    """Rows lo..hi: (2, n_coarse) counts of negatives and positives per coarse bucket."""
    count = np.zeros((2, n_coarse), dtype=np.int64)
    buf = np.empty(_CHUNK)
    bits = buf.view(np.int64)
    for start in range(lo, hi, _CHUNK):
        n = min(_CHUNK, hi - start)
        _fill_keys(s, start, n, buf, bits)
        for j in range(n):
            k = bits[j]
            h = (k >> _DROP) + _HALF
            b = first[h] + ((k - kmin[h]) >> shift[h])
            count[1 if positive[start + j] else 0, b] += 1
    return count


@numba.njit(cache=True, nogil=True)
def _scatter(
    s, positive, kmin, first, shift, at, kneg, kpos, b_lo, b_hi, slot, got, out, lo, hi
):  # pragma: no cover
    """Rows lo..hi: each key of coarse buckets b_lo..b_hi to its class's next slot of its
    bucket (``at[c, b]``, this block's own slots); each key of another bucket with
    ``slot[b] >= 0`` to ``out`` at this block's next position ``got[slot[b]]``."""
    buf = np.empty(_CHUNK)
    bits = buf.view(np.int64)
    for start in range(lo, hi, _CHUNK):
        n = min(_CHUNK, hi - start)
        _fill_keys(s, start, n, buf, bits)
        for j in range(n):
            k = bits[j]
            h = (k >> _DROP) + _HALF
            b = first[h] + ((k - kmin[h]) >> shift[h])
            if b < b_lo or b >= b_hi:
                g = slot[b]
                if g >= 0:
                    out[got[g]] = k
                    got[g] += 1
                continue
            if positive[start + j]:
                kpos[at[1, b]] = k
                at[1, b] += 1
            else:
                kneg[at[0, b]] = k
                at[0, b] += 1


@numba.njit(cache=True, nogil=True)
def _pairs(kneg, kpos, ends, lo, hi):  # pragma: no cover - compiled
    """2U of the positives of coarse buckets lo..hi: twice the negatives below each and once
    those equal to it (the negatives of lower buckets are all below)."""
    twice = 0
    for b in range(lo, hi):
        ps = ends[1, b - 1] if b > 0 else 0
        ns = ends[0, b - 1] if b > 0 else 0
        pe = ends[1, b]
        ne = ends[0, b]
        if pe == ps:
            continue
        twice += 2 * (pe - ps) * ns
        below = ns
        upto = ns
        for i in range(ps, pe):
            k = kpos[i]
            while below < ne and kneg[below] < k:
                below += 1
            if upto < below:
                upto = below
            while upto < ne and kneg[upto] <= k:
                upto += 1
            twice += 2 * (below - ns) + (upto - below)
    return twice


@numba.njit(cache=True, nogil=True)
def next_step(kneg, kpos, i, j):  # pragma: no cover - compiled
    """One step of the merge of the sorted classes from the top, from positions ``i`` (of the
    positives) and ``j`` (of the negatives), at least one of them >= 0: the largest key left,
    the positions after it, and how many values and how many negatives hold it."""
    k = kpos[i] if j < 0 or (i >= 0 and kpos[i] >= kneg[j]) else kneg[j]
    n = 0
    negatives = 0
    while i >= 0 and kpos[i] == k:
        n += 1
        i -= 1
    while j >= 0 and kneg[j] == k:
        n += 1
        negatives += 1
        j -= 1
    return k, i, j, n, negatives


@numba.njit(cache=True, nogil=True)
def _steps(kneg, kpos, threshold, acted, wrong):  # pragma: no cover - compiled
    """Merge the sorted classes from the top: each distinct value (into the int64 view
    ``threshold`` of a float64 array) with how many values are at least it (``acted``) and how
    many of those are negatives (``wrong``). Returns the count."""
    steps = 0
    n_acted = 0
    n_wrong = 0
    i = kpos.shape[0] - 1
    j = kneg.shape[0] - 1
    while i >= 0 or j >= 0:
        k, i, j, n, negatives = next_step(kneg, kpos, i, j)
        n_acted += n
        n_wrong += negatives
        threshold[steps] = _bits(k)
        acted[steps] = n_acted
        wrong[steps] = n_wrong
        steps += 1
    return steps


@numba.njit(cache=True, nogil=True)
def _select(kneg, kpos, ranks, out):  # pragma: no cover - compiled
    """The values of the 0-based ``ranks`` of the merged classes (into the int64 view ``out``
    of a float64 array): for each, a bisection for how many of the rank + 1 smallest are
    positives."""
    n_pos = kpos.shape[0]
    n_neg = kneg.shape[0]
    for t in range(ranks.shape[0]):
        r = ranks[t]
        lo = max(0, r + 1 - n_neg)
        hi = min(r + 1, n_pos)
        while lo < hi:  # the first i with kpos[i] >= kneg[r - i]
            mid = (lo + hi) >> 1
            if kpos[mid] < kneg[r - mid]:
                lo = mid + 1
            else:
                hi = mid
        j = r + 1 - lo
        if lo == 0:
            k = kneg[j - 1]
        elif j == 0:
            k = kpos[lo - 1]
        else:
            k = max(kpos[lo - 1], kneg[j - 1])
        out[t] = _bits(k)


# ----------------------------------------------------------------------------- drivers


def _ranges(ends: np.ndarray, parts: int, lo: int = 0, hi: int = -1) -> list[tuple[int, int]]:
    """Ranges of the coarse buckets lo..hi (all of them by default) holding about equal numbers
    of values."""
    hi = ends.shape[1] if hi < 0 else hi
    if parts <= 1 or hi - lo < 2:
        return [(lo, hi)]
    total = ends[0, lo:hi] + ends[1, lo:hi]
    if lo > 0:
        total = total - (ends[0, lo - 1] + ends[1, lo - 1])
    cuts = lo + np.searchsorted(total, np.linspace(0, total[-1], parts + 1)[1:-1])
    edges = [lo, *sorted({int(c) for c in cuts}), hi]
    return [(a, b) for a, b in zip(edges[:-1], edges[1:], strict=False) if b > a]


class Layout(NamedTuple):
    """Where the keys of checked finite scores go: the coarse buckets' plan (``kmin``, ``first``,
    ``shift``: see :func:`_plan`), each row block's (2, n_coarse) counts of negatives and
    positives, and the (2, n_coarse) end of each bucket in each class's order."""

    kmin: np.ndarray
    first: np.ndarray
    shift: np.ndarray
    counts: list[np.ndarray]
    ends: np.ndarray

    def base(self, lo: int) -> np.ndarray:
        """How many of each class lie in the buckets below ``lo``."""
        return self.ends[:, lo - 1].copy() if lo > 0 else np.zeros(2, dtype=np.int64)


def _prepared(s, positive):
    s = np.ascontiguousarray(s)
    positive = np.ascontiguousarray(positive)
    return s, positive.view(np.uint8) if positive.dtype == np.bool_ else positive


def layout(s, positive, target):
    """The :class:`Layout` of coarse buckets of about ``target`` values: the leading-bits
    count, the plan and the class counts (two passes over the rows)."""
    n = s.shape[0]
    parts = map_blocks(_lead_counts, n, s)
    count = np.sum([p[0] for p in parts], axis=0)
    kmin = np.min([p[1] for p in parts], axis=0)
    kmax = np.max([p[2] for p in parts], axis=0)
    first, shift, n_coarse = _plan(count, kmin, kmax, target)
    counts = map_blocks(_coarse_counts, n, s, positive, kmin, first, shift, n_coarse)
    ends = np.cumsum(np.sum(counts, axis=0), axis=1)  # (2, n_coarse): end of each segment
    return Layout(kmin, first, shift, counts, ends)


def fill(s, positive, lay, lo, hi, kneg, kpos, gather=None):
    """Each class's keys of the coarse buckets lo..hi, sorted, into ``kneg`` and ``kpos`` (of
    exactly those buckets' sizes): one pass over the rows (in blocks, on threads) that places
    each key in its bucket (and the keys of the buckets a ``_numba_slabs.Gather`` asks for in
    its ``out``), then each bucket sorted."""
    n = s.shape[0]
    base = lay.base(lo)
    # each block's first slots: the bucket's start plus what earlier blocks put there
    at = lay.ends - np.sum(lay.counts, axis=0) - base[:, None]
    starts = []
    for c in lay.counts:
        starts.append(at.copy())
        at += c
    blocks = block_ranges(n, BLOCK)
    if gather is None:  # no bucket gathered
        none = np.empty(0, dtype=np.int64)
        asked = (
            np.full(lay.ends.shape[1], -1, dtype=np.int64),
            np.zeros((len(blocks), 0), dtype=np.int64),
            none,
        )
    else:
        asked = (gather.slot, gather.at, gather.out)
    plan = (lay.kmin, lay.first, lay.shift)
    if len(blocks) == 1:
        _scatter(
            s,
            positive,
            *plan,
            starts[0],
            kneg,
            kpos,
            lo,
            hi,
            asked[0],
            asked[1][0].copy(),
            asked[2],
            0,
            n,
        )
    else:
        list(
            thread_pool().map(
                lambda i: _scatter(
                    s,
                    positive,
                    *plan,
                    starts[i],
                    kneg,
                    kpos,
                    lo,
                    hi,
                    asked[0],
                    asked[1][i].copy(),
                    asked[2],
                    *blocks[i],
                ),
                range(len(blocks)),
            )
        )
    # the buckets are in key order: sorting each of them sorts the class (bucket by bucket,
    # cache-sized sorts being cheaper per value than one long one; each thread its range)
    ends = lay.ends - base[:, None]
    _sort_buckets(kneg, kpos, ends, _ranges(lay.ends, n_threads() if n >= BLOCK else 1, lo, hi))


def sorted_classes(s, positive):
    """The keys of checked finite scores ``s`` sorted apart by class (``positive`` holds 0/1
    of any integer or bool dtype): (negatives, positives, the buckets' ends)."""
    s, positive = _prepared(s, positive)
    lay = layout(s, positive, max(_COARSE_MIN, s.shape[0] // _SORTED))
    kneg = np.empty(int(lay.ends[0, -1]) if lay.ends.size else 0, dtype=np.int64)
    kpos = np.empty(int(lay.ends[1, -1]) if lay.ends.size else 0, dtype=np.int64)
    fill(s, positive, lay, 0, lay.ends.shape[1], kneg, kpos)
    return kneg, kpos, lay.ends


def _sort_buckets(kneg, kpos, ends, ranges):
    """Sort each coarse bucket's run of both classes, the buckets of each range on a thread
    (``ends`` counted from the first range's start)."""

    def sort_range(r: tuple[int, int]) -> None:
        for keys, row in ((kneg, ends[0]), (kpos, ends[1])):
            bounds = row[max(r[0] - 1, 0) : r[1]].tolist()
            if r[0] == 0:
                bounds.insert(0, 0)
            for a, b in zip(bounds[:-1], bounds[1:], strict=True):
                if b - a > 1:
                    keys[a:b].sort()

    if len(ranges) == 1:
        sort_range(ranges[0])
    else:
        list(thread_pool().map(sort_range, ranges))


def pair_counts(s, positive):
    """(2U, n_pos, n_neg), as ``measure.ranking.pair_counts_numpy``."""
    return pairs_of(*sorted_classes(s, positive))


def pairs_of(kneg, kpos, ends, lo=0, hi=-1):
    """(2U, n_pos, n_neg) of the sorted classes (of the coarse buckets lo..hi, their keys
    alone in ``kneg`` and ``kpos`` and ``ends`` counted from lo: 2U of those positives
    against the negatives of the same buckets)."""
    hi = ends.shape[1] if hi < 0 else hi
    ranges = _ranges(ends, n_threads() if kneg.size + kpos.size >= BLOCK else 1, lo, hi)
    if len(ranges) == 1:
        twice = _pairs(kneg, kpos, ends, lo, hi)
    else:
        twice = sum(thread_pool().map(lambda r: _pairs(kneg, kpos, ends, r[0], r[1]), ranges))
    return int(twice), int(kpos.size), int(kneg.size)


def steps(s, right):
    """Distinct values in decreasing order, and how many values (and how many not ``right``)
    are at least each, as ``decide.coverage.sorted_steps``."""
    kneg, kpos, _ = sorted_classes(s, right)
    n = s.shape[0]
    threshold = np.empty(n, dtype=np.float64)
    acted = np.empty(n, dtype=np.int64)
    wrong = np.empty(n, dtype=np.int64)
    m = _steps(kneg, kpos, threshold.view(np.int64), acted, wrong)
    return threshold[:m], acted[:m], wrong[:m]


@numba.njit(cache=True, nogil=True, fastmath={"reassoc"})
def _range_sums(values, bounds):  # pragma: no cover - compiled
    """Per range values[bounds[b]:bounds[b + 1]]: the sums of v, v^2 and v(1 - v)(1 - 2v)^2,
    each term as the binning kernel (``_numba_kernels._accumulate``) computes it; the additions
    may be reordered (``reassoc``: vectorised, five times faster), which only rounds
    differently."""
    m = bounds.shape[0] - 1
    acc = np.zeros((m, 3))
    for b in range(m):
        s1 = 0.0
        s2 = 0.0
        s3 = 0.0
        for i in range(bounds[b], bounds[b + 1]):
            x = values[i]
            t = 1.0 - 2.0 * x
            s1 += x
            s2 += x * x
            s3 += x * (1.0 - x) * t * t
        acc[b, 0] = s1
        acc[b, 1] = s2
        acc[b, 2] = s3
    return acc


def bin_sums(kneg, kpos, edges, right):
    """Per-bin count and the sums of ``_kernels.SUM_FIELDS`` of the sorted classes of values in
    [0, 1] (whose keys are their bits) over ``edges``, as ``_numba_kernels.bin_sums``: a value
    lies in the bin of the number of inner edges below it (at or below it, ``right`` False), so
    each class's bins are runs of its sorted keys, cut by binary search and summed in order."""
    side = "right" if right else "left"
    inner = np.asarray(edges, dtype=np.float64)[1:-1]
    parts = []
    for keys in (kneg, kpos):
        values = keys.view(np.float64)
        bounds = np.concatenate(([0], np.searchsorted(values, inner, side=side), [values.size]))
        parts.append((np.diff(bounds), bounds.astype(np.int64), values))
    sums = list(thread_pool().map(lambda part: _range_sums(part[2], part[1]), parts))
    (cneg, _, _), (cpos, _, _) = parts
    neg, pos = sums
    count = (cneg + cpos).astype(np.int64)
    return count, np.stack(
        [neg[:, 0] + pos[:, 0], cpos.astype(np.float64), neg[:, 1] + pos[:, 1], pos[:, 0]]
        + [neg[:, 2] + pos[:, 2]]
    )


def select(kneg, kpos, ranks):
    """The values of the sorted 0-based ``ranks`` among the two sorted classes."""
    out = np.empty(len(ranks))
    if len(ranks):
        _select(kneg, kpos, np.asarray(ranks, dtype=np.int64), out.view(np.int64))
    return out
