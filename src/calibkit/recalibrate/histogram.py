"""Histogram binning (Zadrozny and Elkan 2001): each probability is replaced by the frequency of
the event among the calibration rows of its bin.

See :mod:`calibkit.recalibrate._binary_maps` for the multiclass modes (one-vs-rest or top-label)
and their trade-off.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _kernels
from .. import _validate as v
from .._errors import InputError
from ..measure.bins import STRATEGIES, quantile_edges, quantile_levels, resolve_edges
from ..measure.weighted import weighted_quantiles
from ._binary_maps import MULTICLASS, BinaryMapCalibrator, maps_state
from .base import array, integer, number, text

__all__ = ["HistogramBinning", "HistogramMap"]


@dataclass(frozen=True)
class HistogramMap:
    """One fitted histogram map: bin edges, the value of each bin and its calibration count."""

    edges: np.ndarray
    values: np.ndarray
    counts: np.ndarray


class HistogramBinning(BinaryMapCalibrator[HistogramMap]):
    """Replace each probability by the calibration-split frequency of the event in its bin.

    Bins are calibkit's (the ones every binned measure uses): ``strategy="uniform"`` gives
    ``n_bins`` equal-width bins on [0, 1]; ``"quantile"`` gives equal-mass bins from the
    calibration scores of each map (coinciding quantile edges are merged, with a warning). Bins
    are right-closed: (e_k, e_k+1], the first bin includes 0, so a score on an edge goes to the
    lower bin.

    **Empty bins.** A bin that holds no calibration row has no frequency; its value is the bin's
    centre (e_k + e_k+1) / 2. With no evidence the best guess is that the model is calibrated
    there, at the bin's resolution; the value stays in [0, 1], is never NaN, and does not
    borrow a neighbour's frequency, which may come from scores far away (in top-label mode
    every bin below 1/C is empty by construction). ``maps_[k].counts`` shows which bins were
    empty.

    Inputs are probabilities: 1-D P(label = 1) in [0, 1], or (N, C) rows summing to 1.

    **Sample weights** (``fit(..., sample_weight=w)``): each bin's value is the weighted event
    rate of its rows, and ``counts`` stay the raw numbers of rows (of positive weight) in each
    bin. Quantile edges are those of the rows repeated w times (``np.quantile``'s linear rule
    on the cumulative weights), so integer weights give exactly the map of the repeated rows;
    unlike every other weighted fit, they move slightly when all weights are multiplied by a
    constant (the linear rule's rank (W - 1) k / M depends on the total weight W).

    Parameters
    ----------
    n_bins : int
        Number of bins (before quantile edges are merged).
    strategy : {"uniform", "quantile"}
    multiclass : {"ovr", "top-label"}
        How (N, C) input is calibrated; 1-D input uses one map either way.

    Attributes
    ----------
    maps_ : tuple of HistogramMap
        One map for 1-D scores and top-label, C for one-vs-rest, each with ``edges``,
        ``values`` (the frequency, or the centre of an empty bin) and ``counts``.
    n_classes_ : int
        2 for 1-D scores.
    input_ndim_ : int

    Examples
    --------
    Two bins, (0, 0.5] and (0.5, 1]: the first holds 0.1, 0.2, 0.5 with labels 0, 1, 0 (1/3),
    the second 0.6, 0.9 with labels 1, 1 (1).

    >>> from calibkit.recalibrate.histogram import HistogramBinning
    >>> hb = HistogramBinning(n_bins=2).fit([0.1, 0.2, 0.5, 0.6, 0.9], [0, 1, 0, 1, 1])
    >>> hb.predict_proba([0.0, 0.3, 0.5, 0.51, 1.0]).round(4).tolist()
    [0.3333, 0.3333, 0.3333, 1.0, 1.0]

    With four bins, (0.75, 1] still has 0.9, but (0.5, 0.75] has 0.6 only and (0.25, 0.5] has
    0.5 only; no bin is empty. Drop 0.5 and (0.25, 0.5] is empty: its value is its centre 0.375.

    >>> hb = HistogramBinning(n_bins=4).fit([0.1, 0.2, 0.6, 0.9], [0, 1, 1, 1])
    >>> hb.maps_[0].counts.tolist(), hb.predict_proba([0.3]).tolist()
    ([2, 0, 1, 1], [0.375])
    """

    kind = "histogram"
    domain = "probs"

    _params_spec = {
        "n_bins": integer(minimum=1),
        "strategy": text(*STRATEGIES),
        "multiclass": text(*MULTICLASS),
    }
    _state_spec = maps_state(
        edges=array(number()),
        values=array(number(minimum=0.0, maximum=1.0)),
        counts=array(integer(minimum=0)),
    )

    def __init__(
        self, *, n_bins: int = 15, strategy: str = "uniform", multiclass: str = "ovr"
    ) -> None:
        self.n_bins = n_bins
        self.strategy = strategy
        self.multiclass = multiclass

    def _check_settings(self, where: str) -> None:
        v.n_bins(self.n_bins, where=where)
        v.choice(self.strategy, name="strategy", allowed=STRATEGIES, where=where)

    def _fit_map(
        self, x: np.ndarray, y: np.ndarray, *, where: str, w: np.ndarray | None = None
    ) -> HistogramMap:
        if w is None or self.strategy != "quantile":
            edges = resolve_edges(
                x, n_bins=self.n_bins, strategy=self.strategy, edges=None, where=where
            ).values
        else:
            inner = weighted_quantiles(x, w, quantile_levels(v.n_bins(self.n_bins, where=where)))
            edges = quantile_edges(
                inner, n_bins=self.n_bins, closed="right", where=where, stacklevel=4
            ).values
        n = edges.size - 1
        index = _kernels.bin_index(x, edges, "right")
        counts = np.bincount(index, minlength=n)
        if w is None:
            events = np.bincount(index, weights=y.astype(np.float64), minlength=n)
            mass = counts
        else:
            events = np.bincount(index, weights=w * y, minlength=n)
            mass = np.bincount(index, weights=w, minlength=n)
        centres = (edges[:-1] + edges[1:]) / 2.0
        values = np.divide(events, mass, out=centres, where=mass > 0)
        return HistogramMap(edges, values, counts.astype(np.int64))

    def _apply_map(self, fitted: HistogramMap, x: np.ndarray, *, where: str) -> np.ndarray:
        return fitted.values[_kernels.bin_index(x, fitted.edges, "right")]

    def _map_state(self, fitted: HistogramMap) -> dict[str, Any]:
        return {
            "edges": fitted.edges.tolist(),
            "values": fitted.values.tolist(),
            "counts": fitted.counts.tolist(),
        }

    def _map_from_state(self, state: dict[str, Any]) -> HistogramMap:
        # lists of finite numbers, values in [0, 1], counts >= 0: checked against _state_spec
        edges = v.edges(state["edges"], where="histogram map")
        values = np.array(state["values"], dtype=np.float64)
        counts = np.array(state["counts"], dtype=np.int64)
        if values.shape != (edges.size - 1,) or counts.shape != values.shape:
            raise InputError(
                f"a histogram map with {edges.size - 1} bins needs as many "
                f"values and counts, got {values.size} and {counts.size}."
            )
        return HistogramMap(edges, values, counts)
