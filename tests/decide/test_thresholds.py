"""chow_threshold and choose_threshold: numbers worked by hand, a miscalibrated case, the
identities."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calibkit as ck
from calibkit.decide.thresholds import cost_at

CONF = [0.95, 0.9, 0.8, 0.7, 0.6]
OUT = [1, 1, 0, 1, 0]


# ------------------------------------------------------- Chow: act when p >= 1 - l_defer / l_wrong


def test_chow_values_by_hand():
    assert ck.chow_threshold(10, 1) == pytest.approx(0.9, abs=1e-15)
    assert ck.chow_threshold(20, 1) == pytest.approx(0.95, abs=1e-15)
    assert ck.chow_threshold(50, 2) == pytest.approx(0.96, abs=1e-15)


def test_chow_costs_50_and_2_on_a_miscalibrated_confidence():
    """Chow gives 1 - 2/50 = 0.96; if predictions at or above it are right only 90% of the
    time, acting costs 0.10 * 50 = 5 per case against 2 for a review."""
    lam = ck.chow_threshold(50, 2)
    assert lam == pytest.approx(0.96)
    conf = np.array([0.96] * 40 + [0.97] * 30 + [0.99] * 30)
    out = np.ones(100, dtype=int)
    out[[0, 10, 20, 30, 45, 55, 65, 75, 85, 95]] = 0  # 10 wrong: right 90% of the time
    acted = conf >= lam
    assert acted.all() and out[acted].mean() == 0.9
    cost, n_acted, wrong = cost_at(conf, out, lam, l_wrong=50.0, l_defer=2.0)
    assert (n_acted, wrong) == (100, 10)
    assert cost == pytest.approx(5.0)
    # deferring them costs 2; the cost-minimising threshold on these data defers (acting costs more at every
    # threshold here: each tie group is wrong 10% of the time)
    c = ck.choose_threshold(conf, out, 50, 2)
    assert c.chow_cost == pytest.approx(5.0)
    assert c.cost <= 2.0
    assert c.cost < c.chow_cost


# ------------------------------------------------------------ the threshold of least cost per case


def test_five_predictions_choice_is_0_9_at_0_6_per_case():
    c = ck.choose_threshold(CONF, OUT, 10, 1)
    assert c.threshold == 0.9
    assert c.cost == pytest.approx(0.6, abs=1e-15)
    assert c.coverage == pytest.approx(0.4)
    assert c.risk == 0.0
    assert c.n_acted == 2 and c.n == 5
    assert c.chow_threshold == pytest.approx(0.9)
    assert c.chow_cost == pytest.approx(0.6)
    assert c.gap == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize(
    ("threshold", "cost"),
    [(1.0, 1.0), (0.95, 0.8), (0.9, 0.6), (0.8, 2.4), (0.7, 2.2), (0.6, 4.0), (0.0, 4.0)],
)
def test_five_predictions_cost_per_case_at_every_threshold(threshold, cost):
    got, _, _ = cost_at(np.array(CONF), np.array(OUT), threshold, l_wrong=10.0, l_defer=1.0)
    assert got == pytest.approx(cost, abs=1e-12)


def test_choice_defers_everything_when_that_is_cheapest():
    c = ck.choose_threshold([0.9, 0.8], [0, 0], 10, 1)
    assert math.isinf(c.threshold) and c.cost == 1.0 and c.coverage == 0.0
    assert math.isnan(c.risk) and c.n_acted == 0
    assert math.isinf(c.gap)
    d = c.to_dict()
    assert d["threshold"] is None and d["risk"] is None and d["gap"] is None
    assert "defer all" in str(c)


def test_choice_acts_on_everything_when_all_are_right():
    c = ck.choose_threshold([0.9, 0.6, 0.3], [1, 1, 1], 10, 1)
    assert c.threshold == 0.3 and c.cost == 0.0 and c.coverage == 1.0


def test_equal_costs_prefer_acting_on_more():
    # acting on the 0.9 (right) and then the 0.5 (wrong, costs 2 instead of 1+1)
    c = ck.choose_threshold([0.9, 0.5, 0.4], [1, 0, 1], 2, 1)
    # thresholds: inf -> 3/3 = 1; 0.9 -> 2/3; 0.5 -> (2 + 1)/3 = 1; 0.4 -> 2/3: tie, act on more
    assert c.threshold == 0.4 and c.cost == pytest.approx(2 / 3)


def test_ties_are_accepted_together():
    # acting on one of the two 0.8 rows (the right one) would be cheaper, but ties go together
    c = ck.choose_threshold([0.8, 0.8], [1, 0], 10, 1)
    assert math.isinf(c.threshold) and c.cost == 1.0


def test_str_names_threshold_and_chow():
    text = str(ck.choose_threshold(CONF, OUT, 10, 1))
    assert "threshold 0.9" in text and "Chow's threshold 0.9" in text and "2 of 5" in text


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([0.1, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 1.0]), st.booleans()),
        min_size=1,
        max_size=50,
    ),
    st.floats(1.01, 100.0),
    st.floats(0.01, 1.0),
)
def test_choice_never_costs_more_than_acting_on_all_or_deferring_all(rows, ratio, l_defer):
    conf = np.array([r[0] for r in rows])
    out = np.array([r[1] for r in rows], dtype=int)
    l_wrong = ratio * l_defer
    c = ck.choose_threshold(conf, out, l_wrong, l_defer)
    act_all = (1 - out.mean()) * l_wrong
    assert c.cost <= act_all + 1e-12
    assert c.cost <= l_defer + 1e-12
    # and no observed threshold beats it
    for t in np.unique(conf):
        got, _, _ = cost_at(conf, out, float(t), l_wrong=l_wrong, l_defer=l_defer)
        assert c.cost <= got + 1e-12
    # its reported cost is the cost per case at its threshold
    again, n_acted, _ = cost_at(conf, out, c.threshold, l_wrong=l_wrong, l_defer=l_defer)
    assert again == pytest.approx(c.cost, abs=1e-12) and n_acted == c.n_acted


@pytest.mark.parametrize("seed", range(3))
def test_calibrated_model_empirical_threshold_near_chow(seed):
    """With a calibrated confidence and many cases the cost-minimising threshold lands near
    Chow's: the gap measures miscalibration, and here there is none."""
    rng = np.random.default_rng(seed)
    conf = rng.uniform(0.5, 1.0, 200_000)
    out = (rng.random(conf.size) < conf).astype(int)
    c = ck.choose_threshold(conf, out, 10, 1)
    assert abs(c.gap) < 0.02
    assert c.cost <= c.chow_cost


def test_overconfident_model_empirical_threshold_above_chow():
    rng = np.random.default_rng(0)
    conf = rng.uniform(0.5, 1.0, 200_000)
    out = (rng.random(conf.size) < conf**4).astype(int)  # right less often than it says
    c = ck.choose_threshold(conf, out, 10, 1)
    assert c.gap > 0.02


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("l_wrong", "l_defer", "match"),
    [
        (1, 10, r"deferring must cost less than a wrong action \(l_defer < l_wrong\)"),
        (1, 1, r"deferring must cost less .* got l_defer = 1 and l_wrong = 1"),
        (-10, 1, "l_wrong must be a positive number, got -10"),
        (10, -1, "l_defer must be a positive number, got -1"),
        (0, 1, "l_wrong must be a positive number, got 0"),
        (10, 0, "l_defer must be a positive number, got 0"),
        (math.nan, 1, "l_wrong must be a positive number"),
        (math.inf, 1, "l_wrong must be a positive number"),
        ("10", 1, "l_wrong must be a positive number"),
        (True, 0.5, "l_wrong must be a positive number"),
    ],
)
def test_bad_costs(l_wrong, l_defer, match):
    with pytest.raises(ck.InputError, match=f"chow_threshold: {match}"):
        ck.chow_threshold(l_wrong, l_defer)
    with pytest.raises(ck.InputError, match=f"choose_threshold: {match}"):
        ck.choose_threshold(CONF, OUT, l_wrong, l_defer)


def test_empty_input():
    with pytest.raises(ck.InputError, match="choose_threshold: confidence is empty"):
        ck.choose_threshold([], [], 10, 1)


def test_nan_confidence():
    with pytest.raises(ck.InputError, match="choose_threshold: confidence must not contain NaN"):
        ck.choose_threshold([0.9, np.nan], [1, 0], 10, 1)


@pytest.mark.parametrize("outcome", [[1, 2], [0.5, 1.0]])
def test_outcome_not_zero_one(outcome):
    with pytest.raises(ck.InputError, match="choose_threshold: outcome must be 0 or 1"):
        ck.choose_threshold([0.9, 0.8], outcome, 10, 1)
