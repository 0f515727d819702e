"""Smooth ECE: against relplot's smECE (its own conventions), a constant residual worked by
hand (value and searched bandwidth), and the documented difference on even grids."""

from __future__ import annotations

import json

import numpy as np
import pytest

import calibkit as ck
from calibkit.measure.smooth import grid_size


def _data(seed: int, n: int, power: float) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    f = rng.random(n)
    return f, (rng.random(n) < f**power).astype(int)


@pytest.mark.parametrize(
    ("seed", "n", "power"),
    [(0, 1000, 1.0), (1, 5000, 1.5), (2, 300, 0.5), (3, 20_000, 1.0), (5, 50_000, 1.05)],
)
def test_agrees_with_relplot_smece(seed: int, n: int, power: float) -> None:
    relplot = pytest.importorskip("relplot")
    f, y = _data(seed, n, power)
    theirs, width = relplot.smECE(f, y.astype(float), return_width=True)
    mine = ck.smooth_ece(f, y)
    assert mine.bandwidth == width  # the same bisection, step for step
    assert mine.value == pytest.approx(theirs, abs=1e-6)
    assert grid_size(width) % 2 == 1  # an odd grid: relplot's kernel is centred there


@pytest.mark.parametrize("sigma", [0.3, 0.05, 0.02, 5 / 1024])
def test_agrees_with_relplot_at_a_fixed_bandwidth(sigma: float) -> None:
    relplot = pytest.importorskip("relplot")
    f, y = _data(4, 20_000, 1.3)
    theirs = relplot.smECE_sigma(f, y.astype(float), sigma)
    assert ck.smooth_ece(f, y, bandwidth=sigma).value == pytest.approx(theirs, abs=1e-6)


def test_on_even_grids_relplots_kernel_is_off_centre_within_the_documented_bound() -> None:
    relplot = pytest.importorskip("relplot")
    f, y = _data(2, 2000, 1.0)
    sigma = 7 / 1024
    assert grid_size(sigma) % 2 == 0
    theirs = relplot.smECE_sigma(f, y.astype(float), sigma)
    mine = ck.smooth_ece(f, y, bandwidth=sigma).value
    assert abs(mine - theirs) / theirs < 2e-4  # docs/conventions.md


def test_a_constant_residual_is_the_smooth_ece_at_every_bandwidth() -> None:
    # forecasts all 0.8, events 3 in 5: the smoothed residual is 0.2 times the density
    f, y = [0.8] * 5, [1, 1, 1, 0, 0]
    for sigma in (0.01, 0.1, 1.0):
        s = ck.smooth_ece(f, y, bandwidth=sigma)
        assert s.value == pytest.approx(0.2, abs=1e-12)
        reached = ~np.isnan(s.mean_outcome)
        np.testing.assert_allclose(s.mean_outcome[reached], 0.6, atol=1e-6)
    # the search halves [0, 1] toward the fixed point 0.2 from above: 0.5, 0.25, (0.125),
    # (0.1875), 0.21875, 0.203125, (0.1953125), (0.19921875), 0.201171875, 0.2001953125
    searched = ck.smooth_ece(f, y)
    assert searched.bandwidth == 205 / 1024 and searched.searched


def test_density_integrates_to_one_and_the_result_is_json_ready() -> None:
    f, y = _data(0, 4000, 1.0)
    s = ck.smooth_ece(f, y)
    assert np.trapezoid(s.density, s.mesh) == pytest.approx(1.0, abs=2e-3)
    d = json.loads(json.dumps(s.to_dict(), allow_nan=False))
    assert d["value"] == s.value and len(d["mesh"]) == s.mesh.size
    assert str(s).startswith(f"smooth ECE {s.value:.4f} (Gaussian kernel, bandwidth")


def test_bad_input_is_refused() -> None:
    with pytest.raises(ck.InputError, match="smooth_ece: confidence must lie in"):
        ck.smooth_ece([0.2, 1.2], [0, 1])
    with pytest.raises(ck.InputError, match="smooth_ece: outcome must be 0 or 1"):
        ck.smooth_ece([0.2, 0.3], [0, 2])
    for bad in (0.0, 2.0, "0.1", True):
        with pytest.raises(ck.InputError, match="smooth_ece: bandwidth must be a number from"):
            ck.smooth_ece([0.2, 0.3], [0, 1], bandwidth=bad)


def test_pooled_forecasts_give_the_rows_number():
    # every sum of the smooth ECE is linear in the rows, so pooling tied forecasts (as the audit
    # does) changes nothing but rounding, bandwidth search included
    from calibkit.measure.pooled import pool_ties
    from calibkit.measure.smooth import smooth_ece_from_pooled, smooth_ece_of

    rng = np.random.default_rng(3)
    conf = np.round(rng.uniform(0, 1, 5000), 2)
    outcome = (rng.random(5000) < conf**1.5).astype(float)
    rows, pooled = smooth_ece_of(conf, outcome), smooth_ece_from_pooled(pool_ties(conf, outcome))
    assert pooled.bandwidth == rows.bandwidth and pooled.n == rows.n == 5000
    assert pooled.value == pytest.approx(rows.value, rel=1e-12)
