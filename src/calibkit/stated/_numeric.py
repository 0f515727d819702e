"""Reading the number an answer gives (:func:`read_number`), unit-free, for the numeric grader
and numeric semantic equivalence.

What is read, exactly:

- the text is NFKC-normalised, decimal digits of any script become ASCII digits (the confidence
  parser's mapping), the minus sign U+2212 is "-", the fraction slash U+2044 is "/" and the Arabic
  thousands separator U+066C is ",";
- the *final statement*: the text after the last answer marker ("answer is", "answer would be",
  "answer equals", "answer:", "answer =", each optionally "final answer"; GSM8K's "####"; LaTeX's
  ``\\boxed{...}``, whose contents are the statement), up to the end of its sentence; without a
  marker, the last sentence (ended by ". ", "!", "?" or a line break) that has a digit. The
  statement is cut at its first clause break (";", "(", the words "because", "since", "as",
  "which", or ", " unless another number or "or", "and", "but", "maybe", "perhaps", "possibly"
  follows it), and when it holds "=", only what follows the last "=" is kept: "6 x 7 = 42"
  gives 42;
- in it, each number: an optional sign, an optional currency sign ($ € £ ¥), digits with
  optional comma thousands separators ("1,234,567") or space thousands separators in groups of
  three ("1 234", also a no-break or thin space), an optional decimal point and decimals, an
  optional exponent ("1e3", "2.5E-4"), or a fraction of whole numbers ("3/4" is 0.75), then
  optionally a scale word ("thousand", "million", "billion", "trillion": "1.2 million" is
  1200000). A number glued to a word before it ("CO2", "x2") is not read;
- units and signs after a number are dropped: "12 km" is 12, "3.5%" is 3.5 (not 0.035), "$5k"
  is 5 (a "k" suffix is a unit, not a scale);
- not read: number words ("three": "one" is a pronoun as often as a number), a decimal comma
  ("3,5" reads as the two numbers 3 and 5, so it is undecided), roman numerals.

Two different numbers in the final statement ("12 or 13", "between 3 and 5", "12-13") leave
the answer undecided; the same number twice ("42, i.e. 42.0") is one number.
"""

from __future__ import annotations

import math
import re
import unicodedata

from ._confidence import _normalise as _ascii_digits

__all__ = ["read_number"]

_MARKER_RE = re.compile(
    r"\\boxed\s*\{|####|\b(?:final\s+)?answer\b[\s*_]*(?:is\b|would\s+be\b|equals\b|[:=])",
    re.IGNORECASE,
)
_SENTENCE_END_RE = re.compile(r"[.!?](?=\s|$)|\n")
# a comma before another number or a hedge ("5, or maybe 6") does not end the clause
_CLAUSE_RE = re.compile(
    r",\s(?!\s*(?:[-+$€£¥]?\d|or\b|and\b|maybe\b|perhaps\b|possibly\b|but\b))"
    r"|;|\(|\b(?:because|since|as|which)\b",
    re.IGNORECASE,
)
_SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_NUMBER_RE = re.compile(
    r"(?<![\w.])([-+])?[$€£¥]?\s?"
    r"(\d{1,3}(?:,\d{3})+(?:\.\d+)?"  # 1,234.50
    r"|\d{1,3}(?: \d{3})+(?:\.\d+)?(?!\d)"  # 1 234 (NFKC made every space a space)
    r"|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"  # 12, 3.5, 1e3
    r"|\.\d+)"  # .5
    r"(?:\s*/\s*(\d+))?(?![\d.]\d)"  # 3/4
    r"(?:\s*(thousand|million|billion|trillion)\b)?",
    re.IGNORECASE,
)


def _prepare(text: str) -> str:
    s = _ascii_digits(unicodedata.normalize("NFKC", text))
    return s.replace("\u2212", "-").replace("\u2044", "/").replace("\u066c", ",")


def final_statement(text: str) -> str:
    """The part of ``text`` whose numbers are the answer (see the module's rules)."""
    s = _prepare(text)
    markers = list(_MARKER_RE.finditer(s))
    if markers:
        m = markers[-1]
        rest = s[m.end() :]
        if m.group(0).startswith("\\"):
            close = rest.find("}")
            return rest if close < 0 else rest[:close]
        end = _SENTENCE_END_RE.search(rest)
        statement = rest if end is None else rest[: end.start()]
    else:
        sentences = _SENTENCE_END_RE.split(s)
        with_digit = [x for x in sentences if any(c.isdigit() for c in x)]
        statement = with_digit[-1] if with_digit else ""
    cut = _CLAUSE_RE.search(statement)
    if cut is not None and cut.start() > 0:
        statement = statement[: cut.start()]
    if "=" in statement:
        statement = statement.rsplit("=", 1)[1]
    return statement


def _value(m: re.Match[str]) -> float | str:
    sign, digits, denominator, scale = m.groups()
    x = float(digits.replace(",", "").replace(" ", ""))
    if denominator is not None:
        d = float(denominator)
        if d == 0:
            return f"{m.group(0).strip()!r} divides by zero"
        x /= d
    if scale is not None:
        x *= _SCALES[scale.lower()]
    if sign == "-":
        x = -x
    if not math.isfinite(x):
        return f"{m.group(0).strip()!r} is beyond the range of a float"
    return x


def read_number(text: str) -> float | str:
    """The number the final statement of ``text`` gives, or the reason there is none.

    >>> read_number("The answer is $1,234.50.")
    1234.5
    >>> read_number("I'd say 12 or 13.")
    'the final statement names 2 different numbers: 12, 13'
    """
    statement = final_statement(text)
    values: list[float] = []
    for m in _NUMBER_RE.finditer(statement):
        v = _value(m)
        if isinstance(v, str):
            return v
        if v not in values:
            values.append(v)
    if not values:
        return "no number in the answer"
    if len(values) > 1:
        shown = ", ".join(f"{v:g}" for v in values[:5])
        return f"the final statement names {len(values)} different numbers: {shown}"
    return values[0]
