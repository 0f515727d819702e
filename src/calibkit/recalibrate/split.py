"""Deterministic stratified splits and cross-fitting: a calibrator is judged only on rows it never
saw.

:func:`stratified_split` divides rows into a calibration part (fit the map) and an evaluation
part (judge it), each class in the same proportion.
:func:`stratified_folds` and :func:`cross_fit` serve small data: every row is calibrated by a map
fitted on the other folds, so every row can be judged and none is judged by a map that saw it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, overload

import numpy as np

from .. import _validate as v
from .._errors import InputError

__all__ = ["cross_fit", "stratified_folds", "stratified_split"]


@overload
def stratified_split(
    labels: Any,
    *,
    calibration_fraction: float = ...,
    seed: int | np.random.Generator = ...,
    sample_weight: None = ...,
) -> tuple[np.ndarray, np.ndarray]: ...


@overload
def stratified_split(
    labels: Any,
    *,
    calibration_fraction: float = ...,
    seed: int | np.random.Generator = ...,
    sample_weight: Any,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...


def stratified_split(
    labels: Any,
    *,
    calibration_fraction: float = 0.5,
    seed: int | np.random.Generator = 0,
    sample_weight: Any = None,
) -> tuple[np.ndarray, ...]:
    """Split rows into a calibration part and an evaluation part, class by class.

    Every class is shuffled (seeded) and cut at the same fraction, so both parts keep the class
    ratio: class k gives floor or ceil of ``calibration_fraction * n_k`` rows to the calibration
    part (the rounding is spread over the classes so the total is ``round(fraction * N)``), and
    at least one row to each part. Every class therefore needs at least 2 rows.

    Parameters
    ----------
    labels : array of shape (N,)
        Class indices 0..C-1 (0/1 for binary).
    calibration_fraction : float
        Share of each class that goes to the calibration part, strictly between 0 and 1.
    seed : int or numpy Generator
        The same seed gives the same indices.
    sample_weight : array of shape (N,), optional
        Finite, non-negative weights (:func:`calibkit._validate.sample_weight`). They do not
        move the split (rows are assigned by label as without them); each side takes its rows'
        weights, and each side must weigh more than 0.

    Returns
    -------
    (cal_idx, eval_idx) : two sorted int64 arrays
        Disjoint row indices that together cover ``range(N)``. With ``sample_weight``, four
        arrays: ``(cal_idx, eval_idx, cal_weight, eval_weight)``, the weights of each side's
        rows in the same order.

    Examples
    --------
    A labelled set of 18 positives and 108 negatives, split into two halves of 63 with
    the same 1 : 6 ratio.

    >>> import numpy as np
    >>> from calibkit.recalibrate.split import stratified_split
    >>> y = np.array([1] * 18 + [0] * 108)
    >>> cal, ev = stratified_split(y, seed=0)
    >>> len(cal), len(ev), int(y[cal].sum()), int(y[ev].sum())
    (63, 63, 9, 9)

    With weights, the same rows and each side's weights:

    >>> cal, ev, w_cal, w_ev = stratified_split(y, seed=0, sample_weight=np.full(126, 2.0))
    >>> len(cal), float(w_cal.sum()), float(w_ev.sum())
    (63, 126.0, 126.0)
    """
    where = "stratified_split"
    fraction = _fraction(calibration_fraction, where=where)
    y = class_labels(labels, where=where)
    w = v.sample_weight(sample_weight, n=y.size, where=where)
    rng = v.seed_or_rng(seed, where=where)
    classes, inverse, counts = _classes(y, where=where, what="both parts contain it")
    grouped = _grouped_order(inverse, rng)

    exact = fraction * counts
    n_cal = np.floor(exact).astype(np.int64)
    extra = math.floor(fraction * y.size + 0.5) - int(n_cal.sum())
    if extra > 0:  # largest remainders first; equal remainders in a seeded random order
        tiebreak = rng.permutation(classes.size)
        order = np.lexsort((tiebreak, -(exact - n_cal)))
        n_cal[order[:extra]] += 1
    n_cal = np.clip(n_cal, 1, counts - 1)

    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    cls = inverse[grouped]
    rank = np.arange(y.size) - starts[cls]
    to_cal = rank < n_cal[cls]
    cal, held = np.sort(grouped[to_cal]), np.sort(grouped[~to_cal])
    if w is None:
        return cal, held
    return cal, held, *_side_weights(w, cal, held, where=where)


def _side_weights(
    w: np.ndarray, cal: np.ndarray, held: np.ndarray, *, where: str
) -> tuple[np.ndarray, np.ndarray]:
    """The weights of each side of a split; a side whose rows all weigh 0 is refused."""
    w_cal, w_held = w[cal], w[held]
    for side, rows, weights in (("calibration", cal, w_cal), ("evaluation", held, w_held)):
        if not (weights > 0).any():
            raise InputError(
                f"{where}: every one of the {rows.size} rows of the {side} part weighs 0 "
                f"(sample_weight; first row {int(rows[0])}), so it has nothing to "
                f"{'fit' if side == 'calibration' else 'judge'}. Give those rows positive "
                "weights, change the seed or calibration fraction, or pass a separate "
                "evaluation set."
            )
    return w_cal, w_held


def stratified_folds(
    labels: Any, *, folds: int = 5, seed: int | np.random.Generator = 0
) -> np.ndarray:
    """Assign each row to one of ``folds`` folds, class by class (seeded, deterministic).

    Within each class the rows are shuffled and dealt round-robin, continuing from one class to
    the next, so every class is spread evenly (per-fold counts differ by at most 1) and the folds
    differ in size by at most 1. Every class needs at least 2 rows, so that the other folds always
    contain it.

    Returns
    -------
    numpy.ndarray of shape (N,)
        The fold of each row, 0..folds-1.

    Examples
    --------
    >>> from calibkit.recalibrate.split import stratified_folds
    >>> fold = stratified_folds([0, 0, 0, 0, 1, 1, 1, 1], folds=2, seed=0)
    >>> sorted(fold[:4].tolist()), sorted(fold[4:].tolist())
    ([0, 0, 1, 1], [0, 0, 1, 1])
    """
    where = "stratified_folds"
    folds = v.positive_int(folds, name="folds", where=where, minimum=2)
    y = class_labels(labels, where=where)
    if folds > y.size:
        raise InputError(
            f"{where}: folds = {folds} but there are only {y.size} rows; use at most {y.size} "
            "folds (or a calibration split)."
        )
    rng = v.seed_or_rng(seed, where=where)
    _, inverse, _ = _classes(y, where=where, what="the other folds always contain it")
    grouped = _grouped_order(inverse, rng)
    fold = np.empty(y.size, dtype=np.int64)
    fold[grouped] = np.arange(y.size) % folds
    return fold


def cross_fit(
    make: Any,
    scores: Any,
    labels: Any,
    *,
    folds: int = 5,
    seed: int | np.random.Generator = 0,
    sample_weight: Any = None,
) -> np.ndarray:
    """Out-of-fold calibrated probabilities: each row calibrated by a map fitted on the other
    folds.

    For small data, where a single split leaves too few rows on either side: with ``folds=k``
    every row is judged, by one of k maps none of which saw it. The k maps differ, so rows of
    different folds are calibrated by different maps (an order-preserving map keeps the order
    within a fold, not across folds).

    Parameters
    ----------
    make : calibrator, or a callable returning a new unfitted calibrator
        A calibrator instance is copied with its settings (``type(c)(**c.get_params())``) for
        each fold and never fitted itself; a class such as ``ck.TemperatureScaling`` works too.
    scores : array of shape (N,) or (N, C)
        What the calibrator takes (logits, binary scores, probabilities).
    labels : array of shape (N,)
        Class indices 0..C-1 (0/1 for binary); the folds are stratified by them.
    folds : int
        Number of folds, at least 2.
    seed : int or numpy Generator
        Seed of the fold assignment (:func:`stratified_folds`).
    sample_weight : array of shape (N,), optional
        Finite, non-negative weights: each fold's map is fitted with the weights of the other
        folds' rows (``fit(..., sample_weight=)``). The folds are assigned by label, as
        without weights.

    Returns
    -------
    numpy.ndarray
        ``predict_proba`` output for every row, (N,) or (N, C) as the calibrator gives it.

    Examples
    --------
    >>> import numpy as np, calibkit as ck
    >>> from calibkit.recalibrate.split import cross_fit
    >>> rng = np.random.default_rng(0)
    >>> s = rng.normal(0, 3, 200); y = (rng.random(200) < ck.sigmoid(s / 3)).astype(int)
    >>> p = cross_fit(ck.TemperatureScaling, s, y, folds=4)
    >>> p.shape, bool(ck.nll(p, y) < ck.nll(s, y, from_logits=True))
    ((200,), True)
    """
    return _cross_fit(
        make, scores, labels, folds=folds, seed=seed, where="cross_fit", sample_weight=sample_weight
    )[0]


# ----------------------------------------------------------------------------- helpers


def class_labels(labels: Any, *, where: str, n: int | None = None) -> np.ndarray:
    """Validated class indices (non-negative whole numbers), 1-D, of length ``n`` if given."""
    arr = v.to_numpy(labels, name="labels", where=where)
    if arr.ndim == 1 and arr.size == 0:
        raise InputError(f"{where}: labels is empty; there is nothing to split.")
    n_classes = 2
    if arr.ndim == 1 and arr.dtype.kind in "iuf":
        top = arr.max()
        if np.isfinite(top) and top >= 1:
            n_classes = int(top) + 1
    length = n if n is not None else (arr.shape[0] if arr.ndim else 0)
    return v.labels(arr, n=length, n_classes=n_classes, where=where)


def fit_weighted(calibrator: Any, x: np.ndarray, y: np.ndarray, w: np.ndarray | None) -> Any:
    """``calibrator.fit(x, y)``, with ``sample_weight=w`` when there are weights (a calibrator
    of the user's own that takes none still fits unweighted rows)."""
    if w is None:
        return calibrator.fit(x, y)
    return calibrator.fit(x, y, sample_weight=w)


def _fraction(value: Any, *, where: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float, np.integer, np.floating))
        or not 0.0 < float(value) < 1.0
    ):
        raise InputError(
            f"{where}: calibration_fraction must be a number strictly between 0 and 1 (the share "
            f"of each class used to fit the map; 0.5 halves the data), got {value!r}."
        )
    return float(value)


def _classes(y: np.ndarray, *, where: str, what: str) -> tuple[np.ndarray, ...]:
    classes, inverse, counts = np.unique(y, return_inverse=True, return_counts=True)
    rare = counts < 2
    if rare.any():
        listed = ", ".join(str(int(c)) for c in classes[rare][:10])
        more = f" (and {int(rare.sum()) - 10} more)" if rare.sum() > 10 else ""
        many = bool(rare.sum() > 1)
        raise InputError(
            f"{where}: every class needs at least 2 rows so that {what}; "
            f"{'classes' if many else 'class'} {listed}{more} {'have' if many else 'has'} only "
            "1. Remove or merge those rows, or fit on all rows and judge on a separate "
            "labelled set."
        )
    return classes, inverse.reshape(-1), counts


def _grouped_order(inverse: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Row indices grouped by class (classes in sorted order), shuffled within each class."""
    perm = rng.permutation(inverse.size)
    return perm[np.argsort(inverse[perm], kind="stable")]


def _factory(make: Any, *, where: str) -> Callable[[], Any]:
    if hasattr(make, "fit") and hasattr(make, "predict_proba") and not isinstance(make, type):
        if not hasattr(make, "get_params"):
            raise InputError(
                f"{where}: cannot copy {type(make).__name__} (it has no get_params); pass a "
                "callable that returns a new unfitted calibrator."
            )
        klass, params = type(make), make.get_params()
        return lambda: klass(**params)
    if callable(make):
        return make  # type: ignore[no-any-return]
    raise InputError(
        f"{where}: make must be a calibrator or a callable returning one (such as "
        f"ck.TemperatureScaling), got {type(make).__name__}."
    )


def _cross_fit(
    make: Any,
    scores: Any,
    labels: Any,
    *,
    folds: int,
    seed: int | np.random.Generator,
    where: str,
    sample_weight: Any = None,
) -> tuple[np.ndarray, list[Any], np.ndarray]:
    """Out-of-fold probabilities, the fitted map of each fold (fitted with the other folds'
    weights), and each row's fold."""
    factory = _factory(make, where=where)
    x = v.to_numpy(scores, name="scores", where=where)
    if x.ndim not in (1, 2) or x.shape[0] == 0:
        raise InputError(
            f"{where}: scores must be a non-empty 1-D or 2-D array, got shape {x.shape}."
        )
    n_classes = 2 if x.ndim == 1 else int(x.shape[1])
    y = v.labels(labels, n=x.shape[0], n_classes=n_classes, where=where)
    w = v.sample_weight(sample_weight, n=y.size, where=where)
    fold = stratified_folds(y, folds=folds, seed=seed)
    out: np.ndarray | None = None
    fitted = []
    for k in range(int(fold.max()) + 1):
        held = fold == k
        calibrator = factory()
        fit_weighted(calibrator, x[~held], y[~held], None if w is None else w[~held])
        pred = np.asarray(calibrator.predict_proba(x[held]))
        if out is None:
            out = np.empty((x.shape[0], *pred.shape[1:]), dtype=np.float64)
        out[held] = pred
        fitted.append(calibrator)
    if out is None:  # unreachable: folds >= 2
        raise InputError(f"{where}: no folds to fit.")
    return out, fitted, fold
