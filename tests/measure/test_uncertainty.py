"""Noise floor, bootstrap interval and goodness-of-fit tests against independent computations."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import calibkit as ck
from calibkit.measure.uncertainty import bootstrap_from_stats


def test_noise_floor_matches_the_exact_binomial_expectation():
    # one bin, every confidence 0.7, N = 100: ECE = |S/100 - 0.7| with S ~ Binomial(100, 0.7)
    k = np.arange(101)
    exact_mean = float(np.sum(stats.binom.pmf(k, 100, 0.7) * np.abs(k / 100 - 0.7)))
    floor = ck.noise_floor(np.full(100, 0.7), n_bins=1, n_sims=20_000, seed=3)
    se = np.sqrt(exact_mean * 0.05 / 20_000) + 0.002  # generous Monte Carlo allowance
    assert floor.mean == pytest.approx(exact_mean, abs=3 * se)
    assert floor.method == "exact"


def test_noise_floor_shrinks_like_one_over_root_n_and_is_seeded():
    rng = np.random.default_rng(0)
    small = ck.noise_floor(rng.uniform(0.5, 1, 400), n_sims=500, seed=1)
    large = ck.noise_floor(rng.uniform(0.5, 1, 6400), n_sims=500, seed=1)
    assert large.mean == pytest.approx(small.mean / 4, rel=0.25)
    again = ck.noise_floor(np.linspace(0.5, 1, 400), n_sims=300, seed=7)
    assert again == ck.noise_floor(np.linspace(0.5, 1, 400), n_sims=300, seed=7)


def test_noise_floor_large_bins_use_a_stated_approximation_that_agrees():
    rng = np.random.default_rng(5)
    conf = rng.uniform(0.6, 0.99, 40_000)
    floor = ck.noise_floor(conf, n_bins=5, n_sims=400, seed=0)
    assert "approximation" in floor.method
    from calibkit.measure import uncertainty

    exact_all = uncertainty.EXACT_BIN_MAX
    try:
        uncertainty.EXACT_BIN_MAX = 10**9
        exact = ck.noise_floor(conf, n_bins=5, n_sims=400, seed=0)
    finally:
        uncertainty.EXACT_BIN_MAX = exact_all
    assert exact.method == "exact"
    assert floor.mean == pytest.approx(exact.mean, rel=0.1)


def test_bootstrap_interval_brackets_the_estimate_and_is_reproducible():
    rng = np.random.default_rng(1)
    conf = rng.uniform(0.5, 1.0, 3000)
    hit = rng.random(3000) < conf - 0.08
    a = ck.bootstrap_ece(conf, hit, n_boot=500, seed=11)
    assert a == ck.bootstrap_ece(conf, hit, n_boot=500, seed=11)
    assert a.low < a.estimate < a.high
    assert a.estimate == pytest.approx(ck.ece(conf, hit))
    assert a.method == "exact resampling of rows"


def test_bootstrap_from_stats_agrees_with_exact_resampling():
    rng = np.random.default_rng(2)
    conf = rng.uniform(0.3, 1.0, 20_000)
    hit = rng.random(20_000) < conf**1.3
    exact = ck.bootstrap_ece(conf, hit, n_boot=400, seed=0)
    stats_ = ck.BinStats.from_forecasts(conf, hit, edges=ck.bin_edges(n_bins=15))
    approx = bootstrap_from_stats(stats_, "l1", 2000, np.random.default_rng(0))
    width = exact.high - exact.low
    assert np.percentile(approx, 2.5) == pytest.approx(exact.low, abs=0.15 * width)
    assert np.percentile(approx, 97.5) == pytest.approx(exact.high, abs=0.15 * width)


def test_spiegelhalter_z_matches_the_formula():
    rng = np.random.default_rng(4)
    p = rng.uniform(0.01, 0.99, 500)
    y = rng.random(500) < p
    z = np.sum((y - p) * (1 - 2 * p)) / np.sqrt(np.sum((1 - 2 * p) ** 2 * p * (1 - p)))
    result = ck.spiegelhalter_z(p, y)
    assert result.statistic == pytest.approx(z, rel=1e-10)
    assert result.p_value == pytest.approx(2 * stats.norm.sf(abs(z)), rel=1e-10)


def test_spiegelhalter_undefined_when_all_forecasts_are_half():
    result = ck.spiegelhalter_z([0.5, 0.5, 0.5], [1, 0, 1])
    assert np.isnan(result.statistic) and "undefined" in result.note
    assert result.to_dict()["statistic"] is None


def test_hosmer_lemeshow_by_hand():
    # two equal-mass groups: {0.2, 0.2} with 1 event, {0.8, 0.8} with 2 events
    result = ck.hosmer_lemeshow([0.2, 0.2, 0.8, 0.8], [0, 1, 1, 1], n_bins=2)
    by_hand = (1 - 0.4) ** 2 / (0.4 * 0.8) + (2 - 1.6) ** 2 / (1.6 * 0.2)
    assert result.statistic == pytest.approx(by_hand)
    assert result.df == 2 and result.p_value == pytest.approx(stats.chi2.sf(by_hand, 2))
    fitted = ck.hosmer_lemeshow([0.2, 0.2, 0.8, 0.8], [0, 1, 1, 1], n_bins=2, fitted=True)
    assert fitted.df == 0 and np.isnan(fitted.p_value)


def test_hosmer_lemeshow_infinite_for_certain_forecasts_that_fail():
    result = ck.hosmer_lemeshow([1.0, 1.0, 0.5, 0.5], [0, 1, 1, 0], n_bins=2)
    assert result.statistic == np.inf and "contrary" in result.note


@pytest.mark.parametrize("mode", ["numpy", "numba"])
def test_hosmer_lemeshow_deciles_are_np_quantiles_on_both_paths(monkeypatch, mode):
    """The groups' edges come from one selection of order statistics: bit-identical to
    np.quantile's, and the statistic computed from them by hand."""
    if mode == "numba":
        pytest.importorskip("numba")
    monkeypatch.setenv("CALIBKIT_KERNEL", mode)
    from calibkit.measure.bins import quantiles

    rng = np.random.default_rng(12)
    for n in (1, 2, 9, 10, 11, 1000, 250_001):
        for p in (rng.random(n), np.round(rng.random(n), 1), np.full(n, 0.35)):
            assert np.array_equal(quantiles(p, 10), np.quantile(p, np.arange(1, 10) / 10))
    p = rng.random(250_001)
    y = (rng.random(p.size) < p).astype(np.int8)
    groups = np.searchsorted(np.quantile(p, np.arange(1, 10) / 10), p, side="left")
    n_g = np.bincount(groups, minlength=10)
    observed, expected = np.bincount(groups, y, 10), np.bincount(groups, p, 10)
    by_hand = np.sum((observed - expected) ** 2 / (expected * (1 - expected / n_g)))
    t = ck.hosmer_lemeshow(p, y)
    assert t.statistic == pytest.approx(by_hand, rel=1e-10)
    assert t.p_value == pytest.approx(stats.chi2.sf(by_hand, 10), rel=1e-8)
