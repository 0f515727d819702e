"""The numba kernels over the distinct forecasts (PAV, CORP's score terms, the smooth ECE's
spreading) against their numpy references, and the audit's distinct measures the same on both
paths."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import calibkit as ck
from calibkit.measure import smooth as S
from calibkit.measure.distinct import distinct_measures
from calibkit.measure.pooled import PYTHON_PAV_MAX, Pooled, isotonic_fit, pav, pool_ties

C = importlib.import_module("calibkit.measure.corp")  # the module: ``measure.corp`` is the function

pytest.importorskip("numba")
from calibkit import _numba_distinct as D  # noqa: E402


def _pooled(n: int, seed: int, *, ties: bool = False, weighted: bool = False) -> Pooled:
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    if ties:
        p = np.round(p, 2)
    p[:4] = [0.0, 1.0, 0.5, 0.25]
    y = (rng.random(n) < p**1.2).astype(np.int8)
    y[:2] = [0, 1]  # the certain forecasts right: the log loss finite
    w = rng.random(n) * 3.0 if weighted else None
    return pool_ties(p, y, sample_weight=w)


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("fits", [1, 100])
def test_pav_is_scipys(ties, weighted, fits) -> None:
    """One pass with a stack of blocks (the numba kernel; ``pooled.pav``'s Python loop while
    the fits to come hold at most PYTHON_PAV_MAX values, scipy's above) gives scipy's PAVA fit
    (to rounding), non-decreasing."""
    from scipy.optimize import isotonic_regression

    pooled = _pooled(20_000, 1, ties=ties, weighted=weighted)
    assert (pooled.x.size * fits > PYTHON_PAV_MAX) == (fits > 1 and not ties)
    mass = pooled.mass
    want = isotonic_regression(pooled.hits / mass, weights=mass, increasing=True).x
    for fast in (D.pav(pooled.hits, mass), pav(pooled.hits, mass, fits=fits)):
        np.testing.assert_allclose(fast, want, rtol=1e-13, atol=1e-15)
        assert np.all(np.diff(fast) >= 0.0) and fast.min() >= 0.0 and fast.max() <= 1.0


def test_pav_small_cases() -> None:
    """By hand: 1, 0, 0, 0, 1, 1 pools the first four at 1/4; an increasing input stays; one
    value; a decreasing input pools into its weighted mean."""
    ones = np.ones(6)
    assert D.pav(np.array([1.0, 0, 0, 0, 1, 1]), ones).tolist() == [0.25] * 4 + [1.0, 1.0]
    assert D.pav(np.array([0.0, 1.0, 2.0]), np.array([1.0, 2.0, 2.0])).tolist() == [0, 0.5, 1]
    assert D.pav(np.array([0.3]), np.array([1.0])).tolist() == [0.3]
    assert D.pav(np.array([3.0, 1.0]), np.array([3.0, 2.0])).tolist() == [0.8, 0.8]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("fail", [False, True])
def test_score_terms_are_the_numpy_terms(weighted, fail) -> None:
    """The one pass's six mean scores equal the three-pass numpy sums (to rounding); a
    forecast of 0 with an event makes the forecasts' log loss infinite on both paths."""
    pooled = _pooled(30_000, 2, weighted=weighted)
    if fail:  # the forecast 0.0 (the lowest pooled value) gets an event
        hits = pooled.hits.copy()
        hits[0] = 0.5 * pooled.mass[0]
        pooled = Pooled(pooled.x, pooled.count, hits, pooled.weight, pooled.weight_sq)
    fitted = isotonic_fit(pooled)
    rate = float(pooled.hits.sum()) / pooled.total_mass
    base = np.full(pooled.x.size, rate)
    with np.errstate(divide="ignore"):
        logs = np.log(pooled.x), np.log1p(-pooled.x)
    brier, log, failed, total = D.score_terms(
        pooled.x, *logs, pooled.hits, pooled.mass, fitted, rate
    )
    assert total == pytest.approx(pooled.total_mass, rel=1e-14)
    for j, p in enumerate((pooled.x, fitted, base)):
        assert brier[j] / total == pytest.approx(C._brier_terms(pooled, p), rel=1e-13)
        want, want_failed = C._log_terms(pooled, p)
        assert failed[j] == want_failed
        if want_failed:
            assert j == 0 and fail
        else:
            assert -log[j] / total == pytest.approx(want, rel=1e-13)


@pytest.mark.parametrize("size", [1001, 2001, 20_001])
def test_spread_is_the_numpy_spread_bit_for_bit(size) -> None:
    pooled = _pooled(50_000, 3, ties=True, weighted=True)
    x, w, h = pooled.x, pooled.mass, pooled.hits
    fast = D.spread(x, w, h, size)
    want = S.spread(x, [w, w * x - h, h], size)
    for got, expected in zip(fast, want, strict=True):
        assert np.array_equal(got, expected)


@pytest.mark.parametrize("weighted", [False, True])
def test_distinct_measures_agree_on_both_paths(monkeypatch, weighted) -> None:
    """The audit's CORP, smooth ECE and KS numbers on the numba path are the numpy path's."""
    pooled = _pooled(40_000, 4, weighted=weighted)
    monkeypatch.setenv("CALIBKIT_KERNEL", "numpy")
    slow = distinct_measures(pooled)
    monkeypatch.setenv("CALIBKIT_KERNEL", "numba")
    fast = distinct_measures(pooled)
    np.testing.assert_allclose(fast.corp.recalibrated, slow.corp.recalibrated, rtol=1e-13)
    for name in ("brier", "log_loss"):
        a, b = getattr(fast.corp, name), getattr(slow.corp, name)
        for field in ("score", "miscalibration", "discrimination", "uncertainty"):
            assert getattr(a, field) == pytest.approx(getattr(b, field), rel=1e-12, abs=1e-15)
    assert fast.smooth.value == slow.smooth.value  # the same grids, bit for bit
    assert fast.smooth.bandwidth == slow.smooth.bandwidth
    assert fast.cumulative.ks_error == slow.cumulative.ks_error


def test_ck_corp_infinite_log_loss_on_the_numba_path(monkeypatch) -> None:
    """A forecast of exactly 1 whose outcome is 0: the log loss and its MCB are infinite and
    the note counts the row, as on the numpy path."""
    monkeypatch.setenv("CALIBKIT_KERNEL", "numba")
    p = np.r_[np.linspace(0.01, 0.99, 999), 1.0]
    y = np.r_[(np.arange(999) % 3 == 0).astype(int), 0]
    r = ck.corp(p, y, n_boot=0)
    assert r.log_loss.score == np.inf and r.log_loss.miscalibration == np.inf
    assert r.log_loss.note.startswith("1 forecast of exactly 0 or 1 is contradicted")
    monkeypatch.setenv("CALIBKIT_KERNEL", "numpy")
    assert ck.corp(p, y, n_boot=0).brier.score == pytest.approx(r.brier.score, rel=1e-14)


@pytest.mark.parametrize("ties", [False, True])
def test_pooling_off_the_ranking_is_pool_ties(monkeypatch, ties) -> None:
    """The merge of the ranking's sorted classes gives pool_ties' values, counts and events
    exactly (ties, 0 and 1, -0.0 pooled with 0.0); the numpy path and weights give None."""
    from calibkit.measure.ranking import Ranking

    rng = np.random.default_rng(5)
    p = rng.random(10_000)
    if ties:
        p = np.round(p, 3)
    p[:5] = [0.0, -0.0, 1.0, 1.0, 0.5]
    y = (rng.random(p.size) < p).astype(np.int8)
    monkeypatch.setenv("CALIBKIT_KERNEL", "numba")
    got = Ranking(p, y).pooled()
    want = pool_ties(p, y)
    assert got is not None
    assert np.array_equal(got.x, want.x) and np.array_equal(got.count, want.count)
    assert np.array_equal(got.hits, want.hits) and got.count.dtype == np.int64
    for one_class in (np.zeros(p.size, np.int8), np.ones(p.size, np.int8)):
        got = Ranking(p, one_class).pooled()
        want = pool_ties(p, one_class)
        assert got is not None and np.array_equal(got.x, want.x)
        assert np.array_equal(got.count, want.count) and np.array_equal(got.hits, want.hits)
    assert Ranking(p, y, sample_weight=np.ones(p.size)).pooled() is None
    monkeypatch.setenv("CALIBKIT_KERNEL", "numpy")
    assert Ranking(p, y).pooled() is None


@pytest.mark.parametrize("weighted", [False, True])
def test_cumulative_gap_is_numpys(monkeypatch, weighted) -> None:
    """The one-pass gap is numpy's cumsum bit for bit; its tests agree to rounding."""
    from calibkit.measure.cumulative import cumulative_from_pooled

    pooled = _pooled(30_000, 6, ties=True, weighted=weighted)
    monkeypatch.setenv("CALIBKIT_KERNEL", "numpy")
    slow = cumulative_from_pooled(pooled)
    monkeypatch.setenv("CALIBKIT_KERNEL", "numba")
    fast = cumulative_from_pooled(pooled)
    assert np.array_equal(fast.gap, slow.gap)
    assert (fast.ks_error, fast.ks_at, fast.kuiper_error) == (
        slow.ks_error,
        slow.ks_at,
        slow.kuiper_error,
    )
    assert fast.sigma == pytest.approx(slow.sigma, rel=1e-14)
    assert fast.ks.p_value == pytest.approx(slow.ks.p_value, rel=1e-10, abs=1e-300)


def test_corp_bands_agree_on_both_paths(monkeypatch) -> None:
    """The bands' resamples, fitted by the numba PAV, give the numpy path's bands (the same
    draws, each fit equal to rounding)."""
    rng = np.random.default_rng(7)
    p = rng.random(3_000)
    y = (rng.random(p.size) < p**1.3).astype(int)
    monkeypatch.setenv("CALIBKIT_KERNEL", "numpy")
    slow = ck.corp(p, y, n_boot=20, seed=3)
    monkeypatch.setenv("CALIBKIT_KERNEL", "numba")
    fast = ck.corp(p, y, n_boot=20, seed=3)
    assert slow.consistency is not None and fast.consistency is not None
    assert slow.confidence is not None and fast.confidence is not None
    for a, b in ((fast.consistency, slow.consistency), (fast.confidence, slow.confidence)):
        np.testing.assert_allclose(a.low, b.low, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(a.high, b.high, rtol=1e-12, atol=1e-15)


def test_pav_is_scikit_learns_isotonic_regression() -> None:
    """On rows with ties, the kernel's fit at the pooled values is scikit-learn's
    ``IsotonicRegression`` (which averages tied targets first) to rounding."""
    isotonic = pytest.importorskip("sklearn.isotonic")
    rng = np.random.default_rng(8)
    x = np.round(rng.random(50_000), 3)
    y = (rng.random(x.size) < x**1.4).astype(float)
    pooled = pool_ties(x, y)
    theirs = isotonic.IsotonicRegression(y_min=0.0, y_max=1.0).fit(x, y).predict(pooled.x)
    np.testing.assert_allclose(D.pav(pooled.hits, pooled.mass), theirs, rtol=0, atol=1e-12)
