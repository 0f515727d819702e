"""Figures of calibkit results: reliability diagrams, BEFORE/AFTER, risk-coverage and cost curves.

Compute, then draw: every function takes a result (or, for the cost curve, the two arrays it
needs), draws with matplotlib's object-oriented API into an ``ax`` you pass or into a new
:class:`~matplotlib.figure.Figure` (no ``pyplot``, no GUI backend, no global state), and returns
the Axes (the Figure for multi-panel figures). matplotlib is imported inside the functions, so
``import calibkit`` never loads it, and no function changes ``matplotlib.rcParams``: fonts and
colours are set on the artists themselves.

Nothing is drawn per prediction. The reliability diagram draws one dot per non-empty bin; the
risk-coverage and cost curves, which have one step per distinct confidence, are decimated for
drawing to at most :data:`MAX_CURVE_POINTS` points that keep each curve's shape (see
:func:`decimate`), so a figure of 1e6 predictions draws as fast as one of 1e3.

Artists carry a ``gid`` (``"calibkit-bins"``, ``"calibkit-gaps"``, ...) so that tests and
downstream code can find them without relying on drawing order.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._errors import InputError
from .._files import atomic_path
from ..decide import threshold_text

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ..audit import Audit
    from ..decide.coverage import RiskCoverage
    from ..measure.reliability import ReliabilityTable
    from ..monitoring import Monitor

__all__ = [
    "MAX_CURVE_POINTS",
    "before_after",
    "cost_curve",
    "decimate",
    "monitor_plot",
    "reliability_diagram",
    "risk_coverage_plot",
    "save_figure",
]

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


# ----------------------------------------------------------------------------- reliability


def _split_for_histogram(ax: Axes) -> Axes:
    """Give the lower quarter of ``ax``'s space to a histogram axes that shares its x-axis.

    ``ax`` stays the same object (drawn into, returned); a subplot keeps working with layout
    engines because its SubplotSpec is split, an Axes placed by hand is shrunk in place.
    """
    fig = ax.figure  # a Figure or a SubFigure: both add subplots and axes
    spec = ax.get_subplotspec()
    if spec is not None:
        grid = spec.subgridspec(2, 1, height_ratios=[3.2, 1.0], hspace=0.04)
        ax.set_subplotspec(grid[0])
        return fig.add_subplot(grid[1], sharex=ax)
    box = ax.get_position()
    h_hist = 0.22 * box.height
    gap = 0.12 * box.height
    ax.set_position((box.x0, box.y0 + h_hist + gap, box.width, box.height - h_hist - gap))
    return fig.add_axes((box.x0, box.y0, box.width, h_hist), sharex=ax)


def _reliability_title(table: ReliabilityTable, audit: Audit | None, title: str | None) -> str:
    from ..measure.errors import ece_from_stats

    ece = audit.ece if audit is not None else ece_from_stats(table.stats)
    lines = [title] if title else []
    lines.append(f"ECE {ece:.4f}  (M = {table.stats.n_bins} {table.strategy}, N = {table.n:,})")
    if audit is not None:
        floor = audit.noise_floor
        lines.append(f"noise floor {floor.mean:.4f}, 95th percentile {floor.p95:.4f}")
    return "\n".join(lines)


def reliability_diagram(
    result: ReliabilityTable | Audit,
    *,
    ax: Axes | None = None,
    title: str | None = None,
    histogram: bool = True,
) -> Axes:
    """Draw a reliability diagram with the bin counts underneath.

    Drawn from the binned result only, never per prediction:

    - the diagonal (perfect calibration);
    - one dot per non-empty bin at (mean confidence, observed accuracy), its area growing
      linearly with the bin's count (8 + 160 * count / largest count, in points squared, so
      that a one-point bin stays visible);
    - a translucent bar from the diagonal to the dot: the bin's gap (below the diagonal:
      overconfident);
    - the per-bin confidence interval of the accuracy as a vertical whisker (when the table
      has one), so that a bin of a few points shows its noise;
    - with ``histogram=True``, a second axes underneath that shares the x-axis: one bar per
      non-empty bin over the bin's edges, its count written above it. When the largest bin holds
      more than :data:`LOG_COUNTS_RATIO` times the smallest non-empty one (a confident model
      puts most predictions in its top bin), the count axis is log-scaled: on a linear axis the
      small bins would be invisible slivers, yet those are the bins whose gaps are noise, so
      they must be seen; the written counts keep the exact numbers readable on either scale;
    - the title: ECE with M and N (and, for an Audit, the noise floor's mean and 95th
      percentile), under ``title`` when given.

    Empty bins draw nothing.

    Parameters
    ----------
    result : ReliabilityTable or Audit
        From :func:`calibkit.reliability_bins` or :func:`calibkit.audit`.
    ax : matplotlib Axes, optional
        Where to draw. With ``histogram=True`` its space is split: the diagram keeps the upper
        three quarters (``ax`` itself) and the counts take the rest. A new figure when None.
    title : str, optional
        First title line (e.g. ``"before"``); the ECE line follows.
    histogram : bool
        Draw the counts underneath.

    Returns
    -------
    matplotlib Axes
        The diagram's axes (the histogram's is ``ax.figure.axes``' entry labelled
        ``"calibkit-counts"``).

    Examples
    --------
    Ten predictions in two bins: two dots, gaps +0.10 and -0.13.

    >>> import calibkit as ck
    >>> from calibkit.report.figures import reliability_diagram
    >>> conf = [0.3, 0.4, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.9, 0.9]
    >>> hit = [1, 0, 1, 0, 1, 1, 0, 1, 0, 1]
    >>> ax = reliability_diagram(ck.reliability_bins(conf, hit, n_bins=2))
    >>> ax.get_title().splitlines()[0]
    'ECE 0.1200  (M = 2 uniform, N = 10)'
    >>> dots = next(c for c in ax.collections if c.get_gid() == "calibkit-bins")
    >>> dots.get_offsets().round(3).tolist()
    [[0.4, 0.5], [0.8, 0.667]]
    """
    table, audit = _as_table(result, where="reliability_diagram")
    if ax is None:
        ax = _new_axes((5.0, 6.0) if histogram else (5.0, 5.0))
    rows = [r for r in table.rows if r.count > 0]
    conf = np.array([r.conf for r in rows])
    acc = np.array([r.acc for r in rows])
    count = np.array([r.count for r in rows], dtype=np.int64)
    ci_low = np.array([r.ci_low for r in rows])
    ci_high = np.array([r.ci_high for r in rows])

    ax.plot([0, 1], [0, 1], ls="--", lw=1, color=_GREY, label="perfect calibration", zorder=1)
    gaps = ax.vlines(
        conf, conf, acc, colors=_RED, linewidths=5, alpha=0.45, label="gap (acc - conf)", zorder=2
    )
    gaps.set_gid("calibkit-gaps")
    has_ci = table.interval is not None and count.size > 0 and bool(np.isfinite(ci_low).all())
    if has_ci:
        pct = f"{table.level * 100:.4g}%"
        whiskers = ax.errorbar(
            conf,
            acc,
            yerr=np.vstack([acc - ci_low, ci_high - acc]).clip(min=0),
            fmt="none",
            ecolor="black",
            elinewidth=0.9,
            capsize=2.5,
            capthick=0.9,
            label=f"{pct} {table.interval} interval",
            zorder=3,
        )
        whiskers.lines[2][0].set_gid("calibkit-intervals")
    largest = int(count.max()) if count.size else 1
    dots = ax.scatter(
        conf,
        acc,
        s=8 + 160 * count / largest,
        color=_BLUE,
        alpha=0.75,  # the gap bar and the interval stay visible through a large dot
        edgecolors="white",
        linewidths=0.6,
        label="bin (area ~ count)",
        zorder=4,
        clip_on=False,
    )
    dots.set_gid("calibkit-bins")

    ax.set_xlim(-0.03, 1.03)  # shared with the counts, which read it
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("confidence (mean per bin)")
    ax.set_ylabel("accuracy (observed per bin)")
    ax.set_title(_reliability_title(table, audit, title), fontsize=10)
    # Overconfident bins lie below the diagonal, leaving the upper left empty, and vice versa.
    weighted_gap = float(np.sum(count * (acc - conf))) if count.size else 0.0
    ax.legend(
        loc="upper left" if weighted_gap <= 0 else "lower right",
        fontsize=_SMALL,
        frameon=False,
        markerscale=0.6,
    )
    ax.grid(True, lw=0.3, alpha=0.5)

    if histogram:
        # The two axes share x, labelled once at the very bottom: the diagram keeps its label
        # text (readers and tests find it there) but shows neither it nor the tick labels.
        ax.tick_params(labelbottom=False)
        ax.xaxis.label.set_visible(False)
        counts_ax = _split_for_histogram(ax)
        counts_ax.set_label("calibkit-counts")
        _draw_counts(counts_ax, table)
        counts_ax.set_xlabel(ax.get_xlabel())
    return ax


def _draw_counts(ax: Axes, table: ReliabilityTable) -> None:
    from matplotlib.figure import Figure

    full = table.count > 0
    lo, hi, count = table.lo[full], table.hi[full], table.count[full]
    bars = ax.bar(
        lo, count, width=hi - lo, align="edge", color=_BLUE, alpha=0.55, edgecolor="white"
    )
    for patch in bars:
        patch.set_gid("calibkit-count")
    log = count.size > 0 and count.max() > LOG_COUNTS_RATIO * count.min()
    if log:
        ax.set_yscale("log")
        ax.set_ylim(0.7, count.max() * 12)
    else:
        ax.set_ylim(0, max(int(count.max()) if count.size else 1, 1) * 1.35)
    texts = [_compact(int(c)) for c in count]
    # Counts are written level when each fits over its bar (a text is about 0.6 em per
    # character), else upright; the axes' width is read before layout, close enough here.
    root = getattr(ax.figure, "figure", ax.figure)  # a SubFigure's root Figure
    inches = root.get_figwidth() if isinstance(root, Figure) else 5.0
    width_pt = ax.get_position().width * inches * 72
    span = np.subtract(*ax.get_xlim()[::-1]) or 1.0
    fontsize = 7.0
    level = all(
        0.6 * fontsize * len(text) <= 0.9 * (b - a) / span * width_pt
        for text, a, b in zip(texts, lo, hi, strict=True)
    )
    for text, a, b, c in zip(texts, lo, hi, count, strict=True):
        ax.annotate(
            text,
            ((a + b) / 2, c),
            xytext=(0, 1.5),
            textcoords="offset points",
            ha="center",
            va="bottom",
            fontsize=fontsize if level else 6.0,
            rotation=0 if level else 90,
        )
    ax.set_ylabel("count" + (" (log)" if log else ""), fontsize=_SMALL)
    ax.tick_params(labelsize=_SMALL)
    ax.grid(True, axis="y", lw=0.3, alpha=0.5)


def before_after(
    before: ReliabilityTable | Audit,
    after: ReliabilityTable | Audit,
    *,
    titles: tuple[str, str] = ("before", "after"),
    histogram: bool = True,
    ax: Any = None,
) -> Figure:
    """Two reliability diagrams side by side: a forecast before and after recalibration.

    ``ax`` is a pair of matplotlib Axes to draw into (e.g. ``plt.subplots(1, 2)[1]``); by
    default a new figure with two is made.

    Pass the results of the same held-out rows (e.g. ``ck.audit`` of the raw and of the
    recalibrated probabilities). A :class:`~calibkit.CalibrationLedger` cannot be drawn: it keeps
    the value of each instrument, not the confidences or the reliability tables (passing one
    raises :class:`~calibkit.InputError` saying what to pass instead).

    Returns
    -------
    matplotlib Figure
        Its first two axes are the diagrams (``fig.axes[0]``: before, ``fig.axes[1]``: after).

    Examples
    --------
    >>> import calibkit as ck
    >>> from calibkit.report.figures import before_after
    >>> t = ck.reliability_bins([0.9, 0.9, 0.6, 0.6], [1, 0, 1, 1], n_bins=10)
    >>> fig = before_after(t, t)
    >>> [ax.get_title().splitlines()[0] for ax in fig.axes[:2]]
    ['before', 'after']
    """
    from matplotlib.figure import Figure

    for result in (before, after):
        _as_table(result, where="before_after")  # refuse a ledger before drawing anything
    if ax is None:
        fig = Figure(figsize=(10.0, 6.0) if histogram else (10.0, 5.0), layout="constrained")
        left, right = fig.subplots(1, 2)
    else:
        axes = list(np.ravel(np.asarray(ax, dtype=object)))
        if len(axes) != 2 or not all(hasattr(a, "get_figure") for a in axes):
            raise InputError(
                "before_after: ax must be a pair of matplotlib Axes (before, after), e.g. "
                f"plt.subplots(1, 2)[1]; got {type(ax).__name__} of {len(axes)}."
            )
        left, right = axes
        fig = left.get_figure()
    reliability_diagram(before, ax=left, title=titles[0], histogram=histogram)
    reliability_diagram(after, ax=right, title=titles[1], histogram=histogram)
    return fig


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
    choice = choose_threshold(conf, out, l_wrong=lw, l_defer=ld)
    steps = sorted_steps(conf, out)
    n = steps.n
    # in increasing threshold: the cost of acting when confidence >= t, at each distinct t
    t = steps.threshold[::-1]
    cost = ((steps.wrong * lw + (n - steps.acted) * ld) / n)[::-1]
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
    act_all = float(np.count_nonzero(out == 0) * lw / n)
    ax.axhline(ld, color=_GREY, lw=1, ls=":", label=f"defer everything ({ld:.4g})", zorder=1)
    ax.axhline(
        act_all, color=_GREY, lw=1, ls="--", label=f"act on everything ({act_all:.4g})", zorder=1
    )

    chow = choice.chow_threshold
    chow_cost, _, _ = cost_at(conf, out, chow, l_wrong=lw, l_defer=ld)
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


# ----------------------------------------------------------------------------- files


_FORMATS = {".png": "png", ".svg": "svg"}


def save_figure(path: str | os.PathLike[str], fig: Figure | Axes) -> Path:
    """Write a figure as PNG (150 dpi) or SVG, chosen by the file's extension, atomically.

    The file is written to a temporary file beside ``path`` and moved into place with
    :func:`os.replace`, so a reader never sees half a file. Nothing is closed and no global
    state changes: the SVG is made reproducible (the same data drawn afresh gives the same
    bytes) with a fixed hash salt (``rc_context``, restored on return) and no date. An Axes is
    accepted for its figure.

    Examples
    --------
    >>> import tempfile, pathlib, calibkit as ck
    >>> from calibkit.report.figures import reliability_diagram, save_figure
    >>> ax = reliability_diagram(ck.reliability_bins([0.9, 0.6], [1, 0], n_bins=2))
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = save_figure(pathlib.Path(d) / "diagram.png", ax)
    ...     p.read_bytes()[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
    True
    """
    import matplotlib

    from .._validate import output_path

    target = Path(output_path(path, where="save_figure", call="save_figure(path, fig)"))
    fmt = _FORMATS.get(target.suffix.lower())
    if fmt is None:
        raise InputError(
            f"save_figure: {str(target)!r} must end in .png or .svg (the format is chosen by "
            "the extension)."
        )
    figure = fig if hasattr(fig, "savefig") else getattr(fig, "figure", None)
    if figure is None or not hasattr(figure, "savefig"):
        raise InputError(
            f"save_figure: expected a matplotlib Figure or Axes, got {type(fig).__name__}."
        )
    with atomic_path(target, where="save_figure") as tmp:
        if fmt == "png":
            figure.savefig(tmp, format="png", dpi=150)
        else:
            with matplotlib.rc_context({"svg.hashsalt": "calibkit"}):
                figure.savefig(tmp, format="svg", metadata={"Date": None})
    return target
