"""The betting confidence sequence's capital update as a fused numba kernel (optional; importing
this module needs numba).

One pass over the rows of a batch, vectorised over the grid of candidate means, with no
(rows x grid) temporaries. The numpy code in ``calibkit.sequential`` (``_Betting._add_block``)
is the reference this kernel is tested against.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def add_capital(x, lam, m, cap_up, cap_down, log_up, log_down, product_rows):  # pragma: no cover
    """Add ``sum_i log(1 + min(lam_i, cap_up) (x_i - m))`` to ``log_up`` and ``sum_i log(1 -
    min(lam_i, cap_down) (x_i - m))`` to ``log_down``, for every grid point ``m``, in place;
    one logarithm per ``product_rows`` rows (every factor lies in [0.5, 1.5])."""
    g = m.size
    up = np.ones(g)
    down = np.ones(g)
    for i in range(x.size):
        xi = x[i]
        li = lam[i]
        for j in range(g):
            d = xi - m[j]
            up[j] *= 1.0 + min(li, cap_up[j]) * d
            down[j] *= 1.0 - min(li, cap_down[j]) * d
        if (i + 1) % product_rows == 0:
            for j in range(g):
                log_up[j] += np.log(up[j])
                log_down[j] += np.log(down[j])
                up[j] = 1.0
                down[j] = 1.0
    for j in range(g):
        log_up[j] += np.log(up[j])
        log_down[j] += np.log(down[j])
