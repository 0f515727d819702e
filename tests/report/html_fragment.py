"""Reading an HTML fragment in the tests: tags that must balance, tables by id, embedded PNG
figures decoded, and the sections of a report page."""

from __future__ import annotations

import base64
import io
import re
from html.parser import HTMLParser

VOID = {"img", "br", "meta", "hr", "input", "link", "col", "wbr", "area", "base", "source"}

# ----------------------------------------------------------------------------- reading the HTML


class Fragment(HTMLParser):
    """Tables, images and verdicts of a fragment; raises on a misnested or unclosed element."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.tables: list[tuple[str | None, list[str], list[list[str]]]] = []
        self.images: list[dict[str, str | None]] = []
        self.verdicts: list[str] = []
        self.notes: list[str] = []
        self.texts: list[str] = []
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self._head = False
        self._capture: list[str] | None = None
        self.feed(text)
        self.close()
        assert not self.stack, f"unclosed elements: {self.stack}"

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag not in VOID:
            self.stack.append(tag)
        if tag == "table":
            self.tables.append((a.get("id"), [], []))
        elif tag == "thead":
            self._head = True
        elif tag == "tbody":
            self._head = False
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "img":
            self.images.append(a)
        elif tag == "p" and "verdict" in (a.get("class") or "").split():
            self._capture = self.verdicts
            self.verdicts.append("")
        elif tag == "p" and a.get("class") == "note":
            self.notes.append("")
            self._capture = self.notes

    def handle_endtag(self, tag: str) -> None:
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:]}"
        self.stack.pop()
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            _, head, rows = self.tables[-1]
            if self._head:
                head.extend(self._row)
            else:
                rows.append(self._row)
            self._row = None
        elif tag == "p":
            self._capture = None

    def handle_data(self, data: str) -> None:
        self.texts.append(data)
        if self._cell is not None:
            self._cell.append(data)
        if self._capture is not None:
            self._capture[-1] += data

    def table(self, ident: str | None = None, index: int = 0) -> tuple[list[str], list[list[str]]]:
        found = [(h, r) for i, h, r in self.tables if ident is None or i == ident]
        return found[index]


def png_shapes(frag: Fragment) -> list[tuple[int, ...]]:
    """Decode every embedded image (PNG data URIs only) and return the pixel array shapes."""
    from matplotlib.image import imread

    shapes = []
    for img in frag.images:
        src = img["src"] or ""
        assert src.startswith("data:image/png;base64,"), src[:40]
        data = base64.b64decode(src.split(",", 1)[1], validate=True)
        shapes.append(imread(io.BytesIO(data), format="png").shape)
    return shapes


def assert_self_contained(text: str) -> None:
    assert "<script" not in text and "://" not in text and "@import" not in text
    refs = re.findall(r'(?:src|href)="([^"]*)"', text)
    assert all(r.startswith("data:image/png;base64,") for r in refs)


def report_sections(page: str) -> dict[str, str]:
    """The content of each ``<section id=...>`` of a report page, without its heading."""
    found = re.findall(r'<section id="([^"]+)">\n<h2>[^\n]*</h2>\n(.*?)\n</section>', page, re.S)
    return dict(found)
