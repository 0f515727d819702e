"""Group values: one per row, none missing, all of one orderable kind (the groups of a
per-group calibrator, a feature column of a segment search)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._errors import InputError
from .arrays import fmt_index, where_first
from .outcomes import same_length


def group_values(x: Any, *, n: int, where: str, name: str = "groups") -> np.ndarray:
    """One group value per row (text, numbers, booleans or dates) as a 1-D numpy array of
    length ``n``, none missing: the groups of a per-group calibrator, a feature column of a
    segment search. A missing value (None, NaN, NaT, a null) is refused with its count and
    first index, and so are values that cannot be ordered among themselves (numbers beside
    text).

    Examples
    --------
    >>> from calibkit import _validate as v
    >>> v.group_values(["a", "b", "a"], n=3, where="demo").tolist()
    ['a', 'b', 'a']
    >>> v.group_values([1.0, float("nan"), 2.0], n=3, where="demo", name="feature 'age'")
    Traceback (most recent call last):
    ...
    calibkit._errors.InputError: demo: feature 'age' has 1 missing value (None/NaN/NaT/null), first at index 1; calibkit does not drop rows silently: remove or fill them first.
    """  # noqa: E501
    if x is None or isinstance(x, (str, bytes)) or np.ndim(x) == 0:
        raise InputError(
            f"{where}: {name} must hold one value per row (an array, a list or a table "
            f"column), got {type(x).__name__}."
        )
    module = type(x).__module__.split(".")[0]
    if module == "pyarrow" and hasattr(x, "is_null"):
        _no_missing(np.asarray(x.is_null().to_numpy(zero_copy_only=False), bool), name, where)
        arr = np.asarray(x.to_numpy(zero_copy_only=False))
    elif module == "pandas" and hasattr(x, "isna"):
        _no_missing(np.asarray(x.isna().to_numpy(), dtype=bool), name, where)
        arr = np.asarray(x.to_numpy())
    elif hasattr(x, "to_numpy") and not isinstance(x, np.ndarray):  # polars
        arr = np.asarray(x.to_numpy())
    else:
        try:
            arr = np.asarray(x)
        except (ValueError, TypeError) as exc:
            raise InputError(f"{where}: {name} could not be read as an array ({exc}).") from None
    if arr.ndim != 1:
        raise InputError(f"{where}: {name} must be 1-D, got an array of shape {arr.shape}.")
    same_length(arr, n, name=name, where=where)
    if arr.dtype.kind in "fc":
        _no_missing(np.isnan(arr), name, where)
    elif arr.dtype.kind in "mM":
        _no_missing(np.isnat(arr), name, where)
    elif arr.dtype == object:
        _no_missing(np.fromiter(map(_is_missing, arr.tolist()), bool, arr.size), name, where)
    if arr.dtype == object:
        try:
            np.unique(arr)
        except TypeError:
            kinds = sorted({type(value).__name__ for value in arr.tolist()})
            raise InputError(
                f"{where}: {name} mixes values that cannot be ordered ({', '.join(kinds)}); "
                "give every row the same type, e.g. text (.astype(str))."
            ) from None
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return arr


def _no_missing(missing: np.ndarray, name: str, where: str) -> None:
    if missing.any():
        count, index = where_first(missing)
        raise InputError(
            f"{where}: {name} has {count} missing {'value' if count == 1 else 'values'} "
            f"(None/NaN/NaT/null), first at {fmt_index(index)}; calibkit does not drop rows "
            "silently: remove or fill them first."
        )


def _is_missing(value: Any) -> bool:
    """None, a float NaN, or a missing marker of pandas (NA, NaT) in an object array."""
    if value is None or (isinstance(value, float) and value != value):
        return True
    return type(value).__name__ in ("NAType", "NaTType")
