"""The risk-coverage curve in one fused numba kernel (optional; importing this module needs
numba).

After the two classes' confidences are put in order apart (``_numba_ranking.sorted_classes``),
one merge from the top writes each distinct threshold, its coverage and its selective risk
straight into the result's arrays, with the area each step adds, so the curve of N forecasts
takes four arrays of fresh memory instead of seven. Every value is the one
``decide.coverage.curve`` computes on the numpy path from the argsort reference (the same
divisions and products, so bit-identical; the area is summed by ``np.sum`` on both).
"""

from __future__ import annotations

import numba
import numpy as np

from ._numba_ranking import _bits, next_step, sorted_classes


@numba.njit(cache=True, nogil=True)
def _curve(kneg, kpos, n, threshold, coverage, risk, area):  # pragma: no cover - compiled
    """Merge the sorted classes from the top; for the s-th distinct value (s = 1, 2, ...):
    ``threshold[s]`` its bits (an int64 view of a float64 array), ``coverage[s]`` the share of
    the n values at least it, ``risk[s]`` the share of those that are negatives, and
    ``area[s - 1]`` the risk times the coverage it adds. Returns the count of distinct values."""
    steps = 0
    n_acted = 0
    n_wrong = 0
    previous = 0.0
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
    kneg, kpos = sorted_classes(s, right)[:2]
    n = s.shape[0]
    threshold = np.empty(n + 1, dtype=np.float64)
    coverage = np.empty(n + 1, dtype=np.float64)
    risk = np.empty(n + 1, dtype=np.float64)
    area = np.empty(n, dtype=np.float64)
    threshold[0], coverage[0], risk[0] = np.inf, 0.0, np.nan
    m = _curve(kneg, kpos, n, threshold.view(np.int64), coverage, risk, area)
    return threshold[: m + 1], coverage[: m + 1], risk[: m + 1], area[:m], int(kneg.shape[0])
