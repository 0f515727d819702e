"""The ECE family beyond the worked examples: norms, class-wise ECE, the debiased estimator."""

from __future__ import annotations

import numpy as np
import pytest

import calibkit as ck


def test_norms_by_hand():
    conf = [0.2, 0.2, 0.9, 0.9, 0.9, 0.9]
    hit = [0, 0, 1, 1, 0, 0]  # bin (0, .5]: gap -0.2 over 2; bin (.5, 1]: gap -0.4 over 4
    assert ck.ece(conf, hit, n_bins=2) == pytest.approx((2 * 0.2 + 4 * 0.4) / 6)
    assert ck.ece(conf, hit, n_bins=2, norm="l2") == pytest.approx(
        np.sqrt((2 * 0.04 + 4 * 0.16) / 6)
    )
    assert ck.ece(conf, hit, n_bins=2, norm="max") == pytest.approx(0.4)


def test_classwise_ece_is_the_mean_of_per_class_ece():
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(4), size=300)
    labels = rng.integers(0, 4, 300)
    per_class = [ck.ece(probs[:, k], labels == k) for k in range(4)]
    assert ck.classwise_ece(probs, labels) == pytest.approx(np.mean(per_class))


def test_debiased_estimator_is_unbiased_where_the_plugin_is_not():
    # two confidence values with true accuracies 0.4 and 0.8: true squared CE = 0.1^2 = 0.01
    rng = np.random.default_rng(0)
    conf = np.r_[np.full(25, 0.3), np.full(25, 0.7)]
    truth = np.r_[np.full(25, 0.4), np.full(25, 0.8)]
    edges = [0.0, 0.5, 1.0]
    debiased, plugin = [], []
    for _ in range(4000):
        hit = rng.random(50) < truth
        debiased.append(ck.debiased_squared_ce(conf, hit, edges=edges))
        plugin.append(ck.ece(conf, hit, edges=edges, norm="l2") ** 2)
    assert np.mean(debiased) == pytest.approx(0.01, abs=0.0015)
    expected_bias = 0.5 * (0.4 * 0.6 / 25) + 0.5 * (0.8 * 0.2 / 25)
    assert np.mean(plugin) == pytest.approx(0.01 + expected_bias, abs=0.0015)


def test_quantile_bins_hold_equal_mass():
    conf = np.linspace(0.01, 0.99, 1000)
    table = ck.reliability_bins(conf, conf > 0.5, n_bins=10, strategy="quantile")
    assert table.count.tolist() == [100] * 10


def test_explicit_edges_and_edge_conventions():
    conf = [0.0, 0.25, 0.5, 0.75, 1.0]
    hit = [0, 0, 1, 1, 1]
    right = ck.reliability_bins(conf, hit, edges=[0, 0.25, 0.5, 0.75, 1])
    left = ck.reliability_bins(conf, hit, edges=[0, 0.25, 0.5, 0.75, 1], closed="left")
    assert right.count.tolist() == [2, 1, 1, 1]  # 0 and 0.25 in the first bin
    assert left.count.tolist() == [1, 1, 1, 2]  # 0.75 and 1 in the last bin
    assert right.bin_labels()[0] == "[0, 0.25]" and right.bin_labels()[1] == "(0.25, 0.5]"
    assert left.bin_labels()[-1] == "[0.75, 1]" and left.bin_labels()[0] == "[0, 0.25)"
