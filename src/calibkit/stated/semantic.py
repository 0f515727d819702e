"""Semantic consistency: the confidence the agreement of k sampled answers of one item gives,
and their semantic entropy.

:func:`semantic_groups` groups the answers by meaning, with a pluggable equivalence: SQuAD's
normal form (:func:`~calibkit.stated.normalize_answer`) equal, the same number within a tolerance,
or any callable ``(a, b) -> bool`` (a judge, an entailment model). :func:`semantic_consistency`
reads the confidence of a chosen answer as its group's share of the answers, and the semantic
entropy as the entropy of the groups' shares (Kuhn et al. 2023; this discrete version, with
shares of sampled answers for the groups' probabilities, is Farquhar et al. 2024's).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .._errors import InputError
from ._normalise import _string, normalize_answer
from ._numeric import read_number
from .grade import _tolerance

__all__ = ["EQUIVALENCES", "SemanticConsistency", "semantic_consistency", "semantic_groups"]

#: The equivalences known by name.
EQUIVALENCES = ("exact", "numeric")

Equivalence = Callable[[str, str], Any]


@dataclass(frozen=True)
class SemanticConsistency:
    """The agreement of k sampled answers of one item.

    ``confidence`` is the share of the answers in the chosen answer's group, ``entropy`` the
    semantic entropy (natural log) of the groups' shares, ``groups`` the answers' indices by
    group (in order of first appearance), ``chosen_group`` the chosen answer's group (None when
    a given ``chosen`` matches no answer: its confidence is then 0), ``tie`` whether the largest
    group was tied (the default choice then takes the first to appear), and ``equivalence``
    names the equivalence used.
    """

    confidence: float
    entropy: float
    groups: list[list[int]]
    chosen_group: int | None
    chosen: str
    tie: bool
    equivalence: str

    @property
    def n_answers(self) -> int:
        """How many answers were grouped."""
        return sum(len(g) for g in self.groups)

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready ``dict``.

        >>> semantic_consistency(["4", "4", "5", "4"]).to_dict()["groups"]
        [[0, 1, 3], [2]]
        """
        return {
            "confidence": self.confidence,
            "entropy": self.entropy,
            "groups": [list(g) for g in self.groups],
            "chosen_group": self.chosen_group,
            "chosen": self.chosen,
            "tie": self.tie,
            "equivalence": self.equivalence,
        }


def _equivalence(
    equivalent: str | Equivalence, rel_tol: float, abs_tol: float, where: str
) -> tuple[Callable[[str, str], bool], Callable[[str], Any] | None, str]:
    """(equal(a, b), key(a) or None, name): a key when the equivalence is a partition by it."""
    if callable(equivalent):
        name = getattr(equivalent, "__name__", type(equivalent).__name__)

        def call(a: str, b: str) -> bool:
            r = equivalent(a, b)
            if r not in (True, False):
                raise InputError(
                    f"{where}: the equivalence {name} returned {r!r} for {a!r:.40} and {b!r:.40}; "
                    "it must return True or False."
                )
            return bool(r)

        return call, None, f"callable({name})"
    if equivalent == "exact":
        return (lambda a, b: normalize_answer(a) == normalize_answer(b)), normalize_answer, "exact"
    if equivalent == "numeric":
        r, a_ = _tolerance(rel_tol, "rel_tol"), _tolerance(abs_tol, "abs_tol")

        def num(a: str, b: str) -> bool:
            x, y = read_number(a), read_number(b)
            if isinstance(x, str) or isinstance(y, str):
                return (
                    isinstance(x, str)
                    and isinstance(y, str)
                    and (normalize_answer(a) == normalize_answer(b))
                )
            return math.isclose(x, y, rel_tol=r, abs_tol=a_)

        return num, None, f"numeric(rel_tol={r:g}, abs_tol={a_:g})"
    raise InputError(
        f"{where}: equivalent={equivalent!r} is not an equivalence; give one of "
        f"{', '.join(map(repr, EQUIVALENCES))} or a callable (a, b) -> bool."
    )


def _answers(answers: Sequence[str], where: str) -> list[str]:
    if isinstance(answers, str) or not isinstance(answers, Sequence):
        raise InputError(f"{where}: answers must be a list of the item's sampled answers.")
    if not answers:
        raise InputError(f"{where}: answers is empty; give the k answers sampled for the item.")
    return [_string(a, where, f"answer {i}") for i, a in enumerate(answers)]


def _group(texts: list[str], equal: Callable[[str, str], bool], key: Any) -> list[list[int]]:
    if key is not None:  # a partition by a key: hash it
        by_key: dict[Any, list[int]] = {}
        for i, t in enumerate(texts):
            by_key.setdefault(key(t), []).append(i)
        return list(by_key.values())
    groups: list[list[int]] = []
    for i, t in enumerate(texts):
        for g in groups:
            if equal(texts[g[0]], t):
                g.append(i)
                break
        else:
            groups.append([i])
    return groups


def semantic_groups(
    answers: Sequence[str],
    *,
    equivalent: str | Equivalence = "exact",
    rel_tol: float = 1e-9,
    abs_tol: float = 0.0,
) -> list[list[int]]:
    """Group an item's sampled answers by meaning.

    Each answer, in order, joins the first group whose first answer it is equivalent to, or
    starts a new group (the clustering of Kuhn et al. 2023). For an equivalence that is not
    transitive (a tolerance, a judge) the groups depend on the answers' order.

    Parameters
    ----------
    answers : sequence of str
        The k answers sampled for one item.
    equivalent : {"exact", "numeric"} or callable, default "exact"
        ``"exact"``: equal in SQuAD's normal form (:func:`~calibkit.stated.normalize_answer`);
        ``"numeric"``: the numbers :func:`~calibkit.stated.grade_numeric` reads are
        ``math.isclose`` within ``rel_tol`` and ``abs_tol`` (two answers with no readable number
        are equivalent when their normal forms are equal; never to one with a number); a
        callable ``(a, b) -> bool``: whatever it says.
    rel_tol, abs_tol : float, default 1e-9 and 0
        The tolerances of ``"numeric"``.

    Returns
    -------
    list of list of int
        The answers' indices, one list per group, groups in order of first appearance.

    Examples
    --------
    >>> from calibkit.stated import semantic_groups
    >>> semantic_groups(["Paris", "paris.", "Lyon", "The Paris"])
    [[0, 1, 3], [2]]
    >>> semantic_groups(["42", "42.0 km", "about 41"], equivalent="numeric")
    [[0, 1], [2]]
    """
    where = "semantic_groups"
    equal, key, _ = _equivalence(equivalent, rel_tol, abs_tol, where)
    return _group(_answers(answers, where), equal, key)


def semantic_consistency(
    answers: Sequence[str],
    chosen: str | None = None,
    *,
    equivalent: str | Equivalence = "exact",
    rel_tol: float = 1e-9,
    abs_tol: float = 0.0,
) -> SemanticConsistency:
    """The confidence an item's k sampled answers give a chosen answer, and their semantic
    entropy.

    With the answers grouped by :func:`semantic_groups`, the confidence is the chosen answer's
    group's share, ``len(group) / k``, and the semantic entropy is
    ``-sum(p_g * log(p_g))`` over the groups' shares ``p_g`` (natural log; 0 when all agree,
    ``log(k)`` when all differ).

    Parameters
    ----------
    answers : sequence of str
        The k answers sampled for one item.
    chosen : str, optional
        The answer whose confidence is wanted (the greedy answer, say); it belongs to the first
        group whose first answer it is equivalent to, and has confidence 0 when it is equivalent
        to none. Default: the largest group; when several tie for largest, the one that appears
        first (``tie`` is then True, and the confidence is the tied share).
    equivalent, rel_tol, abs_tol
        As :func:`semantic_groups`.

    Returns
    -------
    SemanticConsistency

    Examples
    --------
    >>> from calibkit.stated import semantic_consistency
    >>> r = semantic_consistency(["Paris", "paris", "Lyon", "Paris."])
    >>> r.confidence, round(r.entropy, 4)   # -(3/4 log 3/4 + 1/4 log 1/4)
    (0.75, 0.5623)
    >>> semantic_consistency(["Paris", "Lyon"], chosen="Nice").confidence
    0.0
    """
    where = "semantic_consistency"
    equal, key, name = _equivalence(equivalent, rel_tol, abs_tol, where)
    texts = _answers(answers, where)
    groups = _group(texts, equal, key)
    k = len(texts)
    # 0.0 - sum, not -sum: one group gives 0.0, not -0.0
    entropy = 0.0 - sum((len(g) / k) * math.log(len(g) / k) for g in groups)
    sizes = [len(g) for g in groups]
    tie = sizes.count(max(sizes)) > 1
    index: int | None
    if chosen is None:
        index = sizes.index(max(sizes))
        chosen_text = texts[groups[index][0]]
    else:
        chosen_text = _string(chosen, where, "chosen")
        index = next((j for j, g in enumerate(groups) if equal(texts[g[0]], chosen_text)), None)
    confidence = 0.0 if index is None else len(groups[index]) / k
    return SemanticConsistency(confidence, entropy, groups, index, chosen_text, tie, name)
