"""Proper scores (Brier, log loss), accuracy, and the two Brier decompositions."""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .. import _kernels
from .. import _validate as v
from .._errors import CalibkitWarning
from .bins import BinStats
from .reliability import binned

__all__ = [
    "BrierDecomposition",
    "accuracy",
    "brier",
    "brier_decomposition",
    "brier_of",
    "nll",
    "nll_of",
]

_CHUNK = 1 << 16


def _binary_or_multiclass(
    probs: Any, labels: Any, *, from_logits: bool, where: str
) -> tuple[np.ndarray, np.ndarray]:
    """Validated (scores, labels): 1-D is P(label = 1) (or a binary logit), 2-D is (N, C)."""
    if from_logits:
        x = v.scores(probs, where=where, ndim=(1, 2))
    else:
        arr = v.to_numpy(probs, name="probs", where=where)
        x = (
            v.probabilities(arr, where=where)
            if arr.ndim == 2
            else v.confidence(arr, where=where, name="probs")
        )
    n_classes = 2 if x.ndim == 1 else x.shape[1]
    return x, v.labels(labels, n=x.shape[0], n_classes=n_classes, where=where)


def brier(probs: Any, labels: Any, *, from_logits: bool = False) -> float:
    """Mean Brier score.

    1-D ``probs`` are P(label = 1) with labels in {0, 1}: mean (p - y)^2, from 0 to 1. 2-D (N, C)
    ``probs``: mean over rows of sum_c (q_c - [y = c])^2, from 0 to 2 (Brier 1950);
    for C = 2 this is twice the binary score.

    Examples
    --------
    The input-blind uniform four-class model scores 0.75.

    >>> import calibkit as ck
    >>> ck.brier([[0.25] * 4] * 4, [0, 1, 2, 3])
    0.75
    """
    x, y = _binary_or_multiclass(probs, labels, from_logits=from_logits, where="brier")
    return brier_of(x, y, from_logits=from_logits)


def brier_of(x: np.ndarray, y: np.ndarray, *, from_logits: bool = False) -> float:
    """:func:`brier` of checked arrays (what an engine holds after preparing its input)."""
    if x.ndim == 1:
        p = _sigmoid(x) if from_logits else x.astype(np.float64, copy=False)
        return float(np.mean((p - y) ** 2))
    total = 0.0
    for start in range(0, x.shape[0], _CHUNK):
        q = x[start : start + _CHUNK].astype(np.float64)
        if from_logits:
            q = np.exp(q - q.max(axis=1, keepdims=True))
            q /= q.sum(axis=1, keepdims=True)
        yy = y[start : start + _CHUNK]
        true = q[np.arange(len(q)), yy]
        total += float(np.sum((q * q).sum(axis=1) - 2.0 * true + 1.0))
    return total / x.shape[0]


def _sigmoid(s: np.ndarray) -> np.ndarray:
    s = s.astype(np.float64)
    return np.exp(-np.logaddexp(0.0, -s))


def nll(probs: Any, labels: Any, *, from_logits: bool = False) -> float:
    """Mean negative log-likelihood (log loss, natural log) of the labels.

    From probabilities: -log q_y. A true-class probability of exactly 0 gives ``inf`` and a
    :class:`CalibkitWarning` counting such rows (nothing is clipped). From logits
    (``from_logits=True``) the log-probability is taken in log space (log-softmax, or
    softplus for 1-D binary scores), so 1e-30 is not rounded to 0.

    Examples
    --------
    The uniform four-class model scores log 4.

    >>> import calibkit as ck, math
    >>> math.isclose(ck.nll([[0.25] * 4] * 4, [0, 1, 2, 3]), math.log(4))
    True
    >>> round(ck.nll([[-69.0, 0.0]], [0], from_logits=True), 6)  # q_y ~ 1e-30, log-space
    69.0
    """
    where = "nll"
    x, y = _binary_or_multiclass(probs, labels, from_logits=from_logits, where=where)
    return nll_of(x, y, from_logits=from_logits, where=where, stacklevel=3)


def nll_of(
    x: np.ndarray, y: np.ndarray, *, from_logits: bool = False, where: str, stacklevel: int = 2
) -> float:
    """:func:`nll` of checked arrays (what an engine holds after preparing its input)."""
    if from_logits:
        if x.ndim == 1:  # softplus(-y± s)
            signed = np.where(y == 1, 1.0, -1.0) * x.astype(np.float64)
            return float(np.mean(np.logaddexp(0.0, -signed)))
        total = 0.0
        for start in range(0, x.shape[0], _CHUNK):
            z = x[start : start + _CHUNK].astype(np.float64)
            z -= z.max(axis=1, keepdims=True)
            lse = np.log(np.exp(z).sum(axis=1))
            total += float(np.sum(lse - z[np.arange(len(z)), y[start : start + _CHUNK]]))
        return total / x.shape[0]
    if x.ndim == 1:
        p = x.astype(np.float64, copy=False)
        true = np.where(y == 1, p, 1.0 - p)
    else:
        true = x[np.arange(x.shape[0]), y].astype(np.float64)
    zeros = int(np.count_nonzero(true == 0.0))
    if zeros:
        _warn_infinite(where, zeros, int(np.argmax(true == 0.0)), stacklevel + 1)
        return float("inf")
    return float(-np.mean(np.log(true)))


def _warn_infinite(where: str, zeros: int, first: int, stacklevel: int) -> None:
    warnings.warn(
        f"{where}: {zeros} {'row gives' if zeros == 1 else 'rows give'} the true class "
        f"probability exactly 0 (first at index {first}), so the log loss is infinite. "
        "A wrong forecast of exactly 0 or 1 is infinitely surprising; if the model gave "
        "logits, pass them with from_logits=True to keep tiny probabilities in log space.",
        CalibkitWarning,
        stacklevel=stacklevel,
    )


def score_sums(
    p: np.ndarray,
    scores: np.ndarray,
    y: np.ndarray,
    *,
    from_logits: bool,
    where: str,
    stacklevel: int = 2,
) -> tuple[float, float]:
    """The Brier and log-loss sums of checked arrays: ``p`` the probabilities, ``scores`` the
    input as given (logits with ``from_logits``). Binary probabilities of a large input take
    one pass of the numba kernel; the others, and the reference, :func:`brier_of` and
    :func:`nll_of` times N."""
    n = p.shape[0]
    if p.ndim == 1 and not from_logits and _kernels.use_numba(n):
        brier, loss, zeros, first = _kernels.binary_scores(p, y)
        if zeros:
            _warn_infinite(where, zeros, first, stacklevel + 1)
            return brier, float("inf")
        return brier, loss
    x = scores if from_logits else p
    nll = nll_of(x, y, from_logits=from_logits, where=where, stacklevel=stacklevel + 1)
    return brier_of(p, y) * n, nll * n


def accuracy(probs: Any, labels: Any, *, from_logits: bool = False) -> float:
    """Share of correct predictions: argmax for (N, C) input (ties to the first class);
    p >= 0.5 (score >= 0 for logits) predicts 1 for 1-D input.

    Examples
    --------
    >>> import calibkit as ck
    >>> ck.accuracy([0.9, 0.5, 0.2], [1, 0, 0])
    0.6666666666666666
    """
    x, y = _binary_or_multiclass(probs, labels, from_logits=from_logits, where="accuracy")
    if x.ndim == 1:
        pred = x >= (0.0 if from_logits else 0.5)
        return float(np.mean(pred == (y == 1)))
    return float(np.mean(x.argmax(axis=1) == y))


@dataclass(frozen=True)
class BrierDecomposition:
    """The Brier score of a binary forecast, split two ways over the same bins.

    ``brier = calibration + refinement`` (DeGroot and Fienberg 1983) and
    ``brier = reliability - resolution + uncertainty`` (Murphy 1973). Both are exact when every
    forecast in a bin is the same; otherwise ``within_bin`` (the within-bin variance of the
    forecasts minus twice their within-bin covariance with the outcome) makes them add up
    exactly: ``brier = calibration + refinement + within_bin``.
    """

    brier: float
    reliability: float
    resolution: float
    uncertainty: float
    refinement: float
    within_bin: float
    n: int
    n_bins: int

    @property
    def calibration(self) -> float:
        """The calibration term of calibration + refinement (= Murphy's reliability)."""
        return self.reliability

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "calibration": self.calibration}

    def __str__(self) -> str:
        return (
            f"Brier {self.brier:.4f} = calibration {self.reliability:.4f} + refinement "
            f"{self.refinement:.4f} + within-bin {self.within_bin:+.4f}\n"
            f"      = reliability {self.reliability:.4f} - resolution {self.resolution:.4f} + "
            f"uncertainty {self.uncertainty:.4f} + within-bin {self.within_bin:+.4f}"
        )


def decompose_stats(stats: BinStats) -> BrierDecomposition:
    """The decompositions from binned statistics (one pass over the data already done)."""
    n = stats.n
    nz = stats.count > 0
    cnt = stats.count[nz].astype(np.float64)
    conf = stats.sum_conf[nz] / cnt
    acc = stats.sum_outcome[nz] / cnt
    base = stats.sum_outcome.sum() / n
    total_sq = (
        stats.sum_conf_sq.sum() - 2.0 * stats.sum_conf_outcome.sum() + stats.sum_outcome.sum()
    )
    spread = stats.sum_conf_sq[nz] - cnt * conf * conf
    covariance = stats.sum_conf_outcome[nz] - cnt * conf * acc
    return BrierDecomposition(
        brier=float(total_sq / n),
        reliability=float(np.sum(cnt * (conf - acc) ** 2) / n),
        resolution=float(np.sum(cnt * (acc - base) ** 2) / n),
        uncertainty=float(base * (1.0 - base)),
        refinement=float(np.sum(cnt * acc * (1.0 - acc)) / n),
        within_bin=float(np.sum(spread - 2.0 * covariance) / n),
        n=n,
        n_bins=stats.n_bins,
    )


def brier_decomposition(
    confidence: Any,
    outcome: Any,
    *,
    n_bins: int = 15,
    strategy: str = "uniform",
    closed: str = "right",
    edges: Any = None,
) -> BrierDecomposition:
    """Calibration + refinement (DeGroot and Fienberg 1983) and reliability - resolution +
    uncertainty (Murphy 1973) of a binary forecast's Brier score, with the within-bin remainder.

    Examples
    --------
    One bin whose forecasts all equal 0.8, right 3 times in 5: calibration (0.8 - 0.6)^2 = 0.04,
    refinement 0.6 * 0.4 = 0.24, and nothing left within the bin.

    >>> import calibkit as ck
    >>> d = ck.brier_decomposition([0.8] * 5, [1, 1, 1, 0, 0], n_bins=1)
    >>> round(d.brier, 10), round(d.calibration, 10), round(d.refinement, 10)
    (0.28, 0.04, 0.24)
    >>> abs(d.within_bin) < 1e-12
    True
    """
    stats, _ = binned(
        confidence,
        outcome,
        n_bins=n_bins,
        strategy=strategy,
        closed=closed,
        edges=edges,
        where="brier_decomposition",
    )
    return decompose_stats(stats)
