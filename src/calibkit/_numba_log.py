"""The natural logarithm of a chunk of positive doubles, vectorised (optional; needs numba).

numba calls libm's ``log`` once per element, which LLVM cannot vectorise (there is no SVML
here). ``logs`` is fdlibm's ``__ieee754_log`` (the reduction x = 2**k m, m in [sqrt(1/2),
sqrt(2)), and its degree-14 minimax polynomial in s = (m - 1) / (m + 1), error below 2**-58.45)
written as plain arithmetic on a chunk: LLVM vectorises it, and it is within one ulp of the
correctly rounded logarithm (``tests/measure/test_numba_log.py`` checks it against ``np.log``).
Subnormal, zero, negative, infinite and NaN inputs are not reduced correctly: ``logs`` gives
them ``np.log``'s value by a second, scalar loop over just those.
"""

from __future__ import annotations

import numba
import numpy as np

LN2_HI = 6.93147180369123816490e-01  # fdlibm's split of ln 2
LN2_LO = 1.90821492927058770002e-10
_LG = (  # fdlibm's Lg1 .. Lg7
    6.666666666666735130e-01,
    3.999999999940941908e-01,
    2.857142874366239149e-01,
    2.222219843214978396e-01,
    1.818357216161805012e-01,
    1.531383769920937332e-01,
    1.479819860511658591e-01,
)
_SQRT_HALF_BITS = 0x3FE6A09E667F3BCD  # the bits of sqrt(1/2)
_TINY = 2.2250738585072014e-308  # the smallest normal double
CHUNK = 512  # rows a kernel turns into logarithms at a time (4 KiB a buffer)


@numba.njit(cache=True, nogil=True)
def log_buffers():  # pragma: no cover - compiled
    """One chunk's buffers for ``logs``: its input, its output and its int64 scratch."""
    return np.empty(CHUNK), np.empty(CHUNK), np.empty(CHUNK, dtype=np.int64)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def logs(x, n, out, scratch):  # pragma: no cover - compiled
    """``out[:n] = log(x[:n])``; ``scratch`` an int64 buffer of at least n entries."""
    lg1, lg2, lg3, lg4, lg5, lg6, lg7 = _LG
    bits = x.view(np.int64)
    mantissa = scratch.view(np.float64)
    for k in range(n):  # m = x / 2**e in [sqrt(1/2), sqrt(2)): e from the bits' distance
        e = (bits[k] - _SQRT_HALF_BITS) >> 52
        scratch[k] = bits[k] - (e << 52)
        out[k] = np.float64(e)
    for k in range(n):
        e = out[k]
        f = mantissa[k] - 1.0
        s = f / (2.0 + f)
        z = s * s
        w = z * z
        t1 = w * (lg2 + w * (lg4 + w * lg6))
        t2 = z * (lg1 + w * (lg3 + w * (lg5 + w * lg7)))
        r = t2 + t1
        hfsq = 0.5 * f * f
        out[k] = e * LN2_HI - ((hfsq - (s * (hfsq + r) + e * LN2_LO)) - f)
    normal = 0
    for k in range(n):  # branch-free, so vectorised too
        normal += (x[k] >= _TINY) & (x[k] < np.inf)
    if normal < n:
        for k in range(n):
            if not (x[k] >= _TINY and x[k] < np.inf):
                out[k] = np.log(x[k])
