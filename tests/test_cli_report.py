"""calibkit audit --record / --html / --quiet, calibkit compare, and --quiet / --html on fit and
decide: files written, exit codes, one-line messages."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest
from typer.testing import CliRunner

import calibkit as ck
from calibkit.cli import app
from calibkit.record import read_record, record_schema, verify_record
from cli_helpers import assert_bad_input

EXAMPLES = Path(__file__).parents[1] / "examples" / "data"
DENSENET = EXAMPLES / "densenet40_cifar10_logits.npz"
FAST = ["--n-boot", "100", "--n-sims", "100"]
COLUMNS = ["--logits", "logits", "--label", "labels"]
CONTRACT = ["--model", "toy", "--outcome-definition", "argmax is the label"]
runner = CliRunner()


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def cohort(path: Path, n: int, seed: int, *, stretch: float = 1.0) -> Path:
    """An .npz of logits of a model calibrated by construction, times ``stretch``."""
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 1.5, (n, 4))
    y = (ck.softmax(z).cumsum(axis=1) < rng.random((n, 1))).sum(axis=1)
    np.savez(path, logits=stretch * z, labels=y)
    return path


def audit_record(data: Path, record: Path, *extra: object):
    return invoke("audit", data, *COLUMNS, *FAST, "--record", record, *CONTRACT, *extra)


@pytest.fixture(scope="module")
def records(tmp_path_factory) -> dict[str, Path]:
    """Records of two calibrated cohorts and of a stretched (overconfident) one."""
    folder = tmp_path_factory.mktemp("records")
    out = {}
    for name, seed, stretch in (("a", 0, 1.0), ("b", 1, 1.0), ("shifted", 2, 2.0)):
        data = cohort(folder / f"{name}.npz", 3000, seed, stretch=stretch)
        path = folder / f"{name}.json"
        result = audit_record(data, path, "--data-window", name)
        assert result.exit_code == 0, result.output
        out[name] = path
    return out


# ----------------------------------------------------------------------------- audit --record


def test_record_is_written_schema_valid(tmp_path):
    data = cohort(tmp_path / "p.npz", 800, 0)
    path = tmp_path / "record.json"
    result = audit_record(
        data,
        path,
        "--checkpoint",
        "step-100",
        "--population",
        "synthetic users",
        "--data-window",
        "2025-01",
        "--split",
        "held-out test split",
        "--split-seed",
        "7",
        "--notes",
        "a test",
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.rstrip().endswith(f"wrote calibration record to {path}")
    document = json.loads(path.read_text())
    jsonschema.Draft202012Validator(record_schema()).validate(document)
    assert document["context"] == {
        "model": "toy",
        "checkpoint": "step-100",
        "outcome_definition": "argmax is the label",
        "population": "synthetic users",
        "data_window": "2025-01",
        "notes": "a test",
    }
    assert document["split"] == {"method": "held-out test split", "seed": 7}
    assert document["data"]["scores_kind"] == "logits" and document["calibrator"] is None
    with np.load(data) as f:
        assert verify_record(read_record(path), f["logits"], f["labels"])
    # the record's numbers are the audit's
    plain = json.loads(invoke("audit", data, *COLUMNS, *FAST, "--json").stdout)
    assert document["metrics"]["ece"]["value"] == plain["ece"]
    assert document["bins"]["count"] == [row["count"] for row in plain["table"]["rows"]]


def test_record_with_json_prints_only_json(tmp_path):
    data = cohort(tmp_path / "p.npz", 500, 0)
    result = audit_record(data, tmp_path / "r.json", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["n"] == 500
    assert read_record(tmp_path / "r.json")["data"]["n"] == 500


def test_record_of_a_calibrated_file_names_its_calibrator(tmp_path):
    data = cohort(tmp_path / "p.npz", 1000, 0, stretch=2.0)
    cal = tmp_path / "t.json"
    fitted = invoke("fit", data, *COLUMNS, "--method", "temperature", "--out", cal, "-q")
    assert fitted.exit_code == 0, fitted.output
    result = audit_record(data, tmp_path / "r.json", "--calibrator", cal)
    assert result.exit_code == 0, result.output
    c = read_record(tmp_path / "r.json")["calibrator"]
    assert c["kind"] == "temperature" and c["state"]["temperature"] > 1.5
    assert "log-likelihood" in c["objective"]


def test_record_options_need_a_record(tmp_path):
    data = cohort(tmp_path / "p.npz", 200, 0)
    assert_bad_input(
        invoke("audit", data, *COLUMNS, "--model", "toy", "--population", "x"),
        "audit: --model, --population only go(es) into the calibration record; pass --record",
    )
    assert_bad_input(
        invoke("audit", data, *COLUMNS, "--record", tmp_path / "r.json", "--split-seed", "3"),
        "audit: --split-seed goes with --split",
    )
    assert_bad_input(
        invoke("audit", data, *COLUMNS, "--record", tmp_path / "no" / "r.json"),
        "audit: cannot write",
    )
    assert_bad_input(
        invoke("audit", data, *COLUMNS, "--record", tmp_path / "r.json", "--calibrator", data),
        "load calibrator",
    )
    assert not (tmp_path / "r.json").exists()


# ----------------------------------------------------------------------------- --quiet


def test_audit_quiet_prints_only_the_verdict(tmp_path):
    data = cohort(tmp_path / "p.npz", 500, 0)
    quiet = invoke("audit", data, *COLUMNS, *FAST, "--quiet")
    full = json.loads(invoke("audit", data, *COLUMNS, *FAST, "--json").stdout)
    assert quiet.exit_code == 0, quiet.output
    assert quiet.stdout.splitlines() == [full["verdict"]]
    with_record = audit_record(data, tmp_path / "r.json", "-q")
    assert with_record.stdout.splitlines() == [full["verdict"]]
    assert (tmp_path / "r.json").exists()


def test_quiet_and_json_do_not_mix(tmp_path, records):
    data = cohort(tmp_path / "p.npz", 200, 0)
    message = "--quiet and --json both choose what is printed"
    assert_bad_input(invoke("audit", data, *COLUMNS, "--quiet", "--json"), message)
    assert_bad_input(
        invoke(
            "fit",
            data,
            *COLUMNS,
            "--method",
            "temperature",
            "--out",
            tmp_path / "t.json",
            "-q",
            "--json",
        ),
        message,
    )
    assert_bad_input(
        invoke("decide", data, *COLUMNS, "--wrong-cost", "10", "--defer-cost", "1", "-q", "--json"),
        message,
    )
    assert_bad_input(invoke("compare", records["a"], records["b"], "-q", "--json"), message)


def test_fit_and_decide_quiet_print_one_line(tmp_path):
    data = cohort(tmp_path / "p.npz", 1000, 0, stretch=2.0)
    out = tmp_path / "t.json"
    fit = invoke(
        "fit", data, *COLUMNS, "--method", "temperature", "--out", out, "--n-sims", "100", "--quiet"
    )
    assert fit.exit_code == 0, fit.output
    [line] = fit.stdout.splitlines()
    assert line.startswith("TemperatureScaling (temperature) on 4-class logits: ECE ")
    assert f"held-out rows; wrote {out}." in line and out.exists()
    decide = invoke("decide", data, *COLUMNS, "--wrong-cost", "10", "--defer-cost", "1", "-q")
    assert decide.exit_code == 0, decide.output
    [line] = decide.stdout.splitlines()
    assert line.startswith("act when confidence >= ") and "deferring everything costs" in line


# ----------------------------------------------------------------------------- compare


def test_compare_within_noise(records):
    result = invoke("compare", records["a"], records["b"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("calibkit compare\nold: toy, a, recorded ")
    assert "noise band" in out and "d acc [95% CI]" in out
    assert "calibration within noise: ECE" in out
    assert "differs: data_window: 'a' -> 'b'" in out


def test_compare_flags_a_shifted_cohort_and_exits_0(records):
    result = invoke("compare", records["a"], records["shifted"])
    assert result.exit_code == 0, result.output
    assert "calibration moved beyond noise (worse)" in result.stdout
    assert "away" in result.stdout


def test_compare_quiet_and_json(records):
    quiet = invoke("compare", records["a"], records["shifted"], "--quiet")
    assert quiet.exit_code == 0
    [line] = quiet.stdout.splitlines()
    assert line.startswith("calibration moved beyond noise (worse): ECE ")
    as_json = invoke("compare", records["a"], records["shifted"], "--json")
    d = json.loads(as_json.stdout)
    assert d["moved"] is True and d["n_bins_moved"] >= 1 and d["verdict"] == line
    assert d["noise_band"]["n_sims"] == 2000
    fewer = json.loads(
        invoke(
            "compare", records["a"], records["b"], "--json", "--n-sims", "300", "--seed", "2"
        ).stdout
    )
    assert fewer["moved"] is False and fewer["noise_band"]["n_sims"] == 300


def test_compare_refuses_other_binning_with_the_reason(tmp_path, records):
    data = cohort(tmp_path / "p.npz", 500, 3)
    ten = tmp_path / "ten.json"
    assert audit_record(data, ten, "--bins", "10").exit_code == 0
    assert_bad_input(
        invoke("compare", records["a"], ten),
        "refusing to compare: the bin edges differ (old: 15 uniform bins, right-closed; new: "
        "10 uniform bins, right-closed)",
    )
    other = tmp_path / "other.json"
    result = invoke(
        "audit",
        data,
        *COLUMNS,
        *FAST,
        "--record",
        other,
        "--model",
        "toy",
        "--outcome-definition",
        "top-5 contains the label",
    )
    assert result.exit_code == 0
    assert_bad_input(
        invoke("compare", records["a"], other), "refusing to compare: the outcome definitions"
    )


def test_compare_unreadable_records(tmp_path, records):
    assert_bad_input(invoke("compare", records["a"], tmp_path / "missing.json"), "no such file")
    bad = tmp_path / "bad.json"
    document = json.loads(records["b"].read_text())
    document["metrics"]["ece"]["value"] = "low"
    bad.write_text(json.dumps(document))
    assert_bad_input(
        invoke("compare", records["a"], bad), "metrics.ece.value must be a number or null"
    )
    (tmp_path / "text.json").write_text("hello")
    assert_bad_input(invoke("compare", tmp_path / "text.json", records["a"]), "not valid JSON")


# ----------------------------------------------------------------------------- --html


def test_html_without_the_report_module_fails_clearly(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "calibkit.report.html", None)
    data = cohort(tmp_path / "p.npz", 200, 0)
    message = "--html needs calibkit.report.html"
    assert_bad_input(invoke("audit", data, *COLUMNS, "--html", tmp_path / "r.html"), message)
    assert_bad_input(
        invoke(
            "fit",
            data,
            *COLUMNS,
            "--method",
            "temperature",
            "--out",
            tmp_path / "t.json",
            "--html",
            tmp_path / "r.html",
        ),
        message,
    )
    assert_bad_input(
        invoke(
            "decide",
            data,
            *COLUMNS,
            "--wrong-cost",
            "10",
            "--defer-cost",
            "1",
            "--html",
            tmp_path / "r.html",
        ),
        message,
    )
    assert list(tmp_path.iterdir()) == [tmp_path / "p.npz"]  # nothing written


def test_audit_html_embeds_the_record(tmp_path):
    pytest.importorskip("calibkit.report.html")
    data = cohort(tmp_path / "p.npz", 600, 0)
    page, record = tmp_path / "report.html", tmp_path / "r.json"
    result = audit_record(data, record, "--html", page)
    assert result.exit_code == 0, result.output
    assert result.stdout.rstrip().endswith(f"wrote HTML report to {page}")
    html = page.read_text()
    assert html.lstrip().lower().startswith("<!doctype html")
    digest = read_record(record)["digest"]["value"]
    assert digest in html  # the page embeds the very record that was written
    assert "argmax is the label" in html
    only_html = invoke("audit", data, *COLUMNS, *FAST, "--html", tmp_path / "b.html", "-q")
    assert only_html.exit_code == 0 and len(only_html.stdout.splitlines()) == 1


def test_fit_and_decide_html(tmp_path):
    pytest.importorskip("calibkit.report.html")
    data = cohort(tmp_path / "p.npz", 1000, 0, stretch=2.0)
    fit = invoke(
        "fit",
        data,
        *COLUMNS,
        "--method",
        "temperature",
        "--out",
        tmp_path / "t.json",
        "--n-sims",
        "100",
        "--html",
        tmp_path / "fit.html",
    )
    assert fit.exit_code == 0, fit.output
    assert "<html" in (tmp_path / "fit.html").read_text().lower()
    decide = invoke(
        "decide",
        data,
        *COLUMNS,
        "--wrong-cost",
        "10",
        "--defer-cost",
        "1",
        "--html",
        tmp_path / "decide.html",
    )
    assert decide.exit_code == 0, decide.output
    assert "<html" in (tmp_path / "decide.html").read_text().lower()
    assert decide.stdout.rstrip().endswith(f"wrote HTML report to {tmp_path / 'decide.html'}")


def test_html_to_a_missing_folder(tmp_path):
    pytest.importorskip("calibkit.report.html")
    data = cohort(tmp_path / "p.npz", 200, 0)
    assert_bad_input(
        invoke("audit", data, *COLUMNS, "--html", tmp_path / "no" / "r.html"),
        "audit: cannot write",
    )
