"""A threshold with a guaranteed selective risk: the most permissive threshold whose risk is
certified below a target with high probability over the draw of the calibration data
(fixed-sequence testing, as in Learn-then-Test, with a one-sided Clopper-Pearson bound)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .. import _validate as v
from ._format import threshold_text
from ._inputs import decision_inputs
from .coverage import sorted_steps

__all__ = [
    "GuaranteeEvaluation",
    "RiskGuarantee",
    "clopper_pearson_upper",
    "guaranteed_threshold",
]


def clopper_pearson_upper(errors: np.ndarray, trials: np.ndarray, delta: float) -> np.ndarray:
    """One-sided upper bound at level 1 - delta on a binomial proportion: the p with
    P(Binomial(trials, p) <= errors) = delta (1 when errors == trials). The upper end of the
    two-sided Clopper-Pearson interval at level 1 - 2 delta (``binomial_interval``)."""
    from scipy.special import betaincinv

    k = np.asarray(errors, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    full = k >= n
    with np.errstate(invalid="ignore"):
        bound = betaincinv(k + 1.0, np.where(full, 1.0, n - k), 1.0 - delta)
    return np.where(full, 1.0, bound)


def certified(errors: np.ndarray, trials: np.ndarray, target: float, delta: float) -> np.ndarray:
    """Whether the one-sided Clopper-Pearson bound is <= target, without inverting it: the bound
    is the p where P(Binomial(trials, p) <= errors) = delta, and that probability falls as p
    grows, so bound <= target exactly when P(Binomial(trials, target) <= errors) <= delta (one
    regularised incomplete beta per threshold instead of an inverse)."""
    from scipy.special import bdtr

    return np.asarray(bdtr(errors, trials, target) <= delta)


GUARANTEE = (
    "Covers: new cases exchangeable with the calibration data (drawn the same way, from the same "
    "population); over the draw of the calibration data, P(selective risk at this threshold > "
    "{target:g}) <= {delta:g}. The risk meant is the error rate among all future acted-on cases "
    "(the population selective risk), not on any finite test set. "
    "Does not cover: distribution shift (a new model version, a new population, a change in "
    "labelling); the risk of any single decision (a case just above the threshold may be wrong "
    "far more often than the average); thresholds chosen or retuned after looking at test data, "
    "or this procedure rerun until it gives a wanted answer."
)


@dataclass(frozen=True)
class RiskGuarantee:
    """The most permissive threshold certified by fixed-sequence testing.

    ``threshold`` is ``inf`` (act on nothing) when even the first threshold tested fails.
    ``risk`` is the empirical selective risk (NaN when nothing is acted on), ``bound`` its
    one-sided Clopper-Pearson upper bound at level 1 - delta (NaN likewise), ``n_tested`` how
    many distinct thresholds were tested (the accepted ones plus the first failure, if any),
    ``min_acted`` the fewest acted-on cases whose bound could reach the target even with no
    error (the test starts at the first threshold acting on that many). ``guarantee`` says in
    words what the result promises and what it does not.
    """

    threshold: float
    coverage: float
    risk: float
    bound: float
    n_acted: int
    errors: int
    n: int
    target_risk: float
    delta: float
    n_tested: int
    min_acted: int
    guarantee: str

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = asdict(self)
        for key in ("threshold", "risk", "bound"):
            if not math.isfinite(d[key]):
                d[key] = None
        return d

    def __str__(self) -> str:
        head = (
            f"guaranteed risk <= {self.target_risk:g} with probability >= {1 - self.delta:g} "
            f"({self.n} calibration cases, {self.n_tested} thresholds tested in fixed sequence)"
        )
        if math.isinf(self.threshold):
            why = (
                f"it takes at least {self.min_acted} acted-on cases to certify this target, and "
                f"there are {self.n}"
                if self.n_tested == 0
                else "even the first threshold tested fails"
            )
            body = (
                f"threshold above every confidence: act on nothing ({why}; accept a higher "
                "target or delta, or add data)"
            )
        else:
            body = (
                f"threshold {threshold_text(self.threshold)}: coverage {self.coverage:.4f} "
                f"({self.n_acted} "
                f"acted on), empirical risk {self.risk:.4f} ({self.errors} wrong), upper bound "
                f"{self.bound:.4f}"
            )
        return f"{head}\n{body}\n{self.guarantee}"

    def evaluate(
        self,
        confidence: Any = None,
        outcome: Any = None,
        *,
        probs: Any = None,
        labels: Any = None,
        from_logits: bool = False,
    ) -> GuaranteeEvaluation:
        """This threshold on other (held-out) data: how many cases it acts on and the error
        rate among them. Takes the inputs of :func:`guaranteed_threshold` (either form). A
        finite test set's risk may exceed the target even when the guarantee holds: the
        guarantee is about the population.

        Examples
        --------
        >>> from calibkit.decide.guarantee import guaranteed_threshold
        >>> conf = [1 - i / 100 for i in range(21)]
        >>> g = guaranteed_threshold(conf, [1] * 20 + [0], target_risk=0.2, delta=0.05)
        >>> e = g.evaluate([0.95, 0.9, 0.85, 0.5], [1, 0, 1, 1])
        >>> e.n_acted, e.risk
        (3, 0.3333333333333333)
        """
        conf, out = decision_inputs(
            confidence,
            outcome,
            probs=probs,
            labels=labels,
            from_logits=from_logits,
            where="RiskGuarantee.evaluate",
        )
        acted = conf >= self.threshold
        n_acted = int(np.count_nonzero(acted))
        wrong = int(np.count_nonzero(acted & (out == 0)))
        return GuaranteeEvaluation(
            guarantee=self,
            n=int(conf.size),
            n_acted=n_acted,
            errors=wrong,
            risk=wrong / n_acted if n_acted else math.nan,
        )


@dataclass(frozen=True)
class GuaranteeEvaluation:
    """A :class:`RiskGuarantee`'s threshold on other data (see :meth:`RiskGuarantee.evaluate`):
    cases acted on, errors among them and their rate (NaN when none is acted on)."""

    guarantee: RiskGuarantee
    n: int
    n_acted: int
    errors: int
    risk: float

    @property
    def coverage(self) -> float:
        return self.n_acted / self.n

    def to_dict(self) -> dict[str, Any]:
        """The numbers of the held-out data (the guarantee has its own ``to_dict``)."""
        return {
            "n": self.n,
            "n_acted": self.n_acted,
            "errors": self.errors,
            "coverage": self.coverage,
            "risk": None if math.isnan(self.risk) else self.risk,
        }

    def describe(self, on: str = "") -> str:
        """One line: "on <on>: coverage ..., risk ... (k of n acted on)"."""
        risk = "-" if math.isnan(self.risk) else f"{self.risk:.4f}"
        return (
            f"on {on or f'{self.n} held-out cases'}: coverage {self.coverage:.4f}, risk {risk} "
            f"({self.n_acted} of {self.n} acted on)."
        )

    def __str__(self) -> str:
        return f"{self.guarantee}\n{self.describe()}"


def fewest_acted(target_risk: float, delta: float) -> int:
    """The fewest acted-on cases whose bound can reach ``target_risk``: with no error at all the
    one-sided Clopper-Pearson bound is 1 - delta ** (1 / n), at most the target from
    n = log(delta) / log(1 - target) on."""
    n = max(1, math.ceil(math.log(delta) / math.log1p(-target_risk)) - 1)
    while clopper_pearson_upper(np.array([0]), np.array([n]), delta)[0] > target_risk:
        n += 1  # at most a step or two past the float estimate
    return n


def _probability(x: Any, *, name: str, where: str) -> float:
    if (
        isinstance(x, bool)
        or not isinstance(x, (int, float, np.integer, np.floating))
        or not 0.0 < float(x) < 1.0
    ):
        raise v.InputError(f"{where}: {name} must be a number strictly between 0 and 1, got {x!r}.")
    return float(x)


def guaranteed_threshold(
    confidence: Any = None,
    outcome: Any = None,
    *,
    target_risk: float,
    delta: float = 0.05,
    probs: Any = None,
    labels: Any = None,
    from_logits: bool = False,
) -> RiskGuarantee:
    """The most permissive threshold whose selective risk is certified <= ``target_risk`` with
    probability >= 1 - ``delta`` over the draw of these (calibration) data.

    Fixed-sequence testing (Learn-then-Test, Angelopoulos et al. 2021; in the spirit of
    Geifman and El-Yaniv's 2017 selection with guaranteed risk): walk the distinct confidences
    from the highest down, and at each compute the one-sided Clopper-Pearson upper bound at
    level 1 - delta on the error rate among the acted-on cases; accept while the bound is at
    most ``target_risk`` and stop at the first failure. The order is fixed before the outcomes
    are seen, so no multiplicity correction is needed: the chance that any accepted threshold
    has a true risk above the target is at most delta. Equal confidences are accepted together.

    The walk starts at the first threshold that acts on at least ``min_acted`` =
    ceil(log(delta) / log(1 - target_risk)) cases: above it even a run without errors cannot
    certify the target (one correct case bounds the risk only by 1 - delta), so testing those
    thresholds would stop every walk at its first step. Skipping them depends on target and
    delta alone, not on any outcome, and keeps the guarantee. O(N log N) for the sort, then
    bounds only up to the first failure.

    The candidate thresholds are the observed confidences (as in Geifman and El-Yaniv); for a
    guarantee that is exact to the letter, round the confidences to a grid fixed in advance.
    What the guarantee covers and what it does not is in :attr:`RiskGuarantee.guarantee`.

    ``confidence`` is the confidence that each prediction is right and ``outcome`` whether it
    was (0/1). Instead, pass a model's class probabilities and labels as ``probs=``,
    ``labels=`` (1-D P(y = 1) of a binary model, or (N, C); logits with ``from_logits=True``):
    they are reduced to acting on the predicted class, as in :func:`choose_threshold`. Check
    the threshold on held-out data with :meth:`RiskGuarantee.evaluate`.

    Examples
    --------
    At target 0.2 and delta 0.05 it takes 14 cases without an error (1 - 0.05 ** (1 / 14) =
    0.192); the walk starts there. Twenty correct predictions bound the risk by
    1 - 0.05 ** (1 / 20) = 0.139; the twenty-first, wrong, lifts the bound to 0.207 and stops
    the walk after 8 tests (14 to 21 cases):

    >>> from calibkit.decide.guarantee import guaranteed_threshold
    >>> conf = [1 - i / 100 for i in range(21)]
    >>> g = guaranteed_threshold(conf, [1] * 20 + [0], target_risk=0.2, delta=0.05)
    >>> g.min_acted, g.threshold, g.n_acted, round(g.bound, 3), g.n_tested
    (14, 0.81, 20, 0.139, 8)
    """
    where = "guaranteed_threshold"
    target = _probability(target_risk, name="target_risk", where=where)
    delta = _probability(delta, name="delta", where=where)
    conf, out = decision_inputs(
        confidence, outcome, probs=probs, labels=labels, from_logits=from_logits, where=where
    )
    steps = sorted_steps(conf, out)
    m = steps.threshold.size
    need = fewest_acted(target, delta)
    # thresholds acting on fewer than `need` cases fail whatever their outcomes: the sequence
    # starts after them (a choice made from target and delta alone, before any outcome is seen)
    first = int(np.searchsorted(steps.acted, need, side="left"))
    accepted = first  # thresholds accepted so far (the skipped ones count as passed over)
    start, chunk = first, 256
    failed = False
    while start < m and not failed:  # bounds in growing chunks, stopping at the first failure
        stop = min(m, start + chunk)
        ok = certified(steps.wrong[start:stop], steps.acted[start:stop], target, delta)
        if ok.all():
            accepted = stop
        else:
            accepted = start + int(np.argmin(ok))
            failed = True
        start, chunk = stop, chunk * 4
    n = steps.n
    text = GUARANTEE.format(target=target, delta=delta)
    tested = (accepted + 1 if failed else m) - first
    if accepted == first:
        return RiskGuarantee(
            threshold=math.inf,
            coverage=0.0,
            risk=math.nan,
            bound=math.nan,
            n_acted=0,
            errors=0,
            n=n,
            target_risk=target,
            delta=delta,
            n_tested=tested,
            min_acted=need,
            guarantee=text,
        )
    i = accepted - 1
    n_acted, errors = int(steps.acted[i]), int(steps.wrong[i])
    return RiskGuarantee(
        threshold=float(steps.threshold[i]),
        coverage=n_acted / n,
        risk=errors / n_acted,
        bound=float(clopper_pearson_upper(np.array([errors]), np.array([n_acted]), delta)[0]),
        n_acted=n_acted,
        errors=errors,
        n=n,
        target_risk=target,
        delta=delta,
        n_tested=tested,
        min_acted=need,
        guarantee=text,
    )
