"""The section of the HTML report that shows a monitor (ck.monitor): the verdict, one row per
cohort or time window with its ECE, interval, noise floor and change from the reference, and the
figure of ECE over the groups against the no-change band."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from ._html_parts import _e, _figure, _notes, _td, _th

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..monitoring import Monitor


def _monitor(monitor: Monitor) -> str:
    cls = "off" if monitor.flagged else "ok"
    header = monitor.WIDE_HEADER
    head = "".join(_th(h, "l" if i == 0 else "") for i, h in enumerate(header))
    body = "\n".join(
        "<tr>"
        + "".join(
            _td(cell, "l" if i == 0 else ("flag" if i == len(row) - 1 and cell else ""))
            for i, cell in enumerate(row)
        )
        + "</tr>"
        for row in monitor.rows(wide=True)
    )
    table = (
        f'<table id="monitor-table">\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n'
        "</tbody>\n</table>"
    )
    figure = _figure(
        lambda: _figure_monitor(monitor),
        alt=f"ECE by {monitor.by}",
        caption=(
            f"ECE of each group by {monitor.by} with its bootstrap interval, the noise floor "
            f"(grey) and the band of no change from {monitor.reference}; moved groups in red."
        ),
    )
    return (
        f'<p class="verdict {cls}">{_e(monitor.verdict())}</p>\n{table}\n'
        f"{_notes([monitor.note()])}\n{figure}"
    )


def _figure_monitor(monitor: Monitor) -> Figure:
    from .monitor_figure import monitor_plot

    return cast("Figure", monitor_plot(monitor).figure)  # its own Figure, not a SubFigure
