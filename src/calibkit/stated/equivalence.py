"""A judge model as the equivalence of semantic consistency: do two answers mean the same?

:func:`judge_equivalence` makes a callable ``(a, b) -> bool`` for
:func:`~calibkit.stated.semantic_groups`, :func:`~calibkit.stated.semantic_consistency` and
:func:`~calibkit.stated.sample_answers`, which asks a judge model whether two answers to a
question mean the same, with the fixed prompt :data:`DEFAULT_SAME_PROMPT` (or yours). It asks
through :func:`~calibkit.stated.judge` and its reply store, so every verdict is stored before it
is used and a rerun asks no pair twice: a pair's key hashes the text sent (the question and the
two answers, in sorted order, so ``(a, b)`` and ``(b, a)`` are one key). Identical strings are
the same without asking. A reply with no verdict counts as "not the same" for the grouping,
and the pair is listed in ``undecided`` and warned about (:class:`calibkit.CalibkitWarning`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, replace
from typing import Any

from .._errors import CalibkitWarning, InputError

__all__ = ["DEFAULT_SAME_PROMPT", "JudgeEquivalence", "judge_equivalence"]

DEFAULT_SAME_PROMPT = """\
Two answers were given to the question below. Decide whether they mean the same answer to it
(wording, case, units written out or not, and formatting may differ; an answer that is more or
less specific, or that names something else, does not mean the same).

Question: {question}
Answer A: {gold}
Answer B: {answer}

Reply with a single JSON object and nothing else: {"correct": true} if they mean the same,
{"correct": false} if not."""

#: what the prompt shows as the question when none is given
NO_QUESTION = "(not given)"


@dataclass
class JudgeEquivalence:
    """Two answers are equivalent when a judge model says they mean the same (see the module
    docstring). Made by :func:`judge_equivalence`; :meth:`for_question` gives the one for the
    answers of one question (:func:`~calibkit.stated.sample_answers` calls it per item).

    ``verdicts`` holds each pair asked, ``(question, a, b) -> bool``; ``undecided`` the pairs
    whose reply held no verdict (counted as not the same); ``calls`` the judge model's calls
    made (0 when every verdict was in the store). These are shared with the equivalences
    :meth:`for_question` returns.
    """

    options: dict[str, Any]
    prompt: str = DEFAULT_SAME_PROMPT
    question: str | None = None
    verdicts: dict[tuple[str, str, str], bool] = field(default_factory=dict)
    undecided: list[tuple[str, str, str]] = field(default_factory=list)
    calls: list[int] = field(default_factory=lambda: [0])

    @property
    def __name__(self) -> str:  # type: ignore[override]  # the name semantic_groups records
        return f"judge:{self.options['provider']}/{self.options['model']}"

    def for_question(self, question: str) -> JudgeEquivalence:
        """The equivalence of the answers to ``question`` (the same store, model and records)."""
        if not isinstance(question, str):
            raise InputError(f"judge_equivalence: the question must be a string, got {question!r}.")
        return replace(self, question=question)

    def __call__(self, a: str, b: str) -> bool:
        if a == b:
            return True
        from .judging import judge

        first, second = sorted((a, b))
        question = NO_QUESTION if self.question is None else self.question
        key = (question, first, second)
        if key in self.verdicts:
            return self.verdicts[key]
        row = {"id": "same", "question": question, "gold": first, "answer": second}
        run = judge([row], prompt=self.prompt, **self.options)
        self.calls[0] += run.calls
        grade = run.grades[0]
        if grade.correct is None:
            self.undecided.append(key)
            warnings.warn(
                f"judge_equivalence: no verdict on whether {first!r:.40} and {second!r:.40} mean "
                f"the same ({grade.reason}); they are grouped apart. The pairs without a verdict "
                "are in the equivalence's undecided list.",
                CalibkitWarning,
                stacklevel=2,
            )
        verdict = bool(grade.correct)
        self.verdicts[key] = verdict
        return verdict


def judge_equivalence(
    *, provider: str, model: str, store: Any, prompt: str = DEFAULT_SAME_PROMPT, **options: Any
) -> JudgeEquivalence:
    """An equivalence ``(a, b) -> bool`` that asks a judge model whether two answers mean the
    same.

    Parameters
    ----------
    provider, model, store
        As for :func:`~calibkit.stated.judge` (the judge's provider and model, the reply store
        its verdicts are kept in).
    prompt : str
        With ``{question}``, ``{gold}`` (answer A) and ``{answer}`` (answer B); default
        :data:`DEFAULT_SAME_PROMPT`. Its sha256 is part of every key.
    **options
        Any other keyword of :func:`~calibkit.stated.judge` (``base_url``, ``api_key_env``,
        ``temperature``, ``max_retries``, ``replay``...).

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> from calibkit.stated import semantic_consistency
    >>> from calibkit.stated._questions import key_id, render
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> q = "Who wrote Hamlet?"
    >>> text = render(DEFAULT_SAME_PROMPT, {"question": q, "gold": "Shakespeare",
    ...                                      "answer": "William Shakespeare"})
    >>> line = {"item_id": key_id("same", text), "text": '{"correct": true}'}
    >>> _ = (folder / "verdicts.jsonl").write_text(json.dumps(line))
    >>> same = judge_equivalence(provider="replay", model="m", store=folder / "j.sqlite",
    ...                          replay=folder / "verdicts.jsonl").for_question(q)
    >>> answers = ["William Shakespeare", "Shakespeare", "William Shakespeare"]
    >>> semantic_consistency(answers, equivalent=same).confidence
    1.0
    """
    if "{answer}" not in prompt or "{gold}" not in prompt:
        raise InputError(
            "judge_equivalence: the prompt must hold {gold} and {answer} (the two answers), "
            "and should hold {question}."
        )
    for name in ("items_with_answers", "prompt"):
        if name in options:
            raise InputError(f"judge_equivalence: {name} is not an option here.")
    return JudgeEquivalence(
        {"provider": provider, "model": model, "store": store, **options}, prompt
    )
