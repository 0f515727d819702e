"""calibkit.io.read_predictions: formats, detection rules, ambiguity and error messages."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import calibkit as ck
from calibkit import InputError
from calibkit.io import Predictions, read_predictions

FAST = dict(n_boot=200, n_sims=200)


def _data(n: int = 120, c: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    probs = ck.softmax(rng.normal(0, 2, (n, c)))
    labels = np.array([rng.choice(c, p=row) for row in probs])
    return probs, labels


def write(path: Path, columns: dict[str, list | np.ndarray]) -> Path:
    """Write named columns in the format the extension says (lists of lists: list columns)."""
    names = list(columns)
    values = [
        np.asarray(v).tolist() if isinstance(v, np.ndarray) else list(v) for v in columns.values()
    ]
    n = len(values[0])
    suffix = path.suffix
    if suffix in (".csv", ".tsv"):
        sep = "\t" if suffix == ".tsv" else ","
        lines = [sep.join(names)]
        for i in range(n):
            lines.append(
                sep.join(
                    "" if v[i] is None else repr(v[i]) if isinstance(v[i], float) else str(v[i])
                    for v in values
                )
            )
        path.write_text("\n".join(lines) + "\n")
    elif suffix == ".jsonl":
        rows = [json.dumps({k: v[i] for k, v in zip(names, values, strict=True)}) for i in range(n)]
        path.write_text("\n".join(rows) + "\n")
    elif suffix == ".parquet":
        pq.write_table(pa.table(dict(zip(names, values, strict=True))), path)
    elif suffix == ".npz":
        np.savez(path, **{k: np.asarray(v) for k, v in columns.items()})
    else:
        raise ValueError(suffix)
    return path


def prob_columns(probs: np.ndarray, prefix: str = "prob_") -> dict[str, np.ndarray]:
    return {f"{prefix}{j}": probs[:, j] for j in range(probs.shape[1])}


# ----------------------------------------------------------------------------- formats


@pytest.mark.parametrize("ext", [".csv", ".tsv", ".parquet", ".jsonl", ".npz"])
def test_each_format_reads_and_audits_like_the_arrays(tmp_path, ext):
    probs, labels = _data()
    if ext == ".npz":
        path = write(tmp_path / "p.npz", {"probs": probs, "labels": labels})
        expected_columns = {"probs": "probs", "label": "labels"}
    else:
        path = write(tmp_path / f"p{ext}", {**prob_columns(probs), "label": labels})
        expected_columns = {"probs": ["prob_0", "prob_1", "prob_2"], "label": "label"}
    p = read_predictions(path)
    assert isinstance(p, Predictions)
    assert p.kind == "probs" and p.path == path and p.columns == expected_columns
    np.testing.assert_array_equal(p.scores, probs)
    np.testing.assert_array_equal(p.labels, labels)
    got = ck.audit(p.scores, p.labels, **FAST)
    want = ck.audit(probs, labels, **FAST)
    assert got.to_dict() == want.to_dict()


def test_format_option_overrides_the_extension(tmp_path):
    probs, labels = _data()
    path = write(tmp_path / "p.csv", {**prob_columns(probs), "label": labels})
    other = path.rename(tmp_path / "predictions.txt")
    p = read_predictions(other, format="csv")
    assert p.format == "csv"
    np.testing.assert_array_equal(p.scores, probs)


def test_compressed_csv(tmp_path):
    import gzip

    probs, labels = _data()
    path = write(tmp_path / "p.csv", {**prob_columns(probs), "label": labels})
    gz = tmp_path / "p.csv.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    np.testing.assert_array_equal(read_predictions(gz).scores, probs)


def test_predictions_is_frozen_and_describes_itself(tmp_path):
    probs, labels = _data()
    p = read_predictions(write(tmp_path / "p.csv", {**prob_columns(probs), "label": labels}))
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.kind = "logits"  # type: ignore[misc]
    assert p.n == len(labels)
    assert p.describe() == "p.csv (probs=prob_0 .. prob_2 (3 columns), label=label)"
    assert "probs 120x3" in str(p)


# ----------------------------------------------------------------------------- detection


@pytest.mark.parametrize(
    "name", ["label", "labels", "y", "target", "true_label", "y_true", "Label"]
)
def test_label_column_names(tmp_path, name):
    probs, labels = _data()
    p = read_predictions(write(tmp_path / "p.csv", {**prob_columns(probs), name: labels}))
    assert p.columns["label"] == name
    np.testing.assert_array_equal(p.labels, labels)


@pytest.mark.parametrize("prefix", ["prob_", "p_", "proba_", "PROB_"])
def test_probability_column_prefixes(tmp_path, prefix):
    probs, labels = _data()
    p = read_predictions(write(tmp_path / "p.csv", {**prob_columns(probs, prefix), "y": labels}))
    assert p.kind == "probs"
    np.testing.assert_array_equal(p.scores, probs)


def test_probability_columns_go_in_numeric_order(tmp_path):
    probs, labels = _data(c=11)
    cols = prob_columns(probs)
    shuffled = {
        k: cols[k]
        for k in ["prob_10", "prob_2", "prob_0", "prob_1", *[f"prob_{j}" for j in range(3, 10)]]
    }
    p = read_predictions(write(tmp_path / "p.csv", {"label": labels, **shuffled}))
    assert p.columns["probs"] == [f"prob_{j}" for j in range(11)]
    np.testing.assert_array_equal(p.scores, probs)


def test_logit_columns(tmp_path):
    rng = np.random.default_rng(1)
    logits, labels = rng.normal(size=(50, 4)), rng.integers(0, 4, 50)
    path = write(tmp_path / "p.parquet", {**prob_columns(logits, "logit_"), "target": labels})
    p = read_predictions(path)
    assert p.kind == "logits"
    np.testing.assert_array_equal(p.scores, logits)
    a = ck.audit(p.scores, p.labels, from_logits=True, **FAST)
    assert a.ece == ck.audit(logits, labels, from_logits=True, **FAST).ece


@pytest.mark.parametrize("ext", [".parquet", ".jsonl"])
def test_list_column_is_a_matrix(tmp_path, ext):
    probs, labels = _data()
    p = read_predictions(write(tmp_path / f"p{ext}", {"probs": probs.tolist(), "y": labels}))
    assert p.kind == "probs" and p.columns == {"probs": "probs", "label": "y"}
    np.testing.assert_array_equal(p.scores, probs)


@pytest.mark.parametrize(
    ("scores_key", "label_key", "kind"),
    [("probs", "labels", "probs"), ("probabilities", "label", "probs"), ("logits", "y", "logits")],
)
def test_npz_keys(tmp_path, scores_key, label_key, kind):
    probs, labels = _data()
    scores = np.log(probs) if kind == "logits" else probs
    p = read_predictions(write(tmp_path / "p.npz", {scores_key: scores, label_key: labels}))
    assert p.kind == kind and p.columns == {kind: scores_key, "label": label_key}
    np.testing.assert_array_equal(p.scores, scores)


def test_single_probability_column_is_a_binary_forecast(tmp_path):
    p1 = np.array([0.1, 0.8, 0.6, 0.3])
    p = read_predictions(write(tmp_path / "p.csv", {"p_1": p1, "y": [0, 1, 1, 0]}))
    assert p.kind == "probs" and p.scores.shape == (4,)
    assert ck.audit(p.scores, p.labels, **FAST).kind == "binary"


@pytest.mark.parametrize(
    ("ext", "values"),
    [
        (".csv", ["TRUE", "FALSE", "TRUE", "TRUE"]),
        (".csv", ["true", "false", "true", "true"]),
        (".csv", [1, 0, 1, 1]),
        (".jsonl", ["TRUE", "False", "true", "1"]),
        (".jsonl", [True, False, True, True]),
        (".npz", [True, False, True, True]),
    ],
)
def test_confidence_and_correct(tmp_path, ext, values):
    conf = [0.9, 0.8, 0.7, 0.6]
    p = read_predictions(write(tmp_path / f"p{ext}", {"confidence": conf, "correct": values}))
    assert p.kind == "confidence" and p.columns == {
        "confidence": "confidence",
        "correct": "correct",
    }
    np.testing.assert_array_equal(p.scores, conf)
    np.testing.assert_array_equal(p.labels, [1, 0, 1, 1])


def test_confidence_prediction_label_detected(tmp_path):
    path = write(
        tmp_path / "top1.csv",
        {"true_label": [3, 1, 2], "pred_label": [3, 1, 0], "confidence": [0.9, 0.6, 0.8]},
    )
    p = read_predictions(path)
    assert p.columns == {
        "confidence": "confidence",
        "prediction": "pred_label",
        "label": "true_label",
    }
    np.testing.assert_array_equal(p.labels, [1, 1, 0])


def test_text_predictions_compare_with_text_labels(tmp_path):
    path = write(
        tmp_path / "p.csv",
        {"answer": ["A", "B", "C"], "gold": ["A", "C", "C"], "conf": [0.9, 0.6, 0.8]},
    )
    p = read_predictions(path, confidence="conf", prediction="answer", label="gold")
    np.testing.assert_array_equal(p.labels, [1, 0, 1])


# ----------------------------------------------------------------------------- options


@pytest.mark.parametrize(
    "spec",
    [
        ["prob_0", "prob_1", "prob_2"],
        "prob_0,prob_1,prob_2",
        "prob_0, prob_1, prob_2",
        "prob_*",
        "prob_[0-2]",
    ],
)
def test_probs_option_forms(tmp_path, spec):
    probs, labels = _data()
    cols = {**prob_columns(probs), **prob_columns(probs, "p_"), "truth": labels}
    p = read_predictions(write(tmp_path / "p.csv", cols), probs=spec, label="truth")
    assert p.columns["probs"] == ["prob_0", "prob_1", "prob_2"]
    np.testing.assert_array_equal(p.scores, probs)


def test_probs_option_keeps_the_given_order(tmp_path):
    probs, labels = _data()
    p = read_predictions(
        write(tmp_path / "p.csv", {**prob_columns(probs), "y": labels}),
        probs="prob_2,prob_0,prob_1",
    )
    np.testing.assert_array_equal(p.scores, probs[:, [2, 0, 1]])


def test_npz_named_arrays_and_logits_option():
    path = Path(__file__).parents[1] / "examples" / "data" / "densenet40_cifar10_logits.npz"
    p = read_predictions(path, logits="test_logits", label="test_labels")
    assert p.kind == "logits" and p.scores.shape == (10000, 10)
    assert p.columns == {"logits": "test_logits", "label": "test_labels"}


def test_numbers_are_not_checked_when_reading(tmp_path):
    # ranges and row sums are the audit's business (one validation module)
    path = write(tmp_path / "p.csv", {"prob_0": [3.0, 1.0], "prob_1": [2.0, 4.0], "y": [0, 1]})
    p = read_predictions(path)
    with pytest.raises(InputError, match="If these are logits"):
        ck.audit(p.scores, p.labels, **FAST)


# ----------------------------------------------------------------------------- ambiguity


@pytest.mark.parametrize(
    ("columns", "match"),
    [
        (
            {"prob_0": [0.5], "prob_1": [0.5], "logit_0": [0.0], "logit_1": [0.0], "y": [1]},
            r"more than one kind of score \(probs: prob_0 \.\. prob_1; logits: logit_0 \.\. logit_1\)"
            r"; pass one of probs= \(--probs\), logits= \(--logits\)",
        ),
        (
            {"prob_0": [0.5], "prob_1": [0.5], "confidence": [0.5], "y": [1]},
            r"more than one kind of score.*confidence= \(--confidence\)",
        ),
        (
            {"prob_0": [0.5], "prob_1": [0.5], "p_0": [0.5], "p_1": [0.5], "y": [1]},
            r"more than one group of probs columns \(probs: prob_0 \.\. prob_1 / p_0 \.\. p_1\); "
            r"pass probs= \(--probs\)",
        ),
        (
            {"prob_0": [0.5], "prob_1": [0.5], "label": [1], "y": [1]},
            r"which column holds the labels .*: label, y all could\. Pass label=NAME \(--label NAME",
        ),
        (
            {"prob_0": [0.5], "prob_1": [0.5], "klass": [1]},
            r"which column holds the labels .*none is named label, labels, y, target, true_label, "
            r"y_true; columns: prob_0, prob_1, klass\. Pass label=NAME",
        ),
        (
            {"score": [0.5], "y": [1]},
            r"cannot find the model's scores .*columns: score, y\. Pass probs=, logits= or "
            r"confidence= \(--probs, --logits, --confidence\); perhaps score",
        ),
        (
            {"confidence": [0.5], "correct": [1], "pred": [1], "label": [1]},
            r"both a correctness column \(correct\) and a prediction column \(pred\); pass correct=",
        ),
        (
            {"confidence": [0.5], "y": [1]},
            r"cannot tell whether each prediction was correct.*columns: confidence, y\. Pass correct=",
        ),
    ],
)
def test_ambiguous_or_failed_detection(tmp_path, columns, match):
    with pytest.raises(InputError, match=match):
        read_predictions(write(tmp_path / "p.csv", columns))


def test_npz_without_standard_names_lists_the_arrays():
    path = Path(__file__).parents[1] / "examples" / "data" / "densenet40_cifar10_logits.npz"
    with pytest.raises(
        InputError,
        match=r"arrays: val_logits, val_labels, test_logits, "
        r"test_labels\. .*perhaps val_logits, test_logits",
    ):
        read_predictions(path)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        (dict(probs="prob_*", logits="prob_*"), "pass probs= or logits=, not both"),
        (dict(probs="prob_*", correct="c"), r"probs= takes class scores .* correct="),
        (dict(confidence="c", correct="c", label="y"), "correct= gives the outcome directly"),
        (dict(probs="nope_*"), r"no column of .* matches 'nope_\*' \(probs=\); columns: prob_0, "),
        (dict(probs=""), "probs= needs column names"),
        (dict(probs="prob_0,prob_0,prob_1"), "probs= names prob_0 more than once"),
    ],
)
def test_conflicting_or_bad_options(tmp_path, options, match):
    path = write(tmp_path / "p.csv", {"prob_0": [0.5], "prob_1": [0.5], "c": [1], "y": [1]})
    with pytest.raises(InputError, match=match):
        read_predictions(path, **options)


# ----------------------------------------------------------------------------- errors


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match=r"read_predictions: no such file: '.*nope\.csv'"):
        read_predictions(tmp_path / "nope.csv")


def test_directory(tmp_path):
    with pytest.raises(InputError, match="is a directory; pass a prediction file"):
        read_predictions(tmp_path)


def test_permission_denied(tmp_path, monkeypatch):
    path = write(tmp_path / "p.csv", {"confidence": [0.5], "correct": [1]})
    monkeypatch.setattr(os, "access", lambda *a, **k: False)
    with pytest.raises(InputError, match="cannot read .*: permission denied"):
        read_predictions(path)


def test_one_extension_map_tells_every_format():
    from calibkit.io import EXTENSIONS, format_from_extension, resolve_format

    names = ["a.csv", "a.TSV", "a.tab", "a.parquet", "a.pq", "a.jsonl", "a.ndjson", "a.npz"]
    assert [format_from_extension(n) for n in names] == [
        "csv",
        "tsv",
        "tsv",
        "parquet",
        "parquet",
        "jsonl",
        "jsonl",
        "npz",
    ]
    assert format_from_extension("a.csv.gz") == "csv" and format_from_extension("a.txt") is None
    assert all(resolve_format(Path(f"a{ext}"), None) == fmt for ext, fmt in EXTENSIONS.items())


@pytest.mark.parametrize(
    ("name", "options", "match"),
    [
        (
            "p.txt",
            {},
            r"cannot tell the format of '.*p\.txt' from its extension '\.txt'.* Pass "
            r"format= one of csv, tsv, parquet, jsonl, npz \(--format",
        ),
        ("p", {}, r"extension '\(none\)'"),
        ("p.json", {}, r"For JSON lines, name the file \.jsonl or pass format='jsonl'"),
        ("p.csv", {"format": "xlsx"}, r"unknown format 'xlsx'; use one of csv, tsv"),
    ],
)
def test_unknown_format(tmp_path, name, options, match):
    path = tmp_path / name
    path.write_text("confidence,correct\n0.5,1\n")
    with pytest.raises(InputError, match=match):
        read_predictions(path, **options)


@pytest.mark.parametrize(
    ("name", "content", "match"),
    [
        (
            "p.csv",
            b"confidence,correct\n0.5,1\n0.6,1,7\n",
            r"could not read '.*p\.csv' as CSV: CSV parse error: Expected 2 columns, got 3",
        ),
        ("p.csv", b"", r"could not read .* as CSV: Empty CSV file"),
        ("p.tsv", b"confidence\tcorrect\n0.5\n", r"as TSV: CSV parse error"),
        (
            "p.jsonl",
            b'{"confidence": 0.5, "correct": 1}\n{"confidence": 0.5,\n',
            r"could not read .* as JSONL: ",
        ),
        ("p.parquet", b"PAR1 not really parquet", r"could not read .* as PARQUET: "),
        ("p.npz", b"not a zip", r"could not read .* as NPZ: not a zip archive"),
    ],
)
def test_malformed_files(tmp_path, name, content, match):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(InputError, match=match) as info:
        read_predictions(path)
    assert "\n" not in str(info.value)


def test_npz_holding_one_array(tmp_path):
    path = tmp_path / "p.npz"
    with path.open("wb") as f:  # a single array saved under an .npz name is a zip of one .npy
        np.save(f, np.zeros(3))
    with pytest.raises(InputError, match="as NPZ"):
        read_predictions(path)


@pytest.mark.parametrize("ext", [".csv", ".parquet", ".npz"])
def test_missing_column_names_the_columns(tmp_path, ext):
    path = write(tmp_path / f"p{ext}", {"conf": [0.5, 0.7], "ok": [1, 0]})
    word = "array" if ext == ".npz" else "column"
    with pytest.raises(InputError, match=rf"has no {word} 'correct'; {word}s: conf, ok\."):
        read_predictions(path, confidence="conf", correct="correct")


@pytest.mark.parametrize("ext", [".csv", ".parquet", ".jsonl"])
def test_nulls_are_counted_never_dropped(tmp_path, ext):
    path = write(
        tmp_path / f"p{ext}",
        {"confidence": [0.5, None, 0.7, None], "correct": [1, 0, 1, 1], "unused": [None] * 4},
    )
    with pytest.raises(
        InputError,
        match=r"column 'confidence' has 2 missing values "
        r"\(null/empty/NaN\), first at row 1 .* does not drop",
    ):
        read_predictions(path)


def test_nan_text_in_csv_is_a_missing_value(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("confidence,correct\n0.5,1\n0.6,NaN\n")
    with pytest.raises(InputError, match=r"'correct' has 1 missing value \(.*first at row 1"):
        read_predictions(path)


def test_null_inside_a_list_column(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"probs": [0.5, 0.5], "y": 0}\n{"probs": [0.5, null], "y": 1}\n')
    with pytest.raises(InputError, match="'probs' has 1 missing value .*first at row 1"):
        read_predictions(path)


def test_ragged_list_column(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text('{"probs": [0.5, 0.5], "y": 0}\n{"probs": [1.0], "y": 0}\n')
    with pytest.raises(InputError, match="lists of different lengths: row 0 has 2 values, row 1"):
        read_predictions(path)


@pytest.mark.parametrize(
    ("columns", "options", "match"),
    [
        (
            {"prob_0": [0.5, 0.5, 0.1], "prob_1": [0.5, 0.5, 0.9], "y": ["0", "1", "cat"]},
            {},
            r"column 'y' must hold numbers; it holds text, first non-number at row 2: 'cat'",
        ),
        (
            {"confidence": ["high", "0.5"], "correct": [1, 0]},
            {},
            r"column 'confidence' must hold numbers; it holds text, first non-number at row 0: 'high'",
        ),
        (
            {"confidence": [0.5, 0.6, 0.7], "correct": ["yes", "no", "maybe"]},
            {},
            r"column 'correct' must hold 0/1 or TRUE/FALSE; 3 values do not, first at row 0: 'yes'",
        ),
        (
            {"confidence": [0.5, 0.6], "pred": ["A", "B"], "label": [0, 1]},
            {},
            r"column 'pred' holds text but 'label' holds numbers",
        ),
    ],
)
def test_non_numeric_values(tmp_path, columns, options, match):
    with pytest.raises(InputError, match=match):
        read_predictions(write(tmp_path / "p.csv", columns), **options)


def test_numbers_written_as_text(tmp_path):
    path = write(tmp_path / "p.jsonl", {"confidence": ["0.5", "0.6"], "correct": [1, 0]})
    with pytest.raises(InputError, match="holds numbers written as text"):
        read_predictions(path)


def test_npz_arrays_of_different_lengths(tmp_path):
    path = write(tmp_path / "p.npz", {"logits": np.zeros((4, 3)), "labels": np.zeros(3, int)})
    with pytest.raises(
        InputError,
        match=r"one row per prediction, but 'logits' has 4, "
        r"'labels' has 3",
    ):
        read_predictions(path)


def test_npz_text_array_as_labels(tmp_path):
    path = write(
        tmp_path / "p.npz", {"probs": np.full((2, 2), 0.5), "labels": np.array(["a", "b"])}
    )
    with pytest.raises(InputError, match="array 'labels' must hold numbers"):
        read_predictions(path)


def test_duplicate_column_names(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("confidence,correct,correct\n0.5,1,0\n")
    with pytest.raises(InputError, match="has 2 columns named 'correct'"):
        read_predictions(path)


# ----------------------------------------------------------------------------- import cost


def test_import_calibkit_stays_light():
    code = (
        "import sys, calibkit, calibkit.report; "
        "print([m for m in ('pyarrow', 'rich', 'typer') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ----------------------------------------------------------------------------- arrow to numpy


@pytest.mark.parametrize(
    "column",
    [
        pa.array([1.5, -2.0, 3.25], pa.float64()),
        pa.array([1.5, -2.0, 3.25], pa.float32()),
        pa.array([1.5, -2.0, 3.25], pa.float16()),
        pa.array([1, -2, 3, 4], pa.int8()).slice(1),
        pa.array([1, 2, 3, 2**40], pa.int64()).slice(2, 2),
        pa.array([7, 8, 9], pa.uint16()),
        pa.array([True, False, True, True, False, False, True, False, True, True]).slice(3, 6),
        pa.chunked_array([[0.5, 0.25], [1.0]]),
        pa.chunked_array([[True], [False, True]]),
        pa.array([], pa.float64()),
        pa.array([1.0, None, 3.0]),  # nulls: pyarrow's own conversion
        pa.array(["a", "b"]),
    ],
)
def test_arrow_columns_become_the_numpy_arrays_pyarrow_makes(column) -> None:
    from calibkit._arrow import to_numpy

    got = to_numpy(column)
    want = np.asarray(column.to_numpy(zero_copy_only=False))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_reading_a_csv_of_numbers_does_not_import_pandas(tmp_path) -> None:
    """pyarrow's to_numpy imports pandas (about 0.2 s on a small file's audit)."""
    path = tmp_path / "preds.csv"
    path.write_text("label,prob_0,prob_1\n0,0.8,0.2\n1,0.3,0.7\n1,0.4,0.6\n")
    code = (
        "import sys, calibkit as ck; p = ck.read_predictions(sys.argv[1]); "
        "print(p.scores.shape, 'pandas' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["(3,", "2)", "False"]


# ----------------------------------------------------------------------------- weight column


def test_a_weight_column_is_read_by_the_cell_rules(tmp_path) -> None:
    path = tmp_path / "w.csv"
    path.write_text("p,y,w\n0.3,1, +2 \n0.6,0,.5\n0.2,0,0\n0.9,1,1e1\n")
    p = read_predictions(path, columns={"probs": "p", "label": "y", "weight": "w"})
    assert p.sample_weight is not None and p.sample_weight.dtype == np.float64
    assert p.sample_weight.tolist() == [2.0, 0.5, 0.0, 10.0]
    assert p.columns == {"probs": "p", "label": "y", "weight": "w"}
    assert read_predictions(path, probs="p", label="y", weight="w").sample_weight.tolist() == [
        2.0,
        0.5,
        0.0,
        10.0,
    ]
    assert read_predictions(path, probs="p", label="y").sample_weight is None


def test_a_weight_column_in_parquet_and_a_table_in_memory(tmp_path) -> None:
    table = pa.table({"c": [0.9, 0.6], "ok": [True, False], "weight": [3, 1]})
    path = tmp_path / "w.parquet"
    pq.write_table(table, path)
    for source in (path, table):
        p = read_predictions(source, confidence="c", correct="ok", weight="weight")
        assert p.sample_weight.tolist() == [3.0, 1.0] and p.labels.tolist() == [1, 0]
    # a column named "weight" is never taken as the weights unless named
    assert read_predictions(path, confidence="c", correct="ok").sample_weight is None


@pytest.mark.parametrize(
    ("cells", "match"),
    [
        ("1,x,1", r"column 'w' must hold numbers; it holds text, first non-number at row 1: 'x'"),
        ("1,,1", r"column 'w' has 1 missing value .*first at row 1"),
        ("1,NaN,1", r"column 'w' has 1 missing value .*1 value is NaN"),
        ("1,-2,-0.5", r"weight column 'w' has negative values: 2 rows of 3, first at row 1: -2.0"),
        ("1,1,-inf", r"weight column 'w' has infinite values: 1 row of 3, first at row 2: -inf"),
        ("0,0,0.0", r"every weight in column 'w' is zero"),
    ],
)
def test_bad_weight_cells_are_refused_naming_column_and_row(tmp_path, cells, match) -> None:
    path = tmp_path / "w.csv"
    weights = cells.split(",")
    path.write_text("p,y,w\n" + "".join(f"0.5,1,{w}\n" for w in weights))
    with pytest.raises(InputError, match=match):
        read_predictions(path, probs="p", label="y", weight="w")


def test_the_weight_role_given_twice_or_shared_is_refused(tmp_path) -> None:
    path = tmp_path / "w.csv"
    path.write_text("p,y,w\n0.3,1,1\n")
    with pytest.raises(InputError, match="weight is given twice"):
        read_predictions(path, probs="p", label="y", weight="w", columns={"weight": "w"})
    with pytest.raises(InputError, match="weight='p' is also the probs column"):
        read_predictions(path, probs="p", label="y", weight="p")
    with pytest.raises(InputError, match="columns= has no role 'weights'"):
        read_predictions(path, columns={"probs": "p", "label": "y", "weights": "w"})
