"""The graders by name, and grading a column of answers at once (:func:`grade_many`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, Protocol

from .._errors import InputError
from .grade import (
    Grade,
    _threshold,
    _tolerance,
    grade_choice,
    grade_exact,
    grade_f1,
    grade_numeric,
    grade_regex,
)

__all__ = ["GRADERS", "Grader", "grade_many", "make_grader"]


class Grader(Protocol):
    """What :func:`grade_many` calls for each row: ``grader(answer, gold) -> Grade``."""

    def __call__(self, answer: str, gold: Any, /) -> Grade: ...


#: The graders :func:`grade_many` and :func:`make_grader` know by name, with their settings.
GRADERS: Mapping[str, tuple[Callable[..., Grade], tuple[str, ...]]] = {
    "choice": (grade_choice, ("options",)),
    "exact": (grade_exact, ()),
    "f1": (grade_f1, ("threshold",)),
    "numeric": (grade_numeric, ("rel_tol", "abs_tol")),
    "regex": (grade_regex, ()),
}


def make_grader(name: str, **settings: Any) -> Grader:
    """The grader called ``name`` (a key of :data:`GRADERS`) with its settings fixed.

    Examples
    --------
    >>> from calibkit.stated import make_grader
    >>> make_grader("f1", threshold=0.8)("Eiffel Tower", "the Eiffel Tower").grader
    'f1(squad, threshold=0.8)'
    """
    if name not in GRADERS:
        raise InputError(
            f"make_grader: no grader {name!r}; the graders are {', '.join(GRADERS)}, or give "
            "a callable (answer, gold) -> Grade."
        )
    fn, allowed = GRADERS[name]
    unknown = sorted(set(settings) - set(allowed))
    if unknown:
        takes = ", ".join(allowed) if allowed else "no settings"
        raise InputError(f"make_grader: grader {name!r} takes {takes}, not {', '.join(unknown)}.")
    if "threshold" in settings:
        _threshold(settings["threshold"])
    for k in ("rel_tol", "abs_tol"):
        if k in settings:
            _tolerance(settings[k], k)
    return partial(fn, **settings)


def _per_row(options: Any, n: int) -> bool:
    return (
        isinstance(options, Sequence)
        and not isinstance(options, str)
        and len(options) == n
        and n > 0
        and all(isinstance(o, Sequence | Mapping) and not isinstance(o, str) for o in options)
    )


def grade_many(
    answers: Sequence[str],
    golds: Sequence[Any],
    grader: str | Grader = "exact",
    **settings: Any,
) -> list[Grade]:
    """Grade a column of answers against a column of golds, row by row.

    Parameters
    ----------
    answers, golds : sequence
        One answer and its gold per row (for ``"regex"`` the gold is the pattern).
    grader : str or callable, default "exact"
        A name in :data:`GRADERS` ("choice", "exact", "f1", "numeric", "regex") or a callable
        ``(answer, gold) -> Grade``.
    **settings
        The named grader's settings (``threshold=``, ``rel_tol=``, ...). For ``"choice"``,
        ``options=`` is one set of options for every row or a list of one set per row (a list,
        as long as ``answers``, whose every entry is a list or a dict).

    Returns
    -------
    list of Grade
        One per row. A row the grader refuses raises :class:`~calibkit.InputError` naming it.

    Examples
    --------
    >>> from calibkit.stated import grade_many
    >>> [g.correct for g in grade_many(["42", "about 40", ""], [42, 42, 42], "numeric")]
    [True, False, None]
    """
    if isinstance(answers, str) or isinstance(golds, str):
        raise InputError("grade_many: answers and golds must be sequences, one entry per row.")
    answers, golds = list(answers), list(golds)
    if len(answers) != len(golds):
        raise InputError(
            f"grade_many: {len(answers)} answers but {len(golds)} golds; give one gold per answer."
        )
    rows: list[Grader]
    if callable(grader):
        if settings:
            raise InputError("grade_many: settings go with a grader's name, not a callable.")
        rows = [grader] * len(answers)
    else:
        options: Any = settings.get("options")
        if grader == "choice" and _per_row(options, len(answers)):
            rest = {k: v for k, v in settings.items() if k != "options"}
            rows = [make_grader("choice", options=o, **rest) for o in options]
        else:
            rows = [make_grader(grader, **settings)] * len(answers)
    out = []
    for i, (fn, a, g) in enumerate(zip(rows, answers, golds, strict=True)):
        try:
            grade = fn(a, g)
        except InputError as e:
            raise InputError(f"grade_many: row {i}: {e}") from None
        if not isinstance(grade, Grade):
            raise InputError(
                f"grade_many: row {i}: the grader returned {type(grade).__name__}, not a Grade."
            )
        out.append(grade)
    return out
