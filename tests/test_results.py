"""Every result type prints one readable line and turns into a JSON-ready dict."""

from __future__ import annotations

import json

import numpy as np

import calibkit as ck


def test_parse_results_print_and_serialise():
    c = ck.parse_confidence("I am 80% sure")
    assert c.to_dict() == {
        "value": 0.8,
        "source": "80%",
        "form": c.form,
        "reason": None,
        "option": None,
    }
    assert str(c).startswith("0.8 (")
    assert str(ck.parse_confidence("no idea")).startswith("unparsed: ")
    report = ck.parse_batch(["80%", "maybe", "0.3"])
    d = json.loads(json.dumps(report.to_dict()))
    assert (d["n"], d["n_parsed"], d["indices"], d["unparsed"]) == (3, 2, [0, 2], [1])
    assert d["values"] == [0.8, 0.3]
    assert str(report).startswith("2 of 3 replies parsed (66.7%)")


def test_bin_stats_and_reliability_rows_print_and_serialise():
    stats = ck.BinStats.from_forecasts([0.3, 0.9, 0.4], [1, 1, 0], edges=[0, 0.5, 1])
    assert "3 forecasts in 2 bins" in str(stats)
    audit = ck.audit(np.array([0.2, 0.3, 0.7, 0.9]), np.array([0, 1, 1, 1]), n_bins=2)
    rows = audit.table.rows
    first = rows[0].to_dict()
    assert first["count"] == 2 and first["acc"] == 0.5  # bin (0, 0.5]: outcomes 0 and 1
    assert json.loads(json.dumps(first))["conf"] == 0.25
    assert "n 2" in str(rows[0])


def test_the_record_prints_and_thaws():
    audit = ck.audit(np.linspace(0.05, 0.95, 200), np.arange(200) % 3 == 0, n_boot=50, n_sims=50)
    record = ck.calibration_record(audit, model="demo")
    assert str(record).startswith("calibration record of demo, recorded ")
    assert json.loads(json.dumps(record)) == record.to_dict()
