"""Platt scaling: a hand-solved fit, scikit-learn as the oracle (``_sigmoid_calibration`` and
``CalibratedClassifierCV``), separable data, the multiclass modes, and the calibrator contract."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest

import calibkit as ck
from calibkit.recalibrate.base import Calibrator
from calibkit.recalibrate.platt import PlattScaling

sklearn = pytest.importorskip("sklearn")
from sklearn.base import clone  # noqa: E402
from sklearn.calibration import CalibratedClassifierCV, _sigmoid_calibration  # noqa: E402
from sklearn.datasets import load_breast_cancer, make_classification  # noqa: E402
from sklearn.frozen import FrozenEstimator  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.pipeline import Pipeline, make_pipeline  # noqa: E402
from sklearn.preprocessing import FunctionTransformer, StandardScaler  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402


@pytest.fixture(scope="module")
def cancer():
    """A linear SVM on half of the breast-cancer data; the other half is the calibration split."""
    x, y = load_breast_cancer(return_X_y=True)
    order = np.random.default_rng(0).permutation(y.size)
    train, cal = order[:250], order[250:]
    clf = make_pipeline(StandardScaler(), LinearSVC(C=0.01)).fit(x[train], y[train])
    return clf, x, y, cal


@pytest.fixture(scope="module")
def four_classes():
    x, y = make_classification(
        n_samples=1500, n_classes=4, n_informative=6, n_clusters_per_class=1, random_state=0
    )
    clf = LogisticRegression(max_iter=1000).fit(x[:500], y[:500])
    return clf, x, y


# ----------------------------------------------------------------------------- by hand


def test_two_score_values_reproduce_their_frequencies():
    # at s = 0, 1 event in 4; at s = 1, 3 in 4: sigmoid(b) = 1/4, sigmoid(a + b) = 3/4
    s = [0, 0, 0, 0, 1, 1, 1, 1]  # scores, not probabilities: check_logits=False insists
    platt = PlattScaling(smooth_targets=False, check_logits=False).fit(s, [0, 0, 0, 1, 0, 1, 1, 1])
    assert platt.a_[0] == pytest.approx(2 * math.log(3), abs=1e-12)
    assert platt.b_[0] == pytest.approx(-math.log(3), abs=1e-12)
    assert platt.converged_ and platt.n_iter_[0] < 20
    np.testing.assert_allclose(platt.predict_proba([0.0, 1.0]), [0.25, 0.75], atol=1e-14)


def test_unsmoothed_fit_is_a_stationary_point():
    rng = np.random.default_rng(3)
    s = rng.normal(size=400) * 3
    y = (rng.uniform(size=400) < 1 / (1 + np.exp(-(0.7 * s - 0.5)))).astype(int)
    p = PlattScaling(smooth_targets=False).fit(s, y).predict_proba(s)
    assert abs(np.sum(p - y)) < 1e-9  # the likelihood equations of (b, a)
    assert abs(np.sum((p - y) * s)) < 1e-9


def test_smoothed_targets_are_platts():
    # 3 positives and 2 negatives: targets 4/5 and 1/4; with one score value per class the
    # fit reproduces them exactly
    platt = PlattScaling().fit([1.0, 1.0, 1.0, -1.0, -1.0], [1, 1, 1, 0, 0])
    np.testing.assert_allclose(platt.predict_proba([1.0, -1.0]), [4 / 5, 1 / 4], atol=1e-12)


# ----------------------------------------------------------------------------- scikit-learn


@pytest.mark.parametrize("scale", [1.0, 1000.0])
def test_agrees_with_sklearn_sigmoid_calibration(cancer, scale):
    clf, x, y, cal = cancer
    s = clf.decision_function(x[cal]) * scale  # scale 1000: scikit-learn rescales internally
    a, b = _sigmoid_calibration(s, y[cal])  # its convention: p = 1 / (1 + exp(a s + b))
    platt = PlattScaling().fit(s, y[cal])
    assert platt.converged_
    assert platt.a_[0] == pytest.approx(-a, abs=1e-6 / scale)
    assert platt.b_[0] == pytest.approx(-b, abs=1e-6)


def test_agrees_with_calibrated_classifier_cv_binary(cancer):
    clf, x, y, cal = cancer
    oracle = CalibratedClassifierCV(FrozenEstimator(clf), method="sigmoid").fit(x[cal], y[cal])
    platt = PlattScaling().fit(clf.decision_function(x[cal]), y[cal])
    ours = platt.predict_proba(clf.decision_function(x))
    np.testing.assert_allclose(ours, oracle.predict_proba(x)[:, 1], atol=1e-6)


def test_agrees_with_calibrated_classifier_cv_multiclass(four_classes):
    clf, x, y = four_classes
    oracle = CalibratedClassifierCV(FrozenEstimator(clf), method="sigmoid")
    oracle.fit(x[500:1000], y[500:1000])
    platt = PlattScaling().fit(clf.decision_function(x[500:1000]), y[500:1000])
    ours = platt.predict_proba(clf.decision_function(x[1000:]))
    np.testing.assert_allclose(ours, oracle.predict_proba(x[1000:]), atol=1e-6)
    assert platt.a_.shape == (4,) and platt.converged_


def test_last_step_of_a_pipeline(cancer):
    clf, x, y, cal = cancer
    pipe = Pipeline(
        [("score", FunctionTransformer(clf.decision_function)), ("platt", PlattScaling())]
    )
    pipe.fit(x[cal], y[cal])
    direct = PlattScaling().fit(clf.decision_function(x[cal]), y[cal])
    np.testing.assert_array_equal(
        pipe.predict_proba(x), direct.predict_proba(clf.decision_function(x))
    )


# ----------------------------------------------------------------------------- degenerate data


def test_separable_scores_without_smoothing_say_so():
    with pytest.warns(ck.CalibkitWarning, match="features separate the labels.*converged_ is"):
        platt = PlattScaling(smooth_targets=False).fit([1.0, 2.0, 3.0, 4.0], [0, 0, 1, 1])
    assert not platt.converged_
    with pytest.warns(ck.CalibkitWarning, match="separate the labels"):  # quasi: a tie at 2
        PlattScaling(smooth_targets=False).fit([1.0, 2.0, 2.0, 4.0], [0, 0, 1, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        smoothed = PlattScaling().fit([1.0, 2.0, 3.0, 4.0], [0, 0, 1, 1])
    assert smoothed.converged_ and np.isfinite(smoothed.a_).all()


def test_one_outcome_only_is_rejected():
    with pytest.raises(ck.InputError, match="every label is 1; a calibration split needs both"):
        PlattScaling(check_logits=False).fit([0.1, 0.2, 0.3], [1, 1, 1])


def test_absent_class_in_one_vs_rest_warns():
    z = np.random.default_rng(0).normal(size=(30, 3))
    with pytest.warns(ck.CalibkitWarning, match=r"\(class 2 vs rest\): class 2 is never the event"):
        PlattScaling().fit(z, np.arange(30) % 2)


# ----------------------------------------------------------------------------- inputs


def test_probabilities_uses_the_logit():
    rng = np.random.default_rng(1)
    p = rng.uniform(0.02, 0.98, size=200)
    y = (rng.uniform(size=200) < p**2).astype(int)
    on_probs = PlattScaling(from_logits=False).fit(p, y)
    on_logits = PlattScaling().fit(np.log(p / (1 - p)), y)
    np.testing.assert_allclose(on_probs.a_, on_logits.a_, rtol=1e-10)
    np.testing.assert_allclose(
        on_probs.predict_proba(p), on_logits.predict_proba(np.log(p / (1 - p))), rtol=1e-10
    )
    with pytest.raises(
        ck.InputError,
        match=r"the log-odds is infinite for a probability of exactly 0 or 1; 2 values of probs "
        r"are, first at index 1: 0.0\. Pass clip=1e-7",
    ):
        PlattScaling(from_logits=False).fit([0.3, 0.0, 1.0, 0.6], [0, 0, 1, 1])


def test_top_label_reads_logits_or_probabilities_alike():
    rng = np.random.default_rng(2)
    z = rng.normal(size=(600, 3)) * 2
    y = np.array([rng.choice(3, p=q) for q in ck.softmax(z / 1.7)])
    probs = ck.softmax(z)
    from_logits = PlattScaling(multiclass="top-label").fit(z, y)
    from_probs = PlattScaling(multiclass="top-label", from_logits=False).fit(probs, y)
    np.testing.assert_allclose(from_logits.a_, from_probs.a_, rtol=1e-8)
    out = from_logits.predict_proba(z)
    np.testing.assert_allclose(out, from_probs.predict_proba(probs), atol=1e-10)
    assert from_logits.a_[0] < 1  # an overconfident model is softened
    # the top entry is the calibrated confidence; the others keep their ratios
    top = probs.argmax(axis=1)
    rows = np.arange(600)
    others = np.delete(probs, 0, axis=1)[top == 0]
    np.testing.assert_allclose(
        np.delete(out, 0, axis=1)[top == 0] / others,
        np.repeat(((1 - out[rows, top]) / (1 - probs[rows, top]))[top == 0, None], 2, axis=1),
        rtol=1e-9,
    )


# ----------------------------------------------------------------------------- the contract


def _data(kind: str):
    rng = np.random.default_rng(7)
    if kind == "binary":
        s = rng.normal(size=120) * 2
        return s, (rng.uniform(size=120) < 1 / (1 + np.exp(-s))).astype(int)
    z = rng.normal(size=(150, 3)) * 2
    y = np.array([rng.choice(3, p=q) for q in ck.softmax(z)])
    return (ck.softmax(z) if kind == "probs" else z), y


CONFIGS = [
    ("binary", {}),
    ("binary", {"smooth_targets": False}),
    ("logits", {"multiclass": "ovr"}),
    ("logits", {"multiclass": "top-label"}),
    ("probs", {"multiclass": "ovr", "from_logits": False}),
    ("probs", {"multiclass": "top-label", "from_logits": False}),
]


@pytest.mark.parametrize(("kind", "params"), CONFIGS)
def test_contract(kind, params):
    scores, labels = _data(kind)
    platt = PlattScaling(**params)
    with pytest.raises(ck.NotFittedError, match="not fitted yet"):
        platt.predict_proba(scores)
    assert platt.fit(scores, labels) is platt
    out = platt.predict_proba(scores)
    assert out.shape == np.shape(scores) and out.dtype == np.float64
    assert np.all((out >= 0) & (out <= 1))
    if out.ndim == 2:
        np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12)
    loaded = Calibrator.from_dict(json.loads(json.dumps(platt.to_dict(), allow_nan=False)))
    assert type(loaded) is PlattScaling
    np.testing.assert_array_equal(loaded.predict_proba(scores), out)  # bit for bit
    copy = clone(platt)
    assert copy.get_params() == platt.get_params() and not copy.is_fitted


@pytest.mark.parametrize(("kind", "params"), CONFIGS)
def test_bad_input(kind, params):
    scores, labels = _data(kind)
    platt = PlattScaling(**params)
    bad = np.array(scores, dtype=float)
    bad.flat[5] = np.nan
    with pytest.raises(ck.InputError, match="NaN|must be finite"):
        platt.fit(bad, labels)
    with pytest.raises(ck.InputError, match="has 119 entries but the forecasts have 120|has 149"):
        platt.fit(scores, labels[1:])
    wrong = labels.copy()
    wrong[3] = 3
    with pytest.raises(ck.InputError, match="must be 0 or 1|must lie in 0..2"):
        platt.fit(scores, wrong)
    platt.fit(scores, labels)
    other = np.c_[scores, scores[:, :1]] if np.ndim(scores) == 2 else np.c_[scores, -scores]
    if kind == "probs":
        other = other / other.sum(axis=1, keepdims=True)
    with pytest.raises(ck.InputError, match="fitted on .* got (4|2) columns"):
        platt.predict_proba(other)


def test_bad_settings():
    with pytest.raises(ck.InputError, match="multiclass must be one of 'ovr', 'top-label'"):
        PlattScaling(multiclass="ovo").fit([0.0, 1.0], [0, 1])
    with pytest.raises(ck.InputError, match="smooth_targets must be True or False"):
        PlattScaling(smooth_targets="yes").fit([0.0, 1.0], [0, 1])
    with pytest.raises(ck.InputError, match="unknown parameter 'C'"):
        PlattScaling().set_params(C=1.0)


def test_changing_multiclass_after_fit_asks_for_a_refit():
    scores, labels = _data("logits")
    platt = PlattScaling().fit(scores, labels)
    platt.set_params(multiclass="top-label")
    with pytest.raises(ck.InputError, match="fitted with 3 map.* multiclass was changed"):
        platt.predict_proba(scores)


def test_probabilities_top_label_rejects_a_certain_top_class():
    probs = np.array([[0.7, 0.2, 0.1], [1.0, 0.0, 0.0], [0.2, 0.5, 0.3]])
    with pytest.raises(
        ck.InputError,
        match=r"infinite when it is 1 \(every other class exactly 0\); 1 value of probs is, at "
        r"row 1, column 0: 1.0\. Pass clip=1e-7",
    ):
        PlattScaling(multiclass="top-label", from_logits=False).fit(probs, [0, 0, 1])
