"""The two confidence sequences for the mean of gaps in ``[lo, hi]``: the hedged betting
capital of Waudby-Smith and Ramdas (2023) on a grid of candidate gaps, and the normal-mixture
boundary (Robbins 1970; Howard et al. 2021). :mod:`calibkit.sequential` says what each is."""

from __future__ import annotations

import math

import numpy as np

from .. import _kernels

__all__ = ["BET_CAP", "HEDGE", "Betting", "Mixture", "log_product", "mixture_ratio"]

#: The bet cap ``c`` and the hedge weight ``theta`` of Waudby-Smith and Ramdas (2023).
BET_CAP = 0.5
HEDGE = 0.5
#: Rows of one block of the (rows x grid) betting update (bounds its memory).
BLOCK_ROWS = 2048
#: Rows whose capital factors are multiplied before one logarithm is taken.
PRODUCT_ROWS = 256


def log_product(factors: np.ndarray) -> np.ndarray:
    """``log(factors).sum(axis=0)``, one logarithm per :data:`PRODUCT_ROWS` rows: every factor
    of a capital lies in [1 - c, 1 + c] = [0.5, 1.5], so a product of 256 stays within
    float64 (8.6e-78 .. 1.4e45) and loses no more than rounding of 256 multiplications."""
    full = factors.shape[0] // PRODUCT_ROWS * PRODUCT_ROWS
    blocks = factors[:full].reshape(-1, PRODUCT_ROWS, factors.shape[1]).prod(axis=1)
    out = np.log(blocks).sum(axis=0)
    if full < factors.shape[0]:
        out += np.log(factors[full:].prod(axis=0))
    return out


class Betting:
    """The hedged capital process on a grid of candidate gaps for gaps in ``[lo, hi]``."""

    def __init__(self, lo: float, hi: float, alpha: float, grid: np.ndarray) -> None:
        self.lo, self.hi, self.alpha = lo, hi, alpha
        self.gaps = grid[(grid >= lo) & (grid <= hi)]
        self.zero = int(np.flatnonzero(self.gaps == 0.0)[0])
        self.m = (self.gaps - lo) / (hi - lo)  # candidate means of x in [0, 1]
        with np.errstate(divide="ignore"):
            self.cap_up = BET_CAP / self.m
            self.cap_down = BET_CAP / (1.0 - self.m)
        self.log_up = np.zeros_like(self.m)
        self.log_down = np.zeros_like(self.m)
        self.t, self.sum_x, self.sum_sq, self.var = 0, 0.0, 0.0, 0.25
        self.sum_z = 0.0

    def add(self, z: np.ndarray) -> None:
        self.sum_z += float(z.sum())
        x = (z - self.lo) / (self.hi - self.lo)
        lam = self._bets(x)
        # a monitor lives on: once its capital has read as many elements as a large one-off
        # input, load the numba kernel (about 0.6 s once; 20x faster per element after that)
        _kernels.expect(self.t * self.m.size)
        if _kernels.use_numba(x.size * self.m.size):
            _kernels.numba_capital().add_capital(
                x, lam, self.m, self.cap_up, self.cap_down, self.log_up, self.log_down,
                PRODUCT_ROWS,
            )  # fmt: skip
            return
        for start in range(0, x.size, BLOCK_ROWS):
            rows = slice(start, start + BLOCK_ROWS)
            dev = x[rows, None] - self.m[None, :]
            bet = lam[rows, None]
            self.log_up += log_product(1.0 + np.minimum(bet, self.cap_up) * dev)
            self.log_down += log_product(1.0 - np.minimum(bet, self.cap_down) * dev)

    def _bets(self, x: np.ndarray) -> np.ndarray:
        """The predictable plug-in bets of the rows ``x`` (each from the rows before it), and
        the running mean and variance moved past them."""
        t = self.t + np.arange(1, x.size + 1, dtype=np.float64)
        mean = (0.5 + self.sum_x + np.cumsum(x)) / (t + 1.0)
        sq = self.sum_sq + np.cumsum((x - mean) ** 2)
        var = (0.25 + sq) / (t + 1.0)
        var_before = np.concatenate(([self.var], var[:-1]))
        lam = np.sqrt(2.0 * math.log(2.0 / self.alpha) / (var_before * t * np.log1p(t)))
        self.t += x.size
        self.sum_x += float(x.sum())
        self.sum_sq = float(sq[-1])
        self.var = float(var[-1])
        return np.minimum(lam, BET_CAP)

    def log_capital(self) -> float:
        """Log of the hedged capital against a gap of 0."""
        i = self.zero
        return max(math.log(HEDGE) + self.log_up[i], math.log(1 - HEDGE) + self.log_down[i])

    def interval(self) -> tuple[float, float]:
        bound = math.log(1.0 / self.alpha)
        up_ok = math.log(HEDGE) + self.log_up < bound  # False, then True as m grows
        down_ok = math.log(1 - HEDGE) + self.log_down < bound  # True, then False
        g = self.gaps
        p = int(np.argmax(up_ok)) if up_ok.any() else g.size
        q = g.size - 1 - int(np.argmax(down_ok[::-1])) if down_ok.any() else -1
        low = float(g[p - 1]) if p >= 1 else self.lo
        high = float(g[q + 1]) if q + 1 < g.size else self.hi
        return low, high


def mixture_ratio(alpha: float) -> float:
    """``r = V / rho`` at which the two-sided normal-mixture boundary is tightest: the root of
    ``r = 2 log(1/a) + log(1 + r)`` (setting the derivative in ``rho`` to zero)."""
    r = 2.0 * math.log(1.0 / alpha)
    for _ in range(50):
        r = 2.0 * math.log(1.0 / alpha) + math.log1p(r)
    return r


class Mixture:
    """The normal-mixture confidence sequence for gaps in ``[lo, hi]``."""

    def __init__(self, lo: float, hi: float, alpha: float, horizon: float) -> None:
        self.lo, self.hi, self.alpha = lo, hi, alpha
        self.s2 = ((hi - lo) / 2.0) ** 2
        self.rho = self.s2 * horizon / mixture_ratio(alpha)
        self.t, self.sum_z = 0, 0.0

    def add(self, z: np.ndarray) -> None:
        self.t += z.size
        self.sum_z += float(z.sum())

    def log_capital(self) -> float:
        """Log of the mixture martingale against a gap of 0."""
        vr = self.s2 * self.t + self.rho
        return 0.5 * math.log(self.rho / vr) + self.sum_z**2 / (2.0 * vr)

    def interval(self) -> tuple[float, float]:
        if self.t == 0:
            return self.lo, self.hi
        vr = self.s2 * self.t + self.rho
        half = math.sqrt(vr * math.log(vr / (self.rho * self.alpha**2))) / self.t
        mean = self.sum_z / self.t
        return max(mean - half, self.lo), min(mean + half, self.hi)
