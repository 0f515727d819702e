"""ck.audit(..., by=): one audit per group over the bins of all rows, and the groups whose ECE is
beyond their own noise floor at a family-wise level (Bonferroni, as the monitor corrects)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

import calibkit as ck
from calibkit.measure.change import per_test_level
from calibkit.measure.uncertainty import noise_floor_from_stats, noise_floor_quantile_from_stats

FAST = {"n_boot": 50, "n_sims": 200}


def _calibrated(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    p = rng.uniform(0.05, 0.95, n)
    return p, (rng.random(n) < p).astype(int)


def test_pooled_and_each_group_are_the_audits_of_their_rows():
    rng = np.random.default_rng(1)
    p, y = _calibrated(rng, 900)
    g = np.array(["b", "a", "c"])[rng.integers(0, 3, 900)]
    out = ck.audit(p, y, by=g, **FAST)
    whole = ck.audit(p, y, **FAST)
    assert out.pooled.ece == whole.ece and out.pooled.brier == whole.brier
    assert list(out.groups) == ["a", "b", "c"]
    for name, a in out.groups.items():
        alone = ck.audit(p[g == name], y[g == name], **FAST)
        assert a.n == np.count_nonzero(g == name)
        assert a.ece == alone.ece and a.brier == alone.brier
        assert a.calibration_slope.slope == alone.calibration_slope.slope


def test_quantile_bins_are_those_of_all_rows():
    rng = np.random.default_rng(2)
    p, y = _calibrated(rng, 1000)
    g = np.repeat([0, 1], 500)
    p[g == 1] = p[g == 1] ** 4  # the second group's confidences sit low: own quantiles differ
    out = ck.audit(p, y, by=g, strategy="quantile", n_bins=10, **FAST)
    edges = out.pooled.table.edges
    # the inner edges are the deciles of all rows (numpy's), the outer ones 0 and 1
    assert np.allclose(edges[1:-1], np.quantile(p, np.linspace(0, 1, 11))[1:-1], atol=0, rtol=1e-15)
    assert (edges[0], edges[-1]) == (0.0, 1.0)
    own = ck.audit(p[g == 1], y[g == 1], strategy="quantile", n_bins=10, **FAST).table.edges
    assert not np.array_equal(own, edges)  # the group's own quantiles would bin it otherwise
    for key, a in out.groups.items():
        assert np.array_equal(a.table.edges, edges)
        alone = ck.audit(p[g == key], y[g == key], edges=edges, **FAST)
        assert a.ece == alone.ece


def test_flag_is_the_bonferroni_quantile_of_each_groups_noise_floor():
    rng = np.random.default_rng(3)
    p, y = _calibrated(rng, 2500)
    g = np.repeat(np.arange(5), 500)
    out = ck.audit(p, y, by=g, seed=7, **FAST)
    assert per_test_level(0.95, 5) == pytest.approx(0.99)
    assert out.per_group_level == pytest.approx(0.99)
    assert out.n_sims_flag == 2000  # 20 draws beyond the 99th percentile: ceil(20 / 0.01)
    for key, a in out.groups.items():
        expected = noise_floor_quantile_from_stats(a.stats, 0.99, n_sims=2000, seed=7)
        assert out.thresholds[key] == expected
        assert out.is_flagged(key) == (a.ece > expected)
    assert "5 groups by group compared at family-wise level 95%" in out.verdict()
    assert "99.00% quantile" in out.verdict()


def test_noise_floor_quantile_at_95_is_the_floor_p95():
    rng = np.random.default_rng(4)
    p, y = _calibrated(rng, 800)
    stats = ck.audit(p, y, **FAST).stats
    floor = noise_floor_from_stats(stats, n_sims=300, seed=3)
    assert noise_floor_quantile_from_stats(stats, 0.95, n_sims=300, seed=3) == floor.p95


def test_calibrated_groups_raise_any_flag_at_most_one_minus_level_of_the_time():
    rng = np.random.default_rng(2026)
    k, n, runs = 4, 200, 120
    g = np.repeat(np.arange(k), n)
    any_flag = groups_flagged = 0
    for r in range(runs):
        p, y = _calibrated(rng, k * n)
        out = ck.audit(p, y, by=g, n_boot=1, n_sims=100, seed=r)
        any_flag += bool(out.flagged)
        groups_flagged += len(out.flagged)
    alpha = 0.05
    # family-wise: P(any flag) <= alpha, within 2.5 standard errors of the simulation
    assert any_flag / runs <= alpha + 2.5 * math.sqrt(alpha * (1 - alpha) / runs)
    per = alpha / k
    trials = runs * k
    assert groups_flagged / trials <= per + 2.5 * math.sqrt(per * (1 - per) / trials)


def test_a_group_with_planted_miscalibration_is_flagged():
    rng = np.random.default_rng(5)
    p, y = _calibrated(rng, 2000)
    g = np.repeat(["w", "x", "y", "z"], 500)
    drift = g == "y"
    y[drift] = (rng.random(drift.sum()) < p[drift] ** 2).astype(int)  # overconfident
    out = ck.audit(p, y, by=g, **FAST)
    assert out.flagged == ("y",)
    assert "1 of 4 groups miscalibrated beyond noise: y" in out.verdict()
    assert "BEYOND NOISE" in str(out)


def test_small_and_single_class_groups_get_notes_not_errors():
    rng = np.random.default_rng(6)
    p, y = _calibrated(rng, 600)
    g = np.repeat(["big", "other"], 300).astype(object)
    g[0] = "lone"  # one row
    p[1:41], y[1:41], g[1:41] = 0.9, 1, "sure"  # every label 1
    out = ck.audit(p, y, by=g, **FAST)
    assert out.thresholds["lone"] is None and not out.is_flagged("lone")
    assert out.compared == ("big", "other", "sure")
    assert out.per_group_level == pytest.approx(1 - 0.05 / 3)
    assert "too few to compare" in out.notes["lone"][0]
    assert out.slope("sure") is None
    assert out.slope_note("sure") == "every label is 1: one outcome only, no slope"
    assert out.slope("lone") is None and "too few to fit a slope" in out.slope_note("lone")
    s = out.groups["big"].calibration_slope
    assert out.slope("big") == (s.slope, s.in_the_large)
    text = str(out)
    assert "too small" in text and "note: sure: every label is 1" in text


def test_to_dict_is_strict_json_with_every_group():
    rng = np.random.default_rng(7)
    p, y = _calibrated(rng, 400)
    days = np.repeat(np.array(["2025-01-06", "2025-01-13"], dtype="datetime64[D]"), 200)
    d = ck.audit(p, y, by=days, **FAST).to_dict()
    json.dumps(d, allow_nan=False)
    assert [x["group"] for x in d["groups"]] == ["2025-01-06", "2025-01-13"]
    assert [x["n"] for x in d["groups"]] == [200, 200]
    assert d["pooled"]["n"] == 400 and d["n_compared"] == 2
    assert d["per_group_level"] == pytest.approx(0.975)


def test_by_a_column_of_a_table_and_of_a_file(tmp_path):
    rng = np.random.default_rng(8)
    p, y = _calibrated(rng, 600)
    qset = np.repeat(["math", "law", "bio"], 200)
    df = pd.DataFrame({"confidence": p, "correct": y, "qset": qset})
    from_table = ck.audit(df, by="qset", **FAST)
    path = tmp_path / "preds.parquet"
    df.to_parquet(path)
    from_file = ck.audit(path, by="qset", **FAST)
    from_arrays = ck.audit(p, y, by=qset, **FAST)
    assert from_table.by == from_file.by == "qset" and from_arrays.by == "group"
    for key in ("bio", "law", "math"):
        assert from_table.groups[key].ece == from_file.groups[key].ece
        assert from_table.groups[key].ece == from_arrays.groups[key].ece


def test_missing_group_values_are_refused_with_their_row(tmp_path):
    rng = np.random.default_rng(9)
    p, y = _calibrated(rng, 50)
    g = np.ones(50)
    g[[7, 20]] = np.nan
    with pytest.raises(ck.InputError, match=r"by= has 2 missing groups .*first at index 7"):
        ck.audit(p, y, by=g)
    df = pd.DataFrame({"confidence": p, "correct": y, "site": ["a"] * 50})
    df.loc[12, "site"] = None
    with pytest.raises(ck.InputError, match=r"'site'.*first at row 12"):
        ck.audit(df, by="site")
    path = tmp_path / "p.csv"
    df.to_csv(path, index=False)
    with pytest.raises(ck.InputError, match=r"^audit: column 'site' has 1 missing .*at row 12"):
        ck.audit(path, by="site")  # an empty cell of a CSV, not a group named ""


def test_bad_by_is_refused_with_how_to_fix_it(tmp_path):
    rng = np.random.default_rng(10)
    p, y = _calibrated(rng, 40)
    with pytest.raises(ck.InputError, match=r"by= must hold one group per prediction \(40\)"):
        ck.audit(p, y, by=np.zeros(39))
    with pytest.raises(ck.InputError, match=r"by='site' names a column, but the predictions"):
        ck.audit(p, y, by="site")
    df = pd.DataFrame({"confidence": p, "correct": y})
    with pytest.raises(ck.InputError, match=r"by='site' is neither a column"):
        ck.audit(df, by="site")
    path = tmp_path / "p.parquet"
    df.to_parquet(path)
    with pytest.raises(ck.InputError, match=r"by= runs on the memory engine.*ck.monitor"):
        ck.audit(path, engine="duckdb", by="site")


def test_small_multiples_share_their_axes_and_mark_the_flagged_group():
    from calibkit.report.grouped import grouped_diagrams
    from calibkit.report.html import render_report

    rng = np.random.default_rng(12)
    p, y = _calibrated(rng, 1500)
    g = np.repeat(["a", "b", "c", "d", "e"], 300)
    bad = g == "c"
    y[bad] = (rng.random(bad.sum()) < p[bad] ** 2).astype(int)
    out = ck.audit(p, y, by=g, **FAST)
    fig = grouped_diagrams(out)
    shown = [ax for ax in fig.axes if ax.get_visible()]
    assert len(shown) == 5
    assert {ax.get_ylim() for ax in shown} == {shown[0].get_ylim()}
    assert {ax.get_xlim() for ax in shown} == {shown[0].get_xlim()}
    titled = [ax.get_title().splitlines()[0] for ax in shown]
    assert titled == ["a", "b", "c (beyond noise)", "d", "e"]
    assert f"ECE {out.groups['c'].ece:.3f}" in shown[2].get_title()
    with pytest.raises(
        ck.InputError, match=r"grouped= takes the result of ck.audit\(\.\.\., by=\)"
    ):
        render_report(grouped=out.pooled)
