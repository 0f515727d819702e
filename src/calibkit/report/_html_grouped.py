"""The section of the HTML report that shows an audit by group: the verdict, the table of
groups beside the pooled row, and the small multiples (one reliability diagram per group)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._html_parts import _e, _figure, _notes, _td, _th

if TYPE_CHECKING:
    from ..audit import GroupedAudit


def _grouped(result: GroupedAudit) -> str:
    from ..engines.groups import group_label
    from .grouped import grouped_diagrams

    cls = "off" if result.flagged else "ok"
    head = "".join(_th(h, "l" if i == 0 else "") for i, h in enumerate(result.HEADER))
    flags = [result.is_flagged(g) for g in result.groups] + [False]
    body = "\n".join(
        "<tr>"
        + "".join(
            _td(cell, "l group" if i == 0 else ("flag" if i == len(row) - 1 and flag else ""))
            for i, cell in enumerate(row)
        )
        + "</tr>"
        for flag, row in zip(flags, result.rows(), strict=True)
    )
    table = f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>"
    notes = [result.note()] + [
        f"{group_label(g)}: {text}" for g, texts in result.notes.items() for text in texts
    ]
    figure = _figure(
        lambda: grouped_diagrams(result),
        alt="Reliability diagram of each group",
        caption=(
            f"One reliability diagram per group by {result.by}, on the same axes and the same "
            f"{result.pooled.n_bins} bins: dots per non-empty bin (area by count), the gap to "
            "the diagonal, each bin's interval; groups beyond noise titled in red."
        ),
    )
    return (
        f'<p class="verdict {cls}">{_e(result.verdict())}</p>\n{table}\n{_notes(notes)}\n{figure}'
    )
