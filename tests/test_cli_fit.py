"""calibkit fit / apply: the ledger, the saved calibrator, atomic output, exit codes; and the
method registry behind --method."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import calibkit as ck
from calibkit.cli import app
from calibkit.io import read_predictions
from calibkit.recalibrate import methods
from calibkit.recalibrate.base import load_calibrator
from calibkit.recalibrate.ledger import compare_calibration
from calibkit.recalibrate.methods import METHOD_NAMES, available_methods, make_calibrator
from cli_helpers import assert_bad_input

EXAMPLES = Path(__file__).parents[1] / "examples" / "data"
DENSENET = EXAMPLES / "densenet40_cifar10_logits.npz"
FAST = ["--n-sims", "100"]
runner = CliRunner()


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def overconfident(n: int = 600, c: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.normal(0, 1.5, (n, c))
    y = (ck.softmax(z).cumsum(axis=1) < rng.random((n, 1))).sum(axis=1)
    return 3.0 * z, y


def write_csv(path: Path, columns: dict[str, np.ndarray]) -> Path:
    table = pa.table({k: pa.array(np.asarray(v)) for k, v in columns.items()})
    pcsv.write_csv(table, path)
    return path


def logit_csv(path: Path, z: np.ndarray, y: np.ndarray | None = None) -> Path:
    columns = {f"logit_{k}": z[:, k] for k in range(z.shape[1])}
    if y is not None:
        columns["label"] = y
    return write_csv(path, columns)


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


# ----------------------------------------------------------------------------- fit + apply


def test_fit_and_apply_round_trip_on_a_csv(tmp_path):
    z, y = overconfident()
    data = logit_csv(tmp_path / "preds.csv", z, y)
    cal = tmp_path / "cal.json"
    result = invoke("fit", data, "--method", "temperature", "--out", cal, *FAST)
    assert result.exit_code == 0, result.output
    for text in ("BEFORE", "AFTER", "can the map move it?", "never (argmax-preserving)"):
        assert text in result.stdout
    assert "wrote " in result.stdout and "calibration split (300 of 600 rows" in result.stdout

    # the saved map is the one the ledger judges: fitted on the calibration split
    preds = read_predictions(data)
    ledger = compare_calibration(ck.TemperatureScaling(), preds.scores, preds.labels, n_sims=100)
    saved = load_calibrator(cal)
    assert saved.temperature_ == ledger.calibrator.temperature_

    out = tmp_path / "calibrated.parquet"
    result = invoke("apply", cal, data, "--out", out)
    assert result.exit_code == 0, result.output
    assert "wrote 600 rows (prob_0 .. label)" in result.stdout
    table = pq.read_table(out)
    assert table.column_names == ["prob_0", "prob_1", "prob_2", "label"]
    got = np.column_stack([table.column(f"prob_{k}").to_numpy() for k in range(3)])
    assert np.array_equal(got, saved.predict_proba(preds.scores))
    assert np.array_equal(table.column("label").to_numpy(), y)
    assert leftovers(tmp_path) == []

    # the output is a prediction file calibkit audit reads as it is
    audit = invoke("audit", out, "--n-boot", "50", "--n-sims", "50")
    assert audit.exit_code == 0, audit.output


def test_fit_and_apply_densenet_npz(tmp_path):
    cal = tmp_path / "densenet.json"
    result = invoke(
        "fit",
        DENSENET,
        "--logits",
        "val_logits",
        "--label",
        "val_labels",
        "--method",
        "temperature",
        "--out",
        cal,
        *FAST,
    )
    assert result.exit_code == 0, result.output
    saved = load_calibrator(cal)
    assert 2.0 < saved.temperature_ < 4.0

    out = tmp_path / "test.parquet"
    result = invoke(
        "apply", cal, DENSENET, "--logits", "test_logits", "--label", "test_labels", "--out", out
    )
    assert result.exit_code == 0, result.output
    data = np.load(DENSENET)
    table = pq.read_table(out)
    got = np.column_stack([table.column(f"prob_{k}").to_numpy() for k in range(10)])
    assert np.array_equal(got, saved.predict_proba(data["test_logits"]))
    # the label array keeps its name; arrays of another length are not rows of this table
    assert table.column_names == [*(f"prob_{k}" for k in range(10)), "test_labels"]
    assert np.array_equal(table.column("test_labels").to_numpy(), data["test_labels"])
    assert (
        "not copied (not one value a row): val_logits (5000 rows, not 10000), val_labels (5000 "
        "rows, not 10000)." in result.stdout
    )


def test_binary_scores_give_one_probability_column_and_csv_output(tmp_path):
    rng = np.random.default_rng(1)
    s = rng.normal(0, 2, 400)
    y = (rng.random(400) < ck.sigmoid(s)).astype(int)
    data = write_csv(tmp_path / "scores.csv", {"logit_1": 3 * s, "y": y})
    cal = tmp_path / "cal.json"
    result = invoke("fit", data, "--method", "temperature", "--out", cal, *FAST)
    assert result.exit_code == 0, result.output
    assert "never (sign-preserving)" in result.stdout
    assert "never (order-preserving)" in result.stdout

    out = tmp_path / "out.csv"
    result = invoke("apply", cal, data, "--out", out)
    assert result.exit_code == 0, result.output
    table = pcsv.read_csv(out)
    assert table.column_names == ["prob_1", "y"]  # the label keeps its name
    expected = load_calibrator(cal).predict_proba(read_predictions(data).scores)
    assert np.allclose(table.column("prob_1").to_numpy(), expected, rtol=1e-15, atol=0)


def test_apply_without_labels_writes_only_probabilities(tmp_path):
    z, y = overconfident()
    cal = tmp_path / "cal.json"
    fit = invoke(
        "fit", logit_csv(tmp_path / "a.csv", z, y), "--method", "temperature", "--out", cal, *FAST
    )
    assert fit.exit_code == 0, fit.output
    new = logit_csv(tmp_path / "new.csv", z[:50])
    out = tmp_path / "new.parquet"
    result = invoke("apply", cal, new, "--out", out)
    assert result.exit_code == 0, result.output
    assert pq.read_table(out).column_names == ["prob_0", "prob_1", "prob_2"]


def test_probability_columns_fit_a_probability_map(tmp_path):
    z, y = overconfident()
    p = ck.softmax(z)
    data = write_csv(tmp_path / "p.csv", {**{f"prob_{k}": p[:, k] for k in range(3)}, "label": y})
    cal = tmp_path / "cal.json"
    result = invoke("fit", data, "--method", "temperature", "--out", cal, *FAST)
    assert result.exit_code == 0, result.output
    assert json.loads(cal.read_text())["params"]["from_logits"] is False
    # the same map refuses logits
    logits = logit_csv(tmp_path / "z.csv", z, y)
    out = tmp_path / "o.parquet"
    assert_bad_input(invoke("apply", cal, logits, "--out", out), "fitted on probabilities")
    assert not out.exists()


def test_fit_json_is_the_ledger(tmp_path):
    z, y = overconfident()
    data = logit_csv(tmp_path / "preds.csv", z, y)
    result = invoke(
        "fit",
        data,
        "--method",
        "temperature",
        "--out",
        tmp_path / "c.json",
        "--json",
        "--seed",
        "4",
        "--calibration-fraction",
        "0.4",
        *FAST,
    )
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    preds = read_predictions(data)
    ledger = compare_calibration(
        ck.TemperatureScaling(),
        preds.scores,
        preds.labels,
        seed=4,
        calibration_fraction=0.4,
        n_sims=100,
    )
    assert got == json.loads(json.dumps(ledger.to_dict()))
    assert got["design"] == "split" and got["n_fit"] == 240


def test_fit_with_folds_saves_a_map_fitted_on_all_rows(tmp_path):
    z, y = overconfident(200)
    data = logit_csv(tmp_path / "small.csv", z, y)
    cal = tmp_path / "c.json"
    result = invoke(
        "fit", data, "--method", "temperature", "--out", cal, "--folds", "4", "--json", *FAST
    )
    assert result.exit_code == 0, result.output
    got = json.loads(result.stdout)
    assert got["design"] == "cross-fit" and got["folds"] == 4 and len(got["fold_parameters"]) == 4
    preds = read_predictions(data)
    assert load_calibrator(cal).temperature_ == ck.fit_temperature(preds.scores, preds.labels)


# ----------------------------------------------------------------------------- atomic output


def test_a_failed_apply_leaves_no_file(tmp_path):
    z, y = overconfident()
    cal = tmp_path / "cal.json"
    assert (
        invoke(
            "fit",
            logit_csv(tmp_path / "a.csv", z, y),
            "--method",
            "temperature",
            "--out",
            cal,
            *FAST,
        ).exit_code
        == 0
    )
    four = logit_csv(tmp_path / "four.csv", np.hstack([z, z[:, :1]]), y)
    out = tmp_path / "calibrated.parquet"
    result = invoke("apply", cal, four, "--out", out)
    assert_bad_input(result, "fitted on 3 classes")
    assert not out.exists() and leftovers(tmp_path) == []


def test_an_interrupted_write_leaves_no_partial_file_and_keeps_the_old_one(tmp_path, monkeypatch):
    z, y = overconfident()
    data = logit_csv(tmp_path / "a.csv", z, y)
    cal = tmp_path / "cal.json"
    assert invoke("fit", data, "--method", "temperature", "--out", cal, *FAST).exit_code == 0
    out = tmp_path / "calibrated.parquet"

    def half_written(table, where, *args, **kwargs):
        Path(where).write_bytes(b"PAR1 half a file")
        raise KeyboardInterrupt  # the run is interrupted in the middle of the write

    monkeypatch.setattr(pq, "write_table", half_written)
    result = invoke("apply", cal, data, "--out", out)
    assert result.exit_code != 0
    assert not out.exists() and leftovers(tmp_path) == []

    out.write_bytes(b"the previous output")
    result = invoke("apply", cal, data, "--out", out)
    assert result.exit_code != 0
    assert out.read_bytes() == b"the previous output" and leftovers(tmp_path) == []


# ----------------------------------------------------------------------------- bad input


@pytest.fixture
def fitted(tmp_path) -> tuple[Path, Path]:
    z, y = overconfident()
    data = logit_csv(tmp_path / "a.csv", z, y)
    cal = tmp_path / "cal.json"
    assert invoke("fit", data, "--method", "temperature", "--out", cal, *FAST).exit_code == 0
    return data, cal


def test_fit_bad_input_exits_2_with_one_line(tmp_path, fitted):
    data, _ = fitted
    out = tmp_path / "c.json"
    assert_bad_input(
        invoke("fit", data, "--method", "sharpen", "--out", out),
        "method 'sharpen' is not available; choose one of temperature, platt",
    )
    assert_bad_input(invoke("fit", data, "--out", out), "--method is required")
    assert_bad_input(invoke("fit", data, "--method", "temperature"), "--out is required")
    assert_bad_input(
        invoke(
            "fit",
            data,
            "--method",
            "temperature",
            "--out",
            out,
            "--folds",
            "3",
            "--calibration-fraction",
            "0.5",
        ),
        "does not combine with --calibration-fraction",
    )
    assert_bad_input(
        invoke(
            "fit", data, "--method", "temperature", "--out", out, "--calibration-fraction", "1.5"
        ),
        "calibration_fraction must be a number strictly between 0 and 1",
    )
    assert_bad_input(
        invoke("fit", data, "--method", "temperature", "--out", tmp_path / "no" / "c.json"),
        "no such folder",
    )
    assert_bad_input(
        invoke("fit", tmp_path / "missing.csv", "--method", "temperature", "--out", out),
        "no such file",
    )
    one = write_csv(
        tmp_path / "one.csv",
        {"logit_0": [1.0, 2, 0, 1], "logit_1": [0.0, 1, 2, 3], "label": [0, 0, 1, 0]},
    )
    assert_bad_input(
        invoke("fit", one, "--method", "temperature", "--out", out), "class 1 has only 1"
    )
    assert not out.exists()


def test_fit_refuses_logits_for_a_map_of_probabilities(tmp_path, fitted):
    data, _ = fitted
    out = tmp_path / "h.json"
    assert_bad_input(
        invoke("fit", data, "--method", "histogram", "--out", out), "calibrates probabilities"
    )


def test_apply_bad_input_exits_2_with_one_line(tmp_path, fitted):
    data, cal = fitted
    out = tmp_path / "o.parquet"
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    assert_bad_input(invoke("apply", broken, data, "--out", out), "broken.json': not valid JSON")
    unknown = tmp_path / "unknown.json"
    unknown.write_text(json.dumps({**json.loads(cal.read_text()), "kind": "sharpen"}))
    assert_bad_input(invoke("apply", unknown, data, "--out", out), "unknown calibrator kind")
    bad_t = tmp_path / "bad_t.json"
    saved = json.loads(cal.read_text())
    saved["state"]["temperature"] = -1
    bad_t.write_text(json.dumps(saved))
    assert_bad_input(invoke("apply", bad_t, data, "--out", out), "temperature must be positive")
    assert_bad_input(invoke("apply", tmp_path / "none.json", data, "--out", out), "no such file")
    assert_bad_input(invoke("apply", cal, data, "--out", tmp_path / "o.txt"), "--out must end in")
    assert_bad_input(invoke("apply", cal, data), "--out is required")
    assert_bad_input(invoke("apply", cal, data, "--out", tmp_path), "it is a directory")
    assert_bad_input(
        invoke("apply", cal, data, "--out", out, "--probs", "logit_0", "--logits", "logit_1"),
        "pass one of --probs, --logits or --confidence",
    )
    assert not out.exists() and leftovers(tmp_path) == []


# ----------------------------------------------------------------------------- the registry


def test_every_method_name_maps_to_its_class_or_says_it_is_not_available():
    assert METHOD_NAMES == (
        "temperature",
        "platt",
        "isotonic",
        "histogram",
        "beta",
        "vector",
        "matrix",
    )
    assert "temperature" in available_methods()
    for name in METHOD_NAMES:
        try:
            calibrator = make_calibrator(name)
        except ck.InputError as exc:
            assert "is not available in this installation" in str(exc)
            assert name not in available_methods()
            continue
        assert calibrator.kind == name and not calibrator.is_fitted
        assert name in available_methods()


def test_settings_are_passed_and_checked():
    assert make_calibrator("temperature", method="golden").method == "golden"
    with pytest.raises(ck.InputError, match="TemperatureScaling has no setting 'sharpness'"):
        make_calibrator("temperature", sharpness=2)


def test_unknown_names_and_missing_modules_are_not_available(monkeypatch):
    with pytest.raises(ck.InputError, match="method 'made-up' is not available; choose one of"):
        make_calibrator("made-up")
    monkeypatch.setitem(methods._METHODS, "madeup", ("MadeUpScaling", ("madeup_module",)))
    with pytest.raises(
        ck.InputError,
        match=r"method 'madeup' \(MadeUpScaling\) is not available in this installation of "
        r"calibkit \(no module calibkit\.recalibrate\.madeup_module\); available now: temperature",
    ):
        make_calibrator("madeup")
    monkeypatch.setitem(methods._METHODS, "ghost", ("GhostScaling", ("temperature",)))
    with pytest.raises(ck.InputError, match="calibkit.recalibrate.temperature has no GhostScaling"):
        make_calibrator("ghost")
    assert "madeup" not in available_methods() and "ghost" not in available_methods()


# ----------------------------------------------------------------------------- wrong scores (issue 13)


def _digits(tmp_path: Path, model: str) -> tuple[Path, np.ndarray, np.ndarray]:
    """A scikit-learn model's held-out output on load_digits (fixed split) as a CSV: logistic
    regression probabilities named proba_*, or Gaussian naive Bayes log-probabilities named
    logit_*."""
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.naive_bayes import GaussianNB

    x, y = load_digits(return_X_y=True)
    x_fit, x_cal, y_fit, y_cal = train_test_split(x, y, test_size=0.5, random_state=0, stratify=y)
    if model == "lr":
        scores = LogisticRegression(max_iter=5000).fit(x_fit, y_fit).predict_proba(x_cal)
        prefix = "proba"
    else:
        scores = GaussianNB().fit(x_fit, y_fit).predict_log_proba(x_cal)
        prefix = "logit"
    columns = {f"{prefix}_{k}": scores[:, k] for k in range(10)}
    return write_csv(tmp_path / f"{model}.csv", {**columns, "label": y_cal}), scores, y_cal


def _forest(tmp_path: Path) -> tuple[Path, np.ndarray, np.ndarray]:
    """Random-forest probabilities on load_breast_cancer (half of them exactly 0 or 1)."""
    from sklearn.datasets import load_breast_cancer
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.model_selection import train_test_split

    x, y = load_breast_cancer(return_X_y=True)
    x_fit, x_cal, y_fit, y_cal = train_test_split(x, y, test_size=0.5, random_state=0, stratify=y)
    p = RandomForestClassifier(n_estimators=50, random_state=0).fit(x_fit, y_fit)
    probs = p.predict_proba(x_cal)
    path = write_csv(
        tmp_path / "rf.csv", {"prob_0": probs[:, 0], "prob_1": probs[:, 1], "label": y_cal}
    )
    return path, probs, y_cal


def test_fit_refuses_probability_columns_named_as_logits(tmp_path):
    data, probs, y = _digits(tmp_path, "lr")
    out = tmp_path / "c.json"
    args = ("fit", data, "--logits", "proba_*", "--method", "temperature", "--out", out, *FAST)
    assert_bad_input(
        invoke(*args),
        "every row of scores (read as logits) lies in [0, 1] and sums to 1: these look like "
        "probabilities. Pass them as probabilities (from_logits=False; --probs on the command "
        "line)",
    )
    assert not out.exists()
    # --probs reads them as what they are; --no-check-logits insists on the old reading
    assert (
        invoke(
            "fit", data, "--probs", "proba_*", "--method", "temperature", "--out", out, *FAST
        ).exit_code
        == 0
    )
    assert load_calibrator(out).from_logits is False
    result = invoke(*args, "--no-check-logits")
    assert result.exit_code == 0, result.output
    saved = load_calibrator(out)
    assert saved.check_logits is False
    cal, _ = ck.stratified_split(y, calibration_fraction=0.5, seed=0)
    expected = ck.TemperatureScaling(check_logits=False).fit(probs[cal], y[cal]).temperature_
    assert saved.temperature_ == expected


def test_fit_on_naive_bayes_log_probabilities_warns_and_says_worse(tmp_path):
    data, _, _ = _digits(tmp_path, "nb")
    out = tmp_path / "c.json"
    result = invoke("fit", data, "--method", "temperature", "--out", out, *FAST)
    assert result.exit_code == 0, result.output
    warned = result.stderr.splitlines()
    assert any("TemperatureScaling.fit: these logits are extreme" in line for line in warned)
    assert any("made the held-out numbers worse beyond noise: ECE" in line for line in warned)
    assert "WORSE beyond noise on the held-out rows: ECE" in " ".join(result.stdout.split())
    quiet = invoke("fit", data, "--method", "temperature", "--out", out, "--quiet", *FAST)
    assert ", WORSE beyond noise in ECE; wrote" in quiet.stdout
    got = json.loads(
        invoke("fit", data, "--method", "temperature", "--out", out, "--json", *FAST).stdout
    )
    assert [w["instrument"] for w in got["worse"]] == ["ECE"]
    assert got["worse"][0]["after"] - got["worse"][0]["before"] > got["noise_floor"]["after"]["p95"]


def test_forest_probabilities_need_clip_and_apply_clips_alike(tmp_path):
    data, probs, y = _forest(tmp_path)
    out = tmp_path / "c.json"
    zero = tuple(int(i) for i in np.argwhere(probs == 0)[0])
    result = invoke("fit", data, "--method", "temperature", "--out", out, *FAST)
    # the user's own value and cell, not the -inf of calibkit's log
    assert_bad_input(
        result,
        f"the log is infinite for a probability of exactly 0; {np.count_nonzero(probs == 0)} "
        f"values of probs are, first at row {zero[0]}, column {zero[1]}: 0.0. Pass clip=1e-7 "
        "(or another small eps; calibkit fit --clip 1e-7)",
    )
    assert "inf" not in result.stderr.replace("infinite", "")
    assert_bad_input(
        invoke("fit", data, "--method", "platt", "--out", out, *FAST),
        "the log-odds is infinite for a probability of exactly 0 or 1",
    )
    result = invoke("fit", data, "--method", "platt", "--out", out, "--clip", "1e-7", *FAST)
    assert result.exit_code == 0, result.output
    cal, _ = ck.stratified_split(y, calibration_fraction=0.5, seed=0)
    rows = int(np.count_nonzero(((probs[cal] < 1e-7) | (probs[cal] > 1 - 1e-7)).any(axis=1)))
    assert f"PlattScaling.fit: clip=1e-07 moved {rows} rows of {cal.size}" in result.stderr
    assert json.loads(out.read_text())["params"]["clip"] == 1e-7

    applied = tmp_path / "p.parquet"
    result = invoke("apply", out, data, "--out", applied)
    assert result.exit_code == 0, result.output
    every = int(np.count_nonzero(((probs < 1e-7) | (probs > 1 - 1e-7)).any(axis=1)))
    assert f"PlattScaling.predict_proba: clip=1e-07 moved {every} rows of {y.size}" in result.stderr
    table = pq.read_table(applied)
    got = np.column_stack([table.column(f"prob_{k}").to_numpy() for k in range(2)])
    reference = ck.PlattScaling(from_logits=False).fit(np.clip(probs[cal], 1e-7, 1 - 1e-7), y[cal])
    np.testing.assert_allclose(
        got, reference.predict_proba(np.clip(probs, 1e-7, 1 - 1e-7)), rtol=1e-12
    )


def test_clip_where_there_is_nothing_to_clip_is_refused(tmp_path, fitted):
    logits, _ = fitted
    data, _, _ = _forest(tmp_path)
    out = tmp_path / "c.json"
    assert_bad_input(
        invoke("fit", data, "--method", "isotonic", "--out", out, "--clip", "1e-7"),
        "isotonic uses probabilities as they are (0 and 1 included) and needs none",
    )
    assert_bad_input(
        invoke("fit", logits, "--method", "temperature", "--out", out, "--clip", "1e-7"),
        "gives logits, which need none",
    )
    assert_bad_input(
        invoke("fit", data, "--method", "beta", "--out", out, "--clip", "0.5"),
        "clip must be None (refuse probabilities of exactly 0 or 1) or a number strictly between 0 and 0.5",
    )
    assert_bad_input(
        invoke(
            "fit",
            logits,
            "--method",
            "temperature",
            "--out",
            out,
            "--clip",
            "1e-7",
            "--engine",
            "duckdb",
        ),
        "leave out --clip",
    )
    assert not out.exists()
