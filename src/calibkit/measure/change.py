"""Has calibration moved between two cohorts? The no-change band of the ECE difference over
the same bins: the changes seen in simulations where both cohorts keep their counts and
confidences and share one per-bin gap (used by record comparison and by the monitor)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import ece_from_stats

__all__ = ["ChangeBand", "ece_change_band", "per_test_level"]


@dataclass(frozen=True)
class ChangeBand:
    """The change of ECE between two cohorts over the same bins, beside the band of changes
    seen when calibration did not move (``level`` central range of ``n_sims`` simulations)."""

    change: float
    low: float
    high: float
    p_value: float
    moved: bool


def per_test_level(level: float, k: int) -> float:
    """The level of each of ``k`` tests that keeps the family-wise level ``level``
    (Bonferroni): ``1 - (1 - level) / k``, so that when nothing is wrong the chance of any flag
    is at most ``1 - level``. Used by the monitor (groups compared with the reference) and by
    the grouped audit (groups against their own noise floors).

    Examples
    --------
    >>> round(per_test_level(0.95, 5), 6)
    0.99
    >>> per_test_level(0.95, 1)
    0.95
    """
    return 1.0 - (1.0 - level) / max(int(k), 1)


def ece_change_band(
    old: Any, new: Any, *, level: float = 0.95, n_sims: int = 2000, seed: int = 0
) -> ChangeBand:
    """Whether ECE moved from the :class:`~calibkit.BinStats` ``old`` to ``new`` beyond the
    noise of two cohorts of these sizes and confidences whose calibration is the same (the
    test of :func:`compare_records` and of the monitor).

    Weighted statistics: the ECEs are weighted, the pooled gap is the weighted one, and each
    bin's sum of w (y - p) is drawn with variance sum w^2 times the bin's weighted mean of
    (p + g)(1 - p - g): the bin counts as its Kish effective count (sum w)^2 / sum w^2 of
    rows of equal weight. With weights that all equal one this is the unweighted band; with
    uneven weights it is wider than the band of rows repeated by their weights (a weighted
    row is one observation, not w independent ones), so a flag keeps its level. Its coverage
    under no change is tested by simulation.
    """
    change = float(ece_from_stats(new)) - float(ece_from_stats(old))
    null = _null_changes(old, new, n_sims, np.random.default_rng(seed))
    alpha = 1.0 - level
    low, high = (float(q) for q in np.quantile(null, [alpha / 2, 1 - alpha / 2]))
    # two-sided Monte Carlo p-value, counting the observed change as one of the draws
    tail = min(np.count_nonzero(null >= change), np.count_nonzero(null <= change))
    p_value = min(1.0, 2.0 * (tail + 1) / (n_sims + 1))
    return ChangeBand(change, low, high, p_value, bool(change < low or change > high))


def _null_changes(s_old: Any, s_new: Any, n_sims: int, rng: np.random.Generator) -> np.ndarray:
    """ECE(new) - ECE(old) when calibration did not move: each record keeps its counts and
    confidences, both get the pooled per-bin gap g, and each bin's sum of (y - p) is drawn from
    its normal limit, mean g n, variance sum (p + g)(1 - p - g); weighted, n is the bin's
    weight and the variance sum w^2 times the mean of (p + g)(1 - p - g) (see
    :func:`ece_change_band`)."""
    n_old = s_old.mass
    n_new = s_new.mass
    total = n_old + n_new
    residual = s_old.sum_outcome + s_new.sum_outcome - s_old.sum_conf - s_new.sum_conf
    gap = np.where(total > 0, residual / np.maximum(total, 1.0), 0.0)

    def simulated_ece(stats: Any, n: np.ndarray) -> np.ndarray:
        var = (stats.sum_conf - stats.sum_conf_sq) + gap * (n - 2.0 * stats.sum_conf) - n * gap**2
        if stats.weighted:  # n mean(...) times sum w^2 / sum w: per Kish effective row
            var = var * np.divide(stats.mass_sq, n, out=np.zeros_like(n), where=n > 0)
        sd = np.sqrt(np.maximum(var, 0.0))
        sums = gap * n + rng.standard_normal((n_sims, n.size)) * sd
        return np.abs(sums).sum(axis=1) / n.sum()

    return simulated_ece(s_new, n_new) - simulated_ece(s_old, n_old)
