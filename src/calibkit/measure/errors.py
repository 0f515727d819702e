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
    |acc_b - conf_b| (MCE). Empty bins contribute nothing. With weighted statistics n_b is the
    bin's weight and N the total weight (:attr:`BinStats.mass`); a bin whose rows all weigh 0 is
    empty.
    """
    norm = v.choice(norm, name="norm", allowed=NORMS, where="ece")
    mass = stats.mass
    nz = mass > 0
    diff = stats.sum_outcome[nz] - stats.sum_conf[nz]  # n_b * (acc_b - conf_b)
    if norm == "l1":
        return float(np.abs(diff).sum() / stats.total_mass)
    gap = diff / mass[nz]
    if norm == "l2":
        return float(np.sqrt((diff * gap).sum() / stats.total_mass))
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
    sample_weight: Any = None,
) -> float:
    """Expected calibration error of (confidence, outcome) pairs.

    ``norm="l1"`` is ECE (Naeini et al. 2015), ``"l2"`` the root-mean-square calibration error,
    ``"max"`` the maximum calibration error (MCE). Report it with N and M: it depends on both.
    With ``sample_weight``, each bin's gap is the gap of weighted means and bins count by their
    weight (quantile bins hold equal weight): integer weights give the ECE of the rows repeated
    that many times.

    Examples
    --------
    Ten predictions: 0.12 with two bins, 0.04 with one.

    >>> import calibkit as ck
    >>> conf = [0.3, 0.4, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.9, 0.9]
    >>> hit = [1, 0, 1, 0, 1, 1, 0, 1, 0, 1]
    >>> round(ck.ece(conf, hit, n_bins=2), 4), round(ck.ece(conf, hit, n_bins=1), 4)
    (0.12, 0.04)

    Rows at 0.75 weighing three times those at 0.25: the bins' gaps, 0 (one event in four at
    0.25) and 0.25 (four events in four at 0.75), count 4 : 12, so ECE = 12 / 16 * 0.25.

    >>> y = [0, 0, 0, 1, 1, 1, 1, 1]
    >>> p = [0.25] * 4 + [0.75] * 4
    >>> ck.ece(p, y, n_bins=5, sample_weight=[1, 1, 1, 1, 3, 3, 3, 3])
    0.1875
    """
    stats, _ = binned(
        confidence,
        outcome,
        n_bins=n_bins,
        strategy=strategy,
        closed=closed,
        edges=edges,
        where="ece",
        sample_weight=sample_weight,
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
    sample_weight: Any = None,
) -> float:
    """Class-wise ECE: the mean over classes k of the ECE of the forecast P(class k) for the
    event label == k (Kull et al. 2019); ``sample_weight`` weighs the rows in every class's
    ECE (:func:`ece`).

    Examples
    --------
    >>> import calibkit as ck
    >>> round(ck.classwise_ece([[0.8, 0.2], [0.3, 0.7]], [0, 0], n_bins=1), 4)
    0.45
    """
    forecasts = list(classwise(probs, labels, from_logits=from_logits))
    w = v.sample_weight(sample_weight, n=forecasts[0].confidence.shape[0], where="classwise_ece")
    errors = [
        ece(
            f.confidence,
            f.outcome,
            n_bins=n_bins,
            strategy=strategy,
            closed=closed,
            norm=norm,
            sample_weight=w,
        )
        for f in forecasts
    ]
    return float(np.mean(errors))


def debiased_squared_ce_from_stats(stats: BinStats) -> float:
    """Debiased estimate of the squared (L2) calibration error from binned statistics (weighted
    statistics: see :func:`debiased_squared_ce`)."""
    if stats.weighted:
        return _debiased_weighted(stats)
    nz = stats.count > 1
    n_b = stats.count[nz]
    acc = stats.sum_outcome[nz] / n_b
    gap_sq = ((stats.sum_outcome[nz] - stats.sum_conf[nz]) / n_b) ** 2
    return float(np.sum(n_b * (gap_sq - acc * (1.0 - acc) / (n_b - 1))) / stats.n)


def _debiased_weighted(stats: BinStats) -> float:
    """sum_b (W_b / W) (G_b^2 - A_b (1 - A_b) / (n_eff_b - 1)) over bins with n_eff_b > 1."""
    n_eff = stats.effective_count
    nz = n_eff > 1.0
    mass = stats.mass[nz]
    acc = stats.sum_outcome[nz] / mass
    gap_sq = ((stats.sum_outcome[nz] - stats.sum_conf[nz]) / mass) ** 2
    return float(np.sum(mass * (gap_sq - acc * (1.0 - acc) / (n_eff[nz] - 1.0))) / stats.total_mass)


def debiased_squared_ce(
    confidence: Any,
    outcome: Any,
    *,
    n_bins: int = 15,
    strategy: str = "quantile",
    closed: str = "right",
    edges: Any = None,
    sample_weight: Any = None,
) -> float:
    """Debiased squared calibration error (Kumar, Liang and Ma 2019).

    The plug-in sum_b (n_b / N) (acc_b - conf_b)^2 is biased upward by the sampling variance of
    acc_b; this subtracts its unbiased estimate acc_b (1 - acc_b) / (n_b - 1) per bin (bins with
    a single forecast contribute 0). The result can be slightly negative for a well-calibrated
    forecaster; ``sqrt(max(x, 0))`` is the debiased L2 calibration error. Equal-mass bins are
    the default, as in the paper.

    With ``sample_weight`` w, a bin's gap G is the gap of weighted means and its weighted
    accuracy A = sum w y / W (W = sum w). If the bin's outcomes are independent with a common
    rate mu, Var(G) = mu (1 - mu) sum w^2 / W^2 = mu (1 - mu) / n_eff, with Kish's
    n_eff = W^2 / sum w^2, and E[A (1 - A)] = mu (1 - mu) (1 - 1 / n_eff); so
    A (1 - A) / (n_eff - 1) is the unbiased estimate of Var(G), and it is subtracted (bins with
    n_eff <= 1, a single row of positive weight, contribute 0); bins count by their weight.
    Equal weights give the unweighted value. The rows are taken as independent draws, each
    with its weight (sampling or importance weights): integer weights therefore do not give
    the value of the rows repeated, whose copies would count as independent outcomes.

    Examples
    --------
    Two bins of two forecasts, each right once: the plug-in estimate is (0.5 - 0.25)^2 = 0.0625
    and the correction subtracts 0.5 * 0.5 / (2 - 1) = 0.25 in each bin.

    >>> import calibkit as ck
    >>> ck.debiased_squared_ce([0.25, 0.25, 0.75, 0.75], [1, 0, 1, 0], edges=[0, 0.5, 1])
    -0.1875

    Weights 1 and 3 in each bin: A = 0.25 and 0.75 match the forecasts (G = 0) and
    n_eff = 4^2 / 10 = 1.6, so each bin gives 0 - 0.25 * 0.75 / 0.6 = -0.3125.

    >>> p, y, w = [0.25, 0.25, 0.75, 0.75], [1, 0, 1, 0], [1, 3, 3, 1]
    >>> round(ck.debiased_squared_ce(p, y, edges=[0, 0.5, 1], sample_weight=w), 10)
    -0.3125
    """
    stats, _ = binned(
        confidence,
        outcome,
        n_bins=n_bins,
        strategy=strategy,
        closed=closed,
        edges=edges,
        where="debiased_squared_ce",
        sample_weight=sample_weight,
    )
    return debiased_squared_ce_from_stats(stats)
