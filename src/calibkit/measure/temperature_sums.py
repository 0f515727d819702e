"""The temperature objective's sums in chunked float64 numpy: the reference the numba pass
(``calibkit._numba_temperature``) is tested against, and the path of weighted fits.

Each function returns seven sums over the rows (weighted by ``sample_weight`` when given):
the NLL and its first three derivatives in beta at ``beta``, then the NLL and its first two
derivatives at beta = 0. Float32 logits are upcast a chunk of rows at a time, never whole.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

CHUNK_ELEMENTS = 1 << 20  # a chunk of logits upcast to float64 at a time


def _summed(term: np.ndarray, w: np.ndarray | None) -> Any:
    """The sum of per-row terms, each weighed by its row's weight when there are weights."""
    return np.sum(term) if w is None else np.dot(w, term)


def multiclass_sums(
    z: np.ndarray,
    y: np.ndarray,
    beta: float,
    *,
    origin: bool = True,
    sample_weight: np.ndarray | None = None,
) -> np.ndarray:
    """The seven sums of one pass (:func:`calibkit.measure.temperature.evaluate`) over (N, C)
    logits: the NLL and its first three derivatives at ``beta``, and the NLL and two
    derivatives at beta = 0 (NaN unless ``origin``)."""
    total = np.zeros(7)
    if not origin:
        total[4:7] = np.nan
    rows = max(1, CHUNK_ELEMENTS // z.shape[1])
    for start in range(0, z.shape[0], rows):
        block = z[start : start + rows].astype(np.float64)
        top = block.max(axis=1, keepdims=True)
        shifted = block - top  # <= 0; -inf stays -inf (a probability of exactly 0)
        finite = np.isfinite(shifted)
        centred = np.where(finite, shifted, 0.0)
        true = np.take_along_axis(shifted, y[start : start + rows, None], axis=1)[:, 0]
        wb = None if sample_weight is None else sample_weight[start : start + rows]
        # a -inf logit has weight 0 at every beta > 0, hence in the limit beta -> 0 too
        for at, b in ((0, beta), (4, 0.0)) if origin else ((0, beta),):
            weights = np.where(finite, np.exp(b * centred), 0.0) if b else finite * 1.0
            s0 = weights.sum(axis=1)
            s1 = (weights * centred).sum(axis=1) / s0
            s2 = (weights * centred * centred).sum(axis=1) / s0
            total[at : at + 3] += (
                _summed(np.log(s0) - b * true, wb),
                _summed(s1 - true, wb),
                _summed(np.maximum(s2 - s1 * s1, 0.0), wb),
            )
            if at == 0:  # the third central moment
                s3 = (weights * centred**3).sum(axis=1) / s0
                total[3] += _summed(s3 - 3.0 * s1 * s2 + 2.0 * s1**3, wb)
    return total


def binary_sums(
    s: np.ndarray, y: np.ndarray, beta: float, sample_weight: np.ndarray | None = None
) -> np.ndarray:
    """The seven sums of :func:`multiclass_sums` for binary scores ``s`` and 0/1 labels."""
    total = np.zeros(7)
    for start in range(0, s.shape[0], CHUNK_ELEMENTS):
        x = s[start : start + CHUNK_ELEMENTS].astype(np.float64)
        wb = None if sample_weight is None else sample_weight[start : start + CHUNK_ELEMENTS]
        sign = np.where(y[start : start + CHUNK_ELEMENTS] == 1, 1.0, -1.0)
        margin = sign * x * beta
        wrong = np.exp(-np.logaddexp(0.0, margin))  # sigmoid(-margin)
        spread = wrong * (1.0 - wrong)
        total += (
            _summed(np.logaddexp(0.0, -margin), wb),
            _summed(-sign * x * wrong, wb),
            _summed(x * x * spread, wb),
            _summed(-sign * x**3 * spread * (1.0 - 2.0 * wrong), wb),
            (x.size if wb is None else np.sum(wb)) * math.log(2.0),
            _summed(-0.5 * sign * x, wb),
            _summed(0.25 * x * x, wb),
        )
    return total
