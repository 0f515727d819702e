"""The coverage at a target risk, with a percentile bootstrap interval: the largest share of the
rows that can be acted on while the selective risk stays at most the target (read off the
risk-coverage curve as :meth:`RiskCoverage.coverage_at` does)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ._format import threshold_text
from .coverage import RiskCoverage, curve
from .operating import (
    _none_if_not_finite,
    bootstrap_settings,
    checked_rows,
    curve_counts,
    row_counts,
    target,
)
from .weighted import weighted_bootstrap_coverages

__all__ = [
    "BOOTSTRAP_METHOD",
    "CoverageAtRisk",
    "bootstrap_coverages",
    "coverage_at_risk",
    "coverage_at_risk_of",
]

#: How :func:`coverage_at_risk` resamples, as its results state it.
BOOTSTRAP_METHOD = "percentile bootstrap, the N rows resampled with replacement"
#: The same with sample weights.
WEIGHTED_BOOTSTRAP_METHOD = (
    "percentile bootstrap, the rows of positive weight resampled with replacement, each "
    "carrying its weight"
)

#: Bootstrap counts drawn at a time (resamples x curve cells), bounding the memory.
_BOOT_CELLS = 1 << 20


@dataclass(frozen=True)
class CoverageAtRisk:
    """The largest coverage whose selective risk is at most ``target_risk`` (0 when none is):
    act when confidence >= ``threshold`` (``inf``: act on nothing), ``n_acted`` of ``n``,
    ``errors`` of them wrong, selective ``risk`` (NaN when nothing is acted on). ``low`` and
    ``high`` bound the coverage at ``level`` by a percentile bootstrap of ``n_boot``
    resamples drawn from ``seed`` (``method``). With sample weights the coverage and risk
    are weighted, the counts raw, and ``weight_acted``, ``error_weight`` and ``weight`` the
    weighted counts (None when unweighted)."""

    target_risk: float
    coverage: float
    threshold: float
    n_acted: int
    errors: int
    n: int
    risk: float
    low: float
    high: float
    level: float
    n_boot: int
    seed: int
    method: str = BOOTSTRAP_METHOD
    weight_acted: float | None = None
    error_weight: float | None = None
    weight: float | None = None

    def to_dict(self) -> dict[str, Any]:
        d = _none_if_not_finite(asdict(self), "threshold", "risk")
        if self.weight is None:
            for key in ("weight_acted", "error_weight", "weight"):
                del d[key]
        return d

    def __str__(self) -> str:
        interval = (
            f"{self.level:.0%} bootstrap interval {self.low:.4f} to {self.high:.4f}, "
            f"{self.n_boot} resamples"
        )
        if self.n_acted == 0:
            return (
                f"coverage at risk <= {self.target_risk:g}: 0, no threshold reaches it ({interval})"
            )
        weighted = (
            ""
            if self.weight is None
            else f" (weight {self.weight_acted:.6g} of {self.weight:.6g}, "
            f"{self.error_weight:.6g} wrong)"
        )
        return (
            f"coverage at risk <= {self.target_risk:g}: {self.coverage:.4f} ({interval}); "
            f"threshold {threshold_text(self.threshold)}, {self.n_acted:,} of {self.n:,} acted "
            f"on, risk {self.risk:.4f} ({self.errors:,} wrong){weighted}"
        )


def bootstrap_coverages(
    acted: np.ndarray, wrong: np.ndarray, target_risk: float, n_boot: int, seed: int
) -> np.ndarray:
    """The coverage at ``target_risk`` in each of ``n_boot`` bootstrap resamples of the rows.

    A resample of the N rows with replacement draws, for each distinct confidence, how many
    right and how many wrong rows it holds: multinomial counts over those cells, with the
    cells' shares as probabilities (the same distribution as resampling indices, in
    O(n_boot x distinct confidences)). Each resample's curve is then read as
    :meth:`RiskCoverage.coverage_at` reads one.
    """
    n = int(acted[-1])
    gained = np.diff(wrong)
    cells = np.stack([np.diff(acted) - gained, gained], axis=1).ravel()  # right, wrong per step
    keep = np.flatnonzero(cells)  # without ties each step holds one non-empty cell
    p = cells[keep] / n
    last = np.flatnonzero(np.append(keep[1:] // 2 != keep[:-1] // 2, True))  # a step's last cell
    wrong_cells = np.flatnonzero(keep % 2 == 1)
    upto = np.searchsorted(wrong_cells, last, side="right")  # wrong cells up to each step
    rng = np.random.default_rng(seed)
    out = np.empty(n_boot)
    chunk = max(1, _BOOT_CELLS // keep.size)
    for start in range(0, n_boot, chunk):
        b = min(chunk, n_boot - start)
        draws = rng.multinomial(n, p, size=b)
        acted_b = np.cumsum(draws, axis=1)[:, last]
        wrong_b = np.zeros((b, wrong_cells.size + 1), dtype=np.int64)
        np.cumsum(draws[:, wrong_cells], axis=1, out=wrong_b[:, 1:])
        with np.errstate(invalid="ignore", divide="ignore"):
            ok = wrong_b[:, upto] / acted_b <= target_risk  # NaN (none acted on) is False
        out[start : start + b] = np.where(ok, acted_b, 0).max(axis=1) / n
    return out


def coverage_at_risk_of(
    rc: RiskCoverage,
    target_risk: float,
    *,
    level: float,
    n_boot: int,
    seed: int,
    rows: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> CoverageAtRisk:
    """:func:`coverage_at_risk` of a curve and checked settings; a weighted curve needs the
    ``rows`` it was computed from, (confidence, outcome, weight), for its bootstrap."""
    acted, wrong = curve_counts(rc)
    ok = np.flatnonzero(rc.risk[1:] <= target_risk)
    j = int(ok[-1]) + 1 if ok.size else 0  # coverage grows along the curve: the last one
    weighted: dict[str, Any] = {}
    if rows is None:
        boot = bootstrap_coverages(acted, wrong, target_risk, n_boot, seed)
    else:
        boot = weighted_bootstrap_coverages(*rows, target_risk, n_boot, seed)
        weighted = {
            "method": WEIGHTED_BOOTSTRAP_METHOD,
            "weight_acted": float(acted[j]),
            "error_weight": float(wrong[j]),
            "weight": float(rc.mass),
        }
        acted, wrong = row_counts(rc)
    alpha = 1.0 - level
    low, high = np.quantile(boot, [alpha / 2.0, 1.0 - alpha / 2.0])
    return CoverageAtRisk(
        target_risk=target_risk,
        coverage=float(rc.coverage[j]),
        threshold=float(rc.threshold[j]),
        n_acted=int(acted[j]),
        errors=int(wrong[j]),
        n=rc.n,
        risk=float(rc.risk[j]),
        low=float(low),
        high=float(high),
        level=level,
        n_boot=n_boot,
        seed=seed,
        **weighted,
    )


def coverage_at_risk(
    confidence: Any = None,
    outcome: Any = None,
    *,
    target_risk: float,
    level: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    probs: Any = None,
    labels: Any = None,
    from_logits: bool = False,
    sample_weight: Any = None,
) -> CoverageAtRisk:
    """The largest coverage whose selective risk is at most ``target_risk``, with a percentile
    bootstrap interval.

    The point is the one :meth:`RiskCoverage.coverage_at` reads (0, acting on nothing, when no
    threshold reaches the target). The interval resamples the N rows with replacement
    ``n_boot`` times (seeded: the same seed gives the same numbers) and takes the
    ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of the resamples' coverages at the
    target (:func:`bootstrap_coverages`). The largest coverage under a risk is a maximum over
    a noisy curve, so with few predictions acted on at the target the interval is rough: in
    seeded simulations (benchmarks/check_selective_intervals.py, 500 draws a setting) the 95%
    interval covered the population coverage at the target risk in 94% to 95% of draws with
    300 to 1,200 acted on, and in 90% with 100.

    With ``sample_weight``, the coverage and risk are weighted (with whole weights, those of
    the data with each row repeated w times) and the bootstrap draws the rows of positive
    weight with replacement, each drawn row carrying its weight, each resample's coverage its
    weight acted on over its own total weight; O(n_boot x N) instead of the unweighted
    O(n_boot x distinct confidences).

    Parameters
    ----------
    confidence, outcome : arrays of shape (N,)
        The confidence that each prediction is right, in [0, 1], and whether it was (0/1).
    target_risk : number in [0, 1]
    level : number in (0, 1)
    n_boot : int
        Bootstrap resamples; the time grows with n_boot times the distinct confidences.
    seed : int
    probs, labels, from_logits : keyword only
        Instead of ``confidence, outcome``, a model's class probabilities (or logits) and
        labels, as in :func:`~calibkit.decide.risk_coverage`.
    sample_weight : array of shape (N,), keyword only
        Finite, non-negative weights (see above).

    Examples
    --------
    Five predictions, the third and fifth wrong: the risk is at most 1/4 up to coverage 0.8
    (threshold 0.7, one wrong in four):

    >>> import calibkit as ck
    >>> c = ck.coverage_at_risk([0.95, 0.9, 0.8, 0.7, 0.6], [1, 1, 0, 1, 0],
    ...                         target_risk=0.25, n_boot=200)
    >>> c.coverage, c.threshold, c.n_acted, c.errors
    (0.8, 0.7, 4, 1)
    """
    where = "coverage_at_risk"
    r = target(target_risk, name="target_risk", where=where, zero=True)
    _, level, n_boot, seed = bootstrap_settings(
        interval="wilson", level=level, n_boot=n_boot, seed=seed, where=where
    )
    conf, out, w = checked_rows(
        confidence,
        outcome,
        probs=probs,
        labels=labels,
        from_logits=from_logits,
        where=where,
        sample_weight=sample_weight,
    )
    rows = None if w is None else (conf, out, w)
    return coverage_at_risk_of(
        curve(conf, out, w), r, level=level, n_boot=n_boot, seed=seed, rows=rows
    )
