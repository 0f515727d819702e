"""Selective prediction: act when the confidence reaches a threshold, defer otherwise, and the
risk-coverage curve that every threshold traces (Geifman and El-Yaniv 2017, "Selective
classification for deep neural networks")."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _kernels
from .. import _validate as v
from ._format import threshold_text
from ._inputs import decision_inputs, validated

__all__ = ["RiskCoverage", "risk_coverage", "sorted_steps", "validated"]


@dataclass(frozen=True)
class Steps:
    """The distinct thresholds in decreasing order and, at each, how many predictions are acted
    on and how many of those are wrong (cumulative): the whole curve in O(distinct values).

    With sample weights, ``acted`` and ``wrong`` stay raw row counts and ``weight``,
    ``wrong_weight`` and ``weight_sq`` hold the cumulative sums of w, of w over the wrong rows
    and of w ** 2 (None when unweighted); :attr:`mass_acted`, :attr:`mass_wrong` and
    :attr:`total` are what every rate divides by (the counts when unweighted).
    """

    threshold: np.ndarray
    acted: np.ndarray
    wrong: np.ndarray
    n: int
    weight: np.ndarray | None = None
    wrong_weight: np.ndarray | None = None
    weight_sq: np.ndarray | None = None

    @property
    def mass_acted(self) -> np.ndarray:
        return self.acted if self.weight is None else self.weight

    @property
    def mass_wrong(self) -> np.ndarray:
        return self.wrong if self.wrong_weight is None else self.wrong_weight

    @property
    def total(self) -> float:
        """The total weight (the number of rows when unweighted)."""
        return self.n if self.weight is None else float(self.weight[-1])


def sorted_steps(
    confidence: np.ndarray, outcome: np.ndarray, sample_weight: np.ndarray | None = None
) -> Steps:
    """Equal confidences form one step (accepted or deferred together). Large inputs go to the
    numba kernel (the right and the wrong predictions' confidences put in order apart by
    counting passes over their integer keys, then merged from the top), the others to
    :func:`sorted_steps_numpy`, the reference it agrees with exactly. Weighted inputs go to
    :func:`weighted_steps`."""
    if sample_weight is not None:
        return weighted_steps(confidence, outcome, sample_weight)
    if not _kernels.use_numba(confidence.shape[0]):
        return sorted_steps_numpy(confidence, outcome)
    threshold, acted, wrong = _kernels.numba_ranking().steps(confidence, outcome != 0)
    return Steps(threshold, acted, wrong, confidence.size)


def sorted_steps_numpy(confidence: np.ndarray, outcome: np.ndarray) -> Steps:
    """:func:`sorted_steps` by one argsort (the reference)."""
    order = np.argsort(confidence)[::-1]  # decreasing; the order within a tie group is irrelevant
    conf = confidence[order]
    wrong = np.cumsum(outcome[order] == 0)
    last = np.flatnonzero(np.append(conf[1:] != conf[:-1], True))  # end of each tie group
    return Steps(conf[last].astype(np.float64), last + 1, wrong[last], conf.size)


def weighted_steps(confidence: np.ndarray, outcome: np.ndarray, weight: np.ndarray) -> Steps:
    """:func:`sorted_steps` with sample weights (one argsort): the steps are the distinct
    confidences of the rows of positive weight, so that a row of weight 0 is left out as if it
    were not there (with whole weights, the steps of the data with each row repeated w times).
    The raw counts at a step count every row the threshold acts on, those of weight 0 too.

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.decide.coverage import weighted_steps
    >>> s = weighted_steps(np.array([0.9, 0.8, 0.7, 0.6]), np.array([1, 0, 1, 0]),
    ...                    np.array([2.0, 0.0, 1.0, 1.0]))
    >>> s.threshold.tolist(), s.acted.tolist(), s.weight.tolist(), s.wrong_weight.tolist()
    ([0.9, 0.7, 0.6], [1, 3, 4], [2.0, 3.0, 4.0], [0.0, 0.0, 1.0])
    """
    order = np.argsort(confidence, kind="stable")[::-1]
    conf, w = confidence[order], weight[order]
    wrong_row = outcome[order] == 0
    last = np.flatnonzero(np.append(conf[1:] != conf[:-1], True))  # end of each tie group
    cum_w = np.cumsum(w)[last]
    keep = np.diff(cum_w, prepend=0.0) > 0  # groups of positive weight
    last = last[keep]
    return Steps(
        threshold=conf[last].astype(np.float64),
        acted=last + 1,
        wrong=np.cumsum(wrong_row)[last],
        n=conf.size,
        weight=cum_w[keep],
        wrong_weight=np.cumsum(np.where(wrong_row, w, 0.0))[last],
        weight_sq=np.cumsum(w * w)[last],
    )


@dataclass(frozen=True, eq=False)
class RiskCoverage:
    """The risk-coverage curve of a confidence, from "act on nothing" to "act on everything".

    ``threshold[j]`` is the j-th distinct confidence in decreasing order (act when confidence >=
    threshold), preceded by ``inf`` (act on nothing: coverage 0, risk undefined, stored as NaN
    and shown as "-"). ``coverage`` is the share acted on, ``risk`` the error rate among them
    (the selective risk). ``aurc`` is the area under the curve, ``oracle_aurc`` that of a
    confidence that ranks every error last, ``random_aurc`` that of random abstention (the error
    rate at every coverage), and ``e_aurc = aurc - oracle_aurc``.

    With sample weights, ``coverage`` is the weighted share acted on and ``risk`` the weighted
    error rate among them; ``n`` and ``errors`` stay raw row counts, ``weight`` and
    ``error_weight`` are their weighted counterparts and ``steps`` keeps the cumulative sums
    (all three None when unweighted). :attr:`mass` and :attr:`error_mass` are what the rates
    divide by either way.
    """

    threshold: np.ndarray
    coverage: np.ndarray
    risk: np.ndarray
    n: int
    errors: int
    aurc: float
    oracle_aurc: float
    weight: float | None = None
    error_weight: float | None = None
    steps: Steps | None = None

    @property
    def weighted(self) -> bool:
        return self.weight is not None

    @property
    def mass(self) -> float:
        """The total weight (the number of predictions when unweighted)."""
        return self.n if self.weight is None else self.weight

    @property
    def error_mass(self) -> float:
        """The weight of the wrong predictions (their number when unweighted)."""
        return self.errors if self.error_weight is None else self.error_weight

    @property
    def error_rate(self) -> float:
        if self.weight is not None:
            return self.error_mass / self.weight
        return self.errors / self.n

    @property
    def random_aurc(self) -> float:
        return self.error_rate

    @property
    def e_aurc(self) -> float:
        return self.aurc - self.oracle_aurc

    def risk_at(self, coverage: float) -> float:
        """Selective risk of the smallest acted set whose coverage reaches ``coverage``."""
        c = _fraction(coverage, name="coverage", where="RiskCoverage.risk_at", allow_zero=False)
        j = int(np.searchsorted(self.coverage, c - 1e-12, side="left"))
        return float(self.risk[min(j, self.coverage.size - 1)])

    def coverage_at(self, risk: float) -> float:
        """Largest coverage whose selective risk is at most ``risk`` (0 if none)."""
        r = _fraction(risk, name="risk", where="RiskCoverage.coverage_at", allow_zero=True)
        ok = self.risk[1:] <= r
        return float(self.coverage[1:][ok].max()) if ok.any() else 0.0

    def oracle_risk(self) -> np.ndarray:
        """Selective risk of the oracle (errors deferred first) at this curve's coverages."""
        acted = self.coverage * self.mass
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(
                acted > 0, np.maximum(acted - (self.mass - self.error_mass), 0) / acted, np.nan
            )

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
            "aurc": self.aurc,
            "oracle_aurc": self.oracle_aurc,
            "random_aurc": self.random_aurc,
            "e_aurc": self.e_aurc,
            "threshold": [None if math.isinf(t) else float(t) for t in self.threshold],
            "coverage": self.coverage.tolist(),
            "risk": [None if math.isnan(r) else float(r) for r in self.risk],
        }

    def __str__(self) -> str:
        head = f"{'threshold':>10}  {'coverage':>8}  {'risk':>6}"
        counted = f"{self.n} predictions ({self.errors} wrong)"
        if self.weight is not None:
            counted = (
                f"{self.n} predictions of weight {self.weight:.6g} ({self.errors} wrong, weight "
                f"{self.error_mass:.6g})"
            )
        lines = [f"risk-coverage curve of {counted}", head]
        rows: list[tuple[Any, Any, Any] | None] = list(
            zip(self.threshold, self.coverage, self.risk, strict=True)
        )
        if len(rows) > 12:  # first and last rows; the arrays hold them all
            rows = rows[:6] + [None] + rows[-5:]
        for row in rows:
            if row is None:
                lines.append(f"{'...':>10}")
                continue
            t, c, r = row
            t_text = threshold_text(t)
            r_text = "-" if math.isnan(r) else f"{r:.4f}"
            lines.append(f"{t_text:>10}  {c:>8.4f}  {r_text:>6}")
        lines.append(
            f"AURC {self.aurc:.4f} (oracle {self.oracle_aurc:.4f}, random {self.random_aurc:.4f}, "
            f"E-AURC {self.e_aurc:.4f})"
        )
        return "\n".join(lines)


def _fraction(x: Any, *, name: str, where: str, allow_zero: bool) -> float:
    ok = isinstance(x, (int, float, np.floating)) and (
        0.0 <= x <= 1.0 if allow_zero else 0 < x <= 1
    )
    if not ok:
        bound = "[0, 1]" if allow_zero else "(0, 1]"
        raise v.InputError(f"{where}: {name} must be a number in {bound}, got {x!r}.")
    return float(x)


def oracle_aurc(n: int, errors: int) -> float:
    """AURC of a confidence that ranks all n - errors correct predictions first."""
    k = np.arange(n - errors + 1, n + 1, dtype=np.float64)
    return float(np.sum((k - (n - errors)) / k) / n)


def harmonic_gap(before: Any, size: Any) -> Any:
    """sum over t = 1..size of 1 / (before + t), as digamma(before + size + 1) -
    digamma(before + 1): the same sum for whole numbers, and its extension to weights that are
    not (the rank convention of a weighted curve)."""
    from scipy.special import digamma

    b = np.asarray(before, dtype=np.float64)
    return digamma(b + np.asarray(size, dtype=np.float64) + 1.0) - digamma(b + 1.0)


def oracle_aurc_weighted(total: float, errors: float) -> float:
    """:func:`oracle_aurc` of a total weight and an error weight: the rank mean
    sum over k = R + 1..W of (k - R) / k, over W (R = W - errors, the right weight), summed
    in closed form, errors - R * (H(W) - H(R)), so that it extends to weights that are not
    whole numbers (with whole weights it is the oracle AURC of the repeated rows)."""
    right = total - errors
    return float((errors - right * harmonic_gap(right, errors)) / total)


def risk_coverage(
    confidence: Any = None,
    outcome: Any = None,
    *,
    probs: Any = None,
    labels: Any = None,
    from_logits: bool = False,
    sample_weight: Any = None,
) -> RiskCoverage:
    """Coverage and selective risk at every distinct threshold (Geifman and El-Yaniv 2017).

    Act when confidence >= threshold. Equal confidences form one step. AURC is the area under
    the step curve, each threshold's risk counted over the coverage it adds (with no ties, the
    mean over k of the risk of the k most confident predictions). Depends only on the order of
    the confidences: any strictly increasing map leaves the curve unchanged. O(N log N) on the
    numpy path; counting passes over the confidences' integer keys (about O(N)) on the numba path.

    Parameters
    ----------
    confidence, outcome : arrays of shape (N,)
        The confidence that each prediction is right, in [0, 1], and whether it was (0/1).
    probs, labels : arrays, keyword only
        Instead of the two above: a model's 1-D P(y = 1) (binary) or (N, C) class probabilities
        (logits with ``from_logits=True``) and the class labels. The decision acts on the
        predicted class: confidence max(p, 1 - p), right when (p >= 0.5) == y; top-label for
        (N, C). A 1-D P(y = 1) passed as ``confidence`` is wrong and warns when at least 10% of
        it lies below 0.05.
    sample_weight : array of shape (N,), keyword only
        Finite, non-negative weights (how many cases each row stands for). The coverage is then
        the weighted share acted on and the risk the weighted error rate among them; with whole
        weights the curve is that of the data with each row repeated w times (a row of weight 0
        left out: its confidence is no threshold). ``n`` and ``errors`` stay raw row counts,
        ``weight`` and ``error_weight`` are the weighted ones.

    Examples
    --------
    Five predictions, the third and fifth wrong:

    >>> import calibkit as ck
    >>> rc = ck.risk_coverage([0.95, 0.9, 0.8, 0.7, 0.6], [1, 1, 0, 1, 0])
    >>> rc.coverage.tolist()
    [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    >>> rc.risk[1:].round(2).tolist()
    [0.0, 0.0, 0.33, 0.25, 0.4]

    Weighted: four predictions of weights 1, 2, 1, 4 (the second and fourth wrong), total 8:

    >>> rc = ck.risk_coverage([0.9, 0.8, 0.7, 0.6], [1, 0, 1, 0], sample_weight=[1, 2, 1, 4])
    >>> rc.coverage.tolist(), rc.risk[1:].tolist(), rc.n, rc.weight
    ([0.0, 0.125, 0.375, 0.5, 1.0], [0.0, 0.6666666666666666, 0.5, 0.75], 4, 8.0)
    """
    conf, out = decision_inputs(
        confidence,
        outcome,
        probs=probs,
        labels=labels,
        from_logits=from_logits,
        where="risk_coverage",
    )
    w = v.sample_weight(sample_weight, n=conf.shape[0], where="risk_coverage")
    return curve(conf, out, w)


def curve(conf: np.ndarray, out: np.ndarray, weight: np.ndarray | None = None) -> RiskCoverage:
    """:func:`risk_coverage` of checked arrays (and checked weights)."""
    if weight is not None:
        errors = int(np.count_nonzero(out == 0))
        return weighted_curve(sorted_steps(conf, out, weight), errors)
    n = conf.shape[0]
    if _kernels.use_numba(n):  # one merge writes the curve's arrays (the same numbers)
        threshold, coverage, risk, area, errors = _kernels.numba_curve().curve(conf, out != 0)
        return RiskCoverage(
            threshold=threshold,
            coverage=coverage,
            risk=risk,
            n=n,
            errors=errors,
            aurc=float(np.sum(area)),
            oracle_aurc=oracle_aurc(n, errors),
        )
    steps = sorted_steps(conf, out)
    m = steps.threshold.size
    # each array written once in place (no concatenated copies: 1e7 forecasts make every
    # temporary 80 MB of fresh memory)
    threshold = np.empty(m + 1)
    threshold[0], threshold[1:] = np.inf, steps.threshold
    coverage = np.empty(m + 1)
    coverage[0] = 0.0
    np.divide(steps.acted, n, out=coverage[1:])
    risk = np.empty(m + 1)
    risk[0] = np.nan
    np.divide(steps.wrong, steps.acted, out=risk[1:])
    errors = int(steps.wrong[-1])
    weighted = np.diff(coverage)  # the coverage each threshold adds, times its risk:
    np.multiply(risk[1:], weighted, out=weighted)
    return RiskCoverage(
        threshold=threshold,
        coverage=coverage,
        risk=risk,
        n=n,
        errors=errors,
        aurc=float(np.sum(weighted)),
        oracle_aurc=oracle_aurc(n, errors),
    )


def weighted_curve(steps: Steps, errors: int) -> RiskCoverage:
    """The curve of weighted steps: coverage the weight acted on over the total weight, risk
    the wrong weight over the weight acted on; ``errors`` the raw count of wrong rows."""
    assert steps.weight is not None and steps.wrong_weight is not None  # weighted steps
    total, m = steps.total, steps.threshold.size
    threshold = np.empty(m + 1)
    threshold[0], threshold[1:] = np.inf, steps.threshold
    coverage = np.zeros(m + 1)
    coverage[1:] = steps.weight / total
    risk = np.full(m + 1, np.nan)
    risk[1:] = steps.wrong_weight / steps.weight
    error_weight = float(steps.wrong_weight[-1])
    return RiskCoverage(
        threshold=threshold,
        coverage=coverage,
        risk=risk,
        n=steps.n,
        errors=errors,
        aurc=float(np.sum(np.diff(coverage) * risk[1:])),
        oracle_aurc=oracle_aurc_weighted(total, error_weight),
        weight=total,
        error_weight=error_weight,
        steps=steps,
    )
