"""The one place where user input is checked and turned into numpy arrays.

Every public function calls into this module before it computes anything; nothing else calls
``np.asarray`` on user data. Failures raise :class:`calibkit.InputError` with a message that says
what is wrong, where (count, first index and value) and how to fix it. Nothing is clipped,
renormalised or dropped here: data is either usable as it is or rejected.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from ._arrow import to_numpy as to_arrow_numpy
from ._errors import CalibkitWarning, InputError

#: Rows of a probability matrix must sum to 1 within this absolute tolerance. It admits float32
#: softmax output and probabilities written with a few decimals, and rejects logits and scores.
ROW_SUM_ATOL = 1e-3

_LOGITS_HINT = (
    "If these are logits or scores, turn them into probabilities first (ck.softmax, ck.sigmoid, "
    "or from_logits=True where a function offers it; --logits on the command line)."
)

_LABELS_HINT = "For class labels 0..C-1 use the (probs, labels) functions."


class CountedError(InputError):
    """An :class:`InputError` about the values of one array (``name``) that break one rule:
    their count, the first one's index, and how to say it again for another count and place.

    The stream engine uses it to total a fault over every chunk of a stream
    (:meth:`totalled`): the message then counts the whole stream and gives the first bad row's
    position in it, not in its chunk.
    """

    def __init__(
        self,
        rule: str,
        name: str,
        count: int,
        index: tuple[int, ...],
        message: Callable[[int, str], str],
        locate: Callable[[tuple[int, ...], bool], str] | None = None,
    ) -> None:
        self.rule, self.name, self.count, self.index = rule, name, count, index
        self._message = message
        self._locate = locate or _fmt_index
        super().__init__(message(count, self._locate(index, False)))

    def totalled(self, count: int, first_row: int) -> InputError:
        """The same error for ``count`` bad values over a stream whose first bad value is in
        row ``first_row`` of the stream."""
        index = (first_row, *self.index[1:])
        return InputError(self._message(count, self._locate(index, True)))

    def at(self, place: str) -> InputError:
        """The same error with its first bad value placed in other words (``place``, such as
        "column 'proba_1', row 17"), for a caller that knows the columns the array came from."""
        return InputError(self._message(self.count, place))

    def __reduce__(self) -> tuple[Any, ...]:  # pickles as the plain InputError it reads as
        return InputError, (str(self),)


def to_numpy(x: Any, *, name: str, where: str) -> np.ndarray:
    """Convert arrays, lists, pandas/polars columns and pyarrow arrays to numpy, without copying
    where the source allows it."""
    if isinstance(x, np.ma.MaskedArray):
        masked = np.ma.getmaskarray(x)
        if masked.any():
            count, index = _where_first(masked)
            raise InputError(
                f"{where}: {name} is a masked array with {count} masked "
                f"{'entry' if count == 1 else 'entries'}, first at {_fmt_index(index)}; calibkit "
                "does not guess what a mask means: drop those rows from every argument alike "
                "(keep = ~np.ma.getmaskarray(x); x[keep].data, y[keep]) or fill them "
                "(x.filled(value)) first."
            )
        arr = np.ma.getdata(x)
    elif isinstance(x, np.ndarray):
        arr = x
    elif _is_tensor(x):
        arr = _tensor_to_numpy(x, name=name, where=where)
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


_TENSOR_MODULES = ("torch", "jax", "jaxlib", "cupy")


def _is_tensor(x: Any) -> bool:
    """A PyTorch, JAX or CuPy array (recognised by module, so none of them is imported)."""
    return type(x).__module__.split(".")[0] in _TENSOR_MODULES


def _tensor_to_numpy(x: Any, *, name: str, where: str) -> np.ndarray:
    """A tensor on any device, with or without autograd, as a host numpy array: detached,
    copied to the host when it lives on an accelerator, bfloat16 widened to float32 (which
    holds every bfloat16 exactly; numpy has no bfloat16). Computation then runs in float64
    accumulators as for any other input."""
    module = type(x).__module__.split(".")[0]
    try:
        if module == "torch":
            t = x.detach()
            if t.device.type != "cpu":
                t = t.cpu()
            if str(t.dtype) == "torch.bfloat16":
                t = t.float()
            return np.asarray(t.numpy())
        if module == "cupy":
            return np.asarray(x.get())
        arr = np.asarray(x)  # JAX: copies from the device
        if arr.dtype.name == "bfloat16":
            arr = arr.astype(np.float32)
        return arr
    except (TypeError, RuntimeError, ValueError) as exc:
        raise InputError(
            f"{where}: {name} ({type(x).__name__} from {module}) could not be read as an array "
            f"({exc}); pass a numpy array."
        ) from None


def _column_to_numpy(x: Any, *, name: str, where: str) -> np.ndarray:
    module = type(x).__module__.split(".")[0]
    if module == "pyarrow":
        if x.null_count:
            raise InputError(
                f"{where}: {name} has {x.null_count} missing values (nulls); "
                "calibkit does not drop rows silently: remove or fill them first."
            )
        return to_arrow_numpy(x)
    if module == "pandas":
        missing = np.asarray(x.isna().to_numpy())
        if missing.any():
            count, index = _where_first(missing)
            raise CountedError(
                "missing",
                name,
                count,
                index,
                lambda count, at: (
                    f"{where}: {name} has {count} missing {'value' if count == 1 else 'values'} "
                    f"(NaN/NA), first at {at}; calibkit does not drop rows silently: remove or "
                    "fill them first."
                ),
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


def _fmt_index(index: tuple[int, ...], stream: bool = False) -> str:
    """Where a value is: "index 7" or "row 7, column 2" in an array; "row 7 of the stream" (and
    the column) when ``stream`` says the row is counted from the start of a stream."""
    if stream:
        row = f"row {index[0]} of the stream"
        return row if len(index) == 1 else f"{row}, column {index[1]}"
    if len(index) == 1:
        return f"index {index[0]}"
    return f"row {index[0]}, column {index[1]}"


def _fmt_row(index: tuple[int, ...], stream: bool = False) -> str:
    return f"row {index[0]}" + (" of the stream" if stream else "")


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
    elif arr.dtype.kind == "f" and arr.dtype.itemsize > 8:  # long double: float64 accumulates
        with np.errstate(over="ignore"):
            wide = arr.astype(np.float64)
        overflow = np.isinf(wide) & np.isfinite(arr)
        if overflow.any():
            count, index = _where_first(overflow)
            raise InputError(
                f"{where}: {name} holds {count} long-double "
                f"{'value' if count == 1 else 'values'} beyond the float64 range, first at "
                f"{_fmt_index(index)}: {arr[index]}; calibkit computes in float64."
            )
        arr = wide
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
        value = arr[index]
        raise CountedError(
            "finite",
            name,
            count,
            index,
            lambda count, at: (
                f"{where}: {name} must be finite; {count} "
                f"{'value is' if count == 1 else 'values are'} not, first at {at}: {value}. "
                f"{hint or 'Remove or repair those rows first.'}"
            ),
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
        raise CountedError(
            "nan",
            name,
            count,
            index,
            lambda count, at: (
                f"{where}: {name} must not contain NaN; {count} "
                f"{'value is' if count == 1 else 'values are'} NaN, first at {at}. "
                "calibkit does not drop rows silently: remove or repair them first."
            ),
        )
    bad = (arr < 0.0) | (arr > 1.0)
    count, index = _where_first(bad)
    if lo >= 0.0 and 10.0 < hi <= 100.0 and hint == _LOGITS_HINT:  # 0-100, not small scores
        hint = (
            f"These look like percentages (from {lo:g} to {hi:g}): divide them by 100. If they "
            "are logits or scores instead, turn them into probabilities first (ck.softmax, "
            "ck.sigmoid, or from_logits=True; --logits on the command line)."
        )
    value = arr[index]
    raise CountedError(
        "unit",
        name,
        count,
        index,
        lambda count, at: (
            f"{where}: {name} must lie in [0, 1]; {_values_word(count)}, first at {at}: "
            f"{value}. {hint}"
        ),
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
        count, index = _where_first(bad)
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
    count, index = _where_first(bad)
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
            count, index = _where_first(bad)
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
    count, index = _where_first(bad)
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
        total = sums[index]
        raise CountedError(
            "rowsum",
            name,
            count,
            index,
            lambda count, at: (
                f"{where}: each row of {name} must sum to 1 (within {ROW_SUM_ATOL:g}); "
                f"{count} {'row does' if count == 1 else 'rows do'} not, first {at} sums to "
                f"{total:.6g}. calibkit does not renormalise silently. {_LOGITS_HINT}"
            ),
            _fmt_row,
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


#: How to say "these are probabilities" to a function that reads logits, and how to insist.
AS_PROBABILITIES = (
    "Pass them as probabilities (from_logits=False; --probs on the command line), or pass "
    "their logs as logits ({logs})."
)
INSIST_LOGITS = (
    "If they really are logits (or scores on a scale that happens to lie in [0, 1]), pass "
    "check_logits=False (--no-check-logits on the command line)."
)


def logits_not_probabilities(
    arr: np.ndarray, *, where: str, name: str = "logits", check: Any = True, fix: str = ""
) -> None:
    """Refuse "logits" that look like probabilities: (N, C) scores whose every entry lies in
    [0, 1] and whose every row sums to 1 (within :data:`ROW_SUM_ATOL`), or 1-D scores all in
    [0, 1] (not all equal). Real logits of a softmax model almost never look like that, nor
    do a binary model's scores (half of them are usually negative); probabilities read as
    logits give a wrong map without a word. ``check=False`` is the caller's way to insist.
    ``arr`` has passed :func:`scores`; ``fix`` replaces the default advice (pass them as
    probabilities, or their logs as logits).

    Examples
    --------
    >>> from calibkit import _validate as v
    >>> v.logits_not_probabilities(np.array([[0.9, 0.1], [0.3, 0.7]]), where="fit")
    Traceback (most recent call last):
    ...
    calibkit._errors.InputError: fit: every row of the logits lies in [0, 1] and sums to 1: these look like probabilities. Pass them as probabilities (from_logits=False; --probs on the command line), or pass their logs as logits (np.log(p)). If they really are logits (or scores on a scale that happens to lie in [0, 1]), pass check_logits=False (--no-check-logits on the command line).
    >>> v.logits_not_probabilities(np.array([0.2, 0.9]), where="fit", check=False)
    """  # noqa: E501
    if not isinstance(check, (bool, np.bool_)):
        raise InputError(f"{where}: check_logits must be True or False, got {check!r}.")
    if not check:
        return
    lo, hi = arr.min(), arr.max()
    if lo < 0.0 or hi > 1.0:
        return
    of = "the logits" if name == "logits" else f"{name} (read as logits)"
    if arr.ndim == 2:
        sums = arr.sum(axis=1, dtype=np.float64)
        if np.any(np.abs(sums - 1.0) > ROW_SUM_ATOL):
            return
        seen = f"every row of {of} lies in [0, 1] and sums to 1"
        logs = "np.log(p)"
    else:
        if lo == hi:  # constant scores carry no information; the fit says so itself
            return
        seen = (
            f"every value of {of} lies in [0, 1] (from {float(lo):g} to {float(hi):g}; a "
            "binary model's logits are negative for every row it predicts as class 0)"
        )
        logs = "the log-odds np.log(p / (1 - p))"
    advice = fix or AS_PROBABILITIES.format(logs=logs)
    raise InputError(f"{where}: {seen}: these look like probabilities. {advice} {INSIST_LOGITS}")


def clip_setting(value: Any, *, where: str) -> float | None:
    """The ``clip=`` setting of a map that takes logs of probabilities: None (probabilities of
    exactly 0 or 1 are refused) or a number eps with 0 < eps < 0.5 (probabilities are moved
    into [eps, 1 - eps] first, with a warning)."""
    if value is None:
        return None
    ok = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if not ok or not 0.0 < float(value) < 0.5:
        raise InputError(
            f"{where}: clip must be None (refuse probabilities of exactly 0 or 1) or a number "
            f"strictly between 0 and 0.5 such as 1e-7, got {value!r}."
        )
    return float(value)


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


#: The most bins any binned measure accepts: beyond it almost every bin is empty and the
#: per-bin arrays alone take gigabytes.
MAX_BINS = 1_000_000


def n_bins(value: Any, *, where: str, name: str = "n_bins") -> int:
    """A bin count: an integer in 1..:data:`MAX_BINS`."""
    count = positive_int(value, name=name, where=where)
    if count > MAX_BINS:
        raise InputError(
            f"{where}: {name} is {count:,}; calibkit accepts at most {MAX_BINS:,} bins (a "
            "reliability table with more bins than forecasts is mostly empty). 10 to 20 bins "
            "are usual; use strategy='quantile' for equal-count bins."
        )
    return count


def output_path(path: Any, *, where: str, call: str) -> str | os.PathLike[str]:
    """The file a ``write_x(path, obj)`` function writes to: a ``str`` or ``os.PathLike``. The
    object given first instead (the order of other libraries) is refused, naming ``call``.

    Examples
    --------
    >>> from calibkit import _validate as v
    >>> v.output_path(["not", "a", "path"], where="save_x", call="save_x(path, x)")
    Traceback (most recent call last):
    ...
    calibkit._errors.InputError: save_x: path must be a file path (str or os.PathLike), got list; the path comes first: save_x(path, x).
    """  # noqa: E501
    if isinstance(path, (str, os.PathLike)):
        return path
    raise InputError(
        f"{where}: path must be a file path (str or os.PathLike), got {type(path).__name__}; "
        f"the path comes first: {call}."
    )


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
    if arr.size > MAX_BINS + 1:
        raise InputError(
            f"{where}: edges has {arr.size:,} values; calibkit accepts at most {MAX_BINS:,} bins."
        )
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
