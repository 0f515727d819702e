"""The estimator end to end: two-class CBPE against the truth scikit-learn computes from the
labels, the interval's coverage over splits, the trust rules, and bad input refused by name."""

from __future__ import annotations

import numpy as np
import pytest

import calibkit as ck
from calibkit.estimate.shift import ks_distance


def _calibrated_binary(n, rng):
    """P(label = 1) uniform and labels drawn from it: calibrated by construction."""
    p = rng.uniform(size=n)
    y = (rng.uniform(size=n) < p).astype(int)
    return np.column_stack([1 - p, p]), y


def test_binary_cbpe_covers_what_the_labels_show():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(11)
    probs, y = _calibrated_binary(6000, rng)
    ref, tgt = slice(0, 3000), slice(3000, None)
    r = ck.estimate_performance(probs[ref], y[ref], probs[tgt], n_boot=200, threshold=0.8)
    pred = probs[tgt].argmax(1)
    truth = {
        "accuracy": metrics.accuracy_score(y[tgt], pred),
        "precision": metrics.precision_score(y[tgt], pred),
        "recall": metrics.recall_score(y[tgt], pred),
        "f1": metrics.f1_score(y[tgt], pred),
        "roc_auc": metrics.roc_auc_score(y[tgt], probs[tgt, 1]),
    }
    act = probs[tgt].max(1) >= 0.8
    truth["coverage"] = act.mean()
    truth["selective_risk"] = np.mean(pred[act] != y[tgt][act])
    for name, value in truth.items():
        interval = getattr(r, name)
        assert interval.low <= value <= interval.high, (name, value, interval)
    assert r.cost is None  # no costs given


def test_cost_of_act_defer_by_hand():
    # a calibrated reference (isotonic keeps 0.6 and 0.9): target rows 0.6, 0.9, 0.9 at
    # threshold 0.8 act twice (expected wrong 0.1 each) and defer once:
    # cost = (2 * 0.2 + 1 * 0.05) / 3 with l_wrong 2, l_defer 0.05
    ref = [0.6] * 5 + [0.9] * 10
    right = [1, 1, 1, 0, 0] + [1] * 9 + [0]
    r = ck.estimate_performance(
        ref, right, [0.6, 0.9, 0.9], threshold=0.8, l_wrong=2.0, l_defer=0.05, n_boot=20
    )
    assert r.coverage.estimate == pytest.approx(2 / 3)
    assert r.selective_risk.estimate == pytest.approx(0.1)
    assert r.cost.estimate == pytest.approx((2 * 0.2 + 0.05) / 3)


@pytest.mark.parametrize("method", ["cbpe", "atc", "doc"])
def test_no_shift_coverage_over_splits(method):
    # 100 splits of one population (confidence uniform on [0.5, 1], right with probability
    # conf**2: miscalibrated but the same on both sides); the 95% interval of the estimated
    # accuracy covers the target's true accuracy in at least 88 of them.
    rng = np.random.default_rng(2024)
    hits = 0
    for split in range(100):
        conf = rng.uniform(0.5, 1.0, size=1200)
        right = (rng.uniform(size=1200) < conf**2).astype(int)
        r = ck.estimate_performance(
            conf[:600], right[:600], conf[600:], method=method, n_boot=100, seed=split
        )
        hits += r.accuracy.low <= right[600:].mean() <= r.accuracy.high
    assert hits >= 88


def test_population_interval_resamples_the_target_and_is_reproducible():
    rng = np.random.default_rng(4)
    conf = rng.uniform(0.5, 1.0, size=2000)
    right = (rng.uniform(size=2000) < conf).astype(int)
    est = ck.PerformanceEstimator().fit(conf[:1000], right[:1000])
    a = est.estimate(conf[1000:], estimand="population", n_boot=50, seed=7)
    b = est.estimate(conf[1000:], estimand="population", n_boot=50, seed=7)
    assert a.to_dict() == b.to_dict()
    assert "target rows resampled" in a.accuracy.method
    assert a.accuracy.low < a.accuracy.estimate < a.accuracy.high


def test_trust_rules_fire_with_their_numbers():
    rng = np.random.default_rng(8)
    conf = rng.uniform(0.6, 0.9, size=300)
    right = (rng.uniform(size=300) < conf).astype(int)
    shifted = rng.uniform(0.9, 1.0, size=200)  # all outside [0.6, 0.9], KS distance 1
    r = ck.estimate_performance(conf, right, shifted, n_boot=10)
    assert not r.trusted
    text = " | ".join(r.trust)
    assert "300 rows (fewer than 500)" in text
    assert "outside the reference's range" in text
    assert "Kolmogorov-Smirnov distance 1.000" in text
    assert "do not trust" in str(r)
    same = ck.estimate_performance(conf, right, conf, n_boot=10)
    assert same.trust == (r.trust[0],)  # only the size rule


def test_ks_distance_by_hand():
    # F_a - F_b at 0.25: 2/4 - 0/2
    assert ks_distance(np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.35, 0.5])) == 0.75


def test_result_reads_as_a_table_and_a_dict():
    r = ck.estimate_performance([0.6, 0.9, 0.8], [0, 1, 1], [0.7, 0.9], method="doc", n_boot=10)
    d = r.to_dict()
    assert d["method"] == "doc" and d["accuracy"]["estimate"] == r.accuracy.estimate
    assert "precision" not in d  # not a two-class model
    assert "DOC" in str(r) and "accuracy" in str(r)


# ------------------------------------------------------------------ bad input


def _fitted_multiclass():
    rng = np.random.default_rng(0)
    probs = ck.softmax(rng.normal(size=(50, 3)))
    return ck.PerformanceEstimator().fit(probs, rng.integers(0, 3, size=50))


def test_target_with_another_class_count_is_refused():
    est = _fitted_multiclass()
    with pytest.raises(ck.InputError, match="target has 4 classes but the reference 3 classes"):
        est.estimate(np.full((5, 4), 0.25))
    with pytest.raises(ck.InputError, match="target has a 1-D confidence"):
        est.estimate([0.5, 0.7])


def test_nan_in_the_target_is_refused_with_its_row():
    est = ck.PerformanceEstimator(method="atc").fit([0.5, 0.9, 0.8], [0, 1, 1])
    with pytest.raises(
        ck.InputError, match="target must not contain NaN; 1 value is NaN, first at index 1"
    ):
        est.estimate([0.7, np.nan])


def test_missing_labels_are_refused():
    with pytest.raises(ck.InputError, match="reference_labels is missing"):
        ck.PerformanceEstimator().fit([0.5, 0.9], None)


def test_class_labels_for_a_confidence_are_refused():
    with pytest.raises(ck.InputError, match="pass 0/1 outcomes"):
        ck.PerformanceEstimator().fit([0.5, 0.9, 0.7], [0, 2, 1])


def test_estimate_before_fit():
    with pytest.raises(ck.NotFittedError, match="call fit"):
        ck.PerformanceEstimator().estimate([0.5])


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"method": "nannyml"}, "method"),
        ({"calibrator": "vector"}, "calibrator 'vector' is not one to estimate with"),
        ({"calibrator": ck.TemperatureScaling()}, "TemperatureScaling\\(from_logits=False\\)"),
        ({"calibrator": 3}, "calibrator must be a name"),
        ({"method": "atc", "score": "negative_entropy"}, "needs \\(N, C\\) probabilities"),
    ],
)
def test_bad_settings(settings, message):
    with pytest.raises(ck.InputError, match=message):
        ck.PerformanceEstimator(**settings).fit([0.5, 0.9, 0.7], [0, 1, 1])


def test_costs_need_a_threshold_and_each_other():
    est = ck.PerformanceEstimator().fit([0.5, 0.9, 0.7], [0, 1, 1])
    with pytest.raises(ck.InputError, match="pass threshold= too"):
        est.estimate([0.6], l_wrong=1.0, l_defer=0.1)
    with pytest.raises(ck.InputError, match="both l_wrong and l_defer"):
        est.estimate([0.6], threshold=0.8, l_wrong=1.0)
    with pytest.raises(ck.InputError, match="threshold must be a number from 0 to 1"):
        est.estimate([0.6], threshold=1.5)
