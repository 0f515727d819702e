"""What the maps do with their input once it is valid: the one ``clip=`` policy for the maps that
take logs of probabilities, and the warning about logits too extreme for a scale to fit.

**Probabilities of exactly 0 or 1** (normal for random forests and naive Bayes) have an infinite
log or log-odds. Every map that takes one (temperature scaling, Platt scaling and vector or
matrix scaling with ``from_logits=False``; beta calibration always) reads them the same way:

* ``clip=None`` (the default): they are refused with an :class:`~calibkit.InputError` naming
  the count, the first row and the value as given, and saying to pass ``clip``;
* ``clip=eps``: every probability is moved into [eps, 1 - eps] before the log is taken, in fit
  and in predict alike, with a :class:`~calibkit.CalibkitWarning` counting the rows moved.

Isotonic regression and histogram binning use probabilities as they are (0 and 1 included) and
take no ``clip``.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np

from .. import _validate as v
from .._errors import CalibkitWarning, InputError

__all__ = ["away_from_0_and_1", "no_clip_for_logits", "warn_extreme_logits"]


def away_from_0_and_1(
    p: np.ndarray,
    *,
    clip: float | None,
    where: str,
    name: str,
    takes: str,
    ends: tuple[float, ...] = (0.0, 1.0),
    infinite: np.ndarray | None = None,
    when: str = "",
    instead: str = "the model's logits with from_logits=True",
    columns: np.ndarray | None = None,
) -> np.ndarray:
    """``p`` (checked probabilities) ready for ``takes`` (e.g. "the log-odds"): unchanged when
    no entry equals one of ``ends`` (the values whose log is infinite); otherwise refused
    (``clip=None``) or moved into [clip, 1 - clip] (float64) with a warning counting the rows.

    ``infinite`` marks the entries whose log is infinite when that is not simply "equal to one
    of ``ends``" (the top-label log-odds log(conf / others) of a row whose other classes are all
    exactly 0); with ``clip`` they count as moved, and ``when`` says when the log is infinite.
    ``instead`` is what to pass if the model has logits. ``columns`` locates the entries of a 1-D
    ``p`` taken from a matrix (the top-label confidence: row i, column columns[i]), so that
    messages name the user's own cell.

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.recalibrate._inputs import away_from_0_and_1
    >>> p = np.array([0.3, 1.0, 0.6])
    >>> away_from_0_and_1(p, clip=None, where="fit", name="probs", takes="the log-odds")
    Traceback (most recent call last):
    ...
    calibkit._errors.InputError: fit: the log-odds is infinite for a probability of exactly 0 or 1; 1 value of probs is, at index 1: 1.0. Pass clip=1e-7 (or another small eps; calibkit fit --clip 1e-7) to move every probability into [eps, 1 - eps] first (a warning counts the rows moved), or pass the model's logits with from_logits=True if it has them.
    """  # noqa: E501
    if infinite is None:
        exact = np.zeros(p.shape, dtype=bool)
        for end in ends:
            exact |= p == end
    else:
        exact = infinite
    if clip is None:
        if exact.any():
            count, index = v.where_first(exact)
            when = when or "for a probability of exactly " + " or ".join(f"{e:g}" for e in ends)
            values = "value of" if count == 1 else "values of"
            verb = "is, at" if count == 1 else "are, first at"
            raise InputError(
                f"{where}: {takes} is infinite {when}; "
                f"{count} {values} {name} {verb} {_at(index, columns)}: {p[index]}. Pass "
                "clip=1e-7 (or another small eps; calibkit fit --clip 1e-7) to move every "
                "probability into [eps, 1 - eps] first (a warning counts the rows moved), or "
                f"pass {instead} if it has them."
            )
        return p
    moved = exact | (p < clip) | (p > 1.0 - clip)
    if not moved.any():
        return p
    rows = moved if moved.ndim == 1 else moved.any(axis=1)
    count, index = v.where_first(moved)
    n_rows = int(np.count_nonzero(rows))
    warnings.warn(
        f"{where}: clip={clip:g} moved {n_rows} {'row' if n_rows == 1 else 'rows'} of "
        f"{rows.size} ({count} {name} "
        f"{'value' if count == 1 else 'values'}, first at {_at(index, columns)}: {p[index]}) "
        f"into [{clip:g}, 1 - {clip:g}] before taking {takes}.",
        CalibkitWarning,
        stacklevel=_user_stacklevel(),
    )
    return np.clip(p.astype(np.float64), clip, 1.0 - clip)


def _at(index: tuple[int, ...], columns: np.ndarray | None) -> str:
    if columns is not None:
        return f"row {index[0]}, column {int(columns[index[0]])}"
    return v.fmt_index(index)


def no_clip_for_logits(clip: object, *, where: str) -> None:
    """Refuse a ``clip`` given to a map that reads logits: there is nothing to clip."""
    if clip is not None:
        raise InputError(
            f"{where}: clip={clip!r} moves probabilities away from 0 and 1 before their logs are "
            "taken, but this map reads logits (from_logits=True), which need none. Leave "
            "clip=None, or pass probabilities with from_logits=False."
        )


#: A row whose logits are further apart than this (largest minus smallest) has a softmax that
#: is exactly one-hot in float64 (exp(-1000) underflows to 0): no softmax model needs it.
EXTREME_SPREAD = 1e3
#: The share of rows beyond :data:`EXTREME_SPREAD` that makes the input extreme ...
EXTREME_SHARE = 0.10
#: ... when the spreads of the rows also differ by orders of magnitude (90th / 10th percentile),
#: so that no single scale suits them (logits that are all large by a common factor are fine:
#: the temperature absorbs it).
EXTREME_RATIO = 1e3
#: Or: the 1% of rows with the largest NLL at T = 1 carry more than this share of the total.
DOMINANT_SHARE = 0.90
#: Both signs are read on at most about this many rows, or this many logits, whichever is
#: fewer (every k-th row of a larger array), and on at least MIN_SAMPLE_ROWS rows: a share or
#: a percentile needs no more, and the check stays a small part of the fit (reading every row
#: of (50000, 1000) logits took as long as the fit's five passes).
SAMPLE_ROWS = 1 << 18
SAMPLE_LOGITS = 1 << 22
MIN_SAMPLE_ROWS = 1 << 12


def sample_step(n_rows: int, n_logits: int) -> int:
    """k: the signs of :func:`warn_extreme_logits` are read on every k-th row.

    >>> sample_step(50_000, 50_000 * 1000), sample_step(10**6, 10**7), sample_step(1000, 10**7)
    (12, 3, 1)
    """
    step = max(n_rows // SAMPLE_ROWS, -(-n_logits // SAMPLE_LOGITS))
    return max(1, min(step, n_rows // MIN_SAMPLE_ROWS))


def warn_extreme_logits(z: np.ndarray, y: np.ndarray, *, where: str) -> bool:
    """Warn (:class:`~calibkit.CalibkitWarning`) when logits are too extreme for a map that
    scales them (temperature, vector or matrix scaling) to be fitted sensibly; returns whether
    it warned.

    Two signs, either enough: (1) at least 10% of the rows have logits more than 1e3 apart
    (largest minus smallest; |s| for binary scores) *and* the rows' spreads differ by more than
    three orders of magnitude (90th over 10th percentile), as log-probabilities of Gaussian
    naive Bayes do; (2) the 1% of rows with the largest log-loss at T = 1 carry more than 90%
    of the total, so a handful of rows decide the fit. Logits that are all large by a common
    factor (3e8 times a softmax model's) show neither: their temperature absorbs the factor.
    Beyond :data:`SAMPLE_ROWS` rows or :data:`SAMPLE_LOGITS` logits both are read on one row
    in k (every k-th row, :func:`sample_step`).
    """
    step = sample_step(z.shape[0], z.size)
    spread, loss = _spread_and_loss(z[::step], y[::step])
    return warn_extreme_rows(spread, loss, step=step, where=where)


def warn_extreme_rows(spread: np.ndarray, loss: np.ndarray, *, step: int, where: str) -> bool:
    """:func:`warn_extreme_logits` of the rows' spreads and log-losses at T = 1 (read on one
    row in ``step``)."""
    sampled = f" (read on one row in {step})" if step > 1 else ""
    reasons = []
    wide = spread > EXTREME_SPREAD
    positive = spread[spread > 0]
    if np.mean(wide) >= EXTREME_SHARE and positive.size:
        q10, q90 = np.percentile(positive, [10, 90])
        if q90 > EXTREME_RATIO * q10:
            reasons.append(
                f"in {np.mean(wide):.0%} of the rows the logits are more than "
                f"{EXTREME_SPREAD:g} apart (largest minus smallest), and the rows' spreads range "
                f"over {np.log10(q90 / q10):.0f} orders of magnitude (10th percentile "
                f"{q10:.3g}, 90th {q90:.3g}); a softmax model's logits are rarely more than a "
                "few dozen apart"
            )
    total = float(loss.sum())
    k = max(1, loss.size // 100)
    worst = np.partition(loss, loss.size - k)[-k:]
    if total > 0 and loss.size >= 100 and worst.sum() > DOMINANT_SHARE * total:
        reasons.append(
            f"the {k} {'row' if k == 1 else 'rows'} with the largest log-loss at T = 1 (1% of "
            f"{loss.size}) carry {worst.sum() / total:.0%} of it, so a handful of rows decide "
            "the fit"
        )
    if not reasons:
        return False
    warnings.warn(
        f"{where}: these logits are extreme{sampled}: {'; and '.join(reasons)}. They are not "
        "the logits "
        "of a softmax model (log-probabilities of naive Bayes look like this), and a map that "
        "scales them is fitted to the extreme rows: it can make most rows' probabilities worse "
        "(judge it on held-out rows, e.g. with compare_calibration). Try bounding them first "
        "(np.maximum(z, np.log(1e-7)) for log-probabilities, or np.clip), or a map that does "
        "not use their scale, such as IsotonicCalibration(multiclass='top-label') on the "
        "probabilities.",
        CalibkitWarning,
        stacklevel=_user_stacklevel(),
    )
    return True


def _user_stacklevel() -> int:
    """The ``stacklevel`` that makes a warning raised by the caller point at the first frame
    outside calibkit (the user's call, however deep inside calibkit the warning comes from)."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None and str(frame.f_globals.get("__name__", "")).startswith("calibkit"):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


_CHUNK_ELEMENTS = 1 << 20


def _spread_and_loss(z: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's spread (largest minus smallest logit; |s| for binary scores) and log-loss at
    T = 1, in float64 chunks (float32 logits are never copied whole)."""
    n = z.shape[0]
    spread, loss = np.empty(n), np.empty(n)
    rows = _CHUNK_ELEMENTS if z.ndim == 1 else max(1, _CHUNK_ELEMENTS // z.shape[1])
    for start in range(0, n, rows):
        block = z[start : start + rows].astype(np.float64)
        yb = y[start : start + rows]
        part = slice(start, start + block.shape[0])
        if block.ndim == 1:
            spread[part] = np.abs(block)
            loss[part] = np.logaddexp(0.0, np.where(yb == 1, -block, block))
            continue
        top = block.max(axis=1)
        spread[part] = top - block.min(axis=1)
        block -= top[:, None]
        true = block[np.arange(yb.size), yb]
        loss[part] = np.log(np.exp(block).sum(axis=1)) - true
    return spread, loss
