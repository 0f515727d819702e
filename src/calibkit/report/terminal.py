"""An :class:`~calibkit.Audit` in the terminal: the reliability table, the metrics, the verdict."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..measure.reliability import gap_note

if TYPE_CHECKING:
    from ..audit import Audit
    from ..monitoring import Monitor
    from ..record.compare import RecordComparison
    from ..stated.audit import StatedAudit
    from ..stated_run import StatedRun

__all__ = [
    "metrics_table",
    "render_comparison",
    "reliability_note",
    "reliability_table",
    "render_audit",
    "render_monitor",
    "render_stated_audit",
    "render_stated_run",
    "stated_verdict_lines",
]

DASH = "-"


def render_audit(audit: Audit, console: Console, *, source: str | None = None) -> None:
    """Print a header line, the reliability table, the metrics table and the verdict.

    ``source`` says where the predictions came from (e.g. ``Predictions.describe()``).
    A bin's gap is red when its mean confidence lies outside its accuracy interval.
    """
    what = (
        f"top-label forecasts of a {audit.n_classes}-class model"
        if audit.kind == "top-label"
        else "binary forecasts"
    )
    header = Text.assemble(("calibkit audit", "bold"), f": N = {audit.n} {what}")
    if source:
        header.append(f", from {source}")
    console.print(header)
    console.print()
    console.print(reliability_table(audit))
    console.print(reliability_note(audit))
    console.print()
    console.print(metrics_table(audit))
    for note in audit.notes:
        console.print(f"note: {note}")
    console.print()
    console.print(audit.verdict())


def reliability_table(audit: Audit) -> Table:
    """The reliability table as a rich Table (empty bins: count 0 and dashes); with sample
    weights, the bin's total weight beside its raw count."""
    table = audit.table
    level = int(round(table.level * 100))
    out = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))
    out.add_column("bin", justify="right", no_wrap=True)
    names = ("count", "weight") if table.weighted else ("count",)
    for name in (*names, "conf", "acc", "gap", "se"):
        out.add_column(name, justify="right", no_wrap=True)
    if table.interval:
        out.add_column(f"{level}% {table.interval}", justify="right", no_wrap=True)
    for label, row in zip(table.bin_labels(), table.rows, strict=True):
        cells: list[str | Text]
        counts = [str(row.count)] + ([f"{row.weight:.4g}"] if row.weight is not None else [])
        if row.empty:
            cells = [label, *counts, DASH, DASH, DASH, DASH]
            if table.interval:
                cells.append(DASH)
            out.add_row(*cells, style="dim")
            continue
        outside = table.interval is not None and not (row.ci_low <= row.conf <= row.ci_high)
        gap = Text(f"{row.gap:+.4f}", style="bold red" if outside else "")
        cells = [label, *counts, f"{row.conf:.4f}", f"{row.acc:.4f}", gap, f"{row.se:.4f}"]
        if table.interval:
            cells.append(_interval(row.ci_low, row.ci_high))
        out.add_row(*cells)
    return out


def reliability_note(audit: Audit) -> str:
    """The line under the reliability table: N, the binning, how to read the gap."""
    table = audit.table
    collapsed = table.requested_bins - audit.n_bins
    ties = f", {collapsed} collapsed by ties" if collapsed > 0 else ""
    total = f" (total weight {table.stats.total_mass:g})" if table.weighted else ""
    note = (
        f"N = {table.n}{total}, M = {audit.n_bins} {table.strategy} bins{ties}, "
        f"{table.closed}-closed; {gap_note(audit.kind)}"
    )
    if table.interval:
        note += f"; red gap: conf outside the {int(round(table.level * 100))}% interval"
    return note


def metrics_table(audit: Audit) -> Table:
    """``audit.metric_rows()`` as a rich Table (values right-aligned)."""
    out = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))
    out.add_column("measure", no_wrap=True)
    out.add_column("value", justify="right", no_wrap=True)
    out.add_column("note")
    for name, value, note in audit.metric_rows():
        out.add_row(name, value, note)
    return out


def _interval(low: float, high: float) -> str:
    if math.isnan(low) or math.isnan(high):
        return DASH
    return f"[{low:.4f}, {high:.4f}]"


def render_monitor(
    monitor: Monitor, console: Console, *, source: str | None = None, wide: bool = False
) -> None:
    """A header, one row per group (moved groups in bold red), the note, the verdict; the
    default table reads at 80 columns, ``wide`` adds the ECE intervals and no-change bands."""
    header = Text.assemble(("calibkit monitor", "bold"), f": {len(monitor.groups)} groups by ")
    header.append(monitor.by)
    if source:
        header.append(f", from {source}")
    console.print(header)
    console.print()
    out = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))
    for i, name in enumerate(monitor.WIDE_HEADER if wide else monitor.HEADER):
        out.add_column(name, justify="left" if i == 0 else "right", no_wrap=True)
    for group, row in zip(monitor.groups, monitor.rows(wide=wide), strict=True):
        out.add_row(*row, style="bold red" if group.moved else "")
    console.print(out)
    console.print(monitor.note())
    console.print()
    console.print(monitor.verdict())


def render_stated_audit(
    result: StatedAudit, console: Console, *, source: str, wide: bool = False
) -> None:
    """The stated-confidence audit: one block per group (its heading, then a row per source),
    which reads at 80 columns; ``wide`` prints one table with every column instead."""
    console.print(Text.assemble(("calibkit stated audit", "bold"), f": {source}"))

    def table(head: tuple[str, ...]) -> Table:
        out = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))
        for i, name in enumerate(head):
            out.add_column(name, justify="left" if i == 0 else "right", no_wrap=True)
        return out

    if wide:
        out = table((*result.group_by, *result.WIDE))
        for r in result.rows:
            out.add_row(*r.group, *result.cells(r, wide=True))
        console.print(out)
    else:
        for group, rows in result.groups():
            console.print()
            console.print(Text(result.heading(group), style="bold"))
            out = table(result.NARROW)
            for r in rows:
                out.add_row(*result.cells(r))
            console.print(out)
    console.print(
        f"ECE with {result.n_bins} bins, {result.n_boot} bootstrap resamples and "
        f"{result.n_sims} noise-floor simulations (seed {result.seed})"
        + ("; 'excl' counts rows with no confidence or one outside [0, 1]." if wide else ".")
        + ("" if wide else " --wide adds Brier, NLL and the stated values' coarseness.")
    )


def render_stated_run(
    result: StatedRun, console: Console, *, decision_set: str, store: str
) -> None:
    """An elicitation run (``calibkit stated run``): what was asked of whom, where the replies
    are stored, how many parsed (and the five commonest reasons the others did not), what this
    run cost, then the audit of the parsed replies."""
    from collections import Counter

    run = result.run
    console.print(
        Text.assemble(
            ("calibkit stated run", "bold"),
            f": {run.provider}:{run.model} on "
            f"{decision_set} ({len(run.results)} items, source {run.source})",
        )
    )
    console.print(
        f"replies stored in {store} (rerunning the same command resumes: stored replies are "
        "not asked again)",
        soft_wrap=True,
    )
    console.print(f"prompt sha256 {run.prompt_hash}, settings {run.settings_hash}")
    console.print(
        f"parsed {result.n_parsed} of {len(run.results)} items ({run.parse_rate:.1%}); "
        f"status {dict(run.status_counts)}"
    )
    for reason, count in Counter(result.reasons).most_common(5):
        console.print(f"  {count} x {reason}", soft_wrap=True)
    console.print(
        f"this run: {run.calls} calls, {run.reused} replies reused, tokens in/out "
        f"{run.input_tokens}/{run.output_tokens}"
    )
    console.print()
    if result.audit is None:
        console.print("no parsed replies: nothing to audit.")
    else:
        source = f"{result.n_parsed} parsed replies (unparsed left out)"
        render_audit(result.audit, console, source=source)


def stated_verdict_lines(result: StatedAudit) -> list[str]:
    """What ``calibkit stated audit --quiet`` prints: per group, the source with the lower ECE
    and whether the intervals tell them apart (or that no group has two sources)."""
    lines = []
    for comp in result.comparisons:
        where = "/".join(comp.group) or "all rows"
        how = "clearly" if comp.clear else "intervals overlap"
        lines.append(f"{where}: {comp.better} has the lower ECE ({how})")
    if not result.comparisons:
        lines.append(f"{len(result.rows)} audit(s); no group has two sources to compare.")
    return lines


def render_comparison(comparison: RecordComparison, console: Console) -> None:
    """Print a comparison with rich: the header, the ECE change against its noise band, the bin
    table (a moved bin in red when it moved away from the diagonal), the notes and the verdict."""
    c = comparison
    pct = f"{c.level * 100:g}"
    console.print(Text("calibkit compare", style="bold"))
    for line in c.header():
        console.print(line)
    console.print()
    ece = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))
    for name in ("", "old", "new", "change", f"{pct}% noise band", "p"):
        ece.add_column(name, justify="right" if name else "left", no_wrap=True)
    ece.add_row(
        "ECE",
        f"{c.ece_old:.4f}",
        f"{c.ece_new:.4f}",
        Text(f"{c.ece_change:+.4f}", style="bold red" if c.moved else ""),
        f"[{c.noise_low:+.4f}, {c.noise_high:+.4f}]",
        f"{c.p_value:.3g}",
    )
    console.print(ece)
    console.print()
    bins = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))
    level = pct
    bins.add_column("bin", justify="right", no_wrap=True)
    bins.add_column("N old", justify="right", no_wrap=True)
    bins.add_column("N new", justify="right", no_wrap=True)
    bins.add_column("gap old -> new", justify="right", no_wrap=True)
    bins.add_column(f"d acc [{level}% CI]", justify="right", no_wrap=True)
    bins.add_column("moved", overflow="fold")
    for k, b in enumerate(c.bins):
        if b.count_old == 0 and b.count_new == 0:
            continue
        if b.compared:
            acc = f"{b.acc_change:+.3f} [{b.acc_low:+.3f}, {b.acc_high:+.3f}]"
            flag = Text("")
            if b.moved:
                away = b.direction == "away from the diagonal"
                flag = Text("away" if away else "toward", style="bold red" if away else "green")
        else:
            acc = "-"
            flag = Text("new" if b.count_old == 0 else "gone", style="dim")
        bins.add_row(
            c.bin_label(k),
            str(b.count_old),
            str(b.count_new),
            f"{_signed(b.gap_old)} -> {_signed(b.gap_new)}",
            acc,
            flag,
        )
    console.print(bins)
    console.print()
    for line in c.notes():
        console.print(line)
    console.print()
    console.print(Text(c.verdict(), style="bold" if c.moved else ""))


def _signed(x: float) -> str:
    return DASH if not math.isfinite(x) else f"{x:+.3f}"
