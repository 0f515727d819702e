"""Messages about the values of columns a plan read, in the user's names: a value the audit (or
a calibrator) refuses is placed by column and row ("column 'proba_1', row 17: 1.2"), not by
the index of an array the user never built, and every other such message says which columns
were read."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from .._errors import InputError
from .._validate import CountedError

#: Names the library gives the score array in its messages, and the label array.
SCORE_ARRAYS = ("probs", "logits", "scores", "confidence", "p", "z")
LABEL_ARRAYS = ("labels", "outcome", "y", "correct")

#: Score columns listed in full in a message (more are shown first .. last).
LISTED = 8


@contextlib.contextmanager
def naming_columns(columns: Mapping[str, Any], *, labels: Any = None) -> Iterator[None]:
    """Run the block; an InputError about the values it raises comes out in the columns'
    names (``columns`` as :attr:`calibkit.io.Predictions.columns` gives them). ``labels``: the
    labels read, to tell a forecast of several binary models side by side (its rows do not sum
    to 1) and say how to audit each."""
    try:
        yield
    except CountedError as exc:
        raise _placed(exc, columns, labels) from None
    except InputError as exc:
        raise InputError(f"{exc} (Columns read: {_roles(columns)}.)") from None


def score_columns(columns: Mapping[str, Any]) -> list[str]:
    for role in ("probs", "logits", "confidence"):
        if role in columns:
            value = columns[role]
            return list(value) if isinstance(value, (list, tuple)) else [str(value)]
    return []


def label_column(columns: Mapping[str, Any]) -> str | None:
    if "correct" in columns:
        return str(columns["correct"])
    if "prediction" in columns:
        return f"{columns['prediction']} == {columns['label']}"
    label = columns.get("label")
    return None if label is None else str(label)


def _placed(exc: CountedError, columns: Mapping[str, Any], labels: Any) -> InputError:
    scores, label = score_columns(columns), label_column(columns)
    index = exc.index
    if exc.name in LABEL_ARRAYS and label is not None:
        return exc.at(f"column {label!r}, row {index[0]}")
    if exc.name not in SCORE_ARRAYS or not scores:
        return InputError(f"{exc} (Columns read: {_roles(columns)}.)")
    if len(index) == 2 and len(scores) > 1:
        place = f"column {scores[index[1]]!r}, row {index[0]}"
    elif len(index) == 2:
        place = f"row {index[0]}, column {index[1]} of {scores[0]!r}"
    elif len(scores) == 1:
        place = f"column {scores[0]!r}, row {index[0]}"
    else:
        place = f"row {index[0]} ({_sum(scores)})"
    error = exc.at(place)
    if exc.rule == "rowsum" and len(scores) > 1 and _binary(labels):
        role = "probs" if "probs" in columns else "logits"
        first = scores[0]
        return InputError(
            f"{error} The {len(scores)} columns {_names(scores)} were read as one "
            f"{len(scores)}-class forecast; if each is P(label = 1) from a separate binary "
            f"model, audit them one at a time: --{role} {first} ({role}={first!r} in "
            "columns=)."
        )
    return error


def _binary(labels: Any) -> bool:
    """Labels with at most two distinct values (or none given)."""
    if labels is None:
        return True
    values = np.asarray(labels)
    return values.ndim == 1 and np.unique(values).size <= 2


def _names(names: list[str]) -> str:
    if len(names) <= LISTED:
        return ", ".join(names)
    return f"{names[0]} .. {names[-1]}"


def _sum(names: list[str]) -> str:
    if len(names) <= LISTED:
        return " + ".join(names)
    return f"{names[0]} + ... + {names[-1]}, {len(names)} columns"


def _roles(columns: Mapping[str, Any]) -> str:
    parts = []
    for role, value in columns.items():
        if value is None:
            continue
        listed = _names(list(value)) if isinstance(value, (list, tuple)) else str(value)
        parts.append(f"{role} = {listed}")
    return "; ".join(parts)
