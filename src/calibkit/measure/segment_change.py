"""Is a segment of the rows calibrated worse than the other rows? A one-sided test of the ECE
difference that conditions the shared calibration out.

The monitor's no-change band (:func:`calibkit.measure.change.ece_change_band`) compares two
cohorts measured apart: each keeps its counts and confidences, both get the pooled per-bin gap,
and each bin's sum is drawn from its normal limit. A segment and the rest of the same rows
allow an exact-in-spirit alternative: within a bin, once the number of events among all its
rows is known, the events of the segment's rows no longer depend on the bin's calibration. If
the two sides share the bin's calibration (on the logit scale, a common shift of the log-odds
of every forecast), the segment's event count given the bin's total follows Fisher's
noncentral hypergeometric law, with the odds ratio of the two sides' mean confidences (1 when
they are equal: the central hypergeometric law of a random draw of the bin's rows). Drawing it
keeps every count whole, so small bins and forecasts near 0 or 1 (skewed sums, where a normal
limit puts too little weight in the tail) are simulated as they are, and no estimated gap is
plugged in.

Measured on calibrated data (N = 4,000, 10 equal-width bins, confidences uniform in [0.5, 1];
``benchmarks/check_segment_test.py``), segments of 150 and 400 rows are flagged at one-sided 1%
in 1.07% and 0.95% of 4,000 runs (5%: 5.30%, 4.83%), where the normal band of the monitor flags
1.38% and 1.18% (6.12%, 6.05%); docs/segments.md has the table.

Weighted statistics (sample weights) have no whole event counts to draw, so the weighted test
keeps the conditioning and replaces the noncentral hypergeometric law by its normal limit
(:data:`WEIGHTED_SEGMENT_TEST`): within a bin, both sides get the pooled weighted gap g, each
side's weighted outcome sum S has mean sum w (p + g) and variance V = (weighted mean of
(p + g)(1 - p - g)) * sum w^2 (Kish's effective size at work: uneven weights raise the
variance), and the segment's sum is drawn given the bin's observed total T, normal with mean
sum_seg w (p + g) and variance V_seg V_rest / (V_seg + V_rest); the rest gets T less it.
Its false-alarm rate on calibrated data with lognormal weights is measured by
``benchmarks/check_weighted_segment_test.py`` (docs/weights.md has the rates).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .bins import BinStats
from .errors import ece_from_stats

__all__ = ["SegmentChange", "segment_change"]

#: Event rates are kept this far inside (0, 1) for their odds (a rate of 0 or 1 has none).
RATE_MARGIN = 1e-9

#: How :func:`segment_change` draws a weighted segment's outcome sums.
WEIGHTED_SEGMENT_TEST = (
    "weighted: per bin, the segment's weighted outcome sum drawn given the bin's observed "
    "total, normal with mean sum w (p + g) at the pooled weighted gap g and variance "
    "V_seg V_rest / (V_seg + V_rest), V = (weighted mean of (p + g)(1 - p - g)) * sum w^2"
)


@dataclass(frozen=True)
class SegmentChange:
    """The ECE of a segment minus the ECE of the rest of the rows (``change``), the largest
    change that a segment calibrated as the rest reaches in all but ``alpha`` of the
    simulations (``threshold``), and the one-sided Monte Carlo ``p_value`` (the observed
    change counted as one of the draws)."""

    change: float
    threshold: float
    p_value: float
    alpha: float
    n_sims: int

    @property
    def worse(self) -> bool:
        """The segment is calibrated worse than the rest at one-sided ``alpha``."""
        return bool(self.p_value <= self.alpha)

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "worse": self.worse}


def segment_change(
    segment: BinStats,
    rest: BinStats,
    *,
    alpha: float = 0.05,
    n_sims: int = 2000,
    seed: int = 0,
) -> SegmentChange:
    """One-sided test that ``segment`` is calibrated worse (a larger ECE) than ``rest``, the
    other rows of the same data, over the same bins (see the module docstring). The
    statistics must hold 0/1 outcomes (their event sums whole numbers); weighted statistics
    (both sides weighted) are drawn by :data:`WEIGHTED_SEGMENT_TEST`.

    Examples
    --------
    Two bins; the segment's forecasts of 0.8 come true 10 times in 40, the rest's 240 in 300:

    >>> import numpy as np
    >>> from calibkit.measure.bins import BinStats
    >>> edges = [0.0, 0.5, 1.0]
    >>> seg = BinStats.from_forecasts(np.full(40, 0.8), np.arange(40) < 10, edges=edges)
    >>> rest = BinStats.from_forecasts(np.full(300, 0.8), np.arange(300) < 240, edges=edges)
    >>> test = segment_change(seg, rest, n_sims=500)
    >>> round(test.change, 4), test.worse, bool(test.p_value < 0.01)
    (0.55, True, True)
    """
    from scipy.stats import nchypergeom_fisher

    rng = np.random.default_rng(seed)
    change = ece_from_stats(segment) - ece_from_stats(rest)
    if segment.weighted or rest.weighted:
        null = _weighted_null(segment, rest, n_sims, rng)
        beyond = np.count_nonzero(null >= change - 1e-12)
        threshold = float(np.quantile(null, 1.0 - alpha))
        return SegmentChange(change, threshold, float((beyond + 1) / (n_sims + 1)), alpha, n_sims)
    n_seg, n_rest = segment.count, rest.count
    total = n_seg + n_rest
    events = np.rint(segment.sum_outcome + rest.sum_outcome).astype(np.int64)
    seg_events = np.zeros((n_sims, total.size))
    for b in np.flatnonzero(total):
        if n_seg[b] == 0 or events[b] == 0:
            continue  # the segment has none of the bin's events
        if n_rest[b] == 0 or events[b] == total[b]:
            seg_events[:, b] = min(int(events[b]), int(n_seg[b]))
            continue
        gap = (events[b] - segment.sum_conf[b] - rest.sum_conf[b]) / total[b]
        odds = _odds_ratio(segment.sum_conf[b] / n_seg[b] + gap, rest.sum_conf[b] / n_rest[b] + gap)
        seg_events[:, b] = nchypergeom_fisher.rvs(
            int(total[b]), int(n_seg[b]), int(events[b]), odds, size=n_sims, random_state=rng
        )
    seg_sum = seg_events - segment.sum_conf
    rest_sum = (events - seg_events) - rest.sum_conf
    null = np.abs(seg_sum).sum(axis=1) / segment.n - np.abs(rest_sum).sum(axis=1) / rest.n
    # the observed configuration is among the draws: a tie with it (up to rounding) counts
    beyond = np.count_nonzero(null >= change - 1e-12)
    threshold = float(np.quantile(null, 1.0 - alpha))
    return SegmentChange(change, threshold, float((beyond + 1) / (n_sims + 1)), alpha, n_sims)


def _weighted_null(
    segment: BinStats, rest: BinStats, n_sims: int, rng: np.random.Generator
) -> np.ndarray:
    """ECE(segment) - ECE(rest) of ``n_sims`` draws of :data:`WEIGHTED_SEGMENT_TEST`."""
    w_seg, w_rest = segment.mass, rest.mass
    w_all = w_seg + w_rest
    total = segment.sum_outcome + rest.sum_outcome  # the bin's observed weighted event sum
    has = w_all > 0
    safe = np.where(has, w_all, 1.0)
    gap = np.where(has, (total - segment.sum_conf - rest.sum_conf) / safe, 0.0)

    def variance(stats: BinStats) -> np.ndarray:
        mass = stats.mass
        m = np.where(mass > 0, mass, 1.0)
        conf, conf_sq = stats.sum_conf / m, stats.sum_conf_sq / m
        # weighted mean of (p + g)(1 - p - g) = E[p] - E[p^2] + g (1 - 2 E[p]) - g^2
        mean_var = conf - conf_sq + gap * (1.0 - 2.0 * conf) - gap**2
        return np.where(mass > 0, np.maximum(mean_var, 0.0) * stats.mass_sq, 0.0)

    v_seg, v_rest = variance(segment), variance(rest)
    v_all = v_seg + v_rest
    sd = np.sqrt(np.where(v_all > 0, v_seg * v_rest / np.where(v_all > 0, v_all, 1.0), 0.0))
    mean = segment.sum_conf + gap * w_seg
    seg_sum = mean + rng.standard_normal((n_sims, w_seg.size)) * sd
    seg_gap = seg_sum - segment.sum_conf
    rest_gap = (total - seg_sum) - rest.sum_conf
    return (
        np.abs(seg_gap).sum(axis=1) / segment.total_mass
        - np.abs(rest_gap).sum(axis=1) / rest.total_mass
    )


def _odds_ratio(q_seg: float, q_rest: float) -> float:
    """The odds of the segment's event rate over the rest's (1 when they are equal), each rate
    kept inside (0, 1)."""
    if q_seg == q_rest:
        return 1.0
    eps = RATE_MARGIN
    q_seg, q_rest = min(max(q_seg, eps), 1.0 - eps), min(max(q_rest, eps), 1.0 - eps)
    return (q_seg * (1.0 - q_rest)) / ((1.0 - q_seg) * q_rest)
