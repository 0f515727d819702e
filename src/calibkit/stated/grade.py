"""Graders: whether a language model's answer is right, and which grader said so.

Every label an audit reads from a grader is a :class:`Grade`, which names the grader that
produced it (with its settings), so an audit can say where its labels came from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Grade"]


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
