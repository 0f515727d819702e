"""The calibkit command line: audit of each format, --json, exit codes, the terminal report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from typer.testing import CliRunner

import calibkit as ck
from calibkit.cli import app
from calibkit.report.terminal import render_audit
from cli_helpers import assert_bad_input


def _data(n: int = 120, c: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    probs = ck.softmax(rng.normal(0, 2, (n, c)))
    return probs, np.array([rng.choice(c, p=row) for row in probs])


def prob_columns(probs: np.ndarray, prefix: str = "prob_") -> dict[str, np.ndarray]:
    return {f"{prefix}{j}": probs[:, j] for j in range(probs.shape[1])}


def write(path: Path, columns: dict) -> Path:
    """Write named columns (numpy arrays or lists) in the format the extension says."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    if path.suffix == ".npz":
        np.savez(path, **{k: np.asarray(v) for k, v in columns.items()})
        return path
    table = pa.table({k: pa.array(np.asarray(v)) for k, v in columns.items()})
    if path.suffix == ".parquet":
        pq.write_table(table, path)
    elif path.suffix == ".jsonl":
        rows = table.to_pylist()
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    else:
        delimiter = "\t" if path.suffix == ".tsv" else ","
        pcsv.write_csv(table, path, pcsv.WriteOptions(delimiter=delimiter, quoting_style="none"))
    return path


EXAMPLES = Path(__file__).parents[1] / "examples" / "data"
FAST = ["--n-boot", "200", "--n-sims", "200"]
runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, ["audit", *map(str, args)])


# ----------------------------------------------------------------------------- success


@pytest.mark.parametrize("ext", [".csv", ".tsv", ".parquet", ".jsonl", ".npz"])
def test_audit_each_format(tmp_path, ext):
    probs, labels = _data()
    columns = (
        {"probs": probs, "labels": labels}
        if ext == ".npz"
        else {**prob_columns(probs), "label": labels}
    )
    result = invoke(write(tmp_path / f"p{ext}", columns), *FAST)
    assert result.exit_code == 0, result.output
    a = ck.audit(probs, labels, n_boot=200, n_sims=200)
    assert f"N = {a.n} top-label forecasts of a 3-class model" in result.stdout
    assert "95% wilson" in result.stdout
    assert f"{a.ece:.4f}" in result.stdout
    assert a.verdict()[:40] in " ".join(result.stdout.split())


def test_json_is_the_audit_and_nothing_else(tmp_path):
    probs, labels = _data(n=300)
    path = write(tmp_path / "p.parquet", {**prob_columns(probs), "label": labels})
    result = invoke(path, "--json", "--bins", "10", *FAST)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    conf, outcome = ck.top_label(probs, labels)
    assert out["ece"] == ck.ece(conf, outcome, n_bins=10)
    assert out == json.loads(
        json.dumps(ck.audit(probs, labels, n_bins=10, n_boot=200, n_sims=200).to_dict())
    )
    assert result.stderr == ""


def test_options_reach_the_audit(tmp_path):
    probs, labels = _data(n=300)
    path = write(tmp_path / "p.csv", {**prob_columns(probs), "label": labels})
    result = invoke(
        path,
        "--json",
        "--strategy",
        "quantile",
        "--closed",
        "left",
        "--interval",
        "none",
        "--level",
        "0.9",
        "--seed",
        "3",
        "--bins",
        "5",
        *FAST,
    )
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    want = ck.audit(
        probs,
        labels,
        n_bins=5,
        strategy="quantile",
        closed="left",
        interval=None,
        level=0.9,
        seed=3,
        n_boot=200,
        n_sims=200,
    ).to_dict()
    assert out == json.loads(json.dumps(want))
    assert out["table"]["interval"] is None and out["seed"] == 3


def test_logits_and_column_options(tmp_path):
    rng = np.random.default_rng(2)
    logits, labels = rng.normal(size=(200, 4)), rng.integers(0, 4, 200)
    path = write(tmp_path / "p.csv", {**prob_columns(logits, "z"), "truth": labels})
    result = invoke(path, "--logits", "z*", "--label", "truth", "--json", *FAST)
    assert result.exit_code == 0, result.output
    want = ck.audit(logits, labels, from_logits=True, n_boot=200, n_sims=200)
    assert json.loads(result.stdout)["nll"] == pytest.approx(want.nll, rel=1e-12)


def test_confidence_correct_and_prediction_options(tmp_path):
    conf = [0.9, 0.8, 0.7, 0.6, 0.55, 0.95]
    path = write(
        tmp_path / "p.csv",
        {
            "c": conf,
            "ok": ["TRUE", "FALSE", "TRUE", "TRUE", "FALSE", "TRUE"],
            "guess": [1, 2, 3, 1, 2, 3],
            "gold": [1, 0, 3, 1, 0, 3],
        },
    )
    a = invoke(path, "--confidence", "c", "--correct", "ok", "--json", *FAST)
    b = invoke(
        path, "--confidence", "c", "--prediction", "guess", "--label", "gold", "--json", *FAST
    )
    assert a.exit_code == b.exit_code == 0, a.output + b.output
    assert (
        json.loads(a.stdout)["ece"]
        == json.loads(b.stdout)["ece"]
        == ck.ece(conf, [1, 0, 1, 1, 0, 1])
    )


def test_densenet_example_prints_the_table():
    result = invoke(
        EXAMPLES / "densenet40_cifar10_logits.npz",
        "--logits",
        "test_logits",
        "--label",
        "test_labels",
        *FAST,
    )
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out.startswith("calibkit audit: N = 10000 top-label forecasts of a 10-class model")
    for text in (
        "count",
        "95% wilson",
        "(0.9333, 1]",
        "9269",
        "ECE",
        "0.0550",
        "noise floor",
        "Brier",
        "NLL",
        "miscalibrated beyond noise",
    ):
        assert text in out


def test_resnet_top1_example_is_detected():
    result = invoke(EXAMPLES / "resnet110_c10.csv", "--json", *FAST)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["n"] == 10000


def test_llm_example_needs_a_confidence_column_then_works():
    path = EXAMPLES / "llm_stated_confidence.parquet"
    assert_bad_input(invoke(path), "perhaps stated_confidence")
    result = invoke(
        path, "--confidence", "stated_confidence", "--correct", "correct", "--json", *FAST
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["n"] == 72185
    assert_bad_input(
        invoke(path, "--confidence", "chosen_token_confidence"),
        "'chosen_token_confidence' has 62940 missing values",
    )


def test_warnings_are_single_lines_on_stderr(tmp_path):
    # a confidence of 1 that is wrong makes the log loss infinite: a warning, not an error
    path = write(tmp_path / "p.csv", {"confidence": [1.0, 0.8, 0.6, 0.7], "correct": [0, 1, 1, 0]})
    result = invoke(path, *FAST)
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert lines and all(line.startswith("calibkit: warning: ") for line in lines)


# ----------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("make", "args", "match"),
    [
        (lambda d: d / "nope.csv", [], "no such file"),
        (lambda d: d, [], "is a directory"),
        (lambda d: _text(d / "p.txt", "a\n1\n"), [], "cannot tell the format"),
        (lambda d: _text(d / "p.csv", "a,b\n1,2\n3\n"), [], "could not read"),
        (lambda d: _text(d / "p.npz", "not a zip"), [], "not a zip archive"),
        (
            lambda d: _text(d / "p.csv", "conf,ok\n0.5,1\n"),
            ["--confidence", "conf", "--correct", "correct"],
            "has no column 'correct'; columns: conf, ok",
        ),
        (lambda d: _text(d / "p.csv", "confidence,correct\n0.5,1\n,1\n"), [], "1 missing value"),
        (lambda d: _text(d / "p.csv", "confidence,correct\nhigh,1\n"), [], "must hold numbers"),
        (
            lambda d: _text(d / "p.csv", "prob_0,prob_1,logit_0,y\n0.5,0.5,0,1\n"),
            [],
            "more than one kind of score",
        ),
        (
            lambda d: _text(d / "p.csv", "prob_0,prob_1,y\n0.5,0.6,1\n"),
            [],
            "audit: each row of probs must sum to 1",
        ),
        (lambda d: _text(d / "p.csv", "confidence,correct\n0.5,1\n"), ["--bins", "0"], "n_bins"),
        (
            lambda d: _text(d / "p.csv", "confidence,correct\n0.5,1\n"),
            ["--format", "xml"],
            "unknown format 'xml'",
        ),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path, make, args, match):
    assert_bad_input(invoke(make(tmp_path), *args, *FAST), match)


def _text(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "args",
    [
        ["audit", "x.csv", "--strategy", "bogus"],
        ["audit", "x.csv", "--bins", "many"],
        ["audit", "x.csv", "--no-such-option"],
        ["audit"],
        ["frobnicate"],
    ],
)
def test_usage_errors_exit_2(args):
    assert runner.invoke(app, args).exit_code == 2


def test_version():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.strip() == f"calibkit {ck.__version__}"


def test_python_dash_m(tmp_path):
    ok = subprocess.run(
        [sys.executable, "-m", "calibkit", "--version"], capture_output=True, text=True
    )
    assert ok.returncode == 0 and ok.stdout.strip() == f"calibkit {ck.__version__}"
    bad = subprocess.run(
        [sys.executable, "-m", "calibkit", "audit", str(tmp_path / "x.csv")],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.splitlines() == [
        f"calibkit: error: read_predictions: no such file: '{tmp_path / 'x.csv'}'."
    ]


# ----------------------------------------------------------------------------- rendering


def _render(audit, **kwargs) -> str:
    console = Console(width=120, force_terminal=True, color_system="standard", **kwargs)
    with console.capture() as capture:
        render_audit(audit, console, source="p.csv")
    return capture.get()


@pytest.mark.filterwarnings("ignore::calibkit.CalibkitWarning")
def test_gap_is_red_only_when_conf_is_outside_the_interval():
    rng = np.random.default_rng(0)
    conf = np.full(2000, 0.95)
    overconfident = ck.audit(
        conf, (rng.random(2000) < 0.6).astype(int), n_bins=10, n_boot=200, n_sims=200
    )
    calibrated = ck.audit(
        conf, (rng.random(2000) < 0.95).astype(int), n_bins=10, n_boot=200, n_sims=200
    )
    red = "\x1b[1;31m"
    assert red in _render(overconfident)
    assert red not in _render(calibrated)


def test_render_empty_bins_and_layout():
    audit = ck.audit([0.05, 0.95, 0.9, 0.92], [0, 1, 1, 0], n_bins=5, n_boot=200, n_sims=200)
    console = Console(width=120, record=True)
    render_audit(audit, console, source="p.csv")
    text = console.export_text()
    lines = text.splitlines()
    assert lines[0] == "calibkit audit: N = 4 binary forecasts, from p.csv"
    empty = [line for line in lines if line.strip().startswith("(0.2, 0.4]")][0]
    assert empty.split() == ["(0.2,", "0.4]", "0", "-", "-", "-", "-", "-"]
    full = [line for line in lines if line.strip().startswith("(0.8, 1]")][0]
    assert full.split()[2:4] == ["3", "0.9233"]
    for name, value, _ in audit.metric_rows():
        assert any(
            line.split()[: len(name.split())] == name.split() and value in line for line in lines
        )
    assert lines[-1].startswith(audit.verdict()[:30]) or audit.verdict()[:30] in text


def test_render_without_intervals():
    audit = ck.audit([0.1, 0.9, 0.8], [0, 1, 1], n_bins=2, interval=None, n_boot=200, n_sims=200)
    console = Console(width=120, record=True)
    render_audit(audit, console)
    text = console.export_text()
    lines = text.split("measure")[0].splitlines()
    assert lines[2].split() == ["bin", "count", "conf", "acc", "gap", "se"]
    assert lines[4].split() == ["[0,", "0.5]", "1", "0.1000", "0.0000", "-0.1000", "0.0000"]
    assert "red gap" not in text
