"""Turning user input into numpy arrays: tensors, columns, masked and long-double arrays,
finite values in [0, 1], and the words that say where a bad value is (count, first index)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .._arrow import to_numpy as to_arrow_numpy
from .._errors import InputError
from .._kernels import within_unit

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
        self._locate = locate or fmt_index
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
            count, index = where_first(masked)
            raise InputError(
                f"{where}: {name} is a masked array with {count} masked "
                f"{'entry' if count == 1 else 'entries'}, first at {fmt_index(index)}; calibkit "
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
        arr = column_to_numpy(x, name=name, where=where)
    elif isinstance(x, (str, bytes)) or x is None:
        raise InputError(f"{where}: {name} must be an array of numbers, got {type(x).__name__}.")
    elif hasattr(x, "__dlpack__"):  # any other array library (the array API's interchange)
        arr = dlpack_to_numpy(x, name=name, where=where)
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
    if arr.ndim > 1 and not arr.flags.c_contiguous:
        # rows in C order (a DataFrame's values are column-major): sums over a row's classes
        # then round alike whatever the source's layout, so the same forecasts give the same
        # numbers to the last bit
        arr = np.ascontiguousarray(arr)
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


def dlpack_to_numpy(x: Any, *, name: str, where: str) -> np.ndarray:
    """An array of any library that speaks DLPack (``__dlpack__``) as a numpy array: shared
    with numpy where it lives on the host in a dtype numpy has (``np.from_dlpack``), else
    read by PyTorch (``torch.from_dlpack``: any device, bfloat16) and copied to the host."""
    try:
        return np.from_dlpack(x)
    except (BufferError, TypeError, RuntimeError, ValueError) as exc:
        try:
            import torch
        except ImportError:
            raise InputError(
                f"{where}: {name} ({type(x).__name__}) could not be read through DLPack "
                f"({exc}); copy it to a numpy array on the host first, or install torch "
                "(pip install torch), which reads DLPack arrays on any device."
            ) from None
        try:
            tensor = torch.from_dlpack(x)
        except (BufferError, TypeError, RuntimeError, ValueError) as again:
            raise InputError(
                f"{where}: {name} ({type(x).__name__}) could not be read through DLPack "
                f"({again}); copy it to a numpy array on the host first."
            ) from None
        return _tensor_to_numpy(tensor, name=name, where=where)


def column_to_numpy(x: Any, *, name: str, where: str) -> np.ndarray:
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
            count, index = where_first(missing)
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


def where_first(mask: np.ndarray) -> tuple[int, tuple[int, ...]]:
    """Number of True entries of ``mask`` and the index of the first one."""
    count = int(np.count_nonzero(mask))
    first = np.unravel_index(int(np.argmax(mask.reshape(-1))), mask.shape)
    return count, tuple(int(i) for i in first)


def fmt_index(index: tuple[int, ...], stream: bool = False) -> str:
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
            count, index = where_first(overflow)
            raise InputError(
                f"{where}: {name} holds {count} long-double "
                f"{'value' if count == 1 else 'values'} beyond the float64 range, first at "
                f"{fmt_index(index)}: {arr[index]}; calibkit computes in float64."
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
        count, index = where_first(bad)
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
    if within_unit(arr):
        return
    lo, hi = arr.min(), arr.max()
    nan = np.isnan(arr)
    if nan.any():
        count, index = where_first(nan)
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
    count, index = where_first(bad)
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
