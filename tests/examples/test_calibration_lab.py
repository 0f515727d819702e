"""examples/calibration_lab.py works its exercises 0-5 and the stretch; every number checked here
is worked by hand, an identity, or recomputed independently of calibkit (numpy, scipy,
scikit-learn)."""

from __future__ import annotations

import contextlib
import io
import math

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from example_loader import load_example
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax


@pytest.fixture(scope="module")
def example():
    return load_example("calibration_lab")


@pytest.fixture(scope="module")
def run(example, tmp_path_factory):
    out = tmp_path_factory.mktemp("calibration_lab")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        res = example.run(out)
    return res, buf.getvalue(), out


@pytest.fixture(scope="module")
def res(run):
    return run[0]


# --- independent reference implementations -------------------------------------------------


def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def ece_ref(conf, out, m):
    """ECE (Naeini et al. 2015) with right-closed bins (0, 1/M], ..., the first also holding 0."""
    conf, out = np.asarray(conf, float), np.asarray(out, float)
    idx = np.clip(np.ceil(conf * m).astype(int) - 1, 0, m - 1)
    total = 0.0
    for b in range(m):
        sel = idx == b
        if sel.any():
            total += sel.sum() / conf.size * abs(out[sel].mean() - conf[sel].mean())
    return total


def curve_ref(score, correct):
    """Coverage and selective risk at every distinct score, highest first."""
    order = np.argsort(-score, kind="stable")
    s, wrong = score[order], ~correct[order]
    last = np.r_[np.flatnonzero(np.diff(s) != 0), s.size - 1]  # end of each group of ties
    acted = last + 1
    return acted / s.size, np.cumsum(wrong)[last] / acted


def scipy_fit_temperature(val_logits, val_labels):
    """Temperature by scipy's bounded scalar minimiser of the validation NLL over log tau."""
    rows = np.arange(len(val_labels))

    def val_nll(log_tau):
        logp = log_softmax(val_logits / np.exp(log_tau), axis=1)
        return -logp[rows, val_labels].mean()

    return float(
        np.exp(
            minimize_scalar(val_nll, bounds=(-3, 3), method="bounded", options={"xatol": 1e-8}).x
        )
    )


# --- the script --------------------------------------------------------------------------------


def test_every_section_prints_its_heading(run):
    text = run[1]
    for head in (
        "Exercise 0 . What You Have",
        "Part A . Three classifiers",
        "Exercise 1 . Reliability Bins and ECE",
        "Exercise 2 . Brier Score and Log Loss",
        "Exercise 3 . Temperature Scaling",
        "Exercise 4 . Parse a Stated Confidence, Then Measure It",
        "Exercise 5 . Risk-Coverage and the Threshold",
        "Stretch . The Brier Score Is Proper; Accuracy Is Not",
    ):
        assert head in text
    assert "does NOT hold" not in text and "DIFFERENT curve" not in text
    assert "seed section" not in text and "[seed" not in text


def test_figures_are_pngs(run):
    res, _, out = run
    names = sorted(p.name for p in res["figures"])
    assert names == sorted(
        [
            "ex1_reliability_C10.png",
            "ex3_before_after_C1.png",
            "ex3_before_after_C10.png",
            "ex3_before_after_C100.png",
            "ex4_stated_vs_token.png",
            "ex5_risk_coverage_C10.png",
            "ex5_risk_coverage_llm.png",
        ]
    )
    for p in res["figures"]:
        assert p.parent == out and p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_main_passes_the_output_folder(example, monkeypatch, tmp_path, capsys):
    seen = []
    monkeypatch.setattr(example, "run", lambda out: seen.append(out) or {"figures": []})
    assert example.main(["--out", str(tmp_path)]) == 0
    assert example.main(["--no-figures"]) == 0
    assert seen == [tmp_path, None]
    assert f"0 figures written to {tmp_path}" in capsys.readouterr().out


# --- part A: three classifiers -----------------------------------------------------------------


def test_three_classifiers_go_from_under_to_overconfident(res):
    lab, models = res["lab"], res["models"]
    assert lab[1]["reading"] == "underconfident"
    assert lab[100]["reading"] == "overconfident"
    conf = [lab[C]["audit"].mean_confidence for C in (1, 10, 100)]
    assert conf[0] < conf[1] < conf[2]  # a weaker penalty lets the logits, and confidence, grow
    for C, m in models.items():
        a = lab[C]["audit"]
        p = softmax(m.test_logits)
        top = p.max(axis=1)
        correct = p.argmax(axis=1) == m.test_labels
        assert a.n == m.test_labels.size == 897 and a.n_bins == 15
        assert a.accuracy == pytest.approx(correct.mean(), abs=1e-12)
        assert a.mean_confidence == pytest.approx(top.mean(), abs=1e-12)
        assert a.ece == pytest.approx(ece_ref(top, correct, 15), abs=1e-12)
        assert a.noise_floor.n == a.n  # the floor is simulated for the same N
        onehot = np.eye(10)[m.test_labels]
        assert a.brier == pytest.approx(((p - onehot) ** 2).sum(axis=1).mean(), abs=1e-12)
        assert a.nll == pytest.approx(-np.log(p[np.arange(p.shape[0]), m.test_labels]).mean())
        assert (a.mean_confidence < a.accuracy) == (lab[C]["reading"] == "underconfident")


# --- exercise 1 ------------------------------------------------------------------------------------


def test_exercise_1_worked_examples(res):
    e = res["exercise_1"]
    assert e["worked_counts"] == [4, 6]
    assert e["worked_ece_m2"] == pytest.approx(4 / 10 * 0.10 + 6 / 10 * (0.8 - 4 / 6), abs=1e-12)
    assert e["worked_ece_m2"] == pytest.approx(0.12, abs=1e-12)
    assert e["worked_ece_m1"] == pytest.approx(abs(6.4 / 10 - 6 / 10), abs=1e-12)
    s2 = e["check_averages"]
    assert s2["mean_conf"] == pytest.approx(0.8) and s2["acc"] == pytest.approx(0.8)
    assert s2["ece"] == pytest.approx(0.5 * 0.2 + 0.5 * 0.2, abs=1e-12)
    assert e["blind_ece"] == pytest.approx(0.0, abs=1e-12)
    assert e["synthetic_ece"] < 0.01


def test_exercise_1_ece_depends_on_bins_and_the_floor_on_n(res):
    e = res["exercise_1"]
    floors = [e["floor_by_n"][n] for n in sorted(e["floor_by_n"])]
    assert floors[0] > floors[1] > floors[2] > 0  # the noise floor falls with N
    by_m = e["ece_by_m"]
    assert by_m[(100, "uniform")] > by_m[(5, "uniform")]  # ECE depends on M
    f = res["exercise_5"]["test_forecast"]
    for (m, strategy), value in by_m.items():
        if strategy == "uniform":
            assert value == pytest.approx(ece_ref(f.confidence, f.outcome, m), abs=1e-12)


# --- exercise 2 ------------------------------------------------------------------------------------


def test_exercise_2_checkpoints(res):
    e = res["exercise_2"]
    probs = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]])
    assert e["hand_brier"] == pytest.approx((0.14 + 0.06 + 0.74) / 3, abs=1e-12)
    assert e["hand_brier"] == pytest.approx(
        ((probs - np.eye(3)[[0, 1, 0]]) ** 2).sum(axis=1).mean(), abs=1e-12
    )
    assert e["hand_nll"] == pytest.approx(-(math.log(0.7) + math.log(0.8) + math.log(0.3)) / 3)
    assert e["uniform_brier"] == pytest.approx(0.75, abs=1e-12)
    assert e["uniform_nll"] == pytest.approx(math.log(4), abs=1e-12)
    assert e["nll_ck"] == pytest.approx(e["nll_sklearn"], rel=1e-9)


# --- exercise 3 ------------------------------------------------------------------------------------


def test_exercise_3_check_yourself_and_synthetic(res):
    e = res["exercise_3"]
    assert e["p_hat"][1.0] == pytest.approx(math.e**2 / (math.e**2 + math.e + 1))
    assert round(e["p_hat"][1.0], 3) == 0.665 and round(e["p_hat"][2.0], 3) == 0.506
    for k, s in e["synthetic"].items():
        assert s["tau"] == pytest.approx(k, rel=0.1)  # a calibrated model's logits times k
        assert len(set(s["acc"].values())) == 1  # accuracy is flat in tau


def test_exercise_3_temperature_direction_and_invariance(res):
    e, models = res["exercise_3"], res["models"]
    assert e["per_c"][1]["tau"] < 1 < e["per_c"][100]["tau"]
    for C, r in e["per_c"].items():
        m = models[C]
        assert r["agrees"]  # tau < 1 exactly for the underconfident models
        assert (r["tau"] < 1) == (res["lab"][C]["reading"] == "underconfident")
        assert r["tau"] == pytest.approx(
            scipy_fit_temperature(m.val_logits, m.val_labels), rel=1e-4
        )
        assert r["after"].accuracy == r["before"].accuracy
        np.testing.assert_array_equal(r["after_probs"].argmax(axis=1), m.test_logits.argmax(axis=1))
        np.testing.assert_allclose(r["after_probs"], softmax(m.test_logits / r["tau"]), atol=1e-12)
        assert r["val_nll_after"] <= r["val_nll_before"]
    assert e["per_c"][1]["after"].ece < e["per_c"][1]["before"].ece


# --- exercise 4 ------------------------------------------------------------------------------------


def test_exercise_4_parsing(res):
    e = res["exercise_4"]
    assert e["decisions"] == [
        ("calculator", 0.92),
        ("email", 0.85),
        ("human", 0.7),
        ("email", 0.9),  # "very confident" on the documented verbal scale
        None,  # 1.3 is out of range
        None,  # "calendar" is not an option
        None,  # no confidence
        None,  # no answer field: a number in prose does not count
    ]
    values = [p.value for p in e["confidences"]]
    assert values == [0.8, 0.75, 0.7, 0.9, None, None, None]
    assert [p.reason for p in e["confidences"][4:]] == ["conflicting", "out of range", "absent"]


def test_exercise_4_check_yourself(res):
    c = res["exercise_4"]["check_300"]
    assert c["nonempty"] == 2
    assert c["ece"] == pytest.approx((200 * 0.15 + 100 * 0.05) / 300, abs=1e-12)
    assert round(c["ece"], 3) == 0.117
    assert c["mean_conf"] == pytest.approx(0.9166666, abs=1e-6) and c["acc"] == 0.8
    assert c["ece"] > c["floor"]


def test_exercise_4_replay_audit(res, example):
    e = res["exercise_4"]
    table = pq.read_table(example.STATED)
    rows = e["stated"].rows
    assert len(rows) == 11
    assert sum(r.n + r.n_missing + r.n_out_of_range for r in rows) == table.num_rows == 72_185
    for r in rows:  # each model's ECE, recomputed from the file
        sub = table.filter(pc.equal(table.column("llm"), r.group[0]))
        conf = sub.column("stated_confidence").to_numpy()
        out = sub.column("correct").to_numpy()
        assert r.n == conf.size
        assert r.ece == pytest.approx(ece_ref(conf, out, 15), abs=1e-12)
        assert r.accuracy == pytest.approx(out.mean(), abs=1e-12)
    token = e["token"]
    assert sum(r.n for r in token.rows if r.source == "stated_confidence") == 9_245
    for group in {r.group for r in token.rows}:
        stated = token.get(group, "stated_confidence")
        tok = token.get(group, "chosen_token_confidence")
        assert stated.n == tok.n and stated.accuracy == tok.accuracy  # the same answers
        better = token.better(group).better
        assert better == min((stated, tok), key=lambda r: r.ece).source


# --- exercise 5 ------------------------------------------------------------------------------------


def test_exercise_5_worked_example(res):
    five = res["exercise_5"]["five"]
    rc, cost, choice = five["rc"], five["cost"], five["choice"]
    np.testing.assert_allclose(rc.coverage, [0, 0.2, 0.4, 0.6, 0.8, 1.0])
    np.testing.assert_allclose(rc.risk, [np.nan, 0, 0, 1 / 3, 1 / 4, 2 / 5])
    np.testing.assert_allclose(cost, [1.0, 0.8, 0.6, 2.4, 2.2, 4.0])
    assert choice.threshold == 0.9 and choice.cost == pytest.approx(0.6)
    assert res["exercise_5"]["chow"] == pytest.approx(1 - 1 / 10)
    s8 = res["exercise_5"]["check_costs_50_2"]
    assert s8["chow"] == pytest.approx(1 - 2 / 50) and s8["act_cost"] == pytest.approx(5.0)


def test_exercise_5_classifier_policy(res):
    e = res["exercise_5"]
    table, f, fv = e["policy"], e["test_forecast"], e["val_forecast"]
    conf, correct = f.confidence, f.outcome.astype(bool)
    error_rate = 1 - correct.mean()
    assert e["rc"].risk[-1] == pytest.approx(error_rate) and e["rc"].coverage[-1] == 1.0
    assert table.chow_threshold == pytest.approx(1 - 1 / 10)
    assert table.row("act_all").cost == pytest.approx(10 * error_rate)
    assert table.row("defer_all").cost == 1.0
    t = table.choice.threshold
    acted = conf >= t
    assert table.row("chosen").cost == pytest.approx(
        (10 * np.count_nonzero(acted & ~correct) + np.count_nonzero(~acted)) / conf.size
    )
    assert table.choice.cost <= table.row("act_all").choice_cost
    assert table.choice.cost <= table.row("defer_all").choice_cost
    # the validation choice is the minimum of the cost per case over the observed confidences
    vc, vo = fv.confidence, fv.outcome.astype(bool)
    grid = np.r_[np.unique(vc), np.inf]
    val_costs = [(10 * np.sum((vc >= g) & ~vo) + np.sum(vc < g)) / vc.size for g in grid]
    assert table.choice.cost == pytest.approx(min(val_costs))
    assert 0 <= e["swapped_pairs"] < 0.05  # "slightly changed" for many classes


def test_exercise_5_two_classes_curve_unchanged(res):
    b = res["exercise_5"]["binary"]
    assert b["tau"] != pytest.approx(1.0, abs=0.05)  # the temperature did something
    assert b["order_kept"] and b["points_kept"] and b["ties_only_near_one"]
    assert b["moved_logit"] == ()  # scores s and s / T: order, decisions, AUC all unchanged
    # on the logit scale |s| / T keeps every order, so the curve is that of |s|: the same
    s, correct = np.abs(b["scores"]), b["correct"]
    cov_b, risk_b = curve_ref(s, correct)
    cov_a, risk_a = curve_ref(s / b["tau"], correct)
    np.testing.assert_array_equal(cov_b, cov_a)
    np.testing.assert_array_equal(risk_b, risk_a)
    # and calibkit's curve of the confidence before scaling is that curve
    np.testing.assert_allclose(b["curve_before"].coverage[1:], cov_b)
    np.testing.assert_allclose(b["curve_before"].risk[1:], risk_b)


def test_exercise_5_language_model_policy(res, example):
    t = res["exercise_5"]["llm_policy"]
    table = pq.read_table(example.STATED)
    n = int(pc.sum(pc.equal(table.column("llm"), example.LLM_FOR_DECISIONS)).as_py())
    assert t.n + t.n_eval == n
    assert t.choice.cost <= min(t.row("act_all").choice_cost, t.row("defer_all").choice_cost)


# --- stretch -----------------------------------------------------------------------------------------


def test_stretch_brier_is_proper_linear_is_not_accuracy_is_flat(res):
    s = res["stretch"]
    q = s["grid"]
    p = 0.7
    # the expected Brier score: E Brier = sum_c (q_c - p_c)^2 + sum_c p_c (1 - p_c)
    np.testing.assert_allclose(s["scores"]["brier"], 2 * (q - p) ** 2 + 2 * p * (1 - p), atol=1e-12)
    np.testing.assert_allclose(s["scores"]["linear"], -(p * q + (1 - p) * (1 - q)), atol=1e-12)
    inner = (q > 0) & (q < 1)
    np.testing.assert_allclose(
        s["scores"]["log"][inner], -(p * np.log(q[inner]) + (1 - p) * np.log(1 - q[inner]))
    )
    assert np.isinf(s["scores"]["log"][~inner]).all()
    assert s["argmin"]["brier"] == pytest.approx(p) and s["argmin"]["log"] == pytest.approx(p)
    assert s["argmin"]["linear"] == 1.0  # the linear score rewards overconfidence
    err = s["scores"]["error"]
    np.testing.assert_allclose(err[q > 0.5], 1 - p)  # flat: 0.51 and 0.99 score the same
    np.testing.assert_allclose(err[q < 0.5], p)


def test_stretch_check_yourself(res):
    named = res["stretch"]["named"]
    assert named["honest (0.7, 0.3)"]["brier"] == pytest.approx(0.42)
    assert named["exaggerated (1, 0)"]["brier"] == pytest.approx(0.60)
    assert named["hedged (0.5, 0.5)"]["brier"] == pytest.approx(0.50)
    assert named["honest (0.7, 0.3)"]["log"] == pytest.approx(
        -(0.7 * math.log(0.7) + 0.3 * math.log(0.3))
    )
    assert round(named["honest (0.7, 0.3)"]["log"], 3) == 0.611
    assert math.isinf(named["exaggerated (1, 0)"]["log"])
    assert named["hedged (0.5, 0.5)"]["log"] == pytest.approx(math.log(2))


def test_stretch_three_classes(res):
    d = res["stretch"]["dirichlet"]
    p = np.array([0.5, 0.3, 0.2])
    assert d["truth"][0] == pytest.approx((p * (1 - p)).sum())
    assert d["truth"][1] == pytest.approx(-(p * np.log(p)).sum())
    assert d["beats_truth"][0] == 0 and d["beats_truth"][1] == 0
    assert d["beats_truth"][2] > 0 and d["onehot_linear"] < d["truth"][2]
