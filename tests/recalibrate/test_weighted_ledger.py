"""Sample weights in the BEFORE/AFTER ledger, the split and cross-fitting: with integer weights
every point estimate of the ledger equals that of the rows repeated w times (a weight of 0
leaves its row out); the split carries the weights of each side; the NLL test's standard error
is the unweighted one for equal weights; bad weights are refused."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import calibkit as ck
from calibkit.measure.uncertainty import NoiseFloor
from calibkit.recalibrate._worse import row_losses, worse_beyond_noise
from calibkit.recalibrate.invariance import check_invariance
from calibkit.recalibrate.ledger import compare_calibration
from calibkit.recalibrate.split import cross_fit, stratified_folds, stratified_split

RTOL = 1e-8
FAST = {"n_sims": 50}


def _binary(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    s = rng.normal(-0.5, 2.0, n)
    return 3.0 * s, (rng.random(n) < ck.sigmoid(s)).astype(np.int64)


def _multiclass(n: int, seed: int, c: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 1.5, (n, c))
    y = (ck.softmax(z).cumsum(axis=1) < rng.random((n, 1))).sum(axis=1)
    return 2.5 * z, y


def _weights(n: int, seed: int, low: int = 0) -> np.ndarray:
    return np.random.default_rng(seed + 100).integers(low, 4, n)


def _point_estimates(ledger) -> dict[str, float | None]:
    """Every point estimate of the ledger's to_dict: before and after of each instrument, the
    invariance check's accuracy and AUC, and the fitted parameters that are numbers."""
    d = ledger.to_dict()
    out: dict[str, float | None] = {}
    for row in d["rows"]:
        out[f"{row['instrument']} before"] = row["before"]
        out[f"{row['instrument']} after"] = row["after"]
    for check in d["invariance"]["checks"]:
        if check["before"] is not None:
            out[f"invariance {check['name']} before"] = check["before"]
            out[f"invariance {check['name']} after"] = check["after"]
    for key, value in d["parameters"].items():
        if isinstance(value, float) and key != "gradient":  # the gradient is ~0 either way
            out[f"parameter {key}"] = value
        elif isinstance(value, list) and value and isinstance(value[0], float):
            for i, x in enumerate(value):
                out[f"parameter {key}[{i}]"] = x
    return out


def _assert_same(weighted, repeated) -> None:
    a, b = _point_estimates(weighted), _point_estimates(repeated)
    assert a.keys() == b.keys()
    for key in a:
        if a[key] is None or b[key] is None:
            assert a[key] is b[key] is None, key
        else:
            assert a[key] == pytest.approx(b[key], rel=RTOL, abs=1e-12), key


CASES = {
    "temperature, binary logits": (ck.TemperatureScaling, _binary, True),
    "platt, binary logits": (ck.PlattScaling, _binary, True),
    "isotonic, binary probabilities": (
        lambda: ck.IsotonicCalibration(),
        lambda n, seed: (ck.sigmoid(_binary(n, seed)[0]), _binary(n, seed)[1]),
        False,
    ),
    "temperature, 3-class logits": (ck.TemperatureScaling, _multiclass, True),
    # l2 > 0: without a penalty the biases are fixed only up to a common shift
    "vector, 3-class logits": (lambda: ck.VectorScaling(l2=0.01), _multiclass, True),
}


@pytest.mark.parametrize("case", CASES)
def test_given_design_with_integer_weights_equals_the_repeated_rows(case):
    make, data, from_logits = CASES[case]
    x, y = data(300, 1)
    xe, ye = data(240, 2)
    w, we = _weights(300, 1), _weights(240, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ck.CalibkitWarning)
        weighted = compare_calibration(
            make(), x, y, eval_scores=xe, eval_labels=ye, from_logits=from_logits,
            sample_weight=w, eval_sample_weight=we, **FAST,
        )  # fmt: skip
        repeated = compare_calibration(
            make(), np.repeat(x, w, axis=0), np.repeat(y, w), from_logits=from_logits,
            eval_scores=np.repeat(xe, we, axis=0), eval_labels=np.repeat(ye, we), **FAST,
        )  # fmt: skip
    _assert_same(weighted, repeated)
    assert (weighted.n_fit, weighted.n_eval) == (300, 240)  # rows, not weight
    assert weighted.weight_fit == repeated.n_fit == w.sum()
    assert weighted.weight_eval == repeated.n_eval == we.sum()
    d = weighted.to_dict()
    assert (d["weight_fit"], d["weight_eval"]) == (float(w.sum()), float(we.sum()))
    assert "weight_fit" not in repeated.to_dict()  # unweighted: the document as it was


def test_the_split_carries_the_weights_to_the_fit_and_to_the_held_out_rows():
    """The weighted split ledger is the ledger of the split's two sides given as a fit set
    and an evaluation set with their weights, and so (integer weights) of those sides with
    their rows repeated."""
    x, y = _binary(400, 3)
    w = _weights(400, 3, low=1)
    weighted = compare_calibration(ck.PlattScaling(), x, y, sample_weight=w, seed=4, **FAST)
    cal, held = stratified_split(y, seed=4)
    repeated = compare_calibration(
        ck.PlattScaling(), np.repeat(x[cal], w[cal]), np.repeat(y[cal], w[cal]),
        eval_scores=np.repeat(x[held], w[held]), eval_labels=np.repeat(y[held], w[held]),
        seed=4, **FAST,
    )  # fmt: skip
    _assert_same(weighted, repeated)
    assert weighted.design == "split" and (weighted.n_fit, weighted.n_eval) == (200, 200)
    assert weighted.weight_fit == w[cal].sum() and weighted.weight_eval == w[held].sum()
    assert "weighted: total weight" in weighted.judged_on


def test_cross_fit_with_weights_judges_each_row_by_the_map_fitted_on_the_other_folds_weights():
    z, y = _multiclass(360, 5)
    w = _weights(360, 5, low=1)
    ledger = compare_calibration(ck.TemperatureScaling(), z, y, folds=3, sample_weight=w, **FAST)
    fold = stratified_folds(y, folds=3, seed=0)
    p = np.empty((360, 3))
    temperatures = []
    for k in range(3):
        rest = fold != k
        ts = ck.TemperatureScaling().fit(
            np.repeat(z[rest], w[rest], axis=0), np.repeat(y[rest], w[rest])
        )
        p[fold == k] = ts.predict_proba(z[fold == k])
        temperatures.append(ts.temperature_)
    conf, right = ck.top_label(np.repeat(p, w, axis=0), np.repeat(y, w))
    after = ledger.after
    assert after["ECE"] == pytest.approx(ck.ece(conf, right), rel=RTOL)
    assert after["NLL"] == pytest.approx(ck.nll(np.repeat(p, w, axis=0), np.repeat(y, w)), rel=RTOL)
    assert after["Brier"] == pytest.approx(
        ck.brier(np.repeat(p, w, axis=0), np.repeat(y, w)), rel=RTOL
    )
    assert after["AUC"] == pytest.approx(ck.auc(conf, right), rel=RTOL)
    got = [s["temperature"] for s in ledger.fold_parameters]
    assert got == pytest.approx(temperatures, rel=RTOL)
    full = ck.TemperatureScaling().fit(np.repeat(z, w, axis=0), np.repeat(y, w))
    assert ledger.parameters["temperature"] == pytest.approx(full.temperature_, rel=RTOL)
    assert ledger.weight_fit == ledger.weight_eval == w.sum()


def test_a_zero_weight_leaves_its_row_out_of_the_fit_and_of_the_judgement():
    x, y = _binary(300, 6)
    xe, ye = _binary(200, 7)
    w, we = _weights(300, 6), _weights(200, 7)
    assert (w == 0).any() and (we == 0).any()
    xe = xe.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ck.CalibkitWarning)
        weighted = compare_calibration(
            ck.IsotonicCalibration(), ck.sigmoid(x), y, from_logits=False,
            eval_scores=ck.sigmoid(xe), eval_labels=ye, sample_weight=(w > 0) * 1.0,
            eval_sample_weight=(we > 0) * 1.0, **FAST,
        )  # fmt: skip
        dropped = compare_calibration(
            ck.IsotonicCalibration(), ck.sigmoid(x[w > 0]), y[w > 0], from_logits=False,
            eval_scores=ck.sigmoid(xe[we > 0]), eval_labels=ye[we > 0], **FAST,
        )  # fmt: skip
    _assert_same(weighted, dropped)


def test_a_certain_wrong_prediction_of_weight_zero_does_not_make_the_nll_infinite():
    """Isotonic outputs 0 below its first step; a held-out row there with label 1 makes the
    unweighted NLL infinite, and is left out (no warning, a finite NLL) at weight 0."""
    p = np.array([0.05, 0.1, 0.2, 0.3, 0.6, 0.7, 0.8, 0.9])
    y = np.array([0, 0, 0, 1, 0, 1, 1, 1])
    pe, ye = np.array([0.01, 0.4, 0.8]), np.array([1, 0, 1])
    with pytest.warns(ck.CalibkitWarning, match="probability exactly 0"):
        plain = compare_calibration(
            ck.IsotonicCalibration(), p, y, from_logits=False, eval_scores=pe, eval_labels=ye,
            **FAST,
        )  # fmt: skip
    assert math.isinf(plain.after["NLL"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ck.CalibkitWarning)
        weighted = compare_calibration(
            ck.IsotonicCalibration(), p, y, from_logits=False, eval_scores=pe, eval_labels=ye,
            eval_sample_weight=[0, 1, 1], **FAST,
        )  # fmt: skip
    iso = ck.IsotonicCalibration().fit(p, y)
    q = iso.predict_proba(pe[1:])
    assert weighted.after["NLL"] == pytest.approx(-(math.log(1 - q[0]) + math.log(q[1])) / 2)


def test_the_split_returns_each_sides_weights_and_the_same_rows():
    y = np.array([1] * 18 + [0] * 108)
    w = np.arange(126, dtype=float) % 5
    cal, held = stratified_split(y, seed=2)
    got = stratified_split(y, seed=2, sample_weight=w)
    assert len(got) == 4
    np.testing.assert_array_equal(got[0], cal)
    np.testing.assert_array_equal(got[1], held)
    np.testing.assert_array_equal(got[2], w[cal])
    np.testing.assert_array_equal(got[3], w[held])


def test_cross_fit_fits_each_fold_with_the_other_folds_weights():
    s, y = _binary(200, 8)
    w = _weights(200, 8)
    p = cross_fit(ck.TemperatureScaling, s, y, folds=4, sample_weight=w)
    fold = stratified_folds(y, folds=4, seed=0)
    for k in range(4):
        rest = fold != k
        ts = ck.TemperatureScaling().fit(np.repeat(s[rest], w[rest]), np.repeat(y[rest], w[rest]))
        np.testing.assert_allclose(p[fold == k], ts.predict_proba(s[fold == k]), rtol=RTOL)


def test_weighted_invariance_accuracy_and_auc_by_hand():
    before = np.array([0.9, 0.4, 0.6, 0.2])
    y = np.array([1, 1, 0, 0])
    report = check_invariance(before, before, labels=y, sample_weight=[1, 2, 3, 4])
    # decisions 1, 0, 1, 0: right on rows 0 and 3, weight 5 of 10
    assert report["accuracy"].before == 0.5
    # positive-negative pairs (weights): (0.9, 0.6) 1*3 right, (0.9, 0.2) 1*4 right,
    # (0.4, 0.6) 2*3 wrong, (0.4, 0.2) 2*4 right: 15 of 21
    assert report["auc"].before == pytest.approx(15 / 21)


def test_equal_weights_give_the_unweighted_nll_test_and_a_weighted_one_by_hand():
    floor = NoiseFloor(0.01, 0.5, 100, 4, 15, "l1", 0, "exact")
    before = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    after = before + np.array([0.3, 0.1, 0.2, 0.25, 0.15])
    plain = worse_beyond_noise(
        ece_before=0.1, ece_after=0.1, floor_after=floor, loss_before=before, loss_after=after
    )
    twos = worse_beyond_noise(
        ece_before=0.1, ece_after=0.1, floor_after=floor, loss_before=before, loss_after=after,
        sample_weight=np.full(5, 2.0),
    )  # fmt: skip
    assert [w.instrument for w in plain] == [w.instrument for w in twos] == ["NLL"]
    assert twos[0].noise == pytest.approx(plain[0].noise, rel=1e-12)
    assert twos[0].before == pytest.approx(plain[0].before, rel=1e-12)
    # weights 1, 0, 1, 1, 1: the row of weight 0 is left out; d = 0.3, 0.2, 0.25, 0.15,
    # mean 0.225, sample sd sqrt(0.004167), se = 1.96 * sd / 2
    w = np.array([1.0, 0.0, 1.0, 1.0, 1.0])
    got = worse_beyond_noise(
        ece_before=0.1, ece_after=0.1, floor_after=floor, loss_before=before, loss_after=after,
        sample_weight=w,
    )  # fmt: skip
    d = np.array([0.3, 0.2, 0.25, 0.15])
    assert got[0].noise == pytest.approx(1.96 * d.std(ddof=1) / 2, rel=1e-12)
    assert got[0].after - got[0].before == pytest.approx(0.225, rel=1e-12)


def test_row_losses_are_unweighted_per_row_so_the_weighted_mean_is_the_weighted_nll():
    s, y = _binary(50, 9)
    w = _weights(50, 9, low=1)
    losses = row_losses(s, y, from_logits=True)
    assert np.sum(w * losses) / w.sum() == pytest.approx(
        ck.nll(s, y, from_logits=True, sample_weight=w), rel=1e-12
    )


# ----------------------------------------------------------------------------- bad weights


def test_bad_weights_are_refused_with_what_and_where():
    x, y = _binary(100, 10)
    with pytest.raises(ck.InputError, match=r"sample_weight.*index 3"):
        compare_calibration(
            ck.TemperatureScaling(), x, y, sample_weight=[1, 1, 1, -1] + [1] * 96, **FAST
        )
    with pytest.raises(ck.InputError, match="eval_sample_weight weighs the rows of eval_scores"):
        compare_calibration(ck.TemperatureScaling(), x, y, eval_sample_weight=np.ones(100))
    with pytest.raises(ck.InputError, match="eval_sample_weight"):
        compare_calibration(
            ck.TemperatureScaling(), x, y, eval_scores=x[:10], eval_labels=y[:10],
            eval_sample_weight=np.ones(9),
        )  # fmt: skip


def test_a_split_side_that_weighs_nothing_is_refused():
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    cal, _ = stratified_split(y, seed=0)
    w = np.ones(8)
    w[cal] = 0.0
    with pytest.raises(ck.InputError, match="rows of the calibration part weighs 0"):
        stratified_split(y, seed=0, sample_weight=w)
