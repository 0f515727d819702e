"""Calibrators that cannot be fed the wrong scores silently (issue 13): probabilities passed as
logits are refused, logits too extreme for a scale are warned about, a map that makes the
held-out numbers worse says so, and probabilities of exactly 0 or 1 follow one ``clip=`` policy.

Every input is a scikit-learn model rebuilt with fixed seeds, as a new user would make it.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from scipy.special import log_softmax
from sklearn.datasets import load_breast_cancer, load_digits
from sklearn.ensemble import RandomForestClassifier
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB

import calibkit as ck
from calibkit.decide.decision_report import decision_report
from calibkit.decide.policy import policy_table
from calibkit.recalibrate.base import load_calibrator, save_calibrator
from calibkit.recalibrate.methods import make_calibrator

LOOK_LIKE = "these look like probabilities"
EXAMPLES = Path(__file__).parents[2] / "examples" / "data"


def _split(data):
    x, y = data
    return train_test_split(x, y, test_size=0.5, random_state=0, stratify=y)


@pytest.fixture(scope="module")
def digits():
    return _split(load_digits(return_X_y=True))


@pytest.fixture(scope="module")
def cancer():
    return _split(load_breast_cancer(return_X_y=True))


@pytest.fixture(scope="module")
def digits_lr(digits):
    """10-class probabilities of a logistic regression (no exact 0 or 1) and the labels."""
    x_fit, x_cal, y_fit, y_cal = digits
    return LogisticRegression(max_iter=5000).fit(x_fit, y_fit).predict_proba(x_cal), y_cal


@pytest.fixture(scope="module")
def digits_nb(digits):
    """Gaussian naive Bayes log-probabilities (down to -1e10) and the labels."""
    x_fit, x_cal, y_fit, y_cal = digits
    return GaussianNB().fit(x_fit, y_fit).predict_log_proba(x_cal), y_cal


@pytest.fixture(scope="module")
def cancer_lr(cancer):
    """P(y = 1) of a logistic regression on the breast-cancer data, and the labels."""
    x_fit, x_cal, y_fit, y_cal = cancer
    return LogisticRegression(max_iter=5000).fit(x_fit, y_fit).predict_proba(x_cal)[:, 1], y_cal


@pytest.fixture(scope="module")
def cancer_rf(cancer):
    """Random-forest probabilities (half of them exactly 0 or 1) and the labels."""
    x_fit, x_cal, y_fit, y_cal = cancer
    forest = RandomForestClassifier(n_estimators=50, random_state=0).fit(x_fit, y_fit)
    return forest.predict_proba(x_cal), y_cal


def _mle_temperature(z: np.ndarray, y: np.ndarray) -> float:
    """The maximum-likelihood T by a bounded scalar search in log T (scipy, independent)."""

    def nll(log_t: float) -> float:
        return float(-log_softmax(z / np.exp(log_t), axis=1)[np.arange(y.size), y].mean())

    result = minimize_scalar(nll, bounds=(-8.0, 8.0), method="bounded", options={"xatol": 1e-10})
    return float(np.exp(result.x))


# ----------------------------------------------------------------------- probabilities as logits


def test_temperature_refuses_probabilities_passed_as_logits(digits_lr):
    probs, y = digits_lr
    with pytest.raises(
        ck.InputError,
        match=r"TemperatureScaling.fit: every row of the logits lies in \[0, 1\] and sums to 1: "
        r"these look like probabilities\. Pass them as probabilities \(from_logits=False.*--probs "
        r".*np\.log\(p\).*check_logits=False \(--no-check-logits",
    ):
        ck.TemperatureScaling().fit(probs, y)
    with pytest.raises(ck.InputError, match=LOOK_LIKE):
        ck.fit_temperature(probs, y)
    # the fixes it names: the probabilities as such, or their logs as logits, agree exactly
    as_probs = ck.TemperatureScaling(from_logits=False).fit(probs, y).temperature_
    assert as_probs == ck.TemperatureScaling().fit(np.log(probs), y).temperature_
    # insisting gives the maximum-likelihood T of the probabilities read as logits
    insisted = ck.TemperatureScaling(check_logits=False).fit(probs, y).temperature_
    assert insisted == pytest.approx(_mle_temperature(probs, y), rel=1e-6)


def test_every_map_that_reads_logits_refuses_probabilities(digits_lr, cancer_lr):
    probs, y = digits_lr
    p, yb = cancer_lr
    for calibrator in (
        ck.VectorScaling(),
        ck.MatrixScaling(l2=1.0, intercept=1.0),
        ck.PlattScaling(),
        ck.PlattScaling(multiclass="top-label"),
    ):
        with pytest.raises(ck.InputError, match=f"{type(calibrator).__name__}.fit: .*{LOOK_LIKE}"):
            calibrator.fit(probs, y)
    for calibrator in (ck.TemperatureScaling(), ck.PlattScaling()):
        with pytest.raises(
            ck.InputError,
            match=rf"every value of .* lies in \[0, 1\] \(from {p.min():g} to {p.max():g}; .*"
            r"np\.log\(p / \(1 - p\)\)",
        ):
            calibrator.fit(p, yb)
    # as probabilities, Platt scaling is the logistic regression of y on their log-odds
    on_probs = ck.PlattScaling(from_logits=False).fit(p, yb)
    on_logits = ck.PlattScaling().fit(np.log(p) - np.log1p(-p), yb)
    np.testing.assert_allclose(on_probs.a_, on_logits.a_, rtol=1e-12)


def test_the_ledger_refuses_probabilities_read_by_default_as_logits(cancer_lr):
    p, y = cancer_lr
    with pytest.raises(
        ck.InputError, match=f"compare_calibration: every value of scores .*{LOOK_LIKE}"
    ):
        ck.compare_calibration(ck.IsotonicCalibration(), p, y, n_sims=50)
    ledger = ck.compare_calibration(ck.IsotonicCalibration(), p, y, from_logits=False, n_sims=50)
    assert ledger.before["Brier"] == pytest.approx(
        np.mean((p[ledger_held(y)] - y[ledger_held(y)]) ** 2), rel=1e-12
    )
    # insisting on either the ledger or the calibrator reaches the ledger and its fits
    for kwargs, calibrator in (
        ({"check_logits": False}, ck.PlattScaling()),
        ({}, ck.PlattScaling(check_logits=False)),
    ):
        ledger = ck.compare_calibration(calibrator, p, y, n_sims=50, **kwargs)
        assert ledger.calibrator.check_logits is False
        assert ledger.before["Brier"] == pytest.approx(
            np.mean((ck.sigmoid(p[ledger_held(y)]) - y[ledger_held(y)]) ** 2), rel=1e-12
        )


def ledger_held(y: np.ndarray) -> np.ndarray:
    return ck.stratified_split(y, calibration_fraction=0.5, seed=0)[1]


def test_decision_report_refuses_calibrated_probabilities(cancer_lr):
    p, y = cancer_lr
    half = p.size // 2
    with pytest.raises(
        ck.InputError,
        match=f"decision_report: every value of the logits .*{LOOK_LIKE}.*policy_table",
    ):
        decision_report(p[:half], y[:half], p[half:], y[half:], l_wrong=10, l_defer=1)
    with pytest.raises(ck.InputError, match=f"policy_table \\(validation\\): .*probs.*{LOOK_LIKE}"):
        policy_table(
            probs=p[:half],
            labels=y[:half],
            eval_probs=p[half:],
            eval_labels=y[half:],
            l_wrong=10,
            l_defer=1,
            from_logits=True,
        )
    # their log-odds are logits: the report's confidence of acting is then max(p, 1 - p)
    s = np.log(p) - np.log1p(-p)
    table = decision_report(s[:half], y[:half], s[half:], y[half:], l_wrong=10, l_defer=1)
    act_all = table.row("act_all")
    wrong = np.mean((p[half:] >= 0.5) != (y[half:] == 1))
    assert act_all.cost == pytest.approx(10 * wrong, rel=1e-12)


def test_check_logits_must_be_a_flag(digits_lr):
    probs, y = digits_lr
    with pytest.raises(ck.InputError, match="check_logits must be True or False, got 'no'"):
        ck.TemperatureScaling(check_logits="no").fit(np.log(probs), y)


# ----------------------------------------------------------------------- extreme logits


def test_naive_bayes_log_probabilities_warn_and_the_ledger_says_worse(digits_nb):
    logp, y = digits_nb
    with pytest.warns(ck.CalibkitWarning, match="these logits are extreme") as caught:
        ts = ck.TemperatureScaling().fit(logp, y)
    assert ts.temperature_ > 1e6  # the fit is the maximum of the likelihood, of those rows
    message = str(caught[0].message)
    assert "more than 1000 apart" in message and "IsotonicCalibration" in message
    assert "np.maximum(z, np.log(1e-7))" in message

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ledger = ck.compare_calibration(ck.TemperatureScaling(), logp, y, n_sims=200)
    worse = [str(w.message) for w in seen if "worse beyond noise" in str(w.message)]
    assert len(worse) == 1 and "ECE" in worse[0]
    assert [w.instrument for w in ledger.worse] == ["ECE"]
    ece = ledger.row("ECE")
    assert ece.after - ece.before > ledger.noise_floor_after.p95
    assert any(line.startswith("WORSE beyond noise") for line in ledger.notes())
    assert ledger.to_dict()["worse"][0]["instrument"] == "ECE"

    # bounded as the warning advises, the logits are ordinary and the map helps
    bounded = np.maximum(logp, np.log(1e-7))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ck.CalibkitWarning)
        ledger = ck.compare_calibration(ck.TemperatureScaling(), bounded, y, n_sims=200)
    assert ledger.worse == ()
    assert ledger.after["ECE"] < ledger.before["ECE"]


def test_logits_large_by_a_common_factor_are_not_extreme(digits_nb):
    """The contrast: a softmax model's logits times 3e8 are as large as naive Bayes's, but one
    temperature suits them all (it absorbs the factor), so no warning."""
    data = np.load(EXAMPLES / "densenet40_cifar10_logits.npz")
    z, y = data["val_logits"], data["val_labels"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ck.CalibkitWarning)
        t1 = ck.TemperatureScaling().fit(z, y).temperature_
        t_far = ck.TemperatureScaling().fit(3e8 * z, y).temperature_
    assert t_far == pytest.approx(3e8 * t1, rel=1e-7)
    logp, y_nb = digits_nb
    with pytest.warns(ck.CalibkitWarning, match="these logits are extreme"):
        ck.VectorScaling(l2=1.0).fit(logp, y_nb)


def test_a_map_that_makes_the_held_out_nll_worse_says_so(digits_lr):
    probs, y = digits_lr
    # an unpenalised matrix scaling of 110 parameters on 450 rows overfits
    with pytest.warns(ck.CalibkitWarning, match="worse beyond noise: .*NLL"):
        ledger = ck.compare_calibration(
            ck.MatrixScaling(), np.log(probs), y, n_sims=50, calibration_fraction=0.5
        )
    nll = next(w for w in ledger.worse if w.instrument == "NLL")
    held = ledger_held(y)
    before = -np.log(probs[held, y[held]])
    after = -np.log(
        ledger.calibrator.predict_proba(np.log(probs[held]))[np.arange(held.size), y[held]]
    )
    d = after - before
    assert nll.before == pytest.approx(before.mean(), rel=1e-12)
    assert nll.after == pytest.approx(after.mean(), rel=1e-12)
    assert nll.noise == pytest.approx(1.96 * d.std(ddof=1) / np.sqrt(d.size), rel=1e-12)
    assert d.mean() > nll.noise


# ----------------------------------------------------------------------- exact 0 and 1: clip=


def test_forest_probabilities_are_refused_naming_the_users_value(cancer_rf):
    probs, y = cancer_rf
    zero = tuple(np.argwhere(probs == 0)[0])
    with pytest.raises(
        ck.InputError,
        match=rf"TemperatureScaling.fit: the log is infinite for a probability of exactly 0; "
        rf"{np.count_nonzero(probs == 0)} values of probs are, first at row {zero[0]}, column "
        rf"{zero[1]}: 0\.0\. Pass clip=1e-7",
    ):
        ck.TemperatureScaling(from_logits=False).fit(probs, y)
    p1 = probs[:, 1]
    first = int(np.argmax((p1 == 0) | (p1 == 1)))
    for calibrator in (
        ck.TemperatureScaling(from_logits=False),
        ck.PlattScaling(from_logits=False),
    ):
        with pytest.raises(
            ck.InputError,
            match=rf"the log-odds is infinite for a probability of exactly 0 or 1; "
            rf"{np.count_nonzero((p1 == 0) | (p1 == 1))} values of probs are, first at index "
            rf"{first}: {p1[first]}\. Pass clip=1e-7",
        ):
            calibrator.fit(p1, y)
    with pytest.raises(ck.InputError, match=r"log p or log\(1 - p\) is infinite .*clip=1e-7"):
        ck.BetaCalibration().fit(p1, y)  # was clipped at 2.2e-16 by default
    # isotonic regression and histogram binning use them as they are, and take no clip
    for name in ("isotonic", "histogram"):
        with warnings.catch_warnings():
            warnings.simplefilter("error", ck.CalibkitWarning)
            out = make_calibrator(name).fit(p1, y).predict_proba([0.0, 1.0])
        assert np.all((out >= 0) & (out <= 1))
        with pytest.raises(ck.InputError, match="has no setting 'clip'"):
            make_calibrator(name, clip=1e-7)


@pytest.mark.parametrize(
    ("name", "settings", "binary"),
    [
        ("temperature", {"from_logits": False}, False),
        ("temperature", {"from_logits": False}, True),
        ("platt", {"from_logits": False}, True),
        ("platt", {"from_logits": False, "multiclass": "top-label"}, False),
        ("beta", {}, True),
        ("beta", {"multiclass": "top-label"}, False),
        ("vector", {"from_logits": False}, False),
        ("matrix", {"from_logits": False, "l2": 1.0, "intercept": 1.0}, False),
    ],
)
def test_clip_moves_the_probabilities_with_a_count_in_fit_and_predict(
    cancer_rf, name, settings, binary, tmp_path
):
    probs, y = cancer_rf
    scores = probs[:, 1] if binary else probs
    eps = 1e-7
    moved = (scores < eps) | (scores > 1 - eps)
    rows = int(np.count_nonzero(moved if binary else moved.any(axis=1)))
    if settings.get("multiclass") == "top-label":  # only a top-label confidence of 1 counts
        rows = int(np.count_nonzero(probs.max(axis=1) > 1 - eps))
    with pytest.warns(ck.CalibkitWarning, match=rf"clip=1e-07 moved {rows} rows of {y.size}"):
        fitted = make_calibrator(name, clip=eps, **settings).fit(scores, y)
    # the identity: clipping is the same as fitting on the clipped probabilities
    clipped = np.clip(scores, eps, 1 - eps)
    if not binary and settings.get("multiclass") != "top-label":
        reference_input = clipped
    else:
        reference_input = clipped if binary else _top_clipped(probs, eps)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ck.CalibkitWarning)
        reference = make_calibrator(name, **settings).fit(reference_input, y)
        expected = reference.predict_proba(reference_input)
    with pytest.warns(ck.CalibkitWarning, match=f"moved {rows} rows"):
        got = fitted.predict_proba(scores)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-15)

    # the setting is saved with the map, and a loaded map clips alike
    path = save_calibrator(tmp_path / "map.json", fitted)
    assert json.loads(path.read_text())["params"]["clip"] == eps
    with pytest.warns(ck.CalibkitWarning, match=f"moved {rows} rows"):
        again = load_calibrator(path).predict_proba(scores)
    np.testing.assert_array_equal(again, got)


def _top_clipped(probs: np.ndarray, eps: float) -> np.ndarray:
    """Binary (two-class) rows whose top class is at most 1 - eps: the top-label clip."""
    top = probs.max(axis=1, keepdims=True)
    capped = np.minimum(top, 1 - eps)
    return np.where(probs == top, capped, 1 - capped)


def test_clip_is_checked_and_refused_where_there_is_nothing_to_clip(digits_lr, tmp_path):
    probs, y = digits_lr
    for bad in (0.0, 0.5, -1e-7, "1e-7", True):
        with pytest.raises(ck.InputError, match="clip must be None .* strictly between 0 and 0.5"):
            ck.TemperatureScaling(from_logits=False, clip=bad).fit(probs, y)
    with pytest.raises(ck.InputError, match="but this map reads logits"):
        ck.TemperatureScaling(clip=1e-7).fit(np.log(probs), y)
    with pytest.raises(ck.InputError, match="but this map reads logits"):
        ck.PlattScaling(clip=1e-7).fit(np.log(probs), y)
    with pytest.warns(ck.CalibkitWarning, match="clip=1e-07 moved"):
        fitted = ck.TemperatureScaling(from_logits=False, clip=1e-7).fit(probs, y)
    data = fitted.to_dict()
    data["params"]["clip"] = 0.0
    with pytest.raises(
        ck.InputError, match=r"malformed 'temperature' calibrator: params: clip must"
    ):
        ck.Calibrator.from_dict(data)
    data["params"]["clip"] = 0.7
    with pytest.raises(ck.InputError, match=r"params.clip must be at most 0.5, got 0.7"):
        ck.Calibrator.from_dict(data)
