"""Binned calibration errors: ECE (L1), RMSCE (L2), MCE (max), class-wise ECE, and the debiased
squared calibration error of Kumar, Liang and Ma (2019)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _validate as v
from ..forecasts import classwise
from .bins import BinStats
from .reliability import binned

__all__ = ["classwise_ece", "debiased_squared_ce", "ece", "ece_from_stats"]

NORMS = ("l1", "l2", "max")


def ece_from_stats(stats: BinStats, *, norm: str = "l1") -> float:
    """Calibration error of binned statistics.

    ``l1``: sum_b (n_b / N) |acc_b - conf_b| (ECE); ``l2``: the square root of
    sum_b (n_b / N) (acc_b - conf_b)^2 (RMSCE); ``max``: max over non-empty bins of
    |acc_b - conf_b| (MCE). Empty bins contribute nothing.
    """
    norm = v.choice(norm, name="norm", allowed=NORMS, where="ece")
    nz = stats.count > 0
    diff = stats.sum_outcome[nz] - stats.sum_conf[nz]  # n_b * (acc_b - conf_b)
    if norm == "l1":
        return float(np.abs(diff).sum() / stats.n)
    gap = diff / stats.count[nz]
    if norm == "l2":
        return float(np.sqrt((diff * gap).sum() / stats.n))
    return float(np.abs(gap).max())


def ece(
    confidence: Any,
    outcome: Any,
    *,
    n_bins: int = 15,
    strategy: str = "uniform",
    closed: str = "right",
    norm: str = "l1",
    edges: Any = None,
) -> float:
    """Expected calibration error of (confidence, outcome) pairs.

    ``norm="l1"`` is ECE (Naeini et al. 2015), ``"l2"`` the root-mean-square calibration error,
    ``"max"`` the maximum calibration error (MCE). Report it with N and M: it depends on both.

    Examples
    --------
    Ten predictions: 0.12 with two bins, 0.04 with one.

    >>> import calibkit as ck
    >>> conf = [0.3, 0.4, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.9, 0.9]
    >>> hit = [1, 0, 1, 0, 1, 1, 0, 1, 0, 1]
    >>> round(ck.ece(conf, hit, n_bins=2), 4), round(ck.ece(conf, hit, n_bins=1), 4)
    (0.12, 0.04)
    """
    stats, _ = binned(
        confidence,
        outcome,
        n_bins=n_bins,
        strategy=strategy,
        closed=closed,
        edges=edges,
        where="ece",
    )
    return ece_from_stats(stats, norm=norm)


def classwise_ece(
    probs: Any,
    labels: Any,
    *,
    n_bins: int = 15,
    strategy: str = "uniform",
    closed: str = "right",
    norm: str = "l1",
    from_logits: bool = False,
) -> float:
    """Class-wise ECE: the mean over classes k of the ECE of the forecast P(class k) for the
    event label == k (Kull et al. 2019).

    Examples
    --------
    >>> import calibkit as ck
    >>> round(ck.classwise_ece([[0.8, 0.2], [0.3, 0.7]], [0, 0], n_bins=1), 4)
    0.45
    """
    errors = [
        ece(f.confidence, f.outcome, n_bins=n_bins, strategy=strategy, closed=closed, norm=norm)
        for f in classwise(probs, labels, from_logits=from_logits)
    ]
    return float(np.mean(errors))


def debiased_squared_ce_from_stats(stats: BinStats) -> float:
    """Debiased estimate of the squared (L2) calibration error from binned statistics."""
    nz = stats.count > 1
    n_b = stats.count[nz]
    acc = stats.sum_outcome[nz] / n_b
    gap_sq = ((stats.sum_outcome[nz] - stats.sum_conf[nz]) / n_b) ** 2
    return float(np.sum(n_b * (gap_sq - acc * (1.0 - acc) / (n_b - 1))) / stats.n)


def debiased_squared_ce(
    confidence: Any,
    outcome: Any,
    *,
    n_bins: int = 15,
    strategy: str = "quantile",
    closed: str = "right",
    edges: Any = None,
) -> float:
    """Debiased squared calibration error (Kumar, Liang and Ma 2019).

    The plug-in sum_b (n_b / N) (acc_b - conf_b)^2 is biased upward by the sampling variance of
    acc_b; this subtracts its unbiased estimate acc_b (1 - acc_b) / (n_b - 1) per bin (bins with
    a single forecast contribute 0). The result can be slightly negative for a well-calibrated
    forecaster; ``sqrt(max(x, 0))`` is the debiased L2 calibration error. Equal-mass bins are
    the default, as in the paper.

    Examples
    --------
    Two bins of two forecasts, each right once: the plug-in estimate is (0.5 - 0.25)^2 = 0.0625
    and the correction subtracts 0.5 * 0.5 / (2 - 1) = 0.25 in each bin.

    >>> import calibkit as ck
    >>> ck.debiased_squared_ce([0.25, 0.25, 0.75, 0.75], [1, 0, 1, 0], edges=[0, 0.5, 1])
    -0.1875
    """
    stats, _ = binned(
        confidence,
        outcome,
        n_bins=n_bins,
        strategy=strategy,
        closed=closed,
        edges=edges,
        where="debiased_squared_ce",
    )
    return debiased_squared_ce_from_stats(stats)
