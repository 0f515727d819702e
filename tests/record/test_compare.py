"""Comparing two calibration records: within noise, moved beyond noise, refusals, intervals."""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pytest
from rich.console import Console

import calibkit as ck
from calibkit.measure.bins import BinStats
from calibkit.measure.change import _null_changes
from calibkit.measure.errors import ece_from_stats
from calibkit.record import calibration_record, compare_records
from calibkit.record.signing import _digest
from calibkit.report.terminal import render_comparison

FAST = {"n_boot": 100, "n_sims": 100}
CONTRACT = {"model": "toy", "outcome_definition": "argmax is the label"}


def cohort(n: int, seed: int, *, stretch: float = 1.0, c: int = 4):
    """Logits of a model calibrated by construction (labels drawn from softmax(z)); the cohort's
    logits are multiplied by ``stretch`` afterwards (2: overconfident)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 1.5, (n, c))
    y = (ck.softmax(z).cumsum(axis=1) < rng.random((n, 1))).sum(axis=1)
    return stretch * z, y


def record_of(z, y, *, calibrator=None, window: str | None = None, **kwargs):
    audit = ck.audit(z, y, from_logits=True, **FAST, **kwargs)
    return calibration_record(
        audit, scores=z, labels=y, calibrator=calibrator, data_window=window, **CONTRACT
    )


def resealed(record):
    """The record as if it had been made with its edited fields (its digest recomputed)."""
    record["digest"]["value"] = _digest(record)
    return record


@pytest.fixture(scope="module")
def halves():
    z, y = cohort(8000, seed=0)
    return record_of(z[:4000], y[:4000], window="first half"), record_of(
        z[4000:], y[4000:], window="second half"
    )


def test_two_halves_of_one_calibrated_model_are_within_noise(halves):
    old, new = halves
    c = compare_records(old, new)
    assert not c.moved
    assert c.noise_low <= c.ece_change <= c.noise_high
    assert c.p_value > 0.05
    assert c.verdict().startswith("calibration within noise: ECE ")
    assert c.differences == (("data_window", "first half", "second half"),)


def test_two_seeds_of_different_sizes_are_within_noise():
    """ECE is biased upward by an amount that shrinks with N: cohorts of 6000 and 1500 of one
    calibrated model have different ECEs, and the noise band knows it."""
    old = record_of(*cohort(6000, seed=1))
    new = record_of(*cohort(1500, seed=2))
    c = compare_records(old, new)
    assert c.ece_change > 0  # the smaller cohort's ECE is larger ...
    assert not c.moved  # ... by no more than noise


def test_a_stretched_cohort_is_flagged(halves):
    old, _ = halves
    z, y = cohort(4000, seed=7, stretch=2.0)
    new = record_of(z, y, window="after the change")
    c = compare_records(old, new)
    assert c.moved and c.ece_change > c.noise_high and c.p_value < 0.01
    away = [b for b in c.moved_bins if b.direction == "away from the diagonal"]
    assert len(away) >= 3
    for b in away:
        assert b.gap_new < 0 and abs(b.gap_new) > abs(b.gap_old)  # overconfident now
        assert b.gap_high < 0
    text = str(c)
    assert "calibration moved beyond noise (worse): ECE" in text
    assert "MOVED away from the diagonal" in text
    assert f"{len(c.moved_bins)} of {c.n_compared} bins changed beyond their 95% intervals" in text


def test_the_lapse_is_visible_in_the_terminal(halves):
    old, _ = halves
    new = record_of(*cohort(4000, seed=7, stretch=2.0))
    console = Console(width=80, record=True, color_system=None)
    render_comparison(compare_records(old, new), console)
    out = console.export_text()
    assert "noise band" in out and "d acc [95% CI]" in out and "gap old -> new" in out
    assert "away" in out
    assert "calibration moved beyond noise (worse)" in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_temperature_change_is_reported():
    z_old, y_old = cohort(3000, seed=3)
    z_new, y_new = cohort(3000, seed=4, stretch=2.0)
    t_old = ck.TemperatureScaling().fit(z_old, y_old)
    t_new = ck.TemperatureScaling().fit(z_new, y_new)
    old = record_of(z_old, y_old, calibrator=t_old)
    new = record_of(z_new, y_new, calibrator=t_new)
    c = compare_records(old, new)
    assert c.temperature_old == t_old.temperature_
    assert c.temperature_new == t_new.temperature_
    assert c.temperature_change == pytest.approx(t_new.temperature_ - t_old.temperature_)
    assert 1.6 < c.temperature_new / c.temperature_old < 2.4  # the logits were doubled
    assert "fitted temperature" in c.verdict()
    assert any(line.startswith("fitted temperature: ") for line in c.notes())
    only_one = compare_records(old, record_of(z_new, y_new))
    assert only_one.temperature_change is None
    assert "only the old record carries one" in str(only_one)


def test_newcombe_interval_of_a_bin():
    """Newcombe (1998), example (a): 56/70 against 48/80, hybrid score interval (method 10)
    0.0524 to 0.3339 for the difference 0.2."""
    edges = np.array([0.0, 0.5, 1.0])
    conf = np.full(150, 0.7)
    outcome = np.r_[np.ones(48), np.zeros(32), np.ones(56), np.zeros(14)]
    old = _stats_record(BinStats.from_forecasts(conf[:80], outcome[:80], edges=edges))
    new = _stats_record(BinStats.from_forecasts(conf[80:], outcome[80:], edges=edges))
    b = compare_records(old, new).bins[1]
    assert (b.count_old, b.count_new) == (80, 70)
    assert b.acc_change == pytest.approx(0.2)
    assert b.acc_low == pytest.approx(0.0524, abs=5e-5)
    assert b.acc_high == pytest.approx(0.3339, abs=5e-5)
    # same confidences: the gap moves as the accuracy does
    assert (b.gap_low, b.gap_high) == pytest.approx((b.acc_low, b.acc_high))
    assert b.moved and b.direction == "toward the diagonal"  # gap -0.1 -> +0.1: same size
    assert not compare_records(old, new).bins[0].moved  # empty in both


def _stats_record(stats: BinStats) -> dict:
    """A record around given statistics (audited from forecasts that produce them)."""
    conf = np.repeat(stats.sum_conf / np.maximum(stats.count, 1), stats.count)
    out = np.concatenate(
        [
            np.r_[np.ones(int(k)), np.zeros(int(n - k))]
            for k, n in zip(stats.sum_outcome, stats.count, strict=True)
        ]
    )
    with warnings.catch_warnings():  # Hosmer-Lemeshow's deciles of equal confidences collapse
        warnings.simplefilter("ignore", ck.CalibkitWarning)
        audit = ck.audit(conf, out.astype(int), edges=stats.edges, **FAST)
    assert audit.stats.allclose(stats)
    return calibration_record(audit, outcome_definition="a bin of 0.7s")


def test_a_shift_in_confidence_along_the_diagonal_is_not_flagged():
    """A bin whose points slide along the diagonal (higher confidence, equally higher
    accuracy) changes its accuracy, not its gap."""
    edges = np.array([0.0, 0.2, 1.0])
    old = _stats_record(
        BinStats.from_forecasts(np.full(1000, 0.3), np.r_[np.ones(300), np.zeros(700)], edges=edges)
    )
    new = _stats_record(
        BinStats.from_forecasts(np.full(1000, 0.9), np.r_[np.ones(900), np.zeros(100)], edges=edges)
    )
    b = compare_records(old, new).bins[1]
    assert b.acc_low > 0.5  # the accuracy moved a lot
    assert b.gap_change == pytest.approx(0.0, abs=1e-12) and not b.moved


def test_false_alarm_rate_of_the_noise_band():
    """Calibrated cohorts of unequal sizes: the noise band is crossed about 1 - level of the
    time (a bootstrap interval of the raw ECE difference is crossed most of the time)."""
    rng = np.random.default_rng(11)
    edges = np.linspace(0, 1, 16)

    def stats(n):
        p = ck.sigmoid(rng.normal(1.5, 2.0, n))
        return BinStats.from_forecasts(p, rng.random(n) < p, edges=edges)

    alarms = 0
    for _ in range(200):
        a, b = stats(5000), stats(1000)
        change = ece_from_stats(b) - ece_from_stats(a)
        low, high = np.quantile(_null_changes(a, b, 1000, rng), [0.025, 0.975])
        alarms += not low <= change <= high
    assert alarms / 200 < 0.12


# ----------------------------------------------------------------------------- refusals


def test_mismatched_binning_is_refused(halves):
    old, _ = halves
    z, y = cohort(2000, seed=5)
    with pytest.raises(
        ck.InputError,
        match=re.escape(
            "refusing to compare: the bin edges differ (old: 15 uniform bins, right-closed; new: "
            "10 uniform bins, right-closed)"
        ),
    ) as info:
        compare_records(old, record_of(z, y, n_bins=10))
    assert "audit both with the same --bins and --strategy (old: --bins 15" in str(info.value)
    with pytest.raises(ck.InputError, match="old bins are right-closed, new bins left-closed"):
        compare_records(old, record_of(z, y, closed="left"))
    with pytest.raises(ck.InputError, match="quantile edges come from each cohort"):
        compare_records(old, record_of(z, y, strategy="quantile"))


def test_another_outcome_definition_is_refused(halves):
    old, new = halves
    other = new.to_dict()
    other["context"]["outcome_definition"] = "top-5 contains the label"
    with pytest.raises(
        ck.InputError,
        match=re.escape(
            "the outcome definitions differ (old: 'argmax is the label'; new: 'top-5 contains "
            "the label')"
        ),
    ):
        compare_records(old, resealed(other))
    other["context"]["outcome_definition"] = None
    with pytest.raises(ck.InputError, match=r"new: \(not stated\)"):
        compare_records(old, resealed(other))


def test_another_event_is_refused(halves):
    old, _ = halves
    p = np.random.default_rng(0).uniform(0, 1, 500)
    y = (np.random.default_rng(1).random(500) < p).astype(int)
    binary = calibration_record(ck.audit(p, y, **FAST), **CONTRACT)
    with pytest.raises(ck.InputError, match="different events \\(old: top-label, new: binary\\)"):
        compare_records(old, binary)


def test_malformed_records_and_settings(halves):
    old, new = halves
    broken = new.to_dict()
    del broken["bins"]
    with pytest.raises(ck.InputError, match="compare_records: new record: .*bins is missing"):
        compare_records(old, broken)
    with pytest.raises(ck.InputError, match="level"):
        compare_records(old, new, level=1.5)
    with pytest.raises(ck.InputError, match="n_sims"):
        compare_records(old, new, n_sims=0)


# ----------------------------------------------------------------------------- the result


def test_to_dict_is_json_and_same_seed_same_band(halves):
    old, new = halves
    a, b = compare_records(old, new, seed=3), compare_records(old, new, seed=3)
    assert (a.noise_low, a.noise_high) == (b.noise_low, b.noise_high)
    d = a.to_dict()
    text = json.dumps(d, allow_nan=False)
    assert json.loads(text)["moved"] is False
    assert d["noise_band"]["level"] == 0.95 and d["noise_band"]["n_sims"] == 2000
    assert len(d["bins"]) == 15
    assert d["old"]["ece"] == old["metrics"]["ece"]["value"]
    assert d["verdict"] == a.verdict()
    assert compare_records(old, new, level=0.5).noise_high < a.noise_high


def test_str_has_the_header_table_and_verdict(halves):
    old, new = halves
    text = str(compare_records(old, new))
    lines = text.splitlines()
    assert lines[0] == "calibkit compare"
    assert lines[1].startswith("old: toy, first half, recorded ")
    assert "same contract: event top-label (the argmax is correct)" in text
    assert "outcome definition 'argmax is the label', M = 15 uniform bins, right-closed" in text
    assert "d acc [CI]" in text and "d gap [CI]" in text
    assert lines[-1].startswith("calibration within noise")
