"""Rendering results: figures (matplotlib), the self-contained HTML report, terminal tables
(rich). Each renderer imports its library inside the function that draws, so importing this
package costs nothing until one is used."""

from __future__ import annotations

from typing import Any

from .compare import RecordComparison, compare_records
from .figures import (
    before_after,
    cost_curve,
    monitor_plot,
    reliability_diagram,
    risk_coverage_plot,
    save_figure,
)
from .html import render_report, write_report
from .record import (
    RecordTrust,
    calibration_record,
    check_record,
    read_record,
    sign_record,
    verify_record,
    write_record,
)

__all__ = [
    "RecordComparison",
    "RecordTrust",
    "before_after",
    "calibration_record",
    "check_record",
    "compare_records",
    "cost_curve",
    "monitor_plot",
    "read_record",
    "reliability_diagram",
    "render_audit",
    "render_report",
    "risk_coverage_plot",
    "save_figure",
    "sign_record",
    "verify_record",
    "write_record",
    "write_report",
]


def __getattr__(name: str) -> Any:
    if name == "render_audit":
        from .terminal import render_audit

        return render_audit
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
