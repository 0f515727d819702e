"""Isotonic calibration: a hand-worked PAVA with ties, scikit-learn's IsotonicRegression and
CalibratedClassifierCV as oracles (tied scores included), out-of-range scores, the multiclass
modes, and the calibrator contract."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import calibkit as ck
from calibkit.recalibrate.base import Calibrator
from calibkit.recalibrate.isotonic import IsotonicCalibration

sklearn = pytest.importorskip("sklearn")
from sklearn.base import clone  # noqa: E402
from sklearn.calibration import CalibratedClassifierCV  # noqa: E402
from sklearn.datasets import make_classification  # noqa: E402
from sklearn.frozen import FrozenEstimator  # noqa: E402
from sklearn.isotonic import IsotonicRegression  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.pipeline import Pipeline  # noqa: E402
from sklearn.preprocessing import FunctionTransformer  # noqa: E402

# ----------------------------------------------------------------------------- by hand


def test_pava_with_ties_by_hand():
    # the tie at 5 (labels 1, 0) pools to 1/2 with weight 2; PAVA pools (2, 3) to 1/2 and then
    # (4, 5) to (1 + 2 * 1/2) / 3 = 2/3
    iso = IsotonicCalibration().fit([1, 2, 3, 4, 5, 5], [0, 1, 0, 1, 1, 0])
    np.testing.assert_allclose(
        iso.predict_proba([1, 2, 3, 4, 5]), [0, 1 / 2, 1 / 2, 2 / 3, 2 / 3], atol=1e-15
    )
    # linear interpolation between fitted points, end values outside the range
    np.testing.assert_allclose(
        iso.predict_proba([0.0, 1.5, 3.5, 9.0]), [0, 1 / 4, (1 / 2 + 2 / 3) / 2, 2 / 3]
    )
    assert iso.x_min_.tolist() == [1.0] and iso.x_max_.tolist() == [5.0]
    # the flat run (4, 5) keeps its two ends only; (2, 3) likewise
    assert iso.maps_[0].x.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0]


def test_tied_scores_get_one_value_whatever_their_order():
    s = [0.2, 0.5, 0.5, 0.5, 0.9]
    a = IsotonicCalibration().fit(s, [0, 1, 0, 0, 1]).predict_proba(s)
    b = IsotonicCalibration().fit(s[::-1], [1, 0, 0, 1, 0]).predict_proba(s)
    np.testing.assert_array_equal(a, b)
    assert a.tolist() == [0.0, 1 / 3, 1 / 3, 1 / 3, 1.0]


def test_out_of_bounds_raise_names_the_first_score():
    iso = IsotonicCalibration(out_of_bounds="raise").fit([0.2, 0.4, 0.8], [0, 1, 1])
    np.testing.assert_allclose(iso.predict_proba([0.2, 0.3, 0.8]), [0, 0.5, 1])
    with pytest.raises(
        ck.InputError,
        match=r"2 scores lie outside the calibration range \[0.2, 0.8\], first at index 1: 0.9\. "
        r"Use out_of_bounds='clip'",
    ):
        iso.predict_proba([0.5, 0.9, 0.1])
    with pytest.raises(ck.InputError, match="out_of_bounds must be one of 'clip', 'raise'"):
        IsotonicCalibration(out_of_bounds="nan").fit([0.2, 0.4], [0, 1])


def test_monotone_and_in_unit_interval():
    rng = np.random.default_rng(4)
    s = rng.normal(size=500)
    y = (rng.uniform(size=500) < 1 / (1 + np.exp(-2 * s))).astype(int)
    grid = np.linspace(-5, 5, 1001)
    out = IsotonicCalibration().fit(s, y).predict_proba(grid)
    assert np.all(np.diff(out) >= 0) and out.min() >= 0 and out.max() <= 1


# ----------------------------------------------------------------------------- scikit-learn


def test_agrees_with_sklearn_isotonic_regression_with_ties():
    rng = np.random.default_rng(5)
    s = np.round(rng.normal(size=2000), 1)  # about 70 distinct values: heavy ties
    y = (rng.uniform(size=2000) < 1 / (1 + np.exp(-1.5 * s))).astype(int)
    grid = np.concatenate([np.linspace(-6, 6, 2001), s])  # beyond the range, on and between
    oracle = IsotonicRegression(out_of_bounds="clip").fit(s, y)
    ours = IsotonicCalibration().fit(s, y)
    np.testing.assert_allclose(ours.predict_proba(grid), oracle.predict(grid), atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 6), st.integers(0, 1)), min_size=2, max_size=30),
    st.lists(st.floats(-1.0, 7.0), min_size=1, max_size=10),
)
def test_agrees_with_sklearn_on_any_small_data(pairs, queries):
    s = np.array([p[0] for p in pairs], dtype=float)
    y = np.array([p[1] for p in pairs])
    if y.min() == y.max():
        y[0] = 1 - y[0]
    oracle = IsotonicRegression(out_of_bounds="clip").fit(s, y)
    ours = IsotonicCalibration().fit(s, y)
    np.testing.assert_allclose(ours.predict_proba(queries), oracle.predict(queries), atol=1e-12)


@pytest.mark.parametrize("n_classes", [2, 3])
def test_agrees_with_calibrated_classifier_cv(n_classes):
    x, y = make_classification(
        n_samples=1200, n_classes=n_classes, n_informative=5, n_clusters_per_class=1, random_state=1
    )
    clf = LogisticRegression(max_iter=1000).fit(x[:400], y[:400])
    oracle = CalibratedClassifierCV(FrozenEstimator(clf), method="isotonic")
    oracle.fit(x[400:800], y[400:800])
    ours = IsotonicCalibration().fit(clf.decision_function(x[400:800]), y[400:800])
    expected = oracle.predict_proba(x[800:])
    got = ours.predict_proba(clf.decision_function(x[800:]))
    np.testing.assert_allclose(got, expected[:, 1] if n_classes == 2 else expected, atol=1e-12)


def test_last_step_of_a_pipeline():
    x, y = make_classification(n_samples=600, random_state=2)
    clf = LogisticRegression().fit(x[:300], y[:300])
    positive = FunctionTransformer(lambda data: clf.predict_proba(data)[:, 1])
    pipe = Pipeline([("probs", positive), ("iso", IsotonicCalibration())]).fit(x[300:], y[300:])
    direct = IsotonicCalibration().fit(clf.predict_proba(x[300:])[:, 1], y[300:])
    np.testing.assert_array_equal(
        pipe.predict_proba(x[:50]), direct.predict_proba(clf.predict_proba(x[:50])[:, 1])
    )


# ----------------------------------------------------------------------------- multiclass


def test_rows_where_every_map_gives_zero_become_uniform():
    # in each column the lowest scores belong to other classes, so every map starts at 0
    scores = np.array([[0.0, 0.0, 0.0], [1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 1]], dtype=float)
    labels = np.array([0, 0, 1, 2, 1])
    iso = IsotonicCalibration().fit(scores[1:], labels[1:])
    with pytest.warns(ck.CalibkitWarning, match="probability 0 in 1 row .first row 0.; those"):
        out = iso.predict_proba(scores[:2])
    np.testing.assert_allclose(out[0], [1 / 3] * 3)
    np.testing.assert_allclose(out.sum(axis=1), 1.0)


def test_top_label_keeps_the_other_classes_ranking():
    rng = np.random.default_rng(6)
    probs = ck.softmax(rng.normal(size=(400, 4)) * 2)
    y = np.array([rng.choice(4, p=q) for q in ck.softmax(np.log(probs) / 2)])
    out = IsotonicCalibration(multiclass="top-label").fit(probs, y).predict_proba(probs)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12)
    top = probs.argmax(axis=1)
    rows = np.arange(400)
    masked_in, masked_out = probs.copy(), out.copy()
    masked_in[rows, top] = -1
    masked_out[rows, top] = -1
    moved = out[rows, top] < 1  # where c' = 1 the other classes all get 0
    assert 0 < moved.sum() < 400
    order_in = np.argsort(masked_in[moved], kind="stable")
    assert np.array_equal(order_in, np.argsort(masked_out[moved], kind="stable"))
    assert np.all(out[~moved][masked_out[~moved] >= 0] == 0)


# ----------------------------------------------------------------------------- the contract


def _data(kind: str):
    rng = np.random.default_rng(8)
    if kind == "binary":
        s = rng.normal(size=120)
        return s, (rng.uniform(size=120) < 1 / (1 + np.exp(-2 * s))).astype(int)
    z = rng.normal(size=(150, 3)) * 2
    y = np.array([rng.choice(3, p=q) for q in ck.softmax(z)])
    return (ck.softmax(z) if kind == "probs" else z), y


CONFIGS = [
    ("binary", {}),
    ("binary", {"out_of_bounds": "raise"}),
    ("scores", {"multiclass": "ovr"}),
    ("probs", {"multiclass": "ovr"}),
    ("probs", {"multiclass": "top-label"}),
]


@pytest.mark.parametrize(("kind", "params"), CONFIGS)
def test_contract(kind, params):
    scores, labels = _data(kind)
    iso = IsotonicCalibration(**params)
    with pytest.raises(ck.NotFittedError, match="not fitted yet"):
        iso.predict_proba(scores)
    assert iso.fit(scores, labels) is iso
    out = iso.predict_proba(scores)
    assert out.shape == np.shape(scores)
    assert np.all((out >= 0) & (out <= 1))
    if out.ndim == 2:
        np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12)
    loaded = Calibrator.from_dict(json.loads(json.dumps(iso.to_dict(), allow_nan=False)))
    assert type(loaded) is IsotonicCalibration
    np.testing.assert_array_equal(loaded.predict_proba(scores), out)
    copy = clone(iso)
    assert copy.get_params() == iso.get_params() and not copy.is_fitted


@pytest.mark.parametrize(("kind", "params"), CONFIGS)
def test_bad_input(kind, params):
    scores, labels = _data(kind)
    iso = IsotonicCalibration(**params)
    bad = np.array(scores, dtype=float)
    bad.flat[5] = np.nan
    with pytest.raises(ck.InputError, match="NaN|must be finite"):
        iso.fit(bad, labels)
    with pytest.raises(ck.InputError, match="but the forecasts have"):
        iso.fit(scores, labels[1:])
    wrong = labels.copy()
    wrong[3] = -1
    with pytest.raises(ck.InputError, match="must be 0 or 1|must lie in 0..2"):
        iso.fit(scores, wrong)
    iso.fit(scores, labels)
    if kind == "binary":
        with pytest.raises(ck.InputError, match="fitted on 1-D binary scores, got 2 columns"):
            iso.predict_proba(np.full((4, 2), 0.5))
    else:
        with pytest.raises(ck.InputError, match=r"fitted on 3 classes \(3 columns\), got 1-D"):
            iso.predict_proba(np.full(4, 0.5))


def test_malformed_state_is_an_input_error():
    data = IsotonicCalibration().fit([0.1, 0.5, 0.9], [0, 1, 1]).to_dict()
    data["state"]["maps"][0]["x"] = [0.9, 0.1, 0.5]
    with pytest.raises(ck.InputError, match="strictly increasing"):
        Calibrator.from_dict(data)
