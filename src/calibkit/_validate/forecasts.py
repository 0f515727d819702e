"""Probability vectors, logits and scores, the check that probabilities are not passed as
logits, the clip policy, and binomial counts."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._errors import InputError
from .arrays import (
    _LOGITS_HINT,
    ROW_SUM_ATOL,
    CountedError,
    _fmt_row,
    _values_word,
    finite,
    float_array,
    fmt_index,
    unit_interval,
    where_first,
)
from .options import to_numpy_or_scalar


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
        count, index = where_first(off)
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
        count, index = where_first(bad)
        raise InputError(
            f"{where}: need whole counts with 0 <= successes <= trials; {_values_word(count)}, "
            f"first at {fmt_index(index)}: {k[index]} of {n[index]}."
        )
    return k, n
