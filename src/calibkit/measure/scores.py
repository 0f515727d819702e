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


def brier(
    probs: Any, labels: Any, *, from_logits: bool = False, sample_weight: Any = None
) -> float:
    """Mean Brier score.

    1-D ``probs`` are P(label = 1) with labels in {0, 1}: mean (p - y)^2, from 0 to 1. 2-D (N, C)
    ``probs``: mean over rows of sum_c (q_c - [y = c])^2, from 0 to 2 (Brier 1950);
    for C = 2 this is twice the binary score. With ``sample_weight`` the mean is weighted
    (sum w_i s_i / sum w_i), as scikit-learn's ``brier_score_loss``.

    Examples
    --------
    The input-blind uniform four-class model scores 0.75.

    >>> import calibkit as ck
    >>> ck.brier([[0.25] * 4] * 4, [0, 1, 2, 3])
    0.75
    >>> round(ck.brier([0.9, 0.4], [1, 1], sample_weight=[3, 1]), 10)  # (3 * 0.01 + 0.36) / 4
    0.0975
    """
    where = "brier"
    x, y = _binary_or_multiclass(probs, labels, from_logits=from_logits, where=where)
    w = v.sample_weight(sample_weight, n=x.shape[0], where=where)
    return brier_of(x, y, from_logits=from_logits, sample_weight=w)


def brier_of(
    x: np.ndarray,
    y: np.ndarray,
    *,
    from_logits: bool = False,
    sample_weight: np.ndarray | None = None,
) -> float:
    """:func:`brier` of checked arrays (what an engine holds after preparing its input);
    ``sample_weight`` checked too (:func:`calibkit._validate.sample_weight`)."""
    if sample_weight is not None:
        return _weighted_mean(_brier_rows, x, y, sample_weight, from_logits)
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


def _weighted_mean(
    rows: Any, x: np.ndarray, y: np.ndarray, w: np.ndarray, from_logits: bool
) -> float:
    """sum w_i s_i / sum w_i of the per-row scores ``rows(x, y, from_logits)``, in chunks;
    rows of weight 0 are left out (so an infinite score there does not count)."""
    keep = w > 0
    if not keep.all():
        x, y, w = x[keep], y[keep], w[keep]
    total = 0.0
    for start in range(0, x.shape[0], _CHUNK):
        end = start + _CHUNK
        total += float(np.dot(w[start:end], rows(x[start:end], y[start:end], from_logits)))
    return total / float(w.sum())


def _probabilities(x: np.ndarray, from_logits: bool) -> np.ndarray:
    """Float64 probabilities of a chunk: P(y = 1) for 1-D input, (N, C) rows for 2-D."""
    if not from_logits:
        return x.astype(np.float64)
    if x.ndim == 1:
        return _sigmoid(x)
    q = np.exp(x - x.max(axis=1, keepdims=True).astype(np.float64))
    return q / q.sum(axis=1, keepdims=True)


def _brier_rows(x: np.ndarray, y: np.ndarray, from_logits: bool) -> np.ndarray:
    """The Brier score of each row of a chunk."""
    q = _probabilities(x, from_logits)
    if q.ndim == 1:
        return (q - y) ** 2
    return (q * q).sum(axis=1) - 2.0 * q[np.arange(len(q)), y] + 1.0


def _nll_rows(x: np.ndarray, y: np.ndarray, from_logits: bool) -> np.ndarray:
    """The log loss of each row of a chunk (inf where the true class has probability 0)."""
    if from_logits:
        if x.ndim == 1:
            return np.logaddexp(0.0, -np.where(y == 1, 1.0, -1.0) * x.astype(np.float64))
        z = x.astype(np.float64)
        z -= z.max(axis=1, keepdims=True)
        return np.log(np.exp(z).sum(axis=1)) - z[np.arange(len(z)), y]
    true = _true_probability(x, y)
    with np.errstate(divide="ignore"):
        return -np.log(true)


def _true_probability(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.ndim == 1:
        p = x.astype(np.float64, copy=False)
        return np.where(y == 1, p, 1.0 - p)
    return x[np.arange(x.shape[0]), y].astype(np.float64)


def _sigmoid(s: np.ndarray) -> np.ndarray:
    s = s.astype(np.float64)
    return np.exp(-np.logaddexp(0.0, -s))


def nll(probs: Any, labels: Any, *, from_logits: bool = False, sample_weight: Any = None) -> float:
    """Mean negative log-likelihood (log loss, natural log) of the labels.

    From probabilities: -log q_y. A true-class probability of exactly 0 gives ``inf`` and a
    :class:`CalibkitWarning` counting such rows (nothing is clipped). From logits
    (``from_logits=True``) the log-probability is taken in log space (log-softmax, or
    softplus for 1-D binary scores), so 1e-30 is not rounded to 0. With ``sample_weight``
    the mean is weighted (sum w_i s_i / sum w_i, as scikit-learn's ``log_loss``); a row of
    weight 0 is left out, so its true-class probability of 0 does not make the loss infinite.

    Examples
    --------
    The uniform four-class model scores log 4.

    >>> import calibkit as ck, math
    >>> math.isclose(ck.nll([[0.25] * 4] * 4, [0, 1, 2, 3]), math.log(4))
    True
    >>> round(ck.nll([[-69.0, 0.0]], [0], from_logits=True), 6)  # q_y ~ 1e-30, log-space
    69.0
    >>> round(ck.nll([0.5, 1.0], [1, 0], sample_weight=[2, 0]), 6)  # log 2, the 2nd left out
    0.693147
    """
    where = "nll"
    x, y = _binary_or_multiclass(probs, labels, from_logits=from_logits, where=where)
    w = v.sample_weight(sample_weight, n=x.shape[0], where=where)
    return nll_of(x, y, from_logits=from_logits, where=where, stacklevel=3, sample_weight=w)


def nll_of(
    x: np.ndarray,
    y: np.ndarray,
    *,
    from_logits: bool = False,
    where: str,
    stacklevel: int = 2,
    sample_weight: np.ndarray | None = None,
) -> float:
    """:func:`nll` of checked arrays (what an engine holds after preparing its input);
    ``sample_weight`` checked too."""
    if sample_weight is not None:
        if not from_logits:
            true = _true_probability(x, y)
            impossible = (true == 0.0) & (sample_weight > 0)
            zeros = int(np.count_nonzero(impossible))
            if zeros:
                _warn_infinite(where, zeros, int(np.argmax(impossible)), stacklevel + 1)
                return float("inf")
        return _weighted_mean(_nll_rows, x, y, sample_weight, from_logits)
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
    sample_weight: np.ndarray | None = None,
) -> tuple[float, float]:
    """The Brier and log-loss sums of checked arrays: ``p`` the probabilities, ``scores`` the
    input as given (logits with ``from_logits``). Binary probabilities of a large input take
    one pass of the numba kernel; the others, and the reference, :func:`brier_of` and
    :func:`nll_of` times N. With (checked) ``sample_weight``: the weighted sums, sum w_i s_i
    (divide by sum w_i for the means)."""
    if sample_weight is not None:
        mass = float(sample_weight.sum())
        if mass == 0.0:  # a chunk of a stream whose rows all weigh 0: it adds nothing
            return 0.0, 0.0
        x = scores if from_logits else p
        loss = nll_of(
            x,
            y,
            from_logits=from_logits,
            where=where,
            stacklevel=stacklevel + 1,
            sample_weight=sample_weight,
        )
        return brier_of(p, y, sample_weight=sample_weight) * mass, loss * mass
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


def accuracy(
    probs: Any, labels: Any, *, from_logits: bool = False, sample_weight: Any = None
) -> float:
    """Share of correct predictions: argmax for (N, C) input (ties to the first class);
    p >= 0.5 (score >= 0 for logits) predicts 1 for 1-D input. With ``sample_weight``: the
    weighted share, sum of the weights of the correct rows over the sum of all weights.

    Examples
    --------
    >>> import calibkit as ck
    >>> ck.accuracy([0.9, 0.5, 0.2], [1, 0, 0])
    0.6666666666666666
    >>> ck.accuracy([0.9, 0.5, 0.2], [1, 0, 0], sample_weight=[1, 2, 1])
    0.5
    """
    where = "accuracy"
    x, y = _binary_or_multiclass(probs, labels, from_logits=from_logits, where=where)
    w = v.sample_weight(sample_weight, n=x.shape[0], where=where)
    if x.ndim == 1:
        correct = (x >= (0.0 if from_logits else 0.5)) == (y == 1)
    else:
        correct = x.argmax(axis=1) == y
    if w is not None:
        return float(np.dot(w, correct) / w.sum())
    return float(np.mean(correct))


@dataclass(frozen=True)
class BrierDecomposition:
    """The Brier score of a binary forecast, split two ways over the same bins.

    ``brier = calibration + refinement`` (DeGroot and Fienberg 1983) and
    ``brier = reliability - resolution + uncertainty`` (Murphy 1973). Both are exact when every
    forecast in a bin is the same; otherwise ``within_bin`` (the within-bin variance of the
    forecasts minus twice their within-bin covariance with the outcome) makes them add up
    exactly: ``brier = calibration + refinement + within_bin``.

    With sample weights every mean is weighted (each bin's by its weight, the terms by the
    bins' shares of the total weight) and the identities still hold; ``n`` counts the rows and
    ``weight`` is the sum of their weights (None when unweighted).
    """

    brier: float
    reliability: float
    resolution: float
    uncertainty: float
    refinement: float
    within_bin: float
    n: int
    n_bins: int
    weight: float | None = None

    @property
    def calibration(self) -> float:
        """The calibration term of calibration + refinement (= Murphy's reliability)."""
        return self.reliability

    def to_dict(self) -> dict[str, Any]:
        d = {**asdict(self), "calibration": self.calibration}
        if self.weight is None:  # unweighted: the dictionary it always was
            del d["weight"]
        return d

    def __str__(self) -> str:
        return (
            f"Brier {self.brier:.4f} = calibration {self.reliability:.4f} + refinement "
            f"{self.refinement:.4f} + within-bin {self.within_bin:+.4f}\n"
            f"      = reliability {self.reliability:.4f} - resolution {self.resolution:.4f} + "
            f"uncertainty {self.uncertainty:.4f} + within-bin {self.within_bin:+.4f}"
        )


def decompose_stats(stats: BinStats) -> BrierDecomposition:
    """The decompositions from binned statistics (one pass over the data already done;
    weighted sums give the weighted decompositions)."""
    n: float | int = stats.total_mass if stats.weighted else stats.n
    nz = stats.mass > 0
    cnt = stats.mass[nz]
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
        n=stats.n,
        n_bins=stats.n_bins,
        weight=stats.total_mass if stats.weighted else None,
    )


def brier_decomposition(
    confidence: Any,
    outcome: Any,
    *,
    n_bins: int = 15,
    strategy: str = "uniform",
    closed: str = "right",
    edges: Any = None,
    sample_weight: Any = None,
) -> BrierDecomposition:
    """Calibration + refinement (DeGroot and Fienberg 1983) and reliability - resolution +
    uncertainty (Murphy 1973) of a binary forecast's Brier score, with the within-bin remainder.

    With ``sample_weight`` the bins hold weighted sums and every term is a weighted mean
    (integer weights give the numbers of the rows repeated that many times); quantile edges
    are still the quantiles of the forecasts as rows, unweighted.

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

    Weighted, the two wrong rows count twice: right 3 times in 7.

    >>> d = ck.brier_decomposition([0.8] * 5, [1, 1, 1, 0, 0], n_bins=1,
    ...                            sample_weight=[1, 1, 1, 2, 2])
    >>> round(d.uncertainty, 10) == round(3 / 7 * 4 / 7, 10), d.n, d.weight
    (True, 5, 7.0)
    """
    stats, _ = binned(
        confidence,
        outcome,
        n_bins=n_bins,
        strategy=strategy,
        closed=closed,
        edges=edges,
        where="brier_decomposition",
        sample_weight=sample_weight,
    )
    return decompose_stats(stats)
