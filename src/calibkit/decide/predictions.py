"""The decisions of a prediction file: every threshold chosen on one split of its rows and every
cost, coverage and risk reported on the other (what ``calibkit decide`` prints).

:func:`decide_predictions` takes what :func:`calibkit.io.read_predictions` read, splits its rows
(stratified, seeded; :func:`calibkit.recalibrate.split.stratified_split`) into a choosing half
and a reporting half, and returns a :class:`Decisions`: the policy table (with costs ``l_wrong``
and ``l_defer``), the three-action thresholds (with ``l_ask`` and ``l_ask_wrong``), the
guaranteed-risk threshold (with ``target_risk``) and a binary model's threshold table on
P(y = 1) (with ``l_false_positive`` and ``l_false_negative``), each that was asked for.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _validate as v
from .._errors import InputError
from .actions import ActionsEvaluation, choose_actions
from .binary import BinaryPolicyTable, binary_costs, binary_policy_table
from .coverage import validated
from .decision_report import decision_report
from .guarantee import GuaranteeEvaluation, guaranteed_threshold
from .policy import PolicyTable, policy_table
from .thresholds import costs

__all__ = ["Decisions", "decide_predictions"]

#: What a confidence column that looks like P(y = 1) should have been passed as.
CONFIDENCE_HINT = (
    "If the column is P(y = 1) of a binary model, pass it with --probs COLUMN and the labels "
    "with --label COLUMN: the decision then acts on the predicted class, max(p, 1 - p)."
)
#: The words of the warning of :func:`calibkit._validate.confidence_not_class_probability`.
_LOOKS_LIKE_P1 = "look like P(y = 1)"


@dataclass(frozen=True, eq=False)
class Decisions:
    """What :func:`decide_predictions` chose on one split and reported on the other.

    ``source`` and ``kind`` say what was read (``Predictions.describe()`` and ``.kind``);
    ``split`` the split (``calibration_fraction``, ``seed``, ``n_choose``, ``n_report`` and
    ``stratified_by``, the outcome for a confidence column, else the label). ``table`` is the
    policy table, ``actions`` the three-action thresholds evaluated on the reporting half,
    ``guarantee`` the guaranteed-risk threshold evaluated so (with its ``target_risk``), and
    ``binary`` the binary threshold table; each is None when its costs were not given.
    """

    source: str
    kind: str
    split: dict[str, Any]
    table: PolicyTable | None = None
    actions: ActionsEvaluation | None = None
    guarantee: GuaranteeEvaluation | None = None
    binary: BinaryPolicyTable | None = None
    target_risk: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The whole result (``calibkit decide --json``): each choice with its own numbers and,
        under ``on_reporting_half``, those on the other half."""
        return {
            "source": self.source,
            "kind": self.kind,
            "split": dict(self.split),
            "policy_table": None if self.table is None else self.table.to_dict(),
            "actions": None
            if self.actions is None
            else _with_held_out(self.actions, self.actions.choice),
            "guarantee": None
            if self.guarantee is None
            else _with_held_out(self.guarantee, self.guarantee.guarantee),
            "binary_policy": None if self.binary is None else self.binary.to_dict(),
        }

    def __str__(self) -> str:
        s = self.split
        weights = ("", "")
        if "weight_choose" in s:
            weights = (f" (weight {s['weight_choose']:.6g})", f" (weight {s['weight_report']:.6g})")
        lines = [
            f"decisions for {self.source}: chosen on {s['n_choose']} rows{weights[0]}, reported "
            f"on {s['n_report']}{weights[1]} (split by {s['stratified_by']}, seed {s['seed']})"
        ]
        for part in (self.table, self.actions, self.guarantee, self.binary):
            if part is not None:
                lines += ["", str(part)]
        return "\n".join(lines)


def decide_predictions(
    preds: Any,
    *,
    l_wrong: float | None = None,
    l_defer: float | None = None,
    l_ask: float | None = None,
    l_ask_wrong: float | None = None,
    target_risk: float | None = None,
    delta: float = 0.05,
    l_false_positive: float | None = None,
    l_false_negative: float | None = None,
    calibration_fraction: float = 0.5,
    seed: int = 0,
    where: str = "decide",
) -> Decisions:
    """Thresholds chosen on one split of ``preds`` and reported on the other.

    ``preds`` is a :class:`calibkit.io.Predictions`. With logits, the policy table is
    :func:`~calibkit.decide.decision_report` (temperature scaling fitted on the choosing half
    adds the row ``chow_calibrated``); with probabilities or a confidence column it is
    :func:`~calibkit.decide.policy_table`. A confidence column is checked once for the whole
    file, and of the warnings that a confidence looks like P(y = 1) only the first is kept.

    A weight column (``preds.sample_weight``) weighs everything: the split (drawn by label as
    without weights) carries each half's weights; every threshold is chosen by the cost per
    unit weight on the choosing half (the temperature fitted with its weights) and every
    cost, coverage and risk is weighted on the reporting half. ``split`` then gives each half's
    total weight (``weight_choose``, ``weight_report``) beside its rows.

    Examples
    --------
    >>> import numpy as np, pyarrow as pa
    >>> from calibkit.io import read_predictions
    >>> from calibkit.decide.predictions import decide_predictions
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0.5, 1.0, 400)
    >>> table = pa.table({"confidence": p, "correct": (rng.uniform(size=400) < p).astype(int)})
    >>> preds = read_predictions(table)
    >>> d = decide_predictions(preds, l_wrong=10, l_defer=1)
    >>> d.split["n_choose"], d.split["n_report"], d.table.n_eval
    (200, 200, 200)
    """
    from ..recalibrate.split import stratified_split

    two_actions = l_wrong is not None or l_defer is not None
    binary = l_false_positive is not None or l_false_negative is not None
    if not two_actions and not binary:
        raise InputError(
            f"{where}: nothing to decide: pass l_wrong and l_defer (act or defer), or "
            "l_false_positive and l_false_negative (a binary model's threshold on P(y = 1))."
        )
    asks = l_ask is not None or l_ask_wrong is not None
    if asks and not two_actions:
        raise InputError(
            f"{where}: l_ask and l_ask_wrong need l_wrong and l_defer (the three actions are "
            "act, ask and escalate on the predicted class)."
        )
    pair = costs(l_wrong=l_wrong, l_defer=l_defer, where=where) if two_actions else None
    errors = (
        binary_costs(
            l_false_positive=l_false_positive, l_false_negative=l_false_negative, where=where
        )
        if binary
        else None
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if preds.kind == "confidence":
            _check_confidence_column(preds, where)
        if errors is not None:
            _check_binary(preds, where)
        w = getattr(preds, "sample_weight", None)
        w_choose = w_report = None
        if w is None:
            choose, report = stratified_split(
                preds.labels, calibration_fraction=calibration_fraction, seed=seed
            )
        else:
            choose, report, w_choose, w_report = stratified_split(
                preds.labels, calibration_fraction=calibration_fraction, seed=seed, sample_weight=w
            )
        chosen_on = _arguments(preds, choose, w_choose)
        reported_on = _arguments(preds, report, w_report)
        weighs: dict[str, Any] = {"sample_weight": w_choose, "eval_sample_weight": w_report}
        from_logits = preds.kind == "logits"
        s, y = preds.scores, preds.labels
        halves = (s[choose], y[choose], s[report], y[report])  # scores and labels of each half
        table = actions = guarantee = binary_table = None
        if pair is not None and from_logits:
            table = decision_report(*halves, l_wrong=pair[0], l_defer=pair[1], **weighs)
        elif pair is not None:
            table = policy_table(
                **chosen_on, **_eval_arguments(reported_on), l_wrong=pair[0], l_defer=pair[1]
            )
        if pair is not None and asks:
            choice = choose_actions(
                **chosen_on,
                l_wrong=pair[0],
                l_defer=pair[1],
                l_ask=l_ask,  # type: ignore[arg-type]  # checked by choose_actions
                l_ask_wrong=l_ask_wrong,  # type: ignore[arg-type]
            )
            actions = choice.evaluate(**reported_on)
        if target_risk is not None:
            rule = guaranteed_threshold(**chosen_on, target_risk=target_risk, delta=delta)
            guarantee = rule.evaluate(**reported_on)
        if errors is not None:
            binary_table = binary_policy_table(
                *halves,
                l_false_positive=errors[0],
                l_false_negative=errors[1],
                from_logits=from_logits,
                **weighs,
            )
    _warn_again(_first_probability_warning(caught))
    split = {
        "calibration_fraction": calibration_fraction,
        "seed": seed,
        "n_choose": int(choose.size),
        "n_report": int(report.size),
        "stratified_by": "outcome" if preds.kind == "confidence" else "label",
    }
    if w_choose is not None and w_report is not None:
        split["weight_choose"] = float(w_choose.sum())
        split["weight_report"] = float(w_report.sum())
    return Decisions(
        source=preds.describe(),
        kind=preds.kind,
        split=split,
        table=table,
        actions=actions,
        guarantee=guarantee,
        binary=binary_table,
        target_risk=target_risk,
    )


def _arguments(preds: Any, rows: np.ndarray, w: np.ndarray | None = None) -> dict[str, Any]:
    """The rows of a prediction file as the decide functions take them: (confidence, outcome)
    for a confidence column, else probs= and labels= (reduced to the predicted class), with
    their weights ``w`` (sample_weight=) when there are weights."""
    weight = {} if w is None else {"sample_weight": w}
    if preds.kind == "confidence":
        return {"confidence": preds.scores[rows], "outcome": preds.labels[rows], **weight}
    return {
        "probs": preds.scores[rows],
        "labels": preds.labels[rows],
        "from_logits": preds.kind == "logits",
        **weight,
    }


def _eval_arguments(inputs: dict[str, Any]) -> dict[str, Any]:
    """:func:`_arguments` of the held-out rows under policy_table's eval_ names
    (eval_confidence, eval_probs, ..., eval_sample_weight)."""
    names = ("confidence", "outcome", "probs", "labels", "sample_weight")
    return {f"eval_{k}": value for k, value in inputs.items() if k in names}


def _check_confidence_column(preds: Any, where: str) -> None:
    """A confidence column checked once for the whole file, warning when it looks like
    P(y = 1) (the warnings of the same kind on each half are then left out)."""
    name, outcome = preds.columns.get("confidence"), preds.columns.get("correct")
    conf, _ = validated(
        preds.scores,
        preds.labels,
        where=where,
        name=f"confidence (column {name!r})" if name else "confidence",
        outcome_name=f"the outcome (column {outcome!r})" if outcome else "the outcome",
        hint="If the column holds class labels, pass it with --label and the class "
        "probabilities with --probs.",
    )
    v.confidence_not_class_probability(conf, where=where, hint=CONFIDENCE_HINT)


def _check_binary(preds: Any, where: str) -> None:
    """The costs of a binary model's two errors need a binary model's scores."""
    if preds.kind == "confidence":
        raise InputError(
            f"{where}: --false-positive-cost and --false-negative-cost set a threshold on "
            f"P(y = 1) of a binary model, but {preds.describe()} gives a confidence that each "
            "prediction is right; pass the probability of class 1 with --probs COLUMN (or the "
            "score with --logits COLUMN) and the 0/1 labels with --label COLUMN."
        )
    if preds.scores.ndim == 2 and preds.scores.shape[1] != 2:
        raise InputError(
            f"{where}: --false-positive-cost and --false-negative-cost need a binary model, but "
            f"{preds.describe()} has {preds.scores.shape[1]} classes; for more classes use "
            "--wrong-cost and --defer-cost (act on the predicted class or defer)."
        )


def _first_probability_warning(
    caught: list[warnings.WarningMessage],
) -> list[warnings.WarningMessage]:
    """The warnings, with only the first of those saying the confidence looks like P(y = 1)."""
    kept, seen = [], False
    for w in caught:
        if _LOOKS_LIKE_P1 in str(w.message):
            if seen:
                continue
            seen = True
        kept.append(w)
    return kept


def _warn_again(caught: list[warnings.WarningMessage]) -> None:
    """Issue the recorded warnings again, each from where it was first issued."""
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)


def _with_held_out(evaluation: Any, choice: Any) -> dict[str, Any]:
    """A choice's own numbers and, under "on_reporting_half", those on the other half."""
    return {**choice.to_dict(), "on_reporting_half": evaluation.to_dict()}
