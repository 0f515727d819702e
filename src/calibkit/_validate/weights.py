"""Sample weights: one check for every function that takes ``sample_weight=``."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._errors import InputError
from .arrays import CountedError, finite, float_array, where_first
from .outcomes import same_length


def sample_weight(w: Any, *, n: int, where: str, name: str = "sample_weight") -> np.ndarray | None:
    """``None`` stays ``None`` (every row counts once); otherwise a float64 array of ``n``
    finite, non-negative weights that are not all zero.

    A weight of zero keeps the row out of every sum (as scikit-learn does); the row still
    has to be a valid forecast.

    Examples
    --------
    >>> sample_weight([1, 2, 0], n=3, where="ece").tolist()
    [1.0, 2.0, 0.0]
    >>> sample_weight(None, n=3, where="ece") is None
    True
    """
    if w is None:
        return None
    arr = weight_values(w, n=n, where=where, name=name)
    if not arr.any():
        raise InputError(all_weights_zero(name, where))
    return arr


def weight_values(w: Any, *, n: int, where: str, name: str = "sample_weight") -> np.ndarray:
    """The checks of :func:`sample_weight` that each part of the data passes alone: ``n``
    finite, non-negative weights (float64), which may all be zero (a chunk of a stream whose
    rows are left out; the stream as a whole must not be: :func:`all_weights_zero`). A bad
    value raises a :class:`~calibkit._validate.CountedError`, which a stream totals over its
    chunks.

    Examples
    --------
    >>> weight_values([0, 0], n=2, where="audit").tolist()
    [0.0, 0.0]
    """
    arr = float_array(w, name=name, where=where, ndim=1)
    same_length(arr, n, name=name, where=where)
    finite(arr, name=name, where=where, hint="Give every row a finite weight.")
    negative = arr < 0
    if negative.any():
        count, index = where_first(negative)
        value = arr[index]
        raise CountedError(
            "negative",
            name,
            count,
            index,
            lambda count, at: (
                f"{where}: {name} must not be negative; {count} "
                f"{'weight is' if count == 1 else 'weights are'}, first at {at}: "
                f"{value}. A weight says how many rows a row stands for: use 0 to leave a "
                "row out."
            ),
        )
    return np.ascontiguousarray(arr, dtype=np.float64)


def all_weights_zero(name: str, where: str) -> str:
    """The message for weights that are all zero (``name``: the argument)."""
    return (
        f"{where}: every {name} is zero, so no row counts and there is nothing to measure; "
        "give at least one row a positive weight."
    )


def effective_size(weight_sum: np.ndarray | float, weight_sq_sum: np.ndarray | float) -> Any:
    """Kish's effective sample size, (sum w)^2 / sum w^2 (0 where there is no weight).

    Examples
    --------
    >>> float(effective_size(4.0, 4.0)), float(effective_size(4.0, 10.0))
    (4.0, 1.6)
    """
    ws = np.asarray(weight_sum, dtype=np.float64)
    wq = np.asarray(weight_sq_sum, dtype=np.float64)
    out = np.zeros(np.broadcast(ws, wq).shape)
    nz = wq > 0
    np.divide(ws * ws, wq, out=out, where=nz)
    return out if out.ndim else float(out)


def weight_column(w: np.ndarray, *, name: str, where: str) -> np.ndarray:
    """The weights of a file's weight column (already read by the cell rules: no missing, NaN or
    text cells) as float64: finite, non-negative, not all zero. Messages name the column and its
    first bad row, with the same words the SQL engines use (they count the rows).

    Examples
    --------
    >>> weight_column(np.array([1, 0, 2.5]), name="w", where="read").tolist()
    [1.0, 0.0, 2.5]
    """
    arr = np.asarray(w, dtype=np.float64)
    for bad, what, hint in (
        (~np.isfinite(arr), "infinite values", "Give every row a finite weight."),
        (
            arr < 0,
            "negative values",
            "A weight says how many rows a row stands for: use 0 to leave a row out.",
        ),
    ):
        if bad.any():
            count, (index,) = where_first(bad)
            raise InputError(
                f"{where}: weight column {name!r} has {what}: {count} "
                f"{'row' if count == 1 else 'rows'} of {arr.size}, first at row {index}: "
                f"{arr[index]}. {hint}"
            )
    if arr.size and not arr.any():
        raise InputError(every_weight_zero(name, where))
    return arr


def every_weight_zero(name: str, where: str) -> str:
    """The message for a weight column of zeros only (every engine's)."""
    return (
        f"{where}: every weight in column {name!r} is zero, so no row counts and there is "
        "nothing to audit; give the rows their weights (0 leaves a row out)."
    )
