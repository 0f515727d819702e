"""Fused single-pass numba kernels (optional; importing this module needs numba).

Each kernel reads its input once, in parallel blocks with private accumulators that are added at
the end, accumulates in float64, and counts invalid values instead of raising (the caller then
runs the numpy validation to produce the error message). The numpy code in ``_kernels`` is the
reference these kernels are tested against.
"""

from __future__ import annotations

import numba
import numpy as np

_BLOCK = 1 << 16


@numba.njit(cache=True, nogil=True, inline="always")
def _bin_of(x, edges, m, right, uniform):  # pragma: no cover - compiled
    if uniform:
        k = int(x * m)
    else:  # binary search: first edge >= x
        lo, hi = 0, m + 1
        while lo < hi:
            mid = (lo + hi) >> 1
            if edges[mid] < x:
                lo = mid + 1
            else:
                hi = mid
        k = lo - 1
    if k < 0:
        k = 0
    elif k > m - 1:
        k = m - 1
    # one exact fix-up against the edge array (arithmetic can be off by one ulp at an edge)
    if right:
        while k > 0 and x <= edges[k]:
            k -= 1
        while k < m - 1 and x > edges[k + 1]:
            k += 1
    else:
        while k > 0 and x < edges[k]:
            k -= 1
        while k < m - 1 and x >= edges[k + 1]:
            k += 1
    return k


@numba.njit(cache=True, nogil=True, parallel=True)
def _bin_sums(conf, outcome, edges, right, uniform):  # pragma: no cover - compiled
    n = conf.shape[0]
    m = edges.shape[0] - 1
    n_blocks = max(1, (n + _BLOCK - 1) // _BLOCK)
    counts = np.zeros((n_blocks, m), dtype=np.int64)
    sums = np.zeros((n_blocks, 5, m), dtype=np.float64)
    bad = np.zeros(n_blocks, dtype=np.int64)
    for b in numba.prange(n_blocks):
        stop = min(n, (b + 1) * _BLOCK)
        for i in range(b * _BLOCK, stop):
            x = np.float64(conf[i])
            o = np.float64(outcome[i])
            if not (x >= 0.0 and x <= 1.0) or not (o == 0.0 or o == 1.0):
                bad[b] += 1
                continue
            k = _bin_of(x, edges, m, right, uniform)
            counts[b, k] += 1
            sums[b, 0, k] += x
            sums[b, 1, k] += o
            sums[b, 2, k] += x * x
            sums[b, 3, k] += x * o
            t = 1.0 - 2.0 * x
            sums[b, 4, k] += x * (1.0 - x) * t * t
    return counts.sum(axis=0), sums.sum(axis=0), bad.sum()


def bin_sums(conf, outcome, edges, right, uniform):
    if outcome.dtype == np.bool_:
        outcome = outcome.view(np.uint8)
    return _bin_sums(conf, outcome, edges, right, uniform)


@numba.njit(cache=True, nogil=True, parallel=True)
def _top_label(p, y, atol):  # pragma: no cover - compiled
    n, c = p.shape
    conf = np.empty(n, dtype=np.float64)
    correct = np.empty(n, dtype=np.bool_)
    bad = 0
    for i in numba.prange(n):
        best = p[i, 0]
        arg = 0
        total = 0.0
        ok = True
        for j in range(c):
            x = p[i, j]
            if not (x >= 0.0 and x <= 1.0):
                ok = False
            total += x
            if x > best:
                best = x
                arg = j
        label = y[i]
        if abs(total - 1.0) > atol or label < 0 or label >= c:
            ok = False
        if not ok:
            bad += 1
        conf[i] = best
        correct[i] = arg == label
    return conf, correct, bad


def top_label(p, y, atol):
    return _top_label(p, y, atol)
