"""The command line on a new user's files: scikit-learn models' predictions under the user's
own column names (an image_id, y_true, three models side by side, labels written as words).
``calibkit apply`` keeps the user's columns, every message names the columns, and
``--positive`` says which label a single score column forecasts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import calibkit as ck
from calibkit.cli import app
from cli_helpers import assert_bad_input
from user_models import breast_cancer, digits, with_words

FAST = ["--n-boot", "100", "--n-sims", "100"]
LR = "proba_malignant_lr"
runner = CliRunner()


def invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def write_csv(frame: pd.DataFrame, path: Path) -> Path:
    pcsv.write_csv(pa.Table.from_pandas(frame, preserve_index=False), path)
    return path


@pytest.fixture
def three(tmp_path: Path) -> Path:
    return write_csv(breast_cancer(), tmp_path / "three.csv")


@pytest.fixture
def fitted(tmp_path: Path, three: Path) -> Path:
    cal = tmp_path / "isotonic.json"
    result = invoke(
        "fit", three, "--probs", LR, "--label", "y_true", "--positive", "0",
        "--method", "isotonic", "--out", cal, "--n-sims", "100", "--quiet",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return cal


# ----------------------------------------------------------------------------- apply


def test_apply_keeps_the_users_columns_under_their_names(tmp_path, three, fitted):
    out = tmp_path / "calibrated.csv"
    result = invoke("apply", fitted, three, "--probs", LR, "--out", out)
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("calibkit apply: wrote 285 rows (image_id .. y_true) to ")
    table = pcsv.read_csv(out)
    assert table.column_names == [
        "image_id",
        "prob_1",
        "proba_malignant_rf",
        "proba_malignant_nb",
        "y_true",
    ]
    frame = breast_cancer()
    assert table.column("image_id").to_pylist() == frame["image_id"].tolist()
    assert table.column("y_true").to_pylist() == frame["y_true"].tolist()
    assert table.column("proba_malignant_rf").to_pylist() == frame["proba_malignant_rf"].tolist()
    expected = ck.load_calibrator(fitted).predict_proba(frame[LR].to_numpy())
    np.testing.assert_array_equal(table.column("prob_1").to_numpy(), expected)

    # audited as it is, with the label named and the event said
    audit = invoke("audit", out, "--probs", "prob_1", "--positive", "0", "--json", *FAST)
    assert audit.exit_code == 0, audit.output
    assert json.loads(audit.stdout)["n"] == 285


def test_apply_keep_chooses_the_other_columns(tmp_path, three, fitted):
    out = tmp_path / "k.parquet"
    result = invoke("apply", fitted, three, "--probs", LR, "--out", out, "--keep", "image_*")
    assert result.exit_code == 0, result.output
    assert pq.read_table(out).column_names == ["image_id", "prob_1", "y_true"]
    result = invoke("apply", fitted, three, "--probs", LR, "--out", out, "--keep", "")
    assert result.exit_code == 0, result.output
    assert pq.read_table(out).column_names == ["prob_1", "y_true"]
    result = invoke(
        "apply", fitted, three, "--probs", LR, "--out", out, "--keep", "proba_malignant_nb,image_id"
    )
    assert result.exit_code == 0, result.output
    assert pq.read_table(out).column_names == ["image_id", "prob_1", "proba_malignant_nb", "y_true"]


def test_apply_refuses_a_kept_column_named_like_its_output(tmp_path, fitted):
    data = write_csv(
        breast_cancer().rename(columns={"proba_malignant_nb": "prob_1"}), tmp_path / "c.csv"
    )
    out = tmp_path / "o.csv"
    assert_bad_input(
        invoke("apply", fitted, data, "--probs", LR, "--out", out),
        "apply: the column 'prob_1' of '",
    )
    assert_bad_input(
        invoke("apply", fitted, data, "--probs", LR, "--out", out),
        "would be kept beside the calibrated column 'prob_1'; rename it, or leave it out with "
        "--keep",
    )
    result = invoke("apply", fitted, data, "--probs", LR, "--out", out, "--keep", "image_id")
    assert result.exit_code == 0, result.output
    assert pcsv.read_csv(out).column_names == ["image_id", "prob_1", "y_true"]


def test_apply_to_an_npz_keeps_the_label_array_by_name(tmp_path):
    z, _, y = digits()
    data = tmp_path / "d.npz"
    np.savez(data, logits=z, labels=y, embedding=z[:, :2], val_labels=y[:10])
    cal = tmp_path / "t.json"
    fit = invoke("fit", data, "--method", "temperature", "--out", cal, "--n-sims", "100", "-q")
    assert fit.exit_code == 0, fit.output
    out = tmp_path / "o.parquet"
    result = invoke("apply", cal, data, "--out", out)
    assert result.exit_code == 0, result.output
    assert "not copied (not one value a row): val_labels (10 rows, not 899)." in result.stdout
    table = pq.read_table(out)
    assert table.column_names == [*(f"prob_{k}" for k in range(10)), "labels", "embedding"]
    assert table.column("labels").to_pylist() == y.tolist()
    assert_bad_input(
        invoke("apply", cal, data, "--out", tmp_path / "o.csv"),
        "as CSV: 'embedding' holds a list a row (a 2-D array); write .parquet, or leave it out "
        "with --keep",
    )
    assert not (tmp_path / "o.csv").exists()
    result = invoke("apply", cal, data, "--out", tmp_path / "o.csv", "--keep", "")
    assert result.exit_code == 0, result.output
    assert pcsv.read_csv(tmp_path / "o.csv").column_names[-1] == "labels"


# ----------------------------------------------------------------------------- audit


def test_three_models_side_by_side_name_their_columns(three):
    assert_bad_input(
        invoke("audit", three, *FAST),
        "first row 0 (proba_malignant_lr + proba_malignant_rf + proba_malignant_nb) sums to 3",
    )
    assert_bad_input(
        invoke("audit", three, *FAST),
        "The 3 columns proba_malignant_lr, proba_malignant_rf, proba_malignant_nb were read as "
        "one 3-class forecast; if each is P(label = 1) from a separate binary model, audit them "
        "one at a time: --probs proba_malignant_lr",
    )
    result = invoke("audit", three, "--probs", LR, "--positive", "0", "--json", *FAST)
    assert result.exit_code == 0, result.output
    frame = breast_cancer()
    expected = ck.audit(frame[LR].to_numpy(), (frame["y_true"] == 0).to_numpy(), n_boot=100,
                        n_sims=100)  # fmt: skip
    assert json.loads(result.stdout)["ece"] == expected.ece


def test_labels_written_as_words_need_positive(tmp_path):
    data = write_csv(with_words(breast_cancer()), tmp_path / "words.csv")
    assert_bad_input(
        invoke("audit", data, "--probs", LR, *FAST),
        "read_predictions: column 'y_true' holds text, two values: 'benign' and 'malignant'. A "
        "1-D forecast is the probability of one of them (or its logit): say which is the event "
        "with pos_label= (--positive VALUE on the command line)",
    )
    assert_bad_input(
        invoke("audit", data, "--probs", LR, "--positive", "cancer", *FAST),
        "pos_label='cancer' is not a value of column 'y_true'; its values are 'benign', "
        "'malignant'.",
    )
    assert_bad_input(
        invoke("audit", data, "--probs", LR, "--positive", "malignant", "--engine", "duckdb"),
        "audit: --positive turns the label column into the outcome in memory",
    )
    result = invoke("audit", data, "--probs", LR, "--positive", "malignant", "--json", *FAST)
    assert result.exit_code == 0, result.output
    numbers = invoke(
        "audit", write_csv(breast_cancer(), tmp_path / "n.csv"), "--probs", LR,
        "--positive", "0", "--json", *FAST,
    )  # fmt: skip
    assert json.loads(result.stdout) == json.loads(numbers.stdout)


def test_fit_and_decide_take_positive(tmp_path):
    data = write_csv(with_words(breast_cancer()), tmp_path / "words.csv")
    cal = tmp_path / "i.json"
    result = invoke(
        "fit", data, "--probs", LR, "--positive", "malignant", "--method", "isotonic",
        "--out", cal, "--n-sims", "100", "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["n_eval"] > 0
    assert_bad_input(
        invoke("fit", data, "--probs", LR, "--method", "isotonic", "--out", cal),
        "column 'y_true' holds text, two values",
    )
    decide = invoke(
        "decide", data, "--probs", LR, "--positive", "malignant",
        "--false-positive-cost", "1", "--false-negative-cost", "20", "--json",
    )  # fmt: skip
    assert decide.exit_code == 0, decide.output
    assert (
        json.loads(decide.stdout)["source"] == "words.csv (probs=proba_malignant_lr, label=y_true)"
    )


def test_logits_k_columns_are_detected_and_other_numbered_columns_suggested(tmp_path):
    z, _, y = digits()
    data = pa.table({**{f"logits_{k}": z[:, k] for k in range(10)}, "y_true": y})
    path = tmp_path / "logits.parquet"
    pq.write_table(data, path)
    result = invoke("audit", path, "--json", *FAST)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["ece"] == ck.audit(z, y, from_logits=True, n_boot=100,
                                                        n_sims=100).ece  # fmt: skip
    scores = tmp_path / "scores.parquet"
    pq.write_table(data.rename_columns([f"score_{k}" for k in range(10)] + ["y_true"]), scores)
    assert_bad_input(
        invoke("audit", scores, *FAST),
        "Pass probs=, logits= or confidence= (--probs, --logits, --confidence); perhaps "
        "'score_*' (10 columns).",
    )


def test_two_label_values_other_than_0_and_1_say_to_pass_positive(tmp_path):
    """make_classification's labels written as 1 and 2 beside P(y = 2)."""
    from user_models import classification

    p, y = classification()
    data = write_csv(pd.DataFrame({"p_two": p, "y": y + 1}), tmp_path / "two.csv")
    first = int(np.argmax(y == 1))
    assert_bad_input(
        invoke("audit", data, *FAST),
        f"read_predictions: column 'y' must be 0 or 1 beside a 1-D forecast; {int(y.sum())} values "
        f"do not, first at row {first}: 2. The labels hold two values, 1 and 2: say which is the "
        "event the forecast is the probability of with pos_label= (--positive VALUE on the "
        "command line), e.g. pos_label=2.",
    )
    result = invoke("audit", data, "--positive", "2", "--json", *FAST)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["ece"] == ck.audit(p, y, n_boot=100, n_sims=100).ece
