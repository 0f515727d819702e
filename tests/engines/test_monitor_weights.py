"""Sample weights in the monitor: weighted groups are the groups of the rows repeated by
their (integer) weights (ECE, accuracy, mean confidence, temperature), from arrays, a table, a
file in memory and DuckDB; the no-change band of weighted bins (Kish effective counts) keeps
its level under no change (simulated)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import calibkit as ck
from calibkit import InputError
from calibkit.measure.bins import BinStats
from calibkit.measure.change import ece_change_band

FAST = {"n_boot": 50, "n_sims": 200}


def _data(seed: int = 4) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    n = 1800
    z = rng.normal(size=(n, 3)) * 2
    y = np.argmax(z + rng.gumbel(size=(n, 3)) * 1.5, axis=1)
    week = np.repeat([1, 2, 3], n // 3)
    w = rng.integers(0, 4, n)
    return {"z": z, "y": y, "week": week, "w": w}


def _quiet(f: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ck.CalibkitWarning)
        return f()


def _as_repeated(weighted: ck.Monitor, repeated: ck.Monitor) -> None:
    np.testing.assert_allclose(weighted.binning.values, repeated.binning.values, rtol=1e-12)
    assert len(weighted.groups) == len(repeated.groups)
    for a, b in zip(weighted.groups, repeated.groups, strict=True):
        assert a.group == b.group
        assert a.weight == b.n  # the weight is the repeated count
        np.testing.assert_array_equal(a.stats.mass, b.stats.count.astype(np.float64))
        assert a.ece == pytest.approx(b.ece, rel=1e-12, abs=1e-15)
        assert a.accuracy == pytest.approx(b.accuracy, rel=1e-12)
        assert a.mean_confidence == pytest.approx(b.mean_confidence, rel=1e-12)
        assert a.observed == pytest.approx(b.observed, rel=1e-12)
        if b.band is not None:
            assert a.band is not None
            assert a.band.change == pytest.approx(b.band.change, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_weighted_groups_are_the_groups_of_repeated_rows(strategy: str) -> None:
    d = _data()
    rows = np.repeat(np.arange(d["y"].size), d["w"])
    weighted = _quiet(
        lambda: ck.monitor(
            d["z"], d["y"], by=d["week"], from_logits=True, sample_weight=d["w"],
            strategy=strategy, **FAST,
        )
    )  # fmt: skip
    repeated = _quiet(
        lambda: ck.monitor(
            d["z"][rows], d["y"][rows], by=d["week"][rows], from_logits=True,
            strategy=strategy, **FAST,
        )
    )  # fmt: skip
    _as_repeated(weighted, repeated)
    for a, b in zip(weighted.groups, repeated.groups, strict=True):
        assert a.n == int(np.count_nonzero(d["week"] == a.group))  # raw rows
        assert a.temperature == pytest.approx(b.temperature, rel=1e-9)
        assert a.to_dict()["weight"] == b.n and "weight" not in b.to_dict()
    # the table shows the rows and the weight beside them
    first = weighted.groups[0]
    assert weighted.rows()[0][1] == f"{first.n} (w {first.weight:g})"


def _table(d: dict[str, np.ndarray]) -> dict[str, Any]:
    return {
        **{f"logit_{k}": d["z"][:, k] for k in range(3)},
        "y": d["y"],
        "week": d["week"],
        "w": d["w"],
    }


COLUMNS = {"logits": ["logit_0", "logit_1", "logit_2"], "label": "y", "weight": "w"}


def test_a_tables_weight_column_weighs_the_groups() -> None:
    d = _data()
    frame = pd.DataFrame(_table(d))
    by_name = _quiet(lambda: ck.monitor(frame, by="week", sample_weight="w", **FAST))
    arrays = _quiet(
        lambda: ck.monitor(
            d["z"], d["y"], by=d["week"], from_logits=True, sample_weight=d["w"], **FAST
        )
    )
    for a, b in zip(by_name.groups, arrays.groups, strict=True):
        assert a.weight == b.weight
        assert a.ece == pytest.approx(b.ece, rel=1e-12)
        assert a.accuracy == pytest.approx(b.accuracy, rel=1e-12)


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_a_files_weight_column_weighs_the_groups(tmp_path: Path, engine: str) -> None:
    d = _data()
    path = tmp_path / "m.parquet"
    pq.write_table(pa.table(_table(d)), path)
    rows = np.repeat(np.arange(d["y"].size), d["w"])
    weighted = _quiet(lambda: ck.monitor(path, by="week", engine=engine, columns=COLUMNS, **FAST))
    repeated = _quiet(
        lambda: ck.monitor(d["z"][rows], d["y"][rows], by=d["week"][rows], from_logits=True, **FAST)
    )
    _as_repeated(weighted, repeated)


def test_a_group_whose_weights_are_all_zero_is_refused() -> None:
    d = _data()
    w = d["w"].copy()
    w[d["week"] == 2] = 0
    with pytest.raises(InputError, match=r"every weight of group 2 \(600 rows\) is zero"):
        ck.monitor(d["z"], d["y"], by=d["week"], from_logits=True, sample_weight=w, **FAST)


def test_an_array_of_weights_beside_a_duckdb_file_is_refused(tmp_path: Path) -> None:
    d = _data()
    path = tmp_path / "m.parquet"
    pq.write_table(pa.table(_table(d)), path)
    plain = {k: v for k, v in COLUMNS.items() if k != "weight"}
    with pytest.raises(InputError, match=r"engine='duckdb' the weights are a column"):
        ck.monitor(path, by="week", engine="duckdb", columns=plain, sample_weight=d["w"])


def test_the_weighted_band_keeps_its_level_when_nothing_moved() -> None:
    """Two calibrated cohorts with very uneven weights (most of the weight on few rows): the
    band from Kish effective counts flags a change at most about 1 - level of the time (the
    band is conservative: unweighted, in this setting, it flags about 6% at level 0.9); a band
    that took each bin's raw count beside its weighted sums flagged 30%."""
    rng = np.random.default_rng(11)
    edges = np.linspace(0, 1, 11)
    level, reps, n = 0.9, 300, 400
    flags = 0
    for _ in range(reps):
        stats = []
        for _cohort in range(2):
            p = rng.uniform(0.05, 0.95, n)
            y = (rng.random(n) < p).astype(int)  # calibrated: nothing moved
            w = rng.pareto(1.5, n) + 0.1
            stats.append(BinStats.from_forecasts(p, y, edges=edges, sample_weight=w))
        band = ece_change_band(
            stats[0], stats[1], level=level, n_sims=400, seed=int(rng.integers(1 << 30))
        )
        flags += band.moved
    assert flags / reps <= 0.13
