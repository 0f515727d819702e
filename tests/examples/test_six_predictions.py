"""examples/six_predictions.py: six predictions whose NLL improves under temperature scaling while
four-bin ECE gets worse (T = 1.22975, NLL 0.82278 -> 0.81243, ECE 0.129 -> 0.380), and a record
that validates and verifies against the six rows."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from example_loader import EXAMPLES, load_example

import calibkit as ck

SCRIPT = EXAMPLES / "six_predictions.py"


@pytest.fixture(scope="module")
def example():
    return load_example("six_predictions")


@pytest.fixture(scope="module")
def results(example, tmp_path_factory):
    return example.run(tmp_path_factory.mktemp("six_predictions"))


def test_worked_numbers(results):
    assert round(results.temperature, 5) == 1.22975
    assert round(results.temperature_function, 5) == 1.22975
    assert results.converged
    assert round(results.nll_before, 5) == 0.82278
    assert round(results.nll_after, 5) == 0.81243
    assert round(results.ece_before, 3) == 0.129
    assert round(results.ece_after, 3) == 0.380


def test_accuracy_and_predictions_unchanged(results):
    assert results.accuracy_before == results.accuracy_after == 4 / 6
    np.testing.assert_array_equal(results.predicted_before, results.predicted_after)
    np.testing.assert_array_equal(results.before.outcome, results.after.outcome)


def test_four_bin_table(results):
    # the bin statistics behind the two reliability diagrams
    before = [(r.count, round(r.conf, 3), round(r.acc, 3)) for r in results.table_before.rows]
    after = [(r.count, round(r.conf, 3), round(r.acc, 3)) for r in results.table_after.rows]
    assert [row[0] for row in before] == [0, 0, 3, 3]
    assert before[2:] == [(3, 0.574, 0.667), (3, 0.831, 0.667)]
    assert after[1:] == [(1, 0.496, 0.0), (3, 0.604, 1.0), (2, 0.8, 0.5)]
    # each row's confidence at the fitted T
    assert np.round(results.after.confidence, 3).tolist() == [
        0.779,
        0.701,
        0.821,
        0.537,
        0.575,
        0.496,
    ]


def test_sweep_has_the_four_bin_row_and_quantile_bins(results):
    rows = {(r.n_bins, r.strategy): r for r in results.sweep}
    four = rows[(4, "uniform")]
    assert (round(four.ece_before, 3), round(four.ece_after, 3)) == (0.129, 0.380)
    assert any(strategy == "quantile" for _, strategy in rows)
    # one bin: ECE is |mean confidence - accuracy|, which scaling moves toward 4/6
    one = rows[(1, "uniform")]
    assert one.ece_after < one.ece_before
    assert rows[(1, "quantile")].ece_after == pytest.approx(one.ece_after)
    # with six rows every value is within a calibrated forecaster's 95th percentile
    assert all(r.ece_after <= r.p95_after and r.ece_before <= r.p95_before for r in results.sweep)


def test_record_validates_and_verifies(results, example):
    path = results.record_path
    assert path.name == "six_predictions_record.json"
    record = ck.read_record(path)  # checked against the JSON Schema
    jsonschema = pytest.importorskip("jsonschema")
    from calibkit.record import record_schema

    jsonschema.validate(json.loads(path.read_text()), record_schema())

    assert bool(ck.verify_record(record, example.LOGITS, example.LABELS))
    assert not results.check_changed_label
    # what a record must name: the unscaled scores, the map and its objective, the bins
    assert record["data"]["scores_kind"] == "logits"
    assert record["data"]["fingerprint"]["scores"]["shape"] == [6, 3]
    assert record["calibrator"]["kind"] == "temperature"
    assert round(record["calibrator"]["state"]["temperature"], 5) == 1.22975
    assert "log-likelihood" in record["calibrator"]["objective"]
    assert record["binning"]["edges"] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert record["binning"]["closed"] == "left"
    assert record["bins"]["count"] == [0, 1, 3, 2]
    assert round(record["metrics"]["nll"]["value"], 5) == 0.81243
    assert round(record["metrics"]["ece"]["value"], 3) == 0.380
    for field in ("model", "checkpoint", "outcome_definition", "population", "data_window"):
        assert record["context"][field]
    assert record["split"]["method"]


def test_edited_record_fails_verification(results, example):
    record = ck.read_record(results.record_path).to_dict()
    record["metrics"]["ece"]["value"] = 0.129
    check = ck.verify_record(record, example.LOGITS, example.LABELS)
    assert not check and check.data_matches and not check.record_intact


def test_main_prints_the_sections_and_writes_to_out(example, tmp_path, capsys):
    assert example.main(["--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    for heading in (
        "one temperature fitted against their labels",
        "ECE compresses a reliability diagram",
        "Better likelihood, worse ECE",
        "A calibrator belongs to one measurement contract",
    ):
        assert heading in text
    assert "fitted T     1.22975" in text
    assert "mean NLL     0.82278 -> 0.81243" in text
    assert "four-bin ECE 0.129 -> 0.380" in text
    assert "record verified" in text
    assert (tmp_path / "six_predictions_record.json").is_file()
    assert f"record: {tmp_path / 'six_predictions_record.json'}" in text


def test_script_runs_from_the_command_line(tmp_path):
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert (tmp_path / "out" / "six_predictions_record.json").is_file()
    assert "T = 1.22975" in done.stdout
