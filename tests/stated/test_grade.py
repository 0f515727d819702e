"""calibkit.stated.grade and .graders: the deterministic graders on a golden table of tricky
answers, token F1 against SQuAD v1.1's definition (reimplemented here, and by hand), and the
errors for bad input."""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from pathlib import Path

import pytest

from calibkit import InputError
from calibkit.stated import (
    GRADERS,
    Grade,
    grade_choice,
    grade_exact,
    grade_f1,
    grade_many,
    grade_numeric,
    grade_regex,
    make_grader,
    normalize_answer,
)

GOLDEN = Path(__file__).parent / "data" / "grader_golden.jsonl"
ROWS = [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines()]


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['grader']}: {r['case']}" for r in ROWS])
def test_golden_table(row):
    settings = dict(row.get("settings") or {})
    if "options" in row:
        settings["options"] = row["options"]
    g = make_grader(row["grader"], **settings)(row["answer"], row["gold"])
    assert isinstance(g, Grade)
    assert g.correct is row["correct"], g
    assert g.grader.startswith(row["grader"] + "(")
    if g.correct is None:
        assert g.reason  # undecided always says why


def test_the_golden_table_covers_the_cases_asked_for():
    cases = " ".join(r["case"] for r in ROWS)
    for word in (
        "unit",
        "thousands",
        "trailing explanation",
        "Unicode",
        "digits",
        "quotes",
        "article",
        "punctuation",
        "empty answer",
        "two letters",
        "two numbers",
    ):
        assert word in cases, word
    assert {r["grader"] for r in ROWS} == set(GRADERS)
    assert sum(r["correct"] is None for r in ROWS) >= 10


# ----------------------------------------------------------------------------- SQuAD v1.1


def _squad_normalize(s):
    """The SQuAD v1.1 evaluation script's normalize_answer, as published (ASCII only)."""

    def remove_articles(text):
        return re.sub(r"\b(a|an|the)\b", " ", text)

    def white_space_fix(text):
        return " ".join(text.split())

    def remove_punc(text):
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def _squad_f1(prediction, ground_truth):
    p = _squad_normalize(prediction).split()
    t = _squad_normalize(ground_truth).split()
    common = Counter(p) & Counter(t)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(p)
    recall = 1.0 * num_same / len(t)
    return (2 * precision * recall) / (precision + recall)


ASCII_PAIRS = [
    ("the Eiffel Tower in Paris", "Eiffel Tower"),
    ("Tower of London", "Eiffel Tower"),
    ("Denver Broncos", "the Denver Broncos"),
    ("a b a c", "a a b"),
    ("b b b", "b x"),
    ("Saint-Denis, France!", "saint denis"),
    ("1,234", "1234"),
    ("no overlap", "at all"),
]


@pytest.mark.parametrize(("answer", "gold"), ASCII_PAIRS)
def test_f1_and_normal_form_agree_with_squad_on_ascii(answer, gold):
    assert normalize_answer(answer) == _squad_normalize(answer)
    g = grade_f1(answer, gold)
    assert g.score == pytest.approx(_squad_f1(answer, gold), abs=1e-15)
    assert grade_exact(answer, gold).correct is (_squad_normalize(answer) == _squad_normalize(gold))


def test_f1_by_hand():
    # "the eiffel tower in paris" -> [eiffel, tower, in, paris]; gold [eiffel, tower]:
    # 2 shared, precision 2/4, recall 2/2, F1 = 2 * 0.5 * 1 / 1.5 = 2/3
    assert grade_f1("the Eiffel Tower in Paris", "Eiffel Tower").score == pytest.approx(2 / 3)
    # [tower, of, london] vs [eiffel, tower]: 1 shared, P 1/3, R 1/2, F1 = (1/3)/(5/6) = 2/5
    g = grade_f1("Tower of London", "Eiffel Tower")
    assert g.score == pytest.approx(0.4) and g.correct is False
    assert grade_f1("Tower of London", "Eiffel Tower", threshold=0.4).correct is True
    # multiplicity: [b, b, b] vs [b, x]: 1 shared (min(3, 1)), P 1/3, R 1/2, F1 2/5
    assert grade_f1("b b b", "b x").score == pytest.approx(0.4)
    # the best over several golds: 1.0 for the second
    assert grade_f1("Paris", ["Lyon", "paris"]).score == 1.0
    assert grade_f1("x", "y").grader == "f1(squad, threshold=0.5)"


def test_normal_form_unicode():
    assert normalize_answer("“Ｐａｒｉｓ” — France…") == "paris france"  # NFKC, Unicode P*
    assert normalize_answer("Ǆ") == "dž"  # NFKC splits the ligature, then lower case
    assert normalize_answer("\u00a0the\u2003end\u00a0") == "end"  # Unicode spaces
    assert normalize_answer("١٢٣") == "123"
    assert normalize_answer("well-known") == "wellknown"  # as SQuAD: nothing in the dash's place
    assert normalize_answer("Anthem") == "anthem"  # "an" only as a word


# ----------------------------------------------------------------------------- the graders


def test_choice_details():
    opts = ["Paris", "Lyon", "Marseille"]
    assert grade_choice("B", "b").grader == "choice(letters)"
    assert grade_choice("B", "Lyon", options=opts).grader == "choice(letters+texts)"
    assert grade_choice("Marseille", "C", options=opts).correct is True
    wrong = grade_choice("C", "B", options=opts)
    assert wrong.correct is False and wrong.reason == "names C"
    two = grade_choice("B) Paris", "B", options=opts)
    assert two.correct is None and two.reason == "names options A, B"
    assert grade_choice("I'd say (a) or (C)", "A").reason == "names options A, C"
    # the explicit statement decides over letters elsewhere
    assert grade_choice("Option A is tempting, but the answer is C.", "C").correct is True
    assert grade_choice("Paris or Lyon, not sure", "A", options=opts).correct is None


def test_numeric_details():
    g = grade_numeric("The answer is $1,234.50.", 1234.5)
    assert g.correct is True and g.score == 1234.5
    assert g.grader == "numeric(rel_tol=1e-09, abs_tol=0)"
    assert grade_numeric("3.333", 10 / 3).correct is False
    assert grade_numeric("3.333", 10 / 3, rel_tol=1e-3).correct is True
    assert grade_numeric("The answer is 5, or maybe 6.", 5).correct is None
    assert grade_numeric("It was 1/0.", 1).reason == "'1/0' divides by zero"
    assert grade_numeric("1e400", 1).correct is None
    assert grade_numeric("-7 degrees", "−7").correct is True


def test_regex_details():
    assert grade_regex("abc", re.compile("B", re.IGNORECASE)).correct is True
    assert grade_regex("abc", "B").correct is False
    assert grade_regex("abc", "b").grader == "regex(search)"


def test_grade_many_by_name_callable_and_per_row_options():
    gs = grade_many(["42", "about 40", ""], [42, 42, 42], "numeric", abs_tol=1)
    assert [g.correct for g in gs] == [True, False, None]
    assert {g.grader for g in gs} == {"numeric(rel_tol=1e-09, abs_tol=1)"}
    opts = [["Paris", "Lyon"], {"A": "yes", "B": "no"}]
    gs = grade_many(["Lyon", "no"], ["B", "B"], "choice", options=opts)
    assert [g.correct for g in gs] == [True, True]
    one_set = grade_many(["Lyon", "Paris"], ["B", "B"], "choice", options=["Paris", "Lyon"])
    assert [g.correct for g in one_set] == [True, False]
    gs = grade_many(["a", "b"], ["a", "a"], lambda a, g: Grade(a == g, "same"))
    assert [g.correct for g in gs] == [True, False]
    assert [g.correct for g in grade_many(["Paris"], ["paris"])] == [True]  # default "exact"


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: grade_exact("x", None), "gold is missing"),
        (lambda: grade_f1("x", None), "gold is missing"),
        (lambda: grade_numeric("4", None), "gold is missing"),
        (lambda: grade_choice("B", None), "gold is missing"),
        (lambda: grade_regex("x", None), "pattern is missing"),
        (lambda: grade_exact(None, "x"), "answer must be a string, got NoneType"),
        (lambda: grade_f1(3, "x"), "answer must be a string, got int"),
        (lambda: grade_numeric(4.0, 4), "answer must be a string, got float"),
        (lambda: grade_choice(["B"], "B"), "answer must be a string, got list"),
        (lambda: grade_regex(b"x", "x"), "answer must be a string, got bytes"),
        (lambda: grade_exact("x", []), "gold is an empty list"),
        (lambda: grade_exact("x", ["the"]), "empty in SQuAD's normal form"),
        (lambda: grade_exact("x", {"a": 1}), "gold must be a string or a list"),
        (lambda: grade_exact("x", ["x", 3]), "each gold must be a string"),
        (lambda: grade_numeric("4", 4, rel_tol=-1e-3), "rel_tol must be a finite number >= 0"),
        (lambda: grade_numeric("4", 4, abs_tol=float("nan")), "abs_tol must be a finite"),
        (lambda: grade_numeric("4", 4, abs_tol=True), "abs_tol must be a finite"),
        (lambda: grade_numeric("4", "4 or 5"), "is not one number"),
        (lambda: grade_numeric("4", float("inf")), "gold must be a finite number"),
        (lambda: grade_f1("x", "x", threshold=0), r"threshold must be a number in \(0, 1\]"),
        (lambda: grade_f1("x", "x", threshold=1.5), "threshold must be a number"),
        (lambda: grade_regex("x", "("), "is not a regular expression"),
        (lambda: grade_regex("x", ""), "pattern is empty"),
        (lambda: grade_choice("B", "E", options=["x", "y"]), "neither an option letter"),
        (lambda: grade_choice("B", "Rome", options=["x", "y"]), "neither an option letter"),
        (lambda: grade_choice("B", "B", options=["Paris", "paris."]), "same normal form"),
        (lambda: grade_choice("B", "B", options=["x", "—"]), "option B .* is empty"),
        (lambda: grade_choice("B", "B", options={"AB": "x"}), "is not a letter"),
        (lambda: grade_choice("B", "B", options="AB"), "must be a list of option texts"),
        (lambda: grade_choice("B", "B", options=[]), "options is empty"),
        (lambda: grade_choice("B", "B", options=["x", 2]), "option B is int"),
        (lambda: make_grader("fuzzy"), "no grader 'fuzzy'"),
        (lambda: make_grader("exact", threshold=0.5), "takes no settings, not threshold"),
        (lambda: make_grader("f1", threshold=2), "threshold must be"),
        (lambda: grade_many(["a", "b"], ["a"]), "2 answers but 1 golds"),
        (lambda: grade_many("ab", "ab"), "must be sequences"),
        (lambda: grade_many(["x", 3], ["x", "x"]), "row 1: grade_exact: answer must be a string"),
        (lambda: grade_many(["x"], ["x"], lambda a, g: True), "row 0: the grader returned bool"),
        (lambda: grade_many(["x"], ["x"], lambda a, g: None, threshold=1), "not a callable"),
    ],
)
def test_bad_input_is_a_clear_input_error(call, match):
    with pytest.raises(InputError, match=match):
        call()
