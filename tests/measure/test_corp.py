"""CORP reliability: the published check of R's reliabilitydiag, agreement with scikit-learn's
IsotonicRegression, the decomposition identities, the log loss at recalibrated values of 0 and
1, and the bands against exact binomial quantiles."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import calibkit as ck
from calibkit.measure.corp import corp_of
from calibkit.measure.corp_bands import MAX_BAND_POINTS

# reliabilitydiag's published check (also in model-diagnostics' tests)
CONF = [0.4, 0.3, 0.2, 0.1, 0.5, 0.9]
OUTCOME = [0, 0, 0, 1, 1, 1]


def test_published_check_of_reliabilitydiag() -> None:
    r = ck.corp(CONF, OUTCOME, n_boot=0)
    assert r.recalibrate(CONF).tolist() == [0.25, 0.25, 0.25, 0.25, 1.0, 1.0]
    assert r.brier.miscalibration == pytest.approx(0.1016667, abs=5e-8)
    assert r.brier.discrimination == pytest.approx(0.125, abs=1e-12)
    assert r.brier.uncertainty == pytest.approx(0.25, abs=1e-12)
    assert r.brier.score == pytest.approx(0.2266667, abs=5e-8)
    assert r.blocks == [(0.1, 0.4, 4, 0.25), (0.5, 0.9, 2, 1.0)]


def test_log_loss_decomposition_by_hand() -> None:
    r = ck.corp(CONF, OUTCOME, n_boot=0)
    # the forecasts' loss; the recalibration's (0.25 at four rows, one event; 1 at two events:
    # 0 log 0 = 0 there); the climatology's, log 2
    score = -np.mean(np.log([0.6, 0.7, 0.8, 0.1, 0.5, 0.9]))
    recalibrated = -(math.log(0.25) + 3 * math.log(0.75)) / 6
    d = r.log_loss
    assert d.score == pytest.approx(score, rel=1e-14)
    assert d.recalibrated == pytest.approx(recalibrated, rel=1e-14)
    assert d.uncertainty == pytest.approx(math.log(2), rel=1e-14)
    assert d.miscalibration == pytest.approx(score - recalibrated, rel=1e-13)
    assert d.discrimination == pytest.approx(math.log(2) - recalibrated, rel=1e-13)
    assert d.note == ""


@pytest.mark.parametrize("decimals", [None, 2])
def test_fit_equals_scikit_learns_isotonic_regression(decimals: int | None) -> None:
    isotonic = pytest.importorskip("sklearn.isotonic")
    rng = np.random.default_rng(3)
    x = rng.random(3000)
    if decimals is not None:  # many ties, pooled by both
        x = np.round(x, decimals)
    y = (rng.random(x.size) < x**1.5).astype(int)
    r = ck.corp(x, y, n_boot=0)
    theirs = isotonic.IsotonicRegression(y_min=0.0, y_max=1.0).fit(x, y).predict(x)
    np.testing.assert_allclose(r.recalibrate(x), theirs, rtol=0, atol=1e-12)
    # the Brier terms from scikit-learn's fit
    assert r.brier.recalibrated == pytest.approx(np.mean((theirs - y) ** 2), abs=1e-14)
    assert r.brier.score == pytest.approx(np.mean((x - y) ** 2), abs=1e-14)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_decompositions_add_up(seed: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.beta(2, 5, 500)
    y = (rng.random(500) < np.sqrt(x)).astype(int)
    r = ck.corp(x, y, n_boot=0)
    for d in (r.brier, r.log_loss):
        assert d.miscalibration - d.discrimination + d.uncertainty == pytest.approx(
            d.score, abs=1e-14
        )
        assert d.miscalibration >= 0 and d.discrimination >= 0
    base = y.mean()
    assert r.brier.uncertainty == pytest.approx(base * (1 - base), rel=1e-13)


def test_recalibrated_zeros_and_ones_score_zero_in_the_log_loss() -> None:
    # forecasts 0 and 1 that are right, two coin flips at 0.5: PAV keeps 0, 1/2 and 1
    r = ck.corp([0.0, 0.0, 0.5, 0.5, 1.0, 1.0], [0, 0, 0, 1, 1, 1], n_boot=0)
    assert r.recalibrated.tolist() == [0.0, 0.5, 1.0]
    d = r.log_loss
    assert d.score == pytest.approx(math.log(2) / 3, rel=1e-14)
    assert d.recalibrated == pytest.approx(math.log(2) / 3, rel=1e-14)
    assert d.miscalibration == 0.0 and math.isfinite(d.uncertainty)


def test_a_contradicted_certainty_makes_the_log_loss_infinite_and_says_so() -> None:
    r = ck.corp([1.0, 0.3, 0.6, 0.2], [0, 0, 1, 0], n_boot=0)
    d = r.log_loss
    assert d.score == math.inf and d.miscalibration == math.inf
    assert math.isfinite(d.discrimination) and math.isfinite(d.recalibrated)
    assert "1 forecast of exactly 0 or 1 is contradicted" in d.note
    assert d.to_dict()["score"] is None and d.to_dict()["miscalibration"] is None
    assert math.isfinite(r.brier.score)


def test_removable_share_is_mcb_over_the_score() -> None:
    r = ck.corp(CONF, OUTCOME, n_boot=0)
    assert r.brier.removable == pytest.approx(0.1016667 / 0.2266667, rel=1e-6)
    assert "44.9% removable" in str(r.brier)


def _binomial_quantiles(n: int, p: float, level: float) -> tuple[float, float]:
    stats = pytest.importorskip("scipy.stats")
    low, high = stats.binom.ppf([0.5 - level / 2, 0.5 + level / 2], n, p)
    return low / n, high / n


def test_bands_of_one_forecast_value_are_binomial_quantiles() -> None:
    # every forecast 0.3: each resample's CORP value is its event rate, Binomial(n, p) / n with
    # p = 0.3 for consistency and p = the observed rate (0.25) for confidence
    n = 400
    y = np.r_[np.ones(100, dtype=int), np.zeros(300, dtype=int)]
    r = ck.corp(np.full(n, 0.3), y, n_boot=4000, level=0.9, seed=1)
    for band, p in ((r.consistency, 0.3), (r.confidence, 0.25)):
        assert band is not None and band.x.tolist() == [0.3]
        low, high = _binomial_quantiles(n, p, 0.9)
        assert abs(band.low[0] - low) <= 1.0 / n
        assert abs(band.high[0] - high) <= 1.0 / n


def test_consistency_band_holds_a_calibrated_curve_and_not_a_miscalibrated_one() -> None:
    rng = np.random.default_rng(7)
    x = rng.random(3000)  # 3000 distinct forecasts: the row-resampling path
    calibrated = ck.corp(x, (rng.random(x.size) < x).astype(int), n_boot=200, seed=2)
    share = calibrated.outside_consistency() / calibrated.consistency.x.size
    assert share < 0.25  # pointwise 90% bands: about a tenth outside
    wrong = ck.corp(x, (rng.random(x.size) < x**3).astype(int), n_boot=200, seed=2)
    assert wrong.outside_consistency() / wrong.consistency.x.size > 0.5


def test_confidence_band_bridges_curve_values_of_zero_and_one_inside_the_range() -> None:
    x = np.array([0.1, 0.2, 0.3, 0.4, 0.5])
    r = ck.corp(np.repeat(x, 20), np.repeat([0, 0, 1, 0, 1], 20), n_boot=200, seed=0)
    band = r.confidence
    assert r.recalibrated.tolist() == [0.0, 0.0, 0.5, 0.5, 1.0]
    # at 0.2 (value 0, an inner point) the band is the straight line between 0.1 and 0.3
    for ends in (band.low, band.high):
        assert ends[1] == pytest.approx((ends[0] + ends[2]) / 2, abs=1e-12)


def test_same_seed_same_bands_and_a_cap_on_band_points() -> None:
    rng = np.random.default_rng(0)
    x = rng.random(5000)
    y = (rng.random(x.size) < x).astype(int)
    a, b = ck.corp(x, y, n_boot=20, seed=5), ck.corp(x, y, n_boot=20, seed=5)
    assert np.array_equal(a.consistency.low, b.consistency.low)
    assert np.array_equal(a.confidence.high, b.confidence.high)
    c = ck.corp(x, y, n_boot=20, seed=6)
    assert not np.array_equal(a.consistency.low, c.consistency.low)
    assert a.consistency.x.size <= MAX_BAND_POINTS + 2
    assert a.consistency.x[0] == x.min() and a.consistency.x[-1] == x.max()


def test_no_bands_with_n_boot_zero_and_a_json_ready_dict() -> None:
    r = ck.corp(CONF, OUTCOME, n_boot=0)
    assert r.consistency is None and r.confidence is None and r.outside_consistency() == 0
    text = json.dumps(ck.corp([1.0, 0.3, 0.6], [0, 0, 1], n_boot=10).to_dict(), allow_nan=False)
    assert '"consistency": {"kind": "consistency"' in text
    assert "MCB 0.1017" in str(r) and "2 PAV blocks" in str(r)


def test_the_core_on_checked_arrays_is_the_public_function() -> None:
    conf, y = np.array(CONF), np.array(OUTCOME)
    a = corp_of(conf, y, n_boot=30, level=0.8, rng=np.random.default_rng(4), seed=4)
    b = ck.corp(conf, y, n_boot=30, level=0.8, seed=4)
    assert np.array_equal(a.consistency.high, b.consistency.high)
    assert a.brier == b.brier


def test_bad_input_is_refused() -> None:
    with pytest.raises(ck.InputError, match="corp: confidence must lie in"):
        ck.corp([0.2, 1.2], [0, 1])
    with pytest.raises(ck.InputError, match="corp: outcome must be 0 or 1"):
        ck.corp([0.2, 0.3], [0, 2])
    with pytest.raises(ck.InputError, match="corp: n_boot must be an integer >= 0"):
        ck.corp([0.2, 0.3], [0, 1], n_boot=-1)
    with pytest.raises(ck.InputError, match="corp: level must be a probability"):
        ck.corp([0.2, 0.3], [0, 1], level=90)
    with pytest.raises(ck.InputError, match="CorpResult.recalibrate: confidence must lie"):
        ck.corp(CONF, OUTCOME, n_boot=0).recalibrate([1.5])
