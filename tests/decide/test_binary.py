"""A binary model's threshold on P(y = 1) from the costs of a false positive and a false
negative: the Bayes threshold (Elkan 2001), the exact empirical minimum (against brute force),
and the validation -> test table, on hand-worked cases and on load_breast_cancer."""

from __future__ import annotations

import math

import numpy as np
import pytest
from breast_cancer import malignancy

import calibkit as ck

COSTS = {"l_false_positive": 1, "l_false_negative": 20}


def brute_force(p, y, l_fp, l_fn):
    """(cost per case, threshold) of every observed P and "flag nothing", counted directly;
    the cheapest, ties to the lower threshold."""
    best = (np.sum(y == 1) * l_fn / p.size, math.inf)
    for t in np.unique(p)[::-1]:
        flag = p >= t
        cost = (np.sum(flag & (y == 0)) * l_fp + np.sum(~flag & (y == 1)) * l_fn) / p.size
        if cost <= best[0]:
            best = (cost, float(t))
    return best


# ----------------------------------------------------------------------------- Bayes


@pytest.mark.parametrize(
    ("l_fp", "l_fn", "threshold"), [(1, 20, 1 / 21), (1, 1, 0.5), (3, 1, 0.75), (1, 9, 0.1)]
)
def test_bayes_threshold(l_fp, l_fn, threshold):
    got = ck.bayes_threshold(l_false_positive=l_fp, l_false_negative=l_fn)
    assert got == pytest.approx(threshold, abs=1e-15)


def test_bayes_threshold_is_where_the_expected_costs_meet():
    t = ck.bayes_threshold(**COSTS)
    assert (1 - t) * 1 == pytest.approx(t * 20)  # flag: (1 - p) l_fp; do not flag: p l_fn


# ----------------------------------------------------------------------------- by hand


def test_six_cases_by_hand():
    # positives at 0.9, 0.6, 0.3; a false negative costs 4. Costs per case of each threshold:
    # none 12/6, 0.9 8/6, 0.6 4/6, 0.4 (1 FP + 1 FN) 5/6, 0.3 (1 FP) 1/6, 0.1 2/6, 0.05 3/6
    c = ck.choose_binary_threshold(
        [0.9, 0.6, 0.4, 0.3, 0.1, 0.05], [1, 1, 0, 1, 0, 0], l_false_positive=1, l_false_negative=4
    )
    assert c.threshold == 0.3 and c.cost == pytest.approx(1 / 6)
    counts = (c.true_positives, c.false_positives, c.true_negatives, c.false_negatives)
    assert counts == (3, 1, 2, 0) and c.n_flagged == 4 and c.n == 6
    assert c.bayes_threshold == pytest.approx(0.2)
    assert c.bayes_cost == pytest.approx(1 / 6)  # 0.2 flags the same four
    assert c.gap == pytest.approx(0.1)
    assert "flag when P(y = 1) >= 0.3: cost 0.1667 per case, 4 of 6 flagged" in str(c)


def test_flag_nothing_when_positives_are_cheap_to_miss():
    c = ck.choose_binary_threshold([0.9, 0.8], [0, 0], l_false_positive=5, l_false_negative=1)
    assert math.isinf(c.threshold) and c.cost == 0.0 and c.n_flagged == 0
    assert c.to_dict()["threshold"] is None and c.to_dict()["gap"] is None
    assert "above every probability (flag none)" in str(c)


def test_ties_are_flagged_together_and_equal_costs_flag_more():
    # the two 0.5s (one positive) go together; thresholds 0.7 and 0.5 both cost 2 / 4
    c = ck.choose_binary_threshold(
        [0.7, 0.5, 0.5, 0.1], [1, 1, 0, 0], l_false_positive=2, l_false_negative=2
    )
    assert c.threshold == 0.5 and c.cost == pytest.approx(0.5)


def test_two_columns_and_logits_read_p_of_class_one():
    p = np.array([0.9, 0.6, 0.4, 0.3, 0.1, 0.05])
    y = np.array([1, 1, 0, 1, 0, 0])
    costs = {"l_false_positive": 1, "l_false_negative": 4}
    one = ck.choose_binary_threshold(p, y, **costs)
    two = ck.choose_binary_threshold(np.c_[1 - p, p], y, **costs)
    assert two == one
    scores = ck.choose_binary_threshold(ck.logit(p), y, from_logits=True, **costs)
    assert scores.threshold == pytest.approx(0.3) and scores.cost == one.cost


@pytest.mark.parametrize("seed", range(12))
def test_exact_search_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 120))
    p = np.round(rng.uniform(0, 1, n), int(rng.integers(1, 4)))  # ties
    y = (rng.random(n) < p).astype(int)
    l_fp, l_fn = int(rng.integers(1, 10)), int(rng.integers(1, 30))
    c = ck.choose_binary_threshold(p, y, l_false_positive=l_fp, l_false_negative=l_fn)
    cost, threshold = brute_force(p, y, l_fp, l_fn)
    assert c.threshold == threshold
    assert c.cost == pytest.approx(cost, abs=1e-12)
    flag = p >= c.threshold
    assert c.false_negatives == np.sum(~flag & (y == 1))
    assert c.false_positives == np.sum(flag & (y == 0))


# ----------------------------------------------------------------------------- breast cancer


def test_breast_cancer_choice_is_the_brute_force_minimum():
    d = malignancy()
    c = ck.choose_binary_threshold(d["p_val"], d["y_val"], **COSTS)
    cost, threshold = brute_force(d["p_val"], d["y_val"], 1, 20)
    assert (c.threshold, c.cost) == (threshold, pytest.approx(cost, abs=1e-12))
    bayes = d["p_val"] >= 1 / 21
    by_hand = (np.sum(bayes & (d["y_val"] == 0)) + 20 * np.sum(~bayes & (d["y_val"] == 1))) / 142
    assert c.bayes_cost == pytest.approx(by_hand)
    assert c.cost <= c.bayes_cost  # chosen on these data, so no worse here


def test_breast_cancer_table_chooses_on_validation_and_reports_on_test():
    d = malignancy()
    t = ck.binary_policy_table(d["p_val"], d["y_val"], d["p_test"], d["y_test"], **COSTS)
    assert [r.key for r in t.rows] == ["flag_none", "flag_all", "argmax", "bayes", "chosen"]
    p, y = d["p_test"], d["y_test"]
    _, chosen = brute_force(d["p_val"], d["y_val"], 1, 20)
    for key, threshold in [
        ("flag_none", math.inf),
        ("flag_all", 0.0),
        ("argmax", 0.5),
        ("bayes", 1 / 21),
        ("chosen", chosen),
    ]:
        row = t.row(key)
        flag = p >= threshold
        fp, fn = np.sum(flag & (y == 0)), np.sum(~flag & (y == 1))
        assert row.threshold == pytest.approx(threshold)
        assert (row.false_positives, row.false_negatives) == (fp, fn)
        assert row.cost == pytest.approx((fp + 20 * fn) / p.size)
    assert t.row("flag_none").cost == pytest.approx(20 * y.mean())
    # the Bayes threshold misses no cancer in the test rows and beats the argmax there
    assert t.row("bayes").false_negatives == 0
    assert t.row("bayes").cost < t.row("argmax").cost
    assert t.n == 142 and t.n_eval == 143 and t.eval_positives == int(y.sum())
    text = str(t)
    assert "Bayes threshold (calibrated P)    0.04762" in text
    d2 = t.to_dict()
    assert d2["rows"][0]["threshold"] is None and d2["bayes_threshold"] == pytest.approx(1 / 21)
    assert "flag when P(y = 1) >= " in t.verdict()


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("costs", "match"),
    [
        ({"l_false_positive": 0, "l_false_negative": 20}, "l_false_positive must be a positive"),
        ({"l_false_positive": 1, "l_false_negative": -2}, "l_false_negative must be a positive"),
        ({"l_false_positive": math.nan, "l_false_negative": 2}, "l_false_positive must be a pos"),
        ({"l_false_positive": True, "l_false_negative": 2}, "l_false_positive must be a pos"),
        ({"l_false_positive": None, "l_false_negative": 2}, "l_false_positive is required"),
    ],
)
def test_bad_costs(costs, match):
    with pytest.raises(ck.InputError, match=f"bayes_threshold: {match}"):
        ck.bayes_threshold(**costs)
    with pytest.raises(ck.InputError, match=f"choose_binary_threshold: {match}"):
        ck.choose_binary_threshold([0.9], [1], **costs)


@pytest.mark.parametrize(
    ("probs", "labels", "match"),
    [
        ([0.9, 1.2], [1, 0], r"choose_binary_threshold: probs must lie in \[0, 1\]"),
        ([0.9, np.nan], [1, 0], "choose_binary_threshold: probs must not contain NaN"),
        ([0.9, 0.2], [1, 2], "choose_binary_threshold: labels must be 0 or 1"),
        ([[0.2, 0.3, 0.5]], [1], r"choose_binary_threshold: expected 1-D P\(label = 1\)"),
        ([0.9, 0.2], [1], "choose_binary_threshold: labels has 1 entries but the forecasts have"),
        (None, [1], "choose_binary_threshold: probs is required"),
    ],
)
def test_bad_probs_and_labels(probs, labels, match):
    with pytest.raises(ck.InputError, match=match):
        ck.choose_binary_threshold(probs, labels, **COSTS)


def test_bad_split_names_the_split():
    with pytest.raises(ck.InputError, match=r"binary_policy_table \(test\): probs must lie"):
        ck.binary_policy_table([0.9, 0.1], [1, 0], [1.5], [1], **COSTS)
