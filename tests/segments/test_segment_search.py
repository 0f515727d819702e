"""The segment search: a planted segment is found and confirmed, a calibrated model confirms
nothing, the held-out numbers are those of the held-out rows, and bad features are refused by
their column's name."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import calibkit as ck
from calibkit.measure.bins import BinStats
from calibkit.measure.segment_change import segment_change
from calibkit.segments import find_miscalibrated_segments

FAST = {"n_sims": 1000, "n_boot": 100}


def planted(seed: int, *, n: int = 4000, shift: float = 0.1):
    """Confidences uniform in [0.5, 1], calibrated except at site C, where the event happens
    ``shift`` less often than forecast; a numeric feature and a tier that play no part."""
    rng = np.random.default_rng(seed)
    conf = rng.uniform(0.5, 1.0, n)
    site = rng.choice(list("ABCD"), n)
    features = {"site": site, "x": rng.normal(0.0, 1.0, n), "tier": rng.integers(0, 3, n)}
    hit = rng.random(n) < conf - shift * (site == "C")
    return conf, hit, features


def held_out(n: int, seed: int, fraction: float = 0.5) -> np.ndarray:
    """The held-out rows as the documentation states the split: the search half is the first
    round(fraction * N) rows of np.random.default_rng(seed).permutation(N)."""
    search = np.zeros(n, dtype=bool)
    search[np.random.default_rng(seed).permutation(n)[: round(fraction * n)]] = True
    return ~search


def test_the_planted_segment_is_found_and_confirmed_with_its_held_out_numbers():
    conf, hit, features = planted(1, shift=0.15)
    found = find_miscalibrated_segments(conf, hit, features, categorical=["tier"], **FAST)
    assert [s.name for s in found.confirmed] == ["site = C"]
    seg = found.confirmed[0]
    held = held_out(conf.size, seed=0)
    rows = held & (features["site"] == "C")
    rest = held & (features["site"] != "C")
    # every number of the table is the held-out rows' own, over 10 equal-width bins
    assert (found.n_eval, seg.n, seg.rest_n) == (held.sum(), rows.sum(), rest.sum())
    assert seg.n_search == np.count_nonzero(~held & (features["site"] == "C"))
    assert seg.ece == pytest.approx(ck.ece(conf[rows], hit[rows], n_bins=10), abs=1e-12)
    assert seg.rest_ece == pytest.approx(ck.ece(conf[rest], hit[rest], n_bins=10), abs=1e-12)
    assert seg.observed == pytest.approx(hit[rows].mean(), abs=1e-12)
    assert seg.mean_confidence == pytest.approx(conf[rows].mean(), abs=1e-12)
    assert found.ece == pytest.approx(ck.ece(conf, hit, n_bins=10), abs=1e-12)
    # the gap is the ECE less the noise floor, its interval the ECE's less the same floor
    assert seg.gap == pytest.approx(seg.ece - seg.noise_floor.mean, abs=1e-15)
    assert seg.gap_interval[0] == pytest.approx(seg.interval.low - seg.noise_floor.mean)
    # ECE as the rest: each bin of the segment off by the rest's gap in that bin
    edges = np.linspace(0, 1, 11)
    idx, ridx = ck.bin_index(conf[rows], edges), ck.bin_index(conf[rest], edges)
    rest_gap = {b: hit[rest][ridx == b].mean() - conf[rest][ridx == b].mean() for b in set(ridx)}
    by_hand = sum(abs(rest_gap[b]) * np.count_nonzero(idx == b) for b in set(idx)) / rows.sum()
    assert seg.as_rest == pytest.approx(by_hand, abs=1e-12)
    # the test on the held-out rows is the segment test of the measure layer
    edges_stats = {"edges": edges}
    test = segment_change(
        BinStats.from_forecasts(conf[rows], hit[rows], **edges_stats),
        BinStats.from_forecasts(conf[rest], hit[rest], **edges_stats),
        alpha=found.confirm_level,
        n_sims=FAST["n_sims"],
        seed=0,
    )
    assert seg.test.change == pytest.approx(test.change, abs=1e-12)  # sums added otherwise
    assert (seg.test.p_value, seg.confirmed) == (test.p_value, test.worse)


def test_a_calibrated_model_confirms_nothing():
    conf, hit, features = planted(2, shift=0.0)
    found = find_miscalibrated_segments(conf, hit, features, categorical=["tier"], **FAST)
    assert found.confirmed == ()
    assert "held up" in found.verdict() or "no segment" in found.verdict()


def test_seeded_repeats_give_the_power_and_the_false_discovery_rate():
    """40 planted runs (site C 0.12 overconfident, 1,000 of 4,000 rows) and 40 calibrated
    runs: the confirmation is family-wise at 5%, so a null run confirms anything with
    probability at most 0.05 (2 of 40 expected; 5 or more has probability 0.05 under
    Binomial(40, 0.05), and these seeds are fixed). benchmarks/bench_segments.py runs 100."""
    power = false_in_planted = false_in_null = 0
    for run in range(40):
        conf, hit, features = planted(100 + run, shift=0.12)
        found = find_miscalibrated_segments(
            conf, hit, features, categorical=["tier"], seed=run, **FAST
        )
        names = [s.name for s in found.confirmed]
        power += "site = C" in names
        false_in_planted += any(not name.startswith("site = C") for name in names)
        conf, hit, features = planted(500 + run, shift=0.0)
        null = find_miscalibrated_segments(
            conf, hit, features, categorical=["tier"], seed=run, **FAST
        )
        false_in_null += bool(null.confirmed)
    assert power >= 38  # measured: 40 of 40 (35 of 40 at a shift of 0.1)
    assert false_in_null <= 4 and false_in_planted <= 4  # measured: 1 and 0


def test_an_interaction_hidden_in_its_parents_is_found_as_a_pair():
    """Overconfident at (A = 1, B = x) and underconfident at (A = 1, B = y): A = 1 as a whole
    mixes the two (its bins partly cancel), the pairs are worse than the rest each."""
    rng = np.random.default_rng(3)
    n = 12000
    conf = rng.uniform(0.55, 0.95, n)
    a, b = rng.integers(0, 3, n), rng.choice(["x", "y"], n)
    shift = np.where((a == 1) & (b == "x"), -0.2, 0.0) + np.where((a == 1) & (b == "y"), 0.2, 0.0)
    hit = rng.random(n) < np.clip(conf + shift, 0, 1)
    found = find_miscalibrated_segments(conf, hit, {"a": a, "b": b}, **FAST)
    names = {s.name for s in found.confirmed}
    assert {"a = 1 & b = x", "a = 1 & b = y"} <= names
    assert all(len(s.levels) == 2 or s.name == "a = 1" for s in found.confirmed)


def test_a_pair_inside_a_segment_found_already_is_not_searched():
    conf, hit, features = planted(4, shift=0.2)
    found = find_miscalibrated_segments(conf, hit, {"site": features["site"]}, **FAST)
    both = find_miscalibrated_segments(
        conf, hit, {"site": features["site"], "tier": features["tier"]}, **FAST
    )
    assert all(not s.name.startswith("site = C &") for s in both.segments)
    assert [s.name for s in found.confirmed] == [s.name for s in both.confirmed] == ["site = C"]


def test_numeric_features_are_cut_at_their_quantiles():
    conf = np.linspace(0.5, 1.0, 8)
    hit = np.ones(8, dtype=bool)
    x = np.arange(1.0, 9.0)
    found = find_miscalibrated_segments(conf, hit, {"x": x, "k": x % 2 == 0}, **FAST)
    fx, fk = found.features
    # np.quantile of 1..8 at 1/4, 1/2, 3/4: 2.75, 4.5, 6.25
    assert fx.kind == "quantile" and fx.cuts == (2.75, 4.5, 6.25)
    assert [lvl.label for lvl in fx.levels] == [
        "x <= 2.75",
        "2.75 < x <= 4.5",
        "4.5 < x <= 6.25",
        "x > 6.25",
    ]
    assert fk.kind == "categorical" and [lvl.label for lvl in fk.levels] == [
        "k = False",
        "k = True",
    ]
    # a numeric column with no more values than quantile levels is categorical; and on request
    few = find_miscalibrated_segments(conf, hit, {"n": x % 3}, **FAST)
    assert few.features[0].kind == "categorical"
    asked = find_miscalibrated_segments(conf, hit, {"x": x}, categorical=["x"], **FAST)
    assert len(asked.features[0].levels) == 8
    # too few rows for any segment: nothing searched, and the verdict says so
    assert found.n_searched == 0 and "no segment" in found.verdict()


def test_tables_are_read_as_their_columns():
    conf, hit, features = planted(5, shift=0.15)
    frame = pd.DataFrame(features)
    by_dict = find_miscalibrated_segments(conf, hit, features, categorical="tier", **FAST)
    for table in (frame, pl.from_pandas(frame), pa.Table.from_pandas(frame)):
        got = find_miscalibrated_segments(conf, hit, table, categorical="tier", **FAST)
        assert got.to_dict() == by_dict.to_dict()


def test_the_result_prints_and_serialises():
    conf, hit, features = planted(6, shift=0.15)
    found = find_miscalibrated_segments(conf, hit, features, categorical=["tier"], **FAST)
    text = str(found)
    assert text.splitlines()[0].split() == ["segment", "N", "acc", "conf", "ECE", "floor", "gap",
                                            "as", "rest"]  # fmt: skip
    assert "site = C" in text and "CONFIRMED" in text and text.endswith(found.verdict())
    data = json.loads(json.dumps(found.to_dict()))
    assert data["confirmed"] == ["site = C"]
    seg = data["segments"][0]
    assert seg["levels"] == [{"feature": "site", "label": "site = C", "value": "C"}]
    assert seg["test"]["worse"] is True and seg["n"] == found.confirmed[0].n
    assert data["features"][1]["kind"] == "quantile"
    wide = found.rows(wide=True)[0]
    assert len(wide) == len(found.WIDE_HEADER) and wide[-1] == "CONFIRMED"


# ----------------------------------------------------------------------------- refusals

CONF, HIT = np.linspace(0.5, 1.0, 6), np.array([1, 0, 1, 1, 0, 1])


@pytest.mark.parametrize(
    "features, options, message",
    [
        ({"age": [30.0, np.nan, 41.0, 52.0, 60.0, 70.0]}, {}, "feature 'age' has 1 missing value (None/NaN/NaT/null), first at index 1"),
        ({"site": ["a", None, "b", "a", "b", "a"]}, {}, "feature 'site' has 1 missing value"),
        ({"site": ["a", "b"]}, {}, "feature 'site' has 2 entries but the forecasts have 6"),
        ({"site": [[1, 2]] * 6}, {}, "feature 'site' must be 1-D"),
        ({"id": ["a", "b", "c", "d", "e", "f"]}, {"max_levels": 5}, "feature 'id' has 6 distinct values, more than max_levels=5"),
        ({"x": np.arange(6)}, {"categorical": ["x"], "max_levels": 5}, "(it is numeric: leave it out of categorical="),
        ({"site": list("aabbcc")}, {"categorical": ["age"]}, "categorical names 'age', which is not a feature; the features are site"),
        ({}, {}, "features is empty"),
        ([1, 2, 3, 4, 5, 6], {}, "features must be a dict of columns (name -> array) or a table"),
        ({"site": list("aabbcc")}, {"depth": 3}, "depth must be 1 or 2"),
        ({"site": list("aabbcc")}, {"n_sims": 100}, "n_sims=100 is too few to confirm any of 10 segments"),
        ({"site": list("aabbcc")}, {"min_size": 0}, "min_size must be an integer >= 1"),
        ({"site": list("aabbcc")}, {"search_fraction": 1.0}, "search_fraction must be a probability strictly between 0 and 1"),
    ],
)  # fmt: skip
def test_bad_features_and_settings_are_refused_by_name(features, options, message):
    with pytest.raises(ck.InputError, match="^find_miscalibrated_segments: ") as info:
        find_miscalibrated_segments(CONF, HIT, features, **options)
    assert message in str(info.value)


def test_a_missing_value_in_a_table_names_its_column_and_row():
    frame = pd.DataFrame({"site": ["a", "b", None, "a", "b", "a"]})
    with pytest.raises(ck.InputError, match=re.escape("column 'site' has 1 missing value")):
        find_miscalibrated_segments(CONF, HIT, frame)


def test_forecasts_are_checked_as_every_measure_checks_them():
    with pytest.raises(ck.InputError, match="confidence must lie in"):
        find_miscalibrated_segments(CONF + 1, HIT, {"site": list("aabbcc")})
    with pytest.raises(ck.InputError, match="outcome must be 0 or 1"):
        find_miscalibrated_segments(CONF, HIT * 2, {"site": list("aabbcc")})
