"""read_predictions: which columns of a file (or a table in memory) are the scores and the
labels (rules in ``io``)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import _validate as v
from .._errors import InputError
from ._detect import (
    CONFIDENCE_NAMES,
    CORRECT_NAMES,
    LABEL_NAMES,
    LOGIT_GLOBS,
    LOGIT_MATRICES,
    PREDICTION_NAMES,
    PROB_GLOBS,
    PROB_MATRICES,
    Names,
)
from ._formats import FORMATS, resolve_format
from ._frames import FrameSource, is_frame
from ._plan import (
    ColumnPlan,
    column_options,
    plan_columns,
    planned_names,
)
from ._sources import (
    WHERE,
    Source,
    check_file,
    check_path,
    open_source,
)

__all__ = [
    "CONFIDENCE_NAMES",
    "CORRECT_NAMES",
    "FORMATS",
    "LABEL_NAMES",
    "LOGIT_GLOBS",
    "LOGIT_MATRICES",
    "PREDICTION_NAMES",
    "PROB_GLOBS",
    "PROB_MATRICES",
    "Predictions",
    "open_any",
    "read_predictions",
]


@dataclass(frozen=True, eq=False)
class Predictions:
    """A model's predictions read from a file or a table in memory.

    ``kind`` is ``"probs"`` or ``"logits"`` (``scores`` of shape (N, C), or (N,) for one binary
    column) with ``labels`` the class indices (for one column with ``pos_label``, the 0/1
    outcome label == pos_label), or ``"confidence"`` (``scores`` of shape (N,)) with ``labels``
    the 0/1 outcome (1 = the prediction was correct). ``columns`` says which columns (arrays of
    an ``.npz``) were used, by role. ``path`` is None for a table in memory, whose ``format``
    says what it was (``"pandas"``, ``"polars"``, ``"pyarrow"``). ``sample_weight`` holds the
    weight column's values (float64; ``weight=`` names it, it is never detected), None when no
    weight column was named.
    """

    kind: str
    scores: np.ndarray
    labels: np.ndarray
    columns: dict[str, Any]
    path: Path | None
    format: str
    #: How messages name the source: the quoted path, or "the pandas DataFrame".
    source: str = ""
    #: The weight column's values (``weight=``), or None: every row counts once.
    sample_weight: np.ndarray | None = None

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
        name = self.path.name if self.path is not None else self.source
        return f"{name} ({', '.join(parts)})"

    def __str__(self) -> str:
        shape = "x".join(str(s) for s in self.scores.shape)
        return f"Predictions: {self.kind} {shape} from {self.describe()}"


def read_predictions(
    path: str | os.PathLike[str] | Any,
    *,
    format: str | None = None,
    label: str | None = None,
    probs: Names | None = None,
    logits: Names | None = None,
    confidence: str | None = None,
    correct: str | None = None,
    prediction: str | None = None,
    weight: str | None = None,
    pos_label: Any = None,
    columns: Mapping[str, Any] | None = None,
) -> Predictions:
    """Read a model's predictions (and the labels) from a CSV, TSV, Parquet, JSONL or NPZ file,
    or from a pandas or polars DataFrame or a pyarrow Table.

    Parameters
    ----------
    path : str, path, DataFrame or pyarrow Table
        The file (its extension gives the format unless ``format`` is given), or a table in
        memory, whose columns are read by the same rules.
    format : {"csv", "tsv", "parquet", "jsonl", "npz"}, optional
    label : str, optional
        Column of class indices 0..C-1 (or, with ``prediction``, the true answers).
    probs, logits : list of str, comma-separated str or glob, optional
        Columns holding one score per class, in class order (``"prob_*"``); in an ``.npz`` or
        a list column, the name of one (N, C) matrix.
    confidence, correct, prediction : str, optional
        A confidence column with its 0/1 ``correct`` column, or with a ``prediction`` column
        compared to ``label``.
    pos_label : optional
        With one score column (P(label = pos_label), or its logit): the label value that is
        the event; ``labels`` is then the 0/1 outcome. Needed when the label column holds
        text (two values, such as ``"benign"`` / ``"malignant"``).
    weight : str, optional
        Column of sample weights (how many rows each row stands for; 0 leaves a row out):
        numbers by the same cell rules, finite, non-negative, not all zero. Never detected from
        a name: only a column named here is a weight. Read into ``sample_weight``.
    columns : mapping, optional
        The same options as a mapping of roles to columns (:data:`COLUMN_ROLES`), as the engines
        take them: ``columns={"probs": "p", "label": "y", "weight": "w"}``; a role given both
        ways is an error.

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
    >>> import pandas as pd
    >>> df = pd.DataFrame({"p_spam": [0.9, 0.2, 0.7], "y_true": ["spam", "ham", "spam"]})
    >>> p = read_predictions(df, probs="p_spam", pos_label="spam")
    >>> p.labels.tolist(), p.describe()
    ([1, 0, 1], 'the pandas DataFrame (probs=p_spam, label=y_true)')
    """
    given: dict[str, Any] = {
        "format": format,
        "label": label,
        "probs": probs,
        "logits": logits,
        "confidence": confidence,
        "correct": correct,
        "prediction": prediction,
        "weight": weight,
    }
    for role, name in column_options(columns, where=WHERE).items():
        if given[role] is not None:
            raise InputError(
                f"{WHERE}: {role} is given twice, as {role}= and in columns=; pass it once."
            )
        given[role] = name
    options = {k: val for k, val in given.items() if val is not None and k != "format"}
    with contextlib.ExitStack() as stack:
        src = open_any(path, given["format"])
        if src is not path:  # opened here: closed here
            stack.enter_context(src)
        plan = plan_columns(src, **options)
        scores, labels = read_planned(src, plan, pos_label=pos_label)
        weights = read_weight(src, plan, n=scores.shape[0])
        if plan.kind != "confidence" and scores.ndim == 1 and pos_label is None:
            try:  # two numbers other than 0 and 1: which is the event?
                v.two_valued(labels, where=WHERE, name=f"column {plan.label!r}")
            except v.CountedError as exc:
                raise exc.at(f"row {exc.index[0]}") from None
    return Predictions(
        kind=plan.kind,
        scores=scores,
        labels=labels,
        columns=plan.columns,
        path=src.path,
        format=src.fmt,
        source=src.shown_as,
        sample_weight=weights,
    )


def open_any(data: Any, format: str | None = None) -> Source:
    """A source over a file (checked by the file rules first) or a table in memory (a source
    already open is itself)."""
    if isinstance(data, Source):
        return data
    if is_frame(data):
        if format is not None:
            raise InputError(
                f"{WHERE}: format= tells the format of a file; a table in memory has none "
                "(leave format= out)."
            )
        return FrameSource(data)
    path = Path(data)
    check_path(path)
    fmt = resolve_format(path, format)
    check_file(path, fmt)
    return open_source(path, fmt)


def read_planned(
    src: Source, plan: ColumnPlan, *, pos_label: Any = None
) -> tuple[np.ndarray, np.ndarray]:
    """The scores and labels (or confidence and outcome) a plan names, read from ``src``; with
    ``pos_label`` (one score column), the labels are the 0/1 outcome label == pos_label."""
    if plan.kind == "confidence":
        if pos_label is not None:
            raise InputError(
                f"{WHERE}: pos_label= (--positive) says which label value one score column "
                f"forecasts; {src.shown_as} gives a confidence ({plan.confidence!r}) whose "
                "outcome is already 0/1 (whether the prediction was right). Leave it out."
            )
        scores, labels = _read_confidence(src, plan)
    else:
        scores = _scores(src, list(plan.scores), plan.kind)
        labels = _labels(src, plan, scores, pos_label)
        _same_length(src, {plan.scores[0]: scores, str(plan.label): labels})
    if scores.shape[0] == 0:
        raise InputError(
            f"{WHERE}: {src.shown_as} has no rows (a header, or a schema, only); there is "
            "nothing to audit."
        )
    return scores, labels


def _labels(src: Source, plan: ColumnPlan, scores: np.ndarray, pos_label: Any) -> np.ndarray:
    """The label column: class indices; beside one score column also two values written as
    text, or any two values with ``pos_label`` (the outcome label == pos_label)."""
    name = str(plan.label)
    if pos_label is not None and scores.ndim != 1:
        raise InputError(
            f"{WHERE}: pos_label= (--positive) says which label value one score column "
            f"forecasts, but {plan.kind} {_listed(plan.scores)} hold "
            f"{scores.shape[1]} class scores a row, whose labels are the class indices "
            f"0..{scores.shape[1] - 1}. Leave pos_label= out, or pass one column with "
            f"{plan.kind}= (--{plan.kind})."
        )
    if pos_label is None:
        try:
            labels = src.get(name, "label")
        except InputError as exc:
            one_matrix = len(plan.scores) == 1 and scores.ndim == 2
            if src.get(name, "compare").dtype.kind not in "US" or one_matrix:
                raise
            if scores.ndim != 1:
                first = plan.scores[0]
                raise InputError(
                    f"{exc} The labels of {len(plan.scores)} {plan.kind} columns "
                    f"({_listed(plan.scores)}) are the class indices 0..{scores.shape[1] - 1}; "
                    "if each column is P(label = one value) from a separate binary model, "
                    f"audit one at a time: {plan.kind}={first!r} with pos_label= (--{plan.kind} "
                    f"{first} --positive VALUE)."
                ) from None
            labels = src.get(name, "compare")  # text beside one score column: which is it?
    else:
        labels = src.get(name, "compare")
    if labels.ndim != 1:
        raise InputError(
            f"{WHERE}: label {name!r} must be one column; it is a 2-D "
            f"{src.kind_of_name} of shape {labels.shape}."
        )
    if pos_label is None and labels.dtype.kind not in "US":
        return labels
    return v.positive_outcome(labels, pos_label, where=WHERE, name=f"column {name!r}")


def _listed(names: tuple[str, ...] | list[str], limit: int = 6) -> str:
    shown = ", ".join(repr(n) for n in names[:limit])
    return shown + (f", ... ({len(names)} columns)" if len(names) > limit else "")


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


def read_weight(src: Source, plan: ColumnPlan, *, n: int) -> np.ndarray | None:
    """The weight column a plan names (None without one): numbers by the cell rules, then
    finite, non-negative and not all zero (:func:`calibkit._validate.weight_column`)."""
    if plan.weight is None:
        return None
    values = _one_d(src, plan.weight, "numeric")
    _same_length(src, {planned_names(plan)[0]: np.empty((n, 0)), plan.weight: values})
    return v.weight_column(values, name=plan.weight, where=WHERE)


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
