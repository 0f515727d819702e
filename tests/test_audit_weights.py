"""ck.audit with sample weights: integer weights give the audit of the rows repeated, every
engine gives the same weighted numbers, and bad weights are refused."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import calibkit as ck

#: The numbers of an audit that integer weights must give exactly as the repeated rows do
#: (intervals, the noise floor and the tests use Kish's effective size instead).
POINT_ESTIMATES = (
    "ece",
    "mce",
    "rmsce",
    "brier",
    "nll",
    "auc",
    "accuracy",
    "mean_confidence",
    "classwise_ece",
)


def _binary(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.uniform(0, 1, n)
    y = (rng.random(n) < p**1.3).astype(int)
    w = rng.integers(0, 4, n)
    return p, y, w


def _multiclass(n=1500, c=4, seed=1):
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, c)) * 2
    p = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    y = np.array([rng.choice(c, p=row) for row in p])
    w = rng.integers(0, 4, n)
    return p, y, w


def _close(a, b):
    if a is None or b is None:
        return a is b
    return a == pytest.approx(b, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("data", [_binary, _multiclass])
def test_integer_weights_give_the_audit_of_the_repeated_rows(data, strategy):
    p, y, w = data()
    fast = {"n_boot": 20, "n_sims": 20}
    weighted = ck.audit(p, y, sample_weight=w, strategy=strategy, **fast)
    repeated = ck.audit(np.repeat(p, w, axis=0), np.repeat(y, w), strategy=strategy, **fast)
    for name in POINT_ESTIMATES:
        assert _close(getattr(weighted, name), getattr(repeated, name)), name
    np.testing.assert_allclose(weighted.table.edges, repeated.table.edges, rtol=1e-12)
    np.testing.assert_allclose(weighted.stats.mass, repeated.stats.count, rtol=1e-12)
    wa, ra = weighted.calibration_slope, repeated.calibration_slope
    assert wa.slope == pytest.approx(ra.slope, rel=1e-7)
    assert wa.intercept == pytest.approx(ra.intercept, rel=1e-7, abs=1e-9)
    wd, rd = weighted.distinct.to_dict(), repeated.distinct.to_dict()
    assert wd["smooth_ece"]["value"] == pytest.approx(rd["smooth_ece"]["value"], rel=1e-7)
    for score in ("brier_decomposition", "log_loss_decomposition"):
        assert wd[score]["miscalibration"] == pytest.approx(
            rd[score]["miscalibration"], rel=1e-9, abs=1e-14
        )
    assert weighted.n == p.shape[0]  # raw rows; the weight is beside them
    assert weighted.to_dict()["total_weight"] == pytest.approx(float(w.sum()))


def test_unit_weights_change_nothing():
    p, y, _ = _binary()
    a = ck.audit(p, y, n_boot=50, n_sims=50)
    b = ck.audit(p, y, sample_weight=np.ones(p.size), n_boot=50, n_sims=50)
    for name in POINT_ESTIMATES:
        assert _close(a.__getattribute__(name), b.__getattribute__(name)), name
    assert b.noise_floor.mean == pytest.approx(a.noise_floor.mean, rel=1e-12)


def test_weighted_table_and_file_column_agree_with_arrays(tmp_path):
    p, y, w = _binary()
    arrays = ck.audit(p, y, sample_weight=w, n_boot=50, n_sims=50)
    df = pd.DataFrame({"score": p, "truth": y, "w": w})
    table = ck.audit(
        df, columns={"probs": "score", "label": "truth"}, sample_weight="w", n_boot=50, n_sims=50
    )
    path = tmp_path / "preds.csv"
    df.to_csv(path, index=False)
    cols = {"probs": "score", "label": "truth", "weight": "w"}
    memory = ck.audit(str(path), columns=cols, n_boot=50, n_sims=50)
    duck = ck.audit(str(path), engine="duckdb", columns=cols, n_boot=50, n_sims=50)
    for other in (table, memory, duck):
        for name in ("ece", "mce", "brier", "nll", "auc", "accuracy", "mean_confidence"):
            assert _close(getattr(other, name), getattr(arrays, name)), name
        assert other.tests[0].statistic == pytest.approx(arrays.tests[0].statistic, rel=1e-9)
    assert duck.calibration_slope.slope == pytest.approx(arrays.calibration_slope.slope, rel=1e-7)


def test_weighted_spiegelhalter_is_the_weighted_formula():
    p, y, w = _binary()
    a = ck.audit(p, y, sample_weight=w, n_boot=20, n_sims=20)
    num = np.sum(w * (y - p) * (1 - 2 * p))
    den = np.sqrt(np.sum(w**2 * p * (1 - p) * (1 - 2 * p) ** 2))
    assert a.tests[0].statistic == pytest.approx(num / den, rel=1e-9)


def test_weighted_record_round_trips(tmp_path):
    p, y, w = _binary()
    a = ck.audit(p, y, sample_weight=w, n_boot=50, n_sims=50)
    path = tmp_path / "r.json"
    ck.write_record(path, ck.calibration_record(a))
    r = ck.read_record(path)
    assert r["data"]["total_weight"] == pytest.approx(float(w.sum()))
    assert r["bins"]["weight"] == pytest.approx(a.stats.mass.tolist())
    from calibkit.record.verify import record_stats

    assert record_stats(r) == a.stats
    # the accuracy interval is Wilson's at Kish's effective size
    n_eff = w.sum() ** 2 / (w**2).sum()
    k = a.accuracy * n_eff
    z = 1.959963984540054
    centre = (k + z * z / 2) / (n_eff + z * z)
    half = z / (n_eff + z * z) * np.sqrt(k * (n_eff - k) / n_eff + z * z / 4)
    assert r["metrics"]["accuracy"]["interval"]["low"] == pytest.approx(centre - half, rel=1e-9)


@pytest.mark.parametrize(
    ("weights", "match"),
    [
        ([1.0, -1.0, 1.0, 1.0], r"audit: sample_weight must not be negative; 1 weight is"),
        ([1.0, np.nan, 1.0, 1.0], r"audit: sample_weight must be finite"),
        ([0.0, 0.0, 0.0, 0.0], r"audit: every sample_weight is zero"),
        ([1.0, 1.0], r"audit: sample_weight has 2 entries but the forecasts have 4"),
    ],
)
def test_bad_weights_are_refused(weights, match):
    with pytest.raises(ck.InputError, match=match):
        ck.audit([0.2, 0.4, 0.6, 0.8], [0, 1, 0, 1], sample_weight=weights)


def test_weight_arrays_need_the_memory_engine(tmp_path):
    path = tmp_path / "p.csv"
    pd.DataFrame({"probs": [0.2, 0.7], "label": [0, 1]}).to_csv(path, index=False)
    with pytest.raises(ck.InputError, match="the weights are a column of the input"):
        ck.audit(str(path), engine="duckdb", sample_weight=[1.0, 2.0])


def test_two_weight_columns_are_refused():
    df = pd.DataFrame({"p": [0.2, 0.7], "y": [0, 1], "w": [1, 2], "v": [1, 1]})
    with pytest.raises(ck.InputError, match="name two weight columns"):
        ck.audit(df, columns={"probs": "p", "label": "y", "weight": "v"}, sample_weight="w")


def test_grouped_audit_weighs_every_group(tmp_path):
    p, y, w = _binary()
    groups = np.where(np.arange(p.size) % 3 == 0, "a", "b")
    g = ck.audit(p, y, by=groups, sample_weight=w, n_boot=20, n_sims=20)
    for name in ("a", "b"):
        rows = groups == name
        alone = ck.audit(p[rows], y[rows], sample_weight=w[rows], n_boot=20, n_sims=20)
        assert g.groups[name].ece == pytest.approx(alone.ece, rel=1e-12)
        assert g.groups[name].accuracy == pytest.approx(alone.accuracy, rel=1e-12)
    assert g.pooled.ece == pytest.approx(ck.audit(p, y, sample_weight=w, n_boot=20).ece)
    # the command line: --by with --weight reads the weight column for every group
    from typer.testing import CliRunner

    from calibkit.cli import app

    path = tmp_path / "g.csv"
    pd.DataFrame({"prob": p, "label": y, "w": w, "site": groups}).to_csv(path, index=False)
    out = CliRunner().invoke(
        app,
        [
            "audit",
            str(path),
            "--probs",
            "prob",
            "--label",
            "label",
            "--weight",
            "w",
            "--by",
            "site",
            "--json",
            "--n-boot",
            "20",
            "--n-sims",
            "20",
        ],
    )
    assert out.exit_code == 0, out.output
    import json

    doc = json.loads(out.stdout)
    eces = {d["group"]: d["ece"] for d in doc["groups"]}
    assert eces["a"] == pytest.approx(g.groups["a"].ece, rel=1e-12)


def test_weighted_audit_writes_its_html_report(tmp_path):
    p, y, w = _binary()
    a = ck.audit(p, y, sample_weight=w, n_boot=20, n_sims=20)
    path = tmp_path / "report.html"
    ck.write_report(path, audit=a)
    text = path.read_text(encoding="utf-8")
    assert "total weight" in text and "<img" in text
