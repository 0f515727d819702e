"""calibkit's calibration losses as scikit-learn scorers: the value computed directly with
calibkit and with scikit-learn's own metrics on the same predictions, the sign scikit-learn
expects, the binary and top-label reductions, and use in model selection."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")

from sklearn.datasets import load_iris, make_classification  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.metrics import brier_score_loss, log_loss  # noqa: E402
from sklearn.model_selection import (  # noqa: E402
    GridSearchCV,
    StratifiedKFold,
    cross_val_score,
    cross_validate,
)
from sklearn.svm import LinearSVC  # noqa: E402

import calibkit as ck  # noqa: E402
from calibkit.sklearn import SCORERS, calibration_loss, make_scorer  # noqa: E402


@pytest.fixture(scope="module")
def binary_fit():
    X, y = make_classification(n_samples=500, n_features=6, random_state=3)
    names = np.where(y == 1, "yes", "no")  # the second class, "yes", is the positive one
    clf = LogisticRegression(C=0.01).fit(X[:250], names[:250])
    return clf, X[250:], names[250:]


@pytest.fixture(scope="module")
def multi_fit():
    X, y = load_iris(return_X_y=True)
    clf = LogisticRegression(C=0.05, max_iter=1000).fit(X[::2], y[::2])
    return clf, X[1::2], y[1::2]


def test_scorer_names_are_negated_losses():
    assert sorted(SCORERS) == sorted(f"neg_{m}" for m in ck.sklearn.METRICS)
    assert SCORERS["neg_ece"].name == "neg_ece"
    assert repr(make_scorer("ece", n_bins=10)) == "make_scorer('ece', n_bins=10)"
    assert make_scorer("neg_brier").metric == "brier"


def test_binary_brier_and_nll_match_sklearn(binary_fit):
    clf, X, y = binary_fit
    p = clf.predict_proba(X)[:, 1]
    assert make_scorer("brier")(clf, X, y) == pytest.approx(
        -brier_score_loss(y, p, pos_label="yes"), rel=1e-12
    )
    assert make_scorer("nll")(clf, X, y) == pytest.approx(-log_loss(y, p), rel=1e-12)


def test_multiclass_brier_and_nll_match_sklearn(multi_fit):
    clf, X, y = multi_fit
    p = clf.predict_proba(X)
    # calibkit's multiclass Brier sums over classes (0 to 2): sklearn's without halving
    one_hot = np.eye(3)[y]
    assert make_scorer("brier")(clf, X, y) == pytest.approx(
        -np.mean(np.sum((p - one_hot) ** 2, axis=1)), rel=1e-12
    )
    try:
        unhalved = brier_score_loss(y, p, scale_by_half=False)
    except TypeError:  # scikit-learn < 1.7 has no multiclass Brier
        unhalved = None
    if unhalved is not None:
        assert make_scorer("brier")(clf, X, y) == pytest.approx(-unhalved, rel=1e-12)
    assert make_scorer("nll")(clf, X, y) == pytest.approx(-log_loss(y, p), rel=1e-12)


def test_binary_ece_is_on_the_second_class(binary_fit):
    clf, X, y = binary_fit
    p = clf.predict_proba(X)[:, 1]
    outcome = (y == "yes").astype(int)
    for metric, norm in (("ece", "l1"), ("mce", "max"), ("rmsce", "l2")):
        direct = ck.ece(p, outcome, n_bins=10, norm=norm)
        assert make_scorer(metric, n_bins=10)(clf, X, y) == pytest.approx(-direct, rel=1e-12)
    assert make_scorer("smooth_ece")(clf, X, y) == pytest.approx(
        -ck.smooth_ece(p, outcome).value, rel=1e-12
    )


def test_multiclass_ece_is_top_label(multi_fit):
    clf, X, y = multi_fit
    p = clf.predict_proba(X)
    conf, outcome = ck.top_label(p, y)
    by_hand = np.mean(p.max(axis=1)) - np.mean(p.argmax(axis=1) == y)  # one-bin ECE, by hand
    assert make_scorer("ece", n_bins=1)(clf, X, y) == pytest.approx(-abs(by_hand), rel=1e-12)
    direct = ck.ece(conf, outcome, n_bins=8, strategy="quantile")
    assert make_scorer("ece", n_bins=8, strategy="quantile")(clf, X, y) == pytest.approx(
        -direct, rel=1e-12
    )
    assert make_scorer("classwise_ece", n_bins=5)(clf, X, y) == pytest.approx(
        -ck.classwise_ece(p, y, n_bins=5), rel=1e-12
    )


def test_smooth_ece_matches_relplot(binary_fit):
    relplot = pytest.importorskip("relplot")
    clf, X, y = binary_fit
    p = clf.predict_proba(X)[:, 1]
    expected = relplot.smECE(p, (y == "yes").astype(int))
    assert -make_scorer("smooth_ece")(clf, X, y) == pytest.approx(expected, abs=2e-3)


def test_calibration_loss_by_hand():
    # three predictions in 10 bins: gaps 0.2, 0.4, 0.1 -> (0.2 + 0.4 + 0.1) / 3
    assert calibration_loss("ece", ["no", "yes", "yes"], [0.2, 0.6, 0.9], n_bins=10) == (
        pytest.approx(0.7 / 3, rel=1e-12)
    )
    # classes= orders the columns: "b" first here
    p = [[0.9, 0.1], [0.3, 0.7]]
    assert calibration_loss("brier", ["b", "a"], p, classes=["b", "a"]) == pytest.approx(
        (0.1**2 + 0.3**2) / 2
    )
    w = [1.0, 3.0]
    assert calibration_loss("brier", [0, 1], [0.5, 0.9], sample_weight=w) == pytest.approx(
        (0.25 + 3 * 0.01) / 4
    )


def test_a_better_calibrated_model_scores_higher():
    rng = np.random.default_rng(0)
    p = rng.uniform(0.05, 0.95, 4000)
    y = (rng.uniform(size=4000) < p).astype(int)
    sharp = np.clip(0.5 + 1.8 * (p - 0.5), 0.01, 0.99)  # overconfident
    for metric in ("ece", "brier", "nll", "smooth_ece"):
        assert -calibration_loss(metric, y, p) > -calibration_loss(metric, y, sharp), metric


def test_cross_val_score_and_grid_search(multi_fit):
    X, y = load_iris(return_X_y=True)
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    lr = LogisticRegression(max_iter=1000)
    scores = cross_val_score(lr, X, y, cv=cv, scoring=SCORERS["neg_nll"])
    by_hand = [
        -log_loss(y[test], lr.fit(X[train], y[train]).predict_proba(X[test]))
        for train, test in cv.split(X, y)
    ]
    np.testing.assert_allclose(scores, by_hand, rtol=1e-10)
    results = cross_validate(
        lr, X, y, cv=cv, scoring={"ece": make_scorer("ece", n_bins=5), "brier": "neg_brier_score"}
    )
    assert set(results) >= {"test_ece", "test_brier"}
    grid = GridSearchCV(lr, {"C": [0.01, 1.0]}, scoring=make_scorer("nll"), cv=cv).fit(X, y)
    assert grid.best_params_ == {"C": 1.0}  # the weakly regularised fit has the lower log loss


def test_errors():
    with pytest.raises(ck.InputError, match="unknown metric 'auc'; choose one of ece"):
        make_scorer("auc")
    with pytest.raises(ck.InputError, match="brier takes no option 'n_bins'; valid: none"):
        make_scorer("brier", n_bins=10)
    X, y = make_classification(n_samples=60, random_state=0)
    svc = LinearSVC().fit(X, y)
    with pytest.raises(ck.InputError, match="LinearSVC has no predict_proba"):
        make_scorer("ece")(svc, X, y)
    lr = LogisticRegression().fit(X, y)
    with pytest.raises(
        ck.InputError, match="1 label.s. the classifier never saw, first at row 0: 7"
    ):
        make_scorer("ece")(lr, X[:3], [7, 0, 1])
    with pytest.raises(ck.InputError, match="y_prob has 3 columns but y_true holds 2"):
        calibration_loss("nll", [0, 1], [[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
