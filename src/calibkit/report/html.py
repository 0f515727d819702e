"""One self-contained HTML report of an audit, a recalibration ledger and decision policies.

The file needs nothing but a browser: no scripts, no fonts, no style sheets or images from
elsewhere. Figures are PNG images embedded as ``data:`` URIs, the style is a small inline
``<style>``, and every piece of text is escaped. It is written atomically: a temporary file in
the same folder, then :func:`os.replace`, so a reader never sees half a report and a failed
write leaves the old file (or none) in place.

This module assembles the page; the sections are drawn by ``_html_audit`` (verdict,
reliability, metrics, binning, stated confidence), ``_html_recalibration`` (ledger, BEFORE/AFTER,
the record) and ``_html_decisions`` (policy, actions, guarantee, binary threshold), from the
pieces of ``_html_parts``; the arguments are checked by ``_html_checks``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import InputError
from .._files import write_atomic
from ._html_audit import _binning, _metrics, _reliability, _stated, _verdict
from ._html_checks import _check, _check_decisions, _target
from ._html_decisions import _actions, _binary, _guarantee, _policy
from ._html_grouped import _grouped
from ._html_monitor import _monitor
from ._html_parts import _e, _section_style
from ._html_recalibration import _before_after, _ledger, _record

if TYPE_CHECKING:
    from ..audit import Audit, GroupedAudit
    from ..decide.actions import ActionChoice, ActionsEvaluation
    from ..decide.binary import BinaryPolicyTable
    from ..decide.guarantee import GuaranteeEvaluation, RiskGuarantee
    from ..decide.policy import PolicyTable
    from ..measure.reliability import ReliabilityTable
    from ..monitoring import Monitor
    from ..recalibrate.ledger import CalibrationLedger

__all__ = ["render_report", "write_report"]


_STYLE = (
    """
:root { color-scheme: light; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
  sans-serif; color: #1d2125; background: #fff; margin: 0 auto; max-width: 1320px;
  padding: 1.5em 1.5em 3em; }
h1 { font-size: 1.6em; margin: 0 0 .2em; }
h2 { font-size: 1.25em; margin: 2em 0 .5em; padding-bottom: .2em;
  border-bottom: 1px solid #d8dde2; }
nav { font-size: .92em; margin-bottom: 1em; }
nav a { margin-right: 1.2em; color: #2458a6; }
footer { margin-top: 3em; font-size: .85em; color: #7a838c; }
@media print { nav { display: none; } body { max-width: none; } }
"""
    + _section_style()
    + "\n"
)


def write_report(
    path: str | os.PathLike[str],
    *,
    audit: Audit | None = None,
    ledger: CalibrationLedger | None = None,
    policy: PolicyTable | None = None,
    record: Mapping[str, Any] | None = None,
    title: str | None = None,
    before: Audit | ReliabilityTable | None = None,
    after: Audit | ReliabilityTable | None = None,
    stated: Any = None,
    actions: ActionChoice | ActionsEvaluation | None = None,
    guarantee: RiskGuarantee | GuaranteeEvaluation | None = None,
    binary: BinaryPolicyTable | None = None,
    grouped: GroupedAudit | None = None,
    monitor: Monitor | None = None,
) -> Path:
    """Write one self-contained HTML report and return its path.

    Parameters
    ----------
    path : str or path-like
        The file to write (its folder must exist). It is replaced atomically.
    audit : Audit, optional
        Reliability diagram and table (counts, intervals), every metric, the verdict and the
        binning convention.
    stated : StatedAudit, optional
        A summary row per group and source of a stated-confidence audit (ck.audit_stated), then
        each one's reliability diagram and table.
    ledger : CalibrationLedger, optional
        The BEFORE/AFTER ledger of a calibrator on held-out rows.
    policy : PolicyTable, optional
        The decision policy table and its risk-coverage curve with the thresholds marked.
    actions : ActionChoice or ActionsEvaluation, optional
        The act / ask / escalate thresholds (ck.choose_actions), with their cost and shares on
        held-out data when an evaluation (``choice.evaluate(...)``) is given.
    guarantee : RiskGuarantee or GuaranteeEvaluation, optional
        The guaranteed-risk threshold (ck.guaranteed_threshold), what it covers, and its
        coverage and risk on held-out data when an evaluation is given.
    binary : BinaryPolicyTable, optional
        A binary model's thresholds on P(y = 1) from the costs of its two errors
        (ck.binary_policy_table).
    grouped : GroupedAudit, optional
        An audit by group (``ck.audit(..., by=)``): the table of groups, the flags, and one
        small reliability diagram per group on the same axes. Pass its ``pooled`` audit as
        ``audit=`` to show the audit of all rows too.
    monitor : Monitor, optional
        Calibration over cohorts or time windows (``ck.monitor``): the verdict, a row per group
        with its change from the reference, and ECE over the groups against the no-change band.
    record : CalibrationRecord, optional
        The calibration record, shown as JSON in a collapsed section.
    title : str, optional
        The page title; by default it says what was audited.
    before, after : Audit or ReliabilityTable, optional
        Reliability of the held-out rows before and after the calibrator (the ledger keeps
        numbers, not bins), drawn side by side.

    Returns
    -------
    Path
        The path written.

    Examples
    --------
    >>> import tempfile, pathlib, numpy as np, calibkit as ck
    >>> from calibkit.report.html import write_report
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0, 1, 300); y = (rng.random(300) < p).astype(int)
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> out = write_report(folder / "report.html", audit=ck.audit(p, y, n_boot=50, n_sims=50))
    >>> text = out.read_text(encoding="utf-8")
    >>> text.startswith("<!DOCTYPE html>"), text.count('<tr class="bin')
    (True, 15)
    """
    target = _target(path)
    text = render_report(
        audit=audit,
        ledger=ledger,
        policy=policy,
        record=record,
        title=title,
        before=before,
        after=after,
        stated=stated,
        actions=actions,
        guarantee=guarantee,
        binary=binary,
        grouped=grouped,
        monitor=monitor,
    )
    write_atomic(target, text, where="write_html")
    return target


def render_report(
    *,
    audit: Audit | None = None,
    ledger: CalibrationLedger | None = None,
    policy: PolicyTable | None = None,
    record: Mapping[str, Any] | None = None,
    title: str | None = None,
    before: Audit | ReliabilityTable | None = None,
    after: Audit | ReliabilityTable | None = None,
    stated: Any = None,
    actions: ActionChoice | ActionsEvaluation | None = None,
    guarantee: RiskGuarantee | GuaranteeEvaluation | None = None,
    binary: BinaryPolicyTable | None = None,
    grouped: GroupedAudit | None = None,
    monitor: Monitor | None = None,
) -> str:
    """The HTML text of :func:`write_report` (same arguments, without the path)."""
    where = "write_report"
    _check(audit, ledger, policy, record, title, before, after, where=where, stated=stated)
    decisions = _check_decisions(actions, guarantee, binary, where=where)
    from ..audit import GroupedAudit

    if grouped is not None and not isinstance(grouped, GroupedAudit):
        raise InputError(
            f"{where}: grouped= takes the result of ck.audit(..., by=), not "
            f"{type(grouped).__name__}."
        )
    if monitor is not None:
        from ..monitoring import Monitor

        if not isinstance(monitor, Monitor):
            raise InputError(
                f"{where}: monitor= takes the result of ck.monitor(...), not "
                f"{type(monitor).__name__}."
            )
    given = (audit, ledger, policy, record, before, stated, grouped, monitor)
    if all(x is None for x in given) and not decisions:
        raise InputError(
            f"{where}: nothing to report; pass audit= (ck.audit), ledger= "
            "(ck.compare_calibration), policy= (ck.decision_report), stated= "
            "(ck.audit_stated), grouped= (ck.audit(..., by=)), monitor= (ck.monitor), actions=, "
            "guarantee=, binary= or record=."
        )
    what = (
        f"stated confidence of {len({r.group for r in stated.rows})} groups"
        if stated is not None
        else f"calibration by {monitor.by}, {len(monitor.groups)} groups"
        if monitor is not None and all(x is None for x in (audit, ledger, policy, binary))
        else _what(audit, ledger, policy, binary)
    )
    page_title = title if title is not None else f"Calibration report: {what}"
    sections: list[tuple[str, str, str]] = []  # (id, heading, body)
    if grouped is not None:
        sections.append(("groups", f"Calibration by {grouped.by}", _grouped(grouped)))
    if audit is not None:
        sections.append(("summary", "Verdict", _verdict(audit)))
        event = "the top-label confidence" if audit.kind == "top-label" else "P(label = 1)"
        sections.append(("reliability", f"Reliability of {event}", _reliability(audit)))
        sections.append(("metrics", "Metrics", _metrics(audit)))
        sections.append(("binning", "Binning convention", _binning(audit.table)))
    if ledger is not None or before is not None:
        parts = [] if ledger is None else [_ledger(ledger)]
        if before is not None and after is not None:
            parts.append(_before_after(before, after))
        sections.append(("recalibration", "Recalibration: BEFORE / AFTER", "\n".join(parts)))
    if policy is not None:
        sections.append(("policy", "Decision policy", _policy(policy)))
    if actions is not None:
        sections.append(("actions", "Three actions: act, ask, escalate", _actions(actions)))
    if guarantee is not None:
        sections.append(("guarantee", "Guaranteed risk", _guarantee(guarantee)))
    if binary is not None:
        sections.append(("binary", "Binary threshold on P(y = 1)", _binary(binary)))
    if monitor is not None:
        sections.append(("monitor", f"Calibration by {monitor.by}", _monitor(monitor)))
    if stated is not None:
        sections.append(("stated", "Stated confidence by group and source", _stated(stated)))
    if record is not None:
        sections.append(("record", "Calibration record", _record(record, where=where)))

    from .._version import __version__

    nav = " ".join(f'<a href="#{sid}">{_e(head)}</a>' for sid, head, _ in sections)
    body = "\n".join(
        f'<section id="{sid}">\n<h2>{_e(head)}</h2>\n{content}\n</section>'
        for sid, head, content in sections
    )
    sub = _detail(audit, ledger, policy, binary)
    if monitor is not None and sub == _NO_DETAIL:
        sub = (
            f"ECE of each group by {monitor.by}, compared with {monitor.reference} over the "
            f"same bins."
        )
    if stated is not None and audit is None and ledger is None and policy is None:
        sub = (
            f"Confidences stated by language models, audited per group "
            f"({', '.join(stated.group_by) or 'all rows'}) and source "
            f"({', '.join(stated.sources)}); {stated.n_bins} equal-width bins."
        )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(page_title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n"
        f'<header>\n<h1>{_e(page_title)}</h1>\n<p class="sub">{_e(sub)}</p>\n'
        f"<nav>{nav}</nav>\n</header>\n"
        f"{body}\n"
        f"<footer>Written by calibkit {_e(__version__)}. This file is self-contained: it "
        "fetches nothing and runs no scripts.</footer>\n</body>\n</html>\n"
    )


# ----------------------------------------------------------------------------- words


def _what(
    audit: Audit | None, ledger: CalibrationLedger | None, policy: Any, binary: Any = None
) -> str:
    """What was audited, in words (the page title and the first line)."""
    if audit is not None:
        if audit.kind == "top-label":
            return f"top-label confidence of a {audit.n_classes}-class model, N = {audit.n:,}"
        return f"binary forecasts P(label = 1), N = {audit.n:,}"
    if ledger is not None:
        return f"{ledger.describe()}, judged on {ledger.n_eval:,} held-out rows"
    if policy is not None:
        return f"a decision policy on {policy.n_eval:,} test cases"
    if binary is not None:
        return f"a binary decision on P(y = 1), {binary.n_eval:,} test cases"
    return "a calibration record"


def _detail(
    audit: Audit | None, ledger: CalibrationLedger | None, policy: Any, binary: Any = None
) -> str:
    """The line under the title: what the numbers are about, in a sentence per result."""
    lines = []
    if audit is not None:
        if audit.kind == "top-label":
            lines.append(
                f"{audit.n:,} predictions of a {audit.n_classes}-class model, read top-label: "
                "the confidence is the largest class probability, the outcome whether the "
                "predicted class was right."
            )
        else:
            lines.append(
                f"{audit.n:,} binary forecasts: the confidence is P(label = 1), the outcome "
                "the label."
            )
    if ledger is not None:
        lines.append(
            f"Recalibration by {ledger.describe()}: fitted on {ledger.fitted_on}; judged on "
            f"{ledger.judged_on}."
        )
    if policy is not None:
        lines.append(
            f"Decision policy: thresholds chosen on {policy.n:,} validation cases, "
            f"reported on {policy.n_eval:,} test cases."
        )
    if binary is not None:
        lines.append(
            f"Binary threshold on P(y = 1): chosen on {binary.n:,} validation cases, "
            f"reported on {binary.n_eval:,} test cases."
        )
    return " ".join(lines) or _NO_DETAIL


_NO_DETAIL = "The calibration record of an audit."
