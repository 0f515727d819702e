"""An audit by group (:class:`~calibkit.GroupedAudit`) in the terminal and as a figure: the
table of groups (flagged groups in bold red), and one small reliability diagram per group on the
same axes (small multiples)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from rich.console import Console

    from ..audit import GroupedAudit

__all__ = ["grouped_diagrams", "render_grouped"]

#: Small diagrams per row of the figure.
COLUMNS = 4


def render_grouped(result: GroupedAudit, console: Console, *, source: str | None = None) -> None:
    """A header, one row per group and one for all rows, the note, the groups' notes and the
    verdict."""
    from rich.text import Text

    from ..engines.groups import group_label

    header = Text.assemble(("calibkit audit", "bold"), f": {len(result.groups)} groups by ")
    header.append(result.by)
    header.append(f", N = {result.pooled.n}")
    if source:
        header.append(f", from {source}")
    console.print(header)
    console.print()
    # the table's lines whole (soft wrap), never cut to fit the terminal: every number reads
    head, *lines = result.table_lines()
    console.print(Text(head, style="bold"), soft_wrap=True)
    flags = [result.is_flagged(g) for g in result.groups] + [False]
    for flagged, line in zip(flags, lines, strict=True):
        console.print(Text(line, style="bold red" if flagged else ""), soft_wrap=True)
    console.print(result.note())
    for g, texts in result.notes.items():
        for text in texts:
            console.print(f"note: {group_label(g)}: {text}", soft_wrap=True)
    console.print()
    console.print(result.verdict())


def grouped_diagrams(result: GroupedAudit) -> Figure:
    """One small reliability diagram per group (its ECE and N in the title, flagged groups
    titled in red), all on the same axes (confidence and observed frequency from 0 to 1, shared).

    Examples
    --------
    >>> import numpy as np, calibkit as ck
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0, 1, 600); y = (rng.random(600) < p).astype(int)
    >>> fig = grouped_diagrams(ck.audit(p, y, by=np.repeat([1, 2, 3], 200), n_boot=50, n_sims=50))
    >>> len(fig.axes), fig.axes[0].get_ylim() == fig.axes[2].get_ylim()
    (3, True)
    """
    from matplotlib.figure import Figure

    from ..engines.groups import group_label
    from .figures import reliability_diagram

    k = len(result.groups)
    cols = min(COLUMNS, k)
    rows = math.ceil(k / cols)
    fig = Figure(figsize=(2.9 * cols, 3.0 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, sharex=True, sharey=True, squeeze=False).ravel()
    for i, (ax, (g, a)) in enumerate(zip(axes, result.groups.items(), strict=False)):
        reliability_diagram(a.table, ax=ax, histogram=False)
        legend = ax.get_legend()
        if i > 0 and legend is not None:  # one legend, on the first diagram
            legend.remove()
        flagged = result.is_flagged(g)
        ax.set_title(
            f"{group_label(g)}{' (beyond noise)' if flagged else ''}\n"
            f"ECE {a.ece:.3f}, floor {a.noise_floor.mean:.3f}, N = {a.n:,}",
            fontsize=8,
            color="#b3261e" if flagged else "#1d2125",
        )
        ax.set_xlabel("")
        ax.set_ylabel("")
    for ax in axes[k:]:
        ax.set_visible(False)
    fig.supxlabel("mean confidence", fontsize=9)
    fig.supylabel("observed frequency", fontsize=9)
    return fig
