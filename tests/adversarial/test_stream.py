"""Bad input against the streaming engine and the per-group SQL of the monitor.

- Group values that are SQL to a careless query (quotes, backslashes, comment markers, parameter
  markers, Unicode) are values to DuckDB and Spark: every group gets the numbers the memory
  engine gives it, recomputed here from that group's rows alone.
- A stream's bad values are counted over the whole stream, not per chunk, and the first one's
  row is its row in the stream.
- A re-readable stream must give the same rows on every pass; a change of shape between
  chunks is named with the chunk's index.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import calibkit as ck
from calibkit.engines._plan import Binning
from calibkit.engines.stream import summarize_stream

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cli_helpers import assert_bad_input  # noqa: E402

#: pyspark checks the pandas version when it first touches pandas; these tests use none
pytestmark = pytest.mark.filterwarnings(
    "ignore:PySpark does not yet fully support pandas:FutureWarning"
)

Chunks = list[tuple[np.ndarray, np.ndarray]]

#: Segment values a query that splices text would break on (or be steered by).
HOSTILE = [
    "'",
    "\\",
    "C:\\data\\",
    "-- comment",
    "/* open",
    ";",
    "x' OR '1'='1",
    "a\\' THEN 0 ELSE",
    "?",
    ":g0",
    "$g0",
    "naïve café ß",
    "日本語",
    "😀",
]
PER_GROUP, CLASSES, N_BINS = 300, 3, 15


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """The active SparkSession, or a local one (two cores, no UI) stopped after this module."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    session = active or (
        SparkSession.builder.master("local[2]")
        .appName("calibkit-adversarial")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    try:
        yield session
    finally:
        if active is None:
            session.stop()


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.fixture(scope="module")
def segments(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Logits of every hostile segment, each made over-confident by its own factor (1.0, 1.1,
    ...): the groups' temperatures all differ, so a group fitted with another's beta shows."""
    rng = np.random.default_rng(12)
    n = len(HOSTILE) * PER_GROUP
    z = rng.normal(0.0, 1.5, (n, CLASSES))
    y = (z + rng.gumbel(size=z.shape)).argmax(axis=1)  # labels drawn from softmax(z)
    group = np.repeat(np.arange(len(HOSTILE)), PER_GROUP)
    logits = z * (1.0 + 0.1 * group)[:, None]
    segment = np.array(HOSTILE, dtype=object)[group]
    order = rng.permutation(n)  # the groups interleaved in the file
    table = pa.table(
        {
            **{f"logit_{k}": logits[order, k] for k in range(CLASSES)},
            "label": y[order],
            "segment": pa.array(segment[order].tolist(), pa.string()),
        }
    )
    path = tmp_path_factory.mktemp("segments") / "segments.parquet"
    pq.write_table(table, path)
    return path, logits[order], y[order], segment[order]


def _ece_by_hand(logits: np.ndarray, y: np.ndarray) -> float:
    """Top-label ECE over 15 uniform bins closed on the right, (a, b], 0 in the first."""
    p = _softmax(logits)
    conf, hit = p.max(axis=1), (p.argmax(axis=1) == y)
    b = np.clip(np.ceil(conf * N_BINS).astype(int) - 1, 0, N_BINS - 1)
    total = 0.0
    for k in range(N_BINS):
        rows = b == k
        if rows.any():
            total += rows.sum() * abs(conf[rows].mean() - hit[rows].mean())
    return total / y.size


@pytest.mark.parametrize("engine", ["memory", "duckdb", "spark"])
def test_hostile_group_values_are_values(segments: Any, engine: str, request: Any) -> None:
    path, logits, y, segment = segments
    data: Any = path
    if engine == "spark":
        data = request.getfixturevalue("spark").read.parquet(str(path))
    m = ck.monitor(data, by="segment", engine=engine, n_boot=50, n_sims=50)
    assert [g.group for g in m.groups] == sorted(HOSTILE)
    for g in m.groups:
        rows = segment == g.group
        assert g.n == PER_GROUP
        assert g.n_correct == int((logits[rows].argmax(axis=1) == y[rows]).sum())
        assert g.ece == pytest.approx(_ece_by_hand(logits[rows], y[rows]), rel=1e-9, abs=1e-12)
        assert g.temperature_note is None
        # the group's own maximum-likelihood temperature, fitted on its rows alone
        assert g.temperature == pytest.approx(
            ck.fit_temperature(logits[rows], y[rows]), rel=1e-9
        ), repr(g.group)
    temperatures = sorted(g.temperature for g in m.groups)
    assert min(np.diff(temperatures)) > 1e-4  # fourteen different fits, none shared


def test_monitor_cli_by_a_hostile_column_on_spark(segments: Any, spark: Any) -> None:
    """``calibkit monitor --by segment --engine spark`` (which takes the active session)."""
    import json

    from calibkit.cli import app

    path, logits, y, segment = segments
    result = CliRunner().invoke(
        app,
        ["monitor", str(path), "--by", "segment", "--engine", "spark", "--json",
         "--n-boot", "50", "--n-sims", "50"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert [g["group"] for g in report["groups"]] == sorted(HOSTILE)
    first = sorted(HOSTILE)[0]
    rows = segment == first
    assert report["groups"][0]["temperature"] == pytest.approx(
        ck.fit_temperature(logits[rows], y[rows]), rel=1e-9
    )


# ----------------------------------------------------------------------------- totals


def _binary(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.random(n)
    return p, (rng.random(n) < p).astype(int)


def _cut(p: np.ndarray, y: np.ndarray, size: int) -> Chunks:
    return [(p[i : i + size], y[i : i + size]) for i in range(0, p.shape[0], size)]


def test_nan_is_counted_over_every_chunk() -> None:
    """Five NaN in chunks 0, 1 and 3 of four: five in all, the first at row 12 of the stream
    (the old message said "2 values are NaN", the count of the first bad chunk)."""
    p, y = _binary(100, 0)
    p[[12, 13, 40, 41, 77]] = np.nan
    chunks = _cut(p, y, 25)
    match = "5 values are NaN, first at row 12 of the stream"
    with pytest.raises(ck.InputError, match=match) as caught:
        summarize_stream(lambda: iter(chunks), binning=Binning())
    assert "at least" not in str(caught.value)
    with pytest.raises(ck.InputError, match=match):  # read once
        ck.audit(iter(chunks), engine="stream")


def test_the_first_bad_row_is_counted_from_the_start_of_the_stream() -> None:
    """Values outside [0, 1] only in the third chunk (rows 60..89): at row 60 + 7 of the
    stream, with its value, and a logit in a two-dimensional chunk by row and column."""
    p, y = _binary(90, 1)
    p[[67, 80]] = [1.5, -0.25]
    chunks = [(np.array([]), np.array([])), *_cut(p, y, 30)]
    with pytest.raises(ck.InputError, match="2 values do not, first at row 67 of the stream: 1.5"):
        summarize_stream(lambda: iter(chunks), binning=Binning())
    z = np.zeros((40, 3))
    labels = np.arange(40) % 3
    z[[25, 33], [2, 1]] = np.inf
    with pytest.raises(
        ck.InputError, match="2 values are not, first at row 25 of the stream, column 2: inf"
    ):
        summarize_stream(
            lambda: iter([(z[:20], labels[:20]), (z[20:], labels[20:])]),
            binning=Binning(),
            from_logits=True,
        )


def test_bad_labels_and_row_sums_are_totalled() -> None:
    rng = np.random.default_rng(2)
    probs = _softmax(rng.normal(size=(60, 3)))
    labels = np.arange(60) % 3
    labels[[3, 25, 26, 59]] = [3, 5, -1, 3]
    chunks = _cut(probs, labels, 20)
    with pytest.raises(ck.InputError, match="4 values do not, first at row 3 of the stream: 3"):
        summarize_stream(lambda: iter(chunks), binning=Binning())
    off = probs.copy()
    off[[10, 45, 46]] *= 0.5  # still in [0, 1]: only the sums are wrong
    with pytest.raises(
        ck.InputError, match="3 rows do not, first row 10 of the stream sums to 0.5"
    ):
        summarize_stream(lambda: iter(_cut(off, np.arange(60) % 3, 20)), binning=Binning())


def test_a_later_chunk_with_bad_labels_still_counts_exactly() -> None:
    """The forecasts are checked before the labels: a chunk that fails on its labels passed
    every check of its forecasts, so the NaN count stays exact."""
    p, y = _binary(100, 3)
    p[[5, 90]] = np.nan
    y[60] = 7  # chunk 2 (rows 50..74): labels fail, forecasts fine
    with pytest.raises(ck.InputError, match="2 values are NaN, first at row 5 of the stream") as e:
        summarize_stream(lambda: iter(_cut(p, y, 25)), binning=Binning())
    assert "at least" not in str(e.value)


def test_a_later_chunk_failing_first_on_another_check_makes_a_lower_bound() -> None:
    """Labels out of range in chunk 0; chunk 2 has NaN forecasts (checked before its labels),
    so its labels could not be counted: the message says the count is a lower bound."""
    p, y = _binary(100, 4)
    y[[1, 2]] = 2
    p[55] = np.nan
    y[56] = 2
    with pytest.raises(
        ck.InputError,
        match="2 values do not, first at row 1 of the stream: 2.*at least this: chunk 2 ",
    ):
        summarize_stream(lambda: iter(_cut(p, y, 25)), binning=Binning())


def test_a_file_read_in_batches_counts_over_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import calibkit.io

    whole = calibkit.io.read_batches
    monkeypatch.setattr(
        calibkit.io,
        "read_batches",
        lambda path, fmt, plan: whole(path, fmt, plan, batch_rows=100),
    )
    p, y = _binary(450, 5)
    p[[150, 151, 320, 449]] = 1.25
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"p": p, "y": y}), path)
    with pytest.raises(ck.InputError, match="4 values do not, first at row 150 of the stream"):
        summarize_stream(path, columns={"probs": "p", "label": "y"}, binning=Binning())


# ----------------------------------------------------------------------------- two passes


def _changing(passes: list[Chunks]) -> Callable[[], Iterator[tuple[np.ndarray, np.ndarray]]]:
    """A callable stream that gives ``passes[k]`` on its k-th call (the last one after)."""
    calls: list[int] = []

    def read() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        calls.append(1)
        return iter(passes[min(len(calls), len(passes)) - 1])

    return read


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_a_second_pass_with_other_values_is_refused(strategy: str) -> None:
    p, y = _binary(4096, 7)
    q = p.copy()
    q[123] = 0.5 if q[123] != 0.5 else 0.25  # one value of 4096
    with pytest.raises(ck.InputError, match="the same 4096 rows, but different values"):
        summarize_stream(
            _changing([_cut(p, y, 500), _cut(q, y, 500)]), binning=Binning(strategy=strategy)
        )
    # two different labels 2048 rows apart swapped: every count and sum over the labels is the
    # same (and a checksum linear in the bits with odd weights 2i + 1 would not see it)
    y[[0, 2048]] = [0, 1]
    swapped = y.copy()
    swapped[[0, 2048]] = [1, 0]
    with pytest.raises(ck.InputError, match="different values"):
        summarize_stream(_changing([_cut(p, y, 500), _cut(p, swapped, 500)]), binning=Binning())
    # where the chunks are cut does not matter: the same audit as one chunk (an identity)
    binning = Binning(strategy=strategy)
    got = summarize_stream(_changing([_cut(p, y, 7), _cut(p, y, 100)]), binning=binning)
    once = summarize_stream(lambda: iter([(p, y)]), binning=binning)
    assert got.n == 4096
    assert np.array_equal(got.stats.count, once.stats.count)
    assert np.array_equal(got.stats.edges, once.stats.edges)


@pytest.mark.parametrize(
    ("second", "seen"), [(150, "200 rows, then 150"), (250, "200 rows, then at least 250")]
)
def test_a_second_pass_with_other_rows_is_refused(second: int, seen: str) -> None:
    p, y = _binary(250, 8)
    first = _cut(p[:200], y[:200], 50)
    with pytest.raises(ck.InputError, match=f"different data on its second pass.*{seen}"):
        summarize_stream(_changing([first, _cut(p[:second], y[:second], 50)]), binning=Binning())


def test_a_temperature_fit_refuses_a_stream_that_changes() -> None:
    rng = np.random.default_rng(10)
    z = rng.normal(0, 2, (400, 3))
    y = (z + rng.gumbel(size=z.shape)).argmax(axis=1)
    other = z.copy()
    other[17, 0] += 1.0
    stream = _changing([_cut(z, y, 100), _cut(z, y, 100), _cut(other, y, 100)])
    with pytest.raises(ck.InputError, match="different data on a later pass"):
        ck.fit_temperature(stream, engine="stream")
    ok = ck.fit_temperature(_changing([_cut(z, y, 100), _cut(z, y, 33)]), engine="stream")
    assert ok == pytest.approx(ck.fit_temperature(z, y), rel=1e-12)


# ----------------------------------------------------------------------------- shapes


def test_binary_then_multiclass_is_refused_with_the_chunk_index() -> None:
    """Was ``KeyError: 'class0'``."""
    p, y = _binary(20, 11)
    probs = np.full((10, 3), 1 / 3)
    chunks = [(p[:10], y[:10]), (np.array([]), np.array([])), (p[10:], y[10:]), (probs, y[:10])]
    match = (
        "chunk 3 of the stream \\(counting from 0; it starts at row 20\\) holds top-label "
        "forecasts of 3 classes, the chunks before it binary forecasts"
    )
    with pytest.raises(ck.InputError, match=match):
        summarize_stream(lambda: iter(chunks), binning=Binning())
    with pytest.raises(ck.InputError, match=match):
        ck.audit(iter(chunks), engine="stream")


def test_a_different_number_of_classes_is_refused() -> None:
    labels = np.zeros(5, dtype=int)
    chunks = [(np.full((5, 3), 1 / 3), labels), (np.full((5, 4), 1 / 4), labels)]
    with pytest.raises(
        ck.InputError,
        match="chunk 1 .* holds top-label forecasts of 4 classes, the chunks "
        "before it top-label forecasts of 3 classes",
    ):
        summarize_stream(lambda: iter(chunks), binning=Binning())


def test_a_temperature_fit_refuses_binary_then_multiclass_logits() -> None:
    """The old code averaged the objective of 1-D scores with that of 3-class logits."""
    rng = np.random.default_rng(13)
    s, z = rng.normal(size=50), rng.normal(size=(50, 3))
    y2, y3 = (s > 0).astype(int), z.argmax(axis=1)
    with pytest.raises(ck.InputError, match="chunk 1 of the stream .* holds top-label"):
        ck.fit_temperature(lambda: iter([(s, y2), (z, y3)]), engine="stream")


def test_cli_stream_bad_input_is_one_line(tmp_path: Path) -> None:
    from calibkit.cli import app

    p, y = _binary(50, 14)
    p[[3, 30]] = 2.0
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"p": p, "y": y}), path)
    result = CliRunner().invoke(
        app, ["audit", str(path), "--engine", "stream", "--probs", "p", "--label", "y"]
    )
    assert_bad_input(result, "2 values do not, first at row 3 of the stream: 2.0")
