"""The segment test: its null law worked out by hand on a tiny bin, the odds of two sides with
different confidences, and its false-alarm rate on calibrated data."""

from __future__ import annotations

import numpy as np
import pytest

from calibkit.measure.bins import BinStats
from calibkit.measure.segment_change import _odds_ratio, segment_change

ONE_BIN = [0.0, 1.0]


def stats(conf, hit, edges=ONE_BIN) -> BinStats:
    return BinStats.from_forecasts(np.asarray(conf, float), np.asarray(hit), edges=edges)


def test_the_null_law_of_a_four_row_bin_by_hand():
    """One bin of four forecasts of 0.5, one event among them. The segment is one row, the rest
    three. Given the one event, the segment holds it with probability 1/4 (a random row of
    four). Segment without the event: |0 - 0.5| / 1 - |1 - 1.5| / 3 = 1/3; with it:
    |1 - 0.5| - |0 - 1.5| / 3 = 0. The observed segment has no event, so its change is 1/3 and
    the null reaches it 3/4 of the time: p = 0.75 (within Monte Carlo error)."""
    test = segment_change(stats([0.5], [0]), stats([0.5] * 3, [1, 0, 0]), n_sims=20_000)
    assert test.change == pytest.approx(1 / 3, abs=1e-15)
    assert test.p_value == pytest.approx(0.75, abs=0.01)  # binomial SE 0.003
    assert not test.worse
    # the segment holds the event: change 0, which every draw reaches
    other = segment_change(stats([0.5], [1]), stats([0.5] * 3, [0, 0, 0]), n_sims=2000)
    assert other.change == pytest.approx(0.0, abs=1e-15) and other.p_value == 1.0


def test_bins_where_the_draw_has_no_freedom():
    """A bin with no events, with every row an event, or one side empty: the segment's events
    there are fixed, so a segment that is worse only in such bins is never significant."""
    edges = [0.0, 0.5, 1.0]
    seg = stats([0.2, 0.9], [0, 1], edges)  # bin 0: no events anywhere; bin 1: all events
    rest = stats([0.3, 0.8, 0.7], [0, 1, 1], edges)
    test = segment_change(seg, rest, n_sims=500)
    assert test.p_value == 1.0 and test.threshold == pytest.approx(test.change)


def test_the_odds_ratio_uses_each_sides_rate():
    assert _odds_ratio(0.5, 0.5) == 1.0
    assert _odds_ratio(0.8, 0.5) == pytest.approx(4.0)  # (0.8 / 0.2) / (0.5 / 0.5)
    assert _odds_ratio(1.0, 0.5) == pytest.approx((1 - 1e-9) / 1e-9)  # kept inside (0, 1)


def test_a_segment_calibrated_as_the_rest_is_flagged_at_about_alpha():
    """300 calibrated data sets of 4,000 rows, a 250-row segment each: flagged at one-sided 5%
    in 13 of them, 4.3% (binomial SE 1.2%; benchmarks/check_segment_test.py runs 4,000)."""
    edges = np.linspace(0.0, 1.0, 11)
    flags = 0
    for run in range(300):
        rng = np.random.default_rng(run)
        conf = rng.uniform(0.5, 1.0, 4000)
        hit = rng.random(4000) < conf
        seg, rest = stats(conf[:250], hit[:250], edges), stats(conf[250:], hit[250:], edges)
        flags += segment_change(seg, rest, n_sims=500, seed=run).worse
    assert 0.02 <= flags / 300 <= 0.085


def test_a_worse_segment_is_flagged():
    """The segment's forecasts come true 0.15 less often than stated; the rest's as stated."""
    rng = np.random.default_rng(7)
    conf = rng.uniform(0.5, 1.0, 4000)
    hit = rng.random(4000) < conf - 0.15 * (np.arange(4000) < 400)
    edges = np.linspace(0.0, 1.0, 11)
    test = segment_change(stats(conf[:400], hit[:400], edges), stats(conf[400:], hit[400:], edges))
    assert test.worse and test.p_value < 0.01 and test.change > test.threshold
