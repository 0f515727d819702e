"""Find the JSON object of a language model's reply, in time linear in the reply's length.

The object is the whole reply, else the first fenced block (```` ``` ````) holding one, else the
first ``{`` in the prose at which a JSON object starts. Every candidate is read by the one
bounded reader, :func:`calibkit._json.parse_json`, so nothing deeper than
:data:`calibkit._json.MAX_JSON_DEPTH` levels is parsed and no input raises ``RecursionError``.

Trying the JSON parser at every ``{`` of the prose costs time quadratic in the length of a
brace-heavy reply (every failed try also counts the lines before it, for its message). Instead,
one pass over the reply's brackets and quotes finds, for every ``{``, where the object starting
there would end (its matching ``}``, with strings skipped as the parser would skip them); only
the spans found are parsed. Strings are read from the ``{`` that starts a candidate, so two
candidates may disagree about which quotes open strings; since a backslash outside a string
ends every candidate open at that point (no JSON text has one), at most two such readings are
alive at any point, and the pass stays linear.
"""

from __future__ import annotations

import re
from typing import Any

from .._errors import InputError
from .._json import MAX_JSON_DEPTH, parse_json

__all__ = ["find_object"]

_EVENTS = re.compile(r'[{}\[\]"\\]')
_FENCE_HEAD = re.compile(r"[a-zA-Z]*\s*")
_OBJECT_START = re.compile(r'\{[ \t\n\r]*["}]')
_CLOSES = {"}": "{", "]": "["}


def _dict(text: str) -> dict[str, Any] | None:
    try:
        value = parse_json(text, what="reply", strict=False)
    except InputError:
        return None
    return value if isinstance(value, dict) else None


class _Reading:
    """One reading of the quotes (which ones open strings), with its stack of open brackets."""

    __slots__ = ("escape_at", "in_string", "stack")

    def __init__(self, start: int) -> None:
        self.in_string = False
        self.escape_at = -1
        self.stack: list[tuple[int, str]] = [(start, "{")]


def _spans(text: str) -> tuple[list[int], dict[int, int]]:
    """Every ``{`` of ``text`` and, for those that start a balanced object at most
    :data:`MAX_JSON_DEPTH` deep, the index of its closing ``}``."""
    starts: list[int] = []
    ends: dict[int, int] = {}
    alive: list[_Reading] = []
    for m in _EVENTS.finditer(text):
        p = m.start()
        ch = text[p]
        taken = False
        for r in list(alive):
            if r.in_string:
                escaped = r.escape_at == p - 1
                r.escape_at = -1
                if escaped:
                    continue
                if ch == '"':
                    r.in_string = False
                elif ch == "\\":
                    r.escape_at = p
                continue
            if ch == '"':
                r.in_string = True
            elif ch == "\\":  # never outside a JSON string: every object open here fails
                alive.remove(r)
            elif ch in "{[":
                r.stack.append((p, ch))
                taken = taken or ch == "{"
                if len(r.stack) > MAX_JSON_DEPTH:
                    del r.stack[0]  # the outermost is now too deep to read
            else:
                if r.stack[-1][1] != _CLOSES[ch]:  # a mismatched bracket: none of them is JSON
                    alive.remove(r)
                    continue
                start, kind = r.stack.pop()
                if kind == "{":
                    ends[start] = p
                if not r.stack:
                    alive.remove(r)
        if ch == "{":
            starts.append(p)
            if not taken:
                alive.append(_Reading(p))
    return starts, ends


def _fenced(text: str) -> tuple[dict[str, Any], str] | None:
    """The first fenced block that holds a JSON object (```` ```json ... ``` ````)."""
    pos = 0
    while True:
        opening = text.find("```", pos)
        if opening < 0:
            return None
        head = _FENCE_HEAD.match(text, opening + 3)
        body = head.end() if head else opening + 3
        closing = text.find("```", body)
        if closing < 0:  # no later fence can close either
            return None
        obj = _dict(text[body:closing])
        if obj is not None:
            return obj, text[body:closing]
        pos = closing + 3


def find_object(text: str) -> tuple[dict[str, Any], str] | None:
    """The JSON object of a reply and the text it was read from, or None.

    Examples
    --------
    >>> find_object('Sure. {"answer": "B"} and {"x": 1}')
    ({'answer': 'B'}, '{"answer": "B"}')
    >>> find_object("no {object} here") is None
    True
    """
    s = text.strip()
    if s.startswith("{"):
        obj = _dict(s)
        if obj is not None:
            return obj, s
    if "```" in text:
        found = _fenced(text)
        if found is not None:
            return found
    starts, ends = _spans(text)
    for start in starts:
        end = ends.get(start)
        if end is None or not _OBJECT_START.match(text, start):
            continue
        obj = _dict(text[start : end + 1])
        if obj is not None:
            return obj, text[start : end + 1]
    return None
