"""The command line at scale: ``audit --engine``, ``fit --engine``, ``calibkit monitor``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import calibkit as ck
from calibkit.cli import app

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cli_helpers import assert_bad_input  # noqa: E402

runner = CliRunner()
WEEKS, PER_WEEK, CLASSES = 6, 1500, 4


@pytest.fixture(scope="module")
def log(tmp_path_factory) -> tuple[Path, np.ndarray, np.ndarray, np.ndarray]:
    """Six weeks of 4-class logits, calibrated for three weeks, then doubled (T = 2)."""
    rng = np.random.default_rng(5)
    n = WEEKS * PER_WEEK
    z = rng.normal(0.0, 1.5, (n, CLASSES))
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    y = (p.cumsum(axis=1) < rng.random((n, 1))).sum(axis=1)
    week = np.repeat(np.arange(WEEKS), PER_WEEK)
    logged = z * np.where(week >= 3, 2.0, 1.0)[:, None]
    ts = np.datetime64("2025-06-02T00:00:00") + (
        week * 7 * 86400 + rng.integers(0, 7 * 86400, n)
    ).astype("timedelta64[s]")
    columns = {f"logit_{k}": logged[:, k] for k in range(CLASSES)}
    columns.update(label=y, ts=ts)
    path = tmp_path_factory.mktemp("scale") / "log.parquet"
    pq.write_table(pa.table(columns), path)
    return path, logged, y, week


def _json(args: list[str]) -> dict:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.parametrize("engine", ["stream", "duckdb"])
def test_audit_engine_gives_the_in_memory_numbers(log, engine):
    path, z, y, _ = log
    memory = _json(["audit", str(path), "--json", "--n-boot", "200", "--n-sims", "200"])
    scaled = _json(
        ["audit", str(path), "--engine", engine, "--json", "--n-boot", "200", "--n-sims", "200"]
    )
    for key in ("ece", "mce", "brier", "nll", "accuracy", "classwise_ece", "mean_confidence"):
        assert scaled[key] == pytest.approx(memory[key], rel=1e-12, abs=1e-15), key
    assert scaled["n"] == memory["n"] == z.shape[0]
    counts = [[row["count"] for row in d["table"]["rows"]] for d in (scaled, memory)]
    assert counts[0] == counts[1]
    assert memory["ece"] == pytest.approx(ck.ece(*ck.top_label(ck.softmax(z), y)), rel=1e-12)
    if engine == "duckdb":
        assert scaled["auc"] == pytest.approx(memory["auc"], rel=1e-12)


def test_audit_engine_spark(log, spark):
    path, _, _, _ = log
    memory = _json(["audit", str(path), "--json", "--n-boot", "100", "--n-sims", "100"])
    scaled = _json(
        ["audit", str(path), "--engine", "spark", "--json", "--n-boot", "100", "--n-sims", "100"]
    )
    for key in ("ece", "brier", "nll", "auc", "accuracy"):
        assert scaled[key] == pytest.approx(memory[key], rel=1e-12), key


def test_audit_engine_bad_input_is_one_line(tmp_path):
    path = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"p": [0.2, float("nan"), 0.9], "y": [0, 1, 1]}), path)
    result = runner.invoke(
        app, ["audit", str(path), "--engine", "duckdb", "--probs", "p", "--label", "y"]
    )
    assert_bad_input(result, "NaN values: 1 row of 3")


def test_fit_engine_writes_the_in_memory_temperature(log, tmp_path):
    path, z, y, _ = log
    out = tmp_path / "t.json"
    info = _json(["fit", str(path), "--engine", "duckdb", "--method", "temperature",
                  "--out", str(out), "--json"])  # fmt: skip
    expected = ck.fit_temperature(z, y)
    assert info["temperature"] == pytest.approx(expected, rel=1e-9)
    loaded = ck.load_calibrator(out)
    assert loaded.temperature_ == pytest.approx(expected, rel=1e-9)
    # the saved map is usable: its probabilities are the softmax of z / T
    np.testing.assert_allclose(loaded.predict_proba(z[:5]), ck.softmax(z[:5] / expected))
    assert info["nll_after"] < info["nll_before"]


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--method", "platt"], "pass --method temperature"),
        (["--method", "temperature", "--folds", "5"], "leave out --folds"),
    ],
)
def test_fit_engine_refuses_what_it_cannot_do(log, tmp_path, extra, match):
    path, _, _, _ = log
    result = runner.invoke(
        app, ["fit", str(path), "--engine", "duckdb", "--out", str(tmp_path / "t.json"), *extra]
    )
    assert_bad_input(result, match)


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_monitor_flags_the_drifted_weeks(log, tmp_path, engine):
    path, _, _, _ = log
    plot = tmp_path / f"monitor-{engine}.png"
    report = _json(["monitor", str(path), "--by", "week", "--engine", engine, "--json",
                    "--n-sims", "1000", "--plot", str(plot)])  # fmt: skip
    assert report["flagged"] == ["2025-06-23", "2025-06-30", "2025-07-07"]
    assert [g["group"] for g in report["groups"]][0] == "2025-06-02"
    temperatures = [g["temperature"] for g in report["groups"]]
    assert all(abs(t - 1.0) < 0.15 for t in temperatures[:3])
    assert all(abs(t - 2.0) < 0.25 for t in temperatures[3:])
    assert plot.stat().st_size > 10_000
    assert report["engine"] == engine


def test_monitor_table_and_quiet(log):
    path, _, _, _ = log
    result = runner.invoke(app, ["monitor", str(path), "--by", "week", "--n-sims", "500"])
    assert result.exit_code == 0, result.output
    assert result.stdout.count("MOVED") == 3
    assert "first at 2025-06-23" in result.stdout
    quiet = runner.invoke(app, ["monitor", str(path), "--by", "week", "--quiet"])
    assert quiet.stdout.strip().startswith("3 of 5 groups moved beyond noise")


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--reference", "1999-01-01"], "no group '1999-01-01'"),
        (["--engine", "stream"], "not offered for monitoring"),
        (["--by", "region"], "neither a column"),
    ],
)
def test_monitor_bad_input_is_one_line(log, extra, match):
    path, _, _, _ = log
    args = ["monitor", str(path), "--by", "week", *extra]
    if "--by" in extra:
        args = ["monitor", str(path), *extra]
    assert_bad_input(runner.invoke(app, args), match)


def test_monitor_table_reads_at_80_columns_with_accuracy_and_confidence(log):
    path, _, y, week = log
    narrow = CliRunner(env={"COLUMNS": "80"}).invoke(
        app, ["monitor", str(path), "--by", "week", "--n-sims", "200"]
    )
    assert narrow.exit_code == 0, narrow.output
    lines = narrow.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    header = next(line for line in lines if line.startswith("group"))
    assert header.split() == ["group", "N", "acc", "conf", "ECE", "floor", "T", "change"]
    first = next(line for line in lines if line.startswith("2025-06-02"))
    # the first week's accuracy worked out here (argmax of the logged logits vs the labels)
    _, logged, labels, _ = log
    right = logged[week == 0].argmax(axis=1) == labels[week == 0]
    assert first.split()[1:3] == [str(PER_WEEK), f"{right.mean():.3f}"]
    wide = CliRunner(env={"COLUMNS": "140"}).invoke(
        app, ["monitor", str(path), "--by", "week", "--n-sims", "200", "--wide"]
    )
    assert "noise band" in wide.stdout and "interval" in wide.stdout


def test_monitor_says_when_an_option_would_be_ignored(log, tmp_path):
    path, logged, y, week = log
    # --time with a grouping by a column: the time column would be ignored
    args = ["monitor", str(path), "--by", "label", "--time", "ts"]
    assert_bad_input(runner.invoke(app, args), "--time) goes with by='day', 'week' or 'month'")
    # a column literally named week, and --time: the week of ts is used, and the user told
    table = pq.read_table(path).append_column("week", pa.array(week % 2))
    both = tmp_path / "both.parquet"
    pq.write_table(table, both)
    with pytest.warns(ck.CalibkitWarning, match="'week' is also the name of a column"):
        m = ck.monitor(str(both), by="week", time="ts", n_sims=200, temperature=False)
    assert len(m.groups) == WEEKS
    by_column = ck.monitor(str(both), by="week", n_sims=200, temperature=False)
    assert [g.group for g in by_column.groups] == [0, 1]


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_monitor_passes_format_to_every_engine(tmp_path, engine):
    rng = np.random.default_rng(3)
    p = rng.uniform(0, 1, 2000)
    rows = "".join(
        f"{a:.6f},{int(b)},{int(c)}\n"
        for a, b, c in zip(p, rng.random(2000) < p, rng.integers(0, 2, 2000), strict=True)
    )
    path = tmp_path / "log.txt"  # an extension that does not say CSV
    path.write_text("proba,label,seg\n" + rows)
    result = runner.invoke(
        app, ["monitor", str(path), "--by", "seg", "--format", "csv", "--engine", engine, "-q"]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("no group moved beyond noise")
