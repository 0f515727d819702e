"""Figures of decisions: the risk-coverage curve with chosen thresholds, and the cost curve."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .._errors import InputError
from ..decide import threshold_text
from ._figure_parts import (
    _BLUE,
    _GREEN,
    _GREY,
    _ORANGE,
    _RED,
    _SMALL,
    _logit_axis,
    _new_axes,
    decimate,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..decide.coverage import RiskCoverage

# ----------------------------------------------------------------------------- risk-coverage


def _threshold_value(name: str, value: Any, *, where: str) -> float:
    t = getattr(value, "threshold", value)  # a ThresholdChoice or a number
    if isinstance(t, bool) or not isinstance(t, (int, float, np.floating, np.integer)):
        raise InputError(
            f"{where}: thresholds[{name!r}] must be a number or a ThresholdChoice, "
            f"got {type(value).__name__}."
        )
    t = float(t)
    if math.isnan(t):
        raise InputError(f"{where}: thresholds[{name!r}] is NaN.")
    return t


def curve_index(rc: RiskCoverage, threshold: float) -> int:
    """Index into ``rc``'s arrays of the point "act when confidence >= threshold" (0: none)."""
    # rc.threshold decreases from inf; count the thresholds >= t, the last of them is the point
    return int(np.searchsorted(-rc.threshold, -threshold, side="right")) - 1


def risk_coverage_plot(
    rc: RiskCoverage,
    *,
    ax: Axes | None = None,
    thresholds: Mapping[str, Any] | None = None,
) -> Axes:
    """Draw a risk-coverage curve (Geifman and El-Yaniv 2017) with its baselines and thresholds.

    - the curve: selective risk against coverage as steps (each threshold's risk over the
      coverage it adds, the area of which is the AURC), decimated for drawing to at most
      :data:`MAX_CURVE_POINTS` points by :func:`decimate` (min-max per coverage slice, so the
      jagged start at low coverage and every extreme survive);
    - random abstention: a horizontal line at the error rate (its risk at every coverage);
    - the oracle, which defers the errors first: risk 0 up to coverage 1 - error rate, then
      ``(c - (1 - e)) / c``;
    - ``thresholds``: ``{name: threshold}`` (a number, or a ThresholdChoice): each marks the
      curve's point "act when confidence >= threshold" with a labelled marker; a threshold above
      every confidence (acts on nothing, risk undefined) is listed in the legend without one.

    AURC, the oracle's AURC and the error rate are in the legend.

    Examples
    --------
    >>> import calibkit as ck
    >>> from calibkit.report.figures import risk_coverage_plot
    >>> rc = ck.risk_coverage([0.95, 0.9, 0.8, 0.7, 0.6], [1, 1, 0, 1, 0])
    >>> ax = risk_coverage_plot(rc, thresholds={"Chow": 0.9})
    >>> [line.get_gid() for line in ax.lines]
    ['calibkit-curve', 'calibkit-oracle', 'calibkit-random', 'calibkit-threshold-Chow']
    """
    from ..decide.coverage import RiskCoverage

    where = "risk_coverage_plot"
    if not isinstance(rc, RiskCoverage):
        raise InputError(
            f"{where}: expected a RiskCoverage (ck.risk_coverage), got {type(rc).__name__}."
        )
    marks = {
        str(k): _threshold_value(str(k), val, where=where) for k, val in (thresholds or {}).items()
    }
    if ax is None:
        ax = _new_axes((6.0, 4.5))

    coverage = rc.coverage
    risk = rc.risk.copy()
    risk[0] = risk[1]  # coverage 0 has no risk: draw the first step from 0
    keep = decimate(coverage, risk)
    (curve,) = ax.plot(
        coverage[keep],
        risk[keep],
        drawstyle="steps-pre",
        color=_BLUE,
        lw=1.5,
        label=f"confidence ranking (AURC {rc.aurc:.4f})",
        zorder=3,
    )
    curve.set_gid("calibkit-curve")

    e = rc.error_rate
    grid = np.union1d(np.linspace(0.0, 1.0, 401)[1:], [1.0 - e]) if e < 1 else np.array([1.0])
    grid = grid[grid > 0]
    oracle = np.maximum(grid - (1.0 - e), 0.0) / grid
    (oracle_line,) = ax.plot(
        np.r_[0.0, grid],
        np.r_[0.0, oracle],
        color=_GREEN,
        lw=1.2,
        ls="-.",
        label=f"oracle (AURC {rc.oracle_aurc:.4f})",
        zorder=2,
    )
    oracle_line.set_gid("calibkit-oracle")
    random_line = ax.axhline(
        e, color=_GREY, lw=1.2, ls="--", label=f"random abstention (error rate {e:.4f})", zorder=1
    )
    random_line.set_gid("calibkit-random")

    markers = ["o", "s", "D", "^", "v", "P", "X"]
    colours = [_RED, _ORANGE, "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]
    for k, (name, t) in enumerate(marks.items()):
        j = curve_index(rc, t)
        shown = threshold_text(t)
        if j == 0:  # acts on nothing: no point of the curve
            ax.plot([], [], ls="none", label=f"{name}: threshold {shown}, acts on nothing")
            continue
        (point,) = ax.plot(
            [rc.coverage[j]],
            [rc.risk[j]],
            ls="none",
            marker=markers[k % len(markers)],
            ms=7,
            mfc=colours[k % len(colours)],
            mec="black",
            mew=0.7,
            clip_on=False,
            label=(
                f"{name}: threshold {shown} (coverage {rc.coverage[j]:.3f}, risk {rc.risk[j]:.3f})"
            ),
            zorder=5,
        )
        point.set_gid(f"calibkit-threshold-{name}")

    ax.set_xlim(0, 1.0)
    top = float(np.nanmax(risk[keep])) if keep.size else 1.0
    ax.set_ylim(0, max(top, e) * 1.45 + 1e-3)  # room for the legend above the baseline
    ax.set_xlabel("coverage (share of cases acted on)")
    ax.set_ylabel("selective risk (error rate among them)")
    ax.set_title(
        f"risk-coverage curve: N = {rc.n:,}, {rc.errors:,} wrong (E-AURC {rc.e_aurc:.4f})",
        fontsize=10,
    )
    ax.legend(loc="upper left", fontsize=_SMALL, frameon=True, framealpha=0.9, edgecolor="none")
    ax.grid(True, lw=0.3, alpha=0.5)
    return ax


# ----------------------------------------------------------------------------- cost curve


def cost_curve(
    confidence: Any,
    outcome: Any,
    *,
    l_wrong: float,
    l_defer: float,
    ax: Axes | None = None,
    xscale: str = "auto",
    sample_weight: Any = None,
) -> Axes:
    """Draw the cost per case against the threshold.

    Acting when confidence >= threshold costs ``l_wrong`` per wrong action and ``l_defer`` per
    deferred case; the curve is the average over the data at every threshold, a step function
    that changes only at observed confidences (decimated for drawing by :func:`decimate`).
    Marked: Chow's threshold ``1 - l_defer / l_wrong`` (Chow 1970) with its cost on these
    data, and the empirical minimum from :func:`calibkit.choose_threshold` (the same numbers);
    dotted lines show deferring everything (``l_defer``) and acting on everything. A gap
    between the two marks measures miscalibration near the threshold.

    ``xscale``: ``"linear"`` draws thresholds 0 to 1; ``"logit"`` spreads 0.9, 0.99, 0.999, ...
    evenly, which a modern network needs (half of its confidences may lie above 0.99999999,
    where a linear axis shows one vertical line); there the axis ends just past the largest
    confidence below 1, and confidences of exactly 1.0 are drawn at that right edge.
    ``"auto"`` (default) takes ``"logit"`` when the median confidence exceeds 0.99.

    ``sample_weight`` (finite, non-negative, one per row) draws the expected cost per unit
    weight instead, as :func:`calibkit.choose_threshold` computes it.

    Examples
    --------
    Five predictions, the third and fifth wrong: Chow and the empirical minimum agree at 0.9,
    0.6 per case.

    >>> from calibkit.report.figures import cost_curve
    >>> ax = cost_curve([0.95, 0.9, 0.8, 0.7, 0.6], [1, 1, 0, 1, 0], l_wrong=10, l_defer=1)
    >>> best = next(l for l in ax.lines if l.get_gid() == "calibkit-minimum")
    >>> float(best.get_xdata()[0]), round(float(best.get_ydata()[0]), 2)
    (0.9, 0.6)
    """
    from .. import _validate as v
    from ..decide.coverage import sorted_steps, validated
    from ..decide.thresholds import choose_threshold, cost_at, costs

    where = "cost_curve"
    xscale = v.choice(xscale, name="xscale", allowed=("auto", "linear", "logit"), where=where)
    lw, ld = costs(l_wrong=l_wrong, l_defer=l_defer, where=where)
    conf, out = validated(confidence, outcome, where=where)
    w = v.sample_weight(sample_weight, n=conf.shape[0], where=where)
    choice = choose_threshold(conf, out, l_wrong=lw, l_defer=ld, sample_weight=w)
    steps = sorted_steps(conf, out, w)
    n = steps.total  # the number of rows, or the total weight
    # in increasing threshold: the cost of acting when confidence >= t, at each distinct t
    t = steps.threshold[::-1]
    cost = ((steps.mass_wrong * lw + (n - steps.mass_acted) * ld) / n)[::-1]
    if xscale == "auto":
        xscale = "logit" if float(np.median(conf)) > 0.99 else "linear"
    if xscale == "linear":
        lo, hi = 0.0, 1.0
    else:
        below_one = t[t < 1]
        hi = 1.0 - max(float(1.0 - below_one.max()) / 4 if below_one.size else 1e-3, 1e-16)
        lo = min(0.5, max(float(t[0]), 1e-4))
    if t[0] > lo:  # below the smallest confidence, everything is acted on
        t, cost = np.r_[lo, t], np.r_[cost[0], cost]
    if t[-1] < hi:  # above the largest, nothing is
        t, cost = np.r_[t, hi], np.r_[cost, ld]
    x = np.clip(t, lo, hi)  # logit: 1.0 at the right edge, thresholds below lo at the left

    if ax is None:
        ax = _new_axes((6.0, 4.5))
    if xscale == "logit":
        _logit_axis(ax, lo, hi)
        keep = decimate(np.log(x) - np.log1p(-x), cost)  # equal slices of the drawn axis
    else:
        keep = decimate(x, cost)
    (curve,) = ax.plot(
        x[keep],
        cost[keep],
        drawstyle="steps-pre",
        color=_BLUE,
        lw=1.5,
        label="cost per case",
        zorder=2,
    )
    curve.set_gid("calibkit-cost")
    act_all = float((np.count_nonzero(out == 0) if w is None else w[out == 0].sum()) * lw / n)
    ax.axhline(ld, color=_GREY, lw=1, ls=":", label=f"defer everything ({ld:.4g})", zorder=1)
    ax.axhline(
        act_all, color=_GREY, lw=1, ls="--", label=f"act on everything ({act_all:.4g})", zorder=1
    )

    chow = choice.chow_threshold
    chow_cost, _, _ = cost_at(conf, out, chow, l_wrong=lw, l_defer=ld, weight=w)
    chow_x = min(max(chow, lo), hi)
    ax.axvline(chow_x, color=_ORANGE, lw=0.8, ls="--", zorder=1)
    (chow_point,) = ax.plot(
        [chow_x],
        [chow_cost],
        ls="none",
        marker="s",
        ms=7,
        mfc=_ORANGE,
        mec="black",
        mew=0.7,
        clip_on=False,
        label=f"Chow's rule: threshold {threshold_text(chow)}, cost {chow_cost:.4f}",
        zorder=4,
    )
    chow_point.set_gid("calibkit-chow")
    finite = math.isfinite(choice.threshold)
    best_label = (
        f"empirical minimum: threshold {threshold_text(choice.threshold)}, cost {choice.cost:.4f}"
        if finite
        else f"empirical minimum: defer everything, cost {choice.cost:.4f}"
    )
    (best,) = ax.plot(
        [min(max(choice.threshold, lo), hi) if finite else hi],
        [choice.cost],
        ls="none",
        marker="o",
        ms=7,
        mfc=_RED,
        mec="black",
        mew=0.7,
        clip_on=False,
        label=best_label,
        zorder=5,
    )
    best.set_gid("calibkit-minimum")

    ax.set_xlim(lo, hi)
    ax.set_ylim(0, max(float(cost.max()), ld, act_all) * 1.45)
    ax.set_xlabel(
        "threshold (act when confidence >= threshold)"
        + ("; logit scale" if xscale == "logit" else "")
    )
    ax.set_ylabel("cost per case")
    ax.set_title(f"cost per case: l_wrong = {lw:g}, l_defer = {ld:g}, N = {n:,}", fontsize=10)
    ax.legend(loc="upper left", fontsize=_SMALL, frameon=True, framealpha=0.9, edgecolor="none")
    ax.grid(True, lw=0.3, alpha=0.5)
    return ax
