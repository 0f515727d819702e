"""The passes over the distinct forecasts as numba kernels (optional; importing this module
needs numba): the isotonic fit (pool-adjacent-violators), the CORP score terms and the smooth
ECE's spreading onto its grid.

Each walks the pooled values once, sequentially (they are at most a few million, and each
kernel is a few milliseconds there). The numpy code in ``calibkit.measure`` (``pooled.pav``,
``corp._brier_terms`` and ``corp._log_terms``, ``smooth.spread``) is the reference these
kernels are tested against.
"""

from __future__ import annotations

import numba
import numpy as np

#: Values summed per partial sum: sequential sums of this many, then a sum of the partials,
#: keep the rounding near numpy's pairwise sums.
_PARTIAL = 1024


@numba.njit(cache=True, nogil=True)
def pav(hits, mass):  # pragma: no cover - compiled
    """The isotonic fit of ``hits / mass`` weighted by ``mass`` (positive): one pass with a
    stack of blocks, each block's value its sum of hits over its sum of mass, clipped to
    [0, 1] (a probability; the ratio of sums cannot leave it but by rounding)."""
    n = hits.shape[0]
    start = np.empty(n, dtype=np.int64)
    top_hits = np.empty(n)
    top_mass = np.empty(n)
    k = -1
    for i in range(n):
        k += 1
        start[k] = i
        top_hits[k] = hits[i]
        top_mass[k] = mass[i]
        # pool while the block below has a higher mean (a / b > c / d as a d > c b, b, d > 0)
        while k > 0 and top_hits[k - 1] * top_mass[k] > top_hits[k] * top_mass[k - 1]:
            top_hits[k - 1] += top_hits[k]
            top_mass[k - 1] += top_mass[k]
            k -= 1
    fitted = np.empty(n)
    for b in range(k + 1):
        end = start[b + 1] if b < k else n
        value = min(max(top_hits[b] / top_mass[b], 0.0), 1.0)
        for i in range(start[b], end):
            fitted[i] = value
    return fitted


@numba.njit(cache=True, nogil=True)
def _log_pair(p):  # pragma: no cover - compiled
    """(log p, log(1 - p)), each 0 where its term is 0 log 0 (p = 0, resp. p = 1)."""
    return np.log(p if p > 0.0 else 1.0), np.log1p(-(p if p < 1.0 else 0.0))


@numba.njit(cache=True, nogil=True)
def score_terms(x, log_x, log1m_x, hits, mass, fitted, base):  # pragma: no cover - compiled
    """The sums behind CORP's decompositions in one pass: for the forecasts ``x`` (with
    ``log_x`` = log x and ``log1m_x`` = log(1 - x), numpy's vectorised logarithms), their
    isotonic fit ``fitted`` and the climatology ``base`` (a number), the summed Brier terms
    mass p^2 - 2 p hits + hits and log-loss terms hits log p + misses log(1 - p) (0 log 0 = 0),
    and the mass of the rows whose outcome a forecast of exactly 0 or 1 contradicts. The
    logarithms of a PAV block's value are taken once per block, the climatology's once.

    Returns (brier[3], log[3], failed[3], total mass), in the order x, fitted, base."""
    brier = np.zeros(3)
    log = np.zeros(3)
    failed = np.zeros(3)
    part_brier = np.zeros(3)
    part_log = np.zeros(3)
    total = 0.0
    part_total = 0.0
    events = 0.0
    part_events = 0.0
    n = x.shape[0]
    value = -1.0  # the current block's fitted value and its logarithms
    log_hit = 0.0
    log_miss = 0.0
    for i in range(n):
        c = mass[i]
        h = hits[i]
        miss = c - h
        part_total += c
        part_events += h
        for j in range(2):
            p = x[i] if j == 0 else fitted[i]
            part_brier[j] += c * p * p - 2.0 * p * h + h
            if p >= 1.0:
                failed[j] += miss
            elif p <= 0.0:
                failed[j] += h
            if j == 0:  # a forecast of 0 (1) with events (non-events) failed: inf is right
                lh, lm = log_x[i], log1m_x[i]
            else:
                if p != value:
                    value = p
                    log_hit, log_miss = _log_pair(p)
                lh, lm = log_hit, log_miss
            if h > 0.0:
                part_log[j] += h * lh
            if miss > 0.0:
                part_log[j] += miss * lm
        if (i + 1) % _PARTIAL == 0 or i == n - 1:
            for j in range(2):
                brier[j] += part_brier[j]
                log[j] += part_log[j]
                part_brier[j] = 0.0
                part_log[j] = 0.0
            total += part_total
            events += part_events
            part_total = 0.0
            part_events = 0.0
    # the climatology is one value, the event rate, so no row fails it: its terms from totals
    misses = total - events
    brier[2] = total * base * base - 2.0 * base * events + events
    lh, lm = _log_pair(base)
    log[2] = (events * lh if events > 0.0 else 0.0) + (misses * lm if misses > 0.0 else 0.0)
    return brier, log, failed, total


@numba.njit(cache=True, nogil=True)
def spread(conf, weight, hits, size):  # pragma: no cover - compiled
    """The sums of ``weight``, of the residual ``weight * conf - hits`` and of ``hits`` on a
    grid of ``size`` points of [0, 1], each forecast's share split linearly between its two
    neighbouring points: ``smooth.spread`` of those three in one pass, the same additions in
    the same order (the same bits). Returns a (3, size) array."""
    left_sums = np.zeros((3, size))
    right_sums = np.zeros((3, size))
    scale = np.float64(size - 1)
    for i in range(conf.shape[0]):
        x = conf[i]
        pos = x * scale
        left = min(np.int64(pos), size - 2)
        frac = pos - left
        for j in range(3):
            w = weight[i] if j == 0 else (weight[i] * x - hits[i] if j == 1 else hits[i])
            left_sums[j, left] += w - w * frac
            right_sums[j, left + 1] += w * frac
    return left_sums + right_sums


@numba.njit(cache=True, nogil=True)
def pool_sorted(kneg, kpos, x_bits, count, hits):  # pragma: no cover - compiled
    """Pool the classes' sorted order keys (``_numba_ranking.sorted_classes``: negatives,
    positives) by value in one merge: each distinct value's float64 bits (into ``x_bits``,
    the int64 view of the forecasts), its count and its events. Returns how many values."""
    i = 0
    j = 0
    m = 0
    npos = kpos.shape[0]
    nneg = kneg.shape[0]
    while i < npos or j < nneg:
        k = kpos[i] if j >= nneg or (i < npos and kpos[i] <= kneg[j]) else kneg[j]
        c = 0
        h = 0
        while i < npos and kpos[i] == k:
            c += 1
            h += 1
            i += 1
        while j < nneg and kneg[j] == k:
            c += 1
            j += 1
        x_bits[m] = k if k >= 0 else k ^ np.int64(0x7FFFFFFFFFFFFFFF)
        count[m] = c
        hits[m] = h
        m += 1
    return m


@numba.njit(cache=True, nogil=True)
def cumulative_gap(x, count, hits, mass, mass_sq, weighted, total):  # pragma: no cover
    """The cumulative gap (sum of hits - mass x up to each value, over the ``total`` mass:
    the same additions as numpy's ``cumsum``, the same bits), the variance sum of
    mass_sq x (1 - x), where the gap is largest in absolute value (the first such), and its
    largest and smallest value with 0: ``cumulative_from_pooled`` in one pass (``mass`` and
    ``mass_sq`` are read only when ``weighted``; else the counts)."""
    n = x.shape[0]
    gap = np.empty(n)
    run = 0.0
    var = 0.0
    part = 0.0
    at = 0
    high = 0.0
    low = 0.0
    for i in range(n):
        c = mass[i] if weighted else np.float64(count[i])
        run += hits[i] - c * x[i]
        g = run / total
        gap[i] = g
        if abs(g) > abs(gap[at]):
            at = i
        high = max(high, g)
        low = min(low, g)
        part += (mass_sq[i] if weighted else c) * x[i] * (1.0 - x[i])
        if (i + 1) % _PARTIAL == 0:
            var += part
            part = 0.0
    return gap, var + part, at, high, low
