"""read_predictions: which columns of a file are the scores and the labels (rules in ``io``)."""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import InputError
from ._batches import BATCH_ROWS, file_schema, read_batches
from ._rules import shown
from ._sources import (
    FORMATS,
    WHERE,
    Source,
    check_file,
    check_path,
    column_list,
    open_source,
    resolve_format,
)

__all__ = [
    "BATCH_ROWS",
    "FORMATS",
    "Predictions",
    "file_schema",
    "read_batches",
    "read_predictions",
]

LABEL_NAMES = ("label", "labels", "y", "target", "true_label", "y_true")
PROB_GLOBS = ("prob_*", "p_*", "proba_*")
PROB_MATRICES = ("probs", "probabilities", "proba")
LOGIT_GLOBS = ("logit_*",)
LOGIT_MATRICES = ("logits",)
CONFIDENCE_NAMES = ("confidence",)
CORRECT_NAMES = ("correct",)
PREDICTION_NAMES = ("prediction", "pred", "pred_label", "predicted", "predicted_label", "y_pred")

Names = str | Sequence[str]


@dataclass(frozen=True, eq=False)
class Predictions:
    """A model's predictions read from a file.

    ``kind`` is ``"probs"`` or ``"logits"`` (``scores`` of shape (N, C), or (N,) for one binary
    column) with ``labels`` the class indices, or ``"confidence"`` (``scores`` of shape (N,))
    with ``labels`` the 0/1 outcome (1 = the prediction was correct). ``columns`` says which
    columns (arrays of an ``.npz``) were used, by role.
    """

    kind: str
    scores: np.ndarray
    labels: np.ndarray
    columns: dict[str, Any]
    path: Path
    format: str

    @property
    def n(self) -> int:
        return int(self.scores.shape[0])

    def describe(self) -> str:
        """One line: the file, and which columns play which role."""
        parts = []
        for role, value in self.columns.items():
            if isinstance(value, list):
                value = (
                    value[0]
                    if len(value) == 1
                    else f"{value[0]} .. {value[-1]} ({len(value)} columns)"
                )
            parts.append(f"{role}={value}")
        return f"{self.path.name} ({', '.join(parts)})"

    def __str__(self) -> str:
        shape = "x".join(str(s) for s in self.scores.shape)
        return f"Predictions: {self.kind} {shape} from {self.describe()}"


def read_predictions(
    path: str | os.PathLike[str],
    *,
    format: str | None = None,
    label: str | None = None,
    probs: Names | None = None,
    logits: Names | None = None,
    confidence: str | None = None,
    correct: str | None = None,
    prediction: str | None = None,
) -> Predictions:
    """Read a model's predictions (and the labels) from a CSV, TSV, Parquet, JSONL or NPZ file.

    Parameters
    ----------
    path : str or path
        The file. Its extension gives the format unless ``format`` is given.
    format : {"csv", "tsv", "parquet", "jsonl", "npz"}, optional
    label : str, optional
        Column of class indices 0..C-1 (or, with ``prediction``, the true answers).
    probs, logits : list of str, comma-separated str or glob, optional
        Columns holding one score per class, in class order (``"prob_*"``); in an ``.npz`` or
        a list column, the name of one (N, C) matrix.
    confidence, correct, prediction : str, optional
        A confidence column with its 0/1 ``correct`` column, or with a ``prediction`` column
        compared to ``label``.

    Unset options are detected by the rules of :mod:`calibkit.io`; anything ambiguous or
    missing raises :class:`calibkit.InputError` naming the columns and the option to pass.

    Examples
    --------
    >>> import numpy as np, pathlib, tempfile
    >>> from calibkit.io import read_predictions
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "top1.csv"
    >>> _ = path.write_text("confidence,pred_label,true_label\\n0.9,3,3\\n0.6,1,2\\n")
    >>> p = read_predictions(path)
    >>> p.kind, p.scores.tolist(), p.labels.tolist()
    ('confidence', [0.9, 0.6], [1, 0])
    """
    path = Path(path)
    check_path(path)
    fmt = resolve_format(path, format)
    check_file(path, fmt)
    with open_source(path, fmt) as src:
        kind, scores, labels, columns = _resolve(
            src,
            label=label,
            probs=probs,
            logits=logits,
            confidence=confidence,
            correct=correct,
            prediction=prediction,
        )
    return Predictions(
        kind=kind, scores=scores, labels=labels, columns=columns, path=path, format=fmt
    )


# ----------------------------------------------------------------------------- resolution


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

    @property
    def columns(self) -> dict[str, Any]:
        """The roles and their columns, as :class:`Predictions` reports them."""
        if self.kind != "confidence":
            names = list(self.scores)
            return {self.kind: names[0] if len(names) == 1 else names, "label": self.label}
        out: dict[str, Any] = {"confidence": self.confidence}
        if self.correct is not None:
            out["correct"] = self.correct
        else:
            out.update(prediction=self.prediction, label=self.label)
        return out


#: What ``columns=`` may name (the options of :func:`read_predictions`).
COLUMN_ROLES = ("format", "label", "probs", "logits", "confidence", "correct", "prediction")


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
) -> ColumnPlan:
    """Decide the columns by the rules of :mod:`calibkit.io` (given options first, then names)."""
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
        kind, names = "probs", _expand(src, probs, "probs")
    elif logits is not None:
        kind, names = "logits", _expand(src, logits, "logits")
    elif outcome_opts:
        kind, names = "confidence", []
    else:
        kind, names = _detect_kind(src)

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
    label_name = label if label is not None else _detect_label(src, required_for=kind)
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
        else _detect_one(src, CONFIDENCE_NAMES, what="the confidence", option="confidence")
    )
    src.require(conf_name)

    if correct is None and prediction is None:
        corrects = _matches(src, CORRECT_NAMES)
        preds = _matches(src, PREDICTION_NAMES)
        if label is not None:
            prediction = _detect_one(
                src, PREDICTION_NAMES, what="the predicted class", option="prediction"
            )
        elif corrects and preds:
            raise InputError(
                f"{WHERE}: '{src.path}' has both a correctness column ({', '.join(corrects)}) and "
                f"a prediction column ({', '.join(preds)}); pass correct= (--correct) or "
                "prediction= with label= (--prediction, --label) to say which to use."
            )
        elif corrects:
            correct = _detect_one(src, CORRECT_NAMES, what="the outcome", option="correct")
        elif preds:
            prediction = _detect_one(
                src, PREDICTION_NAMES, what="the predicted class", option="prediction"
            )
        else:
            raise InputError(
                f"{WHERE}: cannot tell whether each prediction was correct: '{src.path}' has "
                f"no column named {' or '.join(CORRECT_NAMES)}, and no prediction column "
                f"({', '.join(PREDICTION_NAMES)}); columns: {column_list(src.names)}. Pass "
                "correct= (--correct), or prediction= and label= (--prediction, --label)."
            )
    if correct is not None:
        src.require(correct)
        return ColumnPlan("confidence", confidence=conf_name, correct=correct)
    prediction = str(prediction)
    label_name = label if label is not None else _detect_label(src, required_for="prediction")
    src.require(prediction)
    src.require(label_name)
    return ColumnPlan("confidence", confidence=conf_name, prediction=prediction, label=label_name)


def _resolve(src: Source, **options: Any) -> tuple[str, np.ndarray, np.ndarray, dict[str, Any]]:
    plan = plan_columns(src, **options)
    scores, labels = read_planned(src, plan)
    return plan.kind, scores, labels, plan.columns


def read_planned(src: Source, plan: ColumnPlan) -> tuple[np.ndarray, np.ndarray]:
    """The scores and labels (or confidence and outcome) a plan names, read from ``src``."""
    if plan.kind == "confidence":
        scores, labels = _read_confidence(src, plan)
    else:
        scores = _scores(src, list(plan.scores), plan.kind)
        label_name = str(plan.label)
        labels = src.get(label_name, "label")
        if labels.ndim != 1:
            raise InputError(
                f"{WHERE}: label {label_name!r} must be one column; it is a 2-D "
                f"{src.kind_of_name} of shape {labels.shape}."
            )
        _same_length(src, {plan.scores[0]: scores, label_name: labels})
    if scores.shape[0] == 0:
        raise InputError(
            f"{WHERE}: '{shown(src.path)}' has no rows (a header, or a schema, only); there is "
            "nothing to audit."
        )
    return scores, labels


def _scores(src: Source, names: list[str], kind: str) -> np.ndarray:
    if len(names) == 1:
        return src.get(names[0], "numeric")
    cols = [src.get(n, "numeric") for n in names]
    _same_length(src, dict(zip(names, cols, strict=True)))
    return np.column_stack(cols)


def _read_confidence(src: Source, plan: ColumnPlan) -> tuple[np.ndarray, np.ndarray]:
    conf_name = str(plan.confidence)
    conf = _one_d(src, conf_name, "numeric")
    if plan.correct is not None:
        outcome = _one_d(src, plan.correct, "outcome")
        _same_length(src, {conf_name: conf, plan.correct: outcome})
        return conf, outcome
    prediction, label_name = str(plan.prediction), str(plan.label)
    pred = _one_d(src, prediction, "compare")
    truth = _one_d(src, label_name, "compare")
    _same_length(src, {conf_name: conf, prediction: pred, label_name: truth})
    if (pred.dtype.kind in "US") != (truth.dtype.kind in "US"):
        text, num = (
            (prediction, label_name) if pred.dtype.kind in "US" else (label_name, prediction)
        )
        raise InputError(
            f"{WHERE}: {src.kind_of_name} {text!r} holds text but {num!r} holds numbers; "
            "prediction and label must be written the same way to be compared."
        )
    return conf, (pred == truth).astype(np.int8)


def planned_names(plan: ColumnPlan) -> list[str]:
    """Every column a plan reads, in the order it reads them."""
    names = [*plan.scores, plan.confidence, plan.correct, plan.prediction, plan.label]
    return [n for n in names if n is not None]


def planned_roles(plan: ColumnPlan) -> dict[str, str]:
    """The role (see :data:`calibkit.io._sources.ROLES`) of each column a plan reads."""
    if plan.kind != "confidence":
        roles = dict.fromkeys(plan.scores, "numeric")
        roles[str(plan.label)] = "label"
        return roles
    roles = {str(plan.confidence): "numeric"}
    if plan.correct is not None:
        roles[plan.correct] = "outcome"
    else:
        roles[str(plan.prediction)] = roles[str(plan.label)] = "compare"
    return roles


def _one_d(src: Source, name: str, role: str) -> np.ndarray:
    src.require(name)
    arr = src.get(name, role)
    if arr.ndim != 1:
        raise InputError(
            f"{WHERE}: {src.kind_of_name} {name!r} must be one column; it has shape {arr.shape}."
        )
    return arr


def _same_length(src: Source, arrays: dict[str, np.ndarray]) -> None:
    lengths = {name: arr.shape[0] for name, arr in arrays.items()}
    if len(set(lengths.values())) > 1:
        listed = ", ".join(f"{name!r} has {n}" for name, n in lengths.items())
        raise InputError(
            f"{WHERE}: the {src.kind_of_name}s used must have one row per prediction, but {listed}."
        )


# ----------------------------------------------------------------------------- detection


def _matches(src: Source, names: Sequence[str]) -> list[str]:
    wanted = {n.lower() for n in names}
    return list(dict.fromkeys(n for n in src.names if n.lower() in wanted))


def _glob(src: Source, pattern: str, *, case: bool = True) -> list[str]:
    if case:
        hits = [n for n in src.names if fnmatch.fnmatchcase(n, pattern)]
    else:
        hits = [n for n in src.names if fnmatch.fnmatchcase(n.lower(), pattern.lower())]
    return _numeric_order(list(dict.fromkeys(hits)))


def _numeric_order(names: list[str]) -> list[str]:
    """Names that share a prefix and end in numbers go in numeric order; others keep file
    order."""
    parts = [re.fullmatch(r"(.*?)(\d+)", n) for n in names]
    if names and all(parts) and len({p.group(1) for p in parts if p}) == 1:
        return sorted(names, key=lambda n: int(re.fullmatch(r".*?(\d+)", n).group(1)))  # type: ignore[union-attr]
    return names


def _detect_one(src: Source, names: Sequence[str], *, what: str, option: str) -> str:
    hits = _matches(src, names)
    if len(hits) == 1:
        return hits[0]
    cli = "--" + option.replace("_", "-")
    if not hits:
        raise InputError(
            f"{WHERE}: cannot tell which {src.kind_of_name} holds {what}: none is named "
            f"{', '.join(names)}; {src.kind_of_name}s: {column_list(src.names)}. Pass "
            f"{option}=NAME ({cli} NAME on the command line)."
        )
    raise InputError(
        f"{WHERE}: cannot tell which {src.kind_of_name} holds {what}: {', '.join(hits)} all "
        f"could. Pass {option}=NAME ({cli} NAME on the command line)."
    )


def _detect_label(src: Source, *, required_for: str) -> str:
    return _detect_one(
        src, LABEL_NAMES, what=f"the labels (needed with {required_for})", option="label"
    )


def _detect_kind(src: Source) -> tuple[str, list[str]]:
    """Find the one family of score columns present: probabilities, logits or a confidence."""
    found: dict[str, list[list[str]]] = {"probs": [], "logits": [], "confidence": []}
    for kind, globs, matrices in (
        ("probs", PROB_GLOBS, PROB_MATRICES),
        ("logits", LOGIT_GLOBS, LOGIT_MATRICES),
    ):
        for pattern in globs:
            hits = _glob(src, pattern, case=False)
            if hits:
                found[kind].append(hits)
        for name in _matches(src, matrices):
            found[kind].append([name])
    for name in _matches(src, CONFIDENCE_NAMES):
        found["confidence"].append([name])

    present = {k: groups for k, groups in found.items() if groups}
    if not present:
        raise InputError(
            f"{WHERE}: cannot find the model's scores in '{src.path}': no probability columns "
            f"({', '.join(PROB_GLOBS + PROB_MATRICES)}), logit columns "
            f"({', '.join(LOGIT_GLOBS + LOGIT_MATRICES)}) or a column named "
            f"{' or '.join(CONFIDENCE_NAMES)}; "
            f"{src.kind_of_name}s: {column_list(src.names)}. Pass probs=, logits= or "
            f"confidence= (--probs, --logits, --confidence){_candidates(src)}."
        )
    described = "; ".join(
        f"{kind}: " + " / ".join(_short(g) for g in groups) for kind, groups in present.items()
    )
    if len(present) > 1:
        options = ", ".join(f"{k}= (--{k})" for k in present)
        raise InputError(
            f"{WHERE}: '{src.path}' could hold more than one kind of score ({described}); "
            f"pass one of {options} to choose."
        )
    kind, groups = next(iter(present.items()))
    if len(groups) > 1:
        raise InputError(
            f"{WHERE}: '{src.path}' has more than one group of {kind} {src.kind_of_name}s "
            f"({described}); pass {kind}= (--{kind}) with the names or a glob such as "
            f"'{groups[0][0].rsplit('_', 1)[0]}_*'."
        )
    return kind, groups[0]


def _candidates(src: Source) -> str:
    hits = [n for n in src.names if re.search("prob|logit|conf|score", n, re.IGNORECASE)]
    return f"; perhaps {', '.join(hits[:6])}" if hits else ""


def _short(group: list[str]) -> str:
    return group[0] if len(group) == 1 else f"{group[0]} .. {group[-1]}"


def _expand(src: Source, spec: Names, option: str) -> list[str]:
    """Column names from a list, a comma-separated string or globs, in the order given."""
    items = [s.strip() for s in spec.split(",")] if isinstance(spec, str) else list(spec)
    if not items or any(not isinstance(s, str) or not s for s in items):
        raise InputError(
            f"{WHERE}: {option}= needs column names, a comma-separated string or "
            f"a glob such as 'prob_*'; got {spec!r}."
        )
    names: list[str] = []
    for item in items:
        if any(ch in item for ch in "*?["):
            hits = _glob(src, item)
            if not hits:
                raise InputError(
                    f"{WHERE}: no {src.kind_of_name} of '{src.path}' matches {item!r} "
                    f"({option}=); {src.kind_of_name}s: {column_list(src.names)}."
                )
            names += hits
        else:
            src.require(item)
            names.append(item)
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise InputError(f"{WHERE}: {option}= names {', '.join(repeated)} more than once.")
    return names
