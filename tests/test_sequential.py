"""Anytime-valid calibration monitoring: the capital process and the mixture boundary worked by
hand, the shape of the sequences, the level under repeated looks, alarms under a shift, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

import calibkit as ck


def _hedged_capital_by_hand(x, m, alpha, c=0.5, theta=0.5):
    """Waudby-Smith and Ramdas (2023), Theorem 3 with the predictable plug-in bets of eq. (26)
    and (27), written out one row at a time in plain Python."""
    k_up = k_down = 1.0
    sum_x = sum_sq = 0.0
    var_before = 0.25  # sigma^2_0 = (1/4) / 1
    for t, xt in enumerate(x, start=1):
        lam = min(math.sqrt(2 * math.log(2 / alpha) / (var_before * t * math.log(1 + t))), c)
        lam_up = min(lam, c / m) if m > 0 else lam
        lam_down = min(lam, c / (1 - m)) if m < 1 else lam
        k_up *= 1 + lam_up * (xt - m)
        k_down *= 1 - lam_down * (xt - m)
        sum_x += xt
        mean_t = (0.5 + sum_x) / (t + 1)
        sum_sq += (xt - mean_t) ** 2
        var_before = (0.25 + sum_sq) / (t + 1)
    return max(theta * k_up, (1 - theta) * k_down)


def test_capital_of_three_rows_by_hand():
    conf, outcome = [0.8, 0.6, 0.9], [1, 0, 1]
    x = [
        (y - p + 1) / 2 for p, y in zip(conf, outcome, strict=True)
    ]  # gaps 0.2, -0.6, 0.1 mapped to [0, 1]
    assert x == pytest.approx([0.6, 0.2, 0.55])
    mon = ck.SequentialMonitor(n_bins=None, grid=21)
    status = mon.update(conf, outcome)
    assert status.overall.evidence == pytest.approx(
        _hedged_capital_by_hand(x, 0.5, 0.05), rel=1e-12
    )
    # the first bet by hand: sigma_0^2 = 1/4, t = 1: sqrt(2 log 40 / (0.25 log 2)) > 1/2, so 1/2;
    # K+ after row 1 at m = 0.5 is 1 + 0.5 * 0.1 = 1.05
    assert _hedged_capital_by_hand(x[:1], 0.5, 0.05) == pytest.approx(0.5 * 1.05)
    # the interval: the first excluded grid gaps on each side of the kept ones, by hand
    grid = np.linspace(-1, 1, 21)
    kept = [g for g in grid if _hedged_capital_by_hand(x, (g + 1) / 2, 0.05) < 20]
    step = 0.1
    low, high = mon.interval
    assert low == pytest.approx(max(min(kept) - step, -1.0))
    assert high == pytest.approx(min(max(kept) + step, 1.0))
    # a sequence split into batches is the same sequence
    split = ck.SequentialMonitor(n_bins=None, grid=21)
    split.update(conf[:1], outcome[:1])
    again = split.update(conf[1:], outcome[1:]).overall
    assert again.evidence == pytest.approx(status.overall.evidence, rel=1e-12)
    assert (again.low, again.high, again.n) == (status.overall.low, status.overall.high, 3)


def _mixture_half_width(t, rho, alpha):
    return math.sqrt((t + rho) * math.log((t + rho) / (rho * alpha**2))) / t


def test_mixture_with_zero_gaps_is_the_robbins_boundary_and_shrinks():
    # every gap 0 (confidence 1 and correct, confidence 0 and wrong): the interval is
    # symmetric around 0 with the half-width of the normal-mixture boundary, variance proxy 1
    alpha, horizon = 0.05, 1000
    r = 2 * math.log(1 / alpha)
    for _ in range(100):  # rho: the root of r = 2 log(1/a) + log(1 + r), rho = horizon / r
        r = 2 * math.log(1 / alpha) + math.log(1 + r)
    rho = horizon / r
    mon = ck.SequentialMonitor(n_bins=None, method="mixture", horizon=horizon)
    widths = []
    for batch in range(1, 11):
        mon.update([1.0, 0.0] * 50, [1, 0] * 50)
        t = 100 * batch
        low, high = mon.interval
        assert low == pytest.approx(-_mixture_half_width(t, rho, alpha), rel=1e-12)
        assert high == pytest.approx(-low, rel=1e-12)
        widths.append(high)
    assert np.all(np.diff(widths) < 0)
    # like sqrt(log t / t): the ratio stays within a constant band over a decade of t
    ratio = np.array(widths) / np.sqrt(np.log(np.arange(1, 11) * 100) / (np.arange(1, 11) * 100))
    assert ratio.max() / ratio.min() < 2.0
    assert not mon.alarm


def test_mixture_evidence_is_the_mixture_martingale_by_hand():
    # gaps 0.2, -0.6, 0.1, 0.3: S = 0, then the martingale sqrt(rho / (t + rho)) exp(S^2 / ...)
    mon = ck.SequentialMonitor(n_bins=None, method="mixture", horizon=50)
    mon.update([0.8, 0.6, 0.9], [1, 0, 1])
    mon.update([0.7], [1])
    alpha, r = 0.05, 2 * math.log(20)
    for _ in range(100):
        r = 2 * math.log(20) + math.log(1 + r)
    rho, s = 50 / r, 0.2 - 0.6 + 0.1 + 0.3
    expected = math.sqrt(rho / (4 + rho)) * math.exp(s**2 / (2 * (4 + rho)))
    assert mon.status.overall.evidence == pytest.approx(expected, rel=1e-12)
    assert mon.status.overall.gap == pytest.approx(s / 4)
    half = _mixture_half_width(4, rho, alpha)
    assert mon.interval == pytest.approx((max(s / 4 - half, -1), min(s / 4 + half, 1)))


def test_betting_with_zero_gaps_is_symmetric_and_shrinks():
    mon = ck.SequentialMonitor(n_bins=None, method="betting")
    widths = []
    for _ in range(8):
        mon.update([1.0, 0.0] * 50, [1, 0] * 50)
        low, high = mon.interval
        assert low == pytest.approx(-high, abs=1e-12)
        assert low < 0 < high
        widths.append(high)
    assert np.all(np.diff(widths) <= 0) and widths[-1] < widths[0] / 2
    assert not mon.alarm and mon.status.overall.evidence < 1


def test_alarm_does_not_depend_on_the_grid():
    rng = np.random.default_rng(3)
    coarse, fine = ck.SequentialMonitor(grid=21), ck.SequentialMonitor(grid=2001)
    for _ in range(15):
        conf = rng.uniform(0.5, 1, 200)
        outcome = rng.random(200) < conf - 0.04
        a, b = coarse.update(conf, outcome), fine.update(conf, outcome)
        assert a.overall.evidence == pytest.approx(b.overall.evidence, rel=1e-9)
    assert coarse.alarm_at == fine.alarm_at and coarse.alarm_by == fine.alarm_by


def _false_alarm_rate(method, runs, batches, rows, seed, drift=False):
    rng = np.random.default_rng(seed)
    alarms = 0
    for _ in range(runs):
        mon = ck.SequentialMonitor(method=method, grid=21)
        for batch in range(batches):
            # with drift the confidences move from (0.5, 0.7) to (0.8, 1.0), still calibrated
            low = 0.5 + 0.3 * batch / (batches - 1) if drift else 0.5
            conf = rng.uniform(low, low + 0.2 if drift else 1.0, rows)
            mon.update(conf, rng.random(rows) < conf)
            if mon.alarm:
                alarms += 1
                break
    return alarms / runs


@pytest.mark.parametrize("drift", [False, True])
@pytest.mark.parametrize("method", ["betting", "mixture"])
def test_false_alarms_checked_after_every_batch_stay_at_the_level(method, drift):
    rate = _false_alarm_rate(method, runs=200, batches=30, rows=100, seed=11, drift=drift)
    assert rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 200)


def test_a_fixed_sample_test_checked_after_every_batch_does_not():
    # the contrast the sequences exist for: a 95% normal interval re-checked after each of 30
    # batches alarms on calibrated forecasts far more often than 5%
    rng = np.random.default_rng(11)
    alarms = 0
    for _ in range(200):
        gaps = np.empty(0)
        for _ in range(30):
            conf = rng.uniform(0.5, 1, 100)
            gaps = np.concatenate([gaps, (rng.random(100) < conf) - conf])
            if abs(gaps.mean()) > 1.96 * gaps.std(ddof=1) / math.sqrt(gaps.size):
                alarms += 1
                break
    assert alarms / 200 > 0.10


@pytest.mark.parametrize("method", ["betting", "mixture"])
@pytest.mark.parametrize(("before", "within"), [(0, 5), (10, 8)])
def test_a_large_shift_alarms_within_a_few_batches(method, before, within):
    # the model becomes 30 points overconfident after `before` calibrated batches of 100 rows;
    # the sequences are of the mean gap since the start, so calibrated history slows them down
    rng = np.random.default_rng(5)
    mon = ck.SequentialMonitor(method=method)
    for _ in range(before):
        conf = rng.uniform(0.5, 1, 100)
        mon.update(conf, rng.random(100) < conf)
    assert not mon.alarm
    for _ in range(within):
        conf = rng.uniform(0.5, 1, 100)
        mon.update(conf, rng.random(100) < conf - 0.3)
    assert mon.alarm and mon.alarm_at is not None and before < mon.alarm_at[0] <= before + within
    assert mon.alarm_at[1] == 100 * mon.alarm_at[0]
    assert mon.interval[0] < -0.05


def test_miscalibrated_bins_alarm_where_calibration_in_the_large_cannot():
    # underconfident below 0.6 (+0.3), overconfident above 0.8 (-0.15): with confidences
    # uniform on (0.5, 1) the gaps cancel in the large (0.2 * 0.3 = 0.4 * 0.15)
    rng = np.random.default_rng(8)
    mon = ck.SequentialMonitor(n_bins=5)
    for _ in range(10):
        conf = rng.uniform(0.5, 1, 500)
        truth = np.where(conf <= 0.6, conf + 0.3, np.where(conf > 0.8, conf - 0.15, conf))
        status = mon.update(conf, rng.random(500) < truth)
    assert status.alarm and status.alarm_by in ("(0.4, 0.6]", "(0.8, 1]")
    assert not status.overall.alarm and status.overall.low < 0 < status.overall.high
    assert [b.alarm for b in status.bins] == [False, False, True, False, True]
    assert status.bins[4].high < 0 < status.bins[2].low
    assert sum(b.n for b in status.bins) == status.n == status.overall.n == 5000


def test_levels_split_by_the_union_bound():
    status = ck.SequentialMonitor(level=0.9, n_bins=4).status
    assert status.overall.level == pytest.approx(0.95)
    assert [b.level for b in status.bins] == pytest.approx([1 - 0.05 / 4] * 4)
    assert [b.bin for b in status.bins] == [(0.0, 0.25), (0.25, 0.5), (0.5, 0.75), (0.75, 1.0)]
    # a bin's gaps lie in [-b, 1 - a]: the sequence starts there
    assert (status.bins[1].low, status.bins[1].high) == (-0.5, 0.75)
    alone = ck.SequentialMonitor(level=0.9, n_bins=None).status
    assert alone.overall.level == 0.9 and alone.bins == ()


def test_mixture_is_order_free_and_explicit_edges_bin_like_bin_index():
    rng = np.random.default_rng(2)
    conf = rng.uniform(0, 1, 300)
    outcome = rng.random(300) < conf
    edges = [0.0, 0.3, 0.9, 1.0]
    a = ck.SequentialMonitor(method="mixture", edges=edges, closed="left")
    b = ck.SequentialMonitor(method="mixture", edges=edges, closed="left")
    a.update(conf, outcome)
    order = rng.permutation(300)
    b.update(conf[order[:100]], outcome[order[:100]])
    b.update(conf[order[100:]], outcome[order[100:]])
    assert a.interval == pytest.approx(b.interval, rel=1e-12)
    counts = np.bincount(ck.bin_index(conf, edges, closed="left"), minlength=3)
    assert [s.n for s in a.bins] == counts.tolist()
    assert "[0.3, 0.9)" in str(a.status)


def test_status_prints_and_serialises():
    mon = ck.SequentialMonitor(n_bins=2)
    mon.update([0.9, 0.2, 0.7], [1, 0, 0])
    d = mon.status.to_dict()
    assert d["batches"] == 1 and d["n"] == 3 and d["alarm"] is False
    assert [b["n"] for b in d["bins"]] == [1, 2]
    assert d["overall"]["gap"] == pytest.approx((0.1 - 0.2 - 0.7) / 3)
    text = str(mon.status)
    assert "no alarm" in text and "(0.5, 1]" in text


@pytest.mark.parametrize(
    ("conf", "outcome", "match"),
    [
        ([0.5, 1.2], [0, 1], r"confidence must lie in \[0, 1\].*index 1: 1.2"),
        ([0.5, float("nan")], [0, 1], r"confidence.*index 1"),
        ([0.5, 0.6], [0, 2], r"outcome must be 0 or 1.*index 1: 2"),
        ([0.5, 0.6], [0, 1, 1], r"outcome has 3 entries but the forecasts have 2"),
    ],
)
def test_bad_batches_are_refused(conf, outcome, match):
    mon = ck.SequentialMonitor()
    with pytest.raises(ck.InputError, match=match):
        mon.update(conf, outcome)
    assert mon.batches == 0 and mon.n == 0


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"grid": 20}, "grid must be odd"),
        ({"method": "bayes"}, "method"),
        ({"level": 1.5}, "level must be a probability"),
        ({"edges": [0.0, 0.5]}, "edges must start at 0 and end at 1"),
    ],
)
def test_bad_settings_are_refused(kwargs, match):
    with pytest.raises(ck.InputError, match=match):
        ck.SequentialMonitor(**kwargs)


def test_the_numba_capital_kernel_matches_the_numpy_reference(monkeypatch):
    pytest.importorskip("numba")
    rng = np.random.default_rng(4)
    batches = [rng.uniform(0.5, 1, n) for n in (3, 300, 700)]
    statuses = {}
    for mode in ("numpy", "numba"):
        monkeypatch.setenv("CALIBKIT_KERNEL", mode)
        mon = ck.SequentialMonitor(n_bins=4, grid=101)
        for i, conf in enumerate(batches):
            status = mon.update(conf, np.random.default_rng(i).random(conf.size) < conf - 0.02)
        statuses[mode] = status
    for a, b in zip(
        (statuses["numpy"].overall, *statuses["numpy"].bins),
        (statuses["numba"].overall, *statuses["numba"].bins),
        strict=True,
    ):
        assert a.evidence == pytest.approx(b.evidence, rel=1e-10)
        assert (a.low, a.high, a.n, a.alarm) == (b.low, b.high, b.n, b.alarm)
