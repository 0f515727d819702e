"""ck.CalibrationDisplay: scikit-learn's display pattern around calibkit's audit and its
reliability diagram (the same audit numbers, the same drawing, on the axes given)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")
matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from sklearn.datasets import load_iris, make_classification  # noqa: E402
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.svm import LinearSVC  # noqa: E402

import calibkit as ck  # noqa: E402


def _texts(ax):
    return [t.get_text() for t in ax.texts] + [ax.get_title()]


def test_from_predictions_audits_the_second_class():
    y = np.array(["ham", "spam", "spam", "ham", "spam", "ham"])
    p = np.array([0.1, 0.8, 0.6, 0.3, 0.9, 0.7])
    display = ck.CalibrationDisplay.from_predictions(y, p, n_bins=5, name="filter")
    outcome = (y == "spam").astype(int)
    direct = ck.audit(p, outcome, n_bins=5)
    assert display.audit_.n == 6
    assert display.audit_.ece == pytest.approx(direct.ece, rel=1e-12)
    assert display.audit_.ece == pytest.approx(ck.ece(p, outcome, n_bins=5), rel=1e-12)
    assert [r.count for r in display.audit_.table.rows] == [r.count for r in direct.table.rows]
    assert display.ax_.figure is display.figure_
    assert display.ax_.get_title().startswith("filter")
    plt.close(display.figure_)


def test_the_drawing_is_calibkits_reliability_diagram():
    rng = np.random.default_rng(0)
    p = rng.uniform(size=300)
    y = (rng.uniform(size=300) < p**2).astype(int)
    display = ck.CalibrationDisplay.from_predictions(y, p, n_bins=10, histogram=False)
    ax = ck.reliability_diagram(ck.audit(p, y, n_bins=10), histogram=False)
    assert display.ax_.get_title() == ax.get_title()
    assert len(display.ax_.collections) == len(ax.collections)
    for ours, theirs in zip(display.ax_.collections, ax.collections, strict=True):
        np.testing.assert_allclose(ours.get_offsets(), theirs.get_offsets())
    plt.close("all")


def test_from_estimator_multiclass_is_top_label_and_plots_on_the_given_axes():
    X, y = load_iris(return_X_y=True)
    clf = ck.CalibratedClassifier(LogisticRegression(max_iter=1000), method="platt").fit(X, y)
    fig, ax = plt.subplots()
    display = ck.CalibrationDisplay.from_estimator(clf, X, y, n_bins=10, ax=ax, histogram=False)
    assert display.ax_ is ax and display.figure_ is fig
    conf, outcome = ck.top_label(clf.predict_proba(X), y)
    assert display.audit_.ece == pytest.approx(ck.ece(conf, outcome, n_bins=10), rel=1e-12)
    assert display.audit_.n_classes == 3
    assert display.ax_.get_title().startswith("CalibratedClassifier")
    # plot again, elsewhere: the same audit drawn on new axes
    fig2, ax2 = plt.subplots()
    assert display.plot(ax=ax2, histogram=False).ax_ is ax2
    assert display.figure_ is fig2
    plt.close("all")


def test_from_estimator_needs_probabilities():
    X, y = make_classification(n_samples=50, random_state=0)
    with pytest.raises(ck.InputError, match="LinearSVC has no predict_proba; wrap it"):
        ck.CalibrationDisplay.from_estimator(LinearSVC().fit(X, y), X, y)


def test_bad_predictions_are_refused():
    with pytest.raises(
        ck.InputError, match=r"probs must lie in \[0, 1\]; 1 value does not, first at index 1: 1.3"
    ):
        ck.CalibrationDisplay.from_predictions([0, 1], [0.2, 1.3])
