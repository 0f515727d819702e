"""Worked examples of calibration, each number worked out by hand: ten predictions with ECE 0.12
(0.04 in one bin), 300 stated confidences with ECE 0.117, gaps that cancel in one bin, the
uniform four-class model, the expected scores of honest, exaggerated and hedged reports, six
predictions whose NLL improves under temperature scaling while four-bin ECE gets worse
(examples/six_predictions.py), and a 63-point binary reliability table
(examples/knowledge_graph_audit.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import calibkit as ck

# ------------------------------------------------- ten predictions, bins, scores, temperature


TEN_CONF = [0.3, 0.4, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.9, 0.9]
TEN_HIT = [1, 0, 1, 0, 1, 1, 0, 1, 0, 1]


def test_ten_predictions_two_bins():
    table = ck.reliability_bins(TEN_CONF, TEN_HIT, n_bins=2)
    low, high = table.rows
    assert (low.count, high.count) == (4, 6)  # 0.5 goes to the lower bin: closed on the right
    assert low.conf == pytest.approx(1.6 / 4) and low.acc == pytest.approx(2 / 4)
    assert high.conf == pytest.approx(4.8 / 6) and high.acc == pytest.approx(4 / 6)
    assert ck.ece(TEN_CONF, TEN_HIT, n_bins=2) == pytest.approx(0.4 * 0.10 + 0.6 * (0.8 - 4 / 6))
    assert round(ck.ece(TEN_CONF, TEN_HIT, n_bins=2), 2) == 0.12


def test_ten_predictions_one_bin():
    # conf 6.4 / 10 = 0.64, acc 6 / 10 = 0.60
    assert ck.ece(TEN_CONF, TEN_HIT, n_bins=1) == pytest.approx(0.04)


def test_three_hundred_stated_confidences():
    conf = np.r_[np.full(200, 0.9), np.full(100, 0.95)]
    hit = np.r_[np.ones(150), np.zeros(50), np.ones(90), np.zeros(10)]
    table = ck.reliability_bins(conf, hit, n_bins=15)
    nonempty = [k for k, r in enumerate(table.rows) if r.count]
    assert nonempty == [13, 14]  # 0.9 in (13/15, 14/15], 0.95 in (14/15, 1]
    assert table.rows[13].acc == 0.75 and table.rows[14].acc == 0.90
    value = ck.ece(conf, hit, n_bins=15)
    assert value == pytest.approx(200 / 300 * 0.15 + 100 / 300 * 0.05)
    assert round(value, 3) == 0.117
    # overconfident beyond what chance explains: the simulated ECE of a calibrated forecaster
    # with these two values on 300 questions stays below 0.04, less than half the ECE
    floor = ck.noise_floor(conf, n_bins=15, n_sims=2000, seed=0)
    assert floor.mean < 0.04 < value / 2
    assert value > floor.p95


def test_gaps_that_cancel_in_one_bin():
    conf = np.r_[np.full(500, 0.6), np.full(500, 1.0)]
    hit = np.r_[np.ones(400), np.zeros(100), np.ones(400), np.zeros(100)]
    assert conf.mean() == pytest.approx(0.8) and hit.mean() == pytest.approx(0.8)
    assert ck.ece(conf, hit, n_bins=1) == pytest.approx(0.0, abs=1e-12)  # cancel in one bin
    table = ck.reliability_bins(conf, hit, n_bins=15)
    gaps = {round(r.conf, 6): round(r.gap, 6) for r in table.rows if r.count}
    assert gaps == {0.6: 0.2, 1.0: -0.2}  # underconfident by 0.2, overconfident by 0.2
    assert ck.ece(conf, hit, n_bins=15) == pytest.approx(0.2)
    assert table.rows[-1].count == 500  # a confidence of exactly 1.0 lands in a real bin


def test_uniform_four_class_model():
    probs = np.full((8, 4), 0.25)
    labels = np.array([0, 1, 2, 3, 0, 1, 2, 3])
    assert ck.brier(probs, labels) == pytest.approx(0.75)
    assert ck.nll(probs, labels) == pytest.approx(math.log(4))
    conf, hit = ck.top_label(probs, labels)
    assert ck.ece(conf, hit) == pytest.approx(0.0)
    assert ck.accuracy(probs, labels) == 0.25


@pytest.mark.parametrize(
    ("report", "expected_brier", "expected_log_loss"),
    [((0.7, 0.3), 0.42, 0.611), ((1.0, 0.0), 0.60, math.inf), ((0.5, 0.5), 0.50, 0.693)],
)
def test_expected_scores_of_honest_exaggerated_hedged(report, expected_brier, expected_log_loss):
    # the label is drawn from p = (0.7, 0.3): ten draws in exact proportion give the expectation
    labels = np.r_[np.zeros(7, int), np.ones(3, int)]
    probs = np.tile(report, (10, 1))
    assert ck.brier(probs, labels) == pytest.approx(expected_brier)
    if math.isinf(expected_log_loss):
        with pytest.warns(ck.CalibkitWarning, match="3 rows"):
            assert ck.nll(probs, labels) == math.inf
    else:
        assert round(ck.nll(probs, labels), 3) == expected_log_loss


def test_temperature_changes_confidence_not_prediction():
    # z = (2, 1, 0): confidence 0.665 at tau = 1 and 0.506 at tau = 2
    z = np.array([[2.0, 1.0, 0.0]])
    assert round(float(ck.softmax(z).max()), 3) == 0.665
    assert round(float(ck.softmax(z / 2).max()), 3) == 0.506
    assert ck.softmax(z).argmax() == ck.softmax(z / 2).argmax()


# ---------------------------------------------------- six predictions, one temperature

SIX_LOGITS = np.array(
    [
        [3.0, 1.0, 0.0],
        [2.5, 1.0, 0.0],
        [3.0, 0.5, 0.0],
        [1.5, 2.0, 0.0],
        [0.5, 0.0, 1.5],
        [2.0, 2.2, 0.0],
    ]
)
SIX_LABELS = np.array([0, 0, 1, 1, 2, 0])
T_FIT = 1.22975


def test_six_confidences_at_t_1_and_1_23():
    conf, hit = ck.top_label(SIX_LOGITS, SIX_LABELS, from_logits=True)
    assert np.round(conf, 3).tolist() == [0.844, 0.766, 0.883, 0.574, 0.629, 0.518]
    assert hit.tolist() == [True, True, False, True, True, False]
    conf_t, _ = ck.top_label(SIX_LOGITS / 1.23, SIX_LABELS, from_logits=True)
    assert np.round(conf_t, 3).tolist() == [0.779, 0.701, 0.821, 0.537, 0.575, 0.496]


def test_six_four_bin_ece_before_and_after():
    before = ck.top_label(SIX_LOGITS, SIX_LABELS, from_logits=True)
    after = ck.top_label(SIX_LOGITS / T_FIT, SIX_LABELS, from_logits=True)
    # four fixed bins [0, .25), [.25, .5), [.5, .75), [.75, 1]: closed on the left
    assert round(ck.ece(*before, n_bins=4, closed="left"), 3) == 0.129
    assert round(ck.ece(*after, n_bins=4, closed="left"), 3) == 0.380
    t1 = ck.reliability_bins(*before, n_bins=4, closed="left")
    assert [r.count for r in t1.rows] == [0, 0, 3, 3]
    assert [round(r.conf, 3) for r in t1.rows[2:]] == [0.574, 0.831]
    assert [round(r.acc, 3) for r in t1.rows[2:]] == [0.667, 0.667]
    t2 = ck.reliability_bins(*after, n_bins=4, closed="left")
    assert [r.count for r in t2.rows] == [0, 1, 3, 2]
    assert [round(r.conf, 3) for r in t2.rows[1:]] == [0.496, 0.604, 0.800]
    assert [round(r.acc, 3) for r in t2.rows[1:]] == [0.0, 1.0, 0.5]


def test_six_nll_and_accuracy():
    assert round(ck.nll(SIX_LOGITS, SIX_LABELS, from_logits=True), 5) == 0.82278
    assert round(ck.nll(SIX_LOGITS / T_FIT, SIX_LABELS, from_logits=True), 5) == 0.81243
    acc = ck.accuracy(SIX_LOGITS, SIX_LABELS, from_logits=True)
    assert acc == ck.accuracy(SIX_LOGITS / T_FIT, SIX_LABELS, from_logits=True) == 4 / 6


# ---------------------------------------------------- a 63-point binary reliability table


def table_forecasts(rows):
    """Forecasts consistent with a table of (count, mean confidence, positives) rows."""
    conf, out = [], []
    for count, mean, positives in rows:
        conf += [mean] * count
        out += [1] * positives + [0] * (count - positives)
    return np.array(conf), np.array(out)


BEFORE_ROWS = [(54, 0.0040, 1), (1, 0.1697, 0), (1, 0.4281, 1), (7, 0.9976, 7)]
AFTER_ROWS = [(54, 0.0156, 1), (1, 0.2459, 0), (1, 0.4491, 1), (7, 0.9860, 7)]


def test_ece_by_hand_from_the_table_rows():
    conf, out = table_forecasts(BEFORE_ROWS)
    table = ck.reliability_bins(conf, out, n_bins=10, closed="left")
    assert [r.count for r in table.rows] == [54, 1, 0, 0, 1, 0, 0, 0, 0, 7]
    assert round(table.rows[0].gap, 4) == 0.0145
    assert round(ck.ece(conf, out, n_bins=10, closed="left"), 4) == 0.0245
    conf, out = table_forecasts(AFTER_ROWS)
    assert round(ck.ece(conf, out, n_bins=10, closed="left"), 4) == 0.0167


def test_standard_error_of_the_54_point_bin():
    conf, out = table_forecasts(BEFORE_ROWS)
    table = ck.reliability_bins(conf, out, n_bins=10, closed="left")
    assert round(table.rows[0].acc, 4) == 0.0185
    assert round(table.rows[0].se, 3) == 0.018  # wider than the row's gap of +0.0145
    assert table.rows[0].se > table.rows[0].gap


def test_seven_for_seven_lower_bound():
    # p^7 = 0.05: the one-sided 95% exact bound is the lower end of the two-sided 90% interval
    low, high = ck.binomial_interval(7, 7, method="clopper-pearson", level=0.90)
    assert low == pytest.approx(0.05 ** (1 / 7), rel=1e-12)
    assert round(float(low), 3) == 0.652 and high == 1.0
    table = ck.reliability_bins(
        *table_forecasts(BEFORE_ROWS),
        n_bins=10,
        closed="left",
        interval="clopper-pearson",
        level=0.90,
    )
    assert round(table.rows[-1].ci_low, 3) == 0.652


def test_63_point_accuracy_and_auc():
    # 63 points; the true triple at p = 0.0001 outranks 12 of the 54 negatives (AUC 0.9136)
    conf, out = table_forecasts(BEFORE_ROWS)
    conf[0] = 0.0001  # the positive of the first bin: (bob, authored, p1)
    negatives = np.flatnonzero((out == 0) & (conf < 0.1))
    conf[negatives[:12]] = 0.00005
    conf[negatives[12:]] = (54 * 0.0040 - 0.0001 - 12 * 0.00005) / 41
    assert conf[:54].mean() == pytest.approx(0.0040)
    assert round(ck.accuracy(conf, out), 4) == 0.9683  # 61 of 63 at the 0.5 threshold
    # pairs ordered correctly: 12 + 54 + 7 * 54 = 444 of 9 * 54 = 486
    assert ck.auc(conf, out) == pytest.approx(444 / 486)
    assert round(ck.auc(conf, out), 4) == 0.9136
