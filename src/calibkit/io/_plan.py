"""The column plan: which columns of a file (or a table in memory) play which role, decided
from the names (and shapes) alone, by the rules of :mod:`calibkit.io`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from .._errors import InputError
from ._detect import (
    CONFIDENCE_NAMES,
    CORRECT_NAMES,
    PREDICTION_NAMES,
    Names,
    detect_kind,
    detect_label,
    detect_one,
    expand,
    matches,
)
from ._sources import WHERE, Source, column_list


@dataclass(frozen=True)
class ColumnPlan:
    """Which columns play which role, decided from the names (and shapes) alone.

    ``kind`` is ``"probs"`` or ``"logits"`` (``scores`` the class columns in class order, or one
    matrix column; ``label`` the class indices) or ``"confidence"`` (``confidence`` with either
    its 0/1 ``correct`` column, or a ``prediction`` column compared with ``label``). The same plan
    drives reading into memory and the SQL of the DuckDB and Spark engines.
    """

    kind: str
    scores: tuple[str, ...] = ()
    label: str | None = None
    confidence: str | None = None
    correct: str | None = None
    prediction: str | None = None
    #: The column of sample weights, only when named (``weight=``); never detected.
    weight: str | None = None

    @property
    def columns(self) -> dict[str, Any]:
        """The roles and their columns, as :class:`Predictions` reports them."""
        out: dict[str, Any]
        if self.kind != "confidence":
            names = list(self.scores)
            out = {self.kind: names[0] if len(names) == 1 else names, "label": self.label}
        else:
            out = {"confidence": self.confidence}
            if self.correct is not None:
                out["correct"] = self.correct
            else:
                out.update(prediction=self.prediction, label=self.label)
        if self.weight is not None:
            out["weight"] = self.weight
        return out


#: What ``columns=`` may name (the options of :func:`read_predictions`).
COLUMN_ROLES = (
    "format",
    "label",
    "probs",
    "logits",
    "confidence",
    "correct",
    "prediction",
    "weight",
)


def column_options(columns: Any, *, where: str) -> dict[str, Any]:
    """``columns=`` checked: a mapping from the roles of :data:`COLUMN_ROLES` to a column name
    (``probs`` and ``logits`` also take a list of names or a glob). Anything else is an
    InputError that names the role and lists those there are."""
    if columns is None:
        return {}
    if not isinstance(columns, Mapping):
        raise InputError(
            f"{where}: columns= must be a mapping of roles to column names, such as "
            f"{{'label': 'y_true', 'probs': 'proba_*'}}; got {type(columns).__name__}."
        )
    out: dict[str, Any] = {}
    for role, name in columns.items():
        if role not in COLUMN_ROLES:
            raise InputError(
                f"{where}: columns= has no role {role!r}; the roles are {', '.join(COLUMN_ROLES)}."
            )
        many = role in ("probs", "logits") and isinstance(name, (list, tuple))
        if not (isinstance(name, str) or (many and all(isinstance(n, str) for n in name))):
            kind = (
                "a column name (or a list of names, or a glob)"
                if role in ("probs", "logits")
                else "a column name"
            )
            raise InputError(f"{where}: columns[{role!r}] must be {kind}; got {name!r}.")
        out[role] = list(name) if many else name
    return out


def plan_columns(
    src: Source,
    *,
    label: str | None = None,
    probs: Names | None = None,
    logits: Names | None = None,
    confidence: str | None = None,
    correct: str | None = None,
    prediction: str | None = None,
    weight: str | None = None,
) -> ColumnPlan:
    """Decide the columns by the rules of :mod:`calibkit.io` (given options first, then names);
    the weight column only when ``weight`` names it."""
    plan = _plan_scores(
        src,
        label=label,
        probs=probs,
        logits=logits,
        confidence=confidence,
        correct=correct,
        prediction=prediction,
    )
    if weight is None:
        return plan
    src.require(weight)
    if weight in planned_names(plan):
        role = next(r for r, n in planned_roles_by_name(plan).items() if n == weight)
        raise InputError(
            f"{WHERE}: weight={weight!r} is also the {role} column; a weight column holds "
            "how many rows each row stands for: name a column of its own."
        )
    return replace(plan, weight=weight)


def _plan_scores(
    src: Source,
    *,
    label: str | None,
    probs: Names | None,
    logits: Names | None,
    confidence: str | None,
    correct: str | None,
    prediction: str | None,
) -> ColumnPlan:
    if probs is not None and logits is not None:
        raise InputError(f"{WHERE}: pass probs= or logits=, not both (--probs / --logits).")
    outcome_opts = [
        n
        for n, val in (("confidence", confidence), ("correct", correct), ("prediction", prediction))
        if val is not None
    ]
    if (probs is not None or logits is not None) and outcome_opts:
        given = "probs" if probs is not None else "logits"
        raise InputError(
            f"{WHERE}: {given}= takes class scores with label=; it does not combine with "
            f"{' and '.join(o + '=' for o in outcome_opts)} (a confidence with its outcome). "
            "Pass one or the other."
        )
    if probs is not None:
        kind, names = "probs", expand(src, probs, "probs")
    elif logits is not None:
        kind, names = "logits", expand(src, logits, "logits")
    elif outcome_opts:
        kind, names = "confidence", []
    else:
        kind, names = detect_kind(src)

    if kind == "confidence":
        return _plan_confidence(
            src, label=label, confidence=confidence, correct=correct, prediction=prediction
        )
    if len(names) > 1:
        two_d = [n for n in names if src.ndim(n) == 2]
        if two_d:
            raise InputError(
                f"{WHERE}: {kind} {two_d[0]!r} is a 2-D {src.kind_of_name} (a whole matrix); "
                f"pass it alone, not with other {src.kind_of_name}s."
            )
    label_name = label if label is not None else detect_label(src, required_for=kind)
    src.require(label_name)
    return ColumnPlan(kind, tuple(names), label=label_name)


def _plan_confidence(
    src: Source,
    *,
    label: str | None,
    confidence: str | None,
    correct: str | None,
    prediction: str | None,
) -> ColumnPlan:
    if correct is not None and (prediction is not None or label is not None):
        other = "prediction=" if prediction is not None else "label="
        raise InputError(
            f"{WHERE}: correct= gives the outcome directly; {other} is not used with it. Pass "
            "confidence= with correct=, or confidence= with prediction= and label=."
        )
    conf_name = (
        confidence
        if confidence is not None
        else detect_one(src, CONFIDENCE_NAMES, what="the confidence", option="confidence")
    )
    src.require(conf_name)

    if correct is None and prediction is None:
        corrects = matches(src, CORRECT_NAMES)
        preds = matches(src, PREDICTION_NAMES)
        if label is not None:
            prediction = detect_one(
                src, PREDICTION_NAMES, what="the predicted class", option="prediction"
            )
        elif corrects and preds:
            raise InputError(
                f"{WHERE}: {src.shown_as} has both a correctness column ({', '.join(corrects)}) "
                f"and a prediction column ({', '.join(preds)}); pass correct= (--correct) or "
                "prediction= with label= (--prediction, --label) to say which to use."
            )
        elif corrects:
            correct = detect_one(src, CORRECT_NAMES, what="the outcome", option="correct")
        elif preds:
            prediction = detect_one(
                src, PREDICTION_NAMES, what="the predicted class", option="prediction"
            )
        else:
            raise InputError(
                f"{WHERE}: cannot tell whether each prediction was correct: {src.shown_as} has "
                f"no column named {' or '.join(CORRECT_NAMES)}, and no prediction column "
                f"({', '.join(PREDICTION_NAMES)}); columns: {column_list(src.names)}. Pass "
                "correct= (--correct), or prediction= and label= (--prediction, --label)."
            )
    if correct is not None:
        src.require(correct)
        return ColumnPlan("confidence", confidence=conf_name, correct=correct)
    prediction = str(prediction)
    label_name = label if label is not None else detect_label(src, required_for="prediction")
    src.require(prediction)
    src.require(label_name)
    return ColumnPlan("confidence", confidence=conf_name, prediction=prediction, label=label_name)


def planned_names(plan: ColumnPlan) -> list[str]:
    """Every column a plan reads, in the order it reads them (the weight last)."""
    names = [*plan.scores, plan.confidence, plan.correct, plan.prediction, plan.label, plan.weight]
    return [n for n in names if n is not None]


def planned_roles_by_name(plan: ColumnPlan) -> dict[str, str]:
    """Which role of :data:`COLUMN_ROLES` each column of a plan plays (for messages)."""
    roles = {n: plan.kind for n in plan.scores}
    for role in ("confidence", "correct", "prediction", "label", "weight"):
        name = getattr(plan, role)
        if name is not None:
            roles.setdefault(name, role)
    return {role: name for name, role in roles.items()}


def planned_roles(plan: ColumnPlan) -> dict[str, str]:
    """The role (see :data:`calibkit.io._sources.ROLES`) of each column a plan reads (a weight
    column is read as numbers, last)."""
    if plan.kind != "confidence":
        roles = dict.fromkeys(plan.scores, "numeric")
        roles[str(plan.label)] = "label"
    else:
        roles = {str(plan.confidence): "numeric"}
        if plan.correct is not None:
            roles[plan.correct] = "outcome"
        else:
            roles[str(plan.prediction)] = roles[str(plan.label)] = "compare"
    if plan.weight is not None:
        roles[plan.weight] = "numeric"
    return roles
