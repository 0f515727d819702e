"""Rendering results: figures (matplotlib), the self-contained HTML report, terminal tables
(rich). Each renderer imports its library inside the function that draws, so importing this
package costs nothing until one is used. (Calibration records live in :mod:`calibkit.record`.)"""

from __future__ import annotations

from typing import Any

from .corp_figure import corp_diagram
from .figures import (
    before_after,
    cost_curve,
    monitor_plot,
    reliability_diagram,
    risk_coverage_plot,
    save_figure,
)
from .html import render_report, write_report
from .selective import generalized_risk_coverage_plot

__all__ = [
    "before_after",
    "corp_diagram",
    "cost_curve",
    "generalized_risk_coverage_plot",
    "monitor_plot",
    "reliability_diagram",
    "render_audit",
    "render_report",
    "risk_coverage_plot",
    "save_figure",
    "write_report",
]


def __getattr__(name: str) -> Any:
    if name == "render_audit":
        from .terminal import render_audit

        return render_audit
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
