"""Smooth ECE (Blasiok and Nakkiran 2023): the calibration error of the kernel-smoothed
residual, with its automatic bandwidth, and the smooth reliability curve.

The residuals r_i = f_i - y_i are smoothed by a Gaussian kernel of width sigma reflected at 0
and 1; smECE_sigma is the integral over [0, 1] of the absolute smoothed residual, weighted by
the smoothed density of the forecasts. Its automatic bandwidth is the fixed point
sigma* = smECE_sigma*, found by bisection; smECE is then smECE_sigma*. Unlike binned ECE it has
no bin count to choose, and it is continuous in the forecasts.

The computation follows the conventions of the authors' package ``relplot`` (version 1.0.3), so
the two agree to rounding (docs/conventions.md says where they differ):

- each forecast is spread linearly onto a grid of G = max(2000, round(20 / sigma)) // 2 + 1
  points on [0, 1] (its weight split between the two neighbouring grid points);
- the grid is reflected about 0 and about 1 and convolved with the Gaussian density of width
  sigma sampled on the grid, truncated at a distance of 1/2;
- the smoothed sums are interpolated linearly onto a mesh of max(round(10 / sigma), 200)
  points, and smECE_sigma = sum |smoothed residual sum| / sum smoothed count over the mesh;
- the bandwidth search halves the interval [0, 1] ten times, keeping the upper end: the
  smallest tried sigma with sigma >= smECE_sigma (a sigma below 0.001 counts as too small;
  sigma = 1 when even 1 < smECE_1).

The functions take (confidence, outcome) pairs: P(y = 1) with the event y, or top-label pairs
(max probability, prediction correct), as relplot's own top-label reduction.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _kernels
from .. import _validate as v
from .pooled import Pooled

__all__ = ["SmoothECE", "smooth_ece", "smooth_ece_of"]

#: The smallest bandwidth the search accepts (relplot's ``eps``).
MIN_BANDWIDTH = 0.001
#: Halvings of [0, 1] in the bandwidth search.
SEARCH_STEPS = 10
#: The smooth curve is read where the smoothed count exceeds this share of its peak; below,
#: the FFT convolution's rounding (about 1e-16 of the peak) would show in the ratio.
REACH = 1e-9


@dataclass(frozen=True)
class SmoothECE:
    """Smooth ECE with its bandwidth and the smooth reliability curve.

    ``mesh`` are points of [0, 1]; ``mean_outcome`` the kernel-smoothed event rate there (the
    smooth reliability curve: the Nadaraya-Watson estimate of E[y | f]; NaN where no forecast
    lies within reach of the kernel, the smoothed count below 1e-9 of its peak) and
    ``density`` the kernel density of the forecasts (integrating to about 1 over [0, 1]; 0
    where out of reach). Weighted, ``n`` counts the rows of positive weight and ``weight`` is
    their total weight (None when unweighted).
    """

    value: float
    bandwidth: float
    searched: bool
    mesh: np.ndarray
    mean_outcome: np.ndarray
    density: np.ndarray
    n: int
    weight: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "bandwidth": self.bandwidth,
            "searched": self.searched,
            "mesh": self.mesh.tolist(),
            "mean_outcome": [None if math.isnan(x) else x for x in self.mean_outcome.tolist()],
            "density": self.density.tolist(),
            "n": self.n,
            **({} if self.weight is None else {"weight": self.weight}),
        }

    def __str__(self) -> str:
        how = "searched" if self.searched else "given"
        weight = "" if self.weight is None else f" (total weight {self.weight:g})"
        return (
            f"smooth ECE {self.value:.4f} (Gaussian kernel, bandwidth {self.bandwidth:.4g} "
            f"{how}), N = {self.n}{weight}"
        )


# ----------------------------------------------------------------------------- kernel sums


def grid_size(sigma: float) -> int:
    """Points of the grid the forecasts are spread onto at bandwidth ``sigma``."""
    return max(2000, round(20.0 / sigma)) // 2 + 1


def mesh_size(sigma: float) -> int:
    """Points of the mesh the smoothed sums are read on."""
    return max(round(10.0 / sigma), 200)


def spread(conf: np.ndarray, weights: list[np.ndarray], size: int) -> list[np.ndarray]:
    """The sums of each of ``weights`` on a grid of ``size`` points of [0, 1], each forecast's
    weight split linearly between its two neighbouring points."""
    pos = conf * (size - 1)
    left = np.minimum(pos.astype(np.int64), size - 2)
    frac = pos - left
    right = left + 1
    return [
        np.bincount(left, w - w * frac, minlength=size) + np.bincount(right, w * frac, size)
        for w in weights
    ]


def reflected_smooth(grid: np.ndarray, sigma: float) -> np.ndarray:
    """Convolve grid sums with the Gaussian density of width ``sigma``, reflected at both ends
    and truncated at half the interval (FFT; exact to rounding)."""
    size = grid.size
    step = 1.0 / (size - 1)
    half = (size - 1) // 2
    offsets = np.arange(-half, half + 1) * step
    kernel = np.exp(-0.5 * (offsets / sigma) ** 2) / (math.sqrt(2.0 * math.pi) * sigma)
    # the mirror images about 0 and 1 (the end points themselves once)
    extended = np.concatenate([grid[:0:-1], grid, grid[-2::-1]])
    length = extended.size + kernel.size - 1
    fft = 1 << (length - 1).bit_length()
    full = np.fft.irfft(np.fft.rfft(extended, fft) * np.fft.rfft(kernel, fft), fft)[:length]
    start = (size - 1) + half  # output i sums the extended grid around point i + size - 1
    return full[start : start + size]


@dataclass
class _Sums:
    """The forecasts spread onto grids, kept per grid size: every bandwidth of 0.01 or more
    uses the same grid, so most of the search spreads the data once."""

    conf: np.ndarray
    weight: np.ndarray  # rows at each forecast (1 for raw rows, the count for pooled ones;
    # the sample weights, or their sums per value, when weighted)
    hits: np.ndarray  # the (weighted) sum of their outcomes
    grids: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]

    def at(self, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(count, residual, hits) sums on the grid of ``size`` points (residual = f - y);
        many forecasts take one pass of the numba kernel (``_numba_distinct.spread``, the
        same bits as :func:`spread`)."""
        if size not in self.grids:
            if _kernels.use_numba(self.conf.size):
                kernel = _kernels.numba_distinct().spread
                count, residual, hits = kernel(self.conf, self.weight, self.hits, size)
            else:
                residual = self.weight * self.conf - self.hits
                count, residual, hits = spread(self.conf, [self.weight, residual, self.hits], size)
            self.grids[size] = (count, residual, hits)
        return self.grids[size]


def _smoothed(sums: _Sums, sigma: float, grids: tuple[np.ndarray, ...]) -> list[np.ndarray]:
    """The grid sums ``grids`` smoothed at ``sigma`` and read on the mesh."""
    size = grids[0].size
    points = np.linspace(0.0, 1.0, size)
    mesh = np.linspace(0.0, 1.0, mesh_size(sigma))
    return [np.interp(mesh, points, reflected_smooth(g, sigma)) for g in grids]


def _value(sums: _Sums, sigma: float) -> float:
    count, residual = _smoothed(sums, sigma, sums.at(grid_size(sigma))[:2])
    return float(np.sum(np.abs(residual)) / np.sum(count))


def search_bandwidth(sums: _Sums) -> float:
    """The smallest sigma of the bisection with sigma >= smECE_sigma (see the module)."""

    def too_small(sigma: float) -> bool:
        return sigma < MIN_BANDWIDTH or sigma < _value(sums, sigma)

    if too_small(1.0):  # the widest kernel is still narrower than its error: the cap
        return 1.0
    high, low = 1.0, 0.0
    for _ in range(SEARCH_STEPS):
        mid = (high + low) / 2.0
        if too_small(mid):
            low = mid
        else:
            high = mid
    return high


# ----------------------------------------------------------------------------- entry points


def smooth_ece(
    confidence: Any, outcome: Any, *, bandwidth: float | None = None, sample_weight: Any = None
) -> SmoothECE:
    """Smooth ECE (Blasiok and Nakkiran 2023) with its automatic bandwidth, and the smooth
    reliability curve.

    Parameters
    ----------
    confidence : array of shape (N,)
        Forecast probabilities of the event, P(y = 1), or top-label confidences
        (``ck.top_label(probs, labels)``).
    outcome : array of shape (N,)
        Whether the event happened (0/1); for top-label pairs, whether the prediction was
        right.
    bandwidth : float, optional
        A fixed kernel width in (0, 1] (relplot's ``smECE_sigma``); by default the fixed point
        sigma = smECE_sigma is searched (relplot's ``smECE``).
    sample_weight : array of shape (N,), optional
        Non-negative row weights: each forecast spreads its weight (and its weighted residual)
        onto the grid, so the kernel sums, the density and smECE_sigma are weighted, and the
        bandwidth is the same fixed point sigma = smECE_sigma of the weighted error. Integer
        weights give relplot's numbers on the rows repeated that many times.

    Returns
    -------
    SmoothECE
        ``value``, ``bandwidth``, and the curve: ``mesh``, ``mean_outcome``, ``density``.

    Examples
    --------
    Forecasts of 0.8 for events that happen 3 times in 5 are off by 0.2 wherever the kernel
    reaches; at any bandwidth the smoothed residual is that 0.2 times the density:

    >>> import calibkit as ck
    >>> s = ck.smooth_ece([0.8] * 5, [1, 1, 1, 0, 0], bandwidth=0.1)
    >>> round(s.value, 6)
    0.2

    Weighted, the misses counting twice: events 3 times in 7, the forecast off by 0.8 - 3/7.

    >>> s = ck.smooth_ece([0.8] * 5, [1, 1, 1, 0, 0], bandwidth=0.1,
    ...                   sample_weight=[1, 1, 1, 2, 2])
    >>> round(s.value, 6) == round(0.8 - 3 / 7, 6), s.n
    (True, 5)
    """
    where = "smooth_ece"
    conf = v.confidence(confidence, where=where)
    y = v.outcome(outcome, n=conf.shape[0], where=where)
    w = v.sample_weight(sample_weight, n=conf.shape[0], where=where)
    if bandwidth is not None:
        bandwidth = v.number_between(
            bandwidth,
            name="bandwidth",
            where=where,
            low=MIN_BANDWIDTH,
            high=1.0,
            hint=" (a kernel width on the probability scale, e.g. 0.05; leave it out to search it)",
        )
    return smooth_ece_of(conf, y, bandwidth=bandwidth, sample_weight=w)


def smooth_ece_of(
    conf: np.ndarray,
    outcome: np.ndarray,
    *,
    bandwidth: float | None = None,
    sample_weight: np.ndarray | None = None,
) -> SmoothECE:
    """:func:`smooth_ece` of checked arrays (weights checked too)."""
    x = np.asarray(conf, dtype=np.float64)
    y = np.asarray(outcome, np.float64)
    if sample_weight is not None:
        sums = _Sums(x, sample_weight, sample_weight * y, {})
        return _smooth_ece(sums, bandwidth, rows=int(np.count_nonzero(sample_weight)))
    return _smooth_ece(_Sums(x, np.ones_like(x), y, {}), bandwidth)


def smooth_ece_from_pooled(pooled: Pooled, *, bandwidth: float | None = None) -> SmoothECE:
    """:func:`smooth_ece` of forecasts pooled by value (what the audit calls: the same number
    as on the rows, to rounding, since every sum is linear in the rows)."""
    sums = _Sums(pooled.x, pooled.mass, pooled.hits, {})
    return _smooth_ece(sums, bandwidth, rows=pooled.n if pooled.weighted else None)


def _smooth_ece(sums: _Sums, bandwidth: float | None, rows: int | None = None) -> SmoothECE:
    """The smooth ECE of the sums; ``rows`` the number of rows when the sums are weighted
    (the density then divides by the total weight)."""
    sigma = search_bandwidth(sums) if bandwidth is None else bandwidth
    size = grid_size(sigma)
    count, residual, hits = _smoothed(sums, sigma, sums.at(size))
    n = int(round(float(sums.weight.sum())))
    mass = float(sums.weight.sum()) if rows is not None else n
    # far below the peak the FFT's rounding (1e-16 of the peak) would show in the ratio
    reached = count > REACH * count.max()
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(reached, hits / count, np.nan)
    return SmoothECE(
        value=float(np.sum(np.abs(residual)) / np.sum(count)),
        bandwidth=float(sigma),
        searched=bandwidth is None,
        mesh=np.linspace(0.0, 1.0, mesh_size(sigma)),
        mean_outcome=mean,
        density=np.where(reached, count, 0.0) / mass,
        n=n if rows is None else rows,
        weight=None if rows is None else mass,
    )
