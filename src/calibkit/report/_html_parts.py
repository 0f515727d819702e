"""The pieces every section of the HTML report is made of: escaped text, table cells, numbers
as the report writes them, and figures embedded as PNG ``data:`` URIs."""

from __future__ import annotations

import base64
import html
import io
import math
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure


#: Resolution of the embedded figures: 1.5 image pixels per CSS pixel, sharp on most screens.
_DPI = 150
_SCALE = 1.5


# ----------------------------------------------------------------------------- figures


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


def _notes(lines: list[str]) -> str:
    return f'<ul class="notes">{"".join(f"<li>{_e(line)}</li>" for line in lines)}</ul>'
