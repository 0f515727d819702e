"""Predictions whose labels arrive late: the scores of every row, and the labels of the rows
that have one (empty, NA or null cells stand for "no label yet")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._errors import InputError
from ._calibrate import plan_scores
from ._detect import CORRECT_NAMES, detect_one, matches
from ._read import _scores, open_any
from ._sources import WHERE, Source

__all__ = ["PartlyLabelled", "read_partly_labelled"]


@dataclass(frozen=True, eq=False)
class PartlyLabelled:
    """``scores`` of every row (``kind`` "probs", "logits" or "confidence"), and ``labels``
    (float64: class indices, or the 0/1 outcome beside a confidence) with NaN where a row has
    no label yet; ``columns`` names the columns read, by role."""

    kind: str
    scores: np.ndarray
    labels: np.ndarray
    columns: dict[str, Any]
    source: str

    @property
    def labelled(self) -> np.ndarray:
        return ~np.isnan(self.labels)


def read_partly_labelled(
    data: Any,
    *,
    format: str | None = None,
    probs: Any = None,
    logits: Any = None,
    confidence: str | None = None,
    label: str | None = None,
    correct: str | None = None,
) -> PartlyLabelled:
    """Read the scores of every row and the labels where they are given (detected columns as
    :func:`~calibkit.io.read_predictions` detects them). A label column is needed, even if
    most of its cells are empty; a cell that holds something other than a label is an error.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from calibkit.io import read_partly_labelled
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "late.csv"
    >>> _ = path.write_text("confidence,correct\\n0.9,1\\n0.6,\\n0.8,NA\\n")
    >>> r = read_partly_labelled(path)
    >>> r.scores.tolist(), r.labels.tolist()
    ([0.9, 0.6, 0.8], [1.0, nan, nan])
    """
    src = open_any(data, format)
    plan = plan_scores(
        src, label=label, probs=probs, logits=logits, confidence=confidence, where=WHERE
    )
    scores = _scores(src, list(plan.scores), plan.kind)
    if plan.kind == "confidence":
        if correct is None:
            if not matches(src, CORRECT_NAMES):
                raise InputError(
                    f"{WHERE}: {src.shown_as} has no column saying whether each prediction was "
                    "right; name it with correct= (--correct), empty where not known yet."
                )
            correct = detect_one(src, CORRECT_NAMES, what="the outcomes", option="correct")
        name, role = correct, "outcome"
    else:
        if plan.label is None:
            raise InputError(
                f"{WHERE}: {src.shown_as} has no label column; name it with label= (--label), "
                "empty where not known yet."
            )
        name, role = plan.label, "label"
    labels = _with_gaps(src, name, role)
    if labels.shape[0] != scores.shape[0]:
        raise InputError(
            f"{WHERE}: {name!r} has {labels.shape[0]} rows but the scores {scores.shape[0]}."
        )
    known = ~np.isnan(labels)
    bad = known & ((labels < 0) | (labels != np.round(labels)))
    if role == "outcome":
        bad |= known & (labels > 1)
    elif scores.ndim == 2:
        bad |= known & (labels >= scores.shape[1])
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        want = "0 or 1" if role == "outcome" else f"a class index 0..{_top(scores)}"
        raise InputError(
            f"{WHERE}: {name!r} holds {labels[row]:g} at row {row}; a label there must be "
            f"{want}, or empty where it is not known yet."
        )
    columns = {**plan.columns, ("correct" if role == "outcome" else "label"): name}
    return PartlyLabelled(plan.kind, scores, labels, columns, src.shown_as)


def _with_gaps(src: Source, name: str, role: str) -> np.ndarray:
    """The column as float64 with NaN for its missing cells; any other problem is raised."""
    checked = getattr(src, "checked", None)
    if checked is None:  # an NPZ archive: no cell is missing there
        return np.asarray(src.get(name, role), dtype=np.float64)
    values, problem = checked(name, role)
    if problem is None:
        return np.asarray(values, dtype=np.float64)
    if problem.rule != "missing":
        raise problem.error()
    if values.shape[0] == problem.n:  # cell rules: NaN where missing
        return np.asarray(values, dtype=np.float64)
    import pyarrow.compute as pc

    from .._arrow import to_numpy

    column = src._column(name)  # type: ignore[attr-defined]
    return to_numpy(pc.fill_null(pc.cast(column, "float64"), float("nan"))).astype(np.float64)


def _top(scores: np.ndarray) -> int:
    return scores.shape[1] - 1
