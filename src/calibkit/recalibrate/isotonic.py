"""Isotonic regression (Zadrozny and Elkan 2002): the best non-decreasing map from score to
P(event), by pool-adjacent-violators, interpolated linearly between the fitted points as
scikit-learn's ``IsotonicRegression`` does.

See :mod:`calibkit.recalibrate._binary_maps` for the multiclass modes (one-vs-rest or top-label)
and their trade-off.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _validate as v
from .._errors import InputError
from ..measure.pooled import isotonic_fit, pool_ties
from ._binary_maps import MULTICLASS, BinaryMapCalibrator, maps_state
from .base import array, number, text

__all__ = ["IsotonicCalibration", "IsotonicMap"]

OUT_OF_BOUNDS = ("clip", "raise")


@dataclass(frozen=True)
class IsotonicMap:
    """One fitted isotonic map: the points ``(x, y)`` (x strictly increasing, y non-decreasing)
    between which predictions interpolate linearly."""

    x: np.ndarray
    y: np.ndarray


class IsotonicCalibration(BinaryMapCalibrator[IsotonicMap]):
    """Non-decreasing step map from score to probability, fitted by pool-adjacent-violators.

    How it is fitted and applied (the same as ``sklearn.isotonic.IsotonicRegression`` with
    ``out_of_bounds="clip"``, which ``CalibratedClassifierCV(method="isotonic")`` uses):

    - **Ties.** Calibration rows with equal scores are pooled first: each distinct score becomes
      one point whose value is the mean of its labels, weighted by its count. PAVA
      (``scipy.optimize.isotonic_regression``) then fits these weighted points, so tied scores
      always get one value and the map is a function of the score (the same pooling as
      :func:`calibkit.corp`). (Scikit-learn also pools scores closer than 1e-15 in absolute
      value; here only exactly equal scores are pooled.) With ``sample_weight`` each point's
      value is the weighted event rate of its rows and its weight their total weight (rows of
      weight 0 are left out, so they do not widen the calibration range either), as
      ``IsotonicRegression().fit(x, y, sample_weight=w)`` fits them.
    - **Between fitted points**, predictions interpolate linearly, so the map is continuous and
      piecewise linear, not a staircase: a new score between two calibration scores gets a
      value between theirs.
    - **Outside the fitted range** [min, max] of the calibration scores: ``out_of_bounds="clip"``
      (default) returns the value at the nearest end; ``"raise"`` raises an
      :class:`~calibkit.InputError` naming the first score outside the range. No NaN is ever
      returned.

    Scores may be any finite reals (a ``decision_function``, logits or probabilities), 1-D or
    (N, C) one-vs-rest; top-label mode takes (N, C) probabilities and maps the top-label
    confidence.

    Parameters
    ----------
    out_of_bounds : {"clip", "raise"}
        What to do with scores outside the calibration range.
    multiclass : {"ovr", "top-label"}
        How (N, C) input is calibrated; 1-D input uses one map either way.

    Attributes
    ----------
    maps_ : tuple of IsotonicMap
        One map for 1-D scores and top-label, C for one-vs-rest. Only the points where the
        fitted value changes are kept (dropping the others does not change the interpolation).
    x_min_, x_max_ : ndarray of shape (n_maps,)
        The calibration range of each map.
    n_classes_ : int
        2 for 1-D scores.
    input_ndim_ : int

    Examples
    --------
    Scores 1, 2, 3, 4 with labels 0, 1, 0, 1: PAVA pools the violating pair (2, 3) to 1/2.
    Two rows tied at score 5 with labels 1 and 0 pool to 1/2 first, which again violates the
    1 at score 4, so 4 and 5 pool to (1 + 1/2 * 2) / 3 = 2/3.

    >>> from calibkit.recalibrate.isotonic import IsotonicCalibration
    >>> iso = IsotonicCalibration().fit([1, 2, 3, 4, 5, 5], [0, 1, 0, 1, 1, 0])
    >>> iso.predict_proba([1, 2, 3, 4, 5]).round(4).tolist()
    [0.0, 0.5, 0.5, 0.6667, 0.6667]
    >>> iso.predict_proba([0.0, 1.5, 9.0]).round(4).tolist()  # clipped, interpolated, clipped
    [0.0, 0.25, 0.6667]
    """

    kind = "isotonic"
    domain = "real"

    _params_spec = {"out_of_bounds": text(*OUT_OF_BOUNDS), "multiclass": text(*MULTICLASS)}
    _state_spec = maps_state(x=array(number()), y=array(number(minimum=0.0, maximum=1.0)))

    def __init__(self, *, out_of_bounds: str = "clip", multiclass: str = "ovr") -> None:
        self.out_of_bounds = out_of_bounds
        self.multiclass = multiclass

    def _check_settings(self, where: str) -> None:
        v.choice(self.out_of_bounds, name="out_of_bounds", allowed=OUT_OF_BOUNDS, where=where)

    def _fit_map(
        self, x: np.ndarray, y: np.ndarray, *, where: str, w: np.ndarray | None = None
    ) -> IsotonicMap:
        # one point per distinct score, weighted by its count (or its rows' total weight, as
        # sklearn.isotonic.IsotonicRegression pools tied scores with sample_weight)
        pooled = pool_ties(x, y, sample_weight=w)
        points, fitted = pooled.x, isotonic_fit(pooled)
        keep = np.ones(fitted.size, dtype=bool)  # drop points inside a flat run
        keep[1:-1] = (fitted[1:-1] != fitted[:-2]) | (fitted[1:-1] != fitted[2:])
        return IsotonicMap(points[keep], fitted[keep])

    def _apply_map(self, fitted: IsotonicMap, x: np.ndarray, *, where: str) -> np.ndarray:
        lo, hi = fitted.x[0], fitted.x[-1]
        if self.out_of_bounds == "raise":
            outside = (x < lo) | (x > hi)
            if outside.any():
                i = int(np.argmax(outside))
                count = int(outside.sum())
                raise InputError(
                    f"{where}: {count} {'score lies' if count == 1 else 'scores lie'} outside "
                    f"the calibration range [{float(lo)!r}, {float(hi)!r}], first at index {i}: "
                    f"{float(x[i])!r}. "
                    "Use out_of_bounds='clip' to give them the value at the nearest end."
                )
        return np.interp(x, fitted.x, fitted.y)

    def _map_state(self, fitted: IsotonicMap) -> dict[str, Any]:
        return {"x": fitted.x.tolist(), "y": fitted.y.tolist()}

    def _map_from_state(self, state: dict[str, Any]) -> IsotonicMap:
        # lists of finite numbers, y in [0, 1]: checked against _state_spec (from_dict)
        x = np.array(state["x"], dtype=np.float64)
        y = np.array(state["y"], dtype=np.float64)
        if x.shape != y.shape or x.size == 0 or np.any(np.diff(x) <= 0) or np.any(np.diff(y) < 0):
            raise InputError(
                f"an isotonic map needs equally long x (strictly increasing) and y "
                f"(non-decreasing), at least one point; got {x.size} x and {y.size} y."
            )
        return IsotonicMap(x, y)

    def _learned(self) -> None:
        self.x_min_ = np.array([m.x[0] for m in self.maps_])
        self.x_max_ = np.array([m.x[-1] for m in self.maps_])
