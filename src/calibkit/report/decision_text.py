"""The decisions of a prediction file (:class:`calibkit.decide.Decisions`) in the terminal: the
policy tables as rich tables, the chosen thresholds one paragraph each, and the one-line verdict
of ``calibkit decide --quiet``."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..decide import threshold_text

if TYPE_CHECKING:
    from ..decide import Decisions, PolicyTable

__all__ = [
    "POLICY_COLUMNS",
    "BINARY_COLUMNS",
    "decision_verdict",
    "print_policy",
    "render_decision",
]

#: The columns of a policy table after its "policy" column.
POLICY_COLUMNS = ("threshold", "coverage", "risk", "cost/case", "val. cost")
#: The columns of a binary threshold table after its "policy" column.
BINARY_COLUMNS = ("threshold", "flagged", "FN", "FP", "cost/case", "val. cost")


def decision_verdict(table: PolicyTable) -> str:
    """One line: the threshold chosen on the choosing half and what it does on the other.

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.decide import policy_table
    >>> from calibkit.report.decision_text import decision_verdict
    >>> conf = np.array([0.95, 0.9, 0.8, 0.6])
    >>> t = policy_table(conf, [1, 1, 1, 0], conf, [1, 1, 0, 0], l_wrong=10, l_defer=1)
    >>> decision_verdict(t)  # doctest: +NORMALIZE_WHITESPACE
    'act when confidence >= 0.8 (chosen on 4 cases): cost 2.7500 per case on the other 4,
    coverage 0.7500, risk 0.3333; deferring everything costs 1.0000.'
    """
    row = table.row("chosen")
    risk = "-" if math.isnan(row.risk) else f"{row.risk:.4f}"
    return (
        f"act when confidence >= {threshold_text(row.threshold)} (chosen on "
        f"{table.n} cases): cost {row.cost:.4f} per case on the other {table.n_eval}, "
        f"coverage {row.coverage:.4f}, risk {risk}; deferring everything costs "
        f"{table.row('defer_all').cost:.4f}."
    )


def print_policy(console: Console, table: Any, columns: tuple[str, ...]) -> None:
    """A policy table's header line, its rows as a rich table under ``columns`` (after the
    policy's name), and its notes. ``table`` is a :class:`~calibkit.decide.PolicyTable` or a
    :class:`~calibkit.decide.BinaryPolicyTable`."""
    console.print(table.header())
    grid = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))
    grid.add_column("policy", overflow="fold", min_width=24)
    for name in columns:
        grid.add_column(name, justify="right", no_wrap=True)
    for cells in table.table_rows():
        grid.add_row(*cells)
    console.print(grid)
    console.print()
    for line in table.notes():
        console.print(line)


def render_decision(decisions: Decisions, console: Console) -> None:
    """A header and the split, then each part that was asked for: the policy table, the three
    actions, the guaranteed-risk threshold and the binary threshold table."""
    split = decisions.split
    console.print(Text.assemble(("calibkit decide", "bold"), f": {decisions.source}"))
    weights = ("", "")
    if "weight_choose" in split:
        weights = (
            f" (weight {split['weight_choose']:.6g})",
            f" (weight {split['weight_report']:.6g})",
        )
    console.print(
        f"choosing on {split['n_choose']} rows{weights[0]}, reporting on {split['n_report']}"
        f"{weights[1]} (split by "
        f"{split['stratified_by']}, fraction {split['calibration_fraction']:g}, seed "
        f"{split['seed']})"
    )
    if decisions.table is not None:
        console.print()
        print_policy(console, decisions.table, POLICY_COLUMNS)
    actions = decisions.actions
    if actions is not None:
        console.print()
        console.print(Text("three actions (chosen on the choosing half):", style="bold"))
        console.print(str(actions.choice))
        console.print(actions.describe("the reporting half"))
    guarantee = decisions.guarantee
    if guarantee is not None:
        console.print()
        target = f"target {decisions.target_risk:g}, chosen on the choosing half"
        console.print(Text(f"guaranteed risk ({target}):", "bold"))
        console.print(str(guarantee.guarantee))
        console.print(guarantee.describe("the reporting half"))
    if decisions.binary is not None:
        console.print()
        print_policy(console, decisions.binary, BINARY_COLUMNS)
        console.print(
            "FN: false negatives (y = 1, not flagged); FP: false positives (y = 0, flagged); "
            "flagged when P(y = 1) >= threshold."
        )
