"""What reading a column can find wrong, and the messages that say so: counted problems of a
column (missing values, cells that are not numbers) that a reader of batches totals over the
file, and the checks of booleans, NaN and text by the role a column plays."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .._errors import InputError
from . import _rules as rules

WHERE = rules.WHERE


@dataclass(frozen=True)
class Problem:
    """A rule broken by ``count`` of the ``n`` cells of a column, first at row ``first``:
    ``rule`` is "missing" (null, empty, NA or NaN; ``nan`` of them NaN) or "text" (a cell that
    is not a number, nor for an outcome TRUE/FALSE; ``value`` is the first)."""

    name: str
    role: str
    rule: str
    count: int
    first: int
    n: int
    nan: int = 0
    value: str = ""

    def plus(self, other: Problem | None, rows: int) -> Problem:
        """This problem over one more batch of ``rows`` rows (``other``: its problem there)."""
        if other is None:
            return replace(self, n=self.n + rows)
        return replace(
            self, count=self.count + other.count, n=self.n + rows, nan=self.nan + other.nan
        )

    def error(self) -> InputError:
        if self.rule == "missing":
            return missing_values(self.name, self.count, self.first, self.n, nan=self.nan)
        return not_admitted(self.name, self.count, self.first, self.n, self.value, self.role)


def missing_values(name: str, count: int, first: int, n: int, *, nan: int = 0) -> InputError:
    """A column's missing values (null, empty, NA, NaN): the count, the first row, and how many
    are NaN."""
    detail = f": {nan} {'value is' if nan == 1 else 'values are'} NaN" if nan else ""
    return InputError(
        f"{WHERE}: column {name!r} has {count} missing "
        f"{'value' if count == 1 else 'values'} (null/empty/NaN), first at row {first} "
        f"(0-based, header not counted, of {n} rows){detail}; calibkit does not drop rows "
        "silently: remove or fill them first."
    )


def not_admitted(name: str, count: int, first: int, n: int, value: str, role: str) -> InputError:
    """Cells of a CSV column that are none of the forms its role admits."""
    if role == "outcome":
        return InputError(
            f"{WHERE}: column {name!r} must hold 0/1 or TRUE/FALSE; {count} "
            f"{'value does' if count == 1 else 'values do'} not, first at row {first}: "
            f"{value!r}."
        )
    word = value.lower() in rules.TRUE + rules.FALSE and role == "numeric"
    hint = " (TRUE/FALSE is an outcome, not a score)" if word else ""
    return InputError(
        f"{WHERE}: column {name!r} must hold numbers; it holds text, first non-number at row "
        f"{first}: {value!r} ({count} of {n} cells are not numbers){hint}. A number is digits "
        "with an optional sign, decimal point and exponent (-1.5e-3)."
    )


def whole(values: np.ndarray) -> np.ndarray:
    """Labels and outcomes read from text as integers when they are whole numbers (otherwise
    as they are, for the value check to name)."""
    if values.size and np.isfinite(values).all() and (np.abs(values) < 2.0**53).all():
        if (values == np.round(values)).all():
            return values.astype(np.int64)
    return values


def nan_problem(name: str, arr: np.ndarray, role: str) -> Problem | None:
    """1-D numbers read from a file: NaN is a missing value in every column the audit reads."""
    if arr.dtype.kind != "f" or role == "any":
        return None
    with np.errstate(invalid="ignore", over="ignore"):
        if np.isfinite(arr.sum()):
            return None
    nan = np.isnan(arr)
    if not nan.any():
        return None
    count = int(nan.sum())
    return Problem(name, role, "missing", count, int(np.argmax(nan)), arr.size, count)


def booleans(name: str, arr: np.ndarray, role: str, what: str = "column") -> np.ndarray:
    """True/False is an outcome (1/0) or a label, never a score."""
    if role in rules.ROLES_WITH_WORDS:
        return arr.astype(np.int8)
    if role in ("any", "compare"):
        return arr
    raise InputError(
        f"{WHERE}: {what} {name!r} must hold numbers; it holds booleans (true/false), which are "
        "outcomes or labels, not scores. Choose the score column."
    )


_TRUE = {"true", "1"}
_FALSE = {"false", "0"}


def text_column(name: str, values: np.ndarray, role: str, what: str = "column") -> np.ndarray:
    """Text is kept for a prediction/label comparison, turned into 0/1 for an outcome, and
    otherwise rejected with the first value that is not a number."""
    if role in ("any", "compare"):
        return values
    if role == "outcome":
        low = np.char.lower(np.char.strip(values))
        is_true, is_false = np.isin(low, list(_TRUE)), np.isin(low, list(_FALSE))
        bad = ~(is_true | is_false)
        if not bad.any():
            return is_true.astype(np.int8)
        i = int(np.argmax(bad))
        raise InputError(
            f"{WHERE}: {what} {name!r} must hold 0/1 or TRUE/FALSE; {int(bad.sum())} "
            f"{'value does' if bad.sum() == 1 else 'values do'} not, first at row {i}: "
            f"{str(values[i])!r}."
        )
    for i, value in enumerate(values.tolist()):
        try:
            float(value)
        except ValueError:
            raise InputError(
                f"{WHERE}: {what} {name!r} must hold numbers; it holds text, first non-number "
                f"at row {i}: {value!r}."
            ) from None
    raise InputError(
        f"{WHERE}: {what} {name!r} holds numbers written as text (e.g. "
        f"{str(values[0])!r}); write them as numbers."
    )
