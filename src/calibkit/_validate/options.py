"""Options: choices, counts of bins, levels, seeds, edges, output paths."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .._errors import InputError
from .arrays import finite, float_array, to_numpy


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


def number_between(
    value: Any, *, name: str, where: str, low: float, high: float, hint: str = ""
) -> float:
    """A real number in [low, high] (not a bool, not NaN); ``hint`` follows the range in the
    message (what the number means, what to pass)."""
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float, np.integer, np.floating))
        or not low <= float(value) <= high
    ):
        raise InputError(
            f"{where}: {name} must be a number from {low:g} to {high:g}{hint}, got {value!r}."
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
