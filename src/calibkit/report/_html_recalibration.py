"""The sections of the HTML report about a recalibration: the BEFORE/AFTER ledger, the
reliability of the held-out rows before and after, and the calibration record as JSON."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._errors import InputError
from ._html_parts import _e, _figure, _td, _th

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..audit import Audit
    from ..measure.reliability import ReliabilityTable
    from ..recalibrate.ledger import CalibrationLedger


def _ledger(ledger: CalibrationLedger) -> str:
    head = ("instrument", "what it measures", "BEFORE", "AFTER", "can the map move it?")
    rows = []
    for r in ledger.table_rows():
        indent = r[0].startswith(" ")
        rows.append(
            "<tr>"
            + _td(r[0].strip(), "l indent" if indent else "l")
            + _td(r[1], "l")
            + _td(r[2])
            + _td(r[3])
            + _td(r[4], "note")
            + "</tr>"
        )
    notes = "".join(f"<li>{_e(line)}</li>" for line in ledger.notes())
    return (
        f"<p>{_e(ledger.header())}</p>\n"
        '<table id="ledger-table">\n<thead><tr>'
        + "".join(_th(h, "" if h in ("BEFORE", "AFTER") else "l") for h in head)
        + "</tr></thead>\n<tbody>\n"
        + "\n".join(rows)
        + f'\n</tbody>\n</table>\n<ul class="notes">{notes}</ul>'
    )


def _before_after(before: Audit | ReliabilityTable, after: Audit | ReliabilityTable) -> str:
    n = before.n
    return _figure(
        lambda: _figure_before_after(before, after),
        alt="Reliability diagrams before and after recalibration",
        caption=f"Reliability of the same {n:,} held-out rows before (left) and after (right) "
        "the calibrator.",
    )


def _record(record: Mapping[str, Any], *, where: str) -> str:
    try:
        text = json.dumps(dict(record), indent=2, ensure_ascii=False, default=_json_default)
    except (TypeError, ValueError) as exc:
        raise InputError(
            f"{where}: record must be JSON-ready (a calibration record): {exc}."
        ) from None
    return (
        f"<details>\n<summary>The calibration record: {len(record)} "
        f"field{'' if len(record) == 1 else 's'}, everything needed "
        "to reproduce or challenge this audit (JSON)</summary>\n"
        f'<pre id="record-json">{_e(text)}</pre>\n</details>'
    )


def _json_default(x: Any) -> Any:
    import numpy as np

    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.generic):
        return x.item()
    if isinstance(x, os.PathLike):
        return os.fspath(x)
    raise TypeError(f"{type(x).__name__} is not JSON serializable")


# ----------------------------------------------------------------------------- figures


def _figure_before_after(
    before: Audit | ReliabilityTable, after: Audit | ReliabilityTable
) -> Figure:
    from .figures import before_after

    return before_after(before, after, titles=("BEFORE", "AFTER"))
