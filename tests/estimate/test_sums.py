"""CBPE's resamples on a large target from prefix sums: the moments exactly as the per-row
values give them, and the interval as the row-by-row draws give it."""

from __future__ import annotations

import numpy as np
import pytest

import calibkit as ck
from calibkit.estimate import sums as sums_module
from calibkit.estimate.sums import SortedTarget


@pytest.mark.parametrize("start", [0, 1, 500, 999, 1000])
def test_moments_equal_the_per_row_sums(start):
    rng = np.random.default_rng(0)
    x = np.sort(np.round(rng.uniform(0, 1, 1000), 2))  # ties, and knots on data values
    kx = np.unique(np.concatenate([[0.1, 0.5, 0.9], x[::97]]))
    ky = np.sort(rng.uniform(0, 1, kx.shape[0]))
    q = np.interp(x, kx, ky)[start:]
    total, squares = SortedTarget.of(x).moments(kx, ky, start=start)
    assert total == pytest.approx(q.sum(), rel=1e-11, abs=1e-11)
    assert squares == pytest.approx((q * q).sum(), rel=1e-11, abs=1e-11)


def test_one_knot_is_a_constant_map():
    x = np.array([0.2, 0.5, 0.7])
    assert SortedTarget.of(x).moments([0.4], [0.25], start=1) == pytest.approx((0.5, 0.125))


def test_the_summed_interval_agrees_with_the_row_by_row_one(monkeypatch):
    rng = np.random.default_rng(1)
    ref = rng.uniform(0.5, 1.0, 4000)
    ref_right = (rng.random(4000) < ref**1.5).astype(int)
    target = rng.uniform(0.5, 1.0, 60_000)
    estimator = ck.PerformanceEstimator().fit(ref, ref_right)
    summed = estimator.estimate(target, threshold=0.8, l_wrong=1, l_defer=0.3, n_boot=300)
    assert "drawn normal" in summed.accuracy.method
    monkeypatch.setattr(sums_module, "MIN_ROWS", 10**9)  # every resample row by row
    rows = estimator.estimate(target, threshold=0.8, l_wrong=1, l_defer=0.3, n_boot=300)
    assert "drawn normal" not in rows.accuracy.method
    for name in ("accuracy", "selective_risk", "cost", "coverage"):
        a, b = getattr(summed, name), getattr(rows, name)
        assert a.estimate == b.estimate
        width = b.high - b.low
        assert abs(a.low - b.low) < 0.15 * width + 1e-12
        assert abs(a.high - b.high) < 0.15 * width + 1e-12
