"""Figures of calibkit results: reliability diagrams and BEFORE/AFTER; the risk-coverage and cost
curves (:mod:`.decision_figures`) and the monitor (:mod:`.monitor_figure`) are importable from here.

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

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._errors import InputError
from .._files import atomic_path
from ._figure_parts import (
    _BLUE,
    _GREY,
    _RED,
    _SMALL,
    LOG_COUNTS_RATIO,
    MAX_CURVE_POINTS,
    _as_table,
    _compact,
    _new_axes,
    decimate,
)
from .decision_figures import cost_curve, risk_coverage_plot
from .monitor_figure import monitor_plot

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ..audit import Audit
    from ..measure.reliability import ReliabilityTable

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
