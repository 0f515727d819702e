"""The temperature fit's pass as numba kernels (optional; importing this module needs numba).

One pass over (N, C) logits (or N binary scores) sums the NLL of softmax(beta z) and its first
three derivatives in beta, the same at beta = 0, and the argmax check of the logits divided by
the temperature, in row blocks on threads. The chunked numpy code of
``calibkit.measure.temperature_sums`` is the reference these kernels are tested against.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ._numba_kernels import BLOCK, map_blocks
from ._numba_log import LN2_HI, LN2_LO

# exp(x) for x <= 0 as 2**k * exp(r), |r| <= ln(2)/2, with a degree-13 Taylor polynomial
# (truncation below 1e-17) and 2**k built from its bits: plain arithmetic that LLVM vectorises,
# where a call to libm's exp per element would not be (3x slower on (50000, 1000) logits).
_LOG2E = 1.4426950408889634
_TAYLOR = tuple(1.0 / math.factorial(k) for k in range(14))


#: Running maxima a row's maximum keeps (one per SIMD lane): a single running maximum is one
#: chain of dependent compare-and-selects, 3x slower on rows of 1000 logits.
_LANES = 16


@numba.njit(cache=True, nogil=True)
def _row_max(row, n):  # pragma: no cover - compiled
    """The largest of row[:n] (n >= 1) as float64: ``_LANES`` running maxima that LLVM
    vectorises, then the largest of them and of the last n % _LANES values. The maximum of
    values without NaN does not depend on the order they are compared in."""
    m = n - n % _LANES
    if m == 0:
        top = np.float64(row[0])
        for j in range(1, n):
            top = max(top, np.float64(row[j]))
        return top
    lanes = np.empty(_LANES)
    for k in range(_LANES):
        lanes[k] = np.float64(row[k])
    for j in range(_LANES, m, _LANES):
        for k in range(_LANES):
            v = np.float64(row[j + k])
            lanes[k] = v if v > lanes[k] else lanes[k]
    top = lanes[0]
    for k in range(1, _LANES):
        top = max(top, lanes[k])
    for j in range(m, n):
        top = max(top, np.float64(row[j]))
    return top


#: Rows narrower than this find their maximum in one scalar scan (``_narrow_top``); wider
#: rows by ``_row_max``'s running maxima (1.7x faster at 10 classes, the same at 64).
_NARROW = 64


@numba.njit(cache=True, nogil=True)
def _narrow_top(row, n):  # pragma: no cover - compiled
    """The largest of row[:n] as float64, the first index holding it, and the largest value
    before that index (-inf when it is 0), in one scan."""
    top = np.float64(row[0])
    before = -np.inf
    arg = 0
    for j in range(1, n):
        v = np.float64(row[j])
        if v > top:
            before = top
            top = v
            arg = j
    return top, arg, before


@numba.njit(cache=True, nogil=True)
def _tied_by(before, top, temperature):  # pragma: no cover - compiled
    """Whether dividing by the temperature rounds ``before`` (< ``top``) up to ``top``'s
    quotient (exact IEEE division: no fast-math flags here)."""
    return before / temperature == top / temperature


@numba.njit(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc", "contract"})
def _temperature_multiclass(z, y, beta, temperature, lo, hi):  # pragma: no cover - compiled
    """Rows lo..hi summed: logsumexp and the mean, variance and third central moment of z under
    softmax(beta z); the same three at beta = 0 (the log of the number of finite logits, their
    mean and variance); and, for the logits divided by ``temperature``, how many rows' argmax moved
    (the first such row) and how many rows' argmax is the label.

    An argmax j of a row can move only to an earlier class whose logit rounds to the same
    quotient (division is monotone, and ties go to the first class): so each row compares its
    largest logit with the largest before it, once.
    """
    c = z.shape[1]
    t = _TAYLOR
    poly = np.empty(c)
    bits = np.empty(c, dtype=np.int64)
    power = bits.view(np.float64)
    shifted = np.empty(c)
    value = gradient = curvature = third = value0 = gradient0 = curvature0 = 0.0
    moved = correct = 0
    first_moved = -1
    for i in range(lo, hi):
        if c < _NARROW:
            top, arg, before = _narrow_top(z[i], c)
        else:
            top = _row_max(z[i], c)
            arg = 0
            while np.float64(z[i, arg]) != top:
                arg += 1
            before = _row_max(z[i], arg) if arg > 0 else -np.inf
        if arg > 0:
            if _tied_by(before, top, temperature):
                moved += 1
                if first_moved < 0:
                    first_moved = i
        if arg == y[i]:
            correct += 1
        for j in range(c):
            # -inf (the log of a probability 0) is held at -1e150 so that weight * shift is
            # 0, not NaN, and has weight 0 at every beta (also as beta -> 0); weights below
            # exp(-708) are set to 0: they are far under one ulp of the row's sum, which is
            # at least 1 (the top class's term)
            d = max(np.float64(z[i, j]) - top, -1e150)
            x = max(beta * d, -708.0)
            k = np.floor(x * _LOG2E + 0.5)
            r = (x - k * LN2_HI) - k * LN2_LO
            p = t[13]
            for m in range(12, -1, -1):
                p = p * r + t[m]
            poly[j] = p if x > -708.0 and d > -1e150 else 0.0  # exactly 0 below the clamps
            bits[j] = (np.int64(k) + 1023) << 52
            shifted[j] = d
        s0 = s1 = s2 = s3 = 0.0
        n0 = o1 = o2 = 0.0
        for j in range(c):
            d = shifted[j]
            w = poly[j] * power[j]
            s0 += w
            s1 += w * d
            s2 += w * d * d
            s3 += w * d * d * d
            finite = 1.0 if d > -1e150 else 0.0
            n0 += finite
            o1 += finite * d
            o2 += finite * d * d
        mean = s1 / s0
        m2 = s2 / s0
        true = np.float64(z[i, y[i]]) - top
        value += np.log(s0) - beta * true
        gradient += mean - true
        curvature += max(m2 - mean * mean, 0.0)
        third += s3 / s0 - 3.0 * mean * m2 + 2.0 * mean * mean * mean
        mean0 = o1 / n0
        value0 += np.log(n0)
        gradient0 += mean0 - true
        curvature0 += max(o2 / n0 - mean0 * mean0, 0.0)
    return np.array(
        [value, gradient, curvature, third, value0, gradient0, curvature0]
        + [moved, first_moved, correct]
    )


@numba.njit(cache=True, nogil=True)
def _temperature_binary(s, y, beta, lo, hi):  # pragma: no cover - compiled
    """Rows lo..hi summed: softplus(-m beta), its first three derivatives in beta (m the signed
    score), and the three at beta = 0."""
    value = gradient = curvature = third = gradient0 = curvature0 = 0.0
    for i in range(lo, hi):
        x = np.float64(s[i])
        sign = 1.0 if y[i] == 1 else -1.0
        margin = sign * x * beta
        # softplus(-margin) and sigmoid(-margin), without overflow
        if margin > 0:
            e = np.exp(-margin)
            value += np.log1p(e)
            wrong = e / (1.0 + e)
        else:
            e = np.exp(margin)
            value += -margin + np.log1p(e)
            wrong = 1.0 / (1.0 + e)
        spread = wrong * (1.0 - wrong)
        gradient += -sign * x * wrong
        curvature += x * x * spread
        third += -sign * x * x * x * spread * (1.0 - 2.0 * wrong)
        gradient0 += -0.5 * sign * x
        curvature0 += 0.25 * x * x
    value0 = (hi - lo) * np.log(2.0)
    return np.array([value, gradient, curvature, third, value0, gradient0, curvature0])


def temperature_sums(scores, labels, beta, temperature=1.0):
    """Sums over rows of the NLL and its first three derivatives in beta, the first three at
    beta = 0, and (multiclass) the argmax check of the logits divided by ``temperature``:
    rows whose argmax moved, the first of them (-1: none), rows whose argmax is the label."""
    scores = np.ascontiguousarray(scores)
    labels = np.ascontiguousarray(labels)
    n = scores.shape[0]
    if scores.ndim == 1:
        return np.sum(map_blocks(_temperature_binary, n, scores, labels, float(beta)), axis=0)
    rows = max(64, BLOCK // scores.shape[1])
    parts = map_blocks(
        _temperature_multiclass,
        n,
        *(scores, labels, float(beta), float(temperature)),
        min_rows=rows,
    )
    total = np.sum(parts, axis=0)
    firsts = [part[8] for part in parts if part[8] >= 0]
    total[8] = min(firsts) if firsts else -1.0
    return total
