"""policy_table / decision_report: the validation -> test protocol, policy by policy."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import calibkit as ck
from calibkit.decide.decision_report import decision_report
from calibkit.decide.policy import PolicyTable, act_forecast, policy_table
from calibkit.decide.thresholds import cost_at

DENSENET = Path(__file__).parents[2] / "examples" / "data" / "densenet40_cifar10_logits.npz"
CONF = [0.95, 0.9, 0.8, 0.7, 0.6]
OUT = [1, 1, 0, 1, 0]
KEYS = ["act_all", "defer_all", "chow", "chosen", "chow_calibrated"]


@pytest.fixture(scope="module")
def densenet() -> dict[str, np.ndarray]:
    with np.load(DENSENET) as d:
        return {k: d[k] for k in d.files}


@pytest.fixture(scope="module")
def densenet_table(densenet) -> PolicyTable:
    return decision_report(
        densenet["val_logits"],
        densenet["val_labels"],
        densenet["test_logits"],
        densenet["test_labels"],
        l_wrong=10,
        l_defer=1,
    )


# ----------------------------------------------------------------------------- by hand


def test_five_predictions_on_themselves():
    t = policy_table(CONF, OUT, CONF, OUT, l_wrong=10, l_defer=1)
    assert [r.key for r in t.rows] == KEYS[:4]
    costs = {r.key: r.cost for r in t.rows}
    assert costs == pytest.approx({"act_all": 4.0, "defer_all": 1.0, "chow": 0.6, "chosen": 0.6})
    assert t.row("chosen").threshold == 0.9 and t.row("chow").threshold == pytest.approx(0.9)
    assert t.row("act_all").coverage == 1.0 and t.row("act_all").risk == pytest.approx(0.4)
    assert t.row("defer_all").coverage == 0.0 and math.isnan(t.row("defer_all").risk)
    # chosen and reported on the same data here, so the validation cost is the test cost
    assert all(r.choice_cost == r.cost for r in t.rows)
    assert t.calibrated_curve is None and t.calibrated_by is None


def test_validation_chooses_test_reports():
    # validation: the 0.8 prediction is wrong, so the choice is 0.9; on test the 0.8 ones are
    # right, and the table reports what 0.9 costs there (not the test's own best threshold)
    val_conf, val_out = [0.95, 0.9, 0.8, 0.7], [1, 1, 0, 0]
    test_conf, test_out = [0.95, 0.85, 0.8, 0.8], [1, 1, 1, 1]
    t = policy_table(val_conf, val_out, test_conf, test_out, l_wrong=10, l_defer=1)
    chosen = t.row("chosen")
    assert chosen.threshold == 0.9
    assert chosen.choice_cost == pytest.approx(t.choice.cost) == pytest.approx(2 / 4)
    assert chosen.coverage == 0.25 and chosen.cost == pytest.approx(3 / 4)
    assert ck.choose_threshold(test_conf, test_out, 10, 1).cost == 0.0  # what test alone picks
    assert t.row("act_all").cost == 0.0 and t.best.key == "act_all"


def test_chow_on_a_miscalibrated_confidence_in_the_table():
    """Costs 50 and 2: Chow's 0.96 acts on predictions right 90% of the time, at
    5 per case against 2 for deferring; the validation choice defers instead."""
    conf = np.array([0.97] * 50 + [0.99] * 50)
    out = np.tile([1] * 9 + [0], 10)
    t = policy_table(conf, out, conf, out, l_wrong=50, l_defer=2)
    assert t.chow_threshold == pytest.approx(0.96)
    assert t.row("chow").cost == pytest.approx(5.0)
    assert t.row("defer_all").cost == 2.0
    assert math.isinf(t.row("chosen").threshold) and t.row("chosen").cost == 2.0


def test_recalibrated_chow_row():
    val_conf = np.array([0.95, 0.92, 0.85, 0.6])
    val_out = np.array([1, 1, 0, 1])
    cal_val = np.array([0.9, 0.85, 0.7, 0.5])  # an increasing map, softer
    t = policy_table(
        val_conf,
        val_out,
        val_conf,
        val_out,
        l_wrong=10,
        l_defer=1,
        calibrated_confidence=cal_val,
        calibrated_eval_confidence=cal_val,
        calibrated_by="a hand-made map",
    )
    row = t.row("chow_calibrated")
    assert row.calibrated and row.policy == "Chow after a hand-made map"
    assert row.n_acted == 1 and row.cost == pytest.approx(3 / 4)
    assert t.row("chow").n_acted == 2 and t.row("chow").cost == pytest.approx(2 / 4)
    assert t.calibrated_curve is not None
    assert np.array_equal(t.curve.risk, t.calibrated_curve.risk, equal_nan=True)
    assert "the same curve" in str(t)


def test_str_and_to_dict():
    t = policy_table(CONF, OUT, CONF, OUT, l_wrong=10, l_defer=1)
    text = str(t)
    for word in ("act on everything", "defer everything", "Chow's rule", "above all", "AURC"):
        assert word in text
    d = json.loads(json.dumps(t.to_dict(), allow_nan=False))
    assert [r["key"] for r in d["rows"]] == KEYS[:4]
    assert d["rows"][1]["threshold"] is None and d["rows"][1]["risk"] is None
    assert d["choice"]["threshold"] == 0.9
    assert d["risk_coverage"]["aurc"] == pytest.approx(t.curve.aurc)
    assert d["calibrated_risk_coverage"] is None


# ----------------------------------------------------------------------------- bad input


def test_bad_costs():
    with pytest.raises(ck.InputError, match=r"policy_table: deferring must cost less"):
        policy_table(CONF, OUT, CONF, OUT, l_wrong=1, l_defer=2)
    with pytest.raises(ck.InputError, match="policy_table: l_defer must be a positive number"):
        policy_table(CONF, OUT, CONF, OUT, l_wrong=1, l_defer=-2)


def test_one_calibrated_array_alone():
    with pytest.raises(
        ck.InputError, match="pass calibrated_confidence and calibrated_eval_confidence"
    ):
        policy_table(CONF, OUT, CONF, OUT, l_wrong=10, l_defer=1, calibrated_confidence=CONF)


def test_calibrated_length_mismatch():
    with pytest.raises(ck.InputError, match="calibrated_eval_confidence has 4 entries"):
        policy_table(
            CONF,
            OUT,
            CONF,
            OUT,
            l_wrong=10,
            l_defer=1,
            calibrated_confidence=CONF,
            calibrated_eval_confidence=CONF[:4],
        )


def test_bad_test_split():
    with pytest.raises(
        ck.InputError, match=r"policy_table \(test\): eval_confidence must not contain"
    ):
        policy_table(CONF, OUT, [0.9, np.nan], [1, 0], l_wrong=10, l_defer=1)
    with pytest.raises(ck.InputError, match=r"policy_table \(validation\): confidence is empty"):
        policy_table([], [], CONF, OUT, l_wrong=10, l_defer=1)


# ----------------------------------------------------------------------------- act_forecast


def test_act_forecast_binary_scores():
    s = np.array([2.0, -3.0, 0.0, -0.5])
    y = np.array([1, 1, 0, 0])
    conf, out = act_forecast(s, y, from_logits=True)
    assert conf == pytest.approx(ck.sigmoid(np.abs(s)))
    assert out.tolist() == [True, False, False, True]  # predicted 1, 0, 1, 0
    p = ck.sigmoid(s)
    conf_p, out_p = act_forecast(p, y)
    assert conf_p == pytest.approx(conf) and out_p.tolist() == out.tolist()


def test_act_forecast_top_label():
    probs = np.array([[0.7, 0.3], [0.2, 0.8]])
    conf, out = act_forecast(probs, [0, 0])
    assert conf.tolist() == [0.7, 0.8] and out.tolist() == [True, False]


def test_decision_report_binary_scores_keep_the_curve():
    rng = np.random.default_rng(3)
    s = rng.normal(0, 3, 4000)
    y = (rng.random(4000) < ck.sigmoid(s / 2)).astype(int)
    t = decision_report(s[:2000], y[:2000], s[2000:], y[2000:], l_wrong=10, l_defer=1)
    assert t.temperature == pytest.approx(2.0, abs=0.3)
    assert t.calibrated_curve is not None
    assert np.array_equal(t.curve.coverage, t.calibrated_curve.coverage)
    assert np.array_equal(t.curve.risk, t.calibrated_curve.risk, equal_nan=True)


# ----------------------------------------------------------------------------- DenseNet-40


def test_densenet_identities(densenet, densenet_table):
    t = densenet_table
    assert [r.key for r in t.rows] == KEYS
    assert t.n == 5000 and t.n_eval == 10000
    conf, out = act_forecast(densenet["test_logits"], densenet["test_labels"], from_logits=True)
    error_rate = 1 - out.mean()
    # defer everything costs exactly l_defer; act on everything costs error rate * l_wrong
    assert t.row("defer_all").cost == 1.0 and t.row("defer_all").choice_cost == 1.0
    assert t.row("act_all").cost == pytest.approx(error_rate * 10, abs=1e-12)
    assert t.row("act_all").risk == pytest.approx(error_rate, abs=1e-12)
    assert t.eval_error_rate == pytest.approx(error_rate)
    # the threshold is the validation choice, its test cost the cost per case at that threshold
    val_conf, val_out = act_forecast(
        densenet["val_logits"], densenet["val_labels"], from_logits=True
    )
    choice = ck.choose_threshold(val_conf, val_out, 10, 1)
    chosen = t.row("chosen")
    assert chosen.threshold == choice.threshold == t.choice.threshold
    assert chosen.choice_cost == pytest.approx(choice.cost, abs=1e-15)
    cost, n_acted, _ = cost_at(conf, out, choice.threshold, l_wrong=10.0, l_defer=1.0)
    assert chosen.cost == cost and chosen.n_acted == n_acted
    # reported, not optimised on test: the test's own best threshold is another one
    on_test = ck.choose_threshold(conf, out, 10, 1)
    assert on_test.threshold != chosen.threshold
    assert on_test.cost <= chosen.cost
    # the chosen threshold's validation cost is at most acting on all or deferring all there
    assert chosen.choice_cost <= t.row("act_all").choice_cost
    assert chosen.choice_cost <= t.row("defer_all").choice_cost
    # the curve is that of the test confidences
    rc = ck.risk_coverage(conf, out)
    assert t.curve.aurc == rc.aurc and t.curve.e_aurc == rc.e_aurc


def test_densenet_numbers(densenet_table):
    """The measured numbers (DenseNet-40 on CIFAR-10, costs 10 and 1): acting on everything
    (0.76 per case) is cheaper than deferring here (the model is 92.4% accurate); Chow on the
    raw, overconfident confidences acts too often (0.49); the validation choice (0.31) and
    Chow after temperature scaling (0.31) land close together, as they should once the
    confidence is calibrated."""
    t = densenet_table
    assert t.temperature == pytest.approx(2.8826, abs=1e-3)
    expected = {  # coverage, risk, cost per case on test
        "act_all": (1.0, 0.0758, 0.758),
        "defer_all": (0.0, math.nan, 1.0),
        "chow": (0.9382, 0.0455, 0.4888),
        "chosen": (0.8323, 0.0175, 0.3137),
        "chow_calibrated": (0.8156, 0.0151, 0.3074),
    }
    for key, (coverage, risk, cost) in expected.items():
        r = t.row(key)
        assert r.coverage == pytest.approx(coverage, abs=1e-4), key
        assert r.cost == pytest.approx(cost, abs=1e-4), key
        if math.isnan(risk):
            assert math.isnan(r.risk)
        else:
            assert r.risk == pytest.approx(risk, abs=1e-4), key
    assert t.row("chosen").threshold == pytest.approx(0.99869, abs=1e-5)
    assert t.choice.gap > 0.09  # overconfident: the data ask for far more than Chow's 0.9
    assert t.curve.aurc == pytest.approx(0.00903, abs=1e-5)
    assert t.curve.e_aurc == pytest.approx(0.00608, abs=1e-5)
    # for ten classes temperature scaling may change the curve (here it splits the ties of
    # confidences that round to 1.0), a little
    assert t.calibrated_curve is not None
    assert abs(t.calibrated_curve.aurc - t.curve.aurc) < 1e-4
