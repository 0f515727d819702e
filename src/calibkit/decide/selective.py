"""Selective prediction measures read off the risk-coverage curve.

* AUGRC, the area under the generalized risk-coverage curve (Traub et al. 2024, "Overcoming
  common flaws in the evaluation of selective classification systems", NeurIPS): the
  generalized risk at a coverage is the share of *all* N predictions that are acted on and
  wrong, so a deferred case counts as no error and an accepted error always counts;
* PRR, the prediction rejection ratio (Malinin et al. 2019, "Ensemble distribution
  distillation"; Malinin et al. 2021, "Shifts"): the area between random rejection and the
  model's rejection curve over the area between random rejection and the oracle;
* AURC under the conventions papers use (``convention="step" | "rank" | "trapezoid"``);
* the risk at a coverage (binomial interval) and the coverage at a risk (bootstrap interval):
  :mod:`calibkit.decide.operating`.

Everything is computed from :func:`~calibkit.decide.risk_coverage`'s curve (one sort), whose
points are the distinct confidences: equal confidences are accepted or deferred together. The
conventions, with a worked example each, are in docs/selective-prediction.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _validate as v
from .coverage import RiskCoverage, curve, harmonic_gap
from .coverage_target import CoverageAtRisk, coverage_at_risk_of
from .operating import (
    RiskAtCoverage,
    bootstrap_settings,
    checked_curve,
    checked_rows,
    curve_counts,
    risk_at_coverage_of,
    target,
)

__all__ = [
    "AURC_CONVENTIONS",
    "SelectivePrediction",
    "augrc",
    "augrc_of",
    "aurc",
    "aurc_of",
    "prediction_rejection_ratio",
    "selective_prediction",
]

#: The AURC conventions of :func:`aurc` (see its docstring and docs/selective-prediction.md).
AURC_CONVENTIONS = ("step", "rank", "trapezoid")

#: Ranks expanded at a time by the ``"rank"`` convention (bounds its memory on large inputs).
_RANK_CHUNK = 1 << 20


def augrc_of(rc: RiskCoverage) -> float:
    """AUGRC of a curve: the trapezoid rule over its points (coverage, wrong / N), from
    (0, 0) to (1, error rate). Sums of integers (of weights when weighted), divided once."""
    acted, wrong = curve_counts(rc)
    added = np.diff(acted).astype(np.float64)
    heights = (wrong[1:] + wrong[:-1]).astype(np.float64)
    return float(np.dot(added, heights) / (2.0 * rc.mass * rc.mass))


def aurc_of(rc: RiskCoverage, convention: str) -> float:
    """AURC of a curve under one of :data:`AURC_CONVENTIONS` (checked by the caller)."""
    if convention == "step":
        return rc.aurc
    if convention == "trapezoid":
        c, r = rc.coverage[1:], rc.risk[1:]
        # the first point's risk extended to coverage 0, then straight lines between points
        return float(r[0] * c[0] + np.sum(np.diff(c) * (r[1:] + r[:-1])) / 2.0)
    return _aurc_rank(rc)


def _aurc_rank(rc: RiskCoverage) -> float:
    """Mean over k = 1..N of the selective risk of the k most confident predictions, each
    rank inside a tie taking its expected number of errors under a random order of the tie:
    the mean of this number over every way of breaking the ties."""
    if rc.weighted:
        return _aurc_rank_weighted(rc)
    acted, wrong = curve_counts(rc)
    size = np.diff(acted)  # predictions in each tie group
    before, gained = acted[:-1], np.diff(wrong)
    wrong_before = wrong[:-1]
    total, start = 0.0, 0
    while start < size.size:  # whole groups, about _RANK_CHUNK ranks at a time
        stop = int(np.searchsorted(acted[1:], acted[start] + _RANK_CHUNK, side="right"))
        stop = max(stop, start + 1)
        m = size[start:stop]
        group = np.repeat(np.arange(stop - start), m)
        t = np.arange(int(m.sum())) - np.repeat(np.cumsum(m) - m, m) + 1.0  # 1..m in a group
        g = start + group
        expected = wrong_before[g] + gained[g] * t / size[g]
        total += float(np.sum(expected / (before[g] + t)))
        start = stop
    return total / rc.n


def _aurc_rank_weighted(rc: RiskCoverage) -> float:
    """:func:`_aurc_rank` of a weighted curve: a tie group of weight m after weight b acted on
    (e of it wrong), gaining g errors, adds sum over t = 1..m of (e + g t / m) / (b + t) =
    e H + (g / m) (m - b H), H = sum 1 / (b + t) (:func:`harmonic_gap`), over the total weight:
    with whole weights the rank mean of the data with each row repeated w times, and its
    extension to weights that are not whole."""
    acted, wrong = curve_counts(rc)
    size, before = np.diff(acted), acted[:-1]
    gained, wrong_before = np.diff(wrong), wrong[:-1]
    h = harmonic_gap(before, size)
    return float(np.sum(wrong_before * h + gained / size * (size - before * h)) / rc.mass)


def aurc(
    confidence: Any = None,
    outcome: Any = None,
    *,
    convention: str = "step",
    probs: Any = None,
    labels: Any = None,
    from_logits: bool = False,
    sample_weight: Any = None,
) -> float:
    """Area under the risk-coverage curve under the convention a paper used.

    ``"step"`` (calibkit's, :attr:`RiskCoverage.aurc`): each distinct threshold's selective
    risk over the coverage it adds; a tie is one decision (accepted or deferred together).
    ``"rank"``: the mean over k = 1..N of the selective risk of the k most confident
    predictions, as Geifman et al. (2019, "Bias-reduced uncertainty estimation for deep neural
    classifiers", ICLR) and most papers' code compute it; their code breaks ties in the order
    of its sort, so here each rank inside a tie counts its expected errors under a random
    order (the mean over every way of breaking the ties). Without ties, "rank" and "step" are
    the same number. ``"trapezoid"``: the trapezoid rule over the curve's points (coverage,
    selective risk) at the distinct thresholds, the first point's risk extended to coverage 0,
    as the code of Traub et al. (2024) computes its AURC (times 1000).

    Parameters
    ----------
    confidence, outcome : arrays of shape (N,)
        The confidence that each prediction is right, in [0, 1], and whether it was (0/1).
    convention : {"step", "rank", "trapezoid"}
        With ``sample_weight``, "rank" counts each row as w ranks: a tie group's ranks sum in
        closed form (digamma functions), which extends the repeated rows' number to weights
        that are not whole.
    probs, labels, from_logits : keyword only
        Instead of the two above, a model's class probabilities (or logits) and labels, as in
        :func:`~calibkit.decide.risk_coverage`.
    sample_weight : array of shape (N,), keyword only
        Finite, non-negative weights: the curve of :func:`~calibkit.decide.risk_coverage` with
        them (weighted coverage and risk); with whole weights the number of the data with each
        row repeated w times.

    Examples
    --------
    Five predictions, the third and fifth wrong: selective risks 0, 0, 1/3, 1/4, 2/5 at
    coverages 0.2 to 1. Their mean, 0.1967, is both "step" and "rank" (no ties); the trapezoid
    is 0.2 * (0 + 1/6 + (1/3 + 1/4) / 2 + (1/4 + 2/5) / 2) = 0.1567:

    >>> import calibkit as ck
    >>> conf, right = [0.95, 0.9, 0.8, 0.7, 0.6], [1, 1, 0, 1, 0]
    >>> [round(ck.aurc(conf, right, convention=c), 4) for c in ("step", "rank", "trapezoid")]
    [0.1967, 0.1967, 0.1567]
    """
    where = "aurc"
    convention = v.choice(convention, name="convention", allowed=AURC_CONVENTIONS, where=where)
    rc = checked_curve(
        confidence,
        outcome,
        probs=probs,
        labels=labels,
        from_logits=from_logits,
        where=where,
        sample_weight=sample_weight,
    )
    return aurc_of(rc, convention)


def augrc(
    confidence: Any = None,
    outcome: Any = None,
    *,
    probs: Any = None,
    labels: Any = None,
    from_logits: bool = False,
    sample_weight: Any = None,
) -> float:
    """Area under the generalized risk-coverage curve (Traub et al. 2024).

    The generalized risk at a threshold is the share of all N predictions that are acted on
    and wrong (the selective risk times the coverage); AUGRC is its area over coverage from 0
    to 1 by the trapezoid rule over the distinct thresholds, as the authors' code computes it
    (which reports it times 1000). Lower is better: random rejection gives error rate / 2, the
    oracle (every error deferred first) error rate ** 2 / 2. For 0/1 errors
    AUGRC = (1 - AUROC) * accuracy * error rate + error rate ** 2 / 2, where AUROC is that of
    the confidence separating right from wrong predictions (ties one half), so ties are
    counted as under a random order of the tie.

    Parameters
    ----------
    confidence, outcome : arrays of shape (N,)
        The confidence that each prediction is right, in [0, 1], and whether it was (0/1).
    probs, labels, from_logits : keyword only
        Instead of the two above, a model's class probabilities (or logits) and labels, as in
        :func:`~calibkit.decide.risk_coverage`.
    sample_weight : array of shape (N,), keyword only
        Finite, non-negative weights: the curve of :func:`~calibkit.decide.risk_coverage` with
        them (weighted coverage and risk); with whole weights the number of the data with each
        row repeated w times.

    Examples
    --------
    Five predictions, the third and fifth wrong: generalized risks 0, 0, 0.2, 0.2, 0.4 at
    coverages 0.2 to 1, area 0.2 * (0 + 0 + 0.1 + 0.2 + 0.3) = 0.12; AUROC is 5/6, and
    (1 - 5/6) * 0.6 * 0.4 + 0.4 ** 2 / 2 = 0.12:

    >>> import calibkit as ck
    >>> round(ck.augrc([0.95, 0.9, 0.8, 0.7, 0.6], [1, 1, 0, 1, 0]), 12)
    0.12
    """
    rc = checked_curve(
        confidence,
        outcome,
        probs=probs,
        labels=labels,
        from_logits=from_logits,
        where="augrc",
        sample_weight=sample_weight,
    )
    return augrc_of(rc)


def prr_of(augrc_value: float, n: float, errors: float) -> float | None:
    """PRR from AUGRC; None when there is nothing to reject (no error) or nothing to keep."""
    if errors in (0, n):
        return None
    e = errors / n
    return (e / 2.0 - augrc_value) / (e * (1.0 - e) / 2.0)


def prediction_rejection_ratio(
    confidence: Any = None,
    outcome: Any = None,
    *,
    probs: Any = None,
    labels: Any = None,
    from_logits: bool = False,
    sample_weight: Any = None,
) -> float:
    """The prediction rejection ratio (Malinin et al. 2019, 2021): 1 for the oracle, 0 for
    random rejection, negative when the confidence ranks errors first.

    The rejection curve is the error rate over all N predictions when the rejected ones are
    handed to an oracle that is always right, against the fraction rejected: the generalized
    risk of :func:`augrc` read from coverage 1 down. PRR is the area between random rejection
    and the model's curve over the area between random rejection and the oracle's,
    (error rate / 2 - AUGRC) / (error rate * (1 - error rate) / 2), which for 0/1 errors is
    2 * AUROC - 1 (the AUROC of the confidence separating right from wrong predictions, ties
    one half). Malinin et al. report it in percent. Undefined (an InputError) when every
    prediction is right or every one is wrong.

    Parameters
    ----------
    confidence, outcome : arrays of shape (N,)
        The confidence that each prediction is right, in [0, 1], and whether it was (0/1).
    probs, labels, from_logits : keyword only
        Instead of the two above, a model's class probabilities (or logits) and labels, as in
        :func:`~calibkit.decide.risk_coverage`.
    sample_weight : array of shape (N,), keyword only
        Finite, non-negative weights: the curve of :func:`~calibkit.decide.risk_coverage` with
        them (weighted coverage and risk); with whole weights the number of the data with each
        row repeated w times.

    Examples
    --------
    Five predictions, the third and fifth wrong: AUGRC 0.12, random 0.4 / 2 = 0.2, oracle
    0.4 ** 2 / 2 = 0.08, so PRR = (0.2 - 0.12) / (0.2 - 0.08) = 2/3 = 2 * 5/6 - 1:

    >>> import calibkit as ck
    >>> round(ck.prediction_rejection_ratio([0.95, 0.9, 0.8, 0.7, 0.6], [1, 1, 0, 1, 0]), 12)
    0.666666666667
    """
    where = "prediction_rejection_ratio"
    rc = checked_curve(
        confidence,
        outcome,
        probs=probs,
        labels=labels,
        from_logits=from_logits,
        where=where,
        sample_weight=sample_weight,
    )
    value = prr_of(augrc_of(rc), rc.mass, rc.error_mass)
    if value is None:
        every = "right" if rc.error_mass == 0 else "wrong"
        which = (
            "every prediction of positive weight"
            if rc.weighted
            else f"every one of the {rc.n} predictions"
        )
        raise v.InputError(
            f"{where}: {which} is {every}, so the "
            "oracle and random rejection coincide and the ratio is undefined. Evaluate on data "
            "with both right and wrong predictions."
        )
    return value


@dataclass(frozen=True, eq=False)
class SelectivePrediction:
    """The selective prediction measures of one confidence on one data set.

    ``augrc`` (Traub et al. 2024) with its ``oracle_augrc`` (error rate ** 2 / 2) and
    ``random_augrc`` (error rate / 2); ``prr`` the prediction rejection ratio (None when every
    prediction is right or every one wrong); ``aurc`` (calibkit's step convention),
    ``aurc_rank`` (the mean over ranks of most papers' code) and ``aurc_trapezoid`` (the
    trapezoid of Traub et al.'s code), with ``oracle_aurc`` (the rank mean of the oracle
    ordering); ``at_coverage`` the risk at each target coverage and ``at_risk`` the coverage
    at each target risk, with their intervals; ``curve`` the risk-coverage curve they come
    from (drawn by :func:`~calibkit.report.generalized_risk_coverage_plot`; not in
    :meth:`to_dict`). With sample weights every rate and area is weighted, ``n`` and
    ``errors`` stay raw counts and ``weight`` and ``error_weight`` are the weighted ones (None
    when unweighted).
    """

    n: int
    errors: int
    augrc: float
    prr: float | None
    aurc: float
    aurc_rank: float
    aurc_trapezoid: float
    oracle_aurc: float
    at_coverage: tuple[RiskAtCoverage, ...]
    at_risk: tuple[CoverageAtRisk, ...]
    curve: RiskCoverage
    weight: float | None = None
    error_weight: float | None = None

    @property
    def error_rate(self) -> float:
        if self.weight is not None and self.error_weight is not None:
            return self.error_weight / self.weight
        return self.errors / self.n

    @property
    def oracle_augrc(self) -> float:
        return self.error_rate**2 / 2.0

    @property
    def random_augrc(self) -> float:
        return self.error_rate / 2.0

    @property
    def e_augrc(self) -> float:
        return self.augrc - self.oracle_augrc

    def to_dict(self) -> dict[str, Any]:
        weights = (
            {}
            if self.weight is None
            else {"weight": self.weight, "error_weight": self.error_weight}
        )
        return {
            "n": self.n,
            "errors": self.errors,
            **weights,
            "error_rate": self.error_rate,
            "augrc": self.augrc,
            "oracle_augrc": self.oracle_augrc,
            "random_augrc": self.random_augrc,
            "e_augrc": self.e_augrc,
            "prr": self.prr,
            "aurc": self.aurc,
            "aurc_rank": self.aurc_rank,
            "aurc_trapezoid": self.aurc_trapezoid,
            "oracle_aurc": self.oracle_aurc,
            "at_coverage": [row.to_dict() for row in self.at_coverage],
            "at_risk": [row.to_dict() for row in self.at_risk],
        }

    def __str__(self) -> str:
        prr = (
            f"PRR {self.prr:.4f} (1: the oracle, 0: random rejection)"
            if self.prr is not None
            else "PRR undefined: every prediction is " + ("right" if self.errors == 0 else "wrong")
        )
        weighted = (
            ""
            if self.weight is None
            else f"; weight {self.weight:.6g}, {self.error_weight:.6g} of it wrong"
        )
        lines = [
            f"selective prediction on {self.n:,} predictions ({self.errors:,} wrong{weighted}, "
            f"error rate {self.error_rate:.4f})",
            f"AUGRC {self.augrc:.5f} (oracle {self.oracle_augrc:.5f}, random "
            f"{self.random_augrc:.5f}, E-AUGRC {self.e_augrc:.5f})",
            prr,
            f"AURC {self.aurc:.5f} (step; rank mean {self.aurc_rank:.5f}, trapezoid "
            f"{self.aurc_trapezoid:.5f}; oracle {self.oracle_aurc:.5f})",
        ]
        lines += [str(row) for row in self.at_coverage]
        lines += [str(row) for row in self.at_risk]
        return "\n".join(lines)


def selective_prediction(
    confidence: Any = None,
    outcome: Any = None,
    *,
    target_coverages: Sequence[float] = (0.8, 0.9, 0.95),
    target_risks: Sequence[float] = (),
    interval: str = "wilson",
    level: float = 0.95,
    n_boot: int = 1000,
    seed: int = 0,
    probs: Any = None,
    labels: Any = None,
    from_logits: bool = False,
    sample_weight: Any = None,
) -> SelectivePrediction:
    """AUGRC, PRR, AURC in three conventions, and operating points with intervals, from one
    sort of the confidences.

    Parameters
    ----------
    confidence, outcome : arrays of shape (N,)
        The confidence that each prediction is right, in [0, 1], and whether it was (0/1).
    target_coverages : numbers in (0, 1]
        The risk at each (:func:`~calibkit.decide.risk_at_coverage`, with a binomial
        ``interval`` at ``level``).
    target_risks : numbers in [0, 1]
        The coverage at each (:func:`~calibkit.decide.coverage_at_risk`, with a percentile
        bootstrap of ``n_boot`` resamples from ``seed``). None by default: the risks worth
        asking about depend on the model.
    probs, labels, from_logits : keyword only
        Instead of ``confidence, outcome``, a model's class probabilities (or logits) and
        labels, as in :func:`~calibkit.decide.risk_coverage`.
    sample_weight : array of shape (N,), keyword only
        Finite, non-negative weights: every measure weighted as in :func:`aurc`,
        :func:`augrc`, :func:`~calibkit.decide.risk_at_coverage` (its interval at Kish's
        effective size) and :func:`~calibkit.decide.coverage_at_risk` (its bootstrap carrying
        the weights).

    Examples
    --------
    >>> import calibkit as ck
    >>> s = ck.selective_prediction([0.95, 0.9, 0.8, 0.7, 0.6], [1, 1, 0, 1, 0],
    ...                             target_coverages=(0.6,))
    >>> round(s.augrc, 4), round(s.prr, 4), round(s.aurc, 4), s.at_coverage[0].errors
    (0.12, 0.6667, 0.1967, 1)
    """
    where = "selective_prediction"
    coverages = [target(c, name="target_coverages", where=where) for c in target_coverages]
    risks = [target(r, name="target_risks", where=where, zero=True) for r in target_risks]
    interval, level, n_boot, seed = bootstrap_settings(
        interval=interval, level=level, n_boot=n_boot, seed=seed, where=where
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
    rc = curve(conf, out, w)
    rows = None if w is None else (conf, out, w)
    value = augrc_of(rc)
    return SelectivePrediction(
        n=rc.n,
        errors=rc.errors,
        augrc=value,
        prr=prr_of(value, rc.mass, rc.error_mass),
        aurc=rc.aurc,
        aurc_rank=aurc_of(rc, "rank"),
        aurc_trapezoid=aurc_of(rc, "trapezoid"),
        oracle_aurc=rc.oracle_aurc,
        at_coverage=tuple(
            risk_at_coverage_of(rc, c, interval=interval, level=level) for c in coverages
        ),
        at_risk=tuple(
            coverage_at_risk_of(rc, r, level=level, n_boot=n_boot, seed=seed, rows=rows)
            for r in risks
        ),
        curve=rc,
        weight=rc.weight,
        error_weight=rc.error_weight,
    )
