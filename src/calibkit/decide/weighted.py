"""What the decide functions need of sample weights beyond the sums: the rows a threshold acts
on (raw counts beside weights), a binomial interval and bound at Kish's effective size, and a
row bootstrap that carries the weights.

Kish's effective size n_eff = (sum w) ** 2 / sum w ** 2 of the acted-on rows stands in for the
number of independent trials: a weighted error rate p has about the variance p (1 - p) / n_eff
(Kish 1965, "Survey Sampling"). With equal weights n_eff is the number of rows and everything
here is the unweighted method; with unequal weights it is an approximation, as the functions
that use it say.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _validate as v
from ..measure.intervals import proportion_interval

__all__ = ["Acted", "acted_at", "effective_interval", "weighted_bootstrap_coverages"]


@dataclass(frozen=True)
class Acted:
    """The rows a rule "act when confidence >= threshold" acts on: raw ``n_acted`` and
    ``n_wrong`` of ``n`` rows; ``mass``, ``wrong_mass`` and ``total`` the same weighted (the
    counts when unweighted)."""

    n: int
    n_acted: int
    n_wrong: int
    total: float
    mass: float
    wrong_mass: float

    @property
    def deferred_mass(self) -> float:
        return self.total - self.mass


def acted_at(
    confidence: np.ndarray, outcome: np.ndarray, threshold: float, weight: np.ndarray | None
) -> Acted:
    """:class:`Acted` of checked arrays and weights (None: every row counts once).

    Examples
    --------
    >>> import numpy as np
    >>> a = acted_at(np.array([0.9, 0.8, 0.7]), np.array([1, 0, 1]), 0.8, np.array([1.0, 3, 2]))
    >>> a.n_acted, a.n_wrong, a.mass, a.wrong_mass, a.total
    (2, 1, 4.0, 3.0, 6.0)
    """
    acted = confidence >= threshold
    wrong = acted & (outcome == 0)
    n_acted, n_wrong = int(np.count_nonzero(acted)), int(np.count_nonzero(wrong))
    if weight is None:
        n = int(confidence.size)
        return Acted(n, n_acted, n_wrong, n, n_acted, n_wrong)
    return Acted(
        int(confidence.size),
        n_acted,
        n_wrong,
        float(weight.sum()),
        float(weight[acted].sum()),
        float(weight[wrong].sum()),
    )


def effective_interval(
    rate: float, n_eff: float, *, method: str, level: float
) -> tuple[float, float]:
    """A binomial interval for a weighted rate at Kish's effective size: the interval of
    ``method`` ("wilson", "clopper-pearson", "jeffreys", as :func:`~calibkit.binomial_interval`)
    for ``rate * n_eff`` successes in ``n_eff`` trials, which need not be whole numbers. With
    equal weights it is the unweighted interval.

    Examples
    --------
    >>> import calibkit as ck
    >>> lo, hi = effective_interval(0.25, 8.0, method="wilson", level=0.95)
    >>> (round(lo, 10), round(hi, 10)) == tuple(
    ...     round(float(x), 10) for x in ck.binomial_interval(2, 8, method="wilson"))
    True
    """
    lo, hi = proportion_interval(
        np.array([rate * n_eff]), np.array([n_eff]), method=method, level=level
    )
    return float(lo[0]), float(hi[0])


def effective_count(weight_sum: float, weight_sq_sum: float) -> float:
    """Kish's effective size of a set of rows from its sums of w and w ** 2."""
    return float(v.effective_size(weight_sum, weight_sq_sum))


def weighted_bootstrap_coverages(
    confidence: np.ndarray,
    outcome: np.ndarray,
    weight: np.ndarray,
    target_risk: float,
    n_boot: int,
    seed: int,
) -> np.ndarray:
    """The weighted coverage at ``target_risk`` in each of ``n_boot`` bootstrap resamples: the
    M rows of positive weight drawn M times with replacement, each drawn row carrying its
    weight; each resample's curve (weight acted on over the resample's total weight, wrong
    weight over weight acted on, equal confidences together) read as
    :meth:`RiskCoverage.coverage_at` reads one. O(n_boot x M).
    """
    keep = weight > 0
    conf, w, wrong = confidence[keep], weight[keep], outcome[keep] == 0
    levels = np.unique(conf)[::-1]  # the distinct confidences, decreasing
    step = np.searchsorted(-levels, -conf)  # each row's step
    m, s = conf.size, levels.size
    w_wrong = np.where(wrong, w, 0.0)
    rng = np.random.default_rng(seed)
    out = np.empty(n_boot)
    for b in range(n_boot):
        drawn = np.bincount(rng.integers(0, m, size=m), minlength=m)
        acted = np.cumsum(np.bincount(step, weights=w * drawn, minlength=s))
        errs = np.cumsum(np.bincount(step, weights=w_wrong * drawn, minlength=s))
        with np.errstate(invalid="ignore", divide="ignore"):
            ok = errs / acted <= target_risk  # NaN (no weight acted on) is False
        out[b] = (acted[ok].max() if ok.any() else 0.0) / acted[-1]
    return out
