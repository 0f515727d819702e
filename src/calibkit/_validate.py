"""The one place where user input is checked and turned into numpy arrays.

Every public function calls into this module before it computes anything; nothing else calls
``np.asarray`` on user data. Failures raise :class:`calibkit.InputError` with a message that says
what is wrong, where (count, first index and value) and how to fix it. Nothing is clipped,
renormalised or dropped here: data is either usable as it is or rejected.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ._errors import InputError

#: Rows of a probability matrix must sum to 1 within this absolute tolerance. It admits float32
#: softmax output and probabilities written with a few decimals, and rejects logits and scores.
ROW_SUM_ATOL = 1e-3

_LOGITS_HINT = (
    "If these are logits or scores, turn them into probabilities first (ck.softmax, ck.sigmoid, "
    "or from_logits=True where a function offers it; --logits on the command line)."
)


def to_numpy(x: Any, *, name: str, where: str) -> np.ndarray:
    """Convert arrays, lists, pandas/polars columns and pyarrow arrays to numpy, without copying
    where the source allows it."""
    if isinstance(x, np.ndarray):
        arr = x
    elif hasattr(x, "to_numpy") and not hasattr(x, "__array_namespace__"):  # pandas, polars, arrow
        arr = _column_to_numpy(x, name=name, where=where)
    elif isinstance(x, (str, bytes)) or x is None:
        raise InputError(f"{where}: {name} must be an array of numbers, got {type(x).__name__}.")
    else:
        try:
            arr = np.asarray(x)
        except (ValueError, TypeError) as exc:
            raise InputError(
                f"{where}: {name} could not be read as an array ({exc}); "
                "pass a numpy array, a list of numbers or a dataframe column."
            ) from None
    if arr.dtype == object or arr.dtype.kind in "USVMmO":
        raise InputError(
            f"{where}: {name} must hold numbers, got dtype {arr.dtype}"
            f"{_first_non_numeric(arr)}. Convert the column to a numeric type first."
        )
    if not arr.dtype.isnative:  # big-endian data from a file: the kernels need native order
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return arr


def _column_to_numpy(x: Any, *, name: str, where: str) -> np.ndarray:
    module = type(x).__module__.split(".")[0]
    if module == "pyarrow":
        if x.null_count:
            raise InputError(
                f"{where}: {name} has {x.null_count} missing values (nulls); "
                "calibkit does not drop rows silently: remove or fill them first."
            )
        return np.asarray(x.to_numpy(zero_copy_only=False))
    if module == "pandas":
        missing = np.asarray(x.isna().to_numpy())
        if missing.any():
            count, index = _where_first(missing)
            raise InputError(
                f"{where}: {name} has {count} missing {'value' if count == 1 else 'values'} "
                f"(NaN/NA), first at {_fmt_index(index)}; calibkit does not drop rows "
                "silently: remove or fill them first."
            )
        return np.asarray(x.to_numpy())
    return np.asarray(x.to_numpy())


def _first_non_numeric(arr: np.ndarray) -> str:
    flat = arr.reshape(-1)
    for i, value in enumerate(flat[:100_000]):
        try:
            float(value)
        except (TypeError, ValueError):
            return f" (first non-number at index {i}: {value!r})"
    return ""


def _where_first(mask: np.ndarray) -> tuple[int, tuple[int, ...]]:
    """Number of True entries of ``mask`` and the index of the first one."""
    count = int(np.count_nonzero(mask))
    first = np.unravel_index(int(np.argmax(mask.reshape(-1))), mask.shape)
    return count, tuple(int(i) for i in first)


def _fmt_index(index: tuple[int, ...]) -> str:
    if len(index) == 1:
        return f"index {index[0]}"
    return f"row {index[0]}, column {index[1]}"


def _values_word(count: int) -> str:
    return "1 value does not" if count == 1 else f"{count} values do not"


def float_array(x: Any, *, name: str, where: str, ndim: int | tuple[int, ...]) -> np.ndarray:
    arr = to_numpy(x, name=name, where=where)
    ndims = (ndim,) if isinstance(ndim, int) else ndim
    if arr.ndim not in ndims:
        expected = " or ".join(f"{d}-D" for d in ndims)
        hint = ""
        if 2 in ndims and arr.ndim == 1:
            hint = " A 1-D array is a binary forecast: use the (confidence, outcome) functions."
        if 1 in ndims and arr.ndim == 2:
            hint = (
                " For (N, C) class probabilities, reduce them first with "
                "ck.top_label(probs, labels) (or ck.classwise), or call ck.audit."
            )
        raise InputError(
            f"{where}: {name} must be {expected}, got an array of shape {arr.shape}.{hint}"
        )
    if arr.shape[0] == 0:
        raise InputError(f"{where}: {name} is empty; there is nothing to measure.")
    if arr.dtype.kind == "b":
        arr = arr.astype(np.float64)
    elif arr.dtype.kind in "iu":
        arr = arr.astype(np.float64)
    elif arr.dtype.kind == "f" and arr.dtype.itemsize < 4:
        arr = arr.astype(np.float32)
    elif arr.dtype.kind != "f":
        raise InputError(f"{where}: {name} must hold real numbers, got dtype {arr.dtype}.")
    return arr


def finite(arr: np.ndarray, *, name: str, where: str, hint: str = "") -> np.ndarray:
    """Reject NaN and infinity, naming the first offending entry."""
    if arr.dtype.kind != "f":
        return arr
    with np.errstate(invalid="ignore", over="ignore"):  # inf - inf is NaN: caught below
        if np.isfinite(arr.sum(dtype=np.float64)):
            return arr  # one pass; NaN and inf propagate into the sum (overflow falls through)
    bad = ~np.isfinite(arr)
    if bad.any():
        count, index = _where_first(bad)
        raise InputError(
            f"{where}: {name} must be finite; {count} {'value is' if count == 1 else 'values are'}"
            f" not, first at {_fmt_index(index)}: {arr[index]}. "
            f"{hint or 'Remove or repair those rows first.'}"
        )
    return arr


def unit_interval(arr: np.ndarray, *, name: str, where: str, hint: str = _LOGITS_HINT) -> None:
    """Require every value in [0, 1]; NaN is caught by the same comparison."""
    lo, hi = arr.min(), arr.max()
    if lo >= 0.0 and hi <= 1.0:  # False for NaN
        return
    nan = np.isnan(arr)
    if nan.any():
        count, index = _where_first(nan)
        raise InputError(
            f"{where}: {name} must not contain NaN; {count} "
            f"{'value is' if count == 1 else 'values are'} NaN, first at {_fmt_index(index)}. "
            "calibkit does not drop rows silently: remove or repair them first."
        )
    bad = (arr < 0.0) | (arr > 1.0)
    count, index = _where_first(bad)
    raise InputError(
        f"{where}: {name} must lie in [0, 1]; {_values_word(count)}, first at "
        f"{_fmt_index(index)}: {arr[index]}. {hint}"
    )


def confidence(x: Any, *, where: str, name: str = "confidence") -> np.ndarray:
    """A 1-D array of probabilities in [0, 1] (float32 kept as float32)."""
    arr = float_array(x, name=name, where=where, ndim=1)
    unit_interval(arr, name=name, where=where)
    return arr


def outcome(y: Any, *, n: int, where: str, name: str = "outcome") -> np.ndarray:
    """A 1-D array of 0/1 outcomes of length ``n`` (bool, integer or float 0.0/1.0)."""
    arr = outcome_array(y, n=n, where=where, name=name)
    outcome_values(arr, where=where, name=name)
    return arr


def outcome_array(y: Any, *, n: int, where: str, name: str = "outcome") -> np.ndarray:
    """The shape and dtype part of :func:`outcome` (values unchecked)."""
    arr = to_numpy(y, name=name, where=where)
    if arr.ndim != 1:
        raise InputError(f"{where}: {name} must be 1-D, got an array of shape {arr.shape}.")
    same_length(arr, n, name=name, where=where)
    if arr.dtype.kind not in "biuf":
        raise InputError(f"{where}: {name} must hold 0/1 or True/False, got dtype {arr.dtype}.")
    return arr


def outcome_values(arr: np.ndarray, *, where: str, name: str = "outcome") -> None:
    """The value part of :func:`outcome`: every entry 0 or 1."""
    if arr.dtype.kind == "b":
        return
    lo, hi = arr.min(), arr.max()
    if lo >= 0 and hi <= 1 and arr.dtype.kind in "iu":
        return
    bad = (arr != 0) & (arr != 1)
    if bad.any():
        count, index = _where_first(bad)
        raise InputError(
            f"{where}: {name} must be 0 or 1 (1 = the prediction was correct / the event "
            f"happened); {_values_word(count)}, first at {_fmt_index(index)}: {arr[index]}. "
            "For class labels 0..C-1 use the (probs, labels) functions."
        )


def same_length(arr: np.ndarray, n: int, *, name: str, where: str) -> None:
    if arr.shape[0] != n:
        raise InputError(
            f"{where}: {name} has {arr.shape[0]} entries but the forecasts have {n}; "
            "they must be aligned row by row."
        )


def labels(y: Any, *, n: int, n_classes: int, where: str, name: str = "labels") -> np.ndarray:
    """A 1-D integer array of class indices in 0..n_classes-1."""
    arr = to_numpy(y, name=name, where=where)
    if arr.ndim != 1:
        raise InputError(f"{where}: {name} must be 1-D, got an array of shape {arr.shape}.")
    same_length(arr, n, name=name, where=where)
    if arr.dtype.kind == "b":
        arr = arr.astype(np.int64)
    elif arr.dtype.kind == "f":
        bad = ~np.isfinite(arr) | (arr != np.round(arr))
        if bad.any():
            count, index = _where_first(bad)
            raise InputError(
                f"{where}: {name} must be whole class indices 0..{n_classes - 1}; "
                f"{_values_word(count)}, first at {_fmt_index(index)}: {arr[index]}."
            )
        _label_range(arr, n_classes=n_classes, name=name, where=where)  # before the cast:
        arr = arr.astype(np.int64)  # 1e20 would become -9223372036854775808
    elif arr.dtype.kind not in "iu":
        raise InputError(f"{where}: {name} must be integer class indices, got dtype {arr.dtype}.")
    _label_range(arr, n_classes=n_classes, name=name, where=where)
    return arr


def _label_range(arr: np.ndarray, *, n_classes: int, name: str, where: str) -> None:
    lo, hi = arr.min(), arr.max()
    if lo >= 0 and hi < n_classes:
        return
    bad = (arr < 0) | (arr >= n_classes)
    count, index = _where_first(bad)
    value = arr[index]
    shown = f"{value:g}" if arr.dtype.kind == "f" else str(value)
    if n_classes == 2:
        raise InputError(
            f"{where}: {name} must be 0 or 1 (two classes; for a binary forecast, the "
            f"label or whether the prediction was correct); {_values_word(count)}, first at "
            f"{_fmt_index(index)}: {shown}."
        )
    raise InputError(
        f"{where}: {name} must lie in 0..{n_classes - 1} (the forecasts have {n_classes} "
        f"classes); {_values_word(count)}, first at {_fmt_index(index)}: {shown}. "
        "Map labels to column positions first."
    )


def probabilities(p: Any, *, where: str, name: str = "probs") -> np.ndarray:
    """An (N, C) matrix of class probabilities: C >= 2, finite, in [0, 1], rows summing to 1
    within :data:`ROW_SUM_ATOL`."""
    arr = probability_matrix(p, where=where, name=name)
    probability_values(arr, where=where, name=name)
    return arr


def probability_matrix(p: Any, *, where: str, name: str = "probs") -> np.ndarray:
    """The shape and dtype part of :func:`probabilities` (values unchecked)."""
    arr = float_array(p, name=name, where=where, ndim=2)
    if arr.shape[1] < 2:
        raise InputError(
            f"{where}: {name} has {arr.shape[1]} column; class probabilities need at least 2. "
            "For the probability of the positive class, pass a 1-D array."
        )
    return arr


def probability_values(arr: np.ndarray, *, where: str, name: str = "probs") -> None:
    """The value part of :func:`probabilities`: in [0, 1], rows summing to 1."""
    unit_interval(arr, name=name, where=where)
    sums = arr.sum(axis=1, dtype=np.float64)
    off = np.abs(sums - 1.0) > ROW_SUM_ATOL
    if off.any():
        count, index = _where_first(off)
        raise InputError(
            f"{where}: each row of {name} must sum to 1 (within {ROW_SUM_ATOL:g}); "
            f"{count} {'row does' if count == 1 else 'rows do'} not, first row {index[0]} "
            f"sums to {sums[index]:.6g}. calibkit does not renormalise silently. {_LOGITS_HINT}"
        )


def scores(x: Any, *, where: str, name: str = "logits", ndim: int | tuple[int, ...] = (1, 2)):
    """Finite real scores (logits), 1-D (binary) or 2-D (N, C)."""
    arr = float_array(x, name=name, where=where, ndim=ndim)
    finite(arr, name=name, where=where)
    if arr.ndim == 2 and arr.shape[1] < 2:
        raise InputError(
            f"{where}: {name} has 1 column; pass a 1-D array of binary scores instead."
        )
    return arr


def counts(successes: Any, trials: Any, *, where: str) -> tuple[np.ndarray, np.ndarray]:
    """Success and trial counts (scalars or 1-D arrays of equal length), 0 <= k <= n."""
    k = float_array(
        np.atleast_1d(to_numpy_or_scalar(successes, name="successes", where=where)),
        name="successes",
        where=where,
        ndim=1,
    ).astype(np.float64)
    n = float_array(
        np.atleast_1d(to_numpy_or_scalar(trials, name="trials", where=where)),
        name="trials",
        where=where,
        ndim=1,
    ).astype(np.float64)
    if k.size != n.size and n.size != 1 and k.size != 1:
        raise InputError(
            f"{where}: successes has {k.size} entries but trials has {n.size}; "
            "they must be aligned."
        )
    k, n = np.broadcast_arrays(k, n)
    finite(k, name="successes", where=where)
    finite(n, name="trials", where=where)
    bad = (k < 0) | (k > n) | (k != np.round(k)) | (n != np.round(n))
    if bad.any():
        count, index = _where_first(bad)
        raise InputError(
            f"{where}: need whole counts with 0 <= successes <= trials; {_values_word(count)}, "
            f"first at {_fmt_index(index)}: {k[index]} of {n[index]}."
        )
    return k, n


def to_numpy_or_scalar(x: Any, *, name: str, where: str) -> np.ndarray:
    """Like :func:`to_numpy`, for an input that may also be a plain number."""
    if isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool):
        return np.asarray(x)
    return to_numpy(x, name=name, where=where)


def choice(value: Any, *, name: str, allowed: Sequence[str], where: str) -> str:
    if value not in allowed:
        options = ", ".join(repr(a) for a in allowed)
        raise InputError(f"{where}: {name} must be one of {options}, got {value!r}.")
    return str(value)


def positive_int(value: Any, *, name: str, where: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise InputError(f"{where}: {name} must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def level(value: Any, *, where: str, name: str = "level") -> float:
    if not isinstance(value, (int, float, np.floating)) or not 0.0 < float(value) < 1.0:
        raise InputError(
            f"{where}: {name} must be a probability strictly between 0 and 1 "
            f"(e.g. 0.95), got {value!r}."
        )
    return float(value)


def seed_or_rng(seed: Any, *, where: str) -> np.random.Generator:
    """An explicit random generator: an int seed, a Generator, or None (a fixed default seed 0).
    The same seed gives the same bytes."""
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None:
        return np.random.default_rng(0)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(
            f"{where}: seed must be a non-negative integer or a numpy Generator, got {seed!r}."
        )
    return np.random.default_rng(int(seed))


def edges(values: Iterable[float] | np.ndarray, *, where: str) -> np.ndarray:
    """Bin edges: strictly increasing from 0 to 1, except that the first bin may be [0, 0] and
    the last [1, 1] (a bin of exact zeros or exact ones)."""
    arr = float_array(values, name="edges", where=where, ndim=1).astype(np.float64)
    finite(arr, name="edges", where=where)
    if arr.size < 2:
        raise InputError(f"{where}: edges needs at least 2 values (one bin), got {arr.size}.")
    if arr[0] != 0.0 or arr[-1] != 1.0:
        raise InputError(
            f"{where}: edges must start at 0 and end at 1 so every confidence lands in a bin, "
            f"got {arr[0]} .. {arr[-1]}."
        )
    steps = np.diff(arr)
    if steps.size > 1:  # a zero-width bin is allowed at either end only
        steps[0] = steps[0] or 1.0
        steps[-1] = steps[-1] or 1.0
    if (steps <= 0).any():
        i = int(np.argmax(steps <= 0))
        raise InputError(
            f"{where}: edges must be strictly increasing; edge {i + 1} ({arr[i + 1]}) does not "
            f"exceed edge {i} ({arr[i]})."
        )
    return arr
