"""A :class:`~calibkit.segments.SegmentSearch` in the terminal: the segments carried to the
held-out half (confirmed ones in bold red), the note and the verdict."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from ..segments import SegmentSearch

__all__ = ["render_segments"]


def render_segments(
    result: SegmentSearch, console: Console, *, source: str | None = None, wide: bool = False
) -> None:
    """A header, one row per segment carried to the held-out half, the note, the verdict;
    ``wide`` adds the gap's interval, the p-values and the search half's numbers."""
    names = ", ".join(f.name for f in result.features)
    header = Text.assemble(("calibkit segments", "bold"), f": N = {result.n}, features {names}")
    if source:
        header.append(f", from {source}")
    console.print(header)
    console.print()
    if result.segments:
        longest = max((s.name for s in result.segments), key=len)
        out = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, padding=(0, 1, 0, 0))
        for i, name in enumerate(result.header(wide=wide)):
            if i == 0:  # a long name folds onto a second line, whole
                out.add_column(name, overflow="fold", min_width=min(len(longest), 24))
            else:
                out.add_column(name, justify="right", no_wrap=True)
        rows = result.rows(wide=wide)
        for segment, row in zip(result.segments, rows, strict=True):
            out.add_row(*row, style="bold red" if segment.confirmed else "")
        head = result.header(wide=wide)
        needed = sum(max(len(r[i]) for r in [head, *rows]) + 2 for i in range(len(head)))
        width = console.width
        if wide and needed > width:  # the wide table is printed whole, past the terminal's edge
            console.width = needed
        try:
            console.print(out)
        finally:
            console.width = width
    console.print(result.note())
    console.print()
    console.print(result.verdict())
