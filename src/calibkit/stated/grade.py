"""Graders: whether a language model's answer is right, and which grader said so.

Every label an audit reads from a grader is a :class:`Grade`, which names the grader that
produced it (with its settings), so an audit can say where its labels came from.

The deterministic graders, each ``grade_x(answer, gold, ...) -> Grade``:

- :func:`grade_choice`: multiple choice, by letter or by option text;
- :func:`grade_exact`: exact match in SQuAD's normal form (:func:`normalize_answer`);
- :func:`grade_f1`: SQuAD's token F1, correct at a threshold;
- :func:`grade_numeric`: the number the answer gives, within a tolerance;
- :func:`grade_regex`: a regular expression found in the answer.

:func:`calibkit.stated.graders.grade_many` grades a column of answers with one of them, picked
by name or given as any callable ``(answer, gold) -> Grade``.
"""

from __future__ import annotations

import math
import numbers
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._errors import InputError
from ._choice import option_letters, read_choice
from ._normalise import _string, normalize_answer
from ._numeric import read_number

__all__ = [
    "Grade",
    "grade_choice",
    "grade_exact",
    "grade_f1",
    "grade_numeric",
    "grade_regex",
    "normalize_answer",
]


@dataclass(frozen=True)
class Grade:
    """One grader's verdict on one answer.

    ``correct`` is None when the grader could not decide (``reason`` says why: no answer found,
    a judge reply that could not be read); ``score`` is the grader's graded score where it has
    one (token F1), and ``grader`` names the grader and its settings.

    Examples
    --------
    >>> g = Grade(True, "exact_match")
    >>> bool(g), g.to_dict()
    (True, {'correct': True, 'grader': 'exact_match', 'score': None, 'reason': None})
    """

    correct: bool | None
    grader: str
    score: float | None = None
    reason: str | None = None

    def __bool__(self) -> bool:
        return bool(self.correct)

    def to_dict(self) -> dict[str, Any]:
        return {
            "correct": self.correct,
            "grader": self.grader,
            "score": self.score,
            "reason": self.reason,
        }


def _golds(gold: Any, where: str) -> list[str]:
    """A gold text, or a non-empty list of acceptable ones, each non-empty when normalised."""
    if gold is None:
        raise InputError(f"{where}: gold is missing (None); give the right answer's text.")
    items = [gold] if isinstance(gold, str) else gold
    if not isinstance(items, Iterable) or isinstance(items, Mapping):
        raise InputError(
            f"{where}: gold must be a string or a list of acceptable strings, got "
            f"{type(gold).__name__} {gold!r:.60}."
        )
    out = []
    for g in items:
        text = _string(g, where, "each gold")
        norm = normalize_answer(text)
        if not norm:
            raise InputError(
                f"{where}: gold {text!r} is empty in SQuAD's normal form (punctuation and "
                "articles removed), so no answer could match it; grade it with grade_regex."
            )
        out.append(norm)
    if not out:
        raise InputError(f"{where}: gold is an empty list; give at least one acceptable answer.")
    return out


def grade_choice(
    answer: str, gold: str, *, options: Sequence[str] | Mapping[str, str] | None = None
) -> Grade:
    """Grade a multiple-choice answer named by its letter or by its option's text.

    The answer is read as :mod:`calibkit.stated._choice` says: first what it explicitly states
    (a JSON answer key, "Answer: b", "the answer is (B)."), then its first line ("B", "(B)",
    "B) Paris", "Paris"), then letters in parentheses or after "option" anywhere, then option
    texts anywhere. An answer naming two different options is undecided (``correct`` None, the
    reason names the letters), as is one naming none.

    Parameters
    ----------
    answer : str
        The model's answer.
    gold : str
        The right option: its letter, or (with ``options``) its text.
    options : list of str or dict, optional
        The options' texts in letter order (A, B, ...), or a dict letter -> text. Without them
        only letters are read, and any letter A-Z counts.

    Returns
    -------
    Grade
        Grader ``"choice(letters)"``, or ``"choice(letters+texts)"`` with ``options``.

    Examples
    --------
    >>> from calibkit.stated import grade_choice
    >>> grade_choice("The answer is (B).", "B").correct
    True
    >>> grade_choice("Lyon", "Paris", options=["Paris", "Lyon"]).correct
    False
    >>> grade_choice("Either (A) or (B), hard to say.", "B").reason
    'names options A, B'
    """
    where = "grade_choice"
    text = _string(answer, where, "answer")
    texts = option_letters(options, where)
    name = "choice(letters+texts)" if texts else "choice(letters)"
    if gold is None:
        raise InputError(f"{where}: gold is missing (None); give the right option's letter.")
    g = _string(gold, where, "gold").strip().strip("()[]. ")
    if len(g) == 1 and g.isalpha() and (not texts or g.upper() in texts):
        right = g.upper()
    else:
        hit = [k for k, v in texts.items() if v == normalize_answer(gold)]
        if not hit:
            known = f" nor one of the options' texts ({', '.join(sorted(texts))})" if texts else ""
            raise InputError(
                f"{where}: gold {gold!r} is neither an option letter{known}; give the letter "
                "(A, B, ...) or, with options=, the right option's text."
            )
        right = hit[0]
    letter, reason = read_choice(text, texts)
    if letter is None:
        return Grade(None, name, reason=reason)
    return Grade(letter == right, name, reason=None if letter == right else f"names {letter}")


def grade_exact(answer: str, gold: str | Sequence[str]) -> Grade:
    """Grade by exact match of the normal forms (:func:`normalize_answer`, SQuAD's).

    Parameters
    ----------
    answer : str
        The model's answer.
    gold : str or list of str
        The right answer, or several acceptable ones (any may match).

    Returns
    -------
    Grade
        Grader ``"exact(squad)"``; ``score`` 1.0 or 0.0; ``correct`` None for an answer that is
        empty in the normal form.

    Examples
    --------
    >>> from calibkit.stated import grade_exact
    >>> grade_exact("The Eiffel Tower.", ["eiffel tower", "La tour Eiffel"]).correct
    True
    """
    where = "grade_exact"
    text = normalize_answer(_string(answer, where, "answer"))
    golds = _golds(gold, where)
    if not text:
        return Grade(None, "exact(squad)", reason="empty answer")
    hit = text in golds
    return Grade(hit, "exact(squad)", score=float(hit))


def _token_f1(prediction: str, truth: str) -> float:
    """SQuAD v1.1's token F1 of two normal forms."""
    p, t = prediction.split(), truth.split()
    same = sum((Counter(p) & Counter(t)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(t)
    return 2 * precision * recall / (precision + recall)


def _threshold(threshold: Any) -> float:
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, numbers.Real)
        or not 0 < float(threshold) <= 1
    ):
        raise InputError(
            f"grade_f1: threshold must be a number in (0, 1], got {threshold!r}; an answer is "
            "correct when its token F1 is at least the threshold (0.5 is usual)."
        )
    return float(threshold)


def grade_f1(answer: str, gold: str | Sequence[str], *, threshold: float = 0.5) -> Grade:
    """Grade by SQuAD's token F1 (Rajpurkar et al. 2016), the best over the golds.

    The normal forms (:func:`normalize_answer`) are split on white space; with ``c`` the tokens
    the two share (counted with multiplicity), precision is ``c / len(answer tokens)``, recall
    ``c / len(gold tokens)``, and F1 their harmonic mean (0 when nothing is shared).

    Parameters
    ----------
    answer : str
        The model's answer.
    gold : str or list of str
        The right answer, or several acceptable ones (the best F1 counts).
    threshold : float, default 0.5
        The answer is correct when its F1 is at least this, in (0, 1].

    Returns
    -------
    Grade
        Grader ``"f1(squad, threshold=0.5)"``, ``score`` the F1; ``correct`` None for an answer
        that is empty in the normal form.

    Examples
    --------
    >>> from calibkit.stated import grade_f1
    >>> g = grade_f1("the Eiffel Tower in Paris", "Eiffel Tower")
    >>> round(g.score, 4), g.correct   # precision 2/4, recall 2/2
    (0.6667, True)
    """
    where = "grade_f1"
    t = _threshold(threshold)
    name = f"f1(squad, threshold={t:g})"
    text = normalize_answer(_string(answer, where, "answer"))
    golds = _golds(gold, where)
    if not text:
        return Grade(None, name, reason="empty answer")
    f1 = max(_token_f1(text, g) for g in golds)
    return Grade(f1 >= t, name, score=f1)


def _tolerance(value: Any, what: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, numbers.Real)
        or not math.isfinite(value)
        or value < 0
    ):
        raise InputError(
            f"grade_numeric: {what} must be a finite number >= 0, got {value!r}; "
            "for example rel_tol=1e-6 or abs_tol=0.01."
        )
    return float(value)


def _gold_number(gold: Any, where: str) -> float:
    if gold is None:
        raise InputError(f"{where}: gold is missing (None); give the right number.")
    if isinstance(gold, str):
        v = read_number(gold)
        if isinstance(v, str):
            raise InputError(
                f"{where}: gold {gold!r} is not one number ({v}); give it as a number."
            )
        return v
    if isinstance(gold, bool) or not isinstance(gold, numbers.Real) or not math.isfinite(gold):
        raise InputError(
            f"{where}: gold must be a finite number or a string holding one, got "
            f"{type(gold).__name__} {gold!r:.60}."
        )
    return float(gold)


def grade_numeric(
    answer: str, gold: float | str, *, rel_tol: float = 1e-9, abs_tol: float = 0.0
) -> Grade:
    """Grade the number an answer gives against the right number, unit-free.

    The number is read from the answer's final statement by the rules of
    :mod:`calibkit.stated._numeric` ("$1,234.50", "1 234", "12 km", "3.5%" is 3.5, "-7", "1e3",
    "3/4", "1.2 million", digits of any script, "the answer is 42."; not number words). Two
    different numbers there leave the answer undecided. The answer is correct when
    ``math.isclose(number, gold, rel_tol=rel_tol, abs_tol=abs_tol)``.

    Parameters
    ----------
    answer : str
        The model's answer.
    gold : float or str
        The right number, or a string holding exactly one number (read by the same rules).
    rel_tol, abs_tol : float, default 1e-9 and 0
        The tolerances of :func:`math.isclose`, each finite and >= 0.

    Returns
    -------
    Grade
        Grader ``"numeric(rel_tol=1e-09, abs_tol=0)"``, ``score`` the number read.

    Examples
    --------
    >>> from calibkit.stated import grade_numeric
    >>> grade_numeric("The answer is $1,234.50.", 1234.5).correct
    True
    >>> grade_numeric("Either 12 or 13 km.", 12).reason
    'the final statement names 2 different numbers: 12, 13'
    """
    where = "grade_numeric"
    r, a = _tolerance(rel_tol, "rel_tol"), _tolerance(abs_tol, "abs_tol")
    name = f"numeric(rel_tol={r:g}, abs_tol={a:g})"
    text = _string(answer, where, "answer")
    target = _gold_number(gold, where)
    v = read_number(text)
    if isinstance(v, str):
        return Grade(None, name, reason=v)
    return Grade(math.isclose(v, target, rel_tol=r, abs_tol=a), name, score=v)


def grade_regex(answer: str, pattern: str | re.Pattern[str]) -> Grade:
    """Grade by a regular expression searched for in the answer (:func:`re.search`).

    Search, not full match: a model's answer carries words around its answer, so the pattern
    says what must appear and anchors itself (``^...$``, ``\\b``) where it must. The pattern's
    own flags count (``(?i)`` for case-insensitive, or a compiled pattern's flags).

    Parameters
    ----------
    answer : str
        The model's answer.
    pattern : str or re.Pattern
        The gold, as a regular expression; not empty.

    Returns
    -------
    Grade
        Grader ``"regex(search)"``; ``correct`` None for an empty (blank) answer.

    Examples
    --------
    >>> from calibkit.stated import grade_regex
    >>> grade_regex("It was in 1969, I think.", r"\\b1969\\b").correct
    True
    """
    where = "grade_regex"
    text = _string(answer, where, "answer")
    if pattern is None:
        raise InputError(f"{where}: the gold pattern is missing (None); give a regular expression.")
    if isinstance(pattern, re.Pattern):
        compiled = pattern
    else:
        source = _string(pattern, where, "the gold pattern")
        try:
            compiled = re.compile(source)
        except re.error as e:
            raise InputError(
                f"{where}: the gold pattern {source!r} is not a regular expression: {e}."
            ) from None
    if not compiled.pattern:
        raise InputError(f"{where}: the gold pattern is empty, which every answer matches.")
    if not text.strip():
        return Grade(None, "regex(search)", reason="empty answer")
    return Grade(compiled.search(text) is not None, "regex(search)")
