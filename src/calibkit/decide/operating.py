"""Operating points of selective prediction, with intervals: the selective risk at a target
coverage (a binomial interval given the number acted on), and the pieces it shares with the
coverage at a target risk (:mod:`.coverage_target`): the checked curve, its counts, the targets.
Both read the risk-coverage curve of :func:`~calibkit.decide.risk_coverage` and pick its points
as :meth:`RiskCoverage.risk_at` and :meth:`RiskCoverage.coverage_at` do."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .. import _validate as v
from ..measure.intervals import INTERVALS, binomial_interval
from ._format import threshold_text
from ._inputs import decision_inputs
from .coverage import RiskCoverage, _fraction, curve
from .weighted import effective_count, effective_interval

__all__ = [
    "RiskAtCoverage",
    "checked_curve",
    "curve_counts",
    "risk_at_coverage",
]

_INTERVAL_NAMES = {"wilson": "Wilson", "clopper-pearson": "Clopper-Pearson", "jeffreys": "Jeffreys"}


def checked_curve(
    confidence: Any,
    outcome: Any,
    *,
    probs: Any,
    labels: Any,
    from_logits: bool,
    where: str,
    sample_weight: Any = None,
) -> RiskCoverage:
    """The risk-coverage curve of either input form, with ``where`` in the messages. Called
    directly by a public function, so that a P(y = 1) warning points at its caller."""
    conf, out, w = checked_rows(
        confidence,
        outcome,
        probs=probs,
        labels=labels,
        from_logits=from_logits,
        where=where,
        sample_weight=sample_weight,
        stacklevel=4,
    )
    return curve(conf, out, w)


def checked_rows(
    confidence: Any,
    outcome: Any,
    *,
    probs: Any,
    labels: Any,
    from_logits: bool,
    where: str,
    sample_weight: Any,
    stacklevel: int = 3,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The checked (confidence, outcome) of either form and the checked weights (None when
    unweighted). ``stacklevel`` is passed on to :func:`decision_inputs` (3: a P(y = 1) warning
    points at the caller of the public function that called this one)."""
    conf, out = decision_inputs(
        confidence,
        outcome,
        probs=probs,
        labels=labels,
        from_logits=from_logits,
        where=where,
        stacklevel=stacklevel,
    )
    return conf, out, v.sample_weight(sample_weight, n=conf.shape[0], where=where)


def curve_counts(rc: RiskCoverage) -> tuple[np.ndarray, np.ndarray]:
    """How many predictions are acted on and how many of them are wrong at each point of the
    curve (index 0: act on nothing), as exact integers recovered from its coverage and risk;
    for a weighted curve, the weight acted on and the wrong weight (its raw counts:
    :func:`row_counts`).

    Examples
    --------
    >>> import calibkit as ck
    >>> from calibkit.decide.operating import curve_counts
    >>> acted, wrong = curve_counts(ck.risk_coverage([0.9, 0.8, 0.8, 0.5], [1, 0, 1, 0]))
    >>> acted.tolist(), wrong.tolist()
    ([0, 1, 3, 4], [0, 0, 1, 2])
    """
    if rc.steps is not None and rc.steps.weight is not None and rc.steps.wrong_weight is not None:
        return np.r_[0.0, rc.steps.weight], np.r_[0.0, rc.steps.wrong_weight]
    acted = np.rint(rc.coverage * rc.n).astype(np.int64)
    wrong = np.zeros_like(acted)
    wrong[1:] = np.rint(rc.risk[1:] * acted[1:]).astype(np.int64)
    return acted, wrong


def row_counts(rc: RiskCoverage) -> tuple[np.ndarray, np.ndarray]:
    """The raw numbers of rows acted on and wrong at each point of the curve (index 0: act on
    nothing): :func:`curve_counts` when unweighted, else the raw counts of the weighted steps
    (:func:`curve_counts` then gives the weights)."""
    if rc.steps is None:
        return curve_counts(rc)
    return np.r_[0, rc.steps.acted], np.r_[0, rc.steps.wrong]


def target(x: Any, *, name: str, where: str, zero: bool = False) -> float:
    """A target coverage in (0, 1] or (``zero``) a target risk in [0, 1]."""
    return _fraction(x, name=name, where=where, allow_zero=zero)


def bootstrap_settings(
    *, interval: str, level: float, n_boot: int, seed: int, where: str
) -> tuple[str, float, int, int]:
    """The checked interval method, level, resample count and seed."""
    return (
        v.choice(interval, name="interval", allowed=INTERVALS, where=where),
        v.level(level, where=where),
        v.positive_int(n_boot, name="n_boot", where=where),
        v.positive_int(seed, name="seed", where=where, minimum=0),
    )


def _none_if_not_finite(d: dict[str, Any], *keys: str) -> dict[str, Any]:
    for key in keys:
        if not math.isfinite(d[key]):
            d[key] = None
    return d


@dataclass(frozen=True)
class RiskAtCoverage:
    """The selective risk of the smallest acted-on set whose coverage reaches
    ``target_coverage``: act when confidence >= ``threshold``, ``n_acted`` of ``n`` acted on
    (``coverage``; more than the target asks when a tie straddles it), ``errors`` of them
    wrong. ``low`` and ``high`` bound the risk at ``level`` by the ``interval`` method
    (a binomial interval given ``n_acted``).

    With sample weights the coverage and risk are weighted, ``n_acted``, ``errors`` and ``n``
    stay raw row counts, ``weight_acted``, ``error_weight`` and ``weight`` are the weighted
    ones and ``effective_n`` is Kish's effective size of the acted-on rows, at which the
    interval is computed (all four None when unweighted)."""

    target_coverage: float
    threshold: float
    coverage: float
    n_acted: int
    errors: int
    n: int
    risk: float
    low: float
    high: float
    level: float
    interval: str
    weight_acted: float | None = None
    error_weight: float | None = None
    weight: float | None = None
    effective_n: float | None = None

    def to_dict(self) -> dict[str, Any]:
        d = _none_if_not_finite(asdict(self), "threshold")
        if self.weight is None:
            for key in ("weight_acted", "error_weight", "weight", "effective_n"):
                del d[key]
        return d

    def __str__(self) -> str:
        counted = f"{self.n_acted:,} of {self.n:,} acted on"
        wrong = f"{self.errors:,} wrong"
        if self.weight is not None and self.effective_n is not None:
            counted += f" (weight {self.weight_acted:.6g} of {self.weight:.6g})"
            wrong += (
                f" (weight {self.error_weight:.6g}; interval at Kish's effective size "
                f"{self.effective_n:.1f})"
            )
        return (
            f"risk at coverage {self.target_coverage:g}: {self.risk:.4f} "
            f"({self.level:.0%} {_INTERVAL_NAMES[self.interval]} interval {self.low:.4f} to "
            f"{self.high:.4f}); {counted} (coverage "
            f"{self.coverage:.4f}, threshold {threshold_text(self.threshold)}), {wrong}"
        )


def risk_at_coverage_of(
    rc: RiskCoverage, target_coverage: float, *, interval: str, level: float
) -> RiskAtCoverage:
    """:func:`risk_at_coverage` of a curve and checked settings."""
    j = int(np.searchsorted(rc.coverage, target_coverage - 1e-12, side="left"))
    j = min(max(j, 1), rc.coverage.size - 1)  # the point RiskCoverage.risk_at reads
    if rc.steps is not None and rc.steps.weight is not None and rc.steps.weight_sq is not None:
        return _weighted_risk_at(rc, j, target_coverage, interval=interval, level=level)
    acted, wrong = curve_counts(rc)
    low, high = binomial_interval(int(wrong[j]), int(acted[j]), method=interval, level=level)
    return RiskAtCoverage(
        target_coverage=target_coverage,
        threshold=float(rc.threshold[j]),
        coverage=float(rc.coverage[j]),
        n_acted=int(acted[j]),
        errors=int(wrong[j]),
        n=rc.n,
        risk=float(rc.risk[j]),
        low=float(low),
        high=float(high),
        level=level,
        interval=interval,
    )


def _weighted_risk_at(
    rc: RiskCoverage, j: int, target_coverage: float, *, interval: str, level: float
) -> RiskAtCoverage:
    """:func:`risk_at_coverage_of` of a weighted curve at its point ``j``: the interval of the
    weighted risk at Kish's effective size of the acted-on rows."""
    steps = rc.steps
    assert steps is not None and steps.weight is not None and steps.weight_sq is not None
    assert steps.wrong_weight is not None
    i = j - 1  # the steps have no "act on nothing" point
    mass, mass_sq = float(steps.weight[i]), float(steps.weight_sq[i])
    n_eff = effective_count(mass, mass_sq)
    risk = float(rc.risk[j])
    low, high = effective_interval(risk, n_eff, method=interval, level=level)
    return RiskAtCoverage(
        target_coverage=target_coverage,
        threshold=float(rc.threshold[j]),
        coverage=float(rc.coverage[j]),
        n_acted=int(steps.acted[i]),
        errors=int(steps.wrong[i]),
        n=rc.n,
        risk=risk,
        low=float(low),
        high=float(high),
        level=level,
        interval=interval,
        weight_acted=mass,
        error_weight=float(steps.wrong_weight[i]),
        weight=rc.mass,
        effective_n=n_eff,
    )


def risk_at_coverage(
    confidence: Any = None,
    outcome: Any = None,
    *,
    target_coverage: float,
    interval: str = "wilson",
    level: float = 0.95,
    probs: Any = None,
    labels: Any = None,
    from_logits: bool = False,
    sample_weight: Any = None,
) -> RiskAtCoverage:
    """The selective risk at a target coverage, with a binomial interval.

    The acted-on set is the smallest whose coverage reaches ``target_coverage`` (the most
    confident predictions; a tie straddling the target is taken whole), as in
    :meth:`RiskCoverage.risk_at`. The interval is that of a binomial proportion given the
    number acted on: ``"wilson"`` (score), ``"clopper-pearson"`` (exact, conservative) or
    ``"jeffreys"`` (:func:`~calibkit.binomial_interval`). It treats the acted-on set as fixed;
    the data also chose the threshold, which this interval does not count. In seeded
    simulations (benchmarks/check_selective_intervals.py, 2,000 draws a setting) the 95%
    intervals covered the population risk at the target coverage in 94% to 96% of draws with
    200 to 8,000 acted on; with 20 acted on and one error expected, Wilson covered in 92% and
    Clopper-Pearson in 98% (prefer it for small counts).

    With ``sample_weight``, the coverage is the weighted share acted on and the risk the
    weighted error rate among them (with whole weights, those of the data with each row
    repeated w times); the interval is the same method's for that rate with Kish's effective
    size of the acted-on rows, (sum w) ** 2 / sum w ** 2, as the number of trials (Kish 1965):
    an approximation, exact in the method's own sense only for equal weights. In seeded
    simulations (2,000 draws of 150 rows, weights uniform on [1, 4] independent of the
    outcome; tests/decide/test_weighted_decisions.py runs 600) the 95% Wilson interval at the
    effective size covered the population risk in 95.4% of draws.

    Parameters
    ----------
    confidence, outcome : arrays of shape (N,)
        The confidence that each prediction is right, in [0, 1], and whether it was (0/1).
    target_coverage : number in (0, 1]
    interval : {"wilson", "clopper-pearson", "jeffreys"}
    level : number in (0, 1)
    probs, labels, from_logits : keyword only
        Instead of ``confidence, outcome``, a model's class probabilities (or logits) and
        labels, as in :func:`~calibkit.decide.risk_coverage`.
    sample_weight : array of shape (N,), keyword only
        Finite, non-negative weights (see above).

    Examples
    --------
    Five predictions, the third and fifth wrong: coverage 0.6 acts on the three most
    confident, one of them wrong; the exact 95% interval of 1 in 3 is 0.0084 to 0.9057:

    >>> import calibkit as ck
    >>> r = ck.risk_at_coverage([0.95, 0.9, 0.8, 0.7, 0.6], [1, 1, 0, 1, 0],
    ...                         target_coverage=0.6, interval="clopper-pearson")
    >>> r.n_acted, r.errors, r.threshold, round(r.low, 4), round(r.high, 4)
    (3, 1, 0.8, 0.0084, 0.9057)
    """
    where = "risk_at_coverage"
    c = target(target_coverage, name="target_coverage", where=where)
    interval = v.choice(interval, name="interval", allowed=INTERVALS, where=where)
    level = v.level(level, where=where)
    rc = checked_curve(
        confidence,
        outcome,
        probs=probs,
        labels=labels,
        from_logits=from_logits,
        where=where,
        sample_weight=sample_weight,
    )
    return risk_at_coverage_of(rc, c, interval=interval, level=level)
