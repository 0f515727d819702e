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

from .. import _validate as v
from ._format import threshold_text
from ._inputs import act_forecast, decision_inputs
from .coverage import RiskCoverage, curve
from .thresholds import ThresholdChoice, choose, cost_at, costs

__all__ = ["PolicyRow", "PolicyTable", "act_forecast", "decision_report", "policy_table"]


@dataclass(frozen=True)
class PolicyRow:
    """One policy: act when the confidence it reads is at least ``threshold``.

    ``coverage``, ``risk`` (NaN when nothing is acted on), ``cost`` (per case) and ``n_acted``
    are measured on the test split; ``validation_cost`` is the same policy's cost per case on
    the validation split, where the thresholds were chosen.
    """

    key: str
    policy: str
    threshold: float
    coverage: float
    risk: float
    cost: float
    n_acted: int
    validation_cost: float
    calibrated: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "policy": self.policy,
            "threshold": None if math.isinf(self.threshold) else self.threshold,
            "coverage": self.coverage,
            "risk": None if math.isnan(self.risk) else self.risk,
            "cost": self.cost,
            "n_acted": self.n_acted,
            "validation_cost": self.validation_cost,
            "calibrated": self.calibrated,
        }


@dataclass(frozen=True, eq=False)
class PolicyTable:
    """The policy table: every threshold chosen on validation, judged on test.

    ``rows`` in the order act on everything, defer everything, Chow's rule, the threshold chosen
    on validation, and (when recalibrated confidences were given) Chow's rule after
    recalibration. ``choice`` is the cost-minimising choice on validation (with its validation cost,
    coverage and risk, and the gap to Chow's threshold there). ``curve`` is the test split's
    risk-coverage curve of the model's confidence, ``calibrated_curve`` that of the recalibrated
    confidence (the same curve whenever recalibration preserves the order of the confidences).
    """

    rows: tuple[PolicyRow, ...]
    l_wrong: float
    l_defer: float
    chow_threshold: float
    choice: ThresholdChoice
    n_validation: int
    n_test: int
    test_error_rate: float
    curve: RiskCoverage
    calibrated_by: str | None = None
    calibrated_curve: RiskCoverage | None = None
    temperature: float | None = None

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
            "n_validation": self.n_validation,
            "n_test": self.n_test,
            "test_error_rate": self.test_error_rate,
            "calibrated_by": self.calibrated_by,
            "temperature": self.temperature,
            "rows": [r.to_dict() for r in self.rows],
            "validation_choice": self.choice.to_dict(),
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
                    f"{r.validation_cost:.3f}",
                )
            )
        return out

    def header(self) -> str:
        return (
            f"policy table: thresholds chosen on {self.n_validation} validation cases, reported "
            f"on {self.n_test} test cases (l_wrong = {self.l_wrong:g}, l_defer = "
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
    test: tuple[np.ndarray, np.ndarray],
    val: tuple[np.ndarray, np.ndarray],
    l_wrong: float,
    l_defer: float,
    *,
    calibrated: bool = False,
) -> PolicyRow:
    n = test[0].size
    cost, n_acted, wrong = cost_at(test[0], test[1], threshold, l_wrong, l_defer)
    val_cost, _, _ = cost_at(val[0], val[1], threshold, l_wrong, l_defer)
    return PolicyRow(
        key=key,
        policy=policy,
        threshold=threshold,
        coverage=n_acted / n,
        risk=wrong / n_acted if n_acted else math.nan,
        cost=cost,
        n_acted=n_acted,
        validation_cost=val_cost,
        calibrated=calibrated,
    )


def policy_table(
    val_conf: Any = None,
    val_outcome: Any = None,
    test_conf: Any = None,
    test_outcome: Any = None,
    *,
    l_wrong: float,
    l_defer: float,
    calibrated_val_conf: Any = None,
    calibrated_test_conf: Any = None,
    calibrated_by: str = "recalibration",
    val_probs: Any = None,
    val_labels: Any = None,
    test_probs: Any = None,
    test_labels: Any = None,
    from_logits: bool = False,
    check_logits: bool = True,
) -> PolicyTable:
    """Choose thresholds on validation, report each policy's cost, coverage and risk on test.

    Five policies: act on everything (threshold 0), defer everything, Chow's rule
    ``confidence >= 1 - l_defer / l_wrong`` (Chow 1970), the threshold minimising the
    validation cost per case (:func:`choose_threshold`), and, when both calibrated arrays
    are given, Chow's rule on the recalibrated confidences. The test outcomes choose nothing.

    Parameters
    ----------
    val_conf, val_outcome : arrays of shape (N_val,)
        Confidences in [0, 1] and 0/1 outcomes (1 = the prediction was right) of the split the
        thresholds are chosen on.
    test_conf, test_outcome : arrays of shape (N_test,)
        The split the policies are reported on.
    l_wrong, l_defer : float
        Cost of acting on a wrong prediction and of deferring a case, 0 < l_defer < l_wrong.
    calibrated_val_conf, calibrated_test_conf : arrays, optional
        The same predictions' confidences after a recalibration fitted on validation only; give
        both or neither.
    calibrated_by : str
        How they were recalibrated, for the table ("temperature scaling").
    val_probs, val_labels, test_probs, test_labels : arrays, optional
        Instead of a split's confidences and outcomes: the model's 1-D P(y = 1) (binary) or
        (N, C) class probabilities (logits with ``from_logits=True``) and the class labels,
        reduced to acting on the predicted class (confidence max(p, 1 - p), right when
        (p >= 0.5) == y; top-label for (N, C)). A 1-D P(y = 1) passed as a confidence warns
        when at least 10% of it lies below 0.05. For a threshold on P(y = 1) itself from the
        costs of a false positive and a false negative, see :func:`binary_policy_table`.
    check_logits : bool
        With ``from_logits=True``, ``val_probs`` and ``test_probs`` that look like probabilities
        ((N, C) rows in [0, 1] summing to 1, or 1-D values all in [0, 1]) are refused: read as
        logits they give a table of nonsense. ``False`` insists that they are logits.

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
    l_wrong, l_defer = costs(l_wrong, l_defer, where=where)
    if from_logits is True:
        for split, name, given in (
            ("validation", "val_probs", val_probs),
            ("test", "test_probs", test_probs),
        ):
            if given is not None:
                _not_probabilities(given, where=f"{where} ({split})", name=name, check=check_logits)
    val = decision_inputs(
        val_conf,
        val_outcome,
        probs=val_probs,
        labels=val_labels,
        from_logits=from_logits,
        where=f"{where} (validation)",
        names=("val_conf", "val_outcome", "val_probs", "val_labels"),
    )
    test = decision_inputs(
        test_conf,
        test_outcome,
        probs=test_probs,
        labels=test_labels,
        from_logits=from_logits,
        where=f"{where} (test)",
        names=("test_conf", "test_outcome", "test_probs", "test_labels"),
    )
    return table_of(
        val,
        test,
        l_wrong=l_wrong,
        l_defer=l_defer,
        calibrated_val_conf=calibrated_val_conf,
        calibrated_test_conf=calibrated_test_conf,
        calibrated_by=calibrated_by,
    )


def table_of(
    val: tuple[np.ndarray, np.ndarray],
    test: tuple[np.ndarray, np.ndarray],
    *,
    l_wrong: float,
    l_defer: float,
    calibrated_val_conf: Any = None,
    calibrated_test_conf: Any = None,
    calibrated_by: str = "recalibration",
) -> PolicyTable:
    """:func:`policy_table` of checked (confidence, outcome) splits and costs."""
    where = "policy_table"
    if (calibrated_val_conf is None) != (calibrated_test_conf is None):
        raise v.InputError(
            f"{where}: pass calibrated_val_conf and calibrated_test_conf together (the same "
            "recalibration applied to both splits), or neither."
        )
    chow = 1.0 - l_defer / l_wrong
    choice = choose(val[0], val[1], l_wrong, l_defer)
    rows = [
        _row("act_all", "act on everything", 0.0, test, val, l_wrong, l_defer),
        _row("defer_all", "defer everything", math.inf, test, val, l_wrong, l_defer),
        _row("chow", "Chow's rule", chow, test, val, l_wrong, l_defer),
        _row(
            "chosen",
            "chosen on validation",
            choice.threshold,
            test,
            val,
            l_wrong,
            l_defer,
        ),
    ]
    calibrated_curve = None
    if calibrated_val_conf is not None:
        cal_val = _conf(calibrated_val_conf, name="calibrated_val_conf", where=where)
        cal_test = _conf(calibrated_test_conf, name="calibrated_test_conf", where=where)
        v.same_length(cal_val, val[0].size, name="calibrated_val_conf", where=where)
        v.same_length(cal_test, test[0].size, name="calibrated_test_conf", where=where)
        rows.append(
            _row(
                "chow_calibrated",
                f"Chow after {calibrated_by}",
                chow,
                (cal_test, test[1]),
                (cal_val, val[1]),
                l_wrong,
                l_defer,
                calibrated=True,
            )
        )
        calibrated_curve = curve(cal_test, test[1])
    test_curve = curve(test[0], test[1])
    return PolicyTable(
        rows=tuple(rows),
        l_wrong=l_wrong,
        l_defer=l_defer,
        chow_threshold=chow,
        choice=choice,
        n_validation=int(val[0].size),
        n_test=int(test[0].size),
        test_error_rate=test_curve.error_rate,
        curve=test_curve,
        calibrated_by=calibrated_by if calibrated_val_conf is not None else None,
        calibrated_curve=calibrated_curve,
    )


def _conf(x: Any, *, name: str, where: str) -> np.ndarray:
    return v.confidence(x, where=where, name=name).astype(np.float64, copy=False)


def decision_report(
    val_logits: Any,
    val_labels: Any,
    test_logits: Any,
    test_labels: Any,
    *,
    l_wrong: float,
    l_defer: float,
    check_logits: bool = True,
) -> PolicyTable:
    """The policy table of a model from its logits: temperature scaling fitted on
    validation, every threshold chosen on validation, everything reported on test.

    Logits (N, C) are read top-label (softmax); 1-D binary scores act on the predicted class
    (see :func:`act_forecast`). The row ``chow_calibrated`` is Chow's rule on the confidences
    after temperature scaling; ``table.temperature`` is the fitted T.

    Logits that look like probabilities ((N, C) rows in [0, 1] summing to 1, or 1-D values all
    in [0, 1], such as calibrated P(y = 1)) are refused: read as logits they would give a
    table of nonsense. For probabilities use :func:`policy_table` (``val_probs=``, ...);
    ``check_logits=False`` insists that they are logits.

    Examples
    --------
    >>> import numpy as np, calibkit as ck
    >>> from calibkit.decide.policy import decision_report
    >>> rng = np.random.default_rng(0)
    >>> s = rng.normal(0, 3, 2000); y = (rng.random(2000) < ck.sigmoid(s / 2)).astype(int)
    >>> t = decision_report(s[:1000], y[:1000], s[1000:], y[1000:], l_wrong=10, l_defer=1)
    >>> t.row("defer_all").cost, round(t.temperature, 1)
    (1.0, 2.1)
    """
    from ..recalibrate.temperature import TemperatureScaling

    where = "decision_report"
    l_wrong, l_defer = costs(l_wrong, l_defer, where=where)
    for name, given in (("val_logits", val_logits), ("test_logits", test_logits)):
        _not_probabilities(given, where=where, name=name, check=check_logits, fix=_REPORT_FIX)
    ts = TemperatureScaling(check_logits=check_logits).fit(val_logits, val_labels)
    val = act_forecast(val_logits, val_labels, from_logits=True)
    test = act_forecast(test_logits, test_labels, from_logits=True)
    cal_val, _ = act_forecast(val_logits, val_labels, from_logits=True, calibrator=ts)
    cal_test, _ = act_forecast(test_logits, test_labels, from_logits=True, calibrator=ts)
    table = table_of(
        val,
        test,
        l_wrong=l_wrong,
        l_defer=l_defer,
        calibrated_val_conf=cal_val,
        calibrated_test_conf=cal_test,
        calibrated_by="temperature scaling",
    )
    return _with_temperature(table, float(ts.temperature_))


#: What decision_report says to do with probabilities.
_REPORT_FIX = (
    "decision_report reads logits: for probabilities use policy_table(val_probs=p_val, "
    "val_labels=y_val, test_probs=p_test, test_labels=y_test, ...) (calibkit decide --probs "
    "on the command line), or pass their logs as logits (np.log(p); for a 1-D P(y = 1), "
    "np.log(p / (1 - p)))."
)


def _not_probabilities(given: Any, *, where: str, name: str, check: Any, fix: str = "") -> None:
    """Refuse logits that look like probabilities (:func:`calibkit._validate.
    logits_not_probabilities`); other faults are left to the reading that follows."""
    arr = v.to_numpy(given, name=name, where=where)
    if arr.ndim in (1, 2) and arr.size and arr.dtype.kind in "biuf":
        with np.errstate(invalid="ignore"):
            if not np.isfinite(arr.sum(dtype=np.float64)):
                return  # NaN or inf: the reading names it
        v.logits_not_probabilities(arr, where=where, name=name, check=check, fix=fix)


def _with_temperature(table: PolicyTable, temperature: float) -> PolicyTable:
    from dataclasses import replace

    return replace(table, temperature=temperature)
