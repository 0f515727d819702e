"""The calibration slope's passes as fused numba kernels (optional; importing this module needs
numba).

Each reads the forecasts and outcomes once, in row blocks on threads, computes each logit in
the loop (no array of logits, no float copy of the outcomes; the moments' kernel takes them a
chunk of rows at a time by the vectorised ``_numba_log.logs``) and accumulates in float64. The
numpy code in ``calibkit.measure`` (``slope.split_certain``, ``slope_grid.grid_counts``,
``slope_grid.grid_moments``, ``slope_fit.slope_terms``) is the reference these kernels are
tested against.
"""

from __future__ import annotations

import numba
import numpy as np

from ._numba_kernels import map_blocks
from ._numba_log import CHUNK, log_buffers, logs


@numba.njit(cache=True, nogil=True, inline="always")
def _certain(p):  # pragma: no cover - compiled
    """Whether the forecast is exactly 0 or 1 (it has no logit; it is certain)."""
    return p <= 0.0 or p >= 1.0


@numba.njit(cache=True, nogil=True, inline="always")
def _failed(p, hit):  # pragma: no cover - compiled
    """1 when a certain forecast missed (1 with outcome 0, or 0 with outcome 1), else 0."""
    return 1 if (p >= 1.0) != hit else 0


@numba.njit(cache=True, nogil=True)
def _grid(conf, outcome, steps, span, cells, lo, hi):  # pragma: no cover - compiled
    """Rows lo..hi: the logit histogram of the forecasts strictly inside (0, 1) per outcome,
    the number of forecasts of exactly 0 or 1, and how many of those failed."""
    hist = np.zeros((2, cells), dtype=np.int64)
    certain = 0
    failed = 0
    for i in range(lo, hi):
        p = np.float64(conf[i])
        hit = outcome[i] != 0
        if _certain(p):
            certain += 1
            failed += _failed(p, hit)
            continue
        x = np.log(p / (1.0 - p))  # the logit by one log (1 - p is exact from p = 1/2 up)
        cell = int(np.rint((min(max(x, -span), span) + span) * steps))
        hist[1 if hit else 0, cell] += 1
    return hist, certain, failed


#: Powers d^0 .. d^(WIDTH - 1) the moments' kernel sums per cell: a row of its histogram is
#: one 64-byte cache line.
WIDTH = 8


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _moments(conf, outcome, weight, steps, span, cells, lo, hi):  # pragma: no cover
    """Rows lo..hi (of positive ``weight``, when it is not empty): per outcome and cell of the
    logit, the sums of w d^j (j < ``WIDTH``), d the logit's distance from the cell's centre;
    the number of forecasts of exactly 0 or 1, of those that failed, and of logits outside
    [-span, span] (in no cell). ``CHUNK`` rows at a time: their logits by ``logs``, then their
    cells, distances and counts without a branch (vectorised), then the sums."""
    hist = np.zeros((2 * cells, WIDTH))  # row o * cells + cell
    weighted = weight.shape[0] > 0
    certain = 0
    failed = 0
    outside = 0
    odds, logits, scratch = log_buffers()
    rows = np.empty(CHUNK, dtype=np.int64)
    ds = np.empty(CHUNK)
    ws = np.ones(CHUNK)
    for start in range(lo, hi, CHUNK):
        m = min(CHUNK, hi - start)
        for k in range(m):
            p = np.float64(conf[start + k])
            odds[k] = p / (1.0 - p) if p > 0.0 and p < 1.0 else 1.0
        logs(odds, m, logits, scratch)
        for k in range(m):
            i = start + k
            p = np.float64(conf[i])
            hit = np.int64(outcome[i] != 0)
            keep = np.int64(True)
            if weighted:
                ws[k] = np.float64(weight[i])
                keep = np.int64(ws[k] > 0.0)
            sure = np.int64(p <= 0.0 or p >= 1.0)
            x = logits[k]  # 0 where sure (odds 1)
            away = (1 - sure) * np.int64(not (x >= -span and x <= span))
            certain += keep * sure
            failed += keep * sure * np.int64((p >= 1.0) != (hit != 0))
            outside += keep * away
            c = np.rint((min(max(x, -span), span) + span) * steps)
            ds[k] = x - (c / steps - span)
            counted = keep * (1 - sure) * (1 - away)
            rows[k] = counted * (np.int64(c) + cells * hit + 1) - 1  # -1: in no cell
        for k in range(m):
            r = rows[k]
            if r < 0:
                continue
            d = ds[k]
            w = ws[k]
            d2 = d * d
            d3 = d2 * d
            d4 = d2 * d2
            h = hist[r]
            h[0] += w
            h[1] += w * d
            h[2] += w * d2
            h[3] += w * d3
            h[4] += w * d4
            h[5] += w * (d4 * d)
            h[6] += w * (d3 * d3)
            h[7] += w * (d4 * d3)
    return hist, certain, failed, outside


@numba.njit(cache=True, nogil=True)
def _terms(conf, outcome, points, lo, hi):  # pragma: no cover - compiled
    """Rows lo..hi strictly inside (0, 1): at each point (a, b), the sums of the log-likelihood
    of sigmoid(a + b x), its gradient, the information and the information's derivatives
    (``measure.slope.slope_terms``), x the logit of the forecast.

    exp(-|a + b x|) costs one exp, except at slope 1 (the in-the-large fit), where it is
    exp(a) (1 - p) / p or its inverse: plain arithmetic; the log-likelihood's logarithm only
    where ``points[j, 2]`` asks for it."""
    n_points = points.shape[0]
    acc = np.zeros((n_points, 10))
    lift = np.exp(points[:, 0])
    loglik = points[:, 2] != 0.0
    for i in range(lo, hi):
        p = np.float64(conf[i])
        if not (p > 0.0 and p < 1.0):
            continue
        hit = outcome[i] != 0
        y = 1.0 if hit else 0.0
        odds = p / (1.0 - p)
        x = np.log(odds)
        for j in range(n_points):
            eta = points[j, 0] + points[j, 1] * x
            if points[j, 1] == 1.0:
                e = lift[j] * odds  # exp(eta)
                u = 1.0 / e if eta >= 0.0 else e
            else:
                u = np.exp(-abs(eta))
            q = 1.0 / (1.0 + u) if eta >= 0.0 else u / (1.0 + u)
            if loglik[j]:
                soft = np.log1p(u)  # log(1 + exp(-|eta|))
                if eta >= 0.0:
                    acc[j, 0] -= soft if hit else eta + soft
                else:
                    acc[j, 0] += eta - soft if hit else -soft
            w = q * (1.0 - q)
            r = y - q
            acc[j, 1] += r
            acc[j, 2] += r * x
            acc[j, 3] += w
            acc[j, 4] += w * x
            acc[j, 5] += w * x * x
            skew = w * (1.0 - 2.0 * q)
            acc[j, 6] += skew
            acc[j, 7] += skew * x
            acc[j, 8] += skew * x * x
            acc[j, 9] += skew * x * x * x
    return acc


def _prepared(conf, outcome):
    conf = np.ascontiguousarray(conf)
    outcome = np.ascontiguousarray(outcome)
    if outcome.dtype == np.bool_:
        outcome = outcome.view(np.uint8)
    elif outcome.dtype == np.float16:  # numba has no float16 arithmetic
        outcome = outcome.astype(np.float32)
    return conf, outcome


def grid(conf, outcome, steps, span, cells):
    """(n_certain, n_failed, (2, cells) histogram), as ``split_certain`` and ``grid_counts``."""
    conf, outcome = _prepared(conf, outcome)
    parts = map_blocks(_grid, conf.shape[0], conf, outcome, float(steps), float(span), int(cells))
    hist = parts[0][0]
    for more, _, _ in parts[1:]:
        hist += more
    return sum(p[1] for p in parts), sum(p[2] for p in parts), hist


def moments(conf, outcome, weight, steps, span, cells, n_moments):
    """(n_certain, n_failed, n_outside, (2, cells, n_moments) sums), as ``split_certain`` and
    ``measure.slope_grid.grid_moments`` (``weight`` None: every row weighs 1; at most
    :data:`WIDTH` moments)."""
    if not 0 < n_moments <= WIDTH:
        raise ValueError(f"the moments' kernel sums 1 to {WIDTH} powers, not {n_moments}")
    conf, outcome = _prepared(conf, outcome)
    weight = np.empty(0) if weight is None else np.ascontiguousarray(weight)
    parts = map_blocks(
        _moments,
        conf.shape[0],
        conf,
        outcome,
        weight,
        float(steps),
        float(span),
        int(cells),
        accumulator=2 * int(cells) * WIDTH * 8,
    )
    hist = parts[0][0]
    for more, *_ in parts[1:]:
        hist += more
    sums = hist.reshape(2, int(cells), WIDTH)[:, :, :n_moments]
    return (*(int(sum(p[k] for p in parts)) for k in (1, 2, 3)), np.ascontiguousarray(sums))


def terms(conf, outcome, points):
    """The sums of ``slope_terms`` at each point (intercept, slope[, with log-likelihood]), in
    one pass; the log-likelihood, and its logarithms, only at the points that ask for it (NaN
    at the others)."""
    conf, outcome = _prepared(conf, outcome)
    at = np.array([(p[0], p[1], p[2] if len(p) > 2 else 0.0) for p in points], dtype=np.float64)
    total = np.sum(map_blocks(_terms, conf.shape[0], conf, outcome, at), axis=0)
    total[at[:, 2] == 0.0, 0] = np.nan
    return list(total)
