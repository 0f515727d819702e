"""The bands of the CORP curve (Dimitriadis, Gneiting and Jordan 2021), by resampling as R's
``reliabilitydiag`` does: the consistency band (where a calibrated forecaster's curve falls)
and the confidence band (the uncertainty of the curve itself)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .pooled import Pooled, isotonic_of_sums

__all__ = ["MAX_BAND_POINTS", "Band", "RowWeights", "bands", "plural"]

#: Bands are evaluated at every distinct forecast when there are at most this many, else at
#: this many distinct forecasts spread evenly over the rows.
MAX_BAND_POINTS = 1000
#: Resamples drawn at once are bounded to about this many (resample, forecast) cells.
_BLOCK = 1 << 22


@dataclass(frozen=True)
class Band:
    """A pointwise band for the CORP curve at the forecasts ``x``, from ``n_boot`` resamples.

    ``kind="consistency"``: where the curve of a calibrated forecaster with these forecasts
    falls (outcomes drawn Bernoulli(forecast)), around the diagonal; a curve outside it is
    evidence of miscalibration there. ``kind="confidence"``: the uncertainty of the curve
    itself (outcomes drawn Bernoulli(recalibrated value)), around the curve.
    """

    kind: str
    x: np.ndarray
    low: np.ndarray
    high: np.ndarray
    level: float
    n_boot: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "x": self.x.tolist(),
            "low": self.low.tolist(),
            "high": self.high.tolist(),
            "level": self.level,
            "n_boot": self.n_boot,
        }

    def __str__(self) -> str:
        return (
            f"{self.level:.0%} {self.kind} band at {plural(self.x.size, 'forecast')} "
            f"({plural(self.n_boot, 'resample')})"
        )


def _band_points(pooled: Pooled) -> np.ndarray:
    """Indices of the distinct forecasts where bands are evaluated: all of them, or
    :data:`MAX_BAND_POINTS` spread evenly over the rows (the first and last always)."""
    k = pooled.x.size
    if k <= MAX_BAND_POINTS:
        return np.arange(k)
    ends = np.cumsum(pooled.count) - 1
    ranks = np.linspace(0, pooled.n - 1, MAX_BAND_POINTS)
    return np.unique(np.r_[0, np.searchsorted(ends, ranks), k - 1])


def _resampled_curves(
    pooled: Pooled,
    probs: tuple[np.ndarray, ...],
    at: np.ndarray,
    n_boot: int,
    rng: np.random.Generator,
    rows: RowWeights | None = None,
) -> list[np.ndarray]:
    """For each of ``probs``, (n_boot, len(at)) CORP curves of resampled data at the forecasts
    ``pooled.x[at]``.

    Each resample draws N rows with replacement and, for each ``p`` in ``probs``, their
    outcomes Bernoulli(``p``); each set is fitted by PAV. (The bands share the rows drawn:
    each band's resamples are as R draws them, and the rows are drawn once.) A forecast not
    drawn in a resample takes the value of the nearest drawn one below it (above it, below the
    lowest drawn), as R's ``reliabilitydiag`` fills its gaps. With ``rows`` (weighted), each
    drawn row keeps its weight and PAV is weighted (:func:`_weighted_resamples`)."""
    k = pooled.x.size
    out = [np.empty((n_boot, at.size)) for _ in probs]
    index = np.arange(k)
    draws = (
        _resamples(pooled, probs, n_boot, rng)
        if rows is None
        else _weighted_resamples(k, rows, probs, n_boot, rng)
    )
    for j, (counts, events) in enumerate(draws):
        drawn = counts > 0
        c = counts[drawn].astype(np.float64)
        last = np.maximum.accumulate(np.where(drawn, index, -1))
        last[last < 0] = int(np.argmax(drawn))
        read = last[at]
        for curves, hits in zip(out, events, strict=True):
            fitted = np.empty(k)
            fitted[drawn] = isotonic_of_sums(
                hits[drawn].astype(np.float64), c, fits=n_boot * len(probs)
            )
            curves[j] = fitted[read]
    return out


def _resamples(
    pooled: Pooled, probs: tuple[np.ndarray, ...], n_boot: int, rng: np.random.Generator
) -> Iterator[tuple[np.ndarray, list[np.ndarray]]]:
    """``n_boot`` resamples of the rows: the count drawn at each distinct forecast, and the
    events drawn there for each ``p`` in ``probs``.

    With few distinct forecasts (at most N / 16) the counts are one multinomial draw and the
    events one binomial draw per forecast, for a block of resamples at once; otherwise each
    resample draws N row indices and N uniforms per ``p`` (a binomial draw per forecast costs
    more when most counts are 0 or 1)."""
    k, n = pooled.x.size, pooled.n
    if k <= n // 16:
        rows = max(1, _BLOCK // k)
        for start in range(0, n_boot, rows):
            counts = rng.multinomial(n, pooled.count / n, size=min(rows, n_boot - start))
            events = [rng.binomial(counts, p) for p in probs]
            for j in range(counts.shape[0]):
                yield counts[j], [e[j] for e in events]
        return
    value_of_row = np.repeat(np.arange(k, dtype=np.int32), pooled.count)
    for _ in range(n_boot):
        drawn = value_of_row[rng.integers(0, n, n)]
        yield (
            np.bincount(drawn, minlength=k),
            [np.bincount(drawn, weights=rng.random(n) < p[drawn], minlength=k) for p in probs],
        )


def _weighted_resamples(
    k: int, rows: RowWeights, probs: tuple[np.ndarray, ...], n_boot: int, rng: np.random.Generator
) -> Iterator[tuple[np.ndarray, list[np.ndarray]]]:
    """``n_boot`` resamples of weighted rows: each draws N rows with replacement (each keeping
    its weight) and their outcomes Bernoulli(``p``) for each ``p`` in ``probs``; yields the
    drawn weight at each distinct forecast and the drawn weighted events there."""
    value_of_row, weight = rows
    n = value_of_row.size
    for _ in range(n_boot):
        pick = rng.integers(0, n, n)
        drawn, w = value_of_row[pick], weight[pick]
        yield (
            np.bincount(drawn, weights=w, minlength=k),
            [
                np.bincount(drawn, weights=np.where(rng.random(n) < p[drawn], w, 0.0), minlength=k)
                for p in probs
            ],
        )


#: The rows of a weighted CORP fit for its bands: the index of each row's forecast in the
#: pooled values, and its weight (rows of positive weight only).
RowWeights = tuple[np.ndarray, np.ndarray]


def bands(
    pooled: Pooled,
    fitted: np.ndarray,
    level: float,
    n_boot: int,
    rng: np.random.Generator,
    rows: RowWeights | None = None,
) -> tuple[Band, Band]:
    """The consistency band (outcomes Bernoulli(forecast)) and the confidence band (outcomes
    Bernoulli(recalibrated value)); weighted pooled forecasts need their ``rows``."""
    at = _band_points(pooled)
    x = pooled.x[at]
    bands = []
    curves = _resampled_curves(pooled, (pooled.x, fitted), at, n_boot, rng, rows)
    for kind, sample in zip(("consistency", "confidence"), curves, strict=True):
        low, high = np.quantile(sample, [0.5 - level / 2.0, 0.5 + level / 2.0], axis=0)
        if kind == "confidence":
            low, high = _bridge_degenerate(x, fitted[at], low, high)
        bands.append(Band(kind, x, low, high, level, n_boot))
    return bands[0], bands[1]


def _bridge_degenerate(
    x: np.ndarray, fitted: np.ndarray, low: np.ndarray, high: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Where the curve is exactly 0 or 1 inside the range, every resample repeats it and the
    band collapses to a point; there the band's ends are interpolated linearly between the
    neighbouring forecasts instead, as ``reliabilitydiag`` does."""
    inner = np.zeros(x.size, dtype=bool)
    inner[1:-1] = True
    bad = inner & ((fitted <= 0.0) | (fitted >= 1.0))
    if not bad.any() or bad.all():
        return low, high
    good = ~bad
    return (
        np.where(bad, np.interp(x, x[good], low[good]), low),
        np.where(bad, np.interp(x, x[good], high[good]), high),
    )


def plural(n: int, noun: str) -> str:
    """``"1 forecast"``, ``"2 forecasts"``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"
