"""The calibration slope's logit moment histogram: its sums equal those over the rows, the
numba kernel makes the numpy histogram, and a fit made on it is the fit on the rows."""

from __future__ import annotations

import math

import numpy as np
import pytest

import calibkit as ck
from calibkit.measure import slope as S
from calibkit.measure import slope_grid as G
from calibkit.measure.slope_fit import slope_terms

FIT_FIELDS = ("slope", "slope_se", "intercept", "intercept_se", "in_the_large", "in_the_large_se")


def _forecasts(n: int, seed: int, *, a: float, b: float, spread: float = 1.5):
    """Forecasts p = sigmoid(z) whose outcomes follow sigmoid(a + b z)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(-0.5, spread, n)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-(a + b * z)))).astype(int)
    return 1.0 / (1.0 + np.exp(-z)), y


def test_sigmoid_derivatives_are_the_closed_forms() -> None:
    """sigma' = s(1 - s), sigma'' = s(1 - s)(1 - 2s), sigma''' = s(1 - s)(1 - 6s(1 - s)),
    sigma'''' = s(1 - s)(1 - 2s)(1 - 12s(1 - s)); in the far tails every derivative is
    +-exp(-|eta|) to first order (no cancellation there)."""
    eta = np.linspace(-8, 8, 33)
    s = 1.0 / (1.0 + np.exp(-eta))
    w = s * (1 - s)
    closed = [s, w, w * (1 - 2 * s), w * (1 - 6 * w), w * (1 - 2 * s) * (1 - 12 * w)]
    got = G.sigmoid_derivatives(eta)
    for k, want in enumerate(closed):
        np.testing.assert_allclose(got[k], want, rtol=1e-9, atol=1e-15, err_msg=str(k))
    tails = G.sigmoid_derivatives(np.array([-40.0, 40.0]))
    for k in range(1, tails.shape[0]):
        assert tails[k, 0] == pytest.approx(math.exp(-40.0), rel=1e-12)
        assert tails[k, 1] == pytest.approx((-1) ** (k + 1) * math.exp(-40.0), rel=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize(
    ("a", "b"), [(0.3, 0.7), (0.0, 1.0), (-2.0, 4.0), (1.0, -3.0), (0.1, 0.01)]
)
def test_the_cells_give_the_sums_over_the_rows(weighted, a, b) -> None:
    """Every sum of slope_terms (log-likelihood, gradient, information) from the moment cells
    equals the sum over the rows to 1e-11, up to |slope| 4 (the information's derivatives to
    1e-10)."""
    p, y = _forecasts(100_000, 1, a=0.3, b=0.7, spread=2.5)
    x = np.log(p) - np.log1p(-p)
    w = np.random.default_rng(2).random(p.size) * 3 if weighted else None
    moments, outside = G.grid_moments(x, y, w)
    assert outside == 0
    got = G.moment_evaluate(moments)([(a, b)])[0]
    want = slope_terms(x, y.astype(float), a, b, w)
    np.testing.assert_allclose(got[[0, 3, 4, 5]], want[[0, 3, 4, 5]], rtol=1e-11)
    # the information's derivatives, one order less (they move it along a step below 1e-6)
    np.testing.assert_allclose(got[6:], want[6:], rtol=1e-10)
    # the gradient is a difference of sums: its error is measured against the sums' size
    size = np.sum((np.ones(p.size) if w is None else w) * (1.0 + np.abs(x)))
    np.testing.assert_allclose(got[1:3], want[1:3], rtol=0, atol=1e-13 * size)


def test_logits_beyond_the_cells_are_counted_and_left_out() -> None:
    x = np.array([-40.0, -3.0, 0.0, 0.001, 36.9, 38.0])
    y = np.array([0, 1, 0, 1, 1, 1])
    moments, outside = G.grid_moments(x, y)
    assert outside == 2
    assert moments[:, :, 0].sum() == 4 and moments[1, :, 0].sum() == 3
    # each row's distance from its centre: x = 0.001 lies in the cell of 0 (1/256 wide)
    cell = int(round(G.GRID_SPAN * G.MOMENT_STEPS))
    assert moments[1, cell, 1] == pytest.approx(0.001, rel=1e-12)
    assert moments[1, cell, 2] == pytest.approx(1e-6, rel=1e-9)


@pytest.mark.parametrize("weighted", [False, True])
def test_the_kernel_makes_the_numpy_histogram(weighted) -> None:
    pytest.importorskip("numba")
    from calibkit import _numba_slope

    p, y = _forecasts(300_001, 3, a=0.2, b=0.8, spread=3.0)
    p[:9] = [0.0, 1.0, 1.0, 0.0, 1e-30, 1 - 2**-53, 0.5, 0.25, 1e-20]
    y[:4] = [0, 1, 0, 1]
    w = np.random.default_rng(4).random(p.size) if weighted else None
    if w is not None:
        w[10:20] = 0.0  # left out: neither fitted nor counted
        w[3] = 0.0  # a failed certainty of weight 0 is not counted
    certain, failed, outside, hist = _numba_slope.moments(
        p, y.astype(np.int8), w, G.MOMENT_STEPS, G.GRID_SPAN, G.MOMENT_CELLS, G.MOMENTS
    )
    keep = np.ones(p.size, bool) if w is None else w > 0
    inside = keep & (p > 0) & (p < 1)
    x = np.log(p[inside] / (1 - p[inside]))  # the kernel's logit, to one ulp
    want, want_outside = G.grid_moments(x, y[inside], None if w is None else w[inside])
    assert (certain, failed, outside) == (4 - (w is not None), 2 - (w is not None), 2)
    assert outside == want_outside
    # each sum against the largest it can be (its weight times (1/512)^j): odd powers cancel
    j = np.arange(G.MOMENTS)
    largest = want[..., :1] * (0.5 / G.MOMENT_STEPS) ** j
    # and what one ulp of a logit (at most that of the span) moves d^j: j d^(j - 1) ulps
    ulp = (
        want[..., :1] * j * (0.5 / G.MOMENT_STEPS) ** np.maximum(j - 1, 0) * np.spacing(G.GRID_SPAN)
    )
    np.testing.assert_array_less(np.abs(hist - want), 1e-12 * largest + ulp + 1e-300)


@pytest.mark.parametrize(("a", "b"), [(0.3, 0.7), (-0.5, 1.8), (0.0, 1.0), (0.4, -0.6)])
def test_the_one_pass_fit_is_the_fit_on_the_rows(monkeypatch, a, b) -> None:
    """The numba path (one pass: the moment histogram) against the numpy reference (Newton on
    the rows); no pass over the rows at a point is made."""
    pytest.importorskip("numba")
    from calibkit import _numba_slope

    p, y = _forecasts(300_001, 5, a=a, b=b)
    p[:3], y[:3] = [1.0, 0.0, 1.0], [1, 0, 0]
    fits = {}
    for mode in ("numpy", "numba"):
        monkeypatch.setenv("CALIBKIT_KERNEL", mode)
        if mode == "numba":
            monkeypatch.setattr(_numba_slope, "terms", None)  # any row pass would fail
        fits[mode] = ck.calibration_slope(p, y)
    ref, got = fits["numpy"], fits["numba"]
    assert (got.n, got.n_certain, got.n_failed) == (ref.n, ref.n_certain, ref.n_failed)
    for field in FIT_FIELDS:
        assert getattr(got, field) == pytest.approx(getattr(ref, field), rel=1e-10), field
    # the score equations hold on the rows at the fit
    x = np.log(p[3:]) - np.log1p(-p[3:])
    q = 1.0 / (1.0 + np.exp(-(got.intercept + got.slope * x)))
    assert abs(np.sum(y[3:] - q)) < 1e-8 and abs(np.sum((y[3:] - q) * x)) < 1e-8


def test_the_weighted_one_pass_fit_is_the_weighted_fit_on_the_rows(monkeypatch) -> None:
    pytest.importorskip("numba")
    p, y = _forecasts(250_000, 6, a=0.2, b=0.9)
    w = np.random.default_rng(7).integers(0, 4, p.size).astype(float)
    fits = {}
    for mode in ("numpy", "numba"):
        monkeypatch.setenv("CALIBKIT_KERNEL", mode)
        fits[mode] = ck.calibration_slope(p, y, sample_weight=w)
    ref, got = fits["numpy"], fits["numba"]
    assert (got.n, got.weight) == (ref.n, ref.weight) == (np.count_nonzero(w), w.sum())
    for field in FIT_FIELDS:
        assert getattr(got, field) == pytest.approx(getattr(ref, field), rel=1e-10), field


@pytest.mark.parametrize(
    ("case", "edit"),
    [
        ("a logit beyond the cells", lambda p, y: (np.r_[p, 1e-20], np.r_[y, 0])),
        ("a slope steeper than MOMENT_SLOPE", None),
    ],
)
def test_where_the_cells_do_not_hold_the_fit_is_finished_on_the_rows(monkeypatch, case, edit):
    pytest.importorskip("numba")
    from calibkit import _numba_slope

    if edit is None:  # forecasts 6 times too narrow: slope about 6
        p, y = _forecasts(250_000, 8, a=0.0, b=6.0, spread=0.3)
    else:
        p, y = edit(*_forecasts(250_000, 8, a=0.1, b=0.9))
    passes = []
    terms = _numba_slope.terms

    def counted(*args):
        passes.append(1)
        return terms(*args)

    fits = {}
    for mode in ("numpy", "numba"):
        monkeypatch.setenv("CALIBKIT_KERNEL", mode)
        monkeypatch.setattr(_numba_slope, "terms", counted)
        fits[mode] = ck.calibration_slope(p, y)
    assert passes, case
    for field in FIT_FIELDS:
        assert getattr(fits["numba"], field) == pytest.approx(
            getattr(fits["numpy"], field), rel=1e-10
        ), field
    if edit is None:
        assert abs(fits["numba"].slope) > G.MOMENT_SLOPE


def test_the_audit_slope_reads_the_rows_once(monkeypatch) -> None:
    """ck.audit of a large input makes the slope from one kernel pass."""
    pytest.importorskip("numba")
    from calibkit import _numba_slope

    monkeypatch.setenv("CALIBKIT_KERNEL", "numba")
    calls = []
    moments = _numba_slope.moments

    def counted(*args):
        calls.append(1)
        return moments(*args)

    monkeypatch.setattr(_numba_slope, "moments", counted)
    monkeypatch.setattr(_numba_slope, "terms", None)
    monkeypatch.setattr(_numba_slope, "grid", None)
    p, y = _forecasts(300_000, 9, a=0.1, b=0.8)
    a = ck.audit(p, y)
    assert calls == [1]
    monkeypatch.setenv("CALIBKIT_KERNEL", "numpy")
    assert a.calibration_slope.slope == pytest.approx(S.slope_of(p, y).slope, rel=1e-10)


def test_the_kernel_sums_at_most_its_width_of_powers() -> None:
    """The kernel's histogram row is one cache line of WIDTH powers: more are refused, not
    silently cut."""
    pytest.importorskip("numba")
    from calibkit import _numba_slope

    p, y = np.array([0.3, 0.6]), np.array([0, 1], dtype=np.int8)
    args = (G.MOMENT_STEPS, G.GRID_SPAN, G.MOMENT_CELLS)
    with pytest.raises(ValueError, match="1 to 8 powers, not 9"):
        _numba_slope.moments(p, y, None, *args, _numba_slope.WIDTH + 1)
    *_, two = _numba_slope.moments(p, y, None, *args, 2)
    assert two.shape == (2, G.MOMENT_CELLS, 2) and two[:, :, 0].sum() == 2
