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
    statistics must hold 0/1 outcomes (their event sums whole numbers).

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


def _odds_ratio(q_seg: float, q_rest: float) -> float:
    """The odds of the segment's event rate over the rest's (1 when they are equal), each rate
    kept inside (0, 1)."""
    if q_seg == q_rest:
        return 1.0
    eps = RATE_MARGIN
    q_seg, q_rest = min(max(q_seg, eps), 1.0 - eps), min(max(q_rest, eps), 1.0 - eps)
    return (q_seg * (1.0 - q_rest)) / ((1.0 - q_seg) * q_rest)
