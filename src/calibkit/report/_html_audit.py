"""The sections of the HTML report that show an audit: the verdict, the reliability diagram
beside its table, the metrics, the binning convention, and a stated-confidence audit per group
and source."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from ..measure.reliability import gap_note
from ._html_parts import _e, _figure, _interval, _pct, _td, _th

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..audit import Audit
    from ..measure.reliability import ReliabilityTable


def _verdict(audit: Audit) -> str:
    cls = "ok" if audit.within_noise else "off"
    return f'<p class="verdict {cls}">{_e(audit.verdict())}</p>'


def _reliability(audit: Audit) -> str:
    figure = _figure(
        lambda: _figure_reliability(audit),
        alt="Reliability diagram",
        caption=_caption(audit.table),
    )
    return (
        f'<div class="pair">\n{figure}\n{_reliability_table(audit.table, kind=audit.kind)}\n</div>'
    )


def _table_reliability(table: ReliabilityTable) -> str:
    """A reliability table on its own (ck.reliability_bins): its diagram beside its rows."""
    figure = _figure(
        partial(_figure_table, table), alt="Reliability diagram", caption=_caption(table)
    )
    return f'<div class="pair">\n{figure}\n{_reliability_table(table)}\n</div>'


def _caption(table: ReliabilityTable) -> str:
    m, n = table.stats.n_bins, table.n
    if not table.interval:
        return f"Reliability diagram, M = {m} {table.strategy} bins, N = {n:,}."
    return (
        f"Reliability diagram: one dot per non-empty bin (area by count), the gap to the "
        f"diagonal, the {_pct(table.level)} {table.interval} interval of each bin's accuracy, "
        f"and the confidences underneath. M = {m} {table.strategy} bins, N = {n:,}."
    )


def _stated(stated: Any) -> str:
    """A summary row per group and source, then each one's reliability diagram and table."""
    head = [
        "group",
        "source",
        "N (excluded)",
        "accuracy",
        "ECE [interval]",
        "noise floor",
        "x0.05",
        "AURC",
    ]
    rows = []
    parts = []
    for r in stated.rows:
        name = " / ".join(r.group)
        ece_text = "-" if r.ece is None else f"{r.ece:.4f} {_interval(r.ece_low, r.ece_high)}"
        cells = [
            name,
            r.source,
            f"{r.n:,} ({r.n_rows - r.n:,})",
            "-" if r.accuracy is None else f"{r.accuracy:.4f}",
            ece_text,
            "-" if r.noise_floor is None else f"{r.noise_floor:.4f}",
            "-" if r.share_multiple_of_05 is None else f"{r.share_multiple_of_05:.0%}",
            "-" if r.aurc is None else f"{r.aurc:.4f}",
        ]
        rows.append("<tr>" + "".join(_td(c) for c in cells) + "</tr>")
        if r.table is not None and r.n:
            figure = _figure(
                partial(_figure_table, r.table, title=f"{name}, {r.source}"),
                alt=f"Reliability diagram, {name}, {r.source}",
                caption=f"{name}, {r.source}: N = {r.n:,}.",
            )
            table = _reliability_table(r.table, kind="top-label")  # a confidence of being right
            parts.append(f'<div class="pair">\n{figure}\n{table}\n</div>')
    summary = (
        "<table>\n<thead><tr>"
        + "".join(_th(h) for h in head)
        + "</tr></thead>\n<tbody>\n"
        + "\n".join(rows)
        + "\n</tbody>\n</table>"
    )
    return summary + "\n" + "\n".join(parts)


def _reliability_table(table: ReliabilityTable, *, kind: str | None = None) -> str:
    weighted = table.stats.weighted
    head = ["bin", "count", *(["weight", "n_eff"] if weighted else []), "mean conf"]
    head += ["accuracy", "gap", "se"]
    if table.interval:
        head.append(f"{_pct(table.level)} {table.interval} interval")
    rows = []
    for label, row in zip(table.bin_labels(), table.rows, strict=True):
        if row.count == 0:
            cells = [_td(label, "l"), _td("0")] + [_td("-")] * (len(head) - 2)
            rows.append('<tr class="bin empty">' + "".join(cells) + "</tr>")
            continue
        outside = table.interval is not None and not (row.ci_low <= row.conf <= row.ci_high)
        cells = [
            _td(label, "l"),
            _td(f"{row.count:,}"),
            *([_td(f"{row.weight:.4g}"), _td(f"{row.n_eff:.4g}")] if weighted else []),
            _td(f"{row.conf:.4f}"),
            _td(f"{row.acc:.4f}"),
            _td(f"{row.gap:+.4f}", "flag" if outside else ""),
            _td(f"{row.se:.4f}"),
        ]
        if table.interval:
            cells.append(_td(_interval(row.ci_low, row.ci_high)))
        rows.append('<tr class="bin">' + "".join(cells) + "</tr>")
    note = (
        f"N = {table.n:,}{_total_weight(table)}; {gap_note(kind)}"
        + (
            f"; a gap in red: the mean confidence lies outside the bin's {_pct(table.level)} "
            "interval"
            if table.interval
            else ""
        )
        + "."
    )
    return (
        f'<table id="reliability-table">\n<caption>{_e(note)}</caption>\n<thead><tr>'
        + "".join(_th(h, "l" if i == 0 else "") for i, h in enumerate(head))
        + "</tr></thead>\n<tbody>\n"
        + "\n".join(rows)
        + "\n</tbody>\n</table>"
    )


def _metrics(audit: Audit) -> str:
    rows = []
    for name, value, note in audit.metric_rows():
        indent = name.startswith(" ")
        rows.append(
            "<tr>"
            + _td(name.strip(), "l name indent" if indent else "l name")
            + _td(value)
            + _td(note, "note")
            + "</tr>"
        )
    return (
        '<table id="metrics-table">\n<thead><tr>'
        + _th("measure", "l")
        + _th("value")
        + _th("interval and notes", "l")
        + "</tr></thead>\n<tbody>\n"
        + "\n".join(rows)
        + "\n</tbody>\n</table>"
    )


def _binning(table: ReliabilityTable) -> str:
    m = table.stats.n_bins
    collapsed = table.requested_bins - m
    closed = (
        "right-closed: a confidence equal to an edge falls in the lower bin, (a, b]; the first "
        "bin also includes 0"
        if table.closed == "right"
        else "left-closed: a confidence equal to an edge falls in the upper bin, [a, b); the "
        "last bin also includes 1"
    )
    strategy = (
        "uniform (equal width)"
        if table.strategy == "uniform"
        else "quantile (equal mass)"
        if table.strategy == "quantile"
        else table.strategy
    )
    ties = f" ({table.requested_bins} requested, {collapsed} collapsed by ties)"
    items = [
        ("M (bins)", f"{m}{ties if collapsed > 0 else ''}"),
        ("strategy", strategy),
        ("closed", closed),
        (
            "interval",
            f"{table.interval}, level {table.level:g}" if table.interval else "none",
        ),
        ("N", f"{table.n:,}{_total_weight(table)}"),
    ]
    edges = ", ".join(f"{e:.6g}" for e in table.edges)
    dl = "".join(f"<dt>{_e(k)}</dt><dd>{_e(val)}</dd>" for k, val in items)
    return f"<dl>{dl}<dt>edges</dt><dd><code>[{_e(edges)}]</code></dd></dl>"


# ----------------------------------------------------------------------------- figures


def _figure_table(table: ReliabilityTable, *, title: str | None = None) -> Figure:
    from matplotlib.figure import Figure

    from .figures import reliability_diagram

    fig = Figure(figsize=(5.4, 5.2), layout="constrained")
    reliability_diagram(table, ax=fig.add_subplot(), title=title)
    return fig


def _figure_reliability(audit: Audit) -> Figure:
    from matplotlib.figure import Figure

    from .figures import reliability_diagram

    if audit.distinct is None:
        fig = Figure(figsize=(5.4, 5.2), layout="constrained")
        reliability_diagram(audit, ax=fig.add_subplot())
        return fig
    from ..measure.corp import with_bands
    from .corp_figure import corp_diagram

    corp = audit.distinct.corp
    # the band resamples every row 100 times; a weighted curve's band would resample the rows
    # with their weights, which the audit does not keep: drawn without it
    if corp.n <= CORP_BAND_ROWS and corp.weight is None:
        corp = with_bands(corp, n_boot=100, seed=audit.seed)
    fig = Figure(figsize=(10.8, 5.2), layout="constrained")
    left, right = fig.subplots(1, 2)
    reliability_diagram(audit, ax=left)
    corp_diagram(corp, ax=right, band="consistency" if corp.consistency else "none")
    return fig


#: The HTML report draws the CORP curve's consistency band up to this many forecasts.
CORP_BAND_ROWS = 200_000


def _total_weight(table: ReliabilityTable) -> str:
    stats = table.stats
    return f" (total weight {stats.total_mass:,.6g})" if stats.weighted else ""
