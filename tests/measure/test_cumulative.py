"""The cumulative gap, the KS calibration error and the KS and Kuiper tests: a worked example
(MAPIE's documented one), ties, the Brownian-motion tails against their other series and a
simulation, and the degenerate cases."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import calibkit as ck
from calibkit.measure.distributions import brownian_max_abs_sf, brownian_range_sf

# MAPIE's docstring example: KS statistic 0.978, Kuiper (its convention) 0.857
CONF = [0.1, 0.9, 0.21, 0.9, 0.5]
OUTCOME = [0, 1, 0, 1, 0]


def test_worked_example() -> None:
    c = ck.cumulative_calibration(CONF, OUTCOME)
    # sorted: (0.1, 0), (0.21, 0), (0.5, 0), then the tie (0.9, 1), (0.9, 1)
    np.testing.assert_allclose(c.gap, [-0.02, -0.062, -0.162, -0.122], atol=1e-15)
    sigma = math.sqrt(0.09 + 0.21 * 0.79 + 0.25 + 2 * 0.09) / 5
    assert c.sigma == pytest.approx(sigma, rel=1e-14)
    assert c.ks_error == pytest.approx(0.162, abs=1e-15) and c.ks_at == 0.5
    assert round(c.ks.statistic, 3) == 0.978  # MAPIE's published value
    # the range of the path from its start 0: 0 - (-0.162); MAPIE leaves the start out and
    # reports (-0.02 - (-0.162)) / sigma = 0.857
    assert c.kuiper_error == pytest.approx(0.162, abs=1e-15)
    assert round((c.gap.max() - c.gap.min()) / c.sigma, 3) == 0.857
    assert c.ks.p_value == pytest.approx(brownian_max_abs_sf(0.162 / sigma), rel=1e-14)
    assert ck.ks_calibration_error(CONF, OUTCOME) == c.ks_error
    assert ck.ks_test(CONF, OUTCOME) == c.ks and ck.kuiper_test(CONF, OUTCOME) == c.kuiper


def test_ties_enter_together_so_row_order_does_not_matter() -> None:
    # MAPIE's p-value example has a tie at 0.5 with outcomes 1 and 0; its seeded jitter puts
    # the 0 first (max |C| = 0.15); entered together the tie adds 0 and max |C| is 1/15
    conf, y = [0.8, 0.3, 0.5, 0.5, 0.7, 0.1], [1, 0, 1, 0, 1, 0]
    c = ck.cumulative_calibration(conf, y)
    assert c.ks_error == pytest.approx(0.4 / 6, abs=1e-15)
    flipped = ck.cumulative_calibration(conf[::-1], y[::-1])
    assert flipped.ks == c.ks and flipped.kuiper == c.kuiper


def _max_abs_cdf_theta(x: float, terms: int = 400) -> float:
    return (
        4
        / math.pi
        * sum(
            (-1) ** k / (2 * k + 1) * math.exp(-((2 * k + 1) ** 2) * math.pi**2 / (8 * x * x))
            for k in range(terms)
        )
    )


def _range_cdf_theta(x: float, terms: int = 400) -> float:
    return sum(
        (8 / x**2 + 2 / ((k + 0.5) ** 2 * math.pi**2))
        * math.exp(-2 * (k + 0.5) ** 2 * math.pi**2 / x**2)
        for k in range(terms)
    )


@pytest.mark.parametrize("x", [0.3, 0.6, 0.9, 1.0, 1.3, 1.9, 2.0, 2.6, 3.5])
def test_brownian_tails_equal_their_other_series(x: float) -> None:
    special = pytest.importorskip("scipy.special")
    # each is computed in calibkit by one series on each side of a switch point; here by the
    # other series (theta forms below 1 and 2, normal-tail forms above) at 400 terms
    q = lambda z: special.ndtr(-z)  # noqa: E731
    normal_max = 4 * sum((-1) ** k * q((2 * k + 1) * x) for k in range(400))
    normal_range = 8 * sum((-1) ** (k - 1) * k * q(k * x) for k in range(1, 400))
    assert brownian_max_abs_sf(x) == pytest.approx(normal_max, rel=1e-10, abs=1e-15)
    assert brownian_max_abs_sf(x) == pytest.approx(1 - _max_abs_cdf_theta(x), rel=1e-10)
    assert brownian_range_sf(x) == pytest.approx(normal_range, rel=1e-10, abs=1e-15)
    assert brownian_range_sf(x) == pytest.approx(1 - _range_cdf_theta(x), rel=1e-10)


def test_brownian_tails_at_mapies_documented_values_and_far_out() -> None:
    assert round(1 - brownian_max_abs_sf(1.0), 4) == 0.3708  # MAPIE kolmogorov_smirnov_cdf(1)
    assert round(1 - brownian_range_sf(1.0), 4) == 0.0634  # MAPIE kuiper_cdf(1)
    # far out the tails are dominated by one normal term: 4 Q(x) and 8 Q(x)
    q8 = 0.5 * math.erfc(8 / math.sqrt(2))
    assert brownian_max_abs_sf(8.0) == pytest.approx(4 * q8, rel=1e-12)
    assert brownian_range_sf(8.0) == pytest.approx(8 * q8, rel=1e-9)
    assert brownian_max_abs_sf(0.0) == 1.0 and brownian_range_sf(math.inf) == 0.0


def test_the_ks_limit_is_a_free_brownian_motion_not_the_kolmogorov_bridge() -> None:
    # under calibration the gap is not pinned to 0 at the end, so its limit is sup |B| of a
    # free motion, whose tail is heavier than the bridge's (scipy's kstwobign): at the
    # bridge's 5% critical value the free motion still exceeds it a third of the time
    stats = pytest.importorskip("scipy.stats")
    critical = stats.kstwobign.isf(0.05)
    assert brownian_max_abs_sf(critical) == pytest.approx(0.3488, abs=1e-4)
    for x in (0.5, 1.0, 1.5, 2.0, 3.0):
        assert brownian_max_abs_sf(x) > stats.kstwobign.sf(x)


def test_brownian_tails_match_a_simulated_random_walk() -> None:
    rng = np.random.default_rng(0)
    steps = rng.choice([-1.0, 1.0], size=(4000, 2000))
    paths = np.cumsum(steps, axis=1) / math.sqrt(2000)
    top = np.maximum(paths.max(axis=1), 0.0)
    bottom = np.minimum(paths.min(axis=1), 0.0)
    for x in (0.8, 1.2, 1.8):
        assert np.mean(np.maximum(top, -bottom) > x) == pytest.approx(
            brownian_max_abs_sf(x), abs=0.025
        )
    for x in (1.2, 1.8, 2.6):
        assert np.mean(top - bottom > x) == pytest.approx(brownian_range_sf(x), abs=0.025)


def test_p_values_of_calibrated_forecasts_are_about_uniform() -> None:
    rng = np.random.default_rng(1)
    p_ks, p_kuiper = [], []
    for _ in range(300):
        f = rng.random(800)
        y = (rng.random(800) < f).astype(int)
        c = ck.cumulative_calibration(f, y)
        p_ks.append(c.ks.p_value)
        p_kuiper.append(c.kuiper.p_value)
    for p in (np.array(p_ks), np.array(p_kuiper)):
        assert 0.01 < np.mean(p < 0.05) < 0.10
        assert 0.4 < np.median(p) < 0.6


def test_overconfident_forecasts_are_found_and_located() -> None:
    rng = np.random.default_rng(2)
    f = rng.uniform(0.5, 1.0, 5000)
    y = (rng.random(f.size) < 0.5 + 0.5 * (f - 0.5)).astype(int)  # events rarer than forecast
    c = ck.cumulative_calibration(f, y)
    assert c.ks.p_value < 1e-10 and c.kuiper.p_value < 1e-10
    assert c.gap[-1] < 0 and c.ks_at > 0.99  # the gap grows to the end
    assert "events below the forecasts" in str(c)


def test_forecasts_of_exactly_zero_and_one() -> None:
    right = ck.cumulative_calibration([0.0, 1.0, 1.0], [0, 1, 1])
    assert math.isnan(right.ks.statistic) and "undefined" in right.ks.note
    assert right.ks.to_dict()["statistic"] is None
    wrong = ck.cumulative_calibration([0.0, 1.0, 1.0], [0, 1, 0])
    assert wrong.ks.statistic == math.inf and wrong.kuiper.p_value == 0.0
    assert "contradicted" in wrong.kuiper.note
    json.dumps(wrong.to_dict(), allow_nan=False)


def test_bad_input_is_refused() -> None:
    for fn in (ck.cumulative_calibration, ck.ks_test, ck.kuiper_test, ck.ks_calibration_error):
        with pytest.raises(ck.InputError, match=f"{fn.__name__}: confidence must lie in"):
            fn([0.2, 1.2], [0, 1])
        with pytest.raises(ck.InputError, match=f"{fn.__name__}: outcome must be 0 or 1"):
            fn([0.2, 0.3], [0, 2])
