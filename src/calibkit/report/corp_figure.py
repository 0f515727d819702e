"""The CORP reliability diagram (Dimitriadis, Gneiting and Jordan 2021): the isotonic
recalibration curve of a :class:`~calibkit.measure.corp.CorpResult` with its band, the
forecasts' histogram underneath, and the score decomposition in the title.

Drawn as the figures of :mod:`calibkit.report.figures` are: into an ``ax`` you pass or a new
Figure, matplotlib imported inside the function, no global state, artists tagged by ``gid``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._errors import InputError
from ._figure_parts import _BLUE, _GREY, _RED, _SMALL, MAX_CURVE_POINTS, _new_axes, decimate
from .figures import _split_for_histogram

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..measure.corp import CorpResult

__all__ = ["corp_diagram"]

BANDS = ("consistency", "confidence", "both", "none")
#: Bins of the forecasts' histogram under the diagram.
HISTOGRAM_BINS = 20


def _curve(result: CorpResult) -> tuple[np.ndarray, np.ndarray]:
    """The CORP curve as drawn by ``reliabilitydiag``: flat over each PAV block (from its
    lowest to its highest forecast), straight between blocks."""
    blocks = result.blocks
    x = np.array([edge for lo, hi, _, _ in blocks for edge in (lo, hi)])
    y = np.array([value for _, _, _, value in blocks for _ in (0, 1)])
    if x.size > MAX_CURVE_POINTS:
        keep = decimate(x, y)
        x, y = x[keep], y[keep]
    return x, y


def _title(result: CorpResult, title: str | None) -> str:
    lines = [title] if title else []
    for d in (result.brier, result.log_loss):
        lines.append(
            f"{d.name}: MCB {d.miscalibration:.4f}  DSC {d.discrimination:.4f}  "
            f"UNC {d.uncertainty:.4f}  (N = {result.n:,})"
        )
    return "\n".join(lines)


def corp_diagram(
    result: CorpResult,
    *,
    ax: Axes | None = None,
    band: str = "consistency",
    title: str | None = None,
    histogram: bool = True,
) -> Axes:
    """Draw a CORP reliability diagram.

    - the diagonal (perfect calibration);
    - the band: ``"consistency"`` (default; where a calibrated forecaster's curve falls,
      around the diagonal: the curve leaving it is evidence of miscalibration there),
      ``"confidence"`` (the uncertainty of the curve itself, around it), ``"both"`` or
      ``"none"``; a result computed with ``n_boot=0`` has none to draw;
    - the CORP curve: the isotonic recalibration, flat over each PAV block and straight
      between blocks, the blocks themselves drawn thick;
    - with ``histogram=True``, the forecasts' histogram (20 equal bins) underneath, sharing
      the x-axis (log-scaled when its bars differ more than 50-fold);
    - the title: the Brier and log-loss decompositions (MCB, DSC, UNC) with N, under
      ``title`` when given.

    Parameters
    ----------
    result : CorpResult
        From :func:`calibkit.corp`.
    ax : matplotlib Axes, optional
        Where to draw (its space is split with the histogram when ``histogram=True``); a new
        figure when None.
    band : {"consistency", "confidence", "both", "none"}
    title : str, optional
        First title line.
    histogram : bool

    Returns
    -------
    matplotlib Axes
        The diagram's axes.

    Examples
    --------
    >>> import calibkit as ck
    >>> r = ck.corp([0.4, 0.3, 0.2, 0.1, 0.5, 0.9], [0, 0, 0, 1, 1, 1], n_boot=50)
    >>> ax = ck.corp_diagram(r)
    >>> curve = next(line for line in ax.lines if line.get_gid() == "calibkit-corp")
    >>> curve.get_xydata().tolist()
    [[0.1, 0.25], [0.4, 0.25], [0.5, 1.0], [0.9, 1.0]]
    >>> ax.get_title().splitlines()[0]
    'Brier: MCB 0.1017  DSC 0.1250  UNC 0.2500  (N = 6)'
    """
    from ..measure.corp import CorpResult

    where = "corp_diagram"
    if not isinstance(result, CorpResult):
        raise InputError(
            f"{where}: expected a CorpResult (ck.corp(confidence, outcome)), got "
            f"{type(result).__name__}."
        )
    if band not in BANDS:
        raise InputError(
            f"{where}: band must be one of {', '.join(map(repr, BANDS))}, got {band!r}."
        )
    if ax is None:
        ax = _new_axes((5.0, 6.0) if histogram else (5.0, 5.0))

    ax.plot([0, 1], [0, 1], ls="--", lw=1, color=_GREY, label="perfect calibration", zorder=1)
    wanted = {"consistency": ["consistency"], "confidence": ["confidence"]}.get(
        band, ["consistency", "confidence"] if band == "both" else []
    )
    for kind in wanted:
        b = getattr(result, kind)
        if b is None:
            continue
        colour = _BLUE if kind == "consistency" else _RED
        fill = ax.fill_between(
            b.x,
            b.low,
            b.high,
            color=colour,
            alpha=0.15 if kind == "consistency" else 0.12,
            lw=0,
            label=f"{b.level:.0%} {kind} band",
            zorder=2,
        )
        fill.set_gid(f"calibkit-{kind}")

    x, y = _curve(result)
    (line,) = ax.plot(x, y, color=_RED, lw=1.0, label="CORP (isotonic recalibration)", zorder=4)
    line.set_gid("calibkit-corp")
    steps = ax.hlines(y[0::2], x[0::2], x[1::2], colors=_RED, linewidths=2.5, zorder=4)
    steps.set_gid("calibkit-corp-blocks")

    ax.set_xlim(-0.03, 1.03)
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("forecast")
    ax.set_ylabel("recalibrated probability (CEP)")
    ax.set_title(_title(result, title), fontsize=9)
    ax.legend(loc="upper left", fontsize=_SMALL, frameon=False)
    ax.grid(True, lw=0.3, alpha=0.5)

    if histogram:
        ax.tick_params(labelbottom=False)
        ax.xaxis.label.set_visible(False)
        counts_ax = _split_for_histogram(ax)
        counts_ax.set_label("calibkit-counts")
        _draw_histogram(counts_ax, result)
        counts_ax.set_xlabel(ax.get_xlabel())
    return ax


def _draw_histogram(ax: Any, result: CorpResult) -> None:
    from ._figure_parts import LOG_COUNTS_RATIO

    edges = np.linspace(0.0, 1.0, HISTOGRAM_BINS + 1)
    count, _ = np.histogram(result.x, bins=edges, weights=result.count)
    bars = ax.bar(
        edges[:-1], count, width=np.diff(edges), align="edge", color=_BLUE, alpha=0.55,
        edgecolor="white",
    )  # fmt: skip
    for patch in bars:
        patch.set_gid("calibkit-count")
    full = count[count > 0]
    if full.size and full.max() > LOG_COUNTS_RATIO * full.min():
        ax.set_yscale("log")
        ax.set_ylim(0.7, full.max() * 3)
        ax.set_ylabel("count (log)", fontsize=_SMALL)
    else:
        ax.set_ylabel("count", fontsize=_SMALL)
    ax.tick_params(labelsize=_SMALL)
    ax.grid(True, axis="y", lw=0.3, alpha=0.5)
