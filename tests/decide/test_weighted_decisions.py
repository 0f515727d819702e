"""Sample weights in the decisions: whole weights give the numbers of the repeated rows (one
registry over every weighted decide function), a four-row curve worked by hand, the intervals
and the guarantee at Kish's effective size checked by simulation, and bad weights refused."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import calibkit as ck
from calibkit.measure.distributions import normal_quantile

# ----------------------------------------------------------------------------- the data


def _data(seed: int = 3, n: int = 40) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Confidences with ties (a grid of 12 values), 0/1 outcomes of both kinds, whole weights
    0..4 with some zeros (a row of weight 0 must be as if it were not there)."""
    rng = np.random.default_rng(seed)
    conf = rng.choice(np.linspace(0.5, 0.99, 12), size=n)
    out = (rng.random(n) < conf).astype(int)
    out[:2] = [0, 1]
    w = rng.integers(0, 5, size=n)
    w[:2] = [2, 3]
    w[5] = 0
    return conf, out, w


def _binary(seed: int = 4, n: int = 40) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """P(y = 1) on a grid (ties), 0/1 labels of both kinds, whole weights with zeros."""
    rng = np.random.default_rng(seed)
    p = rng.choice(np.linspace(0.02, 0.98, 15), size=n)
    y = (rng.random(n) < p).astype(int)
    y[:2] = [0, 1]
    w = rng.integers(0, 5, size=n)
    w[:2] = [1, 2]
    w[7] = 0
    return p, y, w


def _numbers(*values: Any) -> np.ndarray:
    """Every number of the values (arrays, floats, inf and NaN kept) as one flat array."""
    flat = [np.ravel(np.asarray(x, dtype=np.float64)) for x in values]
    return np.concatenate(flat)


# ----------------------------------------------------------------------------- the registry
# Each entry: (weighted call, the numbers to compare; unweighted call on the repeated rows,
# the same numbers, weighted counts standing where the repeated rows' raw counts stand).
Fn = Callable[[np.ndarray, np.ndarray, Any], np.ndarray]


def _rc(c, o, w):
    r = ck.risk_coverage(c, o, sample_weight=w)
    mass = r.n if w is None else r.weight
    errors = r.errors if w is None else r.error_weight
    return _numbers(r.threshold, r.coverage, r.risk, r.aurc, r.oracle_aurc, r.e_aurc, mass, errors)


def _rc_probs(c, o, w):
    # the probs= form: P(y = 1) of a binary model, reduced to the predicted class
    r = ck.risk_coverage(probs=c, labels=o, sample_weight=w)
    return _numbers(r.threshold, r.coverage, r.risk, r.aurc)


def _aurc(convention):
    def fn(c, o, w):
        return _numbers(ck.aurc(c, o, convention=convention, sample_weight=w))

    return fn


def _augrc(c, o, w):
    return _numbers(ck.augrc(c, o, sample_weight=w))


def _prr(c, o, w):
    return _numbers(ck.prediction_rejection_ratio(c, o, sample_weight=w))


def _selective(c, o, w):
    s = ck.selective_prediction(
        c, o, target_coverages=(0.3, 0.8), target_risks=(0.2,), n_boot=20, sample_weight=w
    )
    points = []
    for a in s.at_coverage:
        points += [a.threshold, a.coverage, a.risk, a.n_acted if w is None else a.weight_acted]
    for b in s.at_risk:
        points += [b.threshold, b.coverage, b.risk, b.n_acted if w is None else b.weight_acted]
    return _numbers(
        s.augrc,
        s.prr,
        s.aurc,
        s.aurc_rank,
        s.aurc_trapezoid,
        s.oracle_aurc,
        s.error_rate,
        s.oracle_augrc,
        points,
    )


def _risk_at(c, o, w):
    r = ck.risk_at_coverage(c, o, target_coverage=0.6, sample_weight=w)
    counts = (r.n_acted, r.errors, r.n) if w is None else (r.weight_acted, r.error_weight, r.weight)
    return _numbers(r.threshold, r.coverage, r.risk, counts)


def _coverage_at(c, o, w):
    r = ck.coverage_at_risk(c, o, target_risk=0.25, n_boot=20, sample_weight=w)
    counts = (r.n_acted, r.errors, r.n) if w is None else (r.weight_acted, r.error_weight, r.weight)
    return _numbers(r.threshold, r.coverage, r.risk, counts)


def _choose(c, o, w):
    t = ck.choose_threshold(c, o, 10, 1, sample_weight=w)
    counts = (t.n_acted, t.n) if w is None else (t.weight_acted, t.weight)
    return _numbers(t.threshold, t.cost, t.coverage, t.risk, t.chow_cost, counts)


def _actions(c, o, w):
    a = ck.choose_actions(c, o, l_wrong=9, l_defer=3, l_ask=1, l_ask_wrong=5, sample_weight=w)
    e = a.evaluate(c[::-1], o[::-1], sample_weight=None if w is None else w[::-1])
    held = (e.cost, e.share_acted, e.share_asked, e.share_escalated, e.risk)
    return _numbers(
        a.act_threshold,
        a.ask_threshold,
        a.cost,
        a.share_acted,
        a.share_asked,
        a.share_escalated,
        a.risk,
        a.calibrated_cost,
        held,
    )


def _policy(c, o, w):
    half = c.size // 2
    if w is None:  # the repeated rows: each half repeated by its own weights
        raise AssertionError("the policy table's repeated rows are built in the test")
    t = ck.policy_table(
        c[:half],
        o[:half],
        c[half:],
        o[half:],
        l_wrong=10,
        l_defer=1,
        sample_weight=w[:half],
        eval_sample_weight=w[half:],
    )
    rows = [
        (r.threshold, r.coverage, r.risk, r.cost, r.choice_cost, r.weight_acted) for r in t.rows
    ]
    return _numbers(rows, t.choice.threshold, t.choice.cost, t.eval_error_rate, t.curve.aurc)


def _policy_repeated(c, o, w):
    half = c.size // 2
    rep = np.repeat
    t = ck.policy_table(
        rep(c[:half], w[:half]),
        rep(o[:half], w[:half]),
        rep(c[half:], w[half:]),
        rep(o[half:], w[half:]),
        l_wrong=10,
        l_defer=1,
    )
    rows = [(r.threshold, r.coverage, r.risk, r.cost, r.choice_cost, r.n_acted) for r in t.rows]
    return _numbers(rows, t.choice.threshold, t.choice.cost, t.eval_error_rate, t.curve.aurc)


def _guarantee_evaluate(c, o, w):
    g = ck.guaranteed_threshold(*_data(seed=9, n=200)[:2], target_risk=0.3, delta=0.1)
    e = g.evaluate(c, o, sample_weight=w)
    return _numbers(e.coverage, e.risk, e.n_acted if w is None else e.weight_acted)


def _cost_curve(c, o, w):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = ck.cost_curve(c, o, l_wrong=10, l_defer=1, xscale="linear", sample_weight=w)
    lines = {line.get_gid(): line for line in ax.lines}
    numbers = _numbers(
        *(np.asarray(lines[g].get_ydata()) for g in ("calibkit-cost", "calibkit-minimum")),
        np.asarray(lines["calibkit-cost"].get_xdata()),
    )
    plt.close(ax.figure)
    return numbers


def _binary_choice(p, y, w):
    c = ck.choose_binary_threshold(p, y, l_false_positive=1, l_false_negative=4, sample_weight=w)
    if w is None:
        counts = (c.true_positives, c.false_positives, c.true_negatives, c.false_negatives, c.n)
    else:
        counts = (
            c.true_positive_weight,
            c.false_positive_weight,
            c.true_negative_weight,
            c.false_negative_weight,
            c.weight,
        )
    return _numbers(c.threshold, c.cost, c.bayes_cost, counts)


def _binary_table(p, y, w):
    half = p.size // 2
    if w is None:
        raise AssertionError("built in the test")
    t = ck.binary_policy_table(
        p[:half],
        y[:half],
        p[half:],
        y[half:],
        l_false_positive=1,
        l_false_negative=4,
        sample_weight=w[:half],
        eval_sample_weight=w[half:],
    )
    rows = [
        (r.threshold, r.cost, r.choice_cost, r.false_positive_weight, r.false_negative_weight)
        for r in t.rows
    ]
    return _numbers(rows, t.choice.threshold, t.choice.cost)


def _binary_table_repeated(p, y, w):
    half = p.size // 2
    rep = np.repeat
    t = ck.binary_policy_table(
        rep(p[:half], w[:half]),
        rep(y[:half], w[:half]),
        rep(p[half:], w[half:]),
        rep(y[half:], w[half:]),
        l_false_positive=1,
        l_false_negative=4,
    )
    rows = [
        (r.threshold, r.cost, r.choice_cost, r.false_positives, r.false_negatives) for r in t.rows
    ]
    return _numbers(rows, t.choice.threshold, t.choice.cost)


def _same(fn: Fn) -> tuple[Fn, Fn]:
    return fn, lambda c, o, w: fn(np.repeat(c, w), np.repeat(o, w), None)


REGISTRY: dict[str, tuple[Fn, Fn, Callable[[], tuple]]] = {
    "risk_coverage": (*_same(_rc), _data),
    "risk_coverage(probs=)": (*_same(_rc_probs), _binary),
    "aurc(step)": (*_same(_aurc("step")), _data),
    "aurc(rank)": (*_same(_aurc("rank")), _data),
    "aurc(trapezoid)": (*_same(_aurc("trapezoid")), _data),
    "augrc": (*_same(_augrc), _data),
    "prediction_rejection_ratio": (*_same(_prr), _data),
    "selective_prediction": (*_same(_selective), _data),
    "risk_at_coverage": (*_same(_risk_at), _data),
    "coverage_at_risk": (*_same(_coverage_at), _data),
    "choose_threshold": (*_same(_choose), _data),
    "choose_actions": (*_same(_actions), _data),
    "policy_table": (_policy, _policy_repeated, _data),
    "RiskGuarantee.evaluate": (*_same(_guarantee_evaluate), _data),
    "cost_curve": (*_same(_cost_curve), _data),
    "choose_binary_threshold": (*_same(_binary_choice), _binary),
    "binary_policy_table": (_binary_table, _binary_table_repeated, _binary),
}


@pytest.mark.parametrize("name", list(REGISTRY))
@pytest.mark.parametrize("seed", [0, 1])
def test_whole_weights_are_repeated_rows(name, seed):
    weighted, repeated, data = REGISTRY[name]
    c, o, w = data(seed=seed)
    got, want = weighted(c, o, w.astype(float)), repeated(c, o, w)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12, equal_nan=True)


@pytest.mark.parametrize("name", list(REGISTRY))
def test_unit_weights_change_nothing(name):
    weighted, repeated, data = REGISTRY[name]
    c, o, _ = data(seed=2)
    ones = np.ones(c.size)
    np.testing.assert_allclose(
        weighted(c, o, ones), repeated(c, o, ones.astype(int)), rtol=1e-12, equal_nan=True
    )


# ----------------------------------------------------------------------------- by hand

# Four predictions of weights 1, 2, 1, 4 (total 8), the second and fourth wrong (weight 6).
CONF4, OUT4, W4 = [0.9, 0.8, 0.7, 0.6], [1, 0, 1, 0], [1, 2, 1, 4]


def test_four_row_weighted_curve_by_hand():
    rc = ck.risk_coverage(CONF4, OUT4, sample_weight=W4)
    assert rc.threshold.tolist() == [math.inf, 0.9, 0.8, 0.7, 0.6]
    # weight acted on 0, 1, 3, 4, 8 of 8; wrong weight 0, 0, 2, 2, 6
    assert rc.coverage.tolist() == [0.0, 1 / 8, 3 / 8, 4 / 8, 1.0]
    np.testing.assert_allclose(rc.risk[1:], [0.0, 2 / 3, 2 / 4, 6 / 8], rtol=1e-15)
    assert (rc.n, rc.errors, rc.weight, rc.error_weight) == (4, 2, 8.0, 6.0)
    # step AURC: 1/8 * 0 + 2/8 * 2/3 + 1/8 * 1/2 + 4/8 * 3/4 = 29/48
    assert rc.aurc == pytest.approx(29 / 48, rel=1e-14)
    # AUGRC: generalized risks 0, 0, 2/8, 2/8, 6/8; trapezoids 0 + 2/64 + 2/64 + 16/64
    assert ck.augrc(CONF4, OUT4, sample_weight=W4) == pytest.approx(20 / 64, rel=1e-14)
    # oracle: 2 of right weight first, then 6 wrong: mean over k = 3..8 of (k - 2) / k, over 8
    oracle = sum((k - 2) / k for k in range(3, 9)) / 8
    assert rc.oracle_aurc == pytest.approx(oracle, rel=1e-12)


def test_four_row_threshold_and_actions_by_hand():
    # l_wrong 10, l_defer 1, per unit weight: nothing 8/8; >= 0.9: 7/8; >= 0.8: (20 + 5)/8;
    # >= 0.7: (20 + 4)/8; all: 60/8. The cheapest acts on the first only.
    t = ck.choose_threshold(CONF4, OUT4, 10, 1, sample_weight=W4)
    assert (t.threshold, t.n_acted, t.n, t.weight_acted, t.weight) == (0.9, 1, 4, 1.0, 8.0)
    assert t.cost == pytest.approx(7 / 8, rel=1e-15)
    assert t.coverage == 1 / 8 and t.risk == 0.0


def test_four_row_interval_at_kish_effective_size():
    # coverage 0.5 acts on weights 1, 2, 1 (risk 2/4): n_eff = 4 ** 2 / (1 + 4 + 1) = 8/3
    r = ck.risk_at_coverage(CONF4, OUT4, target_coverage=0.5, sample_weight=W4)
    assert (r.n_acted, r.errors, r.weight_acted, r.error_weight) == (3, 1, 4.0, 2.0)
    assert r.effective_n == pytest.approx(8 / 3, rel=1e-15)
    n, p, z = 8 / 3, 0.5, float(normal_quantile(0.975))
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    assert (r.low, r.high) == pytest.approx((centre - half, centre + half), rel=1e-12)
    # equal weights: the effective size is the row count and the interval the unweighted one
    eq = ck.risk_at_coverage(
        CONF4, OUT4, target_coverage=0.5, sample_weight=[3, 3, 3, 3], interval="clopper-pearson"
    )
    plain = ck.risk_at_coverage(CONF4, OUT4, target_coverage=0.5, interval="clopper-pearson")
    assert (eq.low, eq.high) == pytest.approx((plain.low, plain.high), rel=1e-9)


def test_zero_weight_row_is_no_threshold_but_is_counted_raw():
    rc = ck.risk_coverage([0.95, 0.9, 0.8], [0, 1, 0], sample_weight=[0, 1, 1])
    assert rc.threshold.tolist() == [math.inf, 0.9, 0.8]
    r = ck.risk_at_coverage(
        [0.95, 0.9, 0.8], [0, 1, 0], target_coverage=0.5, sample_weight=[0, 1, 1]
    )
    # acting at 0.9 acts on two rows (the weightless one too) of weight 1, none wrong by weight
    assert (r.n_acted, r.errors, r.weight_acted, r.risk) == (2, 1, 1.0, 0.0)


def test_weighted_binary_threshold_by_hand():
    # the negative at 0.4 weighs 8: flagging down to 0.3 costs 8 (per 13), stopping at 0.6
    # misses the positive at 0.3 (4 per 13)
    c = ck.choose_binary_threshold(
        [0.9, 0.6, 0.4, 0.3, 0.1, 0.05],
        [1, 1, 0, 1, 0, 0],
        l_false_positive=1,
        l_false_negative=4,
        sample_weight=[1, 1, 8, 1, 1, 1],
    )
    assert c.threshold == 0.6 and c.cost == pytest.approx(4 / 13, rel=1e-15)
    assert (c.false_negatives, c.false_negative_weight, c.weight) == (1, 1.0, 13.0)


def test_unweighted_dicts_keep_their_keys():
    t = ck.choose_threshold(CONF4, OUT4, 10, 1)
    assert "weight" not in t.to_dict() and "weight_acted" not in t.to_dict()
    tw = ck.choose_threshold(CONF4, OUT4, 10, 1, sample_weight=W4).to_dict()
    assert (tw["weight"], tw["weight_acted"], tw["n_acted"]) == (8.0, 1.0, 1)
    assert "weight" not in ck.risk_coverage(CONF4, OUT4).to_dict()
    assert ck.risk_coverage(CONF4, OUT4, sample_weight=W4).to_dict()["error_weight"] == 6.0


# ----------------------------------------------------------------------------- the guarantee


def test_guarantee_with_equal_weights_is_the_unweighted_one():
    conf = [1 - i / 100 for i in range(21)]
    out = [1] * 20 + [0]
    plain = ck.guaranteed_threshold(conf, out, target_risk=0.2, delta=0.05)
    tripled = ck.guaranteed_threshold(
        conf, out, target_risk=0.2, delta=0.05, sample_weight=[3] * 21
    )
    assert (tripled.threshold, tripled.n_acted, tripled.n_tested) == (0.81, 20, 8)
    assert tripled.bound == pytest.approx(plain.bound, rel=1e-9)
    assert tripled.effective_n == pytest.approx(20.0) and tripled.weight_acted == 60.0
    assert "only approximately" in tripled.guarantee
    # read as 63 independent cases the copies would certify the wrong one too (3 errors in 63
    # bound the risk by 0.118): weights are not read as repeated rows here
    repeated = ck.guaranteed_threshold(np.repeat(conf, 3), np.repeat(out, 3), target_risk=0.2)
    assert (repeated.threshold, repeated.n_acted) == (0.8, 63)
    assert repeated.bound == pytest.approx(0.1185, abs=1e-4)


def test_guarantee_skips_thresholds_below_the_effective_size():
    # forty right predictions, the first of weight 5: the k most confident have an effective
    # size (4 + k) ** 2 / (24 + k), which reaches the 14 cases the target needs at k = 22
    # (unweighted: at k = 14), so 40 - 21 thresholds are tested; no error, all pass
    conf = np.linspace(0.99, 0.5, 40)
    out = np.ones(40, dtype=int)
    w = np.ones(40)
    w[0] = 5.0
    g = ck.guaranteed_threshold(conf, out, target_risk=0.2, delta=0.05, sample_weight=w)
    plain = ck.guaranteed_threshold(conf, out, target_risk=0.2, delta=0.05)
    assert g.min_acted == plain.min_acted == 14
    assert (g.n_tested, plain.n_tested) == (19, 27)
    assert g.threshold == 0.5 and g.n_acted == 40
    assert g.effective_n == pytest.approx(44**2 / 64, rel=1e-12)
    # no error: the one-sided Clopper-Pearson bound is 1 - delta ** (1 / n_eff)
    assert g.bound == pytest.approx(1 - 0.05 ** (64 / 44**2), rel=1e-9)


def test_weighted_guarantee_says_when_the_effective_size_is_too_small():
    # one row of weight 30 among 39 of weight 1: an effective size of 69 ** 2 / 939 = 5.07
    w = np.ones(40)
    w[0] = 30.0
    conf, out = np.linspace(0.99, 0.5, 40), np.ones(40, dtype=int)
    g = ck.guaranteed_threshold(conf, out, target_risk=0.2, delta=0.05, sample_weight=w)
    assert math.isinf(g.threshold) and g.n_tested == 0 and g.coverage == 0.0
    assert "an effective size of at least 14 acted-on cases" in str(g)


def test_weighted_guarantee_holds_by_simulation():
    # conf ~ U(0.5, 1), right with probability conf: the risk among conf >= t is (1 - t) / 2.
    # Weights independent of the outcome, spread over a factor of 4.
    rng = np.random.default_rng(11)
    target, delta, draws, violated = 0.15, 0.1, 300, 0
    for _ in range(draws):
        conf = rng.uniform(0.5, 1.0, 300)
        out = (rng.random(300) < conf).astype(int)
        w = rng.uniform(1.0, 4.0, 300)
        g = ck.guaranteed_threshold(conf, out, target_risk=target, delta=delta, sample_weight=w)
        if math.isfinite(g.threshold) and (1 - g.threshold) / 2 > target:
            violated += 1
    assert violated / draws <= delta + 0.03


def test_weighted_wilson_interval_covers_by_simulation():
    # all acted on (coverage 1): the population risk is E[1 - conf] = 0.25 with weights
    # independent of the outcome, spread over a factor of 4
    rng = np.random.default_rng(12)
    draws, covered = 600, 0
    for _ in range(draws):
        conf = rng.uniform(0.5, 1.0, 150)
        out = (rng.random(150) < conf).astype(int)
        w = rng.uniform(1.0, 4.0, 150)
        r = ck.risk_at_coverage(conf, out, target_coverage=1.0, sample_weight=w)
        covered += r.low <= 0.25 <= r.high
    assert 0.93 <= covered / draws <= 0.97


# ----------------------------------------------------------------------------- bad weights

CALLS: dict[str, Callable[[Any], Any]] = {
    "risk_coverage": lambda w: ck.risk_coverage(CONF4, OUT4, sample_weight=w),
    "aurc": lambda w: ck.aurc(CONF4, OUT4, sample_weight=w),
    "augrc": lambda w: ck.augrc(CONF4, OUT4, sample_weight=w),
    "prediction_rejection_ratio": lambda w: ck.prediction_rejection_ratio(
        CONF4, OUT4, sample_weight=w
    ),
    "selective_prediction": lambda w: ck.selective_prediction(CONF4, OUT4, sample_weight=w),
    "risk_at_coverage": lambda w: ck.risk_at_coverage(
        CONF4, OUT4, target_coverage=0.5, sample_weight=w
    ),
    "coverage_at_risk": lambda w: ck.coverage_at_risk(
        CONF4, OUT4, target_risk=0.5, sample_weight=w
    ),
    "choose_threshold": lambda w: ck.choose_threshold(CONF4, OUT4, 10, 1, sample_weight=w),
    "choose_actions": lambda w: ck.choose_actions(
        CONF4, OUT4, l_wrong=9, l_defer=3, l_ask=1, l_ask_wrong=5, sample_weight=w
    ),
    "policy_table (validation)": lambda w: ck.policy_table(
        CONF4, OUT4, CONF4, OUT4, l_wrong=10, l_defer=1, sample_weight=w
    ),
    "guaranteed_threshold": lambda w: ck.guaranteed_threshold(
        CONF4, OUT4, target_risk=0.5, sample_weight=w
    ),
    "choose_binary_threshold": lambda w: ck.choose_binary_threshold(
        CONF4, OUT4, l_false_positive=1, l_false_negative=2, sample_weight=w
    ),
    "binary_policy_table (validation)": lambda w: ck.binary_policy_table(
        CONF4, OUT4, CONF4, OUT4, l_false_positive=1, l_false_negative=2, sample_weight=w
    ),
    "cost_curve": lambda w: ck.cost_curve(CONF4, OUT4, l_wrong=10, l_defer=1, sample_weight=w),
}

BAD = [
    ([1, 1, -2, 1], r"sample_weight must not be negative; 1 weight is, first at index 2: -2"),
    ([1, np.nan, 1, 1], r"sample_weight must be finite; 1 value is not, first at index 1: nan"),
    ([0, 0, 0, 0], "every sample_weight is zero"),
    ([1, 1, 1], "sample_weight has 3 entries"),
]


@pytest.mark.parametrize("name", list(CALLS))
@pytest.mark.parametrize(("w", "match"), BAD, ids=["negative", "nan", "all zero", "short"])
def test_bad_weights_are_refused_with_the_function_named(name, w, match):
    with pytest.raises(ck.InputError, match=match) as info:
        CALLS[name](w)
    assert str(info.value).startswith(f"{name}:")


def test_eval_weights_are_checked_and_named():
    with pytest.raises(ck.InputError, match=r"policy_table \(test\): eval_sample_weight has 3"):
        ck.policy_table(
            CONF4, OUT4, CONF4, OUT4, l_wrong=10, l_defer=1, eval_sample_weight=[1, 1, 1]
        )
    with pytest.raises(
        ck.InputError, match=r"binary_policy_table \(test\): eval_sample_weight must not be"
    ):
        ck.binary_policy_table(
            CONF4,
            OUT4,
            CONF4,
            OUT4,
            l_false_positive=1,
            l_false_negative=2,
            eval_sample_weight=[1, -1, 1, 1],
        )


def test_prr_undefined_when_every_weighted_prediction_is_right():
    with pytest.raises(
        ck.InputError, match="every prediction of positive weight is right, so the oracle"
    ):
        # the wrong rows weigh nothing
        ck.prediction_rejection_ratio(CONF4, OUT4, sample_weight=[1, 0, 1, 0])


def test_the_decisions_section_of_docs_weights_runs():
    import doctest
    from pathlib import Path

    text = (Path(__file__).parents[2] / "docs" / "weights.md").read_text()
    section = text.split("## Decisions", 1)[1].split("\n## ", 1)[0]
    test = doctest.DocTestParser().get_doctest(section, {}, "weights.md#decisions", None, 0)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
    assert len(test.examples) >= 4
