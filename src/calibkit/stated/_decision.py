"""Reading an answer and its confidence from a reply (:func:`parse_decision`): JSON with an
answer key, or "Answer: ... / Confidence: ..." lines; the answer must be one of the options."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from .._errors import InputError
from ._confidence import (
    ANSWER_KEYS,
    CONFIDENCE_KEYS,
    MAX_REPLY_CHARS,
    _distribution,
    _from_value,
    _get,
    _resolve,
    _unreadable,
)
from ._objects import find_object

__all__ = ["decision_reason", "parse_decision"]


# the rest of the line is taken greedily and its trailing blanks stripped in Python: a lazy group
# followed by [ \t]*$ would rescan a long run of blanks once per character
_ANSWER_LINE_RE = re.compile(
    r"^[ \t>*_-]*(?:final\s+)?answer[ \t*_]*[:=][ \t]*(.*)$", re.IGNORECASE | re.MULTILINE
)
_CONF_LINE_RE = re.compile(
    r"^[ \t>*_-]*confidence(?:[ \t_]+(?:level|score))?[ \t*_]*[:=][ \t]*(.*)$",
    re.IGNORECASE | re.MULTILINE,
)


def _norm_opt(x: Any) -> str:
    return " ".join(str(x).split()).casefold()


def _option_map(options: Iterable[Any]) -> dict[str, Any]:
    m: dict[str, Any] = {}
    for o in options:
        k = _norm_opt(o)
        if k in m:
            raise InputError(
                f"parse_decision: options {m[k]!r} and {o!r} are the same after case and "
                "whitespace normalisation; give options that differ."
            )
        m[k] = o
    if not m:
        raise InputError("parse_decision: options is empty; give the allowed answers.")
    return m


def _decide(
    text: str, omap: Mapping[str, Any], scale: Mapping[str, float] | None, max_chars: int
) -> tuple[Any, float] | str:
    """(answer, confidence) or the reason it fails."""
    if not isinstance(text, str):
        return "absent"
    limit = _unreadable(text, max_chars)
    if limit is not None:
        return limit
    found = find_object(text) if "{" in text else None
    if found is not None:
        obj, span = found
        has, ans, _ = _get(obj, ANSWER_KEYS)
        if has:
            if isinstance(ans, bool) or not isinstance(ans, str | int):
                return "not an option"
            key = _norm_opt(ans)
            if key not in omap:
                return "not an option"
            has_c, cv, ck = _get(obj, CONFIDENCE_KEYS)
            if has_c:
                c = _from_value(cv, None, scale)
            else:
                dist = _distribution(obj)
                hit = [k for k in (dist or {}) if _norm_opt(k) == key]
                if len(hit) != 1:
                    return "absent"
                c = _from_value(obj[hit[0]], None, None)
            if not c:
                return c.reason or "absent"
            assert c.value is not None
            return omap[key], c.value
    answers = {m.group(1).strip().strip("*").strip() for m in _ANSWER_LINE_RE.finditer(text)}
    confs = [m.group(1).rstrip(" \t") for m in _CONF_LINE_RE.finditer(text)]
    if not answers:
        return "malformed" if "{" in text else "no answer"
    if len(answers) > 1:
        return "conflicting"
    keys = {_norm_opt(a) for a in answers}
    key = keys.pop()
    if key not in omap:
        return "not an option"
    if not confs:
        return "absent"
    cs = [_from_value(c.strip("* "), None, scale) for c in confs]
    r = _resolve(cs)
    if not r:
        return r.reason or "absent"
    assert r.value is not None
    return omap[key], r.value


def parse_decision(
    reply_text: str,
    options: Iterable[Any],
    *,
    scale: Mapping[str, float] | None = None,
    max_chars: int = MAX_REPLY_CHARS,
) -> tuple[Any, float] | None:
    """``(answer, confidence)`` from a reply, or None.

    Reads strict JSON, JSON in a fenced block or surrounded by prose (extra keys are fine), or
    "Answer: ... / Confidence: ..." lines. The answer must equal one of ``options`` after case and
    whitespace normalisation (nothing fuzzier); the confidence comes from the confidence field
    (parsed by :func:`parse_confidence`'s rules, so "85%" is 0.85) or, with no confidence field,
    from the answer's entry in a per-option distribution. A number only in the reasoning does not
    count. Anything else is None, never a guess (a reply beyond the limits of
    :func:`parse_confidence` included). :func:`parse_batch` and :func:`decision_reason` give
    the reasons.
    """
    r = _decide(reply_text, _option_map(options), scale, max_chars)
    return None if isinstance(r, str) else r


def decision_reason(
    reply_text: str,
    options: Iterable[Any],
    *,
    scale: Mapping[str, float] | None = None,
    max_chars: int = MAX_REPLY_CHARS,
) -> tuple[Any, float] | str:
    """What :func:`parse_decision` reads, or instead of None the reason it reads nothing:
    "no answer", "not an option", "malformed", "conflicting", "absent", "out of range",
    "too long" or "too deep".

    >>> decision_reason("Answer: C\\nConfidence: 0.9", ["A", "B"])
    'not an option'
    """
    return _decide(reply_text, _option_map(options), scale, max_chars)
