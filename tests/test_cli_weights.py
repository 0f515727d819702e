"""The command line with a weight column: calibkit audit, monitor, fit and decide --weight COLUMN.

audit has no split, so the weighted run equals the run on the file with each row repeated w
times (memory and DuckDB). fit and decide split the rows, and a file's repeated copies would be
split independently (a copy on each side), so their oracle is the split the weighted run drew:
its two halves, each with its rows repeated, given to the library functions directly."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pytest
from typer.testing import CliRunner

import calibkit as ck
from calibkit.cli import app
from calibkit.decide.decision_report import decision_report
from calibkit.decide.policy import policy_table
from calibkit.recalibrate.base import load_calibrator
from calibkit.recalibrate.ledger import compare_calibration
from calibkit.recalibrate.split import stratified_split
from cli_helpers import assert_bad_input

runner = CliRunner()
RTOL = 1e-8
#: keys whose numbers are intervals, bounds or noise floors (Kish's effective size, or each row
#: keeping its weight): not the repeated rows' numbers by design
NOT_POINT_ESTIMATES = {"noise_floor", "ece_interval", "interval", "bound", "effective_n"}


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def _data(n: int = 240, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    s = rng.normal(-0.3, 2.0, n)
    y = (rng.random(n) < 1 / (1 + np.exp(-s))).astype(np.int64)
    return 3.0 * s, y, rng.integers(0, 4, n)


def _csv(path: Path, columns: dict[str, np.ndarray]) -> Path:
    pcsv.write_csv(pa.table({k: pa.array(np.asarray(v)) for k, v in columns.items()}), path)
    return path


def _floats(doc: Any, path: str = "") -> dict[str, float]:
    """The float leaves of a JSON document by path (ints are row counts; intervals left out)."""
    out: dict[str, float] = {}
    if isinstance(doc, dict):
        for key, value in doc.items():
            if key not in NOT_POINT_ESTIMATES:
                out.update(_floats(value, f"{path}.{key}"))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            out.update(_floats(value, f"{path}[{i}]"))
    elif isinstance(doc, float):
        out[path] = doc
    return out


def _assert_point_estimates_equal(weighted: dict, repeated: dict, *, skip: tuple = ()) -> None:
    """Every float of the repeated rows' document is the weighted document's, to RTOL."""
    got, want = _floats(weighted), _floats(repeated)
    checked = 0
    for key, value in want.items():
        if any(s in key for s in skip):
            continue
        assert key in got, key
        assert got[key] == pytest.approx(value, rel=RTOL, abs=1e-12), key
        checked += 1
    assert checked >= 10


# ----------------------------------------------------------------------------- audit


def test_audit_weight_equals_the_repeated_rows_in_memory_and_with_duckdb(tmp_path):
    z, y, w = _data()
    p = 1 / (1 + np.exp(-z / 3))
    weighted = _csv(tmp_path / "w.csv", {"p": p, "label": y, "w": w})
    repeated = _csv(tmp_path / "r.csv", {"p": np.repeat(p, w), "label": np.repeat(y, w)})
    fast = ("--n-sims", 20, "--n-boot", 20, "--json")
    want = json.loads(invoke("audit", repeated, "--probs", "p", *fast).stdout)
    for engine in ("memory", "duckdb"):
        result = invoke(
            "audit", weighted, "--probs", "p", "--weight", "w", "--engine", engine, *fast
        )
        assert result.exit_code == 0, result.output
        got = json.loads(result.stdout)
        for key in ("ece", "mce", "brier", "nll", "auc", "accuracy"):
            assert got[key] == pytest.approx(want[key], rel=1e-9), (engine, key)
        assert got["n"] == y.size and got["total_weight"] == pytest.approx(want["n"])


def test_audit_refuses_a_negative_weight_cell_in_one_line(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("p,label,w\n0.2,0,1\n0.7,1,-2\n0.9,1,1\n")
    for engine in ("memory", "duckdb"):
        result = invoke("audit", path, "--probs", "p", "--weight", "w", "--engine", engine)
        assert_bad_input(result, "'w'")
        assert "negative" in result.stderr


# ----------------------------------------------------------------------------- fit


@pytest.mark.parametrize("method", ["temperature", "platt", "isotonic"])
def test_fit_weight_equals_the_ledger_of_the_repeated_halves(tmp_path, method):
    z, y, w = _data(seed=1)
    path = _csv(tmp_path / "w.csv", {"logit": z, "label": y, "w": w})
    out = tmp_path / "map.json"
    result = invoke(
        "fit", path, "--logits", "logit", "--weight", "w", "--method", method, "--out", out,
        "--n-sims", 50, "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    cal, held = stratified_split(y, seed=0)
    make = {"temperature": ck.TemperatureScaling, "platt": ck.PlattScaling}
    calibrator = make[method]() if method in make else ck.IsotonicCalibration()
    x = z  # every map reads the logit column as the model's scores
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ck.CalibkitWarning)
        want = compare_calibration(
            calibrator, np.repeat(x[cal], w[cal]), np.repeat(y[cal], w[cal]),
            eval_scores=np.repeat(x[held], w[held]), eval_labels=np.repeat(y[held], w[held]),
            n_sims=50,
        ).to_dict()  # fmt: skip
    _assert_point_estimates_equal(got, want, skip=("gradient", "objective", "fitted_on"))
    assert (got["n_fit"], got["n_eval"]) == (cal.size, held.size)
    assert (got["weight_fit"], got["weight_eval"]) == (want["n_fit"], want["n_eval"])
    # the saved map is a map like any other: the unweighted fit's JSON, keys and all
    saved = json.loads(out.read_text())
    plain = tmp_path / "plain.json"
    assert (
        invoke("fit", path, "--logits", "logit", "--method", method, "--out", plain).exit_code == 0
    )
    assert saved.keys() == json.loads(plain.read_text()).keys()
    assert "w" not in json.dumps(saved["state"]).split('"')  # no weight column in the map
    loaded = load_calibrator(out)
    np.testing.assert_allclose(
        loaded.predict_proba(z[:20]),
        compare_calibration(
            calibrator, np.repeat(x[cal], w[cal]), np.repeat(y[cal], w[cal]),
            eval_scores=x[held], eval_labels=y[held], n_sims=10,
        ).calibrator.predict_proba(z[:20]),
        rtol=1e-7,
    )  # fmt: skip


def test_fit_weight_bad_cells_and_refused_combinations_are_one_line(tmp_path):
    z, y, w = _data(60, seed=2)
    good = _csv(tmp_path / "good.csv", {"logit": z, "label": y, "w": w + 1})
    bad = tmp_path / "bad.csv"
    bad.write_text("logit,label,w\n0.5,1,1\n-0.3,0,-2\n1.0,1,1\n-1.0,0,1\n")
    out = tmp_path / "m.json"
    base = ("--logits", "logit", "--method", "temperature", "--out", out)
    result = invoke("fit", bad, *base, "--weight", "w")
    assert_bad_input(result, "'w'")
    assert "negative" in result.stderr
    text = tmp_path / "text.csv"
    text.write_text("logit,label,w\n0.5,1,1\n-0.3,0,2\n1.0,1,heavy\n-1.0,0,1\n")
    assert_bad_input(invoke("fit", text, *base, "--weight", "w"), "row 2: 'heavy'")
    assert_bad_input(invoke("fit", good, *base, "--weight", "nope"), "nope")
    result = invoke("fit", good, *base, "--weight", "w", "--html", tmp_path / "r.html")
    assert_bad_input(result, "--html draws the held-out reliability diagrams unweighted")
    assert not out.exists()


def test_fit_weight_with_duckdb_fits_the_weighted_temperature(tmp_path):
    z, y, w = _data(300, seed=3)
    path = _csv(tmp_path / "w.csv", {"logit": z, "label": y, "w": w})
    out = tmp_path / "m.json"
    result = invoke(
        "fit",
        path,
        "--logits",
        "logit",
        "--method",
        "temperature",
        "--out",
        out,
        "--weight",
        "w",
        "--engine",
        "duckdb",
    )
    assert result.exit_code == 0, result.output
    repeated = ck.fit_temperature(np.repeat(z, w), np.repeat(y, w))
    assert load_calibrator(out).temperature_ == pytest.approx(repeated, rel=1e-9)


# ----------------------------------------------------------------------------- decide


def test_decide_weight_equals_the_tables_of_the_repeated_halves(tmp_path):
    z, y, w = _data(seed=3)
    p = 1 / (1 + np.exp(-z / 3))
    path = _csv(tmp_path / "w.csv", {"logit": z, "p": p, "label": y, "w": w})
    costs = ("--wrong-cost", 10, "--defer-cost", 1, "--ask-cost", 2, "--ask-wrong-cost", 5)
    cal, held = stratified_split(y, seed=0)

    def halves(x: np.ndarray) -> tuple[np.ndarray, ...]:
        return (np.repeat(x[cal], w[cal]), np.repeat(y[cal], w[cal]),
                np.repeat(x[held], w[held]), np.repeat(y[held], w[held]))  # fmt: skip

    result = invoke("decide", path, "--logits", "logit", "--weight", "w", *costs, "--json")
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    want = decision_report(*halves(z), l_wrong=10, l_defer=1).to_dict()
    _assert_point_estimates_equal(got["policy_table"], want)
    assert got["split"]["n_choose"] == cal.size
    assert got["split"]["weight_choose"] == w[cal].sum()
    assert got["split"]["weight_report"] == w[held].sum()
    a, b, c, d = halves(z)
    choice = ck.choose_actions(
        probs=a, labels=b, from_logits=True, l_wrong=10, l_defer=1, l_ask=2, l_ask_wrong=5
    )
    want_actions = {
        **choice.to_dict(),
        "on_reporting_half": choice.evaluate(probs=c, labels=d, from_logits=True).to_dict(),
    }
    _assert_point_estimates_equal(got["actions"], want_actions)

    result = invoke("decide", path, "--probs", "p", "--weight", "w", *costs[:4], "--json")
    assert result.exit_code == 0, result.output
    a, b, c, d = halves(p)
    want = policy_table(probs=a, labels=b, eval_probs=c, eval_labels=d, l_wrong=10, l_defer=1)
    _assert_point_estimates_equal(json.loads(result.stdout)["policy_table"], want.to_dict())


def test_decide_weight_binary_costs_equal_the_repeated_halves(tmp_path):
    z, y, w = _data(seed=4)
    p = 1 / (1 + np.exp(-z / 3))
    path = _csv(tmp_path / "w.csv", {"p": p, "label": y, "w": w})
    result = invoke(
        "decide", path, "--probs", "p", "--weight", "w", "--false-positive-cost", 1,
        "--false-negative-cost", 4, "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    cal, held = stratified_split(y, seed=0)
    want = ck.binary_policy_table(
        np.repeat(p[cal], w[cal]), np.repeat(y[cal], w[cal]), np.repeat(p[held], w[held]),
        np.repeat(y[held], w[held]), l_false_positive=1, l_false_negative=4,
    )  # fmt: skip
    _assert_point_estimates_equal(json.loads(result.stdout)["binary_policy"], want.to_dict())


def test_decide_weight_bad_cells_are_one_line(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("p,label,w\n0.2,0,1\n0.7,1,1\n0.9,1,inf\n0.4,0,1\n")
    result = invoke("decide", bad, "--probs", "p", "--weight", "w", "--wrong-cost", 10,
                    "--defer-cost", 1)  # fmt: skip
    assert_bad_input(result, "'w'")
    empty = tmp_path / "empty.csv"
    empty.write_text("p,label,w\n0.2,0,1\n0.7,1,\n0.9,1,1\n0.4,0,1\n")
    result = invoke("decide", empty, "--probs", "p", "--weight", "w", "--wrong-cost", 10,
                    "--defer-cost", 1)  # fmt: skip
    assert_bad_input(result, "'w'")
    assert "row 1" in result.stderr


# ----------------------------------------------------------------------------- monitor


def test_monitor_weight_equals_the_repeated_rows_on_every_engine(tmp_path):
    z, y, w = _data(n=600)
    p = 1 / (1 + np.exp(-z / 3))
    week = np.arange(y.size) % 3 + 1
    weighted = _csv(tmp_path / "w.csv", {"p": p, "label": y, "w": w, "week": week})
    repeated = _csv(
        tmp_path / "r.csv",
        {"p": np.repeat(p, w), "label": np.repeat(y, w), "week": np.repeat(week, w)},
    )
    common = ("--by", "week", "--probs", "p", "--label", "label", "--json")
    want = json.loads(invoke("monitor", repeated, *common).stdout)
    for engine in ("memory", "duckdb"):
        result = invoke("monitor", weighted, *common, "--weight", "w", "--engine", engine)
        assert result.exit_code == 0, result.output
        got = json.loads(result.stdout)
        for g, r in zip(got["groups"], want["groups"], strict=True):
            assert g["group"] == r["group"]
            for key in ("ece", "accuracy", "mean_confidence"):
                assert g[key] == pytest.approx(r[key], rel=1e-9), (engine, key)
            assert g["n"] == int(np.sum(week == g["group"]))  # raw rows beside the weight


def test_monitor_refuses_a_negative_weight_cell_in_one_line(tmp_path):
    path = _csv(
        tmp_path / "bad.csv",
        {
            "p": [0.2, 0.7, 0.9, 0.4],
            "label": [0, 1, 1, 0],
            "w": [1.0, -2.0, 1.0, 1.0],
            "week": [1, 1, 2, 2],
        },
    )
    result = invoke(
        "monitor", path, "--by", "week", "--probs", "p", "--label", "label", "--weight", "w"
    )
    assert_bad_input(result, r"weight column 'w' has negative values")
