"""Thresholds from stated costs: Chow's rule for a calibrated confidence (seed 002, Equation 11)
and the threshold that minimises the empirical cost on data (Equation 12)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .. import _validate as v
from .coverage import sorted_steps, validated

__all__ = ["ThresholdChoice", "choose_threshold", "chow_threshold", "costs"]


def costs(l_wrong: Any, l_defer: Any, *, where: str) -> tuple[float, float]:
    """Positive costs with deferring cheaper than a wrong action."""
    for name, value in (("l_wrong", l_wrong), ("l_defer", l_defer)):
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float, np.number))
            or not (math.isfinite(float(value)) and float(value) > 0)
        ):
            raise v.InputError(f"{where}: {name} must be a positive number, got {value!r}.")
    if not float(l_defer) < float(l_wrong):
        raise v.InputError(
            f"{where}: deferring must cost less than a wrong action (l_defer < l_wrong), got "
            f"l_defer = {l_defer} and l_wrong = {l_wrong}; otherwise deferring everything is "
            "always at least as good."
        )
    return float(l_wrong), float(l_defer)


def chow_threshold(l_wrong: float, l_defer: float) -> float:
    """Chow's (1970) threshold for a calibrated confidence: act when p >= 1 - l_defer / l_wrong.

    Examples
    --------
    >>> import calibkit as ck
    >>> ck.chow_threshold(10, 1), ck.chow_threshold(50, 2)
    (0.9, 0.96)
    """
    l_wrong, l_defer = costs(l_wrong, l_defer, where="chow_threshold")
    return 1.0 - l_defer / l_wrong


@dataclass(frozen=True)
class ThresholdChoice:
    """The threshold that minimised the cost per case on the data it was chosen on, with its
    coverage, selective risk and number of acted-on predictions; Chow's threshold for the same
    costs and its cost on these data, for comparison (seed 002 reads their gap as miscalibration
    near the threshold)."""

    threshold: float
    cost: float
    coverage: float
    risk: float
    n_acted: int
    n: int
    l_wrong: float
    l_defer: float
    chow_threshold: float
    chow_cost: float

    @property
    def gap(self) -> float:
        """Empirical threshold minus Chow's (inf when the choice is to act on nothing)."""
        return self.threshold - self.chow_threshold

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["threshold"] = None if math.isinf(self.threshold) else self.threshold
        d["risk"] = None if math.isnan(self.risk) else self.risk
        d["gap"] = None if math.isinf(self.gap) else self.gap
        return d

    def __str__(self) -> str:
        t = (
            "above every confidence (defer all)"
            if math.isinf(self.threshold)
            else (f"{self.threshold:.4g}")
        )
        risk = "-" if math.isnan(self.risk) else f"{self.risk:.4f}"
        return (
            f"threshold {t}: cost {self.cost:.4f} per case, coverage {self.coverage:.4f}, risk "
            f"{risk}, {self.n_acted} of {self.n} acted on (l_wrong = {self.l_wrong:g}, l_defer = "
            f"{self.l_defer:g}); Chow's threshold {self.chow_threshold:.4g} costs "
            f"{self.chow_cost:.4f} per case here"
        )


def cost_at(
    confidence: np.ndarray, outcome: np.ndarray, threshold: float, l_wrong: float, l_defer: float
) -> tuple[float, int, int]:
    """Cost per case, number acted on and number wrong among them, acting when conf >= t."""
    acted = confidence >= threshold
    n_acted = int(np.count_nonzero(acted))
    wrong = int(np.count_nonzero(acted & (outcome == 0)))
    return (
        (wrong * l_wrong + (confidence.size - n_acted) * l_defer) / confidence.size,
        n_acted,
        wrong,
    )


def choose_threshold(
    confidence: Any, outcome: Any, l_wrong: float, l_defer: float
) -> ThresholdChoice:
    """The threshold minimising the empirical cost per case (seed 002, Equation 12).

    Tries every observed confidence and one value above the largest (act on nothing); equal
    confidences are accepted or deferred together. Among equally cheap thresholds the one that
    acts on more cases is chosen. Report its cost, coverage and risk on held-out data, not on
    the data it was chosen on. O(N log N).

    Examples
    --------
    Seed 002's five predictions with a wrong action ten times the cost of a review:

    >>> import calibkit as ck
    >>> c = ck.choose_threshold([0.95, 0.9, 0.8, 0.7, 0.6], [1, 1, 0, 1, 0], 10, 1)
    >>> c.threshold, round(c.cost, 2), c.coverage, c.chow_threshold
    (0.9, 0.6, 0.4, 0.9)
    """
    where = "choose_threshold"
    l_wrong, l_defer = costs(l_wrong, l_defer, where=where)
    conf, out = validated(confidence, outcome, where=where)
    steps = sorted_steps(conf, out)
    n = steps.n
    acted = np.concatenate(([0], steps.acted))
    wrong = np.concatenate(([0], steps.wrong))
    cost = (wrong * l_wrong + (n - acted) * l_defer) / n
    best = int(np.flatnonzero(cost == cost.min())[-1])  # the cheapest; ties: act on more
    threshold = math.inf if best == 0 else float(steps.threshold[best - 1])
    chow = 1.0 - l_defer / l_wrong
    chow_cost, _, _ = cost_at(conf, out, chow, l_wrong, l_defer)
    return ThresholdChoice(
        threshold=threshold,
        cost=float(cost[best]),
        coverage=float(acted[best] / n),
        risk=float(wrong[best] / acted[best]) if acted[best] else math.nan,
        n_acted=int(acted[best]),
        n=n,
        l_wrong=l_wrong,
        l_defer=l_defer,
        chow_threshold=chow,
        chow_cost=chow_cost,
    )
