"""Fused single-pass numba kernels (optional; importing this module needs numba).

Each kernel reads its input once, accumulates in float64, and counts invalid values instead of
raising (the caller then runs the numpy validation to produce the error message). The numpy code
in ``_kernels`` is the reference these kernels are tested against.

The kernels are plain serial loops over a row range that release the GIL (``nogil``); the rows
are split into blocks that a thread pool runs side by side, with private accumulators added at
the end. That keeps each kernel quick to compile (about half a second, once per input dtype;
the compiled code is cached on disk), where numba's ``parallel=True`` took about four seconds
more per kernel for the same speed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any

import numba
import numpy as np

from ._numba_log import CHUNK, log_buffers, logs

#: Rows per block of work below which one thread does everything.
BLOCK = 1 << 16


@cache
def thread_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=n_threads(), thread_name_prefix="calibkit")


def n_threads() -> int:
    try:
        return max(1, min(8, len(os.sched_getaffinity(0))))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, min(8, os.cpu_count() or 1))


#: Blocks of work (each with its own accumulator, added at the end), shared among the threads.
#: Shorter runs of sequential sums also round less.
_PARTS = 8


#: Bytes of private accumulators the blocks of one call may hold together (many bins make each
#: accumulator large: then fewer blocks, but never fewer than the threads).
_ACCUMULATOR_BUDGET = 8 << 20


def block_ranges(n: int, min_rows: int = BLOCK, accumulator: int = 0) -> list[tuple[int, int]]:
    """Row ranges covering 0..n: up to :data:`_PARTS`, one for small n, fewer when each needs
    an ``accumulator`` of that many bytes (then a multiple of the threads, so that none waits
    on another's last block)."""
    parts = max(1, min(_PARTS, n // min_rows))
    if accumulator:
        threads = n_threads()
        parts = min(parts, max(threads, _ACCUMULATOR_BUDGET // accumulator // threads * threads))
    return [(b * n // parts, (b + 1) * n // parts) for b in range(parts)]


def map_blocks(
    kernel: Callable[..., Any],
    n: int,
    *args: Any,
    min_rows: int = BLOCK,
    accumulator: int = 0,
) -> list[Any]:
    """``kernel(*args, lo, hi)`` for each block of rows, in parallel threads."""
    blocks = block_ranges(n, min_rows, accumulator)
    if len(blocks) == 1:
        return [kernel(*args, 0, n)]
    return list(thread_pool().map(lambda b: kernel(*args, b[0], b[1]), blocks))


#: Bins up to this many are found by counting the edges below a value (vectorised compares); more
#: by bisection.
_LINEAR_EDGES = 32


@numba.njit(cache=True, nogil=True)
def _accumulate(conf, outcome, edges, right, uniform, lo, hi):  # pragma: no cover
    """Rows lo..hi summed into acc[2k + outcome] = (count, sum p, sum p^2, sum p(1-p)(1-2p)^2);
    returns acc and the number of invalid rows.

    The bin k is the one ``_kernels.bin_index`` finds by comparison with the edge array. The
    code is written out in the loop on purpose: a helper function, even inlined, runs 1.7x
    slower.
    """
    m = edges.shape[0] - 1
    acc = np.zeros((2 * m, 4))  # private to the thread: no false sharing
    margin = 1e-12 * m  # far above the rounding of x * m and of linspace's edges
    top = 1
    while top * 2 < m:
        top *= 2
    bad = 0
    for i in range(lo, hi):
        x = np.float64(conf[i])
        y = np.float64(outcome[i])
        if not (x >= 0.0 and x <= 1.0) or not (y == 0.0 or y == 1.0):
            bad += 1
            continue
        o = np.int64(y)
        if uniform:
            f = x * m
            k = int(f)
            frac = f - k
            # floor(x * m) is the bin unless x lies within rounding of an edge; only then
            # compare with the edge array (a load on every row would cost 1.7x)
            if frac < margin or frac > 1.0 - margin or k > m - 1:
                k = min(k, m - 1)
                if right:
                    if k > 0 and x <= edges[k]:
                        k -= 1
                    elif k < m - 1 and x > edges[k + 1]:
                        k += 1
                elif k > 0 and x < edges[k]:
                    k -= 1
                elif k < m - 1 and x >= edges[k + 1]:
                    k += 1
        elif m <= _LINEAR_EDGES:  # count the inner edges below x (at or below: closed left)
            k = 0
            if right:
                for j in range(1, m):
                    k += edges[j] < x
            else:
                for j in range(1, m):
                    k += edges[j] <= x
        else:  # bisection of fixed length among the inner edges, branch-free
            k = 0
            step = top
            while step > 0:
                t = min(k + step, m)  # edges[m] is 1: never below x, and at or below it only
                e = edges[t]  # when x is 1, which closed="left" puts in the last bin anyway
                k = t if (e < x if right else e <= x) and t < m else k
                step >>= 1
        r = 2 * k + o
        t = 1.0 - 2.0 * x  # exact near 1/2, where the weight is tiny
        acc[r, 0] += 1.0
        acc[r, 1] += x
        acc[r, 2] += x * x
        acc[r, 3] += x * (1.0 - x) * t * t
    return acc, bad


def bin_sums(conf, outcome, edges, right, uniform):
    """Per-bin count and sums in the order of ``_kernels.SUM_FIELDS``, and the invalid count.

    The kernel accumulates per (bin, outcome) pair, which gives the outcome sums for free:
    sum y is the count of the outcome-1 row, and sum p*y its sum of p.
    """
    conf = np.ascontiguousarray(conf)
    if outcome.dtype == np.bool_:
        outcome = outcome.view(np.uint8)
    elif outcome.dtype == np.float16:  # numba has no float16 arithmetic
        outcome = outcome.astype(np.float32)
    outcome = np.ascontiguousarray(outcome)
    size = 2 * (edges.shape[0] - 1) * 4 * 8
    parts = map_blocks(
        _accumulate,
        conf.shape[0],
        *(conf, outcome, edges, bool(right), bool(uniform)),
        accumulator=size,
    )
    acc = parts[0][0]
    for more, _ in parts[1:]:
        acc += more
    bad = sum(b for _, b in parts)
    neg, pos = acc[0::2], acc[1::2]
    count = (neg[:, 0] + pos[:, 0]).astype(np.int64)
    sums = np.stack(
        [neg[:, 1] + pos[:, 1], pos[:, 0], neg[:, 2] + pos[:, 2], pos[:, 1], neg[:, 3] + pos[:, 3]]
    )
    return count, sums, int(bad)


@numba.njit(cache=True, nogil=True)
def _top_label_narrow(p, y, atol, conf, correct, lo, hi):  # pragma: no cover - compiled
    """Top label of rows lo..hi with few classes: one scalar pass per row."""
    c = p.shape[1]
    bad = 0
    for i in range(lo, hi):
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
        if not abs(total - 1.0) <= atol:
            ok = False
        if not ok:
            bad += 1
        conf[i] = best
        correct[i] = arg == y[i]
    return bad


@numba.njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def _row_sum(row):  # pragma: no cover - compiled
    total = row[0] * 0  # in the row's own precision: vectorised, and exact enough for atol
    for j in range(row.shape[0]):
        total += row[j]
    return np.float64(total)


@numba.njit(cache=True, nogil=True)
def _row_max_bits(bits):  # pragma: no cover - compiled
    top = bits[0]
    for j in range(1, bits.shape[0]):
        top = max(top, bits[j])
    return top


@numba.njit(cache=True, nogil=True)
def _top_label_wide(p, bits, one, y, atol, conf, correct, lo, hi):  # pragma: no cover - compiled
    """Top label of rows lo..hi with many classes, on the bit patterns of the floats.

    For floats in [0, 1] the unsigned bit patterns sort like the values, and every NaN,
    infinity, negative number or number above 1 has a pattern above that of 1.0. So one
    vectorised integer maximum gives the row's maximum and its validity at once; the argmax is
    the first position holding that pattern (the first maximum, as ``np.argmax``). A -0.0 is
    flagged too, and the caller's reference path then settles the row.
    """
    bad = 0
    for i in range(lo, hi):
        row_bits = bits[i]
        top = _row_max_bits(row_bits)
        arg = 0
        while row_bits[arg] != top:
            arg += 1
        if top > one or not abs(_row_sum(p[i]) - 1.0) <= atol:
            bad += 1
        conf[i] = p[i, arg]
        correct[i] = arg == y[i]
    return bad


#: From this many classes on, the bit-pattern kernel (vectorised per row) is the faster one.
_WIDE = 32


def top_label(p, y, atol):
    """Confidence, correctness and the number of rows that failed the quick validity check."""
    p = np.ascontiguousarray(p)
    y = np.ascontiguousarray(y)
    n = p.shape[0]
    conf = np.empty(n, dtype=np.float64)
    correct = np.empty(n, dtype=np.bool_)
    rows = max(1, BLOCK // p.shape[1])
    if p.shape[1] < _WIDE:
        bad = map_blocks(_top_label_narrow, n, p, y, atol, conf, correct, min_rows=rows)
    else:
        if p.dtype == np.float32:
            bits, one = p.view(np.uint32), np.uint32(0x3F800000)
        else:
            bits, one = p.view(np.uint64), np.uint64(0x3FF0000000000000)
        bad = map_blocks(_top_label_wide, n, p, bits, one, y, atol, conf, correct, min_rows=rows)
    return conf, correct, sum(bad)


@numba.njit(cache=True, nogil=True)
def _outside_unit(x, lo, hi):  # pragma: no cover - compiled
    """How many of x[lo:hi] are not in [0, 1] (NaN among them); branch-free, vectorised."""
    bad = 0
    for i in range(lo, hi):
        v = x[i]
        bad += not (v >= 0.0 and v <= 1.0)
    return bad


def outside_unit(x):
    """How many values of the contiguous array ``x`` are outside [0, 1] or NaN."""
    flat = x.reshape(-1)
    return sum(map_blocks(_outside_unit, flat.shape[0], flat))


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _binary_scores(p, y, lo, hi):  # pragma: no cover - compiled
    """Rows lo..hi of binary probabilities: the Brier and log-loss sums, and the rows whose true
    class has probability exactly 0 (their count and the first). The logarithms are taken
    ``CHUNK`` rows at a time by ``logs``."""
    brier = 0.0
    loss = 0.0
    zeros = 0
    first = -1
    true, logged, scratch = log_buffers()
    for start in range(lo, hi, CHUNK):
        m = min(CHUNK, hi - start)
        for k in range(m):
            x = np.float64(p[start + k])
            hit = y[start + k] == 1
            d = x - 1.0 if hit else x
            brier += d * d
            t = x if hit else 1.0 - x
            if t == 0.0:
                zeros += 1
                if first < 0:
                    first = start + k
                t = 1.0  # log 1 = 0: a zero adds nothing to the sum, it is counted
            true[k] = t
        logs(true, m, logged, scratch)
        for k in range(m):
            loss -= logged[k]
    return brier, loss, zeros, first


def binary_scores(p, y):
    """(Brier sum, log-loss sum, zero rows, first zero row) of binary probabilities."""
    p = np.ascontiguousarray(p)
    y = np.ascontiguousarray(y)
    if y.dtype == np.bool_:
        y = y.view(np.uint8)
    parts = map_blocks(_binary_scores, p.shape[0], p, y)
    zeros = sum(part[2] for part in parts)
    first = min((part[3] for part in parts if part[3] >= 0), default=-1)
    return sum(part[0] for part in parts), sum(part[1] for part in parts), zeros, first
