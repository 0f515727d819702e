"""Reading one stated confidence (:func:`parse_confidence`): from a JSON object in the reply (a
confidence key or a per-option distribution), else from its free text (numbers near a confidence
word, then words of a verbal scale). The rules are listed in :mod:`calibkit.stated.parse`."""

from __future__ import annotations

import bisect
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._json import MAX_JSON_DEPTH, json_depth
from ._objects import find_object

__all__ = [
    "ANSWER_KEYS",
    "CONFIDENCE_KEYS",
    "DEFAULT_VERBAL_SCALE",
    "MAX_REPLY_CHARS",
    "REASONS",
    "ConfidenceParse",
    "parse_confidence",
]


#: reasons a confidence is not parsed; parse_decision adds "no answer", "not an option", "malformed"
REASONS = ("absent", "out of range", "conflicting", "too long", "too deep")
#: The longest reply the parsers read (characters); a longer one fails with reason "too long".
MAX_REPLY_CHARS = 200_000
#: A convention, not a measurement: change it with ``scale=`` when the prompt defines its own words.
DEFAULT_VERBAL_SCALE: Mapping[str, float] = {
    "absolutely certain": 1.0,
    "completely certain": 1.0,
    "extremely confident": 0.95,
    "very confident": 0.9,
    "highly confident": 0.9,
    "high confidence": 0.9,
    "confident": 0.8,
    "fairly confident": 0.7,
    "reasonably confident": 0.7,
    "moderately confident": 0.6,
    "somewhat confident": 0.6,
    "moderate confidence": 0.6,
    "unsure": 0.5,
    "not very confident": 0.3,
    "low confidence": 0.3,
    "not confident": 0.2,
    "very low confidence": 0.1,
}
CONFIDENCE_KEYS = ("confidence", "confidence_level", "confidence level", "confidence_score")
ANSWER_KEYS = ("answer", "final_answer", "final answer", "choice", "decision")
_NUM = r"(-?(?:\d+(?:\.\d*)?|\.\d+))"
_NUMBER_RE = re.compile(
    r"(?<![\w.])(?:"
    + _NUM
    + r"\s*(?:%|per\s?cent\b)"  # 1 percent
    + r"|"
    + _NUM
    + r"\s+out\s+of\s+10(?!\d|\.\d)"  # 2 N out of 10
    + r"|"
    + _NUM
    + r"\s*/\s*10(?!\d|\.\d)"  # 3 N/10
    + r"|(-?(?:\d+\.\d+|\.\d+))(?!\d|\.\d|\s*/)"  # 4 decimal with a point
    + r"|(-?\d+)(?!\d|\.\d|\s*/)"  # 5 bare integer (only after a label)
    + r"|(nan|inf(?:inity)?)\b"  # 6
    + r")",
    re.IGNORECASE,
)
_CUE_RE = re.compile(
    r"confiden\w*|\bsure\b|\bcertain\w*|\bprobabilit\w*|\blikelihood\b", re.IGNORECASE
)
_LABEL_RE = re.compile(r"confidence[\w ]{0,12}?\**\s*[:=]\**\s*(?:\*\*\s*)?$", re.IGNORECASE)
_NON_ASCII_RE = re.compile(r"[^\x00-\x7f]")
_BEFORE, _AFTER = 25, 60


@dataclass(frozen=True)
class ConfidenceParse:
    """A parsed confidence. Falsy when ``value`` is None; ``reason`` then says why."""

    value: float | None
    source: str | None = None
    form: str | None = None
    reason: str | None = None
    option: str | None = None  # for a distribution: the option whose probability is the value

    def __bool__(self) -> bool:
        return self.value is not None

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready ``dict``.

        >>> ConfidenceParse(0.8, source="80%", form="percent").to_dict()["value"]
        0.8
        """
        return {
            "value": self.value,
            "source": self.source,
            "form": self.form,
            "reason": self.reason,
            "option": self.option,
        }

    def __str__(self) -> str:
        """``0.8 (percent '80%')`` or ``unparsed: <reason>``.

        >>> print(ConfidenceParse(0.8, source="80%", form="percent"))
        0.8 (percent '80%')
        >>> print(ConfidenceParse(None, reason="no number"))
        unparsed: no number
        """
        if self.value is None:
            return f"unparsed: {self.reason or 'absent'}"
        option = f" for option {self.option!r}" if self.option is not None else ""
        return f"{self.value:g} ({self.form or 'number'} {self.source!r}){option}"


def _fail(reason: str, source: str | None = None) -> ConfidenceParse:
    return ConfidenceParse(None, source=source, reason=reason)


def _normalise(text: str) -> str:
    """ASCII digits and %//, one character for one character (indices are preserved)."""
    if not _NON_ASCII_RE.search(text):
        return text
    out = []
    for ch in text:
        if ch.isascii():
            out.append(ch)
            continue
        d = unicodedata.decimal(ch, None)
        if d is not None:
            out.append(str(d))
            continue
        n = unicodedata.normalize("NFKC", ch)
        out.append(n if len(n) == 1 and n in "%/.:=" else ("." if ch == "\u066b" else ch))
    return "".join(out)


def _candidates(norm: str, orig: str) -> list[tuple[int, ConfidenceParse]]:
    found = []
    for m in _NUMBER_RE.finditer(norm):
        g = m.lastindex or 0
        src = orig[m.start() : m.end()]
        label = _LABEL_RE.search(norm, max(0, m.start() - 40), m.start()) is not None
        if g == 6:
            found.append((m.start(), _fail("out of range", src)))
            continue
        x = float(m.group(g))
        if g == 1:
            r = _checked(x / 100.0, src, "percent", ok=0 <= x <= 100)
        elif g == 2:
            r = _checked(x / 10.0, src, "N out of 10", ok=0 <= x <= 10)
        elif g == 3:
            r = _checked(x / 10.0, src, "fraction N/10", ok=0 <= x <= 10)
        elif g == 4:
            if not label and not (-1 <= x <= 1):
                continue  # "pH 7.4", "3.5 cm": not a confidence
            r = _checked(x, src, "decimal", ok=0 <= x <= 1)
        else:
            if not label:
                continue
            r = _checked(x, src, "decimal", ok=0 <= x <= 1)
        found.append((m.start(), r))
    return found


def _checked(v: float, src: str, form: str, *, ok: bool) -> ConfidenceParse:
    if ok and math.isfinite(v):
        return ConfidenceParse(v, source=src, form=form)
    return _fail("out of range", src)


def _resolve(items: list[ConfidenceParse]) -> ConfidenceParse:
    good = [c for c in items if c]
    if good:
        values = {c.value for c in good}
        if len(values) > 1:
            return _fail("conflicting", " | ".join(c.source or "" for c in good))
        if len(good) < len(items):  # a valid and an invalid number near the cue: no guess
            return _fail("conflicting", " | ".join(c.source or "" for c in items))
        return good[0]
    if items:
        return items[0]
    return _fail("absent")


def _verbal_re(scale: Mapping[str, float]) -> re.Pattern[str]:
    phrases = sorted(scale, key=len, reverse=True)
    return re.compile(
        r"\b(" + "|".join(re.escape(p).replace(r"\ ", r"\s+") for p in phrases) + r")\b",
        re.IGNORECASE,
    )


_DEFAULT_VERBAL_RE = _verbal_re(DEFAULT_VERBAL_SCALE)


def _near_a_cue(pos: int, starts: list[int], ends: list[int]) -> bool:
    """Whether ``pos`` lies within _BEFORE characters before a cue's start or within _AFTER after
    its end (cues do not overlap, so starts and ends are both sorted)."""
    i = bisect.bisect_left(starts, pos)
    if i < len(starts) and starts[i] - _BEFORE <= pos:
        return True
    j = bisect.bisect_right(ends, pos)
    return j > 0 and pos <= ends[j - 1] + _AFTER


def _from_text(text: str, scale: Mapping[str, float] | None) -> ConfidenceParse:
    norm = _normalise(text)
    cands = _candidates(norm, text)
    if cands:
        cues = [m.span() for m in _CUE_RE.finditer(norm)]
        if cues:
            starts = [s for s, _ in cues]
            ends = [e for _, e in cues]
            near = [c for pos, c in cands if _near_a_cue(pos, starts, ends)]
        else:
            near = [c for _, c in cands]
        if near:
            return _resolve(near)
    sc = DEFAULT_VERBAL_SCALE if scale is None else scale
    vre = _DEFAULT_VERBAL_RE if scale is None else _verbal_re(sc)
    lower = {k.casefold(): v for k, v in sc.items()}
    words = []
    for m in vre.finditer(norm):
        key = " ".join(m.group(1).split()).casefold()
        v = float(lower[key])
        words.append(_checked(v, text[m.start() : m.end()], "verbal", ok=0 <= v <= 1))
    if words:
        return _resolve(words)
    return _fail("absent")


def _from_value(v: Any, src: str | None, scale: Mapping[str, float] | None) -> ConfidenceParse:
    if isinstance(v, bool) or v is None:
        return _fail("absent", src)
    if isinstance(v, int | float):
        try:
            x = float(v)
        except OverflowError:  # an integer beyond the range of a float
            return _fail("out of range", src)
        if math.isfinite(x) and 0 <= x <= 1:
            return ConfidenceParse(x, source=src if src is not None else repr(v), form="decimal")
        return _fail("out of range", src)
    if isinstance(v, str):
        s = v.strip()
        r = _from_text(s, scale)
        if not r and r.reason == "absent":
            lab = _from_text("confidence: " + s, scale)  # a bare "1" in a confidence field
            if lab or lab.reason != "absent":
                return ConfidenceParse(lab.value, src or s, lab.form, lab.reason)
        return ConfidenceParse(r.value, src if src is not None else r.source, r.form, r.reason)
    return _fail("absent", src)


def _get(obj: Mapping[str, Any], keys: Sequence[str]) -> tuple[bool, Any, str | None]:
    low = {str(k).strip().casefold(): k for k in obj}
    for k in keys:
        if k in low:
            return True, obj[low[k]], low[k]
    return False, None, None


def _distribution(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    d = {
        str(k): v
        for k, v in obj.items()
        if 0 < len(str(k).strip()) <= 3
        and not isinstance(v, bool)
        and (isinstance(v, int | float) or (isinstance(v, str) and _NUMBER_RE.fullmatch(v.strip())))
    }
    return d if len(d) >= 2 else None


def _from_object(
    obj: Mapping[str, Any], span: str, scale: Mapping[str, float] | None
) -> ConfidenceParse:
    has, v, key = _get(obj, CONFIDENCE_KEYS)
    if has:
        m = re.search(r'"' + re.escape(str(key)) + r'"\s*:\s*("[^"]*"|[^,}\s]+)', span)
        return _from_value(v, m.group(1) if m else None, scale)
    dist = _distribution(obj)
    if dist is None:
        return _fail("absent")
    parsed = {k: _from_value(x, None, None) for k, x in dist.items()}
    bad = [p for p in parsed.values() if not p]
    if bad:
        return _fail(bad[0].reason or "out of range", span)
    has_a, ans, _ = _get(obj, ANSWER_KEYS)
    if has_a and isinstance(ans, str):
        for k, p in parsed.items():
            if k.strip().casefold() == ans.strip().casefold():
                return ConfidenceParse(p.value, span, "distribution", option=k)
        return _fail("absent", span)
    top = max(p.value or 0.0 for p in parsed.values())
    tops = [k for k, p in parsed.items() if p.value == top]
    if len(tops) > 1:
        return _fail("conflicting", span)
    return ConfidenceParse(top, span, "distribution", option=tops[0])


def _unreadable(text: str, max_chars: int) -> str | None:
    """ "too long" or "too deep" when the reply is beyond the parsers' limits, else None."""
    if len(text) > max_chars:
        return "too long"
    if "{" not in text or text.count("{") + text.count("[") <= MAX_JSON_DEPTH:
        return None  # too few brackets to nest too deeply: no need to measure
    if json_depth(text) > MAX_JSON_DEPTH:
        return "too deep"
    return None


def parse_confidence(
    text: str | float,
    *,
    scale: Mapping[str, float] | None = None,
    max_chars: int = MAX_REPLY_CHARS,
) -> ConfidenceParse:
    """Parse one stated confidence (see :mod:`calibkit.stated.parse` for every rule).

    Returns a :class:`ConfidenceParse`: ``.value`` in [0, 1] with ``.source`` (the exact substring)
    and ``.form``, or a falsy result with ``.value`` None and ``.reason`` in :data:`REASONS`.
    A JSON object in the text is read first (a confidence key or a per-option distribution);
    otherwise the free text is read. A reply longer than ``max_chars`` characters is not read
    (reason "too long"), nor one whose JSON nests more than 64 levels deep ("too deep").

    >>> parse_confidence('{"a":' * 3000).reason
    'too deep'
    """
    if not isinstance(text, str):
        return _from_value(text, None, scale)
    limit = _unreadable(text, max_chars)
    if limit is not None:
        return _fail(limit)
    if "{" in text:
        found = find_object(text)
        if found is not None:
            r = _from_object(found[0], found[1], scale)
            if r or r.reason != "absent":
                return r
    return _from_text(text, scale)
