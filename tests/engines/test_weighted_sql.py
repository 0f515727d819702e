"""A weight column in the SQL engines (DuckDB always, Spark with ``-k spark``).

The rule every weighted number obeys: with integer weights it equals the number computed on the
file with each row repeated w times (a row of weight 0 left out), and the bin statistics equal
those of ``BinStats.from_forecasts(..., sample_weight=w)`` in memory (raw counts included).
Bad weight cells are refused with the core of the message the memory reader gives.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from sklearn.metrics import roc_auc_score

from calibkit import InputError
from calibkit.engines import summarize_with_engine
from calibkit.engines._plan import Binning
from calibkit.engines.duckdb import DuckDBEngine
from calibkit.engines.groups import group_sums
from calibkit.engines.spark import SparkEngine
from calibkit.engines.temperature import fit_temperature_with_engine
from calibkit.io import read_predictions
from calibkit.measure.bins import BinStats
from calibkit.measure.summary import Summary
from calibkit.measure.weighted import weighted_quantiles

N = 240


def _data(kind: str, seed: int = 3) -> tuple[dict[str, Any], dict[str, Any]]:
    """Columns of one input kind, with integer weights 0..3, and the columns= that read it."""
    rng = np.random.default_rng(seed)
    w = rng.integers(0, 4, size=N)
    if kind == "binary":
        p = np.round(rng.uniform(size=N), 2)  # rounded: ties, for the AUC and the quantiles
        y = (rng.uniform(size=N) < p).astype(np.int64)
        return {"p": p, "y": y, "w": w}, {"probs": "p", "label": "y", "weight": "w"}
    if kind == "confidence":
        c = np.round(rng.uniform(0.3, 1.0, size=N), 2)
        ok = (rng.uniform(size=N) < c).astype(np.int64)
        return {"c": c, "ok": ok, "w": w}, {"confidence": "c", "correct": "ok", "weight": "w"}
    z = rng.normal(size=(N, 3)) * 2
    y = np.argmax(z + rng.gumbel(size=(N, 3)) * 1.5, axis=1)  # informative, not separable
    cols: dict[str, Any] = {f"logit_{k}": z[:, k] for k in range(3)}
    if kind == "top-label":
        e = np.exp(z - z.max(axis=1, keepdims=True))
        cols = {f"prob_{k}": (e / e.sum(axis=1, keepdims=True))[:, k] for k in range(3)}
    role = "probs" if kind == "top-label" else "logits"
    return {**cols, "y": y, "w": w}, {role: list(cols), "label": "y", "weight": "w"}


def _write(folder: Path, name: str, cols: dict[str, Any], fmt: str) -> Path:
    path = folder / f"{name}.{fmt}"
    table = pa.table(cols)
    if fmt == "parquet":
        pq.write_table(table, path)
    else:
        pacsv.write_csv(table, path)
    return path


def _weighted_and_repeated(folder: Path, kind: str, fmt: str) -> tuple[Path, Path, dict, dict]:
    cols, columns = _data(kind)
    rows = np.repeat(np.arange(N), cols["w"])
    repeated = {k: np.asarray(v)[rows] for k, v in cols.items() if k != "w"}
    plain = {k: v for k, v in columns.items() if k != "weight"}
    return (
        _write(folder, "weighted", cols, fmt),
        _write(folder, "repeated", repeated, fmt),
        columns,
        plain,
    )


def _same_stats(weighted: BinStats, repeated: BinStats) -> None:
    """The weighted statistics are those of the repeated rows: weights for counts."""
    assert weighted.weighted and not repeated.weighted
    np.testing.assert_array_equal(weighted.edges, repeated.edges)
    np.testing.assert_array_equal(weighted.mass, repeated.count.astype(np.float64))
    for field in ("sum_conf", "sum_outcome", "sum_conf_sq", "sum_conf_outcome", "sum_var_weight"):
        np.testing.assert_allclose(
            getattr(weighted, field), getattr(repeated, field), rtol=1e-12, atol=1e-12
        )


def _same_summary(weighted: Summary, repeated: Summary) -> None:
    _same_stats(weighted.stats, repeated.stats)
    _same_stats(weighted.deciles, repeated.deciles)
    assert len(weighted.classwise) == len(repeated.classwise)
    for a, b in zip(weighted.classwise, repeated.classwise, strict=True):
        _same_stats(a, b)
    assert weighted.correct_weight == repeated.n_correct
    assert weighted.mass == repeated.n
    assert weighted.accuracy == pytest.approx(repeated.accuracy, rel=1e-12)
    assert weighted.brier_sum == pytest.approx(repeated.brier_sum, rel=1e-12)
    assert weighted.nll_sum == pytest.approx(repeated.nll_sum, rel=1e-12)
    assert weighted.auc == pytest.approx(repeated.auc, rel=1e-12)
    assert weighted.slope is not None and repeated.slope is not None
    assert weighted.slope.slope == pytest.approx(repeated.slope.slope, rel=1e-9)
    assert weighted.slope.intercept == pytest.approx(repeated.slope.intercept, rel=1e-9, abs=1e-12)
    assert weighted.slope.in_the_large == pytest.approx(
        repeated.slope.in_the_large, rel=1e-9, abs=1e-12
    )


KINDS = ("binary", "confidence", "top-label", "logits")


@pytest.fixture(params=["held", "sql"])
def both_paths(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """DuckDB's two paths: the checked rows held in memory (inputs that fit) and SQL alone."""
    if request.param == "sql":
        monkeypatch.setattr(DuckDBEngine, "hold_bytes", 0)


@pytest.mark.usefixtures("both_paths")
@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("fmt", ["parquet", "csv"])
@pytest.mark.parametrize("kind", KINDS)
def test_duckdb_weighted_file_equals_rows_repeated(
    kind: str, fmt: str, strategy: str, tmp_path: Path
) -> None:
    weighted, repeated, columns, plain = _weighted_and_repeated(tmp_path, kind, fmt)
    binning = Binning(n_bins=8, strategy=strategy)
    got = summarize_with_engine(str(weighted), engine="duckdb", columns=columns, binning=binning)
    want = summarize_with_engine(str(repeated), engine="duckdb", columns=plain, binning=binning)
    _same_summary(got, want)
    assert got.n == N  # the raw rows, beside their weight
    assert got.stats.count.sum() == N


@pytest.mark.parametrize("kind", ["binary", "top-label"])
def test_spark_weighted_file_equals_rows_repeated(kind: str, tmp_path: Path, spark: Any) -> None:
    weighted, repeated, columns, plain = _weighted_and_repeated(tmp_path, kind, "csv")
    binning = Binning(n_bins=8, strategy="quantile")
    got = SparkEngine(str(weighted), columns=columns, spark=spark).summarize(binning, where="a")
    want = SparkEngine(str(repeated), columns=plain, spark=spark).summarize(binning, where="a")
    _same_summary(got, want)
    duck = summarize_with_engine(str(weighted), engine="duckdb", columns=columns, binning=binning)
    assert got.stats.allclose(duck.stats) and got.deciles.allclose(duck.deciles)
    assert got.auc == pytest.approx(duck.auc, rel=1e-12)


@pytest.mark.usefixtures("both_paths")
@pytest.mark.parametrize("kind", ["binary", "confidence"])
def test_duckdb_bins_equal_binstats_of_the_weights_in_memory(kind: str, tmp_path: Path) -> None:
    cols, columns = _data(kind)
    path = _write(tmp_path, "weighted", cols, "parquet")
    conf, outcome = (cols["p"], cols["y"]) if kind == "binary" else (cols["c"], cols["ok"])
    binning = Binning(n_bins=10, strategy="quantile")
    got = summarize_with_engine(str(path), engine="duckdb", columns=columns, binning=binning)
    edges = got.binning.values
    # the quantile edges are the weighted quantiles of the confidences
    levels = np.arange(1, 10) / 10
    inner = weighted_quantiles(conf, cols["w"], levels)
    np.testing.assert_array_equal(edges, np.unique(np.concatenate(([0.0], inner, [1.0]))))
    want = BinStats.from_forecasts(conf, outcome, edges=edges, sample_weight=cols["w"])
    assert got.stats.allclose(want)
    np.testing.assert_array_equal(got.stats.count, want.count)  # raw rows per bin
    # the exact AUC, weighted, against scikit-learn's
    assert got.auc == pytest.approx(
        roc_auc_score(outcome, conf, sample_weight=cols["w"]), rel=1e-12
    )
    right = (conf >= 0.5) == (outcome == 1)  # the binary prediction p >= 0.5 was right
    assert got.correct_weight == pytest.approx(float(np.sum(cols["w"] * right)), rel=1e-12)
    assert got.mass == float(cols["w"].sum())


@pytest.mark.usefixtures("both_paths")
def test_weights_of_one_are_the_unweighted_summary(tmp_path: Path) -> None:
    cols, columns = _data("binary")
    cols["w"] = np.ones(N)
    path = _write(tmp_path, "ones", cols, "parquet")
    binning = Binning(n_bins=10, strategy="quantile")
    got = summarize_with_engine(str(path), engine="duckdb", columns=columns, binning=binning)
    plain = {k: v for k, v in columns.items() if k != "weight"}
    want = summarize_with_engine(str(path), engine="duckdb", columns=plain, binning=binning)
    assert want.correct_weight is None and not want.stats.weighted
    assert got.stats.weighted and got.correct_weight == want.n_correct
    np.testing.assert_array_equal(got.binning.values, want.binning.values)
    _same_stats(got.stats, want.stats)
    _same_stats(got.deciles, want.deciles)
    assert got.auc == pytest.approx(want.auc, rel=1e-12)
    # and the unweighted audit is the in-memory one, as before
    memory = summarize_with_engine(path, engine="memory", columns=plain, binning=binning)
    assert want.allclose(memory)


def test_a_column_named_weight_is_never_taken_as_the_weights(tmp_path: Path) -> None:
    cols, _ = _data("binary")
    path = _write(tmp_path, "named", {"p": cols["p"], "y": cols["y"], "weight": cols["w"]}, "csv")
    got = summarize_with_engine(str(path), engine="duckdb", columns={"probs": "p", "label": "y"})
    assert not got.stats.weighted and got.n == N and got.correct_weight is None
    assert read_predictions(path, probs="p", label="y").sample_weight is None


def test_weighted_temperature_equals_rows_repeated(tmp_path: Path) -> None:
    weighted, repeated, columns, plain = _weighted_and_repeated(tmp_path, "logits", "parquet")
    got = fit_temperature_with_engine(str(weighted), engine="duckdb", columns=columns)
    want = fit_temperature_with_engine(str(repeated), engine="duckdb", columns=plain)
    assert got.solution.beta == pytest.approx(want.solution.beta, rel=1e-9)
    assert got.nll_before == pytest.approx(want.nll_before, rel=1e-12)


def test_monitor_group_sums_weighted_equal_rows_repeated(tmp_path: Path) -> None:
    cols, columns = _data("logits")
    cols["g"] = np.arange(N) % 3
    rows = np.repeat(np.arange(N), cols["w"])
    weighted = _write(tmp_path, "weighted", cols, "parquet")
    repeated = _write(
        tmp_path, "repeated", {k: v[rows] for k, v in cols.items() if k != "w"}, "parquet"
    )
    plain = {k: v for k, v in columns.items() if k != "weight"}
    kw: dict[str, Any] = dict(
        by="g", engine="duckdb", time=None, from_logits=True, temperature=True, where="monitor"
    )
    binning = Binning(n_bins=6, strategy="quantile")
    got = group_sums(str(weighted), None, columns=columns, binning=binning, **kw)
    want = group_sums(str(repeated), None, columns=plain, binning=binning, **kw)
    assert got.groups == want.groups == [0, 1, 2]
    np.testing.assert_array_equal(got.edges.values, want.edges.values)
    for a, b in zip(got.stats, want.stats, strict=True):
        _same_stats(a, b)
    assert got.correct_weight == want.n_correct and want.correct_weight is None
    for g in got.groups:
        assert got.temperatures[g] == pytest.approx(want.temperatures[g], rel=1e-9)


# ----------------------------------------------------------------------------- bad weights

P, Y = ("0.3", "0.6", "0.2", "0.9"), ("1", "0", "0", "1")

#: name -> (weight cells, the core every engine's message matches)
BAD = {
    "text": (["1", "two", "1", "1"], r"column 'w' must hold numbers; it holds text"),
    "missing": (["1", "", "1", "1"], r"column 'w' has (1 )?missing value"),
    "NA": (["1", "NA", "1", "1"], r"column 'w' has (1 )?missing value"),
    "NaN": (["1", "nan", "1", "1"], r"column 'w' has .*NaN"),
    "negative": (["1", "-1", "1", "+2"], r"weight column 'w' has negative values: 1 row of 4"),
    "infinite": (["1", "inf", "1", "1"], r"weight column 'w' has infinite values: 1 row of 4"),
    "all zero": (["0", "0", " 0.0 ", "-0"], r"every weight in column 'w' is zero"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_weight_cells_refused_alike_by_memory_and_duckdb(case: str, tmp_path: Path) -> None:
    cells, core = BAD[case]
    path = tmp_path / "bad.csv"
    rows = "".join(f"{p},{y},{w}\n" for p, y, w in zip(P, Y, cells, strict=True))
    path.write_text("p,y,w\n" + rows)
    columns = {"probs": "p", "label": "y", "weight": "w"}
    messages = []
    with pytest.raises(InputError) as memory:
        read_predictions(path, columns=columns)
    messages.append(str(memory.value))
    with pytest.raises(InputError) as duck:
        summarize_with_engine(str(path), engine="duckdb", columns=columns)
    messages.append(str(duck.value))
    for message in messages:
        assert re.search(core, message), message


@pytest.mark.parametrize("case", ["negative", "all zero"])
def test_bad_weights_refused_by_spark(case: str, tmp_path: Path, spark: Any) -> None:
    cells, core = BAD[case]
    path = tmp_path / "bad.csv"
    rows = "".join(f"{p},{y},{w}\n" for p, y, w in zip(P, Y, cells, strict=True))
    path.write_text("p,y,w\n" + rows)
    with pytest.raises(InputError, match=core):
        SparkEngine(
            str(path), columns={"probs": "p", "label": "y", "weight": "w"}, spark=spark
        ).summarize(Binning(), where="audit")


def test_a_boolean_weight_column_is_refused_alike(tmp_path: Path) -> None:
    path = tmp_path / "b.parquet"
    pq.write_table(pa.table({"p": [0.2, 0.7], "y": [0, 1], "w": [True, False]}), path)
    columns = {"probs": "p", "label": "y", "weight": "w"}
    with pytest.raises(InputError, match="column 'w' .*must hold numbers"):
        read_predictions(path, columns=columns)
    with pytest.raises(InputError, match="column 'w' .*must hold numbers"):
        summarize_with_engine(str(path), engine="duckdb", columns=columns)


def test_the_weight_column_must_be_a_column_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "p.csv"
    path.write_text("p,y\n0.2,0\n0.7,1\n")
    for engine in ("memory", "duckdb"):
        with pytest.raises(InputError, match="weight='y' is also the label column"):
            summarize_with_engine(
                str(path), engine=engine, columns={"probs": "p", "label": "y", "weight": "y"}
            )
    with pytest.raises(InputError, match="has no column 'v'"):
        summarize_with_engine(
            str(path), engine="duckdb", columns={"probs": "p", "label": "y", "weight": "v"}
        )


@pytest.mark.usefixtures("both_paths")
def test_zero_weight_rows_are_left_out_of_the_log_loss(tmp_path: Path) -> None:
    """A row of weight 0 whose true class had probability 0 is not there: no infinite loss
    (as in the data with each row repeated w times)."""
    path = tmp_path / "z.csv"
    path.write_text("p,y,w\n0.0,1,0\n0.25,1,2\n0.5,0,1\n")
    got = summarize_with_engine(
        str(path), engine="duckdb", columns={"probs": "p", "label": "y", "weight": "w"}
    )
    # by hand: 2 * -ln(0.25) + 1 * -ln(0.5)
    assert got.nll_sum == pytest.approx(2 * np.log(4.0) + np.log(2.0), rel=1e-12)
    assert got.brier_sum == pytest.approx(2 * 0.75**2 + 0.5**2, rel=1e-12)
    assert got.n == 3 and got.mass == 3.0


def test_weighted_quantiles_are_those_of_the_repeated_values() -> None:
    rng = np.random.default_rng(7)
    for _ in range(20):
        n = int(rng.integers(1, 40))
        x = np.round(rng.uniform(size=n), 1)
        w = rng.integers(0, 5, size=n)
        w[int(rng.integers(n))] += 1  # never all zero
        levels = np.sort(rng.uniform(size=7))
        np.testing.assert_array_equal(
            weighted_quantiles(x, w, levels), np.quantile(np.repeat(x, w), levels)
        )
