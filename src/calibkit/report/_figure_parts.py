"""Pieces every calibkit figure shares: colours, font size, a new Axes, the table of a result,
compact counts, and the decimation of long curves."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from .._errors import InputError

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..audit import Audit
    from ..measure.reliability import ReliabilityTable

#: Upper bound on the points drawn for one curve (4 per bucket of :func:`decimate`).
MAX_CURVE_POINTS = 2000

# Colours of the tab10 cycle, named so that no global property cycle is consulted or changed.
_BLUE, _ORANGE, _GREEN, _RED, _GREY = "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#7f7f7f"
_SMALL = 8  # font size of legends and annotations, in points

#: Histogram counts switch the y-axis to a log scale when the largest bin holds more than this
#: many times the smallest non-empty one.
LOG_COUNTS_RATIO = 50.0

# ----------------------------------------------------------------------------- helpers


def _new_axes(figsize: tuple[float, float]) -> Axes:
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout="constrained")
    return fig.add_subplot()


def _as_table(result: Any, *, where: str) -> tuple[ReliabilityTable, Audit | None]:
    from ..audit import Audit
    from ..measure.reliability import ReliabilityTable
    from ..recalibrate.ledger import CalibrationLedger

    if isinstance(result, Audit):
        return result.table, result
    if isinstance(result, ReliabilityTable):
        return result, None
    if isinstance(result, CalibrationLedger):
        raise InputError(
            f"{where}: a CalibrationLedger keeps the value of each instrument, not the held-out "
            "confidences or reliability tables, so it cannot be drawn. Pass the BEFORE and "
            "AFTER results instead, e.g. ck.audit(before_probs, labels) and "
            "ck.audit(ledger.calibrator.predict_proba(scores), labels) on the held-out rows."
        )
    raise InputError(
        f"{where}: expected a ReliabilityTable (ck.reliability_bins) or an Audit (ck.audit), "
        f"got {type(result).__name__}."
    )


def _compact(count: int) -> str:
    """A count in at most five characters: 8523, 12.3k, 1.2M."""
    if count < 10_000:
        return str(count)
    if count < 1_000_000:
        return f"{count / 1000:.3g}k"
    return f"{count / 1_000_000:.3g}M"


def decimate(x: np.ndarray, y: np.ndarray, *, buckets: int = MAX_CURVE_POINTS // 4) -> np.ndarray:
    """Indices of at most ``4 * buckets`` points of a curve that keep its drawn shape.

    The min-max ("M4") decimation of Jugel et al. (2014): the x-range is cut into ``buckets``
    equal slices and each slice keeps its first and last point and the first points where ``y``
    is smallest and largest, in their original order. Every vertical extent a slice spans is
    kept, so at a drawing width of ``buckets`` pixels or fewer the decimated curve covers the
    same pixels as the full one, and the curve's minimum and maximum are always kept. ``x``
    must be non-decreasing; ``y`` must have no NaN. O(N).

    Examples
    --------
    >>> import numpy as np
    >>> x = np.linspace(0, 1, 100_001); y = np.sin(40 * x)
    >>> keep = decimate(x, y, buckets=100)
    >>> keep.size <= 400, int(keep[0]), int(keep[-1]), bool(y[keep].min() == y.min())
    (True, 0, 100000, True)
    """
    n = int(x.size)
    if n <= 4 * buckets:
        return np.arange(n)
    span = float(x[-1] - x[0])
    if not span > 0:
        return np.array([0, int(np.argmin(y)), int(np.argmax(y)), n - 1]).clip(0, n - 1)
    slot = ((x - x[0]) * (buckets / span)).astype(np.int64)
    np.minimum(slot, buckets - 1, out=slot)
    starts = np.flatnonzero(np.r_[True, slot[1:] != slot[:-1]])
    ends = np.r_[starts[1:], n] - 1
    group = np.repeat(np.arange(starts.size), ends - starts + 1)
    keep = [starts, ends]
    for reduce in (np.minimum, np.maximum):
        extreme = reduce.reduceat(y, starts)
        hit = np.flatnonzero(y == extreme[group])
        first = np.r_[True, group[hit][1:] != group[hit][:-1]]
        keep.append(hit[first])
    return np.unique(np.concatenate(keep))


def _logit_axis(ax: Axes, lo: float, hi: float) -> None:
    """A logit x-axis with at most eight readable ticks: 0.5, 0.9, 0.99, 0.999, 1-1e-6, ..."""
    from matplotlib.ticker import FixedFormatter, FixedLocator, NullLocator

    ax.set_xscale("logit")
    decades = max(1, int(math.floor(-math.log10(1.0 - hi) + 1e-9)))
    step = max(1, math.ceil(decades / 6))
    ks = [1, 2, 3] if decades <= 6 else [1]
    ks += [k for k in range(step, decades + 1, step) if k > ks[-1]]
    ticks = [0.5] + [1.0 - 10.0**-k for k in ks]
    labels = ["0.5"] + ["0." + "9" * k if k <= 3 else f"1-1e-{k}" for k in ks]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FixedFormatter(labels))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.tick_params(axis="x", labelsize=_SMALL)
