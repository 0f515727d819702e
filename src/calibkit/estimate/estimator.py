"""Estimated performance without labels: fit on labelled reference rows, estimate on unlabelled
target rows, with a bootstrap interval and the reasons not to trust it."""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from .. import _validate as v
from .._errors import InputError, NotFittedError
from ..measure.uncertainty import BootstrapInterval
from ..recalibrate import IsotonicCalibration
from .inputs import Scores, read_labels, read_scores
from .methods import METHODS, SCORES, Fitted, correct_of, fit_method, new_calibrator
from .metrics import NAMES, Policy, Values, binary_metrics, threshold_metrics
from .periods import PeriodEstimates, estimate_periods
from .result import PerformanceEstimate
from .sums import drawn_sums, summed_target
from .trust import trust_notes

__all__ = ["ESTIMANDS", "PerformanceEstimator", "estimate_performance"]

ESTIMANDS = ("rows", "population")

_ROWS = {
    "cbpe": "percentile bootstrap: reference rows resampled and the calibrator refitted, the "
    "target rows' outcomes drawn from the refitted probabilities",
    "atc": "percentile bootstrap: reference rows resampled and the threshold refitted, the "
    "target's mean outcome drawn normal with the reference's residual variance",
    "doc": "percentile bootstrap: reference rows resampled and the offset refitted, the "
    "target's mean outcome drawn normal with the reference's residual variance",
}
_SUMMED = (
    "the number right among the rows acted on and among the others each drawn normal with its "
    "exact mean and variance under the refitted isotonic map (a large target)"
)
_POPULATION = "percentile bootstrap: reference rows resampled and refitted, target rows resampled"


class PerformanceEstimator:
    """Estimate a model's performance on unlabelled target rows from its confidence.

    Fitted on labelled reference rows (``fit``), it estimates on target rows without labels
    (``estimate``) the top-label accuracy; with a ``threshold`` the coverage, selective risk
    and expected cost of acting when the top-label confidence >= threshold (deferring
    otherwise); and, for two-class probabilities with CBPE, precision, recall, F1 and ROC AUC.

    Parameters
    ----------
    method : {"cbpe", "atc", "doc"}
        ``"cbpe"``: confidence-based performance estimation: the calibrator fitted on the
        reference maps each target row to its probability of being right (two classes: to its
        P(label = 1), whose expected confusion matrix and probability-weighted pair count give
        precision, recall, F1 and AUC; :mod:`calibkit.estimate.metrics` has the formulas).
        ``"atc"``: average thresholded confidence (Garg et al. 2022): the share of target rows
        whose score exceeds the threshold at which the reference's share equals its accuracy.
        ``"doc"``: difference of confidences (Guillory et al. 2021): reference accuracy minus
        (mean reference confidence - mean target confidence).
    calibrator : str or Calibrator
        CBPE's calibrator: ``"isotonic"`` (default), ``"temperature"``, ``"platt"``,
        ``"histogram"``, ``"beta"`` or an unfitted instance (its settings are copied for every
        refit). Temperature, vector and matrix scaling are fitted on the (N, C) probabilities of
        a multiclass model; the others on its top-label confidence and whether it was right;
        for two classes every calibrator maps P(label = 1).
    score : {"confidence", "negative_entropy"}
        ATC's score: the top-label confidence, or sum p log p of the probabilities.
    from_logits : bool
        (N, C) inputs are logits (softmax is applied) rather than probabilities.

    Notes
    -----
    **Input.** (N, C) probabilities with class labels 0..C-1, or a 1-D top-label confidence
    with 0/1 outcomes (1 = the prediction was right), for reference and target alike.

    **Interval.** ``estimand="rows"`` (default) estimates the performance the labels of these
    target rows would show. Each of ``n_boot`` resamples draws the reference rows with
    replacement and refits the method (the calibrator's error), then draws the target rows'
    outcomes: CBPE from the refitted per-row probabilities; ATC and DoC, which give none, add
    to their estimate a normal draw of the mean residual, right minus the per-row estimate,
    with the residual variance on the resampled reference rows (all of them for accuracy,
    those acted on for the selective risk and cost). ``estimand="population"`` estimates the
    performance on the distribution the target rows come from: each resample redraws the
    reference rows (refit) and the target rows, jointly. The interval is the percentile one of
    the resampled values.

    **Trust.** ``trust`` names each rule that fired: the reference has fewer than 500 rows;
    more than 1% of the target's top-label confidences lie outside the reference's range;
    the Kolmogorov-Smirnov distance between the two confidence distributions exceeds 0.1
    (a large shift: the reference's calibration may not hold there). No rule detects a shift
    that leaves the confidences unchanged.

    Examples
    --------
    A perfectly calibrated reference (half right at 0.5, all right at 1.0): CBPE's estimate
    on target rows is their mean confidence, DoC's the same here.

    >>> import calibkit as ck
    >>> ref = [0.5, 0.5, 1.0, 1.0]
    >>> est = ck.PerformanceEstimator(method="doc").fit(ref, [1, 0, 1, 1])
    >>> est.estimate([0.5, 1.0, 1.0], n_boot=20).accuracy.estimate
    0.8333333333333334
    """

    def __init__(
        self,
        *,
        method: str = "cbpe",
        calibrator: Any = "isotonic",
        score: str = "confidence",
        from_logits: bool = False,
    ) -> None:
        self.method = method
        self.calibrator = calibrator
        self.score = score
        self.from_logits = from_logits

    def _check(self, where: str) -> None:
        v.choice(self.method, name="method", allowed=METHODS, where=where)
        v.choice(self.score, name="score", allowed=SCORES, where=where)
        if not isinstance(self.from_logits, (bool, np.bool_)):
            raise InputError(
                f"{where}: from_logits must be True or False, got {self.from_logits!r}."
            )
        if self.method == "cbpe":
            new_calibrator(self.calibrator, where=where)

    def fit(self, reference: Any, reference_labels: Any) -> PerformanceEstimator:
        """Fit on labelled reference rows: (N, C) probabilities (or logits) with class labels, or
        a 1-D top-label confidence with 0/1 outcomes."""
        where = "PerformanceEstimator.fit"
        self._check(where)
        ref = read_scores(reference, from_logits=self.from_logits, where=where, name="reference")
        labels = read_labels(reference_labels, ref, where=where, name="reference_labels")
        self.fitted_ = self._fit(ref, labels, where=where)
        self.reference_ = ref
        self.labels_ = labels
        right = labels if ref.probs is None else labels == ref.predicted
        self.reference_right_ = right.astype(np.float64)
        self.reference_accuracy_ = float(np.mean(right))
        return self

    def _fit(self, ref: Scores, labels: np.ndarray, *, where: str) -> Fitted:
        return fit_method(
            self.method, ref, labels, calibrator=self.calibrator, score=self.score, where=where
        )

    def _resample(self, rng: np.random.Generator, *, where: str) -> np.ndarray:
        """Reference rows drawn with replacement; for CBPE redrawn (up to 100 times) until both
        outcomes of the calibrated event are among them, as a calibrator needs."""
        n = self.reference_.n
        event = self.labels_ if self.reference_.probs is None or self.reference_.binary else None
        if event is None:
            event = (self.labels_ == self.reference_.predicted).astype(np.int64)
        for _ in range(100):
            index = rng.integers(0, n, n)
            if self.method != "cbpe" or np.ptp(event[index]) > 0:
                return index
        raise InputError(
            f"{where}: 100 resamples of the {n} reference rows in a row held one outcome only; "
            "the reference is too small or too one-sided to bootstrap a calibrator. Use more "
            "reference rows."
        )

    def estimate(
        self,
        target: Any,
        *,
        threshold: float | None = None,
        l_wrong: float | None = None,
        l_defer: float | None = None,
        level: float = 0.95,
        n_boot: int = 200,
        seed: int | np.random.Generator | None = 0,
        estimand: str = "rows",
    ) -> PerformanceEstimate:
        """Estimate performance on unlabelled target rows (the same kind of input as the
        reference), each quantity with its ``level`` interval from ``n_boot`` resamples."""
        where = "PerformanceEstimator.estimate"
        tgt = self._target(target, where=where)
        return self._estimate_scores(
            tgt,
            threshold=threshold,
            l_wrong=l_wrong,
            l_defer=l_defer,
            level=level,
            n_boot=n_boot,
            seed=seed,
            estimand=estimand,
            where=where,
        )

    def by_period(
        self,
        target: Any,
        by: Any,
        *,
        target_labels: Any = None,
        threshold: float | None = None,
        l_wrong: float | None = None,
        l_defer: float | None = None,
        level: float = 0.95,
        n_boot: int = 200,
        seed: int | np.random.Generator | None = 0,
        estimand: str = "rows",
    ) -> PeriodEstimates:
        """Estimate every period of the target (``by``: one period per row, a day, a week, a
        model version) and test whether its traffic moved from the reference's.

        Each period gets :meth:`estimate` on its rows; a two-sample Kolmogorov-Smirnov test of
        its top-label confidences against the reference's, and with (N, C) probabilities a
        chi-squared test of its predicted-class mix; ``shifted`` when a test rejects at the
        family-wise ``level`` (Bonferroni over every period's tests, as the monitor does), and
        ``outside`` when a trust rule fired. ``target_labels`` (optional; NaN where a row has
        none) gives the accuracy of each period whose rows all have a label, beside its
        estimate.

        Examples
        --------
        >>> import numpy as np, calibkit as ck
        >>> rng = np.random.default_rng(0)
        >>> ref = rng.uniform(0.5, 1, 2000); y = (rng.random(2000) < ref).astype(int)
        >>> target = np.concatenate([rng.uniform(0.5, 1, 1000), rng.uniform(0.9, 1, 1000)])
        >>> week = np.repeat([1, 2], 1000)
        >>> m = ck.PerformanceEstimator().fit(ref, y).by_period(target, week, n_boot=50)
        >>> [(p.period, p.shifted, p.outside) for p in m.periods]
        [(1, False, False), (2, True, True)]
        """
        where = "PerformanceEstimator.by_period"
        tgt = self._target(target, where=where)
        level = v.level(level, where=where)
        labels = None
        if target_labels is not None:
            labels = _partial_labels(target_labels, tgt, where=where)
        return estimate_periods(
            self,
            tgt,
            by,
            labels=labels,
            level=level,
            where=where,
            threshold=threshold,
            l_wrong=l_wrong,
            l_defer=l_defer,
            n_boot=n_boot,
            seed=seed,
            estimand=estimand,
        )

    def _target(self, target: Any, *, where: str) -> Scores:
        if not hasattr(self, "fitted_"):
            raise NotFittedError(f"{where}: call fit(reference, reference_labels) first.")
        tgt = read_scores(target, from_logits=self.from_logits, where=where, name="target")
        ref = self.reference_
        if tgt.n_classes != ref.n_classes:
            raise InputError(
                f"{where}: the target has {_classes(tgt)} but the reference {_classes(ref)}; "
                "pass the target in the same form as the reference."
            )
        return tgt

    def _estimate_scores(
        self,
        tgt: Scores,
        *,
        threshold: float | None,
        l_wrong: float | None,
        l_defer: float | None,
        level: float,
        n_boot: int,
        seed: int | np.random.Generator | None,
        estimand: str,
        where: str,
    ) -> PerformanceEstimate:
        ref = self.reference_
        if self.method == "cbpe":
            # Every estimate is a sum over the target's rows, so their order is free: sorted by
            # the calibrator's input, each resample's map is evaluated in one forward sweep
            # (np.interp on sorted points is about ten times faster than on shuffled ones).
            if tgt.probs is None:
                tgt = Scores(np.sort(tgt.confidence), None)
            else:
                tgt = tgt.rows(np.argsort(tgt.positive if tgt.binary else tgt.confidence))
        policy = _policy(threshold, l_wrong, l_defer, where=where)
        level = v.level(level, where=where)
        n_boot = v.positive_int(n_boot, name="n_boot", where=where)
        estimand = v.choice(estimand, name="estimand", allowed=ESTIMANDS, where=where)
        rng = v.seed_or_rng(seed, where=where)
        point = _values(self.fitted_, tgt, policy)
        summed = summed_target(self.fitted_, tgt, policy) if estimand == "rows" else None
        draws: dict[str, list[float]] = {name: [] for name in NAMES}
        for _ in range(n_boot):
            index = self._resample(rng, where=where)
            resampled = ref.rows(index)
            refit = self._fit(resampled, self.labels_[index], where=where)
            if estimand == "population":
                values = _values(refit, tgt.rows(rng.integers(0, tgt.n, tgt.n)), policy)
            else:
                right = self.reference_right_[index]
                if summed is not None and isinstance(refit.calibrator, IsotonicCalibration):
                    values = drawn_sums(refit.calibrator, summed, policy, rng)
                else:
                    values = _drawn(refit, tgt, policy, rng, reference=(resampled, right))
            for name, value in values.items():
                if value is not None:
                    draws[name].append(value)
        method = _ROWS[self.method] if estimand == "rows" else _POPULATION
        if summed is not None:
            method += f"; {_SUMMED}"
        seed_value = int(seed) if isinstance(seed, (int, np.integer)) else None
        intervals = _intervals(point, draws, level=level, seed=seed_value, method=method)
        accuracy = cast(BootstrapInterval, intervals.pop("accuracy"))  # defined on any rows
        return PerformanceEstimate(
            method=self.method,
            n_reference=ref.n,
            n_target=tgt.n,
            reference_accuracy=self.reference_accuracy_,
            estimand=estimand,
            accuracy=accuracy,
            threshold=None if policy is None else policy.threshold,
            trust=trust_notes(ref, tgt),
            **intervals,
        )


def estimate_performance(
    reference: Any,
    reference_labels: Any,
    target: Any,
    *,
    method: str = "cbpe",
    calibrator: Any = "isotonic",
    score: str = "confidence",
    from_logits: bool = False,
    threshold: float | None = None,
    l_wrong: float | None = None,
    l_defer: float | None = None,
    level: float = 0.95,
    n_boot: int = 200,
    seed: int | np.random.Generator | None = 0,
    estimand: str = "rows",
) -> PerformanceEstimate:
    """Fit a :class:`PerformanceEstimator` on the reference and estimate on the target, in one
    call (the parameters are theirs).

    Examples
    --------
    >>> import calibkit as ck
    >>> r = ck.estimate_performance(
    ...     [0.2, 0.4, 0.6, 0.9], [0, 1, 0, 1], [0.3, 0.5, 0.95], method="atc", n_boot=20
    ... )
    >>> round(r.accuracy.estimate, 4)
    0.6667
    """
    estimator = PerformanceEstimator(
        method=method, calibrator=calibrator, score=score, from_logits=from_logits
    )
    return estimator.fit(reference, reference_labels).estimate(
        target,
        threshold=threshold,
        l_wrong=l_wrong,
        l_defer=l_defer,
        level=level,
        n_boot=n_boot,
        seed=seed,
        estimand=estimand,
    )


def _intervals(
    point: Values, draws: dict[str, list[float]], *, level: float, seed: int | None, method: str
) -> dict[str, BootstrapInterval | None]:
    """Each estimate with the percentile interval of its resampled values (None where the
    estimate, or every resampled value, is undefined)."""
    out: dict[str, BootstrapInterval | None] = {}
    for name in NAMES:
        estimate, drawn = point.get(name), draws[name]
        if estimate is None or not drawn:
            out[name] = None
            continue
        low, high = np.quantile(np.asarray(drawn), [(1 - level) / 2, (1 + level) / 2])
        out[name] = BootstrapInterval(
            float(estimate), float(low), float(high), level, len(drawn), seed, method
        )
    return out


def _partial_labels(y: Any, scores: Scores, *, where: str) -> np.ndarray:
    """Target labels where some rows have none: float64 with NaN for the missing; the others
    checked as the reference's are (class labels, or 0/1 outcomes for a 1-D confidence)."""
    arr = np.asarray(v.to_numpy(y, name="target_labels", where=where), dtype=np.float64)
    if arr.shape != (scores.n,):
        raise InputError(
            f"{where}: target_labels must hold one label per target row ({scores.n}), NaN where "
            f"a row has none; it has shape {arr.shape}."
        )
    known = ~np.isnan(arr)
    if known.any():
        read_labels(
            arr[known], scores.rows(np.flatnonzero(known)), where=where, name="target_labels"
        )
    return arr


def _classes(scores: Scores) -> str:
    return "a 1-D confidence" if scores.probs is None else f"{scores.n_classes} classes"


def _policy(threshold: Any, l_wrong: Any, l_defer: Any, *, where: str) -> Policy | None:
    if threshold is None:
        if l_wrong is not None or l_defer is not None:
            raise InputError(
                f"{where}: l_wrong and l_defer price the act/defer policy at a threshold; "
                "pass threshold= too."
            )
        return None
    t = v.number_between(
        threshold,
        name="threshold",
        where=where,
        low=0.0,
        high=1.0,
        hint=" (act when the top-label confidence >= threshold)",
    )
    if (l_wrong is None) != (l_defer is None):
        raise InputError(
            f"{where}: pass both l_wrong and l_defer for the expected cost, or neither."
        )
    costs = [
        None
        if c is None
        else v.number_between(c, name=name, where=where, low=0.0, high=float("inf"))
        for name, c in (("l_wrong", l_wrong), ("l_defer", l_defer))
    ]
    return Policy(t, costs[0], costs[1])


def _values(fitted: Fitted, target: Scores, policy: Policy | None) -> Values:
    """The estimates from the per-row expectations."""
    event = fitted.event(target) if fitted.method == "cbpe" else None
    right = fitted.correct(target) if event is None else correct_of(event, target)
    return _from_rows(right, event, target, policy)


def _from_rows(
    right: np.ndarray, event: np.ndarray | None, target: Scores, policy: Policy | None
) -> Values:
    out: Values = {"accuracy": float(np.mean(right))}
    if policy is not None:
        act = target.confidence >= policy.threshold
        out.update(
            threshold_metrics(target.n, int(np.count_nonzero(act)), float(right[act].sum()), policy)
        )
    if event is not None and target.binary:
        out.update(binary_metrics(event, target.predicted, target.positive))
    return out


def _drawn(
    fitted: Fitted,
    target: Scores,
    policy: Policy | None,
    rng: np.random.Generator,
    *,
    reference: tuple[Scores, np.ndarray],
) -> Values:
    """The performance of one draw of the target rows' outcomes under a refitted method: CBPE
    draws each row right or wrong from its probability; ATC and DoC, whose per-row estimates
    are no probabilities, add to their estimate a normal draw with the variance of the
    residual (right - estimate) on the (resampled) reference rows, over the rows counted."""
    if fitted.method == "cbpe":
        event = (rng.random(target.n) < fitted.event(target)).astype(np.float64)
        return _from_rows(correct_of(event, target), event, target, policy)
    ref, ref_right = reference
    residual = ref_right - fitted.correct(ref)
    right = fitted.correct(target)
    out: Values = {"accuracy": _noisy(float(right.mean()), residual, target.n, rng)}
    if policy is not None:
        act = target.confidence >= policy.threshold
        n_act = int(np.count_nonzero(act))
        ref_act = ref.confidence >= policy.threshold
        counted = residual[ref_act] if np.count_nonzero(ref_act) >= 2 else residual
        acts = _noisy(float(right[act].mean()), counted, n_act, rng) * n_act if n_act else 0.0
        out.update(threshold_metrics(target.n, n_act, acts, policy))
    return out


def _noisy(mean: float, residual: np.ndarray, n: int, rng: np.random.Generator) -> float:
    """``mean`` plus the mean of n outcome residuals, drawn normal with the reference's
    residual variance."""
    return mean + float(rng.normal(0.0, np.sqrt(residual.var() / n)))
