"""One self-contained HTML report of an audit, a recalibration ledger and decision policies.

The file needs nothing but a browser: no scripts, no fonts, no style sheets or images from
elsewhere. Figures are PNG images embedded as ``data:`` URIs, the style is a small inline
``<style>``, and every piece of text is escaped. It is written atomically: a temporary file in
the same folder, then :func:`os.replace`, so a reader never sees half a report and a failed
write leaves the old file (or none) in place.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import InputError
from .._files import write_atomic
from ..measure.reliability import gap_note

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..audit import Audit
    from ..decide.actions import ActionChoice, ActionsEvaluation
    from ..decide.binary import BinaryPolicyTable
    from ..decide.guarantee import GuaranteeEvaluation, RiskGuarantee
    from ..decide.policy import PolicyTable
    from ..measure.reliability import ReliabilityTable
    from ..recalibrate.ledger import CalibrationLedger

__all__ = ["render_report", "write_report"]

#: Resolution of the embedded figures: 1.5 image pixels per CSS pixel, sharp on most screens.
_DPI = 150
_SCALE = 1.5

_STYLE = """
:root { color-scheme: light; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial,
  sans-serif; color: #1d2125; background: #fff; margin: 0 auto; max-width: 1320px;
  padding: 1.5em 1.5em 3em; }
h1 { font-size: 1.6em; margin: 0 0 .2em; }
h2 { font-size: 1.25em; margin: 2em 0 .5em; padding-bottom: .2em;
  border-bottom: 1px solid #d8dde2; }
p.sub { color: #56606a; margin: 0 0 1em; }
nav { font-size: .92em; margin-bottom: 1em; }
nav a { margin-right: 1.2em; color: #2458a6; }
.verdict { padding: .8em 1em; border-left: 5px solid; border-radius: 3px; margin: 1em 0; }
.verdict.ok { border-color: #2e8540; background: #eef7ef; }
.verdict.off { border-color: #c05d00; background: #fdf3e9; }
table { border-collapse: collapse; margin: .6em 0; font-variant-numeric: tabular-nums; }
th, td { padding: .22em .6em; text-align: right; border-bottom: 1px solid #eceff2;
  vertical-align: top; }
th { background: #f4f6f8; font-weight: 600; border-bottom: 1px solid #c9d0d6; }
td.l, th.l { text-align: left; }
td.indent { padding-left: 2em; }
td.note { text-align: left; color: #4a535c; }
tr.empty td { color: #9aa3ab; }
td.flag { color: #b3261e; font-weight: 600; }
figure { margin: 1em 0; }
.pair { display: flex; flex-wrap: wrap; gap: 0 2em; align-items: flex-start; }
.pair figure { flex: 0 1 auto; }
caption { caption-side: bottom; text-align: left; padding-top: .5em; color: #39424a; }
td.name { white-space: nowrap; }
figure img { max-width: 100%; height: auto; border: 1px solid #eceff2; }
figcaption { font-size: .9em; color: #56606a; max-width: 52em; }
dl { display: grid; grid-template-columns: max-content auto; gap: .25em 1.2em; }
dt { font-weight: 600; }
dd { margin: 0; }
code, pre { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace;
  font-size: .88em; }
pre { background: #f6f8fa; padding: .8em 1em; overflow-x: auto; border-radius: 3px; }
details summary { cursor: pointer; font-weight: 600; }
ul.notes { color: #39424a; padding-left: 1.2em; }
footer { margin-top: 3em; font-size: .85em; color: #7a838c; }
@media print { nav { display: none; } body { max-width: none; } }
"""


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
) -> str:
    """The HTML text of :func:`write_report` (same arguments, without the path)."""
    where = "write_report"
    _check(audit, ledger, policy, record, title, before, after, where=where, stated=stated)
    decisions = _check_decisions(actions, guarantee, binary, where=where)
    if all(x is None for x in (audit, ledger, policy, record, before, stated)) and not decisions:
        raise InputError(
            f"{where}: nothing to report; pass audit= (ck.audit), ledger= "
            "(ck.compare_calibration), policy= (ck.decision_report), stated= "
            "(ck.audit_stated), actions=, guarantee=, binary= or record=."
        )
    what = (
        _what(audit, ledger, policy, binary)
        if stated is None
        else (f"stated confidence of {len({r.group for r in stated.rows})} groups")
    )
    page_title = title if title is not None else f"Calibration report: {what}"
    sections: list[tuple[str, str, str]] = []  # (id, heading, body)
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


# ----------------------------------------------------------------------------- checks


def _target(path: Any) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise InputError(
            f"write_report: path must be a file name (str or Path), got {type(path).__name__}."
        )
    target = Path(path)
    if target.is_dir():
        raise InputError(f"write_report: {str(target)!r} is a folder; give a file name.")
    if not target.parent.is_dir():
        raise InputError(
            f"write_report: the folder {str(target.parent)!r} does not exist; create it first."
        )
    return target


def _check(
    audit: Any,
    ledger: Any,
    policy: Any,
    record: Any,
    title: Any,
    before: Any,
    after: Any,
    *,
    where: str,
    stated: Any = None,
) -> None:
    from ..audit import Audit
    from ..decide.policy import PolicyTable
    from ..measure.reliability import ReliabilityTable
    from ..recalibrate.ledger import CalibrationLedger

    if stated is not None:
        from ..stated.audit import StatedAudit

        if not isinstance(stated, StatedAudit):
            raise InputError(
                f"{where}: stated must be a StatedAudit (from ck.audit_stated(...)), "
                f"got {type(stated).__name__}."
            )
    for value, name, kind, maker in (
        (audit, "audit", Audit, "ck.audit(...)"),
        (ledger, "ledger", CalibrationLedger, "ck.compare_calibration(...)"),
        (policy, "policy", PolicyTable, "ck.decision_report(...) or ck.policy_table(...)"),
    ):
        if value is not None and not isinstance(value, kind):
            raise InputError(
                f"{where}: {name} must be a {kind.__name__} (from {maker}), "
                f"got {type(value).__name__}."
            )
    if record is not None and not isinstance(record, Mapping):
        raise InputError(
            f"{where}: record must be a calibration record (ck.calibration_record or "
            f"ck.read_record), got {type(record).__name__}."
        )
    if title is not None and not isinstance(title, str):
        raise InputError(f"{where}: title must be a str, got {type(title).__name__}.")
    if (before is None) != (after is None):
        raise InputError(f"{where}: pass before= and after= together, or neither.")
    for value, name in ((before, "before"), (after, "after")):
        if value is not None and not isinstance(value, (Audit, ReliabilityTable)):
            raise InputError(
                f"{where}: {name} must be an Audit or a ReliabilityTable of the held-out rows, "
                f"got {type(value).__name__}."
            )


def _check_decisions(actions: Any, guarantee: Any, binary: Any, *, where: str) -> bool:
    """The decision sections are of their kinds; True when any is given."""
    from ..decide.actions import ActionChoice, ActionsEvaluation
    from ..decide.binary import BinaryPolicyTable
    from ..decide.guarantee import GuaranteeEvaluation, RiskGuarantee

    for value, name, kinds, maker in (
        (actions, "actions", (ActionChoice, ActionsEvaluation), "ck.choose_actions(...)"),
        (guarantee, "guarantee", (RiskGuarantee, GuaranteeEvaluation), "ck.guaranteed_threshold"),
        (binary, "binary", (BinaryPolicyTable,), "ck.binary_policy_table(...)"),
    ):
        if value is not None and not isinstance(value, kinds):
            raise InputError(
                f"{where}: {name} must be a {' or '.join(k.__name__ for k in kinds)} (from "
                f"{maker}, or its .evaluate(...) on held-out data), got {type(value).__name__}."
            )
    return any(x is not None for x in (actions, guarantee, binary))


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
    return " ".join(lines) or "The calibration record of an audit."


# ----------------------------------------------------------------------------- sections


def _verdict(audit: Audit) -> str:
    cls = "ok" if audit.within_noise else "off"
    return f'<p class="verdict {cls}">{_e(audit.verdict())}</p>'


def _reliability(audit: Audit) -> str:
    table = audit.table
    fig = _figure_reliability(audit)
    caption = (
        f"Reliability diagram: one dot per non-empty bin (area by count), the gap to the "
        f"diagonal, the {_pct(table.level)} {table.interval} interval of each bin's accuracy, "
        f"and the confidences underneath. M = {audit.n_bins} {table.strategy} bins, "
        f"N = {audit.n:,}."
        if table.interval
        else f"Reliability diagram, M = {audit.n_bins} {table.strategy} bins, N = {audit.n:,}."
    )
    figure = _img(fig, alt="Reliability diagram", caption=caption)
    return f'<div class="pair">\n{figure}\n{_reliability_table(table, kind=audit.kind)}\n</div>'


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
        rows.append("<tr>" + "".join(_td(_e(c)) for c in cells) + "</tr>")
        if r.table is not None and r.n:
            from matplotlib.figure import Figure

            from .figures import reliability_diagram

            fig = Figure(figsize=(5.4, 5.2), layout="constrained")
            reliability_diagram(r.table, ax=fig.add_subplot(), title=f"{name}, {r.source}")
            figure = _img(
                fig,
                alt=f"Reliability diagram, {name}, {r.source}",
                caption=f"{name}, {r.source}: N = {r.n:,}.",
            )
            table = _reliability_table(r.table, kind="top-label")  # a confidence of being right
            parts.append(f'<div class="pair">\n{figure}\n{table}\n</div>')
    summary = (
        "<table>\n<thead><tr>"
        + "".join(_th(_e(h)) for h in head)
        + "</tr></thead>\n<tbody>\n"
        + "\n".join(rows)
        + "\n</tbody>\n</table>"
    )
    return summary + "\n" + "\n".join(parts)


def _reliability_table(table: ReliabilityTable, *, kind: str | None = None) -> str:
    head = ["bin", "count", "mean conf", "accuracy", "gap", "se"]
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
            _td(f"{row.conf:.4f}"),
            _td(f"{row.acc:.4f}"),
            _td(f"{row.gap:+.4f}", "flag" if outside else ""),
            _td(f"{row.se:.4f}"),
        ]
        if table.interval:
            cells.append(_td(_interval(row.ci_low, row.ci_high)))
        rows.append('<tr class="bin">' + "".join(cells) + "</tr>")
    note = (
        f"N = {table.n:,}; {gap_note(kind)}"
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
        ("N", f"{table.n:,}"),
    ]
    edges = ", ".join(f"{e:.6g}" for e in table.edges)
    dl = "".join(f"<dt>{_e(k)}</dt><dd>{_e(val)}</dd>" for k, val in items)
    return f"<dl>{dl}<dt>edges</dt><dd><code>[{_e(edges)}]</code></dd></dl>"


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
    fig = _figure_before_after(before, after)
    n = before.n
    return _img(
        fig,
        alt="Reliability diagrams before and after recalibration",
        caption=f"Reliability of the same {n:,} held-out rows before (left) and after (right) "
        "the calibrator.",
    )


def _policy(policy: PolicyTable) -> str:
    head = ("policy", "threshold", "coverage", "risk", "cost / case", "validation cost")
    rows = [
        "<tr>" + "".join(_td(c, "l" if j == 0 else "") for j, c in enumerate(cells)) + "</tr>"
        for cells in policy.table_rows()
    ]
    notes = "".join(f"<li>{_e(line)}</li>" for line in policy.notes())
    fig = _figure_risk_coverage(policy)
    caption = (
        f"Risk-coverage curve of the {policy.n_eval:,} test cases (act when the confidence "
        "reaches the threshold), with the random and oracle baselines and the thresholds of "
        "the table."
    )
    return (
        f"<p>{_e(policy.header())}</p>\n"
        '<table id="policy-table">\n<thead><tr>'
        + "".join(_th(h, "l" if j == 0 else "") for j, h in enumerate(head))
        + "</tr></thead>\n<tbody>\n"
        + "\n".join(rows)
        + f'\n</tbody>\n</table>\n<ul class="notes">{notes}</ul>\n'
        + _img(fig, alt="Risk-coverage curve", caption=caption)
    )


def _actions(actions: ActionChoice | ActionsEvaluation) -> str:
    """The three actions' table and notes, and their numbers on held-out data when given."""
    from ..decide.actions import ActionsEvaluation

    choice = actions.choice if isinstance(actions, ActionsEvaluation) else actions
    head = ("action", "confidence", "cases", "share", "risk")
    rows = [
        "<tr>" + "".join(_td(c, "l" if j < 2 else "") for j, c in enumerate(cells)) + "</tr>"
        for cells in choice.table_rows()
    ]
    notes = [*choice.notes()]
    if isinstance(actions, ActionsEvaluation):
        notes.append(actions.describe())
    return (
        f"<p>{_e(choice.header())}</p>\n"
        '<table id="actions-table">\n<thead><tr>'
        + "".join(_th(h, "l" if j < 2 else "") for j, h in enumerate(head))
        + "</tr></thead>\n<tbody>\n"
        + "\n".join(rows)
        + "\n</tbody>\n</table>\n"
        + _notes(notes)
    )


def _guarantee(guarantee: RiskGuarantee | GuaranteeEvaluation) -> str:
    """The certified threshold, what the guarantee covers, and its held-out numbers."""
    from ..decide.guarantee import GuaranteeEvaluation

    g = guarantee.guarantee if isinstance(guarantee, GuaranteeEvaluation) else guarantee
    head, body, *_ = str(g).split("\n")
    held_out = [guarantee.describe()] if isinstance(guarantee, GuaranteeEvaluation) else []
    return (
        f'<p id="guarantee-threshold">{_e(head)}<br>{_e(body)}</p>\n'
        + _notes(held_out)
        + f'\n<p class="sub">{_e(g.guarantee)}</p>'
    )


def _binary(table: BinaryPolicyTable) -> str:
    head = (
        "policy",
        "threshold",
        "flagged",
        "false negatives",
        "false positives",
        "cost / case",
        "validation cost",
    )
    rows = [
        "<tr>" + "".join(_td(c, "l" if j == 0 else "") for j, c in enumerate(cells)) + "</tr>"
        for cells in table.table_rows()
    ]
    return (
        f"<p>{_e(table.header())}</p>\n"
        '<table id="binary-table">\n<thead><tr>'
        + "".join(_th(h, "l" if j == 0 else "") for j, h in enumerate(head))
        + "</tr></thead>\n<tbody>\n"
        + "\n".join(rows)
        + "\n</tbody>\n</table>\n"
        + _notes(table.notes())
    )


def _notes(lines: list[str]) -> str:
    return f'<ul class="notes">{"".join(f"<li>{_e(line)}</li>" for line in lines)}</ul>'


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


def _figure_reliability(audit: Audit) -> Figure:
    from matplotlib.figure import Figure

    from .figures import reliability_diagram

    fig = Figure(figsize=(5.4, 5.2), layout="constrained")
    reliability_diagram(audit, ax=fig.add_subplot())
    return fig


def _figure_before_after(
    before: Audit | ReliabilityTable, after: Audit | ReliabilityTable
) -> Figure:
    from .figures import before_after

    return before_after(before, after, titles=("BEFORE", "AFTER"))


def _figure_risk_coverage(policy: PolicyTable) -> Figure:
    from matplotlib.figure import Figure

    from .figures import risk_coverage_plot

    fig = Figure(figsize=(6.4, 4.6), layout="constrained")
    thresholds = {"Chow's rule": policy.chow_threshold, "chosen on validation": policy.choice}
    risk_coverage_plot(policy.curve, ax=fig.add_subplot(), thresholds=thresholds)
    return fig


def _img(fig: Figure, *, alt: str, caption: str) -> str:
    """The figure as an embedded PNG (closed afterwards), with its caption."""
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", dpi=_DPI)
        width, height = (round(x * _DPI / _SCALE) for x in fig.get_size_inches())
    finally:
        _close(fig)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return (
        f'<figure style="max-width: {width}px">\n<img src="data:image/png;base64,{data}" '
        f'width="{width}" height="{height}" alt="{_e(alt)}">\n'
        f"<figcaption>{_e(caption)}</figcaption>\n</figure>"
    )


def _close(fig: Figure) -> None:
    """Release a figure that pyplot may be holding (figures made without pyplot need nothing)."""
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.close(fig)


# ----------------------------------------------------------------------------- writing


# ----------------------------------------------------------------------------- text


def _e(text: Any) -> str:
    """Escape text for HTML. A ``:`` before ``//`` is written as a character reference, so a
    URL inside user text (a model card, a ``$schema``) reads the same on the page but never
    appears in the file as a link a tool might follow: the report holds no URL at all."""
    return html.escape(str(text), quote=True).replace("://", "&#58;//")


def _td(text: str, cls: str = "") -> str:
    return f'<td class="{cls}">{_e(text)}</td>' if cls else f"<td>{_e(text)}</td>"


def _th(text: str, cls: str = "") -> str:
    return f'<th class="{cls}">{_e(text)}</th>' if cls else f"<th>{_e(text)}</th>"


def _pct(level: float) -> str:
    return f"{level * 100:g}%"


def _interval(low: float, high: float) -> str:
    if math.isnan(low) or math.isnan(high):
        return "-"
    return f"[{low:.4f}, {high:.4f}]"
