"""The figure of a monitor: ECE per cohort or time window against its no-change band."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .._errors import InputError
from ._figure_parts import _BLUE, _GREY, _RED, _SMALL, _new_axes

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..monitoring import Monitor


def monitor_plot(monitor: Monitor, *, ax: Axes | None = None) -> Axes:
    """Draw ECE over the groups of a monitor (time, or cohorts) with its band.

    - each group's ECE, with its bootstrap interval as a whisker;
    - the noise floor of each group (the ECE a calibrated forecaster with its confidences
      shows), as a grey band from 0 to its mean;
    - the reference's ECE plus the noise band of changes each group is tested against (a
      shaded band: a group outside it moved beyond noise);
    - moved groups in red, with their names in the legend.

    Group labels go on the x-axis (every n-th when there are many).

    Examples
    --------
    >>> import numpy as np, calibkit as ck
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0, 1, 3000); y = (rng.random(3000) < p).astype(int)
    >>> m = ck.monitor(p, y, by=np.repeat([1, 2, 3], 1000), n_boot=100, n_sims=200)
    >>> ax = ck.monitor_plot(m)
    >>> [line.get_gid() for line in ax.lines][:2]
    ['calibkit-ece', 'calibkit-reference']
    """
    from ..monitoring import Monitor, group_label

    where = "monitor_plot"
    if not isinstance(monitor, Monitor):
        raise InputError(f"{where}: expected a Monitor (ck.monitor), got {type(monitor).__name__}.")
    if ax is None:
        ax = _new_axes((max(6.0, min(14.0, 0.35 * len(monitor.groups) + 4.0)), 4.2))
    groups = monitor.groups
    x = np.arange(len(groups))
    ece = np.array([g.ece for g in groups])
    low = np.array([g.interval.low for g in groups])
    high = np.array([g.interval.high for g in groups])
    floor = np.array([g.noise_floor.mean for g in groups])
    ax.fill_between(
        x, 0.0, floor, step="mid", color=_GREY, alpha=0.25, lw=0, label="noise floor (mean)"
    )
    ref_ece = float(ece_from_reference(monitor))
    band_low = np.array([ref_ece + (g.band.low if g.band else 0.0) for g in groups])
    band_high = np.array([ref_ece + (g.band.high if g.band else 0.0) for g in groups])
    ax.fill_between(
        x,
        band_low,
        band_high,
        step="mid",
        color=_BLUE,
        alpha=0.12,
        lw=0,
        label=f"no-change band from {monitor.reference} ({monitor.family_level:.0%} family-wise)",
    )
    (line,) = ax.plot(x, ece, color=_BLUE, lw=1.2, marker="o", ms=4, label="ECE", zorder=3)
    line.set_gid("calibkit-ece")
    reference = ax.axhline(ref_ece, color=_BLUE, lw=0.8, ls=":", zorder=2)
    reference.set_gid("calibkit-reference")
    below, above = np.maximum(ece - low, 0.0), np.maximum(high - ece, 0.0)
    ax.errorbar(x, ece, yerr=[below, above], fmt="none", ecolor=_BLUE, elinewidth=0.8, capsize=2)
    moved = np.array([g.moved for g in groups])
    if moved.any():
        names = ", ".join(str(group_label(g.group)) for g in groups if g.moved)
        ax.scatter(
            x[moved], ece[moved], color=_RED, s=36, zorder=4, label=f"moved: {_shorten(names)}"
        )
    labels = [str(group_label(g.group)) for g in groups]
    step = max(1, int(math.ceil(len(groups) / 16)))
    ax.set_xticks(x[::step], labels[::step], rotation=45 if len(groups) > 6 else 0, ha="right")
    m = monitor.binning.values.size - 1
    ax.set_xlabel(monitor.by)
    ax.set_ylabel(f"ECE (M = {m} {monitor.binning.strategy})")
    ax.set_ylim(bottom=0.0)
    ax.set_title(
        f"calibration by {monitor.by}: {monitor.verdict()}", fontsize=_SMALL + 1, wrap=True
    )
    ax.legend(fontsize=_SMALL, loc="upper left")
    return ax


def ece_from_reference(monitor: Monitor) -> float:
    from ..measure.errors import ece_from_stats

    return ece_from_stats(monitor.reference_stats)


def _shorten(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
