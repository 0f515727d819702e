"""The segment search with sample weights: integer weights give the numbers of the rows
repeated (on the same halves), numeric features are cut at weighted quantiles, the weighted
segment test keeps its false-alarm rate near nominal, and bad weights are refused by name."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import calibkit as ck
from calibkit.cli import app
from calibkit.measure.bins import BinStats
from calibkit.measure.segment_change import segment_change
from calibkit.segments import find_miscalibrated_segments

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cli_helpers import assert_bad_input  # noqa: E402

FAST = {"n_sims": 1000, "n_boot": 100}
EDGES = np.linspace(0.0, 1.0, 11)


def planted(seed: int, *, n: int = 4000, shift: float = 0.2):
    """Calibrated confidences except at site C (the event ``shift`` less often than forecast),
    a numeric feature that plays no part, and integer weights 0..4."""
    rng = np.random.default_rng(seed)
    conf = rng.uniform(0.4, 1.0, n)
    site = rng.choice(list("ABCD"), n)
    hit = rng.random(n) < conf - shift * (site == "C")
    return conf, hit, {"site": site, "x": rng.normal(0.0, 1.0, n)}, rng.integers(0, 5, n)


def held_out(n: int, seed: int = 0, fraction: float = 0.5) -> np.ndarray:
    search = np.zeros(n, dtype=bool)
    search[np.random.default_rng(seed).permutation(n)[: round(fraction * n)]] = True
    return ~search


def repeated_ece(conf, hit, w, rows) -> float:
    """The ECE of the rows repeated by their weights (no weights involved)."""
    return ck.ece(np.repeat(conf[rows], w[rows]), np.repeat(hit[rows], w[rows]), n_bins=10)


def test_integer_weights_give_the_numbers_of_the_rows_repeated():
    conf, hit, features, w = planted(3)
    found = find_miscalibrated_segments(conf, hit, features, sample_weight=w, **FAST)
    assert [s.name for s in found.confirmed] == ["site = C"]
    seg = found.confirmed[0]
    held = held_out(conf.size)
    rows, rest = held & (features["site"] == "C"), held & (features["site"] != "C")
    searched = ~held & (features["site"] == "C")
    # N counts raw rows; the weight beside it is theirs
    assert (seg.n, seg.rest_n, seg.n_search) == (rows.sum(), rest.sum(), searched.sum())
    assert (seg.weight, seg.rest_weight, seg.search_weight) == (
        w[rows].sum(),
        w[rest].sum(),
        w[searched].sum(),
    )
    assert found.total_weight == w.sum()
    # every point estimate is the repeated rows' own
    assert seg.ece == pytest.approx(repeated_ece(conf, hit, w, rows), abs=1e-12)
    assert seg.rest_ece == pytest.approx(repeated_ece(conf, hit, w, rest), abs=1e-12)
    assert seg.search_ece == pytest.approx(repeated_ece(conf, hit, w, searched), abs=1e-12)
    assert found.ece == pytest.approx(repeated_ece(conf, hit, w, np.ones(conf.size, bool)))
    assert seg.observed == pytest.approx(np.repeat(hit[rows], w[rows]).mean(), abs=1e-12)
    assert seg.mean_confidence == pytest.approx(np.repeat(conf[rows], w[rows]).mean(), abs=1e-12)
    # as rest: the segment's repeated rows, off by the repeated rest's gap in each bin
    rc, rh = np.repeat(conf[rest], w[rest]), np.repeat(hit[rest], w[rest])
    sc = np.repeat(conf[rows], w[rows])
    rest_bins, seg_bins = ck.bin_index(rc, EDGES), ck.bin_index(sc, EDGES)
    gap = np.zeros(10)  # confidences lie in (0.4, 1]: bins 4..9 hold rows
    for b in range(4, 10):
        gap[b] = (rh[rest_bins == b] - rc[rest_bins == b]).mean()
    assert seg.as_rest == pytest.approx(np.abs(gap[seg_bins]).mean(), abs=1e-12)
    # the gap is the ECE less the weighted noise floor (Kish), and JSON carries the weights
    assert seg.gap == pytest.approx(seg.ece - seg.noise_floor.mean, abs=1e-15)
    data = found.to_dict()
    assert data["total_weight"] == w.sum()
    assert (data["segments"][0]["weight"], data["segments"][0]["search"]["weight"]) == (
        w[rows].sum(),
        w[searched].sum(),
    )
    assert "weight" in found.header() and "weight" in str(found).splitlines()[0]


def test_unit_weights_give_the_unweighted_point_estimates():
    conf, hit, features, _ = planted(4)
    plain = find_miscalibrated_segments(conf, hit, features, **FAST)
    ones = find_miscalibrated_segments(
        conf, hit, features, sample_weight=np.ones(conf.size), **FAST
    )
    assert [s.name for s in ones.segments] == [s.name for s in plain.segments]
    for a, b in zip(plain.segments, ones.segments, strict=True):
        assert (a.n, float(a.n)) == (b.n, b.weight)
        assert b.ece == pytest.approx(a.ece, abs=1e-12)
        assert b.rest_ece == pytest.approx(a.rest_ece, abs=1e-12)
        assert b.as_rest == pytest.approx(a.as_rest, abs=1e-12)
        assert b.observed == pytest.approx(a.observed, abs=1e-12)
    assert "total_weight" not in plain.to_dict() and "weight" not in plain.header()


def test_numeric_features_are_cut_at_their_weighted_quantiles():
    conf, hit, features, w = planted(5)
    found = find_miscalibrated_segments(
        conf, hit, {"x": features["x"]}, sample_weight=w, depth=1, **FAST
    )
    expected = np.quantile(np.repeat(features["x"], w), [0.25, 0.5, 0.75])
    np.testing.assert_allclose(found.features[0].cuts, expected, rtol=0, atol=1e-12)


def weighted_case(n_seg: int, rng: np.random.Generator) -> tuple[BinStats, BinStats]:
    """A segment and the rest sharing one calibration (both 0.1 overconfident, the segment's
    confidences crowding the top of their bins), with lognormal weights."""
    n = 4000
    conf = np.concatenate([rng.uniform(0.85, 1.0, n_seg), rng.uniform(0.5, 1.0, n - n_seg)])
    hit = rng.random(n) < conf - 0.1
    w = rng.lognormal(0.0, 1.0, n)
    seg = BinStats.from_forecasts(conf[:n_seg], hit[:n_seg], edges=EDGES, sample_weight=w[:n_seg])
    rest = BinStats.from_forecasts(conf[n_seg:], hit[n_seg:], edges=EDGES, sample_weight=w[n_seg:])
    return seg, rest


def test_the_weighted_segment_test_keeps_its_false_alarm_rate_near_nominal():
    runs = 800
    p = np.array(
        [
            segment_change(*weighted_case(200, np.random.default_rng(90_000 + r)), seed=r).p_value
            for r in range(runs)
        ]
    )
    # binomial(800, a): 5% -> 40 expected (sd 6.2), 1% -> 8 (sd 2.8)
    assert 22 <= np.count_nonzero(p <= 0.05) <= 60
    assert 1 <= np.count_nonzero(p <= 0.01) <= 19


def test_the_weighted_segment_test_finds_a_worse_segment():
    rng = np.random.default_rng(6)
    conf = rng.uniform(0.5, 1.0, 3000)
    w = rng.lognormal(0.0, 1.0, 3000)
    hit = rng.random(3000) < conf - 0.15 * (np.arange(3000) < 300)
    seg = BinStats.from_forecasts(conf[:300], hit[:300], edges=EDGES, sample_weight=w[:300])
    rest = BinStats.from_forecasts(conf[300:], hit[300:], edges=EDGES, sample_weight=w[300:])
    test = segment_change(seg, rest, n_sims=500)
    assert test.worse and test.p_value == pytest.approx(1 / 501)
    assert test.change == pytest.approx(
        ck.ece(conf[:300], hit[:300], n_bins=10, sample_weight=w[:300])
        - ck.ece(conf[300:], hit[300:], n_bins=10, sample_weight=w[300:]),
        abs=1e-12,
    )


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        (lambda n: np.r_[np.ones(n - 1), -2.0], r"negative.*index 3999"),
        (lambda n: np.ones(n - 1), r"sample_weight"),
        (lambda n: np.r_[np.ones(n - 1), np.nan], r"sample_weight"),
        (lambda n: np.zeros(n), r"sample_weight"),
    ],
)
def test_bad_weights_are_refused(weights, message):
    conf, hit, features, _ = planted(7)
    with pytest.raises(ck.InputError, match=message):
        find_miscalibrated_segments(conf, hit, features, sample_weight=weights(conf.size), **FAST)


def test_a_half_with_no_weight_is_refused():
    conf, hit, features, _ = planted(7)
    w = (~held_out(conf.size)).astype(float)  # only the search half weighs anything
    with pytest.raises(ck.InputError, match="every row of the held-out half weighs 0"):
        find_miscalibrated_segments(conf, hit, features, sample_weight=w, **FAST)


# ----------------------------------------------------------------------------- the command line

runner = CliRunner()


@pytest.fixture(scope="module")
def weighted_csv(tmp_path_factory) -> tuple[Path, pd.DataFrame]:
    conf, hit, features, w = planted(8)
    frame = pd.DataFrame({"p": conf, "y": hit.astype(int), "site": features["site"], "w": w})
    path = tmp_path_factory.mktemp("wseg") / "preds.csv"
    frame.to_csv(path, index=False)
    return path, frame


def test_the_command_weighs_the_rows_by_the_weight_column(weighted_csv):
    path, frame = weighted_csv
    args = ["segments", str(path), "--features", "site", "--probs", "p", "--label", "y"]
    result = runner.invoke(app, [*args, "--weight", "w", "--n-sims", "1000", "--n-boot", "100"])
    assert result.exit_code == 0, result.output
    data = json.loads(
        runner.invoke(
            app, [*args, "--weight", "w", "--n-sims", "1000", "--n-boot", "100", "--json"]
        ).stdout
    )
    expected = find_miscalibrated_segments(
        frame["p"].to_numpy(),
        frame["y"].to_numpy(),
        {"site": frame["site"].to_numpy()},
        sample_weight=frame["w"].to_numpy(),
        **FAST,
    )
    assert data["total_weight"] == frame["w"].sum()
    assert [s["segment"] for s in data["segments"]] == [s.name for s in expected.segments]
    assert [s["weight"] for s in data["segments"]] == [s.weight for s in expected.segments]
    assert [s["ece"] for s in data["segments"]] == pytest.approx(
        [s.ece for s in expected.segments], abs=1e-12
    )
    assert "weight" in result.stdout


def test_the_command_refuses_a_bad_weight_by_column_and_row(weighted_csv, tmp_path):
    path, frame = weighted_csv
    bad = frame.copy()
    bad.loc[17, "w"] = -1.0
    bad.to_csv(tmp_path / "bad.csv", index=False)
    args = ["segments", str(tmp_path / "bad.csv"), "--features", "site", "--probs", "p"]
    result = runner.invoke(app, [*args, "--label", "y", "--weight", "w"])
    assert_bad_input(result, "weight column 'w' has negative values")
    assert "row 17" in result.stderr
    missing = runner.invoke(app, [*args, "--label", "y", "--weight", "nope"])
    assert_bad_input(missing, "nope")
