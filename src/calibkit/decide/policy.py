"""The validation -> test protocol of a decision policy, policy by policy: choose every
threshold on one split, report cost per case, coverage and selective risk on another.

Five policies: act on everything, defer everything, Chow's rule on the model's confidence
(Chow 1970: act when p >= 1 - l_defer / l_wrong), the threshold that minimised the validation
cost per case (coverage x risk x l_wrong + (1 - coverage) x l_defer), and, when
recalibrated confidences are given, Chow's rule on those (e.g. after temperature scaling fitted
on validation). Nothing is tuned on the test split.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _display
from .. import _validate as v
from ._format import threshold_text
from ._inputs import act_forecast, decision_inputs
from .coverage import RiskCoverage, curve
from .thresholds import ThresholdChoice, choose, cost_at, costs
from .weighted import acted_at

__all__ = ["PolicyRow", "PolicyTable", "act_forecast", "not_probabilities", "policy_table"]


@dataclass(frozen=True)
class PolicyRow:
    """One policy: act when the confidence it reads is at least ``threshold``.

    ``coverage``, ``risk`` (NaN when nothing is acted on), ``cost`` (per case) and ``n_acted``
    are measured on the held-out (eval) split; ``choice_cost`` is the same policy's cost per
    case on the split the thresholds were chosen on. With sample weights the coverage, risk
    and costs are weighted (per unit weight), ``n_acted`` stays the raw count and
    ``weight_acted`` is the weight acted on (None when unweighted).
    """

    key: str
    policy: str
    threshold: float
    coverage: float
    risk: float
    cost: float
    n_acted: int
    choice_cost: float
    calibrated: bool = False
    weight_acted: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "policy": self.policy,
            "threshold": None if math.isinf(self.threshold) else self.threshold,
            "coverage": self.coverage,
            "risk": None if math.isnan(self.risk) else self.risk,
            "cost": self.cost,
            "n_acted": self.n_acted,
            "choice_cost": self.choice_cost,
            "calibrated": self.calibrated,
            **({} if self.weight_acted is None else {"weight_acted": self.weight_acted}),
        }


@dataclass(frozen=True, eq=False)
class PolicyTable:
    """The policy table: every threshold chosen on one split (validation), judged on the
    held-out eval split (test).

    ``rows`` in the order act on everything, defer everything, Chow's rule, the threshold chosen
    on validation, and (when recalibrated confidences were given) Chow's rule after
    recalibration. ``choice`` is the cost-minimising choice on validation (with its cost,
    coverage and risk there, and the gap to Chow's threshold). ``n`` counts the cases the
    thresholds were chosen on, ``n_eval`` those they are reported on, and ``eval_error_rate``
    is the share of those that are wrong. ``curve`` is the eval split's risk-coverage curve of
    the model's confidence, ``calibrated_curve`` that of the recalibrated confidence (the same
    curve whenever recalibration preserves the order of the confidences). With sample
    weights, ``weight`` and ``eval_weight`` are the two splits' total weights (None when
    unweighted) and every rate and cost is weighted.
    """

    rows: tuple[PolicyRow, ...]
    l_wrong: float
    l_defer: float
    chow_threshold: float
    choice: ThresholdChoice
    n: int
    n_eval: int
    eval_error_rate: float
    curve: RiskCoverage
    calibrated_by: str | None = None
    calibrated_curve: RiskCoverage | None = None
    temperature: float | None = None
    weight: float | None = None
    eval_weight: float | None = None

    def row(self, key: str) -> PolicyRow:
        """The row with this key: act_all, defer_all, chow, chosen or chow_calibrated."""
        for r in self.rows:
            if r.key == key:
                return r
        raise KeyError(f"no policy {key!r}; the table has {', '.join(r.key for r in self.rows)}")

    @property
    def best(self) -> PolicyRow:
        """The row with the lowest test cost (for reading the table, not for choosing: the
        test split must not choose the policy)."""
        return min(self.rows, key=lambda r: r.cost)

    def to_dict(self) -> dict[str, Any]:
        def summary(c: RiskCoverage | None) -> dict[str, Any] | None:
            if c is None:
                return None
            keys = ("n", "errors", "aurc", "oracle_aurc", "random_aurc", "e_aurc")
            return {k: c.to_dict()[k] for k in keys}

        return {
            "l_wrong": self.l_wrong,
            "l_defer": self.l_defer,
            "chow_threshold": self.chow_threshold,
            "n": self.n,
            "n_eval": self.n_eval,
            "eval_error_rate": self.eval_error_rate,
            "calibrated_by": self.calibrated_by,
            "temperature": self.temperature,
            **(
                {}
                if self.weight is None and self.eval_weight is None
                else {"weight": self.weight, "eval_weight": self.eval_weight}
            ),
            "rows": [r.to_dict() for r in self.rows],
            "choice": self.choice.to_dict(),
            "risk_coverage": summary(self.curve),
            "calibrated_risk_coverage": summary(self.calibrated_curve),
        }

    def table_rows(self) -> list[tuple[str, str, str, str, str, str]]:
        """Cells of each row: policy, threshold, coverage, risk, test cost, validation cost."""
        out = []
        for r in self.rows:
            t = threshold_text(r.threshold)
            out.append(
                (
                    r.policy,
                    t,
                    f"{r.coverage:.3f}",
                    "-" if math.isnan(r.risk) else f"{r.risk:.3f}",
                    f"{r.cost:.3f}",
                    f"{r.choice_cost:.3f}",
                )
            )
        return out

    def header(self) -> str:
        def weighted(w: float | None) -> str:
            return "" if w is None else f" (weight {w:.6g})"

        return (
            f"policy table: thresholds chosen on {self.n} validation cases"
            f"{weighted(self.weight)}, reported on {self.n_eval} test cases"
            f"{weighted(self.eval_weight)} (l_wrong = {self.l_wrong:g}, l_defer = "
            f"{self.l_defer:g}, Chow's threshold {threshold_text(self.chow_threshold)})"
        )

    def notes(self) -> list[str]:
        c = self.choice
        gap = "acts on nothing" if math.isinf(c.threshold) else f"gap {c.gap:+.4f} to Chow's"
        chosen = threshold_text(c.threshold, above="above every confidence")
        lines = [
            f"chosen on validation: threshold {chosen} at {c.cost:.4f} per case there ({gap}; a "
            "gap measures miscalibration near the threshold).",
            f"test AURC {self.curve.aurc:.4f} (oracle {self.curve.oracle_aurc:.4f}, random "
            f"{self.curve.random_aurc:.4f}, E-AURC {self.curve.e_aurc:.4f}).",
        ]
        if self.calibrated_curve is not None:
            same = np.array_equal(self.curve.coverage, self.calibrated_curve.coverage) and (
                np.array_equal(self.curve.risk, self.calibrated_curve.risk, equal_nan=True)
            )
            steps = (self.curve.coverage.size - 1, self.calibrated_curve.coverage.size - 1)
            fitted = "" if self.temperature is None else f" (T = {self.temperature:.4g})"
            cal = self.calibrated_curve
            lines.append(
                f"after {self.calibrated_by}{fitted}: test AURC {cal.aurc:.4f}, E-AURC "
                f"{cal.e_aurc:.4f} ("
                + (
                    "the same curve)."
                    if same
                    else f"a different curve: {steps[0]} distinct confidences before, "
                    f"{steps[1]} after)."
                )
            )
        return lines

    def _repr_html_(self) -> str:
        """What a notebook shows: the HTML report's section for this result."""
        return _display.html(self)

    def __str__(self) -> str:
        head = ("policy", "threshold", "coverage", "risk", "cost/case", "val. cost")
        cells = [head, *self.table_rows()]
        widths = [max(len(row[j]) for row in cells) for j in range(len(head))]
        lines = [self.header()]
        for row in cells:
            first = row[0].ljust(widths[0])
            rest = "  ".join(cell.rjust(w) for cell, w in zip(row[1:], widths[1:], strict=True))
            lines.append(f"{first}  {rest}")
        lines.extend(self.notes())
        return "\n".join(lines)


def _row(
    key: str,
    policy: str,
    threshold: float,
    chosen_on: tuple[np.ndarray, np.ndarray],
    held_out: tuple[np.ndarray, np.ndarray],
    *,
    l_wrong: float,
    l_defer: float,
    calibrated: bool = False,
    weights: tuple[np.ndarray | None, np.ndarray | None] = (None, None),
) -> PolicyRow:
    on = {"l_wrong": l_wrong, "l_defer": l_defer}
    cost, _, _ = cost_at(held_out[0], held_out[1], threshold, **on, weight=weights[1])
    a = acted_at(held_out[0], held_out[1], threshold, weights[1])
    choice_cost, _, _ = cost_at(chosen_on[0], chosen_on[1], threshold, **on, weight=weights[0])
    return PolicyRow(
        key=key,
        policy=policy,
        threshold=threshold,
        coverage=a.mass / a.total,
        risk=a.wrong_mass / a.mass if a.mass else math.nan,
        cost=cost,
        n_acted=a.n_acted,
        choice_cost=choice_cost,
        calibrated=calibrated,
        weight_acted=None if weights[1] is None else a.mass,
    )


def policy_table(
    confidence: Any = None,
    outcome: Any = None,
    eval_confidence: Any = None,
    eval_outcome: Any = None,
    *,
    l_wrong: float,
    l_defer: float,
    calibrated_confidence: Any = None,
    calibrated_eval_confidence: Any = None,
    calibrated_by: str = "recalibration",
    probs: Any = None,
    labels: Any = None,
    eval_probs: Any = None,
    eval_labels: Any = None,
    from_logits: bool = False,
    check_logits: bool = True,
    sample_weight: Any = None,
    eval_sample_weight: Any = None,
) -> PolicyTable:
    """Choose thresholds on one split (validation), report each policy's cost, coverage and
    risk on the held-out eval split (test).

    Five policies: act on everything (threshold 0), defer everything, Chow's rule
    ``confidence >= 1 - l_defer / l_wrong`` (Chow 1970), the threshold minimising the
    validation cost per case (:func:`choose_threshold`), and, when both calibrated arrays
    are given, Chow's rule on the recalibrated confidences. The eval outcomes choose nothing.

    Parameters
    ----------
    confidence, outcome : arrays of shape (N,)
        Confidences in [0, 1] and 0/1 outcomes (1 = the prediction was right) of the split the
        thresholds are chosen on.
    eval_confidence, eval_outcome : arrays of shape (N_eval,)
        The held-out split the policies are reported on.
    l_wrong, l_defer : float
        Cost of acting on a wrong prediction and of deferring a case, 0 < l_defer < l_wrong.
    calibrated_confidence, calibrated_eval_confidence : arrays, optional
        The same predictions' confidences after a recalibration fitted on the choice split
        only; give both or neither.
    calibrated_by : str
        How they were recalibrated, for the table ("temperature scaling").
    probs, labels, eval_probs, eval_labels : arrays, optional
        Instead of a split's confidences and outcomes: the model's 1-D P(y = 1) (binary) or
        (N, C) class probabilities (logits with ``from_logits=True``) and the class labels,
        reduced to acting on the predicted class (confidence max(p, 1 - p), right when
        (p >= 0.5) == y; top-label for (N, C)). A 1-D P(y = 1) passed as a confidence warns
        when at least 10% of it lies below 0.05. For a threshold on P(y = 1) itself from the
        costs of a false positive and a false negative, see :func:`binary_policy_table`.
    check_logits : bool
        With ``from_logits=True``, ``probs`` and ``eval_probs`` that look like probabilities
        ((N, C) rows in [0, 1] summing to 1, or 1-D values all in [0, 1]) are refused: read as
        logits they give a table of nonsense. ``False`` insists that they are logits.
    sample_weight, eval_sample_weight : arrays of shape (N,) and (N_eval,), keyword only
        Finite, non-negative weights of the two splits (either, both or neither): the
        threshold is chosen by the expected cost per unit weight
        (:func:`~calibkit.decide.choose_threshold`) and every coverage, risk and cost is
        weighted; with whole weights, the table of the data with each row repeated w times.

    Examples
    --------
    Five predictions (the third and fifth wrong) chosen on and reported on themselves (costs
    10 and 1):

    >>> from calibkit.decide.policy import policy_table
    >>> conf, out = [0.95, 0.9, 0.8, 0.7, 0.6], [1, 1, 0, 1, 0]
    >>> t = policy_table(conf, out, conf, out, l_wrong=10, l_defer=1)
    >>> [(r.key, round(r.cost, 2)) for r in t.rows]
    [('act_all', 4.0), ('defer_all', 1.0), ('chow', 0.6), ('chosen', 0.6)]
    """
    where = "policy_table"
    l_wrong, l_defer = costs(l_wrong=l_wrong, l_defer=l_defer, where=where)
    if from_logits is True:
        for split, name, given in (
            ("validation", "probs", probs),
            ("test", "eval_probs", eval_probs),
        ):
            if given is not None:
                not_probabilities(given, where=f"{where} ({split})", name=name, check=check_logits)
    chosen_on = decision_inputs(
        confidence,
        outcome,
        probs=probs,
        labels=labels,
        from_logits=from_logits,
        where=f"{where} (validation)",
        names=("confidence", "outcome", "probs", "labels"),
    )
    held_out = decision_inputs(
        eval_confidence,
        eval_outcome,
        probs=eval_probs,
        labels=eval_labels,
        from_logits=from_logits,
        where=f"{where} (test)",
        names=("eval_confidence", "eval_outcome", "eval_probs", "eval_labels"),
    )
    return table_of(
        chosen_on,
        held_out,
        l_wrong=l_wrong,
        l_defer=l_defer,
        calibrated_confidence=calibrated_confidence,
        calibrated_eval_confidence=calibrated_eval_confidence,
        calibrated_by=calibrated_by,
        weights=(
            v.sample_weight(sample_weight, n=chosen_on[0].size, where=f"{where} (validation)"),
            v.sample_weight(
                eval_sample_weight,
                n=held_out[0].size,
                where=f"{where} (test)",
                name="eval_sample_weight",
            ),
        ),
    )


def table_of(
    chosen_on: tuple[np.ndarray, np.ndarray],
    held_out: tuple[np.ndarray, np.ndarray],
    *,
    l_wrong: float,
    l_defer: float,
    calibrated_confidence: Any = None,
    calibrated_eval_confidence: Any = None,
    calibrated_by: str = "recalibration",
    weights: tuple[np.ndarray | None, np.ndarray | None] = (None, None),
) -> PolicyTable:
    """:func:`policy_table` of checked (confidence, outcome) splits and costs: the split the
    thresholds are chosen on, and the held-out one they are reported on, with their checked
    ``weights`` (None: every row counts once)."""
    where = "policy_table"
    if (calibrated_confidence is None) != (calibrated_eval_confidence is None):
        raise v.InputError(
            f"{where}: pass calibrated_confidence and calibrated_eval_confidence together (the "
            "same recalibration applied to both splits), or neither."
        )
    chow = 1.0 - l_defer / l_wrong
    choice = choose(chosen_on[0], chosen_on[1], l_wrong=l_wrong, l_defer=l_defer, weight=weights[0])
    policies = [
        ("act_all", "act on everything", 0.0),
        ("defer_all", "defer everything", math.inf),
        ("chow", "Chow's rule", chow),
        ("chosen", "chosen on validation", choice.threshold),
    ]
    rows = [
        _row(
            key,
            name,
            threshold,
            chosen_on,
            held_out,
            l_wrong=l_wrong,
            l_defer=l_defer,
            weights=weights,
        )
        for key, name, threshold in policies
    ]
    calibrated_curve = None
    if calibrated_confidence is not None:
        cal = _conf(calibrated_confidence, name="calibrated_confidence", where=where)
        cal_eval = _conf(calibrated_eval_confidence, name="calibrated_eval_confidence", where=where)
        v.same_length(cal, chosen_on[0].size, name="calibrated_confidence", where=where)
        v.same_length(cal_eval, held_out[0].size, name="calibrated_eval_confidence", where=where)
        rows.append(
            _row(
                "chow_calibrated",
                f"Chow after {calibrated_by}",
                chow,
                (cal, chosen_on[1]),
                (cal_eval, held_out[1]),
                l_wrong=l_wrong,
                l_defer=l_defer,
                calibrated=True,
                weights=weights,
            )
        )
        calibrated_curve = curve(cal_eval, held_out[1], weights[1])
    eval_curve = curve(held_out[0], held_out[1], weights[1])
    return PolicyTable(
        rows=tuple(rows),
        l_wrong=l_wrong,
        l_defer=l_defer,
        chow_threshold=chow,
        choice=choice,
        n=int(chosen_on[0].size),
        n_eval=int(held_out[0].size),
        eval_error_rate=eval_curve.error_rate,
        curve=eval_curve,
        calibrated_by=calibrated_by if calibrated_confidence is not None else None,
        calibrated_curve=calibrated_curve,
        weight=None if weights[0] is None else float(weights[0].sum()),
        eval_weight=None if weights[1] is None else float(weights[1].sum()),
    )


def _conf(x: Any, *, name: str, where: str) -> np.ndarray:
    return v.confidence(x, where=where, name=name).astype(np.float64, copy=False)


def not_probabilities(given: Any, *, where: str, name: str, check: Any, fix: str = "") -> None:
    """Refuse logits that look like probabilities (:func:`calibkit._validate.
    logits_not_probabilities`); other faults are left to the reading that follows."""
    arr = v.to_numpy(given, name=name, where=where)
    if arr.ndim in (1, 2) and arr.size and arr.dtype.kind in "biuf":
        with np.errstate(invalid="ignore"):
            if not np.isfinite(arr.sum(dtype=np.float64)):
                return  # NaN or inf: the reading names it
        v.logits_not_probabilities(arr, where=where, name=name, check=check, fix=fix)
