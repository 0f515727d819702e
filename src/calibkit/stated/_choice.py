"""Reading the option a multiple-choice answer names (:func:`read_choice`), by letter or by the
option's text.

The answer is read in four steps; the first that finds an option decides, and a step that finds
two different options leaves the answer undecided:

1. what the answer explicitly states: the value of an answer key of a JSON object in the reply
   (the keys of :data:`calibkit.stated.parse.ANSWER_KEYS`), and the text after every answer
   marker ("answer is", "answer would be", "answer:", "answer =", optionally "final", and the same
   with "option" or "choice": "the correct option is C") up to the end of its sentence;
2. the answer's first non-empty line;
3. anywhere: a letter in parentheses or brackets ("(B)", "[B]") and a capital letter after "option"
   or "choice" ("option B");
4. anywhere, with ``options`` given: an option's text, in SQuAD's normal form, as a run of whole
   words of the normalised answer.

In steps 1 and 2 a fragment names a letter when it is a letter alone ("B", "(b)", "**B**", "B."),
a letter with a closing mark before more text ("B) Paris", "b. Paris", "C: 42"; the text, when it
is another option's text, names that option too) or, after a marker only, a capital letter and a
space ("The answer is B because"); and it names an option by text when its normal form
(:func:`~calibkit.stated.normalize_answer`), whole or up to its first ",", ";" or "(", is an
option's. Letters are read case-insensitively but in prose ("the answer is a dog" is no letter:
a small letter counts only when a mark or the end follows it). In step 3 letters that are not
options are ignored (prose has capitals); in steps 1 and 2 an answer naming a letter that is not
an option is undecided, with the reason.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Mapping, Sequence

from .._errors import InputError
from ._confidence import ANSWER_KEYS, _get
from ._normalise import normalize_answer
from ._objects import find_object

__all__ = ["option_letters", "read_choice"]

_MARKER_RE = re.compile(
    r"\b(?:final\s+)?(?:answer|option|choice)\b[\s*_]*(?:is\b|would\s+be\b|[:=])[\s*_]*",
    re.IGNORECASE,
)
_SENTENCE_END_RE = re.compile(r"[.!?](?=\s|$)|\n")
_WRAP = "*_\"'`“”‘’ \t"
_ALONE_RE = re.compile(r"[(\[]?([A-Za-z])[)\].:]?")
_LEADING_RE = re.compile(r"[(\[]?([A-Za-z])[)\].:][\s*_]+(.*)", re.DOTALL)
_CAPITAL_RE = re.compile(r"([A-Z])\s+")
_PROSE_RE = re.compile(r"[(\[]([A-Za-z])[)\]]|\b(?:option|choice)\s+([A-Z])\b", re.IGNORECASE)
_CUT_RE = re.compile(r"[,;(]")


def option_letters(options: Sequence[str] | Mapping[str, str] | None, where: str) -> dict[str, str]:
    """Letter -> the option text's normal form (empty without options), checked."""
    if options is None:
        return {}
    if isinstance(options, Mapping):
        pairs = []
        for k, v in options.items():
            if not isinstance(k, str) or len(k.strip()) != 1 or not k.strip().isalpha():
                raise InputError(
                    f"{where}: options key {k!r} is not a letter; give options as a dict "
                    "letter -> text ({'A': 'Paris', 'B': 'Lyon'}) or a list of texts in "
                    "letter order."
                )
            pairs.append((k.strip().upper(), v))
    elif isinstance(options, str) or not isinstance(options, Sequence):
        raise InputError(
            f"{where}: options must be a list of option texts in letter order or a dict "
            f"letter -> text, got {type(options).__name__} {options!r:.60}."
        )
    else:
        if len(options) > 26:
            raise InputError(f"{where}: {len(options)} options; letters A-Z name at most 26.")
        pairs = list(zip(string.ascii_uppercase, options, strict=False))
    if not pairs:
        raise InputError(f"{where}: options is empty; give the options' texts or None.")
    out: dict[str, str] = {}
    seen: dict[str, str] = {}
    for letter, text in pairs:
        if letter in out:
            raise InputError(f"{where}: options name letter {letter} twice.")
        if not isinstance(text, str):
            raise InputError(
                f"{where}: option {letter} is {type(text).__name__} {text!r:.60}, not text."
            )
        norm = normalize_answer(text)
        if not norm:
            raise InputError(
                f"{where}: option {letter} ({text!r}) is empty in SQuAD's normal form "
                "(punctuation and articles removed), so no answer could name it by its text."
            )
        if norm in seen:
            raise InputError(
                f"{where}: options {seen[norm]} and {letter} have the same normal form {norm!r}; "
                "give options that differ."
            )
        seen[norm] = letter
        out[letter] = norm
    return out


def _fragment(frag: str, texts: Mapping[str, str], *, after_marker: bool) -> set[str]:
    """The letters a fragment names (steps 1 and 2)."""
    f = frag.strip(_WRAP).rstrip(".,;:!?").strip(_WRAP)
    found: set[str] = set()
    m = _ALONE_RE.fullmatch(f)
    if m is not None:
        return {m.group(1).upper()}
    rest = None
    m = _LEADING_RE.match(f)
    if m is None and after_marker:
        m = _CAPITAL_RE.match(f)
    if m is not None:
        found.add(m.group(1).upper())
        rest = m.group(2) if m.re is _LEADING_RE else None
    by_text = {v: k for k, v in texts.items()}
    for candidate in (rest,) if rest is not None else (f,):
        for part in {candidate, _CUT_RE.split(candidate, maxsplit=1)[0]}:
            hit = by_text.get(normalize_answer(part))
            if hit is not None:
                found.add(hit)
    return found


def _explicit(text: str, texts: Mapping[str, str]) -> set[str]:
    found: set[str] = set()
    if "{" in text:
        obj = find_object(text)
        if obj is not None:
            has, value, _ = _get(obj[0], ANSWER_KEYS)
            if has and isinstance(value, str | int) and not isinstance(value, bool):
                found |= _fragment(str(value), texts, after_marker=True)
    for m in _MARKER_RE.finditer(text):
        rest = text[m.end() :]
        end = _SENTENCE_END_RE.search(rest)
        found |= _fragment(rest if end is None else rest[: end.start()], texts, after_marker=True)
    return found


def _anywhere(text: str, texts: Mapping[str, str]) -> set[str]:
    found = set()
    for m in _PROSE_RE.finditer(text):
        letter = m.group(1) or m.group(2)
        if m.group(2) is not None and not letter.isupper():
            continue
        found.add(letter.upper())
    return {x for x in found if x in texts} if texts else found


def _contained(text: str, texts: Mapping[str, str]) -> set[str]:
    words = f" {normalize_answer(text)} "
    return {k for k, v in texts.items() if f" {v} " in words}


def read_choice(answer: str, texts: Mapping[str, str]) -> tuple[str | None, str | None]:
    """``(letter, None)``: the letter ``answer`` names, or ``(None, reason)``; ``texts`` from
    :func:`option_letters`."""
    text = unicodedata.normalize("NFKC", answer)
    if not text.strip():
        return None, "empty answer"
    first = next((line for line in text.splitlines() if line.strip()), "")
    steps = (
        lambda: _explicit(text, texts),
        lambda: _fragment(first, texts, after_marker=False),
        lambda: _anywhere(text, texts),
        lambda: _contained(text, texts) if texts else set(),
    )
    for step in steps:
        found = step()
        if len(found) > 1:
            return None, "names options " + ", ".join(sorted(found))
        if found:
            letter = found.pop()
            if texts and letter not in texts:
                return None, (
                    f"names {letter}, which is not an option ({', '.join(sorted(texts))})"
                )
            return letter, None
    return None, "no option letter or option text found"
