"""CBPE, ATC and DoC on cases worked by hand, and the identity that each one, read on its own
reference, returns the reference's accuracy."""

from __future__ import annotations

import numpy as np
import pytest

import calibkit as ck


def _accuracy(method, ref, ref_labels, target, **settings):
    est = ck.PerformanceEstimator(method=method, **settings).fit(ref, ref_labels)
    return est.estimate(target, n_boot=5).accuracy.estimate


def test_cbpe_on_a_calibrated_reference_is_the_mean_confidence():
    # 3 of 5 right at 0.6, 9 of 10 at 0.9: isotonic maps 0.6 -> 0.6, 0.9 -> 0.9 and
    # interpolates between them, so every target row keeps its confidence.
    ref = [0.6] * 5 + [0.9] * 10
    right = [1, 1, 1, 0, 0] + [1] * 9 + [0]
    target = [0.6, 0.9, 0.9, 0.75]
    assert _accuracy("cbpe", ref, right, target) == pytest.approx(np.mean(target), abs=1e-12)


def test_atc_threshold_by_hand():
    # 2 of 4 wrong: the threshold is the 2nd smallest score, 0.4; the share above it is 1/2,
    # the reference accuracy. Target: 0.5 and 0.95 above 0.4, 0.3 below: 2/3.
    assert _accuracy("atc", [0.1, 0.4, 0.6, 0.9], [0, 1, 0, 1], [0.3, 0.5, 0.95]) == 2 / 3


def test_atc_counts_a_share_of_rows_tied_at_the_threshold():
    # 3 of 5 right; the 2nd smallest score is 0.9, shared by 4 rows, none above it: each row at
    # 0.9 counts 3/4 so that the reference's share is its accuracy, 4 * 3/4 / 5 = 3/5.
    ref, right = [0.9, 0.9, 0.9, 0.9, 0.5], [1, 1, 1, 0, 0]
    assert _accuracy("atc", ref, right, [0.9, 0.95, 0.5]) == pytest.approx((0.75 + 1 + 0) / 3)
    assert _accuracy("atc", ref, right, ref) == pytest.approx(0.6)


def test_atc_negative_entropy_score():
    probs = np.array([[0.9, 0.05, 0.05], [0.5, 0.3, 0.2], [0.4, 0.35, 0.25], [0.6, 0.4, 0.0]])
    labels = np.array([0, 1, 0, 0])  # right, wrong, right, right
    neg_entropy = [sum(p * np.log(p) for p in row if p > 0) for row in probs]
    # 1 wrong: the threshold is the smallest score, row 2's; the other three lie above it
    assert np.argmin(neg_entropy) == 2
    target = np.array([[0.34, 0.33, 0.33], [0.98, 0.01, 0.01]])  # below, above
    got = _accuracy("atc", probs, labels, target, score="negative_entropy")
    assert got == pytest.approx(0.5)


def test_doc_by_hand():
    # accuracy 1/2, mean confidence 0.75; target mean confidence 0.55: 0.5 - (0.75 - 0.55)
    got = _accuracy("doc", [0.9, 0.8, 0.7, 0.6], [1, 1, 0, 0], [0.5, 0.6])
    assert got == pytest.approx(0.3)


@pytest.mark.parametrize("method", ["cbpe", "atc", "doc"])
def test_each_method_on_its_own_reference_gives_the_reference_accuracy(method):
    # isotonic regression keeps the mean of the labels; ATC's share above its threshold is the
    # accuracy by construction; DoC's confidence difference is zero.
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(400, 4)) * 2
    probs = ck.softmax(logits)
    labels = np.array([rng.choice(4, p=p) for p in ck.softmax(logits * 0.7)])
    truth = np.mean(probs.argmax(1) == labels)
    assert _accuracy(method, probs, labels, probs) == pytest.approx(truth, abs=1e-12)


def test_temperature_cbpe_matches_the_mean_of_the_calibrated_top_label():
    rng = np.random.default_rng(5)
    logits = rng.normal(size=(600, 3)) * 3
    labels = np.array([rng.choice(3, p=p) for p in ck.softmax(logits / 2)])
    ts = ck.TemperatureScaling().fit(logits, labels)
    target = rng.normal(size=(200, 3)) * 3
    expected = ck.softmax(target / ts.temperature_).max(axis=1).mean()
    got = _accuracy("cbpe", logits, labels, target, calibrator="temperature", from_logits=True)
    assert got == pytest.approx(expected, rel=1e-6)
