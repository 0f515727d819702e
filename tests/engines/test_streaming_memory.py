"""The streaming engine holds one chunk at a time: 50 million forecasts audited with the memory
of a few chunks, and the numbers are those of the process that generated them."""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator

import numpy as np
import pytest

import calibkit as ck

CHUNKS = 50
CHUNK_ROWS = 1_000_000
N_BINS = 15


def forecasts() -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """p ~ Uniform(0, 1) and y ~ Bernoulli(p ** 2): over-confident in a known way. Each chunk
    is made from its own seed and nothing is kept once it is yielded."""
    for i in range(CHUNKS):
        rng = np.random.default_rng([2024, i])
        p = rng.random(CHUNK_ROWS)
        y = (rng.random(CHUNK_ROWS) < p * p).astype(np.int8)
        yield p, y
        del p, y


def expected_ece(n_bins: int) -> float:
    """ECE of the generating process with uniform bins (a, b]: each bin holds 1/M of the mass,
    mean confidence (a + b) / 2 and mean outcome E[p^2] = (a^2 + ab + b^2) / 3."""
    e = np.linspace(0.0, 1.0, n_bins + 1)
    a, b = e[:-1], e[1:]
    gap = (a + b) / 2 - (a * a + a * b + b * b) / 3
    return float(np.mean(np.abs(gap)))


def test_expected_ece_by_hand() -> None:
    # one bin: mean confidence 1/2, mean outcome E[p^2] = 1/3
    assert expected_ece(1) == pytest.approx(1 / 6)
    # two bins: (1/4 - 1/12) and (3/4 - 7/12), each of mass 1/2
    assert expected_ece(2) == pytest.approx(0.5 * (1 / 6) + 0.5 * (1 / 6))
    # p >= p^2 everywhere, so every gap has the same sign: ECE = E[p - p^2] = 1/6 for any bins
    assert expected_ece(N_BINS) == pytest.approx(1 / 6)


def test_fifty_million_forecasts_in_bounded_memory() -> None:
    # one chunk first, outside the measurement: lazy imports and compiled kernels are loaded
    # once per process, whatever the size of the input
    warm = ck.audit(iter([next(forecasts())]), engine="stream", n_boot=10, n_sims=10)
    assert warm.n == CHUNK_ROWS
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        start, _ = tracemalloc.get_traced_memory()
        a = ck.audit(forecasts(), engine="stream", n_bins=N_BINS, n_boot=200, n_sims=200)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    growth_mb = (peak - start) / 2**20
    # one chunk is 8 MB of probabilities and 1 MB of labels; the whole input is 450 MB (and
    # 400 MB more for the labels as int64 and the outcomes, were they all held at once)
    assert growth_mb < 100, f"peak memory grew by {growth_mb:.0f} MB"

    assert a.n == CHUNKS * CHUNK_ROWS == 50_000_000
    assert a.kind == "binary"
    assert a.table.stats.count.sum() == a.n
    # each uniform bin holds a fifteenth of the forecasts (sd of a count: ~1800)
    assert np.all(np.abs(a.table.stats.count - a.n / N_BINS) < 20_000)
    # the numbers of the generating process, worked out by hand (sampling error < 1e-4):
    # ECE from the bins' gaps; Brier E[(p - y)^2] = 1/3 - 2/4 + 1/3 = 1/6; log loss
    # E[-p^2 ln p - (1 - p^2) ln(1 - p)] = 1/9 + 7/18 = 1/2; accuracy of "p >= 1/2 predicts 1"
    # = (1 - 1/8)/3 + 1/2 - 1/24 = 3/4; AUC = int 3x^2 * 1.5(x - x^3/3) dx = 7/8.
    assert a.ece == pytest.approx(expected_ece(N_BINS), abs=3e-4)
    assert a.brier == pytest.approx(1 / 6, abs=3e-4)
    assert a.nll == pytest.approx(0.5, abs=5e-4)
    assert a.accuracy == pytest.approx(0.75, abs=5e-4)
    assert a.auc == pytest.approx(7 / 8, abs=5e-4)
    assert a.mean_confidence == pytest.approx(0.5, abs=3e-4)
    assert a.accuracy_of_event == pytest.approx(1 / 3, abs=5e-4)
    # miscalibration far beyond noise at this N
    assert not a.within_noise
    assert a.noise_floor.p95 < 1e-3 < a.ece
