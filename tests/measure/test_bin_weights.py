"""Weighted BinStats: integer weights give the sums of the data with rows repeated."""

from __future__ import annotations

import numpy as np
import pytest

import calibkit as ck
from calibkit._kernels import SUM_FIELDS


def _data(n=500, seed=3):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0, 1, n)
    y = (rng.random(n) < p).astype(int)
    w = rng.integers(0, 4, n)
    return p, y, w


def test_integer_weights_equal_repeated_rows():
    p, y, w = _data()
    edges = ck.bin_edges(n_bins=10)
    weighted = ck.BinStats.from_forecasts(p, y, edges=edges, sample_weight=w)
    repeated = ck.BinStats.from_forecasts(np.repeat(p, w), np.repeat(y, w), edges=edges)
    np.testing.assert_allclose(weighted.mass, repeated.count)
    for f in SUM_FIELDS:
        np.testing.assert_allclose(getattr(weighted, f), getattr(repeated, f), rtol=1e-12)
    np.testing.assert_allclose(weighted.conf, repeated.conf, rtol=1e-12)
    np.testing.assert_allclose(weighted.acc, repeated.acc, rtol=1e-12)
    assert weighted.n == p.size  # raw rows, zero weights included


def test_weighted_stats_add_and_round_trip():
    p, y, w = _data()
    edges = ck.bin_edges(n_bins=5)
    whole = ck.BinStats.from_forecasts(p, y, edges=edges, sample_weight=w)
    halves = ck.BinStats.from_chunks(
        [(p[:200], y[:200], w[:200]), (p[200:], y[200:], w[200:])], edges=edges
    )
    assert whole.allclose(halves)
    assert ck.BinStats.from_dict(whole.to_dict()) == whole
    # Kish: bins of equal weights have their count as effective size
    ones = ck.BinStats.from_forecasts(p, y, edges=edges, sample_weight=np.full(p.size, 2.0))
    np.testing.assert_allclose(ones.effective_count, ones.count)


def test_weighted_stats_refuse_bad_weights():
    with pytest.raises(ck.InputError, match="sample_weight must not be negative"):
        ck.BinStats.from_forecasts([0.2, 0.4], [0, 1], edges=[0, 1], sample_weight=[1, -2])
