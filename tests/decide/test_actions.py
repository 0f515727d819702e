"""Three actions (act / ask / escalate): the exact O(N log N) search against hand-worked numbers,
a brute-force search over all pairs, the two-action special cases, and the calibrated closed
form."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import calibkit as ck
from calibkit.decide.actions import calibrated_actions, choose_actions


def brute_force(conf, out, l_wrong, l_defer, l_ask, l_ask_wrong):
    """Every pair of thresholds from the observed confidences plus 'above all', costed case by
    case: O(M^2 N). Ties: fewest escalated, then most acted (the documented rule)."""
    conf, out = np.asarray(conf, float), np.asarray(out)
    cands = np.r_[np.inf, np.unique(conf)[::-1]]
    best = None
    for a in range(cands.size):
        for b in range(a, cands.size):
            act = conf >= cands[a]
            ask = ~act & (conf >= cands[b])
            esc = ~act & ~ask
            wrong = out == 0
            total = (
                l_wrong * np.sum(act & wrong)
                + l_ask * np.sum(ask & ~wrong)
                + l_ask_wrong * np.sum(ask & wrong)
                + l_defer * np.sum(esc)
            )
            key = (total, int(esc.sum()), -int(act.sum()))
            if best is None or key < best[0]:
                best = (key, cands[a], cands[b], total / conf.size)
    return best[1], best[2], best[3]


def test_hand_worked_case_every_region():
    # per case: act 0 / 9, ask 0.5 / 5, escalate 3. Acting on 0.9, 0.8 (right) costs 0; asking on
    # 0.6 (wrong) and 0.5 (right) costs 5.5; escalating 0.4 and 0.2 costs 6: 11.5 in all.
    # Alternatives: escalate all four below 0.8: 12; ask down to 0.4: 13.5; act down to 0.5: 15.
    conf = [0.9, 0.2, 0.8, 0.5, 0.6, 0.4]
    out = [1, 0, 1, 1, 0, 0]
    c = choose_actions(conf, out, l_wrong=9, l_defer=3, l_ask=0.5, l_ask_wrong=5)
    assert (c.act_threshold, c.ask_threshold) == (0.8, 0.5)
    assert c.cost == pytest.approx(11.5 / 6)
    assert (c.n_acted, c.n_asked, c.n_escalated, c.n) == (2, 2, 2, 6)
    assert (c.share_acted, c.share_asked, c.share_escalated) == pytest.approx((1 / 3,) * 3)
    assert c.risk == 0.0
    # closed form: ask line 5 - 4.5 p meets act line 9 - 9 p at 8 / 9 and escalate 3 at 4 / 9
    assert c.calibrated_act_threshold == pytest.approx(8 / 9)
    assert c.calibrated_ask_threshold == pytest.approx(4 / 9)
    assert c.asking_pays
    # the closed-form policy here: act on 0.9 only, ask on 0.8, 0.6, 0.5, escalate 0.4, 0.2
    assert c.calibrated_cost == pytest.approx((0 + 0.5 + 5 + 0.5 + 3 + 3) / 6)
    assert brute_force(conf, out, 9, 3, 0.5, 5)[:2] == (0.8, 0.5)


def test_five_predictions_tie_goes_to_fewer_escalated():
    conf, out = [0.95, 0.9, 0.8, 0.7, 0.6], [1, 1, 0, 1, 0]
    c = choose_actions(conf, out, l_wrong=9, l_defer=3, l_ask=1, l_ask_wrong=5)
    # act on two and escalate three costs 9, as does act two, ask two, escalate one
    assert (c.act_threshold, c.ask_threshold, c.n_escalated) == (0.9, 0.7, 1)
    assert c.cost == pytest.approx(9 / 5)
    assert (c.calibrated_act_threshold, c.calibrated_ask_threshold) == pytest.approx((0.8, 0.5))


def random_data(rng, n, levels):
    conf = rng.integers(0, levels + 1, n) / levels  # coarse grid: many ties, 0 and 1 included
    conf = np.clip(conf + rng.normal(0, 0.05, n).round(2), 0, 1)
    out = (rng.random(n) < conf**0.7).astype(int)  # miscalibrated on purpose
    return conf, out


@pytest.mark.filterwarnings("ignore::calibkit.CalibkitWarning")  # synthetic: any value in [0, 1]
@pytest.mark.parametrize("seed", range(8))
def test_fast_search_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    conf, out = random_data(rng, int(rng.integers(5, 80)), int(rng.integers(2, 12)))
    l_wrong = int(rng.integers(2, 30))
    l_defer = int(rng.integers(1, l_wrong))
    l_ask = int(rng.integers(0, l_defer + 2))
    l_ask_wrong = l_ask + int(rng.integers(0, l_wrong))
    c = choose_actions(
        conf, out, l_wrong=l_wrong, l_defer=l_defer, l_ask=l_ask, l_ask_wrong=l_ask_wrong
    )
    act, ask, cost = brute_force(conf, out, l_wrong, l_defer, l_ask, l_ask_wrong)
    # integer costs: exact sums, so the tie rule is checked too
    assert (c.act_threshold, c.ask_threshold) == (act, ask)
    assert c.cost == pytest.approx(cost, rel=1e-12)
    # non-integer costs: the same optimum value
    f = 1 / 3
    c = choose_actions(
        conf,
        out,
        l_wrong=l_wrong * f,
        l_defer=l_defer * f,
        l_ask=l_ask * f,
        l_ask_wrong=l_ask_wrong * f,
    )
    assert c.cost == pytest.approx(cost * f, rel=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_useless_asking_reduces_to_choose_threshold(seed):
    rng = np.random.default_rng(100 + seed)
    conf, out = random_data(rng, 400, 30)
    # asking costs more than escalating whatever the outcome: never worth it
    c = choose_actions(conf, out, l_wrong=10, l_defer=1, l_ask=1.5, l_ask_wrong=4)
    t = ck.choose_threshold(conf, out, 10, 1)
    assert c.ask_threshold == c.act_threshold == t.threshold
    assert c.n_asked == 0 and c.share_asked == 0.0
    assert c.cost == pytest.approx(t.cost, rel=1e-12)
    assert c.risk == pytest.approx(t.risk) and c.n_acted == t.n_acted
    assert not c.asking_pays
    assert c.calibrated_act_threshold == c.calibrated_ask_threshold == ck.chow_threshold(10, 1)


@pytest.mark.parametrize("seed", range(5))
def test_never_above_the_best_two_action_policy(seed):
    rng = np.random.default_rng(200 + seed)
    conf, out = random_data(rng, 300, 25)
    costs = dict(l_wrong=8.0, l_defer=2.0, l_ask=0.7, l_ask_wrong=3.5)
    c = choose_actions(conf, out, **costs)
    act_or_escalate = ck.choose_threshold(conf, out, 8.0, 2.0).cost
    # act or ask (never escalate) and ask or escalate (never act), by hand
    thresholds = np.r_[np.inf, np.unique(conf)]
    wrong = out == 0
    act_or_ask = min(
        (
            8.0 * np.sum((conf >= t) & wrong)
            + 0.7 * np.sum((conf < t) & ~wrong)
            + 3.5 * np.sum((conf < t) & wrong)
        )
        / conf.size
        for t in thresholds
    )
    ask_or_escalate = min(
        (
            0.7 * np.sum((conf >= t) & ~wrong)
            + 3.5 * np.sum((conf >= t) & wrong)
            + 2.0 * np.sum(conf < t)
        )
        / conf.size
        for t in thresholds
    )
    best_two = min(act_or_escalate, act_or_ask, ask_or_escalate)
    assert c.cost <= best_two + 1e-12
    assert c.cost <= c.calibrated_cost + 1e-12  # the closed-form pair is one of the candidates


def test_calibrated_data_approach_the_closed_form():
    rng = np.random.default_rng(7)
    n = 200_000
    conf = rng.random(n)
    out = (rng.random(n) < conf).astype(np.int8)  # calibrated by construction
    c = choose_actions(conf, out, l_wrong=9, l_defer=3, l_ask=1, l_ask_wrong=5)
    assert (c.calibrated_act_threshold, c.calibrated_ask_threshold) == pytest.approx((0.8, 0.5))
    assert c.act_threshold == pytest.approx(0.8, abs=0.03)
    assert c.ask_threshold == pytest.approx(0.5, abs=0.03)
    # the expected cost of the closed-form policy: integrate the lower envelope over p ~ U(0, 1)
    expected = 3 * 0.5 + (5 * 0.3 - 4 * (0.8**2 - 0.5**2) / 2) + 9 * 0.2**2 / 2
    assert c.calibrated_cost == pytest.approx(expected, abs=0.01)
    assert c.calibrated_cost - c.cost < 0.005  # in-sample optimum, but only just below


@pytest.mark.parametrize("seed", range(20))
def test_closed_form_is_the_lower_envelope(seed):
    rng = np.random.default_rng(300 + seed)
    l_wrong = rng.uniform(1, 20)
    l_defer = rng.uniform(0.05, 0.95) * l_wrong
    l_ask = rng.uniform(0, 1.5) * l_defer
    l_ask_wrong = l_ask + rng.uniform(0, 1.5) * l_wrong
    act_t, ask_t = calibrated_actions(
        l_wrong=l_wrong, l_defer=l_defer, l_ask=l_ask, l_ask_wrong=l_ask_wrong
    )
    assert 0.0 <= ask_t <= act_t <= 1.0
    p = np.linspace(0, 1, 2001)
    lines = np.stack(
        [np.full_like(p, l_defer), p * l_ask + (1 - p) * l_ask_wrong, (1 - p) * l_wrong]
    )
    policy = np.where(p >= act_t, 2, np.where(p >= ask_t, 1, 0))
    chosen = lines[policy, np.arange(p.size)]
    assert np.all(chosen <= lines.min(axis=0) + 1e-9)


def test_closed_form_special_cases():
    assert calibrated_actions(l_wrong=10.0, l_defer=1.0, l_ask=2.0, l_ask_wrong=2.0) == (
        0.9,
        0.9,
    )  # dominated by escalating
    assert calibrated_actions(l_wrong=10.0, l_defer=1.0, l_ask=0.0, l_ask_wrong=12.0) == (
        0.9,
        0.9,
    )  # steeper than acting
    act, ask = calibrated_actions(
        l_wrong=10.0, l_defer=1.0, l_ask=0.5, l_ask_wrong=0.5
    )  # constant, below escalating: never escalate
    assert (act, ask) == (pytest.approx(0.95), 0.0)


def test_escalate_everything_and_json():
    c = choose_actions([0.9, 0.8], [0, 0], l_wrong=10, l_defer=1, l_ask=2, l_ask_wrong=2)
    assert math.isinf(c.act_threshold) and math.isinf(c.ask_threshold)
    assert (c.n_escalated, c.cost) == (2, 1.0) and math.isnan(c.risk)
    d = json.loads(json.dumps(c.to_dict()))
    assert d["act_threshold"] is None and d["risk"] is None and d["asking_pays"] is False
    text = str(c)
    assert "above all" in text and "asking never pays" in text and "escalate" in text


def test_str_and_dict_of_a_three_region_choice():
    c = choose_actions(
        [0.9, 0.2, 0.8, 0.5, 0.6, 0.4],
        [1, 0, 1, 1, 0, 0],
        l_wrong=9,
        l_defer=3,
        l_ask=0.5,
        l_ask_wrong=5,
    )
    text = str(c)
    assert ">= 0.8" in text and "[0.5, 0.8)" in text and "< 0.5" in text
    assert "calibrated closed form: act >= 0.8889, ask >= 0.4444" in text
    d = json.loads(json.dumps(c.to_dict()))
    assert d["act_threshold"] == 0.8 and d["n_asked"] == 2 and d["asking_pays"] is True


@pytest.mark.parametrize(
    ("costs", "match"),
    [
        (dict(l_wrong=0, l_defer=1, l_ask=0, l_ask_wrong=0), "l_wrong must be a positive"),
        (dict(l_wrong=10, l_defer=0, l_ask=0, l_ask_wrong=0), "l_defer must be a positive"),
        (dict(l_wrong=1, l_defer=2, l_ask=0, l_ask_wrong=0), r"l_defer < l_wrong"),
        (
            dict(l_wrong=10, l_defer=1, l_ask=-1, l_ask_wrong=0),
            "l_ask must be a finite number >= 0",
        ),
        (
            dict(l_wrong=10, l_defer=1, l_ask=0, l_ask_wrong=math.nan),
            "l_ask_wrong must be a finite",
        ),
        (dict(l_wrong=10, l_defer=1, l_ask=math.inf, l_ask_wrong=0), "l_ask must be a finite"),
        (dict(l_wrong=10, l_defer=1, l_ask=True, l_ask_wrong=2), "l_ask must be a finite"),
        (dict(l_wrong=10, l_defer=1, l_ask=3, l_ask_wrong=2), r"l_ask_wrong >= l_ask"),
    ],
)
def test_bad_costs(costs, match):
    with pytest.raises(ck.InputError, match=f"choose_actions: .*{match}"):
        choose_actions([0.9, 0.5], [1, 0], **costs)


def test_bad_data():
    costs = dict(l_wrong=10, l_defer=1, l_ask=0.5, l_ask_wrong=2)
    with pytest.raises(ck.InputError, match="choose_actions: confidence is empty"):
        choose_actions([], [], **costs)
    with pytest.raises(ck.InputError, match="choose_actions: confidence must .*NaN"):
        choose_actions([0.5, math.nan], [1, 0], **costs)
    with pytest.raises(ck.InputError, match="choose_actions: outcome must be 0 or 1"):
        choose_actions([0.5, 0.7], [1, 2], **costs)
