"""Calibration slope and intercept: against scikit-learn's unpenalised logistic regression, by
construction (logits scaled by a known factor), and the treatment of forecasts of 0 and 1."""

from __future__ import annotations

import math

import numpy as np
import pytest

import calibkit as ck
from calibkit.measure.slope import calibration_slope


def _forecasts(n: int, seed: int, *, a: float, b: float) -> tuple[np.ndarray, np.ndarray]:
    """Forecasts p = sigmoid(z) whose outcomes follow sigmoid(a + b z)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(-0.5, 1.5, n)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-(a + b * z)))).astype(int)
    return 1.0 / (1.0 + np.exp(-z)), y


@pytest.mark.parametrize(("a", "b"), [(0.0, 1.0), (0.3, 0.7), (-0.5, 1.8)])
def test_slope_and_intercept_equal_scikit_learns_maximum_likelihood(a: float, b: float) -> None:
    sklearn = pytest.importorskip("sklearn.linear_model")
    p, y = _forecasts(4000, 1, a=a, b=b)
    s = calibration_slope(p, y)
    x = (np.log(p) - np.log1p(-p))[:, None]
    fit = sklearn.LogisticRegression(C=np.inf, tol=1e-14, max_iter=100_000).fit(x, y)
    assert s.slope == pytest.approx(fit.coef_[0, 0], rel=1e-8)
    assert s.intercept == pytest.approx(fit.intercept_[0], abs=1e-8)
    # in the large: the intercept with the slope held at 1 (logit as an offset), by 1-D Newton
    # in the test: solve sum(y - sigmoid(a1 + x)) = 0
    a1 = 0.0
    for _ in range(100):
        q = 1.0 / (1.0 + np.exp(-(a1 + x[:, 0])))
        a1 += np.sum(y - q) / np.sum(q * (1 - q))
    assert s.in_the_large == pytest.approx(a1, abs=1e-10)


def test_standard_errors_are_the_inverse_information() -> None:
    p, y = _forecasts(3000, 2, a=0.2, b=0.9)
    s = calibration_slope(p, y)
    x = np.log(p) - np.log1p(-p)
    q = 1.0 / (1.0 + np.exp(-(s.intercept + s.slope * x)))
    w = q * (1 - q)
    info = np.array([[w.sum(), (w * x).sum()], [(w * x).sum(), (w * x * x).sum()]])
    cov = np.linalg.inv(info)
    # the information is that of the last point evaluated, within a step of 1e-8 of the fit
    assert s.intercept_se == pytest.approx(math.sqrt(cov[0, 0]), rel=1e-7)
    assert s.slope_se == pytest.approx(math.sqrt(cov[1, 1]), rel=1e-7)
    z = 1.959963984540054
    assert s.slope_ci == pytest.approx((s.slope - z * s.slope_se, s.slope + z * s.slope_se))
    assert s.slope_p == pytest.approx(math.erfc(abs(s.slope - 1) / s.slope_se / math.sqrt(2)))


def test_the_test_of_calibration_in_the_large() -> None:
    # outcomes follow sigmoid(0.5 + logit(p)): the event happens more often than forecast
    p, y = _forecasts(5000, 4, a=0.5, b=1.0)
    s = calibration_slope(p, y)
    x = np.log(p) - np.log1p(-p)
    q = 1.0 / (1.0 + np.exp(-(s.in_the_large + x)))
    se = 1.0 / math.sqrt(np.sum(q * (1 - q)))  # the intercept's information, slope held at 1
    assert s.in_the_large_se == pytest.approx(se, rel=1e-7)
    assert s.in_the_large_p == pytest.approx(
        math.erfc(abs(s.in_the_large) / se / math.sqrt(2)), rel=1e-6
    )
    assert s.in_the_large == pytest.approx(0.5, abs=0.1) and s.frequency == "too rarely"
    wider = s.at_level(0.99)
    assert wider.in_the_large_se == s.in_the_large_se and wider.in_the_large_p == s.in_the_large_p
    z = 2.5758293035489004
    assert wider.in_the_large_ci == pytest.approx(
        (s.in_the_large - z * se, s.in_the_large + z * se), rel=1e-6
    )
    calibrated = calibration_slope(*_forecasts(5000, 5, a=0.0, b=1.0))
    assert calibrated.in_the_large_p > 0.05 and calibrated.frequency is None


def test_logits_twice_too_large_give_slope_one_half_and_the_direction() -> None:
    rng = np.random.default_rng(0)
    z = rng.normal(0, 1.5, 50_000)
    y = (rng.random(z.size) < 1 / (1 + np.exp(-z))).astype(int)
    wide = calibration_slope(1 / (1 + np.exp(-2 * z)), y)
    narrow = calibration_slope(1 / (1 + np.exp(-z / 2)), y)
    assert wide.slope == pytest.approx(0.5, abs=0.02) and wide.spread == "too wide"
    assert narrow.slope == pytest.approx(2.0, abs=0.08) and narrow.spread == "too narrow"
    calibrated = calibration_slope(1 / (1 + np.exp(-z)), y)
    assert calibrated.slope_ci[0] < 1 < calibrated.slope_ci[1] and calibrated.spread is None


def test_forecasts_of_zero_and_one_that_agree_change_nothing() -> None:
    p, y = _forecasts(2000, 3, a=0.1, b=0.8)
    base = calibration_slope(p, y)
    more = calibration_slope(np.r_[p, 0.0, 1.0, 1.0], np.r_[y, 0, 1, 1])
    assert more.slope == pytest.approx(base.slope, rel=1e-12)
    assert (more.n, more.n_certain, more.n_failed, more.note) == (2003, 3, 0, "")


def test_a_failed_certainty_is_reported_beside_the_slope_of_the_others() -> None:
    p, y = _forecasts(2000, 3, a=0.1, b=0.8)
    base = calibration_slope(p, y)
    failed = calibration_slope(np.r_[p, 1.0, 0.0], np.r_[y, 0, 0])
    assert failed.defined and failed.slope == pytest.approx(base.slope, rel=1e-12)
    assert failed.n_failed == 1 and failed.n_certain == 2
    assert "1 forecast of exactly 0 or 1 failed" in failed.note


@pytest.mark.parametrize(
    ("p", "y", "why"),
    [
        ([0.1, 0.2, 0.3, 0.7, 0.8, 0.9], [0, 0, 0, 1, 1, 1], "separated"),
        ([0.5, 0.5, 0.5, 0.5], [0, 0, 1, 1], "separated by the forecasts (or every"),
        ([0.0, 1.0, 0.3], [0, 1, 1], "fewer than 3 forecasts strictly between 0 and 1"),
    ],
)
def test_undefined_fits_say_why(p, y, why) -> None:
    s = calibration_slope(p, y)
    assert not s.defined and why in s.note and math.isnan(s.slope)
    assert s.spread is None and s.frequency is None
    assert s.to_dict()["slope"] is None


def test_bad_input_is_refused() -> None:
    with pytest.raises(ck.InputError, match="confidence must lie in"):
        calibration_slope([0.2, 1.2], [0, 1])
    with pytest.raises(ck.InputError, match="outcome must be 0 or 1"):
        calibration_slope([0.2, 0.3], [0, 2])


# ----------------------------------------------------------------------------- numba kernels

FIT_FIELDS = ("slope", "slope_se", "intercept", "intercept_se", "in_the_large", "in_the_large_se")


@pytest.mark.parametrize("conf_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("out_dtype", [bool, np.int8, np.float64])
@pytest.mark.parametrize(("a", "b"), [(0.3, 0.7), (-0.5, 1.8), (0.0, 1.0)])
def test_numba_fit_equals_the_numpy_reference(monkeypatch, conf_dtype, out_dtype, a, b) -> None:
    """Above the block size, with certain forecasts (some failed) among the rows."""
    pytest.importorskip("numba")
    p, y = _forecasts(300_001, 4, a=a, b=b)
    p = p.astype(conf_dtype)
    p[:40:4], y[:40:4] = 1.0, 1  # certainties that agree
    p[1:40:4], y[1:40:4] = 0.0, 0
    p[2:40:4], y[2:40:4] = 1.0, 0  # and that fail
    fits = {}
    for mode in ("numpy", "numba"):
        monkeypatch.setenv("CALIBKIT_KERNEL", mode)
        fits[mode] = calibration_slope(p, y.astype(out_dtype))
    ref, got = fits["numpy"], fits["numba"]
    assert (got.n, got.n_certain, got.n_failed, got.note) == (300_001, 30, 10, ref.note)
    for field in FIT_FIELDS:
        assert getattr(got, field) == pytest.approx(getattr(ref, field), rel=1e-10), field


def test_numba_sums_and_histogram_equal_the_reference() -> None:
    pytest.importorskip("numba")
    from calibkit import _numba_slope
    from calibkit.measure import slope as S

    p, y = _forecasts(200_000, 5, a=0.2, b=0.8)
    p[:7] = [0.0, 1.0, 1.0, 0.0, 1e-300, 1 - 2**-53, 0.5]
    y[:4] = [0, 1, 0, 1]
    x, yy, n_certain, n_failed = S.split_certain(p, y)
    points = [(0.1, 0.9, S.WITH_LOGLIK), (0.25, 1.0, S.WITH_LOGLIK), (-3.0, 5.0, S.WITH_LOGLIK)]
    got = _numba_slope.terms(p, y, points)
    for (a, b, _), sums in zip(points, got, strict=True):
        np.testing.assert_allclose(sums, S.slope_terms(x, yy, a, b), rtol=1e-11)
    # without the flag the log-likelihood is left out (NaN), everything else the same
    bare = _numba_slope.terms(p, y, [(a, b) for a, b, _ in points])
    for sums, full in zip(bare, got, strict=True):
        assert np.isnan(sums[0]) and np.array_equal(sums[1:], full[1:])
    certain, failed, hist = _numba_slope.grid(p, y, S.GRID_STEPS, S.GRID_SPAN, S.GRID_CELLS)
    want = S.grid_counts(x, yy)
    assert (certain, failed) == (n_certain, n_failed) == (4, 2)
    assert hist.sum(axis=1).tolist() == want.sum(axis=1).tolist()
    # the kernel's logit is log(p / (1 - p)): a cell boundary may fall between it and numpy's
    assert np.abs(hist - want).sum() <= 4


def test_a_start_from_the_fine_histogram_takes_one_round_and_moves_the_information(
    monkeypatch,
) -> None:
    """The fit on the fine logit histogram lies within 1e-6 of the maximum, so one pass over
    the rows (both fits) finishes it; the information is carried along the last step by its
    derivatives, so the standard errors are those at the fit itself."""
    from calibkit.measure import slope as S

    p, y = _forecasts(200_000, 6, a=0.3, b=0.7)
    rounds = []
    fit_from_sums = S.slope_from_sums

    def counted(evaluate, **kw):
        def each(points):
            rounds.append(len(points))
            return evaluate(points)

        return fit_from_sums(each, **kw)

    monkeypatch.setattr(S, "slope_from_sums", counted)
    s = S.slope_of(p, y)
    assert rounds == [2]  # one round, the joint and the in-the-large fit together
    x = np.log(p) - np.log1p(-p)
    q = 1.0 / (1.0 + np.exp(-(s.intercept + s.slope * x)))
    w = q * (1 - q)
    cov = np.linalg.inv([[w.sum(), (w * x).sum()], [(w * x).sum(), (w * x * x).sum()]])
    assert s.intercept_se == pytest.approx(math.sqrt(cov[0, 0]), rel=1e-10)
    assert s.slope_se == pytest.approx(math.sqrt(cov[1, 1]), rel=1e-10)
    assert np.sum(y - q) == pytest.approx(0.0, abs=1e-6)  # the score equations hold
    assert np.sum((y - q) * x) == pytest.approx(0.0, abs=1e-6)


def test_a_far_start_leaving_out_the_log_likelihood_reaches_the_same_fit() -> None:
    """From slope 1 towards a slope of 3 the line search needs log-likelihoods: an engine that
    leaves them out where not asked (the numba pass) is asked, and lands where the numpy
    sums, which always hold them, land."""
    pytest.importorskip("numba")
    from calibkit import _numba_slope
    from calibkit.measure import slope as S

    p, y = _forecasts(250_000, 7, a=-1.0, b=3.0)
    x, yy, _, _ = S.split_certain(p, y)
    asked = []

    def left_out(points):
        asked.extend(len(point) == 3 for point in points)
        return _numba_slope.terms(p, y, points)

    def full(points):
        return [S.slope_terms(x, yy, a, b) for a, b, *_ in points]

    fits = [S.slope_from_sums(e, n=p.size, n_certain=0, n_failed=0) for e in (left_out, full)]
    assert any(asked) and not all(asked)
    for field in FIT_FIELDS:
        assert getattr(fits[0], field) == pytest.approx(getattr(fits[1], field), rel=1e-10)
    assert fits[1].slope == pytest.approx(3.0, rel=0.05)
