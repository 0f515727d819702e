"""A calibration ledger (:class:`calibkit.recalibrate.CalibrationLedger`) in the terminal: the
BEFORE/AFTER table with its notes, the one-line verdict of ``calibkit fit --quiet``, and the
lines of a temperature fitted with an engine (``calibkit fit --engine``)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from ..recalibrate.fit_predictions import ScaleFit
    from ..recalibrate.ledger import CalibrationLedger

__all__ = ["ledger_verdict", "number_text", "render_ledger", "scale_fit_lines"]


def number_text(x: float | None) -> str:
    """A ledger's number with 4 decimals; ``-`` for a missing or non-finite one.

    Examples
    --------
    >>> from calibkit.report.ledger_text import number_text
    >>> number_text(0.123456), number_text(None), number_text(float("inf"))
    ('0.1235', '-', '-')
    """
    return "-" if x is None or not math.isfinite(x) else f"{x:.4f}"


def ledger_verdict(ledger: CalibrationLedger, out: str | Path) -> str:
    """One line: the map, what it did to ECE and NLL on the held-out rows (and whether that was
    worse beyond noise), and where it was written (``out``)."""
    before, after = ledger.before, ledger.after

    def change(name: str) -> str:
        return f"{name} {number_text(before.get(name))} -> {number_text(after.get(name))}"

    floor = ledger.noise_floor_after.mean
    worse = " and ".join(w.instrument for w in ledger.worse)
    weight_eval = getattr(ledger, "weight_eval", None)  # a ledger-like object may have none
    weight = "" if weight_eval is None else f" (weight {weight_eval:.6g})"
    worse_text = f", WORSE beyond noise in {worse}" if worse else ""
    return (
        f"{ledger.describe()}: {change('ECE')} (floor {floor:.4f}), {change('NLL')} on "
        f"{ledger.n_eval} held-out rows{weight}{worse_text}; wrote {out}."
    )


def render_ledger(
    ledger: CalibrationLedger, console: Console, *, source: str, out: str | Path
) -> None:
    """The ledger as rich tables: a header (the map, fitted ``from`` the ``source``), the
    BEFORE/AFTER table (a broken guarantee in bold red), the notes, and where the map went."""
    header = Text.assemble(("calibkit fit", "bold"), f": {ledger.describe()}")
    header.append(f", from {source}")
    console.print(header)
    console.print()
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))
    table.add_column("instrument", no_wrap=True)
    table.add_column("what it measures", overflow="fold")
    table.add_column("BEFORE", justify="right", no_wrap=True)
    table.add_column("AFTER", justify="right", no_wrap=True)
    table.add_column("can the map move it?", overflow="fold")
    broken = set(ledger.broken_guarantees)
    for cells in ledger.table_rows():
        last: str | Text = cells[4]
        if cells[0] in broken:
            last = Text(cells[4], style="bold red")
        table.add_row(cells[0], cells[1], cells[2], cells[3], last)
    console.print(table)
    console.print()
    for line in ledger.notes():
        console.print(Text(line, style="bold red") if line.startswith("WORSE") else line)
    console.print()
    console.print(f"wrote {out}: {ledger.calibrator_name} fitted on {ledger.fitted_on}.")


def scale_fit_lines(fit: ScaleFit, *, source: str, out: str | Path) -> list[str]:
    """What ``calibkit fit --engine`` prints: the temperature, fitted on every row of
    ``source``, and where it went; then the NLL at T = 1 and at T, and the reminder that these
    rows fitted T (``--quiet`` prints the first line only)."""
    c = fit.calibrator
    return [
        f"T = {c.temperature_:.6g} fitted on every row of {source} with --engine "
        f"{fit.engine} ({c.n_evaluations_} aggregations); wrote {out}",
        f"NLL on these rows {c.nll_before_:.5f} at T = 1 -> {c.nll_after_:.5f} at T; "
        f"d NLL / d T = {c.gradient_:.2g}. These rows fitted T: judge it on held-out rows "
        "(calibkit apply, then calibkit audit).",
    ]
