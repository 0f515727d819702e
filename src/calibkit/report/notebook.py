"""The results users look at, shown in a notebook: the report's own sections, inline.

Leaving ``ck.audit(p, y)`` as the last line of a Jupyter cell shows its verdict, the reliability
diagram beside its table, the metrics and the binning: the HTML of the sections
:func:`~calibkit.report.render_report` writes for the same object, built by the same functions
(``_html_audit``, ``_html_grouped``, ``_html_recalibration``, ``_html_decisions``,
``_html_monitor``), inside one ``<div class="calibkit">`` with the sections' style scoped to
it, so the notebook's own page is not restyled. Nothing is fetched: figures are PNG ``data:``
URIs drawn on a :class:`matplotlib.figure.Figure` (no pyplot, the user's backend untouched) and
closed; every piece of text is escaped. A figure that cannot be drawn leaves a note saying why,
and the tables still show.

The result classes live below this layer, so they cannot import it. They depend on the base
module :mod:`calibkit._display` instead: each ``_repr_html_`` calls ``_display.html(self)``, and
this module registers, when it is imported, the renderer of each class (dependency inversion;
``_display`` imports this module by name the first time a result is shown).

Examples
--------
>>> import numpy as np, calibkit as ck
>>> audit = ck.audit(np.array([0.2, 0.6, 0.8, 0.9]), np.array([0, 1, 1, 1]), n_boot=20, n_sims=20)
>>> page = audit._repr_html_()
>>> page == RENDERERS[ck.Audit](audit), page.count('<tr class="bin'), page.count("<img ")
(True, 15, 1)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._display import register
from ..audit import Audit, GroupedAudit
from ..decide.actions import ActionChoice, ActionsEvaluation
from ..decide.binary import BinaryPolicyTable
from ..decide.guarantee import GuaranteeEvaluation, RiskGuarantee
from ..decide.policy import PolicyTable
from ..measure.reliability import ReliabilityTable
from ..monitoring import Monitor
from ..recalibrate.ledger import CalibrationLedger
from ..stated.audit import StatedAudit
from ._html_audit import _binning, _metrics, _reliability, _stated, _table_reliability, _verdict
from ._html_decisions import _actions, _binary, _guarantee, _policy
from ._html_grouped import _grouped
from ._html_monitor import _monitor
from ._html_parts import _e, _section_style
from ._html_recalibration import _ledger
from .html import _what

__all__ = ["RENDERERS"]

#: The class of the block every result is shown in; the sections' style is scoped to it.
SCOPE = "calibkit"


def _block(heading: str, *parts: str) -> str:
    return (
        f'<div class="{SCOPE}">\n<style>\n{_section_style(f".{SCOPE} ")}\n</style>\n'
        f'<p class="sub"><strong>{_e(heading)}</strong></p>\n' + "\n".join(parts) + "\n</div>"
    )


def _details(summary: str, body: str) -> str:
    return f"<details>\n<summary>{_e(summary)}</summary>\n{body}\n</details>"


def _audit(audit: Audit) -> str:
    return _block(
        f"calibkit audit: {_what(audit, None, None)}",
        _verdict(audit),
        _reliability(audit),
        _details("Metrics", _metrics(audit)),
        _details("Binning convention", _binning(audit.table)),
    )


def _grouped_audit(result: GroupedAudit) -> str:
    return _block(
        f"calibkit audit by {result.by}: {len(result.groups)} groups, N = {result.pooled.n:,}",
        _grouped(result),
    )


def _reliability_table(table: ReliabilityTable) -> str:
    return _block(
        f"Reliability table: M = {table.stats.n_bins} {table.strategy} bins, N = {table.n:,}",
        _table_reliability(table),
        _details("Binning convention", _binning(table)),
    )


def _calibration_ledger(ledger: CalibrationLedger) -> str:
    return _block(_what(None, ledger, None), _ledger(ledger))


def _policy_table(policy: PolicyTable) -> str:
    return _block(_what(None, None, policy), _policy(policy))


def _binary_policy_table(table: BinaryPolicyTable) -> str:
    return _block(_what(None, None, None, table), _binary(table))


def _actions_result(actions: ActionChoice | ActionsEvaluation) -> str:
    return _block("Three actions: act, ask, escalate", _actions(actions))


def _guarantee_result(guarantee: RiskGuarantee | GuaranteeEvaluation) -> str:
    return _block("Guaranteed risk", _guarantee(guarantee))


def _monitor_result(monitor: Monitor) -> str:
    return _block(
        f"Calibration by {monitor.by}: {len(monitor.groups)} groups against {monitor.reference}",
        _monitor(monitor),
    )


def _stated_audit(stated: StatedAudit) -> str:
    groups = len({r.group for r in stated.rows})
    return _block(
        f"Stated confidence of {groups} group{'' if groups == 1 else 's'} by "
        f"{', '.join(stated.group_by) or 'all rows'}, sources {', '.join(stated.sources)}",
        _stated(stated),
    )


#: The renderer of each result class, registered with :mod:`calibkit._display` below.
RENDERERS: dict[type, Callable[[Any], str]] = {
    Audit: _audit,
    GroupedAudit: _grouped_audit,
    ReliabilityTable: _reliability_table,
    CalibrationLedger: _calibration_ledger,
    PolicyTable: _policy_table,
    BinaryPolicyTable: _binary_policy_table,
    ActionChoice: _actions_result,
    ActionsEvaluation: _actions_result,
    RiskGuarantee: _guarantee_result,
    GuaranteeEvaluation: _guarantee_result,
    Monitor: _monitor_result,
    StatedAudit: _stated_audit,
}


def _register() -> None:
    for cls, renderer in RENDERERS.items():
        register(cls, renderer)


_register()
