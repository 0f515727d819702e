"""Histogram binning: hand-computed bins, empty bins, edges shared with calibkit's binned
measures, the multiclass modes, and the calibrator contract."""

from __future__ import annotations

import json

import numpy as np
import pytest

import calibkit as ck
from calibkit.recalibrate.base import Calibrator
from calibkit.recalibrate.histogram import HistogramBinning

# ----------------------------------------------------------------------------- by hand


def test_two_bins_by_hand():
    # (0, 0.5]: 0.1, 0.2, 0.5 with labels 0, 1, 0 -> 1/3; (0.5, 1]: 0.6, 0.9 with 1, 1 -> 1
    hb = HistogramBinning(n_bins=2).fit([0.1, 0.2, 0.5, 0.6, 0.9], [0, 1, 0, 1, 1])
    assert hb.maps_[0].edges.tolist() == [0.0, 0.5, 1.0]
    assert hb.maps_[0].counts.tolist() == [3, 2]
    out = hb.predict_proba([0.0, 0.3, 0.5, 0.51, 1.0])  # 0 in the first bin, 0.5 right-closed
    np.testing.assert_array_equal(out, [1 / 3, 1 / 3, 1 / 3, 1.0, 1.0])


def test_empty_bins_take_their_centre():
    # four bins; (0.25, 0.5] holds no calibration score
    hb = HistogramBinning(n_bins=4).fit([0.1, 0.2, 0.6, 0.9], [0, 1, 1, 0])
    assert hb.maps_[0].counts.tolist() == [2, 0, 1, 1]
    assert hb.maps_[0].values.tolist() == [0.5, 0.375, 1.0, 0.0]
    np.testing.assert_array_equal(hb.predict_proba([0.3, 0.5, 0.05]), [0.375, 0.375, 0.5])
    many = HistogramBinning(n_bins=100).fit([0.1, 0.9], [0, 1])
    out = many.predict_proba(np.linspace(0, 1, 1001))
    assert np.isfinite(out).all() and out.min() >= 0 and out.max() <= 1


def test_quantile_bins_by_hand():
    # quantile edges of 0.1, 0.2, 0.3, 0.4 with two bins: [0, 0.25, 1] (as ck.bin_edges)
    hb = HistogramBinning(n_bins=2, strategy="quantile").fit([0.1, 0.2, 0.3, 0.4], [0, 1, 1, 1])
    assert hb.maps_[0].edges.tolist() == [0.0, 0.25, 1.0]
    np.testing.assert_array_equal(hb.predict_proba([0.25, 0.26, 0.95]), [0.5, 1.0, 1.0])
    with pytest.warns(ck.CalibkitWarning, match="quantile bins collapsed"):
        HistogramBinning(n_bins=4, strategy="quantile").fit([0.5] * 6 + [0.7], [0, 1] * 3 + [1])


def test_values_are_the_reliability_tables_accuracies():
    rng = np.random.default_rng(0)
    p = rng.beta(2, 2, size=3000)
    y = (rng.uniform(size=3000) < p**1.5).astype(int)
    for strategy in ("uniform", "quantile"):
        hb = HistogramBinning(n_bins=10, strategy=strategy).fit(p, y)
        edges = ck.bin_edges(p, n_bins=10, strategy=strategy)
        stats = ck.BinStats.from_forecasts(p, y, edges=edges)
        np.testing.assert_array_equal(hb.maps_[0].edges, edges)
        np.testing.assert_array_equal(hb.maps_[0].counts, stats.count)
        filled = stats.count > 0
        np.testing.assert_allclose(hb.maps_[0].values[filled], stats.acc[filled], rtol=1e-12)
        # predictions are the bin values of calibkit's bin index
        np.testing.assert_array_equal(
            hb.predict_proba(p), hb.maps_[0].values[ck.bin_index(p, edges)]
        )


def test_one_vs_rest_and_top_label_by_hand():
    probs = np.array([[0.7, 0.2, 0.1], [0.6, 0.3, 0.1], [0.2, 0.7, 0.1], [0.3, 0.3, 0.4]])
    labels = np.array([0, 1, 1, 2])
    top = HistogramBinning(n_bins=2, multiclass="top-label").fit(probs, labels)
    # confidences 0.7, 0.6, 0.7 in (0.5, 1] (2 of 3 correct), 0.4 in [0, 0.5] (correct)
    assert top.maps_[0].values.tolist() == [1.0, 2 / 3]
    out = top.predict_proba(probs)
    np.testing.assert_allclose(out[0], [2 / 3, 2 / 9, 1 / 9])  # the rest 1/3 shared 2 : 1
    np.testing.assert_allclose(out[3], [0.0, 0.0, 1.0])
    ovr = HistogramBinning(n_bins=2).fit(probs, labels)
    # class 0: (0, 0.5] holds 0.2, 0.3 (neither labelled 0), (0.5, 1] holds 0.7 (labelled 0)
    # and 0.6 (not) -> values 0 and 1/2
    assert ovr.maps_[0].values.tolist() == [0.0, 0.5]
    # row 0: class 0 at 0.7 -> 1/2; class 1 at 0.2 -> 1/3 (0.2, 0.3, 0.3: one labelled 1);
    # class 2 at 0.1 -> 1/4 (all four rows in (0, 0.5], one labelled 2)
    raw = np.array([0.5, 1 / 3, 1 / 4])
    np.testing.assert_allclose(ovr.predict_proba(probs[:1])[0], raw / raw.sum())


# ----------------------------------------------------------------------------- the contract


def _data(kind: str):
    rng = np.random.default_rng(9)
    if kind == "binary":
        p = rng.uniform(size=200)
        return p, (rng.uniform(size=200) < p**2).astype(int)
    z = rng.normal(size=(300, 3)) * 2
    y = np.array([rng.choice(3, p=q) for q in ck.softmax(z / 2)])
    return ck.softmax(z), y


CONFIGS = [
    ("binary", {}),
    ("binary", {"n_bins": 5, "strategy": "quantile"}),
    ("probs", {"multiclass": "ovr", "n_bins": 5}),
    ("probs", {"multiclass": "top-label"}),
]


@pytest.mark.parametrize(("kind", "params"), CONFIGS)
def test_contract(kind, params):
    scores, labels = _data(kind)
    hb = HistogramBinning(**params)
    with pytest.raises(ck.NotFittedError, match="not fitted yet"):
        hb.predict_proba(scores)
    assert hb.fit(scores, labels) is hb
    out = hb.predict_proba(scores)
    assert out.shape == np.shape(scores)
    assert np.all((out >= 0) & (out <= 1))
    if out.ndim == 2:
        np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-12)
    loaded = Calibrator.from_dict(json.loads(json.dumps(hb.to_dict(), allow_nan=False)))
    assert type(loaded) is HistogramBinning
    np.testing.assert_array_equal(loaded.predict_proba(scores), out)
    sklearn_base = pytest.importorskip("sklearn.base")
    copy = sklearn_base.clone(hb)
    assert copy.get_params() == hb.get_params() and not copy.is_fitted


@pytest.mark.parametrize(("kind", "params"), CONFIGS)
def test_bad_input(kind, params):
    scores, labels = _data(kind)
    hb = HistogramBinning(**params)
    bad = np.array(scores, dtype=float)
    bad.flat[5] = np.nan
    with pytest.raises(ck.InputError, match="must not contain NaN; 1 value is NaN"):
        hb.fit(bad, labels)
    with pytest.raises(ck.InputError, match="must lie in \\[0, 1\\].*If these are logits"):
        hb.fit(np.array(scores) * 3 - 1, labels)
    with pytest.raises(ck.InputError, match="but the forecasts have"):
        hb.fit(scores, labels[1:])
    wrong = labels.copy()
    wrong[3] = 7
    with pytest.raises(ck.InputError, match="must be 0 or 1|must lie in 0..2"):
        hb.fit(scores, wrong)
    hb.fit(scores, labels)
    if kind == "binary":
        with pytest.raises(ck.InputError, match="fitted on 1-D binary scores, got 2 columns"):
            hb.predict_proba(np.full((4, 2), 0.5))
    else:
        with pytest.raises(ck.InputError, match=r"fitted on 3 classes \(3 columns\), got 2"):
            hb.predict_proba(np.full((4, 2), 0.5))


def test_bad_settings():
    with pytest.raises(ck.InputError, match="n_bins must be an integer >= 1, got 0"):
        HistogramBinning(n_bins=0).fit([0.1, 0.9], [0, 1])
    with pytest.raises(ck.InputError, match="strategy must be one of 'uniform', 'quantile'"):
        HistogramBinning(strategy="equal").fit([0.1, 0.9], [0, 1])


def test_last_step_of_a_pipeline():
    pipeline = pytest.importorskip("sklearn.pipeline")
    preprocessing = pytest.importorskip("sklearn.preprocessing")
    p, y = _data("probs")
    pipe = pipeline.Pipeline(
        [("ident", preprocessing.FunctionTransformer()), ("hb", HistogramBinning())]
    ).fit(p, y)
    np.testing.assert_array_equal(
        pipe.predict_proba(p), HistogramBinning().fit(p, y).predict_proba(p)
    )


def test_top_label_shares_the_rest_equally_when_the_others_are_zero():
    probs = np.array([[0.7, 0.2, 0.1], [0.6, 0.3, 0.1], [0.2, 0.7, 0.1], [0.3, 0.3, 0.4]])
    top = HistogramBinning(n_bins=2, multiclass="top-label").fit(probs, [0, 1, 1, 2])
    out = top.predict_proba([[0.0, 1.0, 0.0]])  # confidence 1 -> 2/3, the rest 1/3 split equally
    np.testing.assert_allclose(out, [[1 / 6, 2 / 3, 1 / 6]])
