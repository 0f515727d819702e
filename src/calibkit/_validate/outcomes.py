"""Outcomes (0/1), class labels, a named positive class, and the checks that keep labels from
being read as outcomes."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from .._arrow import to_numpy as to_arrow_numpy
from .._errors import CalibkitWarning, InputError
from .arrays import (
    _LABELS_HINT,
    CountedError,
    _is_tensor,
    _tensor_to_numpy,
    _values_word,
    dlpack_to_numpy,
    float_array,
    to_numpy,
    unit_interval,
    where_first,
)


def confidence(x: Any, *, where: str, name: str = "confidence") -> np.ndarray:
    """A 1-D array of probabilities in [0, 1] (float32 kept as float32)."""
    arr = float_array(x, name=name, where=where, ndim=1)
    unit_interval(arr, name=name, where=where)
    return arr


def outcome(
    y: Any, *, n: int, where: str, name: str = "outcome", hint: str = _LABELS_HINT
) -> np.ndarray:
    """A 1-D array of 0/1 outcomes of length ``n`` (bool, integer or float 0.0/1.0)."""
    arr = outcome_array(y, n=n, where=where, name=name)
    outcome_values(arr, where=where, name=name, hint=hint)
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


def outcome_values(
    arr: np.ndarray, *, where: str, name: str = "outcome", hint: str = _LABELS_HINT
) -> None:
    """The value part of :func:`outcome`: every entry 0 or 1."""
    if arr.dtype.kind == "b":
        return
    lo, hi = arr.min(), arr.max()
    if lo >= 0 and hi <= 1 and arr.dtype.kind in "iu":
        return
    bad = (arr != 0) & (arr != 1)
    if bad.any():
        count, index = where_first(bad)
        value = arr[index]
        raise CountedError(
            "outcome",
            name,
            count,
            index,
            lambda count, at: (
                f"{where}: {name} must be 0 or 1 (1 = the prediction was correct / the event "
                f"happened); {_values_word(count)}, first at {at}: {value}. {hint}"
            ),
        )


#: A 1-D "confidence" with at least this share of values below :data:`NEAR_ZERO` is most likely
#: P(y = 1) of a binary model: a confidence that a prediction is right is at least 1/C.
NEAR_ZERO_SHARE = 0.10
NEAR_ZERO = 0.05


def confidence_not_class_probability(
    conf: np.ndarray, *, where: str, hint: str, stacklevel: int = 2
) -> None:
    """Warn (:class:`CalibkitWarning`) when a checked 1-D confidence of correctness looks like
    P(y = 1): at least 10% of its values below 0.05. The confidence that a prediction of a
    C-class model is right is at least 1/C (0.5 for two classes), so that many near-zero values
    almost always mean the probability of class 1 was passed; calibrated, the two cannot be told
    apart by their values otherwise. ``hint`` says how to pass class probabilities instead."""
    count = int(np.count_nonzero(conf < NEAR_ZERO))
    if conf.size == 0 or count < NEAR_ZERO_SHARE * conf.size:
        return
    index = int(np.argmax(conf < NEAR_ZERO))
    warnings.warn(
        f"{where}: {count / conf.size:.0%} of the confidences ({count} of {conf.size}, first "
        f"at index {index}: {conf[index]:.3g}) are below {NEAR_ZERO:g}. A confidence that a "
        "prediction is right is at least 1/C for a C-class model, so these look like P(y = 1) "
        f"of a binary model, not confidences of correctness. {hint}",
        CalibkitWarning,
        stacklevel=stacklevel + 1,
    )


def same_length(arr: np.ndarray, n: int, *, name: str, where: str) -> None:
    if arr.shape[0] != n:
        raise InputError(
            f"{where}: {name} has {arr.shape[0]} entries but the forecasts have {n}; "
            "they must be aligned row by row."
        )


def label_values(y: Any, *, where: str, name: str = "labels") -> np.ndarray:
    """Labels as they are written, numbers or text (a class named by a word): a 1-D numpy array
    of booleans, numbers or str. Missing labels (None, NaN, NA, null) are refused with their
    count, and so is a column that mixes text and numbers."""
    module = type(y).__module__.split(".")[0]
    if isinstance(y, np.ndarray):
        arr = y
    elif isinstance(y, (str, bytes)) or y is None:
        raise InputError(f"{where}: {name} must be an array of labels, got {type(y).__name__}.")
    elif _is_tensor(y):
        arr = _tensor_to_numpy(y, name=name, where=where)
    elif module in ("pandas", "polars", "pyarrow") and hasattr(y, "to_numpy"):
        missing = (
            np.asarray(y.isna().to_numpy())
            if module == "pandas"
            else np.asarray(y.is_null().to_numpy())
            if module == "polars"
            else None
        )
        if missing is None and y.null_count:
            import pyarrow.compute as pc

            missing = to_arrow_numpy(pc.is_null(y))
        if missing is not None and missing.any():
            _missing_labels(missing, name=name, where=where)
        arr = to_arrow_numpy(y) if module == "pyarrow" else np.asarray(y.to_numpy())
    elif hasattr(y, "__dlpack__"):  # after the dataframe libraries: pyarrow speaks DLPack too
        arr = dlpack_to_numpy(y, name=name, where=where)
    else:
        arr = np.asarray(y)
    if arr.ndim != 1:
        raise InputError(f"{where}: {name} must be 1-D, got an array of shape {arr.shape}.")
    if arr.dtype == object:
        values = arr.tolist()
        _missing_labels(
            np.array([x is None or (isinstance(x, float) and x != x) for x in values], dtype=bool),
            name=name,
            where=where,
        )
        words = np.array([isinstance(x, str) for x in values], dtype=bool)
        if words.all():
            arr = np.asarray(values, dtype=str)
        elif words.any():
            i, j = int(np.argmax(words)), int(np.argmax(~words))
            raise InputError(
                f"{where}: {name} mixes text and other values (index {i}: {values[i]!r}, index "
                f"{j}: {values[j]!r}); write every label the same way."
            )
        else:
            arr = to_numpy(arr.astype(np.float64) if values else arr, name=name, where=where)
    if arr.dtype.kind == "S":
        arr = arr.astype(str)
    if arr.dtype.kind == "f":
        _missing_labels(np.isnan(arr), name=name, where=where)
    if arr.dtype.kind not in "biufU":
        raise InputError(f"{where}: {name} must hold numbers or text, got dtype {arr.dtype}.")
    return arr


def _missing_labels(missing: np.ndarray, *, name: str, where: str) -> None:
    if missing.any():
        count = int(missing.sum())
        raise InputError(
            f"{where}: {name} has {count} missing {'value' if count == 1 else 'values'} "
            f"(None/NaN/NA), first at index {int(np.argmax(missing))}; calibkit does not drop "
            "rows silently: remove or fill them first."
        )


def _listed(values: np.ndarray, limit: int = 10) -> str:
    shown = [repr(x) if isinstance(x, str) else f"{x}" for x in values[:limit].tolist()]
    more = f", ... ({values.size} values in all)" if values.size > limit else ""
    return ", ".join(shown) + more


def positive_outcome(
    y: Any, pos_label: Any, *, where: str, name: str = "labels", option: str = "pos_label="
) -> np.ndarray:
    """The 0/1 outcome ``label == pos_label`` of a 1-D forecast (P(label = pos_label), or its
    logit), from labels of two values written as text or numbers. With ``pos_label`` None the
    labels must be numbers, and come back as they are (0/1 is checked later); labels written as
    text need ``pos_label``, and the message lists their values. More than two values cannot be
    the outcome of one 1-D forecast.

    Examples
    --------
    >>> from calibkit import _validate as v
    >>> v.positive_outcome(["benign", "malignant", "benign"], "malignant", where="audit").tolist()
    [0, 1, 0]
    >>> v.positive_outcome(["benign", "malignant"], None, where="audit")
    Traceback (most recent call last):
    ...
    calibkit._errors.InputError: audit: labels holds text, two values: 'benign' and 'malignant'. A 1-D forecast is the probability of one of them (or its logit): say which is the event with pos_label= (--positive VALUE on the command line), e.g. pos_label='malignant'.
    """  # noqa: E501
    arr = label_values(y, where=where, name=name)
    text = arr.dtype.kind == "U"
    if pos_label is None and not text:
        two_valued(arr, where=where, name=name, option=option)
        return arr
    values = np.unique(arr)
    how = f"{option} (--positive VALUE on the command line)"
    if len(values) > 2:
        raise InputError(
            f"{where}: a 1-D forecast is the probability of one event, but {name} holds "
            f"{values.size} values: {_listed(values)}. Pass the (N, C) class probabilities "
            "with labels 0..C-1 instead, or audit one class c at a time with the outcome "
            "(label == c) as the labels."
        )
    if pos_label is None:
        listed = values.tolist()
        if len(listed) == 2:
            raise InputError(
                f"{where}: {name} holds text, two values: {listed[0]!r} and {listed[1]!r}. A "
                "1-D forecast is the probability of one of them (or its logit): say which is "
                f"the event with {how}, e.g. {option}{listed[1]!r}."
            )
        raise InputError(
            f"{where}: {name} holds text, one value: {listed[0]!r}. Say which value is the "
            f"event of the 1-D forecast with {how}."
        )
    positive = _matching(values, pos_label)
    if positive is None:
        raise InputError(
            f"{where}: {option}{pos_label!r} is not a value of {name}; its values are "
            f"{_listed(values)}."
        )
    return (arr == positive).astype(np.int8)


def two_valued(
    arr: np.ndarray, *, where: str, name: str = "labels", option: str = "pos_label="
) -> None:
    """Refuse numeric labels of a 1-D forecast that take two whole values other than 0 and 1
    (such as 1 and 2, or -1 and 1), saying to name the event with ``pos_label``; any other
    labels are left to :func:`labels` to check."""
    if arr.dtype.kind not in "iuf" or arr.size == 0:
        return
    lo, hi = arr.min(), arr.max()
    if (lo >= 0 and hi <= 1) or not (np.isfinite(lo) and np.isfinite(hi)):
        return
    values = np.unique(arr)
    if values.size != 2 or (values != np.round(values)).any():
        return
    a, b = (_number(x) for x in values.tolist())
    bad = (arr != 0) & (arr != 1)
    count, index = where_first(bad)
    value = _number(arr[index])
    raise CountedError(
        "classes:2",
        name,
        count,
        index,
        lambda count, at: (
            f"{where}: {name} must be 0 or 1 beside a 1-D forecast; {_values_word(count)}, "
            f"first at {at}: {value}. The labels hold two values, {a} and {b}: say which is "
            f"the event the forecast is the probability of with {option} (--positive VALUE on "
            f"the command line), e.g. {option}{b}."
        ),
    )


def _number(x: Any) -> str:
    x = float(x)
    return f"{int(x)}" if x.is_integer() and abs(x) < 1e15 else f"{x:g}"


def _matching(values: np.ndarray, wanted: Any) -> Any:
    """The element of ``values`` that ``wanted`` names: equal to it, or (for a value given as
    text, as on the command line) the number or boolean it writes."""
    for value in values.tolist():
        if value == wanted and type(value) is not bool or value is wanted:
            return value
    if not isinstance(wanted, str):
        wanted = str(wanted)
    text = wanted.strip()
    if values.dtype.kind == "b":
        words = {"true": True, "1": True, "false": False, "0": False}
        flag = words.get(text.lower())
        return flag if flag is not None and flag in values.tolist() else None
    if values.dtype.kind == "U":
        return text if text in values.tolist() else None
    try:
        number = float(text)
    except ValueError:
        return None
    hits = [value for value in values.tolist() if value == number]
    return hits[0] if hits else None


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
            count, index = where_first(bad)
            value = arr[index]
            raise CountedError(
                "whole",
                name,
                count,
                index,
                lambda count, at: (
                    f"{where}: {name} must be whole class indices 0..{n_classes - 1}; "
                    f"{_values_word(count)}, first at {at}: {value}."
                ),
            )
        if arr.min() < 0 or arr.max() >= n_classes:  # before the cast, which would wrap 1e20
            _label_range(arr, n_classes, name=name, where=where)
        arr = arr.astype(np.int64)
    elif arr.dtype.kind not in "iu":
        raise InputError(f"{where}: {name} must be integer class indices, got dtype {arr.dtype}.")
    lo, hi = arr.min(), arr.max()
    if lo < 0 or hi >= n_classes:
        _label_range(arr, n_classes, name=name, where=where)
    return arr


def _label_range(arr: np.ndarray, n_classes: int, *, name: str, where: str) -> None:
    bad = (arr < 0) | (arr >= n_classes)
    count, index = where_first(bad)
    value = arr[index]
    shown = f"{int(value)}" if float(value).is_integer() and abs(value) < 1e15 else f"{value:g}"
    if n_classes == 2:
        hint = ""
        if arr.dtype.kind in "iu" and arr.min() >= 0 and arr.max() < 10_000:
            k = int(arr.max()) + 1
            hint = (
                f" The labels hold {k} classes (0..{k - 1}) but a 1-D forecast is binary: pass "
                f"the (N, {k}) class probabilities, or, for the forecast of one class c, the "
                "outcome labels == c."
            )
        raise CountedError(
            "classes:2",
            name,
            count,
            index,
            lambda count, at: (
                f"{where}: {name} must be 0 or 1 (two classes; for a binary forecast, the "
                f"label or whether the prediction was correct); {_values_word(count)}, "
                f"first at {at}: {shown}.{hint}"
            ),
        )
    raise CountedError(
        f"classes:{n_classes}",
        name,
        count,
        index,
        lambda count, at: (
            f"{where}: {name} must lie in 0..{n_classes - 1} (the forecasts have {n_classes} "
            f"classes); {_values_word(count)}, first at {at}: {shown}. "
            "Map labels to column positions first."
        ),
    )
