"""Label-free monitoring by period: the shift tests against scipy, their false-alarm rate when
nothing moved, planted shifts, labelled periods, files with late labels and the command line."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

import calibkit as ck
from calibkit._errors import InputError
from calibkit.cli import app
from calibkit.estimate.shift import class_mix_test, ks_test
from calibkit.measure.distributions import kolmogorov_sf


def test_kolmogorov_tail_matches_scipy():
    special = pytest.importorskip("scipy.special")
    for x in [0.05, 0.3, 0.7, 0.99, 1.0, 1.2, 1.358, 2.0, 3.5, 6.0]:
        assert kolmogorov_sf(x) == pytest.approx(special.kolmogorov(x), rel=1e-12, abs=1e-300)


def test_ks_test_matches_scipy_distance_and_kolmogorov_p():
    stats = pytest.importorskip("scipy.stats")
    special = pytest.importorskip("scipy.special")
    rng = np.random.default_rng(3)
    a, b = rng.beta(5, 1, 700), np.round(rng.beta(4, 1, 400), 2)  # ties in b
    d, p = ks_test(a, b)
    assert d == pytest.approx(stats.ks_2samp(a, b).statistic, abs=1e-15)
    assert p == pytest.approx(special.kolmogorov(np.sqrt(700 * 400 / 1100) * d), rel=1e-12)


def test_class_mix_test_matches_scipy_without_rare_classes():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(4)
    a, b = rng.integers(0, 4, 900), rng.choice(4, 600, p=[0.3, 0.3, 0.2, 0.2])
    stat, df, p = class_mix_test(a, b)
    table = np.stack([np.bincount(a, minlength=4), np.bincount(b, minlength=4)])
    ref = stats.chi2_contingency(table, correction=False)
    assert (stat, df) == (pytest.approx(ref.statistic, rel=1e-12), ref.dof)
    assert p == pytest.approx(ref.pvalue, rel=1e-9)


def test_rare_classes_are_pooled_and_one_class_gives_no_test():
    a = np.repeat([0, 1, 2], [100, 100, 2])  # class 2 expected fewer than 5 times
    b = np.repeat([0, 1, 2], [100, 100, 1])
    assert class_mix_test(a, b)[1] == 2 - 1 + 1  # cells: 0, 1 and the pooled one
    assert class_mix_test(np.zeros(50, int), np.zeros(40, int)) is None


def _reference(rng, n=3000):
    conf = rng.uniform(0.4, 1.0, n)
    return conf, (rng.random(n) < conf).astype(int)


def test_no_shift_false_alarms_stay_at_the_family_wise_level():
    rng = np.random.default_rng(11)
    alarms, runs = 0, 300
    for _ in range(runs):
        ref, y = _reference(rng, 800)
        target = rng.uniform(0.4, 1.0, 4 * 400)
        m = ck.PerformanceEstimator(method="doc").fit(ref, y)
        result = m.by_period(target, np.repeat([1, 2, 3, 4], 400), n_boot=1, level=0.9)
        alarms += bool(result.shifted)
    # at most 10% family-wise; three standard errors of slack
    assert alarms / runs <= 0.10 + 3 * np.sqrt(0.1 * 0.9 / runs)


def test_a_planted_confidence_shift_is_flagged_and_leaves_the_validated_region():
    rng = np.random.default_rng(8)
    ref, y = _reference(rng)
    target = np.concatenate([rng.uniform(0.4, 1.0, 1000), rng.uniform(0.7, 1.0, 1000)])
    result = (
        ck.PerformanceEstimator()
        .fit(ref, y)
        .by_period(target, np.repeat(["calm", "moved"], 1000), n_boot=30)
    )
    calm, moved = result.periods
    assert (calm.shifted, calm.outside) == (False, False)
    assert moved.shifted and moved.outside and moved.test.ks > 0.1
    assert result.per_test_level == pytest.approx(1 - 0.05 / 2)
    assert "1 of 2 periods (moved" in result.verdict()


def test_a_class_mix_shift_with_the_same_confidences_is_flagged_by_the_mix_test():
    rng = np.random.default_rng(7)
    n = 3000

    def probs(classes):
        conf = rng.uniform(0.5, 0.9, classes.shape[0])
        p = np.tile(((1 - conf) / 2)[:, None], (1, 3))
        p[np.arange(classes.shape[0]), classes] = conf
        return p

    ref_classes = rng.integers(0, 3, n)
    ref = probs(ref_classes)
    labels = np.where(rng.random(n) < ref.max(1), ref_classes, (ref_classes + 1) % 3)
    target = probs(
        np.concatenate([rng.integers(0, 3, 1500), rng.choice(3, 1500, p=[0.6, 0.2, 0.2])])
    )
    result = (
        ck.PerformanceEstimator(method="atc")
        .fit(ref, labels)
        .by_period(target, np.repeat([0, 1], 1500), n_boot=20)
    )
    assert [p.shifted for p in result.periods] == [False, True]
    assert result.periods[1].test.mix_p < 1e-6 and result.periods[1].test.ks_p > 0.01


def test_labelled_periods_show_their_accuracy_and_partial_ones_a_note():
    rng = np.random.default_rng(7)
    ref, y = _reference(rng)
    target = rng.uniform(0.4, 1.0, 900)
    truth = (rng.random(900) < target).astype(float)
    labels = truth.copy()
    labels[300:600] = np.nan  # period b: no labels yet
    labels[600:650] = np.nan  # period c: some
    result = (
        ck.PerformanceEstimator()
        .fit(ref, y)
        .by_period(target, np.repeat(["a", "b", "c"], 300), target_labels=labels, n_boot=30)
    )
    a, b, c = result.periods
    assert a.accuracy == pytest.approx(truth[:300].mean()) and a.covered is not None
    assert b.accuracy is None and c.accuracy is None and b.covered is None
    assert result.notes == (
        "period c: 250 of 300 rows have labels; a period's accuracy is shown only when all "
        "its rows have one",
    )


def test_bad_period_and_label_input_is_refused_with_the_row():
    rng = np.random.default_rng(8)
    ref, y = _reference(rng)
    est = ck.PerformanceEstimator(method="doc").fit(ref, y)
    with pytest.raises(InputError, match=r"one period per target row \(3\)"):
        est.by_period([0.5, 0.6, 0.7], [1, 2])
    with pytest.raises(InputError, match="missing \\(NaN\\) at target row 1"):
        est.by_period([0.5, 0.6, 0.7], [1.0, np.nan, 2.0])
    with pytest.raises(InputError, match="target_labels"):
        est.by_period([0.5, 0.6, 0.7], [1, 1, 2], target_labels=[1, 2, np.nan])


def _late_csv(tmp_path, rng):
    conf = rng.uniform(0.5, 1.0, 1500)
    right = (rng.random(1500) < conf).astype(int)
    lines = ["week,confidence,correct"]
    for i, (c, r) in enumerate(zip(conf, right, strict=True)):
        week = f"w{i // 500 + 1}"
        lines.append(f"{week},{c:.5f},{r if week != 'w2' else ''}")
    path = tmp_path / "late.csv"
    path.write_text("\n".join(lines) + "\n")
    return path, right


def test_a_file_with_late_labels_is_estimated_and_checked_where_labelled(tmp_path):
    path, right = _late_csv(tmp_path, np.random.default_rng(9))
    result = ck.estimate_by_period(path, by="week", n_boot=30)
    assert result.n_reference == 500 and result.reference_accuracy == right[:500].mean()
    w2, w3 = result.periods
    assert w2.accuracy is None and w3.accuracy == pytest.approx(right[1000:].mean())
    with pytest.raises(InputError, match="reference period 'w2' has 500 rows without a label"):
        ck.estimate_by_period(path, by="week", reference="w2", n_boot=5)


def test_parquet_nulls_are_labels_not_known_yet(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rng = np.random.default_rng(10)
    conf = rng.uniform(0.5, 1.0, 1000)
    right = [int(r) if i < 500 else None for i, r in enumerate(rng.random(1000) < conf)]
    path = tmp_path / "late.parquet"
    pq.write_table(
        pa.table({"day": np.repeat([1, 2], 500), "confidence": conf, "correct": right}), path
    )
    result = ck.estimate_by_period(path, by="day", n_boot=20)
    assert [p.period for p in result.periods] == [2] and result.periods[0].accuracy is None


def test_the_command_line_monitors_without_labels(tmp_path):
    path, _ = _late_csv(tmp_path, np.random.default_rng(12))
    runner = CliRunner()
    out = runner.invoke(app, ["monitor", str(path), "--by", "week", "--no-labels", "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert [p["period"] for p in doc["periods"]] == ["w2", "w3"]
    assert doc["per_test_level"] == pytest.approx(1 - 0.05 / 2)
    text = runner.invoke(app, ["monitor", str(path), "--by", "week", "--no-labels"])
    assert text.exit_code == 0 and "Estimated accuracy by period (CBPE" in text.stdout
    bad = runner.invoke(
        app, ["monitor", str(path), "--by", "week", "--no-labels", "--engine", "duckdb"]
    )
    assert bad.exit_code != 0 and "--no-labels" in bad.output
