"""A threshold with a guaranteed selective risk: the most permissive threshold whose risk is
certified below a target with high probability over the draw of the calibration data
(fixed-sequence testing, as in Learn-then-Test, with a one-sided Clopper-Pearson bound)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .. import _display
from .. import _validate as v
from ._format import threshold_text
from ._inputs import decision_inputs
from .coverage import sorted_steps
from .thresholds import without_weights
from .weighted import acted_at

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


def certified_effective(
    errors: np.ndarray, trials: np.ndarray, target: float, delta: float
) -> np.ndarray:
    """:func:`certified` for effective counts that need not be whole numbers: P(Binomial(n,
    target) <= k) as the regularised incomplete beta I_{1 - target}(n - k, k + 1), its
    continuous extension (1 when k >= n: such a bound is 1 and certifies nothing)."""
    from scipy.special import betainc

    k = np.asarray(errors, dtype=np.float64)
    n = np.asarray(trials, dtype=np.float64)
    full = k >= n
    with np.errstate(invalid="ignore"):
        p = betainc(np.where(full, 1.0, n - k), k + 1.0, 1.0 - target)
    return np.asarray(np.where(full, 1.0, p) <= delta)


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

#: What the guarantee adds with sample weights.
WEIGHTED_GUARANTEE = (
    " With sample weights the risk is the weighted error rate and the bound is the one-sided "
    "Clopper-Pearson bound at Kish's effective size of the acted-on rows ((sum w) ** 2 / "
    "sum w ** 2 trials, the weighted error rate times it errors): the guarantee then holds "
    "only approximately (exactly when every weight is equal); it assumes the weights are "
    "fixed, not estimated from the same data."
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
    weight_acted: float | None = None
    error_weight: float | None = None
    weight: float | None = None
    effective_n: float | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = asdict(self)
        for key in ("threshold", "risk", "bound"):
            if not math.isfinite(d[key]):
                d[key] = None
        if self.weight is None:
            del d["effective_n"]
        return without_weights(d, self.weight)

    def _repr_html_(self) -> str:
        """What a notebook shows: the HTML report's section for this result."""
        return _display.html(self)

    def __str__(self) -> str:
        head = (
            f"guaranteed risk <= {self.target_risk:g} with probability >= {1 - self.delta:g} "
            f"({self.n} calibration cases, {self.n_tested} thresholds tested in fixed sequence)"
        )
        if self.weight is not None:
            head += f"; weighted (total weight {self.weight:.6g})"
        if math.isinf(self.threshold):
            why = (
                f"it takes at least {self.min_acted} acted-on cases to certify this target, and "
                f"there are {self.n}"
                if self.n_tested == 0
                else "even the first threshold tested fails"
            )
            if self.n_tested == 0 and self.weight is not None:
                why = (
                    f"it takes an effective size of at least {self.min_acted} acted-on cases to "
                    f"certify this target, and the weights of the {self.n} give less"
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
            if self.effective_n is not None:
                body += (
                    f"; weight {self.weight_acted:.6g} acted on, {self.error_weight:.6g} wrong, "
                    f"bound at Kish's effective size {self.effective_n:.1f}"
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
        sample_weight: Any = None,
    ) -> GuaranteeEvaluation:
        """This threshold on other (held-out) data: how many cases it acts on and the error
        rate among them. Takes the inputs of :func:`guaranteed_threshold` (either form). A
        finite test set's risk may exceed the target even when the guarantee holds: the
        guarantee is about the population. With ``sample_weight`` the coverage and risk are
        weighted.

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
        w = v.sample_weight(sample_weight, n=conf.shape[0], where="RiskGuarantee.evaluate")
        a = acted_at(conf, out, self.threshold, w)
        return GuaranteeEvaluation(
            guarantee=self,
            n=a.n,
            n_acted=a.n_acted,
            errors=a.n_wrong,
            risk=a.wrong_mass / a.mass if a.mass else math.nan,
            weight_acted=None if w is None else a.mass,
            weight=None if w is None else a.total,
        )


@dataclass(frozen=True)
class GuaranteeEvaluation:
    """A :class:`RiskGuarantee`'s threshold on other data (see :meth:`RiskGuarantee.evaluate`):
    cases acted on, errors among them and their rate (NaN when none is acted on); with sample
    weights the rate and coverage weighted and ``weight_acted`` and ``weight`` beside the raw
    counts (None when unweighted)."""

    guarantee: RiskGuarantee
    n: int
    n_acted: int
    errors: int
    risk: float
    weight_acted: float | None = None
    weight: float | None = None

    @property
    def coverage(self) -> float:
        if self.weight is not None and self.weight_acted is not None:
            return self.weight_acted / self.weight
        return self.n_acted / self.n

    def to_dict(self) -> dict[str, Any]:
        """The numbers of the held-out data (the guarantee has its own ``to_dict``)."""
        return {
            "n": self.n,
            "n_acted": self.n_acted,
            "errors": self.errors,
            "coverage": self.coverage,
            "risk": None if math.isnan(self.risk) else self.risk,
            **(
                {}
                if self.weight is None
                else {"weight_acted": self.weight_acted, "weight": self.weight}
            ),
        }

    def describe(self, on: str = "") -> str:
        """One line: "on <on>: coverage ..., risk ... (k of n acted on)"."""
        risk = "-" if math.isnan(self.risk) else f"{self.risk:.4f}"
        return (
            f"on {on or f'{self.n} held-out cases'}: coverage {self.coverage:.4f}, risk {risk} "
            f"({self.n_acted} of {self.n} acted on)."
        )

    def _repr_html_(self) -> str:
        """What a notebook shows: the HTML report's section for this result."""
        return _display.html(self)

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
    sample_weight: Any = None,
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

    With ``sample_weight`` (finite, non-negative, one per row) the risk is the weighted error
    rate and each threshold's bound is the one-sided Clopper-Pearson bound with Kish's
    effective size of its acted-on rows, n_eff = (sum w) ** 2 / sum w ** 2, as the number of
    trials and the weighted error rate times n_eff as the errors (the binomial probability
    continued to counts that are not whole by the incomplete beta function); the walk starts
    at the first threshold whose n_eff reaches ``min_acted`` (a choice made from the weights
    and confidences alone, before any outcome is seen). The guarantee then holds only
    approximately: Kish's size is exact for equal weights (the result is then the unweighted
    one), an approximation otherwise, and it assumes the weights were not estimated on the
    same data. In seeded simulations (500 draws of 300 rows, weights uniform on [1, 4]
    independent of the outcome, target 0.15, delta 0.1) the chosen threshold's population
    risk exceeded the target in 4.4% of draws. Whole weights are *not* read as repeated rows
    here: w copies of one case are
    not w independent draws, and certifying them as such would overstate the evidence.

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
    w = v.sample_weight(sample_weight, n=conf.shape[0], where=where)
    if w is not None:
        return _weighted_guarantee(conf, out, w, target=target, delta=delta)
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


def _weighted_guarantee(
    conf: np.ndarray, out: np.ndarray, w: np.ndarray, *, target: float, delta: float
) -> RiskGuarantee:
    """:func:`guaranteed_threshold` with checked weights: the same fixed-sequence walk on the
    bounds at Kish's effective size of each threshold's acted-on rows."""
    steps = sorted_steps(conf, out, w)
    assert steps.weight is not None and steps.wrong_weight is not None
    assert steps.weight_sq is not None
    m = steps.threshold.size
    need = fewest_acted(target, delta)
    n_eff = np.asarray(v.effective_size(steps.weight, steps.weight_sq), dtype=np.float64)
    risk = steps.wrong_weight / steps.weight
    k_eff = np.minimum(risk * n_eff, n_eff)
    big_enough = n_eff >= need
    first = int(np.argmax(big_enough)) if big_enough.any() else m
    ok = certified_effective(k_eff[first:], n_eff[first:], target, delta)
    failed = not ok.all()
    accepted = first + (int(np.argmin(ok)) if failed else ok.size)
    tested = (accepted + 1 if failed else m) - first
    text = GUARANTEE.format(target=target, delta=delta) + WEIGHTED_GUARANTEE

    def result(**fields: Any) -> RiskGuarantee:
        return RiskGuarantee(
            **fields,
            n=steps.n,
            target_risk=target,
            delta=delta,
            n_tested=tested,
            min_acted=need,
            guarantee=text,
            weight=steps.total,
        )

    if accepted == first:
        return result(
            threshold=math.inf,
            coverage=0.0,
            risk=math.nan,
            bound=math.nan,
            n_acted=0,
            errors=0,
            weight_acted=0.0,
            error_weight=0.0,
            effective_n=0.0,
        )
    i = accepted - 1
    bound = clopper_pearson_upper(np.array([k_eff[i]]), np.array([n_eff[i]]), delta)[0]
    return result(
        threshold=float(steps.threshold[i]),
        coverage=float(steps.weight[i]) / steps.total,
        risk=float(risk[i]),
        bound=float(bound),
        n_acted=int(steps.acted[i]),
        errors=int(steps.wrong[i]),
        weight_acted=float(steps.weight[i]),
        error_weight=float(steps.wrong_weight[i]),
        effective_n=float(n_eff[i]),
    )
