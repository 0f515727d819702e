"""SQuAD's answer normalisation (Rajpurkar et al. 2016), made explicit about Unicode, and the
input checks the graders share."""

from __future__ import annotations

import re
import string
import unicodedata
from typing import Any

from .._errors import InputError
from ._confidence import _normalise as _ascii_digits

__all__ = ["normalize_answer"]

_ARTICLES_RE = re.compile(r"\b(a|an|the)\b")
_ASCII_PUNCTUATION = frozenset(string.punctuation)


def _is_punctuation(ch: str) -> bool:
    return ch in _ASCII_PUNCTUATION or unicodedata.category(ch).startswith("P")


def normalize_answer(text: str) -> str:
    """An answer in SQuAD's normal form, for exact match and token F1.

    The steps of the SQuAD v1.1 evaluation script (Rajpurkar et al. 2016), after two for Unicode:

    1. NFKC normalisation (full-width letters and digits become ASCII, ligatures are split, a
       no-break space becomes a space), then decimal digits of any script become ASCII digits
       (the confidence parser's mapping: "٤٢" is "42");
    2. lower case (``str.casefold``: the same as SQuAD's ``lower`` on ASCII, and "ß" is "ss");
    3. punctuation removed: ASCII punctuation (``string.punctuation``, as SQuAD, so "$" goes
       too) and every Unicode punctuation character (categories P*: curly quotes, dashes,
       guillemets), with nothing put in its place ("well-known" is "wellknown", as SQuAD);
    4. the English articles "a", "an" and "the" removed as words;
    5. runs of white space collapsed to one space, and the ends stripped.

    Parameters
    ----------
    text : str
        The answer.

    Returns
    -------
    str
        The normal form ("" when nothing is left).

    Examples
    --------
    >>> from calibkit.stated import normalize_answer
    >>> normalize_answer("The  Eiffel Tower!")
    'eiffel tower'
    >>> normalize_answer("“Ｐａｒｉｓ”, France")
    'paris france'
    """
    s = _string(text, "normalize_answer", "text")
    s = _ascii_digits(unicodedata.normalize("NFKC", s)).casefold()
    s = "".join(ch for ch in s if not _is_punctuation(ch))
    s = _ARTICLES_RE.sub(" ", s)
    return " ".join(s.split())


def _string(value: Any, where: str, what: str) -> str:
    """``value`` if it is a string, else a clear InputError."""
    if not isinstance(value, str):
        raise InputError(
            f"{where}: {what} must be a string, got {type(value).__name__} {value!r:.60}; "
            "give the model's answer as text (an unparsed reply has no answer to grade)."
        )
    return value
