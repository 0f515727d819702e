"""Sample weights in the scores and the unbinned measures: integer weights give the numbers of
the rows repeated that many times (one registry test over every function), the scikit-learn
oracles, hand-worked small cases, the weighted cumulative tests' size by simulation, and the
refusal of bad weights."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import calibkit as ck
from calibkit.measure.distinct import distinct_measures, merge_pooled
from calibkit.measure.pooled import pool_ties
from calibkit.measure.ranking import Ranking
from calibkit.measure.scores import score_sums


def _binary(n: int = 400, seed: int = 5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Forecasts with ties (half on a grid of 0.05) and integer weights 0 to 3."""
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.02, 0.98, n)
    p[: n // 2] = np.clip(np.round(p[: n // 2] * 20) / 20, 0.05, 0.95)
    y = (rng.random(n) < p**1.3).astype(int)  # miscalibrated a little
    w = rng.integers(0, 4, n)
    return p, y, w


def _multiclass(n: int = 300, seed: int = 6) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet([1.0, 2.0, 3.0], n)
    labels = rng.integers(0, 3, n)
    return probs, labels, rng.integers(0, 4, n)


def _fields(obj: Any, names: tuple[str, ...]) -> list[Any]:
    return [getattr(obj, k) for k in names]


_DECOMP = ("brier", "reliability", "resolution", "uncertainty", "refinement", "within_bin")
_SCORE = ("score", "miscalibration", "discrimination", "uncertainty", "recalibrated")
_SLOPE = ("slope", "slope_se", "intercept", "intercept_se", "in_the_large", "in_the_large_se")


def _corp(p: Any, y: Any, **kw: Any) -> list[Any]:
    r = ck.corp(p, y, n_boot=0, **kw)
    return [
        r.x,
        r.recalibrated,
        r.observed,
        *_fields(r.brier, _SCORE),
        *_fields(r.log_loss, _SCORE),
    ]


def _smooth(p: Any, y: Any, **kw: Any) -> list[Any]:
    s = ck.smooth_ece(p, y, **kw)
    return [s.value, s.bandwidth, s.mean_outcome, s.density]


def _cumulative(p: Any, y: Any, **kw: Any) -> list[Any]:
    c = ck.cumulative_calibration(p, y, **kw)
    return [c.x, c.gap, c.ks_error, c.ks_at, c.kuiper_error]


#: name -> (kind of data, the numbers of a call with the keyword arguments given)
REGISTRY: dict[str, tuple[str, Callable[..., Any]]] = {
    "brier": ("binary", lambda p, y, **kw: ck.brier(p, y, **kw)),
    "brier 2-D": ("multiclass", lambda p, y, **kw: ck.brier(p, y, **kw)),
    "brier 2-D logits": (
        "multiclass",
        lambda p, y, **kw: ck.brier(np.log(p), y, from_logits=True, **kw),
    ),
    "brier 1-D logits": (
        "binary",
        lambda p, y, **kw: ck.brier(np.log(p / (1 - p)), y, from_logits=True, **kw),
    ),
    "nll": ("binary", lambda p, y, **kw: ck.nll(p, y, **kw)),
    "nll 2-D": ("multiclass", lambda p, y, **kw: ck.nll(p, y, **kw)),
    "nll 2-D logits": (
        "multiclass",
        lambda p, y, **kw: ck.nll(np.log(p), y, from_logits=True, **kw),
    ),
    "nll 1-D logits": (
        "binary",
        lambda p, y, **kw: ck.nll(np.log(p / (1 - p)), y, from_logits=True, **kw),
    ),
    "accuracy": ("binary", lambda p, y, **kw: ck.accuracy(p, y, **kw)),
    "accuracy 2-D": ("multiclass", lambda p, y, **kw: ck.accuracy(p, y, **kw)),
    "accuracy 2-D logits": (
        "multiclass",
        lambda p, y, **kw: ck.accuracy(np.log(p), y, from_logits=True, **kw),
    ),
    "brier_decomposition": (
        "binary",
        lambda p, y, **kw: _fields(ck.brier_decomposition(p, y, n_bins=10, **kw), _DECOMP),
    ),
    "auc": ("binary", lambda p, y, **kw: ck.auc(p, y, **kw)),
    "corp": ("binary", _corp),
    "smooth_ece": ("binary", _smooth),
    "smooth_ece bandwidth": ("binary", lambda p, y, **kw: _smooth(p, y, bandwidth=0.05, **kw)),
    "cumulative_calibration": ("binary", _cumulative),
    "ks_calibration_error": ("binary", lambda p, y, **kw: ck.ks_calibration_error(p, y, **kw)),
    "calibration_slope": (
        "binary",
        lambda p, y, **kw: _fields(ck.calibration_slope(p, y, **kw), _SLOPE),
    ),
}


def _listed(x: Any) -> list[Any]:
    return x if isinstance(x, list) else [x]


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_integer_weights_equal_repeated_rows(name: str) -> None:
    kind, fn = REGISTRY[name]
    p, y, w = _binary() if kind == "binary" else _multiclass()
    weighted = fn(p, y, sample_weight=w)
    repeated = fn(np.repeat(p, w, axis=0), np.repeat(y, w))
    for got, want in zip(_listed(weighted), _listed(repeated), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_unit_weights_equal_unweighted(name: str) -> None:
    kind, fn = REGISTRY[name]
    p, y, _ = _binary() if kind == "binary" else _multiclass()
    weighted = fn(p, y, sample_weight=np.ones(len(y)))
    for got, want in zip(_listed(weighted), _listed(fn(p, y)), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_pooled_and_distinct_measures_take_weights() -> None:
    p, y, w = _binary()
    weighted = pool_ties(p, y, sample_weight=w.astype(float))
    repeated = pool_ties(np.repeat(p, w), np.repeat(y, w))
    np.testing.assert_array_equal(weighted.x, repeated.x)
    np.testing.assert_allclose(weighted.mass, repeated.count)
    np.testing.assert_allclose(weighted.hits, repeated.hits)
    assert weighted.n == int(np.count_nonzero(w))  # the rows of positive weight
    halves = merge_pooled(
        [
            pool_ties(p[:150], y[:150], sample_weight=w[:150].astype(float)),
            pool_ties(p[150:], y[150:], sample_weight=w[150:].astype(float)),
        ]
    )
    np.testing.assert_allclose(halves.weight, weighted.weight)
    np.testing.assert_allclose(halves.weight_sq, weighted.weight_sq)
    a, b = distinct_measures(halves), distinct_measures(repeated)
    assert a.corp.brier.miscalibration == pytest.approx(b.corp.brier.miscalibration, rel=1e-9)
    assert a.smooth.value == pytest.approx(b.smooth.value, rel=1e-9)
    assert a.cumulative.ks_error == pytest.approx(b.cumulative.ks_error, rel=1e-9)
    assert a.corp.brier.weight == pytest.approx(float(w.sum()))


def test_score_sums_and_ranking_take_weights() -> None:
    p, y, w = _binary()
    wf = w.astype(float)
    brier_sum, nll_sum = score_sums(p, p, y, from_logits=False, where="t", sample_weight=wf)
    assert brier_sum == pytest.approx(float(np.sum(w * (p - y) ** 2)), rel=1e-12)
    nll_hand = -np.sum(w * np.where(y == 1, np.log(p), np.log1p(-p)))
    assert nll_sum == pytest.approx(float(nll_hand), rel=1e-12)
    r = Ranking(p, y == 1, sample_weight=wf)
    assert r.auc() == pytest.approx(ck.auc(np.repeat(p, w), np.repeat(y, w)), rel=1e-12)
    assert r.pair_counts() == Ranking(p, y == 1).pair_counts()  # the rows' counts


# ----------------------------------------------------------------------------- oracles


def test_scores_equal_sklearn_with_weights() -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    p, y, w = _binary()
    wf = np.random.default_rng(1).gamma(0.7, 2.0, p.size)  # real, not integer, weights
    assert ck.brier(p, y, sample_weight=wf) == pytest.approx(
        metrics.brier_score_loss(y, p, sample_weight=wf), rel=1e-12
    )
    assert ck.nll(p, y, sample_weight=wf) == pytest.approx(
        metrics.log_loss(y, p, sample_weight=wf), rel=1e-12
    )
    probs, labels, _ = _multiclass()
    wm = wf[: labels.size]
    assert ck.nll(probs, labels, sample_weight=wm) == pytest.approx(
        metrics.log_loss(labels, probs, sample_weight=wm), rel=1e-12
    )
    assert ck.accuracy(probs, labels, sample_weight=wm) == pytest.approx(
        metrics.accuracy_score(labels, probs.argmax(axis=1), sample_weight=wm), rel=1e-12
    )
    assert ck.auc(p, y, sample_weight=wf) == pytest.approx(
        metrics.roc_auc_score(y, p, sample_weight=wf), rel=1e-12
    )


def test_slope_equals_sklearn_logistic_regression_with_weights() -> None:
    linear = pytest.importorskip("sklearn.linear_model")
    rng = np.random.default_rng(2)
    z = rng.normal(0.0, 1.5, 3000)
    y = (rng.random(z.size) < 1.0 / (1.0 + np.exp(-z))).astype(int)
    p = 1.0 / (1.0 + np.exp(-1.7 * z + 0.3))
    w = rng.gamma(0.7, 2.0, z.size)
    s = ck.calibration_slope(p, y, sample_weight=w)
    x = np.log(p / (1.0 - p))[:, None]
    m = linear.LogisticRegression(C=np.inf, tol=1e-12, max_iter=10_000).fit(x, y, sample_weight=w)
    assert s.slope == pytest.approx(m.coef_[0, 0], rel=1e-7)
    assert s.intercept == pytest.approx(m.intercept_[0], abs=1e-7)
    # the interval: the inverse of the weighted information at the fit, by hand
    q = m.predict_proba(x)[:, 1]
    design = np.hstack([np.ones_like(x), x])
    info = design.T @ (design * (w * q * (1.0 - q))[:, None])
    cov = np.linalg.inv(info)
    assert s.intercept_se == pytest.approx(math.sqrt(cov[0, 0]), rel=1e-6)
    assert s.slope_se == pytest.approx(math.sqrt(cov[1, 1]), rel=1e-6)
    assert s.weight == pytest.approx(float(w.sum())) and s.n == z.size


def test_smooth_ece_equals_relplot_on_repeated_rows() -> None:
    relplot = pytest.importorskip("relplot")
    p, y, w = _binary(n=300)
    s = ck.smooth_ece(p, y, sample_weight=w)
    assert s.value == pytest.approx(relplot.smECE(np.repeat(p, w), np.repeat(y, w)), rel=1e-6)


# ----------------------------------------------------------------------------- by hand


def test_weighted_auc_with_ties_by_hand() -> None:
    # positives 0.4 (w 2) and 0.8 (w 1); negatives 0.1 (w 1), 0.4 (w 3), 0.8 (w 0.5)
    scores = [0.1, 0.4, 0.4, 0.8, 0.8]
    labels = [0, 0, 1, 1, 0]
    w = [1.0, 3.0, 2.0, 1.0, 0.5]
    # pairs: (0.4+, 0.1-) 2; (0.4+, 0.4-) 6 tied -> 3; (0.4+, 0.8-) 1 -> 0
    #        (0.8+, 0.1-) 1; (0.8+, 0.4-) 3; (0.8+, 0.8-) 0.5 tied -> 0.25
    u = 2 + 3 + 0 + 1 + 3 + 0.25
    assert ck.auc(scores, labels, sample_weight=w) == pytest.approx(u / (3.0 * 4.5), rel=1e-15)
    # a zero weight leaves its row out: the negative at 0.8 gone
    w0 = [1.0, 3.0, 2.0, 1.0, 0.0]
    assert ck.auc(scores, labels, sample_weight=w0) == pytest.approx((2 + 3 + 1 + 3) / 12.0)


def test_weighted_brier_decomposition_adds_up() -> None:
    p, y, _ = _binary()
    w = np.random.default_rng(3).gamma(0.5, 1.0, p.size)
    d = ck.brier_decomposition(p, y, n_bins=8, sample_weight=w)
    assert d.brier == pytest.approx(ck.brier(p, y, sample_weight=w), rel=1e-12)
    assert d.reliability - d.resolution + d.uncertainty + d.within_bin == pytest.approx(
        d.brier, rel=1e-12
    )
    assert d.calibration + d.refinement + d.within_bin == pytest.approx(d.brier, rel=1e-12)
    base = float(np.sum(w * y) / np.sum(w))
    assert d.uncertainty == pytest.approx(base * (1.0 - base), rel=1e-12)
    assert d.n == p.size and d.weight == pytest.approx(float(w.sum()))
    assert d.to_dict()["weight"] == d.weight
    assert "weight" not in ck.brier_decomposition(p, y).to_dict()


def test_weighted_corp_decomposition_adds_up() -> None:
    p, y, _ = _binary()
    w = np.random.default_rng(4).gamma(0.5, 1.0, p.size)
    r = ck.corp(p, y, sample_weight=w, n_boot=0)
    assert r.brier.score == pytest.approx(ck.brier(p, y, sample_weight=w), rel=1e-12)
    assert r.log_loss.score == pytest.approx(ck.nll(p, y, sample_weight=w), rel=1e-12)
    for d in (r.brier, r.log_loss):
        total = d.miscalibration - d.discrimination + d.uncertainty
        assert total == pytest.approx(d.score, rel=1e-12)
    assert np.all(np.diff(r.recalibrated) >= 0)
    # the recalibrated value is the weighted event rate of each PAV block
    for lo, hi, _, value in r.blocks:
        rows = (p >= lo) & (p <= hi)
        assert value == pytest.approx(np.sum(w[rows] * y[rows]) / np.sum(w[rows]), rel=1e-9)


def test_weighted_nll_leaves_zero_weight_rows_out() -> None:
    # the second row's true class has probability 0, but weight 0: not infinite
    assert ck.nll([0.8, 1.0], [1, 0], sample_weight=[1, 0]) == pytest.approx(-math.log(0.8))
    with pytest.warns(ck.CalibkitWarning, match="1 row gives"):
        assert ck.nll([0.8, 1.0], [1, 0], sample_weight=[1, 2]) == math.inf


def test_weighted_ks_sigma_and_statistic_by_hand() -> None:
    p, y, w = _binary()
    t = ck.ks_test(p, y, sample_weight=w)
    sigma = math.sqrt(float(np.sum(w**2 * p * (1 - p)))) / w.sum()
    error = ck.ks_calibration_error(np.repeat(p, w), np.repeat(y, w))  # the gap as repeated
    assert t.statistic == pytest.approx(error / sigma, rel=1e-9)
    c = ck.cumulative_calibration(p, y, sample_weight=w)
    k = ck.kuiper_test(p, y, sample_weight=w)
    assert k.statistic == pytest.approx(c.kuiper_error / sigma, rel=1e-9)


def test_weighted_ks_and_kuiper_hold_their_level() -> None:
    """Calibrated forecasts with weights that grow with the forecast (so a sigma from the
    total weight, or from Kish's size with one average variance, would be off): the 10% tests
    reject about 10% of 400 samples (binomial s.d. 1.5 points)."""
    rng = np.random.default_rng(11)
    reject_ks = reject_kuiper = 0
    runs = 400
    for _ in range(runs):
        p = rng.uniform(0.05, 0.95, 1000)
        y = (rng.random(p.size) < p).astype(int)
        w = np.exp(3.0 * p) * rng.gamma(2.0, 0.5, p.size)
        c = ck.cumulative_calibration(p, y, sample_weight=w)
        reject_ks += c.ks.p_value < 0.1
        reject_kuiper += c.kuiper.p_value < 0.1
    assert 0.06 <= reject_ks / runs <= 0.14
    assert 0.06 <= reject_kuiper / runs <= 0.14


# ----------------------------------------------------------------------------- bad weights

PUBLIC: dict[str, Callable[..., Any]] = {
    "brier": lambda w: ck.brier([0.2, 0.7, 0.4], [0, 1, 1], sample_weight=w),
    "nll": lambda w: ck.nll([0.2, 0.7, 0.4], [0, 1, 1], sample_weight=w),
    "accuracy": lambda w: ck.accuracy(
        [[0.2, 0.8], [0.7, 0.3], [0.4, 0.6]], [0, 1, 1], sample_weight=w
    ),
    "brier_decomposition": lambda w: ck.brier_decomposition(
        [0.2, 0.7, 0.4], [0, 1, 1], sample_weight=w
    ),
    "auc": lambda w: ck.auc([0.2, 0.7, 0.4], [0, 1, 1], sample_weight=w),
    "corp": lambda w: ck.corp([0.2, 0.7, 0.4], [0, 1, 1], n_boot=0, sample_weight=w),
    "smooth_ece": lambda w: ck.smooth_ece([0.2, 0.7, 0.4], [0, 1, 1], sample_weight=w),
    "cumulative_calibration": lambda w: ck.cumulative_calibration(
        [0.2, 0.7, 0.4], [0, 1, 1], sample_weight=w
    ),
    "ks_calibration_error": lambda w: ck.ks_calibration_error(
        [0.2, 0.7, 0.4], [0, 1, 1], sample_weight=w
    ),
    "ks_test": lambda w: ck.ks_test([0.2, 0.7, 0.4], [0, 1, 1], sample_weight=w),
    "kuiper_test": lambda w: ck.kuiper_test([0.2, 0.7, 0.4], [0, 1, 1], sample_weight=w),
    "calibration_slope": lambda w: ck.calibration_slope(
        [0.2, 0.7, 0.4], [0, 1, 1], sample_weight=w
    ),
}

BAD = {
    "negative": ([1.0, -2.0, 1.0], r"sample_weight must not be negative; 1 weight is, first at"),
    "nan": ([1.0, float("nan"), 1.0], r"sample_weight must be finite; 1 value is not"),
    "all zero": ([0.0, 0.0, 0.0], r"every sample_weight is zero"),
    "wrong length": ([1.0, 1.0], r"sample_weight has 2 entries but the forecasts have 3"),
}


@pytest.mark.parametrize("bad", sorted(BAD))
@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_bad_weights_are_refused(name: str, bad: str) -> None:
    w, match = BAD[bad]
    with pytest.raises(ck.InputError, match=rf"^{name}: {match}"):
        PUBLIC[name](w)


def test_auc_needs_both_classes_with_weight() -> None:
    with pytest.raises(ck.InputError, match="auc: every label of positive weight is positive"):
        ck.auc([0.2, 0.7, 0.4], [0, 1, 1], sample_weight=[0, 1, 2])


def _bands(r: Any) -> list[np.ndarray]:
    return [
        r.consistency.x,
        r.consistency.low,
        r.consistency.high,
        r.confidence.low,
        r.confidence.high,
    ]


def test_weighted_corp_bands_with_weights_zero_and_one_are_those_of_the_rows_kept() -> None:
    # sorted distinct forecasts: the unweighted resample draws row indices into the same order,
    # so with weights 0 and 1 the weighted bootstrap draws exactly the unweighted one's rows
    rng = np.random.default_rng(8)
    p = np.sort(rng.uniform(0.05, 0.95, 300))
    y = (rng.random(p.size) < p).astype(int)
    w = (rng.random(p.size) < 0.8).astype(float)
    keep = w > 0
    weighted = ck.corp(p, y, sample_weight=w, n_boot=50, seed=3)
    plain = ck.corp(p[keep], y[keep], n_boot=50, seed=3)
    for got, want in zip(_bands(weighted), _bands(plain), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


def test_weighted_corp_bands_do_not_depend_on_the_weights_scale() -> None:
    p, y, w = _binary()
    a = ck.corp(p, y, sample_weight=w, n_boot=30, seed=1)
    b = ck.corp(p, y, sample_weight=2.5 * w, n_boot=30, seed=1)
    for got, want in zip(_bands(a), _bands(b), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    # the weighted curve lies inside its own confidence band at most forecasts
    fitted = a.recalibrate(a.confidence.x)
    inside = (a.confidence.low <= fitted) & (fitted <= a.confidence.high)
    assert inside.mean() > 0.8


def test_weighted_pooled_bands_are_refused() -> None:
    from calibkit.measure.corp import corp_from_pooled, with_bands

    pooled = pool_ties(np.array([0.2, 0.7, 0.4]), np.array([0, 1, 1]), sample_weight=np.ones(3))
    with pytest.raises(ck.InputError, match="corp: the bands of weighted pooled forecasts"):
        corp_from_pooled(pooled, n_boot=10)
    r = ck.corp([0.2, 0.7, 0.4], [0, 1, 1], sample_weight=[1, 2, 1], n_boot=0)
    with pytest.raises(ck.InputError, match="with_bands: the bands of a weighted CORP result"):
        with_bands(r, n_boot=10)


def test_weighted_results_show_rows_and_total_weight() -> None:
    p, y = [0.2, 0.7, 0.4, 0.6, 0.3], [0, 1, 1, 0, 1]
    w = [1.0, 2.0, 0.0, 1.5, 1.0]  # four rows of positive weight, total 5.5
    results = [
        ck.corp(p, y, sample_weight=w, n_boot=0),
        ck.smooth_ece(p, y, sample_weight=w),
        ck.cumulative_calibration(p, y, sample_weight=w),
        ck.calibration_slope(p, y, sample_weight=w),
    ]
    for r in results:
        assert "N = 4 (total weight 5.5)" in str(r), str(r)
    for r in results[1:]:
        assert r.to_dict()["weight"] == 5.5 and r.to_dict()["n"] == 4
    assert "weight" not in ck.smooth_ece(p, y).to_dict()
    assert "weight" not in ck.cumulative_calibration(p, y).to_dict()
    assert "weight" not in ck.calibration_slope(p, y).to_dict()
