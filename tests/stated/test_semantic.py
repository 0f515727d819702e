"""calibkit.stated.semantic: grouping sampled answers by meaning, the chosen answer's share and
the semantic entropy (worked out by hand)."""

from __future__ import annotations

import math

import pytest

from calibkit import InputError
from calibkit.stated import SemanticConsistency, semantic_consistency, semantic_groups


def test_exact_groups_use_the_normal_form():
    answers = ["Paris", "paris.", "Lyon", "The Paris", "“Lyon”", "Nice"]
    assert semantic_groups(answers) == [[0, 1, 3], [2, 4], [5]]


def test_entropy_and_confidence_by_hand():
    r = semantic_consistency(["Paris", "paris.", "Lyon", "The Paris", "“Lyon”", "Nice"])
    # shares 3/6, 2/6, 1/6: H = -(1/2 ln 1/2 + 1/3 ln 1/3 + 1/6 ln 1/6)
    #   = 0.5 * 0.693147 + 0.333333 * 1.098612 + 0.166667 * 1.791759 = 1.011404
    assert r.entropy == pytest.approx(1.0114042647, abs=1e-9)
    assert r.confidence == 0.5 and r.chosen == "Paris" and r.chosen_group == 0
    assert r.tie is False and r.n_answers == 6 and r.equivalence == "exact"
    lyon = semantic_consistency(["Paris", "paris.", "Lyon", "The Paris", "“Lyon”", "Nice"], "lyon")
    assert lyon.confidence == pytest.approx(2 / 6) and lyon.chosen_group == 1
    assert lyon.entropy == r.entropy


def test_all_agree_and_all_differ():
    same = semantic_consistency(["42"] * 5)
    assert same.confidence == 1.0 and same.entropy == 0.0 and not math.copysign(1, same.entropy) < 0
    differ = semantic_consistency(["a1", "b2", "c3", "d4"])
    assert differ.entropy == pytest.approx(math.log(4))  # ln k when all differ
    assert differ.confidence == 0.25 and differ.tie is True and differ.chosen_group == 0


def test_a_tie_takes_the_group_that_appears_first():
    r = semantic_consistency(["Lyon", "Paris", "Paris", "Lyon", "Nice"])
    assert r.groups == [[0, 3], [1, 2], [4]]
    assert r.tie is True and r.chosen == "Lyon" and r.confidence == pytest.approx(0.4)
    # shares 2/5, 2/5, 1/5: H = 2 * 0.4 * ln 2.5 + 0.2 * ln 5 = 0.733032 + 0.321888
    assert r.entropy == pytest.approx(1.0549201680, abs=1e-9)


def test_a_chosen_answer_no_sample_agrees_with_has_confidence_zero():
    r = semantic_consistency(["Paris", "Lyon"], chosen="Nice")
    assert r.confidence == 0.0 and r.chosen_group is None and r.chosen == "Nice"


def test_numeric_equivalence_with_tolerance():
    answers = ["42", "The answer is 42.0 km", "about 41.5", "forty-two", "Forty two!", "12 or 13"]
    assert semantic_groups(answers, equivalent="numeric") == [[0, 1], [2], [3], [4], [5]]
    # "forty-two" and "Forty two!" have no number: equal only by normal form ("fortytwo" and
    # "forty two" differ); "12 or 13" is undecided: no number either
    loose = semantic_groups(answers, equivalent="numeric", abs_tol=0.5)
    assert loose == [[0, 1, 2], [3], [4], [5]]
    r = semantic_consistency(answers, equivalent="numeric", abs_tol=0.5)
    assert r.confidence == 0.5 and r.equivalence == "numeric(rel_tol=1e-09, abs_tol=0.5)"
    # shares 3/6, 1/6, 1/6, 1/6: H = 0.5 ln 2 + 3 * (1/6) ln 6 = 0.346574 + 0.895880
    assert r.entropy == pytest.approx(1.2424533249, abs=1e-9)
    assert semantic_groups(["n/a", "N/A", "7"], equivalent="numeric") == [[0, 1], [2]]


def test_a_callable_equivalence_joins_the_first_group_whose_first_answer_it_matches():
    def close(a, b):  # not transitive: 1~2, 2~3, 1 !~ 3
        return abs(int(a) - int(b)) <= 1

    assert semantic_groups(["1", "2", "3"], equivalent=close) == [[0, 1], [2]]
    assert semantic_groups(["2", "1", "3"], equivalent=close) == [[0, 1, 2]]  # order matters
    r = semantic_consistency(["1", "2", "3"], "3", equivalent=close)
    assert r.chosen_group == 1 and r.confidence == pytest.approx(1 / 3)
    assert r.equivalence == "callable(close)"
    assert isinstance(r, SemanticConsistency) and r.to_dict()["groups"] == [[0, 1], [2]]


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: semantic_groups([]), "answers is empty"),
        (lambda: semantic_groups("Paris"), "must be a list"),
        (lambda: semantic_groups(["a", None]), "answer 1 must be a string, got NoneType"),
        (lambda: semantic_groups(["a"], equivalent="fuzzy"), "is not an equivalence"),
        (lambda: semantic_groups(["1"], equivalent="numeric", rel_tol=-1), "rel_tol must be"),
        (lambda: semantic_groups(["a", "b"], equivalent=lambda a, b: "yes"), "True or False"),
        (lambda: semantic_consistency(["a"], chosen=3), "chosen must be a string"),
    ],
)
def test_bad_input_is_a_clear_input_error(call, match):
    with pytest.raises(InputError, match=match):
        call()
