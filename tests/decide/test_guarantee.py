"""The guaranteed-risk threshold: a seeded simulation with a known risk function keeps the
promise in at least 1 - delta of repeated calibration draws; fixed-sequence mechanics by hand."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import calibkit as ck
from calibkit.decide.guarantee import (
    clopper_pearson_upper,
    fewest_acted,
    guaranteed_threshold,
)


def true_risk(threshold):
    """Confidence uniform on [0, 1], P(wrong | p) = 0.8 (1 - p): the selective risk of acting
    when p >= t is the mean of 0.8 (1 - p) over [t, 1], that is 0.4 (1 - t)."""
    t = np.asarray(threshold, dtype=float)
    return np.where(np.isinf(t), 0.0, 0.4 * (1.0 - np.minimum(t, 1.0)))


@pytest.mark.parametrize(("target", "delta"), [(0.1, 0.05), (0.1, 0.2)])
def test_promise_kept_in_repeated_draws(target, delta):
    draws, n = 300, 2000
    rng = np.random.default_rng(2021)
    conf = rng.random((draws, n))
    correct = rng.random((draws, n)) >= 0.8 * (1.0 - conf)
    chosen = np.array(
        [
            guaranteed_threshold(conf[i], correct[i], target_risk=target, delta=delta).threshold
            for i in range(draws)
        ]
    )
    violations = np.mean(true_risk(chosen) > target)
    allowance = 3 * math.sqrt(delta * (1 - delta) / draws)
    assert violations <= delta + allowance
    # not vacuous: most draws act on something, near the true limit 1 - target / 0.4 = 0.75
    acted = np.isfinite(chosen)
    assert acted.mean() > 0.7
    assert 0.75 < np.median(chosen[acted]) < 0.9
    # and the simulation can see a violation: the naive rule (most permissive threshold whose
    # empirical risk is within the target) breaks the promise about half the time
    order = np.argsort(-conf, axis=1)
    sorted_conf = np.take_along_axis(conf, order, axis=1)
    wrong = np.cumsum(~np.take_along_axis(correct, order, axis=1), axis=1)
    risk = wrong / np.arange(1, n + 1)
    last_ok = n - 1 - np.argmax((risk <= target)[:, ::-1], axis=1)
    naive = sorted_conf[np.arange(draws), last_ok]
    assert np.mean(true_risk(naive) > target) > 0.3


def test_more_permissive_as_the_target_grows():
    rng = np.random.default_rng(5)
    conf = rng.random(3000)
    correct = rng.random(3000) >= 0.8 * (1 - conf)
    targets = [0.02, 0.05, 0.08, 0.1, 0.15, 0.2, 0.3, 0.5]
    results = [guaranteed_threshold(conf, correct, target_risk=t) for t in targets]
    thresholds = [g.threshold for g in results]
    assert thresholds == sorted(thresholds, reverse=True)
    assert [g.coverage for g in results] == sorted(g.coverage for g in results)
    for g in results:
        if math.isfinite(g.threshold):
            assert g.bound <= g.target_risk and g.risk <= g.bound


def test_walk_starts_at_min_acted_and_stops_at_the_first_failure():
    # target 0.2, delta 0.05: 14 error-free cases are needed (1 - 0.05 ** (1 / 14) = 0.192)
    assert fewest_acted(0.2, 0.05) == 14
    conf = np.linspace(1.0, 0.5, 215)
    correct = np.ones(215, dtype=bool)
    correct[14] = False  # the 15th case is wrong: bound with 1 / 15 is 0.30 > 0.2
    g = guaranteed_threshold(conf, correct, target_risk=0.2, delta=0.05)
    assert (g.n_acted, g.errors, g.n_tested, g.min_acted) == (14, 0, 2, 14)
    assert g.threshold == conf[13]
    assert g.bound == pytest.approx(1 - 0.05 ** (1 / 14))
    # 1 error in 215 would pass, but the fixed sequence never gets there
    assert clopper_pearson_upper(np.array([1]), np.array([215]), 0.05)[0] < 0.2


def test_bound_is_the_clopper_pearson_upper_limit():
    k = np.array([0, 1, 3, 10, 20])
    n = np.array([5, 20, 30, 40, 20])
    _, hi = ck.binomial_interval(k, n, method="clopper-pearson", level=0.90)
    assert clopper_pearson_upper(k, n, 0.05) == pytest.approx(hi, rel=1e-12)


def test_target_below_the_achievable_risk_acts_on_nothing():
    # the most confident cases are wrong half the time: nothing certifies a risk of 0.1
    conf = np.linspace(0.99, 0.5, 400)
    correct = np.arange(400) % 2 == 0
    g = guaranteed_threshold(conf, correct, target_risk=0.1)
    assert math.isinf(g.threshold) and g.n_tested == 1
    assert (g.coverage, g.n_acted) == (0.0, 0) and math.isnan(g.risk) and math.isnan(g.bound)
    assert "act on nothing" in str(g) and "even the first threshold tested fails" in str(g)
    # too few cases to certify even with no error: nothing is tested
    g = guaranteed_threshold([0.99] * 10 + [0.98] * 10, [1] * 20, target_risk=0.1)
    assert math.isinf(g.threshold) and g.n_tested == 0 and g.min_acted == 29
    assert "at least 29 acted-on cases" in str(g)


def test_ties_are_accepted_together_and_everything_can_pass():
    conf = np.repeat([0.9, 0.8, 0.7], 100)
    g = guaranteed_threshold(conf, np.ones(300), target_risk=0.05)
    assert (g.threshold, g.n_acted, g.coverage, g.n_tested) == (0.7, 300, 1.0, 3)


def test_guarantee_text_and_json():
    g = guaranteed_threshold(np.linspace(1, 0.5, 100), np.ones(100), target_risk=0.05, delta=0.1)
    assert "exchangeable" in g.guarantee and "distribution shift" in g.guarantee
    assert "single decision" in g.guarantee and "after looking at test data" in g.guarantee
    assert "P(selective risk at this threshold > 0.05) <= 0.1" in g.guarantee
    d = json.loads(json.dumps(g.to_dict()))
    assert d["threshold"] == 0.5 and d["delta"] == 0.1 and d["n_tested"] == 100 - 44
    assert "threshold 0.5: coverage 1.0000" in str(g)


@pytest.mark.parametrize("bad", [0, 1, 1.5, -0.1, math.nan, True, "0.1", None])
def test_bad_target_and_delta(bad):
    with pytest.raises(ck.InputError, match="guaranteed_threshold: target_risk must be a number"):
        guaranteed_threshold([0.9], [1], target_risk=bad)
    with pytest.raises(ck.InputError, match="guaranteed_threshold: delta must be a number"):
        guaranteed_threshold([0.9], [1], target_risk=0.1, delta=bad)


def test_bad_data():
    with pytest.raises(ck.InputError, match="guaranteed_threshold: confidence is empty"):
        guaranteed_threshold([], [], target_risk=0.1)
    with pytest.raises(ck.InputError, match="guaranteed_threshold: confidence must .*NaN"):
        guaranteed_threshold([0.9, math.nan], [1, 1], target_risk=0.1)
    with pytest.raises(ck.InputError, match="guaranteed_threshold: outcome has 1 entries"):
        guaranteed_threshold([0.9, 0.8], [1], target_risk=0.1)
