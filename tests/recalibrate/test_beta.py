"""Beta calibration: recovery of known parameters, scikit-learn's logistic regression as the
oracle of the fit, the paper's refit without a negative coefficient, the three families,
probabilities of exactly 0 or 1, monotonicity, and the calibrator contract."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import calibkit as ck
from calibkit.recalibrate.base import Calibrator
from calibkit.recalibrate.beta import EPS, BetaCalibration
from calibkit.recalibrate.platt import PlattScaling


def beta_map(p, a, b, c):
    return 1 / (1 + 1 / (np.exp(c) * p**a / (1 - p) ** b))


def sample(a, b, c, n=20_000, seed=1):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.01, 0.99, n)
    return p, (rng.uniform(size=n) < beta_map(p, a, b, c)).astype(int)


# ----------------------------------------------------------------------------- by hand


def test_am_by_hand():
    # logit(0.2) = -log 4, logit(0.8) = log 4; events 2 of 5 and 4 of 5 are reproduced:
    # a log 4 + c = log 4 and -a log 4 + c = log(2/3)
    p = [0.2] * 5 + [0.8] * 5
    y = [1, 1, 0, 0, 0, 1, 1, 1, 1, 0]
    beta = BetaCalibration(parameters="am").fit(p, y)
    c = math.log(8 / 3) / 2
    assert beta.c_[0] == pytest.approx(c, abs=1e-12)
    assert beta.a_[0] == pytest.approx((math.log(4) - c) / math.log(4), abs=1e-12)
    assert beta.a_[0] == beta.b_[0]
    np.testing.assert_allclose(beta.predict_proba([0.2, 0.8]), [0.4, 0.8], atol=1e-12)


def test_formula_matches_the_papers():
    beta = BetaCalibration().fit(*sample(2.0, 0.7, -0.4, n=2000))
    p = np.linspace(0.01, 0.99, 99)
    a, b, c = beta.a_[0], beta.b_[0], beta.c_[0]
    np.testing.assert_allclose(beta.predict_proba(p), beta_map(p, a, b, c), rtol=1e-12)
    # m is where the map crosses 1/2, and c = b log(1 - m) - a log m
    m = beta.m_[0]
    assert beta.predict_proba([m])[0] == pytest.approx(0.5, abs=1e-12)
    assert c == pytest.approx(b * math.log(1 - m) - a * math.log(m), abs=1e-10)


# ----------------------------------------------------------------------------- recovery


def test_recovers_the_parameters_that_generated_the_data():
    beta = BetaCalibration().fit(*sample(2.0, 0.7, -0.4))
    assert beta.converged_
    assert beta.a_[0] == pytest.approx(2.0, abs=0.15)
    assert beta.b_[0] == pytest.approx(0.7, abs=0.15)
    assert beta.c_[0] == pytest.approx(-0.4, abs=0.15)


def test_calibrated_data_give_nearly_the_identity():
    beta = BetaCalibration().fit(*sample(1.0, 1.0, 0.0, seed=2))
    np.testing.assert_allclose([beta.a_[0], beta.b_[0], beta.c_[0]], [1, 1, 0], atol=0.12)


def test_fit_is_sklearns_unpenalised_logistic_regression():
    linear_model = pytest.importorskip("sklearn.linear_model")
    p, y = sample(2.0, 0.7, -0.4, n=3000, seed=3)
    features = np.c_[np.log(p), -np.log1p(-p)]
    lr = linear_model.LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(features, y)
    beta = BetaCalibration().fit(p, y)
    np.testing.assert_allclose([beta.a_[0], beta.b_[0]], lr.coef_[0], atol=1e-5)
    assert beta.c_[0] == pytest.approx(lr.intercept_[0], abs=1e-5)


def test_negative_coefficient_is_dropped_and_refitted():
    linear_model = pytest.importorskip("sklearn.linear_model")
    p, y = sample(1.0, -0.8, 0.5, seed=4)  # b < 0: outside the family
    beta = BetaCalibration().fit(p, y)
    assert beta.b_[0] == 0.0 and beta.a_[0] > 0
    lr = linear_model.LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000)
    lr.fit(np.log(p)[:, None], y)  # the refit on log p alone
    assert beta.a_[0] == pytest.approx(lr.coef_[0, 0], abs=1e-5)
    assert beta.c_[0] == pytest.approx(lr.intercept_[0], abs=1e-5)


def test_am_is_platt_on_the_logit_and_ab_fixes_m():
    p, y = sample(1.5, 1.5, 0.3, n=4000, seed=5)
    am = BetaCalibration(parameters="am").fit(p, y)
    platt = PlattScaling(smooth_targets=False, from_logits=False).fit(p, y)
    np.testing.assert_allclose(am.predict_proba(p), platt.predict_proba(p), rtol=1e-9)
    ab = BetaCalibration(parameters="ab").fit(p, y)
    assert ab.m_[0] == pytest.approx(0.5, abs=1e-12)
    assert ab.c_[0] == pytest.approx((ab.a_[0] - ab.b_[0]) * math.log(2), abs=1e-12)
    assert ab.predict_proba([0.5])[0] == pytest.approx(0.5, abs=1e-12)


@pytest.mark.parametrize("parameters", ["abm", "ab", "am"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_monotone(parameters, seed):
    rng = np.random.default_rng(seed)
    a, b, c = rng.uniform(-1, 3), rng.uniform(-1, 3), rng.normal()
    p, y = sample(a, b, c, n=1500, seed=seed)
    beta = BetaCalibration(parameters=parameters).fit(p, y)
    assert (beta.a_ >= 0).all() and (beta.b_ >= 0).all()
    out = beta.predict_proba(np.linspace(0, 1, 2001)[1:-1])
    assert np.all(np.diff(out) >= 0) and out.min() >= 0 and out.max() <= 1


# ----------------------------------------------------------------------------- 0 and 1


def test_exact_zeros_and_ones_are_clipped_with_a_count():
    p, y = sample(2.0, 0.7, -0.4, n=500, seed=6)
    p[:3] = [0.0, 1.0, 1e-300]
    # clip=EPS is the authors' betacal clip: 0, 1 and 1e-300 lie outside [EPS, 1 - EPS]
    with pytest.warns(ck.CalibkitWarning, match=r"clip=2.22045e-16 moved 3 rows of 500"):
        beta = BetaCalibration(clip=EPS).fit(p, y)
    with pytest.warns(
        ck.CalibkitWarning, match=r"moved 1 row of 2 \(1 probs value, first at index 0: 0.0\)"
    ):
        out = beta.predict_proba([0.0, 0.5])
    assert out[0] == beta.predict_proba([EPS])[0]  # the value at the clip, finite
    assert 0 <= out[0] < out[1] <= 1


def test_separable_data_say_so():
    with pytest.warns(ck.CalibkitWarning, match="features separate the labels.*converged_ is"):
        beta = BetaCalibration().fit([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1])
    assert not beta.converged_


# ----------------------------------------------------------------------------- the contract


def _data(kind: str):
    rng = np.random.default_rng(10)
    if kind == "binary":
        return sample(1.5, 0.8, 0.2, n=300, seed=11)
    z = rng.normal(size=(300, 3)) * 2
    y = np.array([rng.choice(3, p=q) for q in ck.softmax(z / 2)])
    return ck.softmax(z), y


CONFIGS = [
    ("binary", {}),
    ("binary", {"parameters": "am"}),
    ("binary", {"parameters": "ab"}),
    ("probs", {"multiclass": "ovr"}),
    ("probs", {"multiclass": "top-label"}),
]


@pytest.mark.parametrize(("kind", "params"), CONFIGS)
def test_contract(kind, params):
    scores, labels = _data(kind)
    beta = BetaCalibration(**params)
    with pytest.raises(ck.NotFittedError, match="not fitted yet"):
        beta.predict_proba(scores)
    assert beta.fit(scores, labels) is beta
    assert beta.converged_
    out = beta.predict_proba(scores)
    assert out.shape == np.shape(scores)
    assert np.all((out >= 0) & (out <= 1))
    if out.ndim == 2:
        np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12)
    loaded = Calibrator.from_dict(json.loads(json.dumps(beta.to_dict(), allow_nan=False)))
    assert type(loaded) is BetaCalibration
    np.testing.assert_array_equal(loaded.predict_proba(scores), out)
    sklearn_base = pytest.importorskip("sklearn.base")
    copy = sklearn_base.clone(beta)
    assert copy.get_params() == beta.get_params() and not copy.is_fitted


@pytest.mark.parametrize(("kind", "params"), CONFIGS)
def test_bad_input(kind, params):
    scores, labels = _data(kind)
    beta = BetaCalibration(**params)
    bad = np.array(scores, dtype=float)
    bad.flat[5] = np.nan
    with pytest.raises(ck.InputError, match="must not contain NaN"):
        beta.fit(bad, labels)
    with pytest.raises(ck.InputError, match="but the forecasts have"):
        beta.fit(scores, labels[1:])
    wrong = labels.copy()
    wrong[3] = 5
    with pytest.raises(ck.InputError, match="must be 0 or 1|must lie in 0..2"):
        beta.fit(scores, wrong)
    beta.fit(scores, labels)
    with pytest.raises(ck.InputError, match="fitted on .*, got (2 columns|1-D scores)"):
        beta.predict_proba(np.full((4, 2), 0.5) if kind == "binary" else np.full(4, 0.5))


def test_bad_settings_and_malformed_state():
    with pytest.raises(ck.InputError, match="parameters must be one of 'abm', 'ab', 'am'"):
        BetaCalibration(parameters="a").fit([0.2, 0.8], [0, 1])
    data = BetaCalibration().fit(*sample(1.0, 1.0, 0.0, n=200)).to_dict()
    data["state"]["maps"][0]["a"] = -1.0
    with pytest.raises(ck.InputError, match="beta map needs finite a, b >= 0"):
        Calibrator.from_dict(data)
    data["state"]["maps"] = []
    with pytest.raises(ck.InputError, match="needs 1 map"):
        Calibrator.from_dict(data)


def test_last_step_of_a_pipeline():
    pipeline = pytest.importorskip("sklearn.pipeline")
    preprocessing = pytest.importorskip("sklearn.preprocessing")
    p, y = sample(1.5, 0.8, 0.2, n=300)
    pipe = pipeline.Pipeline(
        [("ident", preprocessing.FunctionTransformer()), ("beta", BetaCalibration())]
    ).fit(p, y)
    np.testing.assert_array_equal(
        pipe.predict_proba(p), BetaCalibration().fit(p, y).predict_proba(p)
    )
