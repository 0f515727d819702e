"""The sections of the HTML report about decisions: the policy table and its risk-coverage
curve, the three actions, the guaranteed-risk threshold, and a binary model's threshold."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._html_parts import _e, _figure, _notes, _td, _th

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..decide.actions import ActionChoice, ActionsEvaluation
    from ..decide.binary import BinaryPolicyTable
    from ..decide.guarantee import GuaranteeEvaluation, RiskGuarantee
    from ..decide.policy import PolicyTable


def _policy(policy: PolicyTable) -> str:
    head = ("policy", "threshold", "coverage", "risk", "cost / case", "validation cost")
    rows = [
        "<tr>" + "".join(_td(c, "l" if j == 0 else "") for j, c in enumerate(cells)) + "</tr>"
        for cells in policy.table_rows()
    ]
    notes = "".join(f"<li>{_e(line)}</li>" for line in policy.notes())
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
        + _figure(lambda: _figure_risk_coverage(policy), alt="Risk-coverage curve", caption=caption)
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
        f'<p class="verdict">{_e(table.verdict())}</p>\n'
        f"<p>{_e(table.header())}</p>\n"
        '<table id="binary-table">\n<thead><tr>'
        + "".join(_th(h, "l" if j == 0 else "") for j, h in enumerate(head))
        + "</tr></thead>\n<tbody>\n"
        + "\n".join(rows)
        + "\n</tbody>\n</table>\n"
        + _notes(table.notes())
    )


# ----------------------------------------------------------------------------- figures


def _figure_risk_coverage(policy: PolicyTable) -> Figure:
    from matplotlib.figure import Figure

    from .figures import risk_coverage_plot

    fig = Figure(figsize=(6.4, 4.6), layout="constrained")
    thresholds = {"Chow's rule": policy.chow_threshold, "chosen on validation": policy.choice}
    risk_coverage_plot(policy.curve, ax=fig.add_subplot(), thresholds=thresholds)
    return fig
