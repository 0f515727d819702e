"""calibkit as a new user meets it: scikit-learn models on scikit-learn's data sets, their
predictions in tables with the user's own column names (pandas, polars, pyarrow, files), labels
written as words. Each test rebuilds the models with fixed seeds (``user_models``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

import calibkit as ck
from calibkit.io import calibrate_table, read_predictions, write_table
from user_models import breast_cancer, classification, digits, with_words

FAST = {"n_boot": 100, "n_sims": 100}
LR = "proba_malignant_lr"
THREE = "proba_malignant_lr, proba_malignant_rf, proba_malignant_nb"


def _same(a: ck.Audit, b: ck.Audit) -> None:
    """Two audits of the same forecasts: every number equal."""
    assert json.dumps(a.to_dict(), sort_keys=True) == json.dumps(b.to_dict(), sort_keys=True)


def _malignant() -> tuple[np.ndarray, np.ndarray]:
    """The logistic regression's P(malignant) and the outcome 'malignant' (target 0)."""
    frame = breast_cancer()
    return frame[LR].to_numpy(), (frame["y_true"].to_numpy() == 0).astype(int)


TABLES = {
    "pandas": lambda f: f,
    "polars": pl.from_pandas,
    "pyarrow": lambda f: pa.Table.from_pandas(f, preserve_index=False),
}


# ----------------------------------------------------------------------------- item 12: tables


@pytest.mark.parametrize("kind", TABLES)
def test_audit_takes_a_table_with_the_users_column_names(kind: str) -> None:
    p, malignant = _malignant()
    table = TABLES[kind](breast_cancer())
    got = ck.audit(table, columns={"probs": LR, "label": "y_true"}, pos_label=0, **FAST)
    _same(got, ck.audit(p, malignant, **FAST))


@pytest.mark.parametrize("kind", TABLES)
def test_a_tables_columns_are_detected_as_a_files_are(kind: str) -> None:
    """Digits: ten probability columns prob_0 .. prob_9 and a label column y_true, found by the
    names alone; the same numbers as the arrays."""
    _, probs, y = digits()
    frame = pd.DataFrame({**{f"prob_{k}": probs[:, k] for k in range(10)}, "y_true": y})
    _same(ck.audit(TABLES[kind](frame), **FAST), ck.audit(probs, y, **FAST))


def test_logits_columns_named_logits_k_are_detected() -> None:
    z, _, y = digits()
    frame = pd.DataFrame({"row": np.arange(y.size), **{f"logits_{k}": z[:, k] for k in range(10)}})
    frame["label"] = y
    _same(ck.audit(frame, **FAST), ck.audit(z, y, from_logits=True, **FAST))


def test_a_dataframe_of_scores_with_labels_is_still_an_array() -> None:
    _, probs, y = digits()
    frame = pd.DataFrame(probs)
    _same(ck.audit(frame, y, **FAST), ck.audit(probs, y, **FAST))


def test_a_bad_value_is_named_by_its_column_and_row() -> None:
    p, y = classification()
    frame = pd.DataFrame({"proba_0": 1 - p, "proba_1": p, "y": y})
    frame.loc[17, "proba_1"] = 1.2
    with pytest.raises(ck.InputError, match=r"^audit: probs must lie in \[0, 1\]; 1 value does "):
        ck.audit(frame)
    with pytest.raises(ck.InputError, match=r"first at column 'proba_1', row 17: 1\.2\. "):
        ck.audit(frame)
    one = pd.DataFrame({"p_default": p, "target": y})
    one.loc[3, "target"] = 2
    with pytest.raises(ck.InputError, match=r"1 value does not, first at column 'target', row 3"):
        ck.audit(one)


def test_a_missing_value_in_a_table_is_named_by_its_column() -> None:
    frame = breast_cancer().copy()
    frame.loc[17, "proba_malignant_rf"] = np.nan
    with pytest.raises(
        ck.InputError,
        match=r"^audit: column 'proba_malignant_rf' has 1 missing value .*first at row 17",
    ):
        ck.audit(frame, columns={"probs": "proba_malignant_rf", "label": "y_true"})


def test_detection_in_a_table_says_what_it_found_and_what_to_pass() -> None:
    frame = pd.DataFrame({"score_0": [0.5], "score_1": [0.5], "klass": [1]})
    with pytest.raises(
        ck.InputError,
        match=r"^audit: cannot find the model's scores in the pandas DataFrame: .*columns: "
        r"score_0, score_1, klass\. .*; perhaps 'score_\*' \(2 columns\)\.$",
    ):
        ck.audit(frame)
    with pytest.raises(ck.InputError, match="^audit: the polars DataFrame has no column 'y'"):
        ck.audit(pl.from_pandas(frame), columns={"probs": "score_*", "label": "y"})
    with pytest.raises(ck.InputError, match=r"columns\['format'\] tells the format of a file"):
        ck.audit(frame, columns={"format": "csv"})
    with pytest.raises(ck.InputError, match="columns= names the columns of the table"):
        ck.audit(frame, [1], columns={"probs": "score_*"})


def test_a_column_of_mixed_types_is_named() -> None:
    frame = pd.DataFrame({"p": [0.2, 0.8], "y": pd.Series([0, "1"], dtype=object)})
    with pytest.raises(ck.InputError, match="column 'y' of the pandas DataFrame could not be read"):
        ck.audit(frame, columns={"probs": "p", "label": "y"})
    # a column the audit does not read is never converted
    frame["notes"] = pd.Series([1, "two"], dtype=object)
    frame["y"] = [0, 1]
    assert ck.audit(frame, columns={"probs": "p", "label": "y"}, **FAST).n == 2


def test_monitor_takes_a_table_and_groups_by_its_column() -> None:
    p, malignant = _malignant()
    frame = breast_cancer().assign(segment=np.where(np.arange(p.size) % 3 == 0, "new", "old"))
    settings = {"n_boot": 50, "n_sims": 200, "temperature": False}
    got = ck.monitor(frame, by="segment", columns={"probs": LR}, pos_label=0, **settings)
    expected = ck.monitor(p, malignant, by=frame["segment"].to_numpy(), **settings)
    assert got.by == "segment"
    assert [g.group for g in got.groups] == ["new", "old"]
    assert [g.ece for g in got.groups] == [g.ece for g in expected.groups]
    assert [g.band for g in got.groups] == [g.band for g in expected.groups]


def test_monitor_of_a_table_by_week_of_its_time_column() -> None:
    p, malignant = _malignant()
    days = np.datetime64("2024-01-01") + np.arange(p.size) % 21
    frame = pl.from_pandas(breast_cancer()).with_columns(pl.Series("date", days))
    settings = {"n_boot": 50, "n_sims": 200, "temperature": False}
    got = ck.monitor(frame, by="week", columns={"probs": LR}, pos_label=0, **settings)
    monday = days - ((days.astype(np.int64) + 3) % 7).astype("timedelta64[D]")  # 1970-01-01: Thu
    starts, sizes = np.unique(monday, return_counts=True)
    assert got.by == "week of date"
    assert [g.group for g in got.groups] == starts.tolist()
    assert [g.n for g in got.groups] == sizes.tolist()


def test_monitor_names_the_table_and_its_columns_in_errors() -> None:
    frame = breast_cancer()
    with pytest.raises(ck.InputError, match=r"^monitor: by='segment' is neither a column of the"):
        ck.monitor(frame, by="segment", columns={"probs": LR})
    with pytest.raises(
        ck.InputError, match=rf"^monitor: each row of probs .*columns {THREE} were read"
    ):
        ck.monitor(frame, by="image_id")


# ----------------------------------------------------------------------------- item 7: names


def test_three_binary_models_side_by_side_are_named_and_told_apart() -> None:
    """The three columns match proba_*, so they are read as one 3-class forecast; the message
    names them, the row, and how to audit one model."""
    with pytest.raises(ck.InputError) as info:
        ck.audit(breast_cancer())
    message = str(info.value)
    assert message.startswith("audit: each row of probs must sum to 1 (within 0.001); 285 rows")
    assert "first row 0 (proba_malignant_lr + proba_malignant_rf + proba_malignant_nb)" in message
    assert f"The 3 columns {THREE} were read as one 3-class forecast" in message
    assert "audit them one at a time: --probs proba_malignant_lr" in message
    assert "(probs='proba_malignant_lr' in columns=)" in message


def test_the_file_route_names_the_columns_too(tmp_path: Path) -> None:
    path = tmp_path / "three.parquet"
    pq.write_table(pa.Table.from_pandas(breast_cancer(), preserve_index=False), path)
    with pytest.raises(ck.InputError, match=rf"The 3 columns {THREE} were read as one"):
        ck.audit(str(path))


# ----------------------------------------------------------------------------- item 13: labels


@pytest.mark.parametrize("kind", TABLES)
def test_labels_written_as_words_need_pos_label(kind: str) -> None:
    p, malignant = _malignant()
    table = TABLES[kind](with_words(breast_cancer()))
    got = ck.audit(table, columns={"probs": LR}, pos_label="malignant", **FAST)
    _same(got, ck.audit(p, malignant, **FAST))
    with pytest.raises(
        ck.InputError,
        match=r"^audit: column 'y_true' holds text, two values: 'benign' and 'malignant'\. .*"
        r"with pos_label= \(--positive VALUE on the command line\), e\.g\. "
        r"pos_label='malignant'\.$",
    ):
        ck.audit(table, columns={"probs": LR})
    with pytest.raises(
        ck.InputError,
        match=r"^audit: pos_label='Malignant' is not a value of column 'y_true'; its values are "
        r"'benign', 'malignant'\.$",
    ):
        ck.audit(table, columns={"probs": LR}, pos_label="Malignant")


def test_arrays_take_pos_label_too() -> None:
    p, malignant = _malignant()
    words = np.where(malignant == 1, "malignant", "benign")
    for labels in (words, list(words), pd.Series(words), pl.Series(words), pa.array(words)):
        _same(ck.audit(p, labels, pos_label="malignant", **FAST), ck.audit(p, malignant, **FAST))
    with pytest.raises(ck.InputError, match=r"^audit: labels holds text, two values: 'benign'"):
        ck.audit(p, words)
    # any two values: the target itself is 0 for malignant
    _same(ck.audit(p, 1 - malignant, pos_label=0, **FAST), ck.audit(p, malignant, **FAST))


def test_two_numbers_other_than_0_and_1_say_to_pass_pos_label() -> None:
    p, y = classification()
    with pytest.raises(
        ck.InputError,
        match=r"labels must be 0 or 1 beside a 1-D forecast; \d+ values do not, first at index "
        r"\d+: 2\. The labels hold two values, 1 and 2: say which is the event .* with pos_label=",
    ):
        ck.audit(p, y + 1)
    _same(ck.audit(p, y + 1, pos_label=2, **FAST), ck.audit(p, y, **FAST))
    _same(ck.audit(p, 2 * y - 1, pos_label=1, **FAST), ck.audit(p, y, **FAST))


def test_more_than_two_label_values_beside_one_column_are_listed() -> None:
    _, probs, y = digits()
    names = np.array(["zero", "one", "two", "three", "four", "five", "six", "seven", "eight",
                      "nine"])[y]  # fmt: skip
    with pytest.raises(
        ck.InputError,
        match=r"^audit: a 1-D forecast is the probability of one event, but labels holds 10 "
        r"values: 'eight', 'five', 'four', 'nine', 'one', 'seven', 'six', 'three', 'two', "
        r"'zero'\. Pass the \(N, C\) class probabilities",
    ):
        ck.audit(probs[:, 3], names, pos_label="three")
    with pytest.raises(ck.InputError, match=r"labels holds 10 values: 0, 1, 2, 3, 4, 5, 6, 7, 8, "):
        ck.audit(probs[:, 3], y, pos_label=3)


def test_pos_label_belongs_to_a_one_column_forecast() -> None:
    _, probs, y = digits()
    with pytest.raises(
        ck.InputError, match=r"^audit: pos_label= says which label value a 1-D forecast is"
    ):
        ck.audit(probs, y, pos_label=3)
    frame = pd.DataFrame({**{f"prob_{k}": probs[:, k] for k in range(10)}, "y": y})
    with pytest.raises(ck.InputError, match=r"^audit: pos_label= \(--positive\) says which .* "
                       r"'prob_0', 'prob_1', .* hold 10 class scores a row"):  # fmt: skip
        ck.audit(frame, pos_label=3)
    with pytest.raises(ck.InputError, match=r"^audit: pos_label= turns labels into the outcome"):
        ck.audit(iter([(probs[:, 3], y == 3)]), pos_label=1)


def test_words_beside_several_columns_say_how_to_audit_one(tmp_path: Path) -> None:
    path = tmp_path / "words.csv"
    pcsv.write_csv(pa.Table.from_pandas(with_words(breast_cancer()), preserve_index=False), path)
    with pytest.raises(
        ck.InputError,
        match=r"column 'y_true' must hold numbers; it holds text, .* The labels of 3 probs "
        r"columns .* audit one at a time: probs='proba_malignant_lr' with pos_label= "
        r"\(--probs proba_malignant_lr --positive VALUE\)\.",
    ):
        read_predictions(path)
    p, malignant = _malignant()
    got = read_predictions(path, probs=LR, pos_label="malignant")
    assert got.labels.tolist() == malignant.tolist() and np.array_equal(got.scores, p)
    assert got.describe() == "words.csv (probs=proba_malignant_lr, label=y_true)"


# ----------------------------------------------------------------------------- item 6: apply


def _isotonic() -> ck.IsotonicCalibration:
    p, malignant = _malignant()
    return ck.IsotonicCalibration().fit(p, malignant)


def test_calibrate_table_keeps_every_other_column_in_place() -> None:
    frame = breast_cancer()
    scaler = _isotonic()
    out = calibrate_table(frame, scaler, columns={"probs": LR, "label": "y_true"})
    table = out.table
    assert table.column_names == [
        "image_id",
        "prob_1",
        "proba_malignant_rf",
        "proba_malignant_nb",
        "y_true",
    ]
    assert table.column("image_id").to_pylist() == frame["image_id"].tolist()
    assert table.column("y_true").to_pylist() == frame["y_true"].tolist()
    assert table.column("proba_malignant_nb").to_pylist() == frame["proba_malignant_nb"].tolist()
    expected = scaler.predict_proba(frame[LR].to_numpy())
    assert np.array_equal(table.column("prob_1").to_numpy(), expected)
    assert out.scores == (LR,) and out.calibrated == ("prob_1",) and out.label == "y_true"


def test_calibrate_table_keep_chooses_the_other_columns() -> None:
    frame = breast_cancer()
    scaler = _isotonic()
    columns = {"probs": LR, "label": "y_true"}
    assert calibrate_table(frame, scaler, columns=columns, keep="").table.column_names == [
        "prob_1",
        "y_true",
    ]
    kept = calibrate_table(frame, scaler, columns=columns, keep=["image_*", "proba_malignant_nb"])
    assert kept.table.column_names == ["image_id", "prob_1", "proba_malignant_nb", "y_true"]
    with pytest.raises(ck.InputError, match=r"no column of the pandas DataFrame matches 'id_\*'"):
        calibrate_table(frame, scaler, columns=columns, keep="id_*")
    with pytest.raises(ck.InputError, match=f"keep names '{LR}', a score column"):
        calibrate_table(frame, scaler, columns=columns, keep=LR)


def test_a_kept_column_named_like_a_calibrated_one_is_refused() -> None:
    frame = breast_cancer().rename(columns={"proba_malignant_rf": "Prob_1"})
    with pytest.raises(
        ck.InputError,
        match=r"the column 'Prob_1' of the pandas DataFrame would be kept beside the calibrated "
        r"column 'prob_1' \(names are compared without regard to case\)",
    ):
        calibrate_table(frame, _isotonic(), columns={"probs": LR, "label": "y_true"})


def test_calibrate_table_of_multiclass_logits_puts_the_probabilities_where_they_were() -> None:
    z, _, y = digits()
    scaler = ck.TemperatureScaling().fit(z, y)
    frame = pl.DataFrame({"id": np.arange(y.size), **{f"logit_{k}": z[:, k] for k in range(10)}})
    frame = frame.with_columns(pl.Series("digit", y))
    out = calibrate_table(frame, scaler, columns={"label": "digit"})
    assert out.table.column_names == ["id", *(f"prob_{k}" for k in range(10)), "digit"]
    got = np.column_stack([out.table.column(f"prob_{k}").to_numpy() for k in range(10)])
    assert np.array_equal(got, scaler.predict_proba(z))


def test_an_npz_keeps_its_label_array_and_the_arrays_of_each_row(tmp_path: Path) -> None:
    z, _, y = digits()
    scaler = ck.TemperatureScaling().fit(z, y)
    path = tmp_path / "digits.npz"
    np.savez(path, test_logits=z, test_labels=y, embedding=z[:, :3], val_labels=y[:100])
    out = calibrate_table(str(path), scaler, columns={"logits": "test_logits"})
    probs = [f"prob_{k}" for k in range(10)]
    assert out.table.column_names == [*probs, "test_labels", "embedding"]
    assert out.left_out == {"val_labels": f"100 rows, not {y.size}"}
    assert out.table.column("test_labels").to_pylist() == y.tolist()
    with_label = calibrate_table(
        str(path), scaler, columns={"logits": "test_logits", "label": "test_labels"}, keep=""
    )
    assert with_label.table.column_names == [*probs, "test_labels"]
    with_label = calibrate_table(str(path), scaler, columns={"logits": "test_logits"}, keep="emb*")
    assert with_label.table.column_names == [*probs, "embedding"]
    assert with_label.table.column("embedding").to_pylist()[5] == z[5, :3].tolist()
    with pytest.raises(ck.InputError, match="array 'val_labels' of .* has 100 rows, not"):
        calibrate_table(str(path), scaler, columns={"logits": "test_logits"}, keep="val_labels")
    parquet = tmp_path / "o.parquet"
    write_table(parquet, with_label.table)
    assert pq.read_table(parquet).column("embedding").to_pylist()[5] == z[5, :3].tolist()
    with pytest.raises(ck.InputError, match=r"as CSV: 'embedding' holds a list a row"):
        write_table(tmp_path / "o.csv", with_label.table)
    assert not (tmp_path / "o.csv").exists()


def test_a_csv_keeps_its_columns_as_written(tmp_path: Path) -> None:
    """IDs written with leading zeros stay text; numbers and text keep their types."""
    p, y = classification()
    path = tmp_path / "scored.csv"
    ids = [f"{i:05d}" for i in range(p.size)]
    rows = "".join(f"{i},{x!r},{t},{'ab'[t]}\n" for i, x, t in zip(ids, p.tolist(), y, strict=True))
    path.write_text("zip,p_default,target,letter\n" + rows)
    scaler = ck.PlattScaling(from_logits=False).fit(p, y)
    table = calibrate_table(str(path), scaler).table
    assert table.column_names == ["zip", "prob_1", "target", "letter"]
    assert table.column("zip").to_pylist() == ids
    assert table.column("target").type == pa.int64()
    assert table.column("letter").to_pylist() == ["ab"[t] for t in y]


def test_a_column_major_array_gives_the_numbers_of_a_row_major_one() -> None:
    _, probs, y = digits()
    _same(ck.audit(np.asfortranarray(probs), y, **FAST), ck.audit(probs, y, **FAST))
