"""Thresholds from stated costs: Chow's rule for a calibrated confidence (Chow 1970, "On optimum
recognition error and reject tradeoff": act when p >= 1 - l_defer / l_wrong) and the threshold
that minimises the empirical cost per case on data."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .. import _validate as v
from ._format import threshold_text
from ._inputs import decision_inputs
from .coverage import sorted_steps
from .weighted import acted_at

__all__ = ["ThresholdChoice", "choose_threshold", "chow_threshold", "costs"]


def costs(*, l_wrong: Any, l_defer: Any, where: str) -> tuple[float, float]:
    """Positive costs with deferring cheaper than a wrong action."""
    for name, value in (("l_wrong", l_wrong), ("l_defer", l_defer)):
        if value is None:
            raise v.InputError(
                f"{where}: {name} is required: the cost of acting on a wrong prediction "
                "(l_wrong) and of deferring a case (l_defer), e.g. l_wrong=10, l_defer=1."
            )
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
    l_wrong, l_defer = costs(l_wrong=l_wrong, l_defer=l_defer, where="chow_threshold")
    return 1.0 - l_defer / l_wrong


@dataclass(frozen=True)
class ThresholdChoice:
    """The threshold that minimised the cost per case on the data it was chosen on, with its
    coverage, selective risk and number of acted-on predictions; Chow's threshold for the same
    costs and its cost on these data, for comparison (their gap reads as miscalibration near the
    threshold: for a calibrated confidence the two agree).

    With sample weights the cost is per unit weight and the coverage and risk weighted;
    ``n_acted`` and ``n`` stay raw row counts, ``weight_acted`` and ``weight`` are the weighted
    ones (None when unweighted)."""

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
    weight_acted: float | None = None
    weight: float | None = None

    @property
    def gap(self) -> float:
        """Empirical threshold minus Chow's (inf when the choice is to act on nothing)."""
        return self.threshold - self.chow_threshold

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["threshold"] = None if math.isinf(self.threshold) else self.threshold
        d["risk"] = None if math.isnan(self.risk) else self.risk
        d["gap"] = None if math.isinf(self.gap) else self.gap
        return without_weights(d, self.weight)

    def __str__(self) -> str:
        t = threshold_text(self.threshold, above="above every confidence (defer all)")
        risk = "-" if math.isnan(self.risk) else f"{self.risk:.4f}"
        weighted = (
            "" if self.weight is None else f" (weight {self.weight_acted:.6g} of {self.weight:.6g})"
        )
        return (
            f"threshold {t}: cost {self.cost:.4f} per case, coverage {self.coverage:.4f}, risk "
            f"{risk}, {self.n_acted} of {self.n} acted on{weighted} (l_wrong = "
            f"{self.l_wrong:g}, l_defer = {self.l_defer:g}); Chow's threshold "
            f"{threshold_text(self.chow_threshold)} costs {self.chow_cost:.4f} per case here"
        )


def without_weights(d: dict[str, Any], weight: float | None) -> dict[str, Any]:
    """A result's dict without its weighted counts (the keys ending in "weight" or starting
    with "weight_") when it is unweighted: unweighted results keep the keys they had."""
    if weight is None:
        for key in [k for k in d if k == "weight" or k.startswith("weight_")]:
            del d[key]
        for key in [k for k in d if k.endswith("_weight")]:
            del d[key]
    return d


def cost_at(
    confidence: np.ndarray,
    outcome: np.ndarray,
    threshold: float,
    *,
    l_wrong: float,
    l_defer: float,
    weight: np.ndarray | None = None,
) -> tuple[float, int, int]:
    """Cost per case (per unit weight), raw number acted on and raw number wrong among them,
    acting when conf >= t."""
    a = acted_at(confidence, outcome, threshold, weight)
    return (
        (a.wrong_mass * l_wrong + (a.total - a.mass) * l_defer) / a.total,
        a.n_acted,
        a.n_wrong,
    )


def choose_threshold(
    confidence: Any = None,
    outcome: Any = None,
    l_wrong: float | None = None,
    l_defer: float | None = None,
    *,
    probs: Any = None,
    labels: Any = None,
    from_logits: bool = False,
    sample_weight: Any = None,
) -> ThresholdChoice:
    """The threshold minimising the empirical cost per case on data.

    The cost per case is ``coverage * risk * l_wrong + (1 - coverage) * l_defer``. Tries every
    observed confidence and one value above the largest (act on nothing); equal confidences are
    accepted or deferred together. Among equally cheap thresholds the one that acts on more
    cases is chosen. Report its cost, coverage and risk on held-out data, not on the data it was
    chosen on. O(N log N).

    Parameters
    ----------
    confidence, outcome : arrays of shape (N,)
        The confidence that each prediction is right, in [0, 1], and whether it was (0/1: the
        outcome is correctness, not the class label).
    l_wrong, l_defer : float
        Cost of acting on a wrong prediction and of deferring a case, 0 < l_defer < l_wrong.
    probs, labels : arrays, keyword only
        Instead of ``confidence`` and ``outcome``: a model's 1-D P(y = 1) (binary) or (N, C)
        class probabilities (logits with ``from_logits=True``) and the class labels, reduced to
        acting on the predicted class (confidence max(p, 1 - p), right when (p >= 0.5) == y;
        top-label for (N, C)). Then pass the costs by name. A 1-D P(y = 1) passed as
        ``confidence`` is wrong and warns when at least 10% of it lies below 0.05. To set a
        threshold on P(y = 1) itself from the costs of a false positive and a false negative,
        see :func:`calibkit.choose_binary_threshold`.
    sample_weight : array of shape (N,), keyword only
        Finite, non-negative weights: the cost is then the expected cost per unit weight,
        (weight wrong and acted on x l_wrong + weight deferred x l_defer) / total weight, and
        the coverage and risk weighted; with whole weights the choice on the data with each
        row repeated w times (a row of weight 0 left out).

    Examples
    --------
    Five predictions (the third and fifth wrong) with a wrong action ten times the cost of a
    review:

    >>> import calibkit as ck
    >>> c = ck.choose_threshold([0.95, 0.9, 0.8, 0.7, 0.6], [1, 1, 0, 1, 0], 10, 1)
    >>> c.threshold, round(c.cost, 2), c.coverage, c.chow_threshold
    (0.9, 0.6, 0.4, 0.9)

    A binary model's P(y = 1) and labels: the prediction 0 at P = 0.2 has confidence 0.8.

    >>> c = ck.choose_threshold(probs=[0.95, 0.2, 0.7, 0.4], labels=[1, 0, 0, 0],
    ...                         l_wrong=10, l_defer=1)
    >>> c.threshold, c.n_acted
    (0.8, 2)

    Weighted: the wrong prediction at 0.8 now stands for three cases and acting down to 0.7
    costs 30 per 7 of weight; acting on the first two costs 5 / 7:

    >>> c = ck.choose_threshold([0.95, 0.9, 0.8, 0.7], [1, 1, 0, 1], 10, 1,
    ...                         sample_weight=[1, 2, 3, 1])
    >>> c.threshold, round(c.cost, 4), c.n_acted, c.weight_acted, c.weight
    (0.9, 0.5714, 2, 3.0, 7.0)
    """
    where = "choose_threshold"
    l_wrong, l_defer = costs(l_wrong=l_wrong, l_defer=l_defer, where=where)
    conf, out = decision_inputs(
        confidence, outcome, probs=probs, labels=labels, from_logits=from_logits, where=where
    )
    w = v.sample_weight(sample_weight, n=conf.shape[0], where=where)
    return choose(conf, out, l_wrong=l_wrong, l_defer=l_defer, weight=w)


def choose(
    conf: np.ndarray,
    out: np.ndarray,
    *,
    l_wrong: float,
    l_defer: float,
    weight: np.ndarray | None = None,
) -> ThresholdChoice:
    """:func:`choose_threshold` of checked arrays, costs and weights."""
    steps = sorted_steps(conf, out, weight)
    n, total = steps.n, steps.total
    acted = np.concatenate(([0], steps.mass_acted))
    wrong = np.concatenate(([0], steps.mass_wrong))
    cost = (wrong * l_wrong + (total - acted) * l_defer) / total
    best = int(np.flatnonzero(cost == cost.min())[-1])  # the cheapest; ties: act on more
    threshold = math.inf if best == 0 else float(steps.threshold[best - 1])
    chow = 1.0 - l_defer / l_wrong
    chow_cost, _, _ = cost_at(conf, out, chow, l_wrong=l_wrong, l_defer=l_defer, weight=weight)
    weighted = (
        {} if weight is None else {"weight_acted": float(acted[best]), "weight": float(total)}
    )
    return ThresholdChoice(
        threshold=threshold,
        cost=float(cost[best]),
        coverage=float(acted[best] / total),
        risk=float(wrong[best] / acted[best]) if acted[best] else math.nan,
        n_acted=int(np.concatenate(([0], steps.acted))[best]),
        n=n,
        l_wrong=l_wrong,
        l_defer=l_defer,
        chow_threshold=chow,
        chow_cost=chow_cost,
        **weighted,
    )
