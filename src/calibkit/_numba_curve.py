"""The risk-coverage curve in one fused numba kernel (optional; importing this module needs
numba).

After the two classes' confidences are put in order apart (``_numba_ranking.sorted_classes``),
a merge from the top writes each distinct threshold, its coverage and its selective risk
straight into the result's arrays, with the area each step adds, so the curve of N forecasts
takes four arrays of fresh memory instead of seven. The merge runs on threads, one run of
coarse buckets each (no value lies in two): a run starts from the counts of the runs above it
and writes from the most steps they can have (their number of values), and the runs then
close up the gaps their ties left. Every value is the one
``decide.coverage.curve`` computes on the numpy path from the argsort reference (the same
divisions and products, so bit-identical; the area is summed by ``np.sum`` on both).
"""

from __future__ import annotations

import numba
import numpy as np

from ._numba_kernels import BLOCK, n_threads, thread_pool
from ._numba_ranking import _bits, _ranges, next_step, sorted_classes


@numba.njit(cache=True, nogil=True)
def _curve(kneg, kpos, n, above, wrong_above, threshold, coverage, risk, area):  # pragma: no cover
    """Merge the sorted classes from the top, after ``above`` values (``wrong_above`` of them
    negatives) of larger runs; for the s-th distinct value (s = 1, 2, ...): ``threshold[s]``
    its bits (an int64 view of a float64 array), ``coverage[s]`` the share of the n values at
    least it, ``risk[s]`` the share of those that are negatives, and ``area[s - 1]`` the risk
    times the coverage it adds. Returns the count of distinct values."""
    steps = 0
    n_acted = above
    n_wrong = wrong_above
    previous = np.float64(above) / np.float64(n)
    i = kpos.shape[0] - 1
    j = kneg.shape[0] - 1
    while i >= 0 or j >= 0:
        k, i, j, n_k, negatives = next_step(kneg, kpos, i, j)
        n_acted += n_k
        n_wrong += negatives
        steps += 1
        c = np.float64(n_acted) / np.float64(n)
        r = np.float64(n_wrong) / np.float64(n_acted)
        threshold[steps] = _bits(k)
        coverage[steps] = c
        risk[steps] = r
        area[steps - 1] = r * (c - previous)
        previous = c
    return steps


def curve(s, right):
    """The arrays of a risk-coverage curve of checked finite confidences ``s`` and 0/1
    ``right``: (threshold, coverage, risk, area, errors), the arrays of m + 1 entries (entry 0
    is the empty selection: threshold inf, coverage 0, risk NaN) but the area (m entries), m
    the number of distinct confidences; ``errors`` the number not right."""
    kneg, kpos, ends = sorted_classes(s, right)
    n = s.shape[0]
    threshold = np.empty(n + 1, dtype=np.float64)
    coverage = np.empty(n + 1, dtype=np.float64)
    risk = np.empty(n + 1, dtype=np.float64)
    area = np.empty(n, dtype=np.float64)
    threshold[0], coverage[0], risk[0] = np.inf, 0.0, np.nan
    bits = threshold.view(np.int64)
    runs = []  # from the top: (first output row, positives, negatives, values above, wrong)
    above = wrong = 0
    for a, b in reversed(_ranges(ends, n_threads() if n >= BLOCK else 1)):
        lo_p, hi_p = (ends[1, a - 1] if a else 0), ends[1, b - 1]
        lo_n, hi_n = (ends[0, a - 1] if a else 0), ends[0, b - 1]
        runs.append((above, kpos[lo_p:hi_p], kneg[lo_n:hi_n], above, wrong))
        above += int(hi_p - lo_p + hi_n - lo_n)
        wrong += int(hi_n - lo_n)

    def merge(run):
        at, pos, neg, above, wrong = run
        out = (bits[at:], coverage[at:], risk[at:], area[at:])
        return _curve(neg, pos, n, above, wrong, *out)

    counts = [merge(runs[0])] if len(runs) == 1 else list(thread_pool().map(merge, runs))
    m = 0
    for (at, *_), steps in zip(runs, counts, strict=True):
        if at != m:  # close up the gap the runs above left (their ties: fewer steps than values)
            for a in (threshold, coverage, risk):
                a[m + 1 : m + 1 + steps] = a[at + 1 : at + 1 + steps]
            area[m : m + steps] = area[at : at + steps]
        m += steps
    return threshold[: m + 1], coverage[: m + 1], risk[: m + 1], area[:m], int(kneg.shape[0])
