"""The pieces every section of the HTML report is made of: escaped text, table cells, numbers
as the report writes them, figures embedded as PNG ``data:`` URIs, and the style rules of the
sections (shared by the page and by the notebook view, which scopes them to its own block)."""

from __future__ import annotations

import base64
import html
import io
import math
import sys
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._errors import CalibkitWarning

if TYPE_CHECKING:
    from matplotlib.figure import Figure


#: Resolution of the embedded figures: 1.5 image pixels per CSS pixel, sharp on most screens.
_DPI = 150
_SCALE = 1.5


#: The style of the sections' elements: (selectors, declarations). The page uses them as they
#: are; a notebook, whose output shares one page with the notebook's own, prefixes each selector.
_SECTION_RULES = (
    (".verdict", "padding: .8em 1em; border-left: 5px solid; border-radius: 3px; margin: 1em 0;"),
    (".verdict.ok", "border-color: #2e8540; background: #eef7ef;"),
    (".verdict.off", "border-color: #c05d00; background: #fdf3e9;"),
    ("p.sub", "color: #56606a; margin: 0 0 1em;"),
    ("table", "border-collapse: collapse; margin: .6em 0; font-variant-numeric: tabular-nums;"),
    (
        "th, td",
        "padding: .22em .6em; text-align: right; border-bottom: 1px solid #eceff2; "
        "vertical-align: top;",
    ),
    ("th", "background: #f4f6f8; font-weight: 600; border-bottom: 1px solid #c9d0d6;"),
    ("td.l, th.l", "text-align: left;"),
    ("td.indent", "padding-left: 2em;"),
    ("td.note", "text-align: left; color: #4a535c;"),
    ("tr.empty td", "color: #9aa3ab;"),
    ("td.flag", "color: #b3261e; font-weight: 600;"),
    ("figure", "margin: 1em 0;"),
    (".pair", "display: flex; flex-wrap: wrap; gap: 0 2em; align-items: flex-start;"),
    (".pair figure", "flex: 0 1 auto;"),
    ("caption", "caption-side: bottom; text-align: left; padding-top: .5em; color: #39424a;"),
    ("td.name", "white-space: nowrap;"),
    ("figure img", "max-width: 100%; height: auto; border: 1px solid #eceff2;"),
    ("figcaption", "font-size: .9em; color: #56606a; max-width: 52em;"),
    ("dl", "display: grid; grid-template-columns: max-content auto; gap: .25em 1.2em;"),
    ("dt", "font-weight: 600;"),
    ("dd", "margin: 0;"),
    (
        "code, pre",
        'font-family: ui-monospace, "DejaVu Sans Mono", Menlo, Consolas, monospace; '
        "font-size: .88em;",
    ),
    ("pre", "background: #f6f8fa; padding: .8em 1em; overflow-x: auto; border-radius: 3px;"),
    ("details summary", "cursor: pointer; font-weight: 600;"),
    ("ul.notes", "color: #39424a; padding-left: 1.2em;"),
    ("p.note", "color: #8a4b00;"),
)


def _section_style(scope: str = "") -> str:
    """The sections' style rules, each selector prefixed by ``scope`` (e.g. ``".calibkit "``).

    >>> _section_style(".calibkit ").splitlines()[7]
    '.calibkit td.l, .calibkit th.l { text-align: left; }'
    """
    return "\n".join(
        ", ".join(f"{scope}{s.strip()}" for s in selectors.split(",")) + " { " + rules + " }"
        for selectors, rules in _SECTION_RULES
    )


# ----------------------------------------------------------------------------- figures


def _figure(draw: Callable[[], Figure], *, alt: str, caption: str) -> str:
    """The figure ``draw()`` makes, embedded by :func:`_img`; or, when it cannot be drawn, a note
    that says why, so that the section's tables still show (a notebook never gets an exception
    from a result it displays). A missing matplotlib names the package to install; any other
    failure is named in the note and raised as a :class:`~calibkit.CalibkitWarning` too.

    >>> def broken():
    ...     raise ImportError("No module named 'matplotlib'", name="matplotlib")
    >>> _figure(broken, alt="a", caption="b")[:-4].split(": ")[1]
    'matplotlib is not installed (pip install matplotlib).'
    """
    try:
        fig = draw()
    except ImportError as exc:
        missing = (exc.name or "matplotlib").split(".")[0]
        return _note(
            f"The figure is not drawn: {missing} is not installed (pip install {missing})."
        )
    except Exception as exc:
        why = f"{type(exc).__name__}: {exc}"
        warnings.warn(f"{alt}: the figure could not be drawn ({why}).", CalibkitWarning, 2)
        return _note(f"The figure is not drawn: {why}.")
    return _img(fig, alt=alt, caption=caption)


def _note(text: str) -> str:
    return f'<p class="note">{_e(text)}</p>'


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
