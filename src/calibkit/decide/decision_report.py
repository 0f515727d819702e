"""The policy table of a model from its logits (:func:`decision_report`): temperature scaling
fitted on the validation split, every threshold chosen there, everything reported on the
held-out split (:mod:`calibkit.decide.policy` makes the table)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .. import _validate as v
from ._inputs import act_forecast
from .policy import PolicyTable, not_probabilities, table_of
from .thresholds import costs

__all__ = ["decision_report"]


def decision_report(
    logits: Any,
    labels: Any,
    eval_logits: Any,
    eval_labels: Any,
    *,
    l_wrong: float,
    l_defer: float,
    check_logits: bool = True,
    sample_weight: Any = None,
    eval_sample_weight: Any = None,
) -> PolicyTable:
    """The policy table of a model from its logits: temperature scaling fitted on the first
    split (validation), every threshold chosen there, everything reported on the held-out eval
    split (test).

    Logits (N, C) are read top-label (softmax); 1-D binary scores act on the predicted class
    (see :func:`act_forecast`). The row ``chow_calibrated`` is Chow's rule on the confidences
    after temperature scaling; ``table.temperature`` is the fitted T.

    Logits that look like probabilities ((N, C) rows in [0, 1] summing to 1, or 1-D values all
    in [0, 1], such as calibrated P(y = 1)) are refused: read as logits they would give a
    table of nonsense. For probabilities use :func:`policy_table` (``probs=``, ...);
    ``check_logits=False`` insists that they are logits.

    ``sample_weight`` and ``eval_sample_weight`` weigh the two splits as in
    :func:`policy_table`; the temperature is fitted with the first split's weights.

    Examples
    --------
    >>> import numpy as np, calibkit as ck
    >>> from calibkit.decide.decision_report import decision_report
    >>> rng = np.random.default_rng(0)
    >>> s = rng.normal(0, 3, 2000); y = (rng.random(2000) < ck.sigmoid(s / 2)).astype(int)
    >>> t = decision_report(s[:1000], y[:1000], s[1000:], y[1000:], l_wrong=10, l_defer=1)
    >>> t.row("defer_all").cost, round(t.temperature, 1)
    (1.0, 2.1)
    """
    from ..recalibrate.temperature import TemperatureScaling

    where = "decision_report"
    l_wrong, l_defer = costs(l_wrong=l_wrong, l_defer=l_defer, where=where)
    for name, given in (("logits", logits), ("eval_logits", eval_logits)):
        not_probabilities(given, where=where, name=name, check=check_logits, fix=_REPORT_FIX)
    ts = TemperatureScaling(check_logits=check_logits).fit(
        logits, labels, sample_weight=sample_weight
    )
    chosen_on = act_forecast(logits, labels, from_logits=True)
    held_out = act_forecast(eval_logits, eval_labels, from_logits=True)
    weights = (
        v.sample_weight(sample_weight, n=chosen_on[0].size, where=f"{where} (validation)"),
        v.sample_weight(
            eval_sample_weight, n=held_out[0].size, where=f"{where} (test)",
            name="eval_sample_weight",
        ),
    )  # fmt: skip
    cal, _ = act_forecast(logits, labels, from_logits=True, calibrator=ts)
    cal_eval, _ = act_forecast(eval_logits, eval_labels, from_logits=True, calibrator=ts)
    table = table_of(
        chosen_on,
        held_out,
        l_wrong=l_wrong,
        l_defer=l_defer,
        calibrated_confidence=cal,
        calibrated_eval_confidence=cal_eval,
        calibrated_by="temperature scaling",
        weights=weights,
    )
    return replace(table, temperature=float(ts.temperature_))


#: What decision_report says to do with probabilities.
_REPORT_FIX = (
    "decision_report reads logits: for probabilities use policy_table(probs=p, labels=y, "
    "eval_probs=p_eval, eval_labels=y_eval, ...) (calibkit decide --probs on the command "
    "line), or pass their logs as logits (np.log(p); for a 1-D P(y = 1), np.log(p / (1 - p)))."
)
