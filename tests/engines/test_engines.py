"""Every engine computes the same audit: DuckDB, Spark and the stream against the in-memory
reference, on random data of every input kind, binning and file format, to 1e-12.

The reference is :func:`calibkit.engines.memory.summarize` on the arrays the files were
written from (so the tests also check that each reader gets the numbers back exactly); the
audit-level tests compare :func:`calibkit.audit` on the arrays with the engines' audits.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest

import calibkit as ck
from calibkit import CalibkitWarning, InputError
from calibkit.audit import audit_from_summary
from calibkit.engines import summarize_with_engine
from calibkit.engines._plan import Binning
from calibkit.engines.duckdb import DuckDBEngine
from calibkit.engines.memory import summarize
from calibkit.engines.spark import SparkEngine
from calibkit.engines.stream import APPROXIMATE_EDGES, summarize_stream
from calibkit.forecasts import prepare
from calibkit.measure.bins import BinStats
from calibkit.measure.summary import Summary

N = 3000
C = 4
#: Uneven chunks of a stream: a single row, empty chunks, odd sizes, then the rest.
CHUNKS = (1, 0, 999, 2, 0, 1500)

BINNINGS = {
    "uniform": Binning(),
    "quantile-right": Binning(n_bins=10, strategy="quantile"),
    "quantile-left": Binning(n_bins=7, strategy="quantile", closed="left"),
    "explicit": Binning.checked(
        n_bins=15,
        strategy="uniform",
        closed="left",
        edges=[0.0, 0.1, 0.35, 0.5, 0.8, 0.95, 1.0],
        where="test",
    ),
}


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Case:
    """Arrays in memory (the reference) and the table written to files from them."""

    table: pa.Table
    columns: dict[str, Any] | None
    probs: np.ndarray
    labels: np.ndarray
    from_logits: bool = False

    def prepared(self) -> Any:
        return prepare(self.probs, self.labels, from_logits=self.from_logits, where="test")

    def chunks(self, sizes: tuple[int, ...] = CHUNKS) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The arrays in chunks of ``sizes`` (the last chunk takes the rest)."""
        start = 0
        for k in sizes:
            yield self.probs[start : start + k], self.labels[start : start + k]
            start += k
        yield self.probs[start:], self.labels[start:]


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _draw_classes(p: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One label per row of class probabilities ``p``."""
    u = rng.random(p.shape[0])[:, None]
    return np.minimum((np.cumsum(p, axis=1) < u).sum(axis=1), p.shape[1] - 1)


def _make_cases() -> dict[str, Case]:
    rng = np.random.default_rng(20240611)
    cases: dict[str, Case] = {}

    # binary: P(y = 1) and the label (over-confident: y ~ Bernoulli(p ** 1.3))
    p = rng.random(N)
    y = (rng.random(N) < p**1.3).astype(np.int64)
    cases["binary-probs"] = Case(pa.table({"p": p, "y": y}), {"probs": "p", "label": "y"}, p, y)

    # binary logits
    z = rng.normal(0.0, 2.0, N)
    yz = (rng.random(N) < 1.0 / (1.0 + np.exp(-z / 1.5))).astype(np.int64)
    cases["binary-logits"] = Case(
        pa.table({"score": z, "y": yz}), {"logits": "score", "label": "y"}, z, yz, True
    )

    # ties and exact 0/1: a fifth of the rows exactly 0, a fifth exactly 1 (quantile bins
    # [0, 0] and [1, 1]); the rest on a coarse grid. Outcomes agree with 0 and 1 (finite NLL).
    t = rng.choice(np.round(np.linspace(0.05, 0.95, 10), 2), N)
    u = rng.random(N)
    t[u < 0.2] = 0.0
    t[u > 0.8] = 1.0
    yt = (rng.random(N) < t).astype(np.int64)
    cases["ties"] = Case(pa.table({"p": t, "y": yt}), {"probs": "p", "label": "y"}, t, yt)

    # a confidence with whether the prediction was right: 0/1 integers and booleans
    conf = 0.3 + 0.7 * rng.random(N)
    ok = rng.random(N) < conf**1.5
    cases["correct-int"] = Case(
        pa.table({"conf": conf, "ok": ok.astype(np.int64)}),
        {"confidence": "conf", "correct": "ok"},
        conf,
        ok.astype(np.int64),
    )
    cases["correct-bool"] = Case(
        pa.table({"conf": conf, "ok": ok}),
        {"confidence": "conf", "correct": "ok"},
        conf,
        ok.astype(np.int64),
    )
    # ... and as text (TRUE/false/1/0, any case): DuckDB's and Spark's text branch
    words = np.where(
        ok, rng.choice(["TRUE", "true", "1"], N), rng.choice(["FALSE", "false", "0"], N)
    )
    cases["correct-text"] = Case(
        pa.table({"conf": conf, "ok": pa.array(words.tolist(), pa.string())}),
        {"confidence": "conf", "correct": "ok"},
        conf,
        ok.astype(np.int64),
    )

    # a confidence with the predicted and the true class
    truth = rng.integers(0, C, N)
    right = rng.random(N) < conf
    pred = np.where(right, truth, (truth + rng.integers(1, C, N)) % C)
    cases["prediction"] = Case(
        pa.table({"conf": conf, "pred": pred, "truth": truth}),
        {"confidence": "conf", "prediction": "pred", "label": "truth"},
        conf,
        (pred == truth).astype(np.int64),
    )

    # multiclass probabilities (columns detected by name), a tenth of the rows one-hot (exact
    # 0 and 1 in every class column; the label is the hot class, so the NLL stays finite)
    logits = rng.normal(0.0, 2.0, (N, C))
    probs = _softmax(logits)
    labels = _draw_classes(_softmax(logits / 1.5), rng)
    hot = rng.random(N) < 0.1
    probs[hot] = np.eye(C)[labels[hot]]
    cols: dict[str, Any] = {f"prob_{k}": probs[:, k] for k in range(C)}
    cols["label"] = labels
    cases["multiclass-probs"] = Case(pa.table(cols), None, probs, labels)

    # multiclass logits (columns named explicitly)
    zl = rng.normal(0.0, 3.0, (N, C))
    yl = _draw_classes(_softmax(zl / 2.0), rng)
    names = [f"z{k}" for k in range(C)]
    cols = {name: zl[:, k] for k, name in enumerate(names)}
    cols["cls"] = yl
    cases["multiclass-logits"] = Case(
        pa.table(cols), {"logits": names, "label": "cls"}, zl, yl, True
    )
    return cases


CASES = _make_cases()
CASE_NAMES = list(CASES)


def _jsonl(table: pa.Table, path: Path) -> Path:
    """JSON lines written by Python's json (floats as repr: they read back exactly)."""
    with path.open("w") as out:
        for row in table.to_pylist():
            out.write(json.dumps(row) + "\n")
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Path]:
    """Each case as Parquet; some as CSV and JSON lines too: (case, format) -> path."""
    d = tmp_path_factory.mktemp("engines")
    out: dict[tuple[str, str], Path] = {}
    for name, case in CASES.items():
        out[name, "parquet"] = d / f"{name}.parquet"
        pq.write_table(case.table, out[name, "parquet"])
    for name in ("binary-probs", "multiclass-probs", "prediction", "ties"):
        out[name, "csv"] = d / f"{name}.csv"
        pcsv.write_csv(CASES[name].table, out[name, "csv"])
        out[name, "jsonl"] = _jsonl(CASES[name].table, d / f"{name}.jsonl")
    # the outcome as the words TRUE/FALSE in a CSV
    case = CASES["correct-int"]
    path = d / "correct-words.csv"
    with path.open("w") as f:
        f.write("conf,ok\n")
        for c, o in zip(case.probs, case.labels, strict=True):
            f.write(f"{float(c)!r},{'TRUE' if o else 'FALSE'}\n")
    out["correct-int", "csv-words"] = path
    return out


# --------------------------------------------------------------------------- engines


def _quietly(fn: Callable[[], Summary]) -> Summary:
    """Run ``fn`` ignoring the warning of collapsed quantile bins (tested on its own below)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "(?s).*collapsed", CalibkitWarning)
        return fn()


def _reference(name: str, binning: Binning) -> Summary:
    return _quietly(lambda: summarize(CASES[name].prepared(), binning))


def _by_engine(engine: str, name: str, path: Path, binning: Binning, spark: Any = None) -> Summary:
    """The summary of a case's file on one engine."""
    case = CASES[name]
    columns = case.columns
    if engine.startswith("duckdb"):
        return _quietly(
            lambda: _duckdb(path, columns, held=engine == "duckdb-held").summarize(
                binning, where="test"
            )
        )
    if engine == "spark":
        frame = _spark_frame(spark, path)
        return _quietly(
            lambda: SparkEngine(frame, columns=columns).summarize(binning, where="test")
        )
    if engine == "stream-file":
        return _quietly(lambda: summarize_stream(path, columns=columns, binning=binning))
    if engine == "stream-chunks":
        return _quietly(
            lambda: summarize_stream(case.chunks, binning=binning, from_logits=case.from_logits)
        )
    raise AssertionError(engine)


def _duckdb(path: Path, columns: Any, *, held: bool) -> DuckDBEngine:
    """A DuckDB engine over ``path`` that summarises the rows in memory (``held``: the default
    for inputs that fit) or by SQL aggregations alone (the path of inputs larger than memory)."""
    engine = DuckDBEngine(path, columns=columns)
    if not held:
        engine.hold_bytes = 0
    return engine


def _sql_only(run: Callable[[], Any]) -> Any:
    """``run()`` with every DuckDB engine summarising by SQL aggregations alone."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DuckDBEngine, "hold_bytes", 0)
        return run()


def _spark_frame(spark: Any, path: Path) -> Any:
    if path.suffix == ".parquet":
        return spark.read.parquet(str(path))
    if path.suffix == ".csv":
        return spark.read.csv(str(path), header=True, inferSchema=True)
    return spark.read.json(str(path))


# --------------------------------------------------------------------------- the comparison


def test_allclose_sees_a_difference() -> None:
    """The equality every test below relies on fails for a summary that differs a little."""
    s = _reference("binary-probs", BINNINGS["uniform"])
    assert s.allclose(s)
    moved = s.stats.count.copy()
    moved[[3, 4]] += [1, -1]
    assert not s.allclose(replace(s, stats=replace(s.stats, count=moved)))
    assert not s.allclose(replace(s, brier_sum=s.brier_sum * (1 + 1e-9)))
    assert not s.allclose(replace(s, n_correct=s.n_correct + 1))
    assert not s.allclose(replace(s, auc=s.auc + 1e-9))
    shifted = s.deciles.sum_conf.copy()
    shifted[0] += 1e-6
    assert not s.allclose(replace(s, deciles=replace(s.deciles, sum_conf=shifted)))


@pytest.mark.parametrize("binning", list(BINNINGS))
@pytest.mark.parametrize("name", CASE_NAMES)
@pytest.mark.parametrize("engine", ["duckdb", "duckdb-held", "stream-file", "stream-chunks"])
def test_engine_equals_memory(
    engine: str, name: str, binning: str, files: dict[tuple[str, str], Path]
) -> None:
    """Every input kind and binning, from Parquet (DuckDB, a stream of the file's batches) or
    from uneven chunks of the arrays (a callable: read twice, exact quantile edges)."""
    ref = _reference(name, BINNINGS[binning])
    got = _by_engine(engine, name, files[name, "parquet"], BINNINGS[binning])
    _assert_same(got, ref, engine)


#: Spark runs each input kind once, the binnings in turn (every Spark query costs ~0.3 s),
#: and the tied data with both kinds of quantile bins.
SPARK_RUNS = [(name, list(BINNINGS)[i % len(BINNINGS)]) for i, name in enumerate(CASE_NAMES)] + [
    ("ties", "quantile-right"),
    ("ties", "quantile-left"),
]


@pytest.mark.parametrize(("name", "binning"), sorted(set(SPARK_RUNS)))
def test_spark_equals_memory(
    name: str, binning: str, files: dict[tuple[str, str], Path], spark: Any
) -> None:
    ref = _reference(name, BINNINGS[binning])
    got = _by_engine("spark", name, files[name, "parquet"], BINNINGS[binning], spark)
    _assert_same(got, ref, "spark")


def _assert_same(got: Summary, ref: Summary, engine: str) -> None:
    assert got.n == ref.n
    assert got.kind == ref.kind and got.n_classes == ref.n_classes
    assert got.allclose(ref), (got.to_dict(), ref.to_dict())
    assert got.engine == engine.split("-")[0]
    assert got.binning.strategy == ref.binning.strategy
    if engine.startswith("stream"):
        # the AUC of a stream comes from a grid: within the error bound it states (the bound
        # counts every pair in one cell; tied confidences make it loose, not wrong)
        assert abs(got.auc - ref.auc) <= got.auc_error + 1e-12
        assert not any(APPROXIMATE_EDGES in note for note in got.notes)
    else:
        assert got.auc == pytest.approx(ref.auc, rel=1e-12)
        assert got.auc_error == 0.0 and got.notes == ()


def test_stream_auc_error_is_small_and_honest() -> None:
    """Without ties the grid's bound is tight (well under 1e-3) and the exact AUC lies within
    it; the note states the bound."""
    for name in ("binary-probs", "binary-logits", "multiclass-logits", "correct-int"):
        case = CASES[name]
        ref = _reference(name, BINNINGS["uniform"])
        got = summarize_stream(case.chunks, binning=Binning(), from_logits=case.from_logits)
        assert 0.0 < got.auc_error < 1e-3, name
        assert abs(got.auc - ref.auc) <= got.auc_error + 1e-12, name
        assert any(f"{got.auc_error:.1e}" in note for note in got.notes), got.notes


# --------------------------------------------------------------------------- formats


FORMAT_RUNS = [
    (name, fmt)
    for name in ("binary-probs", "multiclass-probs", "prediction", "ties")
    for fmt in ("csv", "jsonl")
] + [("correct-int", "csv-words")]


@pytest.mark.parametrize(("name", "fmt"), FORMAT_RUNS)
@pytest.mark.parametrize("engine", ["duckdb", "duckdb-held", "stream-file"])
def test_csv_and_json_lines(
    engine: str, name: str, fmt: str, files: dict[tuple[str, str], Path]
) -> None:
    """CSV (numbers written by pyarrow; outcomes as the words TRUE/FALSE) and JSON lines give
    the Parquet numbers: the readers get every float back exactly."""
    binning = BINNINGS["quantile-right"]
    got = _by_engine(engine, name, files[name, fmt], binning)
    _assert_same(got, _reference(name, binning), engine)


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("binary-probs", "csv"),
        ("multiclass-probs", "jsonl"),
        ("prediction", "jsonl"),
        ("correct-int", "csv-words"),
    ],
)
def test_spark_reads_csv_and_json_lines_by_path(
    name: str, fmt: str, files: dict[tuple[str, str], Path], spark: Any
) -> None:
    """A path given to the Spark engine is read by the active session."""
    binning = BINNINGS["uniform"]
    path = files[name, fmt]
    got = _quietly(
        lambda: SparkEngine(str(path), columns=CASES[name].columns, spark=spark).summarize(
            binning, where="test"
        )
    )
    _assert_same(got, _reference(name, binning), "spark")


def test_duckdb_reads_a_glob_and_a_list_of_parquet_files(tmp_path: Path) -> None:
    """Rows split over several files (uneven, one of them a single row) give the whole file's
    numbers, as a glob and as a list of paths."""
    case = CASES["multiclass-probs"]
    bounds = [0, 1, 1200, 1201, N]
    paths = []
    for i, (a, b) in enumerate(zip(bounds, bounds[1:], strict=False)):
        paths.append(tmp_path / f"part-{i}.parquet")
        pq.write_table(case.table.slice(a, b - a), paths[-1])
    binning = BINNINGS["quantile-right"]
    ref = _reference("multiclass-probs", binning)
    for source in (str(tmp_path / "part-*.parquet"), paths):
        got = _quietly(lambda s=source: DuckDBEngine(s).summarize(binning, where="test"))
        _assert_same(got, ref, "duckdb")
    a = ck.audit(str(tmp_path / "part-*.parquet"), engine="duckdb", n_boot=50, n_sims=50)
    assert a.n == N


def test_spark_dataframe_built_from_rows(spark: Any) -> None:
    """A DataFrame made in memory from Python rows (not a file) is audited the same."""
    case = CASES["binary-logits"]
    rows = [(float(z), int(y)) for z, y in zip(case.probs, case.labels, strict=True)]
    frame = spark.createDataFrame(rows, "score double, y long")
    binning = BINNINGS["quantile-left"]
    got = SparkEngine(frame, columns=case.columns).summarize(binning, where="test")
    _assert_same(got, _reference("binary-logits", binning), "spark")


def test_file_read_in_many_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file the stream reads in several pyarrow batches (700 rows each, forced) gives the
    numbers of the whole file; the progress callback sees every batch, twice."""
    import calibkit.io

    whole = calibkit.io.read_batches
    monkeypatch.setattr(
        calibkit.io,
        "read_batches",
        lambda path, fmt, plan: whole(path, fmt, plan, batch_rows=700),
    )
    case = CASES["multiclass-logits"]
    path = tmp_path / "z.parquet"
    pq.write_table(case.table, path)
    binning = BINNINGS["quantile-right"]
    seen: list[tuple[str, int, int]] = []
    got = _quietly(
        lambda: summarize_stream(
            path,
            columns=case.columns,
            binning=binning,
            progress=lambda stage, done, total: seen.append((stage, done, total)),
        )
    )
    _assert_same(got, _reference("multiclass-logits", binning), "stream")
    rows = [700, 1400, 2100, 2800, 3000]
    passes = [("pass 1 of 2", r, N) for r in rows] + [("pass 2 of 2", r, N) for r in rows]
    assert seen[: len(passes)] == passes
    # then the calibration slope: a round or two from the start fitted on the logit histogram
    # (each round reads every batch once)
    rounds = len(seen[len(passes) :]) // len(rows)
    assert 1 <= rounds <= 2
    slope = [(f"calibration slope, round {k}", r, N) for k in range(1, rounds + 1) for r in rows]
    assert seen[len(passes) :] == slope


def _typed_tables() -> dict[str, tuple[pa.Table, dict[str, Any], np.ndarray, np.ndarray]]:
    """Column types other than float64/int64: (table, columns, confidence, outcome)."""
    rng = np.random.default_rng(5)
    n = 400
    p = rng.random(n)
    y = rng.random(n) < p
    names = np.array(["cat", "dog", "eel"])
    truth = rng.integers(0, 3, n)
    pred = np.where(y, truth, (truth + 1) % 3)
    p32 = p.astype(np.float32)
    return {
        "bool-label": (pa.table({"p": p, "y": y}), {"probs": "p", "label": "y"}, p, y),
        "text-classes": (
            pa.table({"conf": p, "pred": names[pred].tolist(), "truth": names[truth].tolist()}),
            {"confidence": "conf", "prediction": "pred", "label": "truth"},
            p,
            pred == truth,
        ),
        "float32-int32": (
            pa.table({"p": p32, "y": y.astype(np.int32)}),
            {"probs": "p", "label": "y"},
            p32.astype(np.float64),
            y,
        ),
    }


@pytest.mark.parametrize("kind", ["bool-label", "text-classes", "float32-int32"])
def test_other_column_types(kind: str, tmp_path: Path, spark: Any) -> None:
    """Boolean labels, predicted and true classes as text (compared as text), float32
    confidences and int32 labels: the numbers of the float64 arrays they hold."""
    table, columns, conf, outcome = _typed_tables()[kind]
    path = _write(tmp_path / f"{kind}.parquet", table)
    binning = BINNINGS["quantile-right"]
    ref = summarize(prepare(conf, outcome.astype(np.int64), from_logits=False, where="t"), binning)
    runs = {
        "duckdb": lambda: _duckdb(path, columns, held=False).summarize(binning, where="t"),
        "duckdb-held": lambda: _duckdb(path, columns, held=True).summarize(binning, where="t"),
        "spark": lambda: SparkEngine(_spark_frame(spark, path), columns=columns).summarize(
            binning, where="t"
        ),
        "stream": lambda: summarize_stream(path, columns=columns, binning=binning),
    }
    for engine, run in runs.items():
        _assert_same(run(), ref, engine)


def test_stream_chunks_must_agree_and_carry_their_labels(files: Any) -> None:
    case = CASES["multiclass-probs"]
    binary = CASES["binary-probs"]
    mixed = [(case.probs[:10], case.labels[:10]), (binary.probs[:10], binary.labels[:10])]
    with pytest.raises(
        InputError,
        match="chunk 1 of the stream \\(counting from 0; it starts at row 10\\) holds binary",
    ):
        summarize_stream(lambda: iter(mixed), binning=Binning())
    with pytest.raises(
        InputError, match="each chunk of a stream must be a \\(probs, labels\\) pair"
    ):
        summarize_stream(iter([case.probs[:10]]), binning=Binning())
    with pytest.raises(InputError, match="labels are a column of the input"):
        ck.audit(str(files["binary-probs", "parquet"]), case.labels, engine="duckdb")


# --------------------------------------------------------------------------- edge cases


def test_tied_quantiles_keep_bins_of_exact_zeros_and_ones(
    files: dict[tuple[str, str], Path], spark: Any
) -> None:
    """A fifth of the confidences exactly 0 (1): the quantile table keeps a bin [0, 0]
    ([1, 1]), and every engine warns that tied quantile bins collapsed."""
    for binning, end in ((BINNINGS["quantile-right"], 0), (BINNINGS["quantile-left"], -1)):
        ref = _reference("ties", binning)
        edges = ref.stats.edges
        assert edges[end] == edges[end + 1 if end == 0 else end - 1] == float(end == -1)
        assert ref.stats.count[end] == np.count_nonzero(CASES["ties"].probs == float(end == -1))
        runs: list[Callable[[], Summary]] = [
            lambda b=binning: summarize(CASES["ties"].prepared(), b),
            lambda b=binning: DuckDBEngine(
                files["ties", "parquet"], columns=CASES["ties"].columns
            ).summarize(b, where="test"),
            lambda b=binning: SparkEngine(
                _spark_frame(spark, files["ties", "parquet"]), columns=CASES["ties"].columns
            ).summarize(b, where="test"),
            lambda b=binning: summarize_stream(CASES["ties"].chunks, binning=b),
        ]
        for run in runs:
            with pytest.warns(CalibkitWarning, match="quantile bins collapsed"):
                got = run()
            assert np.array_equal(got.stats.edges, edges)
            assert np.array_equal(got.stats.count, ref.stats.count)


@pytest.mark.parametrize("rows", [1, 2])
def test_one_or_two_rows(rows: int, tmp_path: Path, spark: Any) -> None:
    """The smallest inputs: every quantile edge collapses onto the data, and the engines
    still agree (a single row has no AUC: None everywhere)."""
    case = CASES["multiclass-probs"]
    path = tmp_path / "few.parquet"
    pq.write_table(case.table.slice(0, rows), path)
    binning = BINNINGS["quantile-right"]
    ref = _quietly(
        lambda: summarize(
            prepare(case.probs[:rows], case.labels[:rows], from_logits=False, where="t"), binning
        )
    )
    assert ref.n == rows
    got = {
        "duckdb": _quietly(lambda: _duckdb(path, None, held=False).summarize(binning, where="t")),
        "duckdb-held": _quietly(
            lambda: _duckdb(path, None, held=True).summarize(binning, where="t")
        ),
        "spark": _quietly(
            lambda: SparkEngine(_spark_frame(spark, path)).summarize(binning, where="test")
        ),
        "stream": _quietly(lambda: summarize_stream(path, binning=binning)),
        "stream-chunks": _quietly(
            lambda: summarize_stream(
                lambda: iter(
                    [(case.probs[:0], case.labels[:0]), (case.probs[:rows], case.labels[:rows])]
                ),
                binning=binning,
            )
        ),
    }
    for engine, summary in got.items():
        assert summary.allclose(ref), engine
        assert (summary.auc is None) == (ref.auc is None), engine


def test_zero_probability_of_the_true_class(tmp_path: Path, spark: Any) -> None:
    """A true class given probability exactly 0: every engine warns and reports NLL = inf
    (nothing clipped), with the other sums unchanged."""
    case = CASES["binary-probs"]
    p = case.probs.copy()
    p[[10, 20]] = 0.0  # labels there are set to 1: the true class had probability 0
    y = case.labels.copy()
    y[[10, 20]] = 1
    path = tmp_path / "zero.parquet"
    pq.write_table(pa.table({"p": p, "y": y}), path)
    with pytest.warns(CalibkitWarning, match="exactly 0"):
        ref = summarize(prepare(p, y, from_logits=False, where="t"), Binning())
    assert math.isinf(ref.nll_sum)
    runs = {
        "duckdb": lambda: _duckdb(path, case.columns, held=False).summarize(Binning(), where="t"),
        "duckdb-held": lambda: _duckdb(path, case.columns, held=True).summarize(
            Binning(), where="t"
        ),
        "spark": lambda: SparkEngine(_spark_frame(spark, path), columns=case.columns).summarize(
            Binning(), where="t"
        ),
        "stream": lambda: summarize_stream(path, columns=case.columns, binning=Binning()),
    }
    for engine, run in runs.items():
        with pytest.warns(CalibkitWarning, match="exactly 0"):
            got = run()
        assert math.isinf(got.nll_sum), engine
        assert got.allclose(ref), engine


# --------------------------------------------------------------------------- one-shot streams


@pytest.mark.parametrize("name", ["binary-probs", "multiclass-logits", "ties"])
def test_one_shot_iterator(name: str) -> None:
    """An iterator read once: fixed (uniform) edges give exactly the in-memory table; the
    quantile edges (here the Hosmer-Lemeshow deciles) come from a fine grid, near the exact
    ones, and the statistics are exact for the edges the summary reports."""
    case = CASES[name]
    f = case.prepared()
    ref = _reference(name, BINNINGS["uniform"])
    got = _quietly(
        lambda: summarize_stream(case.chunks(), binning=Binning(), from_logits=case.from_logits)
    )
    assert got.stats.allclose(ref.stats)
    assert all(a.allclose(b) for a, b in zip(got.classwise, ref.classwise, strict=True))
    assert got.n_correct == ref.n_correct
    assert got.brier_sum == pytest.approx(ref.brier_sum, rel=1e-12)
    assert got.nll_sum == pytest.approx(ref.nll_sum, rel=1e-12)
    assert abs(got.auc - ref.auc) <= got.auc_error + 1e-12
    assert not any(APPROXIMATE_EDGES in note for note in got.notes)  # the table is exact
    own = BinStats.from_forecasts(f.conf, f.outcome, edges=got.deciles.edges, closed="right")
    assert got.deciles.allclose(own)


@pytest.mark.parametrize("binning", ["quantile-right", "quantile-left"])
@pytest.mark.parametrize("name", ["binary-probs", "multiclass-logits"])
def test_one_shot_iterator_quantile_edges_are_approximate(name: str, binning: str) -> None:
    case = CASES[name]
    f = case.prepared()
    b = BINNINGS[binning]
    ref = _reference(name, b)
    got = _quietly(lambda: summarize_stream(case.chunks(), binning=b, from_logits=case.from_logits))
    assert APPROXIMATE_EDGES in got.notes
    # exact statistics for the edges shown
    own = BinStats.from_forecasts(f.conf, f.outcome, edges=got.stats.edges, closed=b.closed)
    assert got.stats.allclose(own)
    for k, stats in enumerate(got.classwise):
        own = BinStats.from_forecasts(f.p[:, k], f.y == k, edges=stats.edges, closed=b.closed)
        assert stats.allclose(own)
    # ... which lie within a few cells of the fine grid (< 1e-3) of the exact quantile edges
    assert got.stats.edges.shape == ref.stats.edges.shape
    assert np.max(np.abs(got.stats.edges - ref.stats.edges)) < 1e-3
    assert not np.array_equal(got.stats.edges, ref.stats.edges)  # approximate indeed
    assert got.stats.count.sum() == N
    assert np.all(np.abs(got.stats.count - N / b.n_bins) < 0.02 * N)


def test_one_shot_iterator_through_audit() -> None:
    """ck.audit on a generator (engine chosen by itself) gives the in-memory ECE (uniform
    bins need no second pass)."""
    case = CASES["binary-probs"]
    a = ck.audit(case.chunks(), n_boot=50, n_sims=50)
    m = ck.audit(case.probs, case.labels, n_boot=50, n_sims=50)
    assert a.n == N
    assert a.ece == pytest.approx(m.ece, rel=1e-12)
    assert np.array_equal(a.table.stats.count, m.table.stats.count)


# --------------------------------------------------------------------------- audits


def _audit_numbers(a: ck.Audit) -> dict[str, float]:
    spiegelhalter, hosmer_lemeshow = a.tests
    d = a.brier_decomposition
    out = {
        "ece": a.ece,
        "mce": a.mce,
        "rmsce": a.rmsce,
        "debiased_squared_ce": a.debiased_squared_ce,
        "brier": a.brier,
        "nll": a.nll,
        "accuracy": a.accuracy,
        "mean_confidence": a.mean_confidence,
        "spiegelhalter_z": spiegelhalter.statistic,
        "spiegelhalter_p": spiegelhalter.p_value,
        "hosmer_lemeshow": hosmer_lemeshow.statistic,
        "hosmer_lemeshow_p": hosmer_lemeshow.p_value,
        "reliability": d.reliability,
        "resolution": d.resolution,
        "uncertainty": d.uncertainty,
        "refinement": d.refinement,
    }
    if a.classwise_ece is not None:
        out["classwise_ece"] = a.classwise_ece
    return out


def _assert_audits_equal(got: ck.Audit, ref: ck.Audit, what: str) -> None:
    assert (got.kind, got.n, got.n_classes) == (ref.kind, ref.n, ref.n_classes), what
    assert (got.classwise_ece is None) == (ref.classwise_ece is None), what
    g, r = _audit_numbers(got), _audit_numbers(ref)
    assert g.keys() == r.keys()
    for key in r:
        assert math.isclose(g[key], r[key], rel_tol=1e-12, abs_tol=1e-12), (
            what,
            key,
            g[key],
            r[key],
        )
    assert np.array_equal(got.table.stats.count, ref.table.stats.count), what
    assert np.allclose(got.table.edges, ref.table.edges, rtol=1e-12, atol=1e-12), what
    assert [t.name for t in got.tests] == [t.name for t in ref.tests]
    assert [t.df for t in got.tests] == [t.df for t in ref.tests]


AUDIT_RUNS = [
    ("binary-probs", "quantile-right"),
    ("multiclass-logits", "uniform"),
    ("prediction", "quantile-left"),
]


@pytest.mark.parametrize(("name", "binning"), AUDIT_RUNS)
def test_audit_equals_memory_on_every_engine(
    name: str, binning: str, files: dict[tuple[str, str], Path], spark: Any
) -> None:
    """ck.audit on each engine: every number an audit computes from the sums equals the
    in-memory audit's to 1e-12; the ECE interval and noise floor (from bin sums on the engines)
    agree among the engines and with the audit of the in-memory summary."""
    case = CASES[name]
    b = BINNINGS[binning]
    options = dict(n_bins=b.n_bins, strategy=b.strategy, closed=b.closed, n_boot=200, n_sims=200)
    path = files[name, "parquet"]
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "(?s).*collapsed", CalibkitWarning)
        memory = ck.audit(case.probs, case.labels, from_logits=case.from_logits, **options)
        from_sums = audit_from_summary(
            summarize(case.prepared(), b), n_boot=200, n_sims=200, seed=0
        )
        engines = {
            "duckdb": ck.audit(str(path), engine="duckdb", columns=case.columns, **options),
            "duckdb-sql": _sql_only(
                lambda: ck.audit(str(path), engine="duckdb", columns=case.columns, **options)
            ),
            "spark": ck.audit(
                _spark_frame(spark, path), engine="spark", columns=case.columns, **options
            ),
            "stream-file": ck.audit(path, engine="stream", columns=case.columns, **options),
            "stream-chunks": ck.audit(
                case.chunks, engine="stream", from_logits=case.from_logits, **options
            ),
        }
    _assert_audits_equal(from_sums, memory, "memory summary")
    for engine, a in engines.items():
        _assert_audits_equal(a, memory, engine)
        if engine.startswith("stream"):
            assert abs(a.auc - memory.auc) < 1e-3
        else:
            assert a.auc == pytest.approx(memory.auc, rel=1e-12)
        for got, ref in (
            (a.ece_interval, from_sums.ece_interval),
            (a.noise_floor, from_sums.noise_floor),
        ):
            assert got.method == ref.method, engine
            for key in ("low", "high") if hasattr(got, "low") else ("mean", "p95"):
                assert getattr(got, key) == pytest.approx(getattr(ref, key), rel=1e-12), engine


def test_audit_is_not_vacuous() -> None:
    """The audit comparison fails for audits of different data (a guard on the helper)."""
    case = CASES["binary-probs"]
    a = ck.audit(case.probs, case.labels, n_boot=20, n_sims=20)
    b = ck.audit(case.probs[:-1], case.labels[:-1], n_boot=20, n_sims=20)
    with pytest.raises(AssertionError):
        _assert_audits_equal(b, a, "different")


# --------------------------------------------------------------------------- bad input


def _write(path: Path, table: pa.Table) -> Path:
    pq.write_table(table, path)
    return path


def _bad_inputs(d: Path) -> dict[str, tuple[Path, dict[str, Any] | None]]:
    rng = np.random.default_rng(7)
    n = 500
    p = rng.random(n)
    y = (rng.random(n) < p).astype(np.int64)
    cols = {"probs": "p", "label": "y"}
    out: dict[str, tuple[Path, dict[str, Any] | None]] = {}
    nan = p.copy()
    nan[[3, 100, 499]] = np.nan
    out["nan"] = (_write(d / "nan.parquet", pa.table({"p": nan, "y": y})), cols)
    labels = pa.array([None if i in (5, 77) else int(v) for i, v in enumerate(y)], pa.int64())
    out["null-label"] = (_write(d / "null-label.parquet", pa.table({"p": p, "y": labels})), cols)
    two = y.copy()
    two[[1, 2, 3, 4]] = 2
    out["label-2"] = (_write(d / "label-2.parquet", pa.table({"p": p, "y": two})), cols)
    outside = p.copy()
    outside[[8, 9]] = [1.5, -0.25]
    out["outside"] = (_write(d / "outside.parquet", pa.table({"p": outside, "y": y})), cols)
    z = rng.normal(size=n)
    z[11] = np.inf
    out["inf-logit"] = (
        _write(d / "inf-logit.parquet", pa.table({"s": z, "y": y})),
        {"logits": "s", "label": "y"},
    )
    probs = rng.dirichlet(np.ones(3), n)
    probs[[4, 6, 8, 10, 12], 0] += 0.01
    table = {f"prob_{k}": probs[:, k] for k in range(3)}
    table["label"] = rng.integers(0, 3, n)
    out["no-sum"] = (_write(d / "no-sum.parquet", pa.table(table)), None)
    probs = rng.dirichlet(np.ones(3), n)
    table = {f"prob_{k}": probs[:, k] for k in range(3)}
    classes = rng.integers(0, 3, n)
    classes[[0, 50, 60]] = 3
    table["label"] = classes
    out["class-3"] = (_write(d / "class-3.parquet", pa.table(table)), None)
    out["text"] = (
        _write(d / "text.parquet", pa.table({"p": [repr(float(x)) for x in p], "y": y})),
        cols,
    )
    out["list"] = (
        _write(
            d / "list.parquet",
            pa.table({"probs": pa.array([[x, 1 - x] for x in p]), "label": y}),
        ),
        {"probs": "probs", "label": "label"},
    )
    out["missing"] = (d / "no-such-file.parquet", cols)
    out["unknown-column"] = (out["nan"][0], {"probs": "q", "label": "y"})
    out["empty"] = (
        _write(
            d / "empty.parquet",
            pa.table({"p": pa.array([], pa.float64()), "y": pa.array([], pa.int64())}),
        ),
        cols,
    )
    return out


#: What each engine says about each bad input (regular expressions): the SQL engines count
#: the bad rows over the whole input, the stream in the batch (here the whole file).
BAD = {
    "nan": ("column 'p' has NaN values: 3 rows of 500", "3 values are NaN"),
    "null-label": (
        "label column 'y' has missing values \\(null/empty\\): 2 rows of 500",
        "column 'y' has 2 missing values",
    ),
    "label-2": ("label column 'y' has values that are not 0 or 1: 4 rows", "4 values do not"),
    "outside": ("column 'p' has values outside \\[0, 1\\]: 2 rows", "2 values do not"),
    "inf-logit": ("logits column 's' has infinite values: 1 row of 500", "1 value is not"),
    "no-sum": ("do not sum to 1 \\(within 0.001\\).*: 5 rows", "5 rows do not"),
    "class-3": ("values that are not class indices 0..2: 3 rows", "3 values do not"),
    "text": (
        "column 'p' of .* must hold numbers; it holds text",
        "column 'p' holds numbers written as text",
    ),
    "list": ("column 'probs' of .* must hold numbers; it holds list", None),
    "missing": ("no such file", "no such file"),
    "unknown-column": ("has no column 'q'", "has no column 'q'"),
    "empty": (
        r"has no rows \(a header, or a schema, only\)",
        r"has no rows \(a header, or a schema, only\)",
    ),
}


@pytest.fixture(scope="module")
def bad_inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _bad_inputs(tmp_path_factory.mktemp("bad"))


@pytest.mark.parametrize("problem", list(BAD))
@pytest.mark.parametrize("engine", ["duckdb", "spark", "stream"])
def test_bad_input_is_rejected_with_its_row_count(
    engine: str, problem: str, bad_inputs: dict[str, Any], request: pytest.FixtureRequest
) -> None:
    """Nothing is dropped silently: the error, never a result, with how many rows are bad."""
    path, columns = bad_inputs[problem]
    sql_message, stream_message = BAD[problem]
    if engine == "stream":
        if stream_message is None:  # a list column is a matrix of scores: read as in memory
            got = summarize_stream(path, columns=columns, binning=Binning())
            assert got.kind == "top-label" and got.n == 500
            return
        with pytest.raises(InputError, match=stream_message):
            summarize_stream(path, columns=columns, binning=Binning())
        return
    if engine == "duckdb":
        with pytest.raises(InputError, match=sql_message):
            summarize_with_engine(path, engine="duckdb", columns=columns)
        return
    spark = request.getfixturevalue("spark")
    if problem == "missing":
        with pytest.raises(InputError, match="Spark could not read .*no-such-file"):
            SparkEngine(str(path), columns=columns, spark=spark)
        return
    with pytest.raises(InputError, match=sql_message):
        SparkEngine(_spark_frame(spark, path), columns=columns).summarize(Binning(), where="audit")


def test_stream_counts_the_bad_values_and_names_their_row() -> None:
    """In a stream of arrays, the error counts the bad values of the stream and gives the first
    one's row in the stream (here 40: row 30 of the chunk that starts at row 10)."""
    case = CASES["binary-probs"]
    bad = case.probs[:100].copy()
    bad[[40, 41]] = np.nan

    def chunks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        yield case.probs[:10], case.labels[:10]
        yield np.array([]), np.array([])
        yield bad[10:], case.labels[10:100]

    with pytest.raises(InputError, match="2 values are NaN, first at row 40 of the stream"):
        summarize_stream(chunks, binning=Binning())
    with pytest.raises(InputError, match="2 values are NaN"):
        ck.audit(chunks(), engine="stream")


def test_the_nan_check_does_not_trust_parquet_statistics(tmp_path: Path) -> None:
    """Parquet's min/max statistics leave NaN out; DuckDB must still see the NaN rows (its
    optimizer once folded isnan() to false from the statistics and let them through)."""
    p = np.linspace(0.1, 0.9, 50)
    p[[0, 7]] = np.nan
    path = _write(tmp_path / "stats.parquet", pa.table({"p": p, "y": np.arange(50) % 2}))
    stats = pq.ParquetFile(path).metadata.row_group(0).column(0).statistics
    assert stats.has_min_max and stats.max < 1  # the statistics do not show the NaN
    with pytest.raises(InputError, match="NaN values: 2 rows of 50"):
        ck.audit(str(path), engine="duckdb", columns={"probs": "p", "label": "y"})


# --------------------------------------------------------------------------- temperature


def _temperature_data() -> dict[str, tuple[np.ndarray, np.ndarray, dict[str, Any]]]:
    rng = np.random.default_rng(11)
    n = 4000
    z = rng.normal(0.0, 3.0, (n, C))
    y = _draw_classes(_softmax(z / 2.0), rng)
    s = rng.normal(0.0, 2.0, n)
    ys = (rng.random(n) < 1.0 / (1.0 + np.exp(-s / 2.0))).astype(np.int64)
    names = [f"logit_{k}" for k in range(C)]
    return {
        "multiclass": (z, y, {"logits": names, "label": "label"}),
        "binary": (s, ys, {"logits": "logit", "label": "label"}),
    }


TEMPERATURE = _temperature_data()


def _logit_table(z: np.ndarray, y: np.ndarray) -> pa.Table:
    if z.ndim == 1:
        return pa.table({"logit": z, "label": y})
    cols: dict[str, Any] = {f"logit_{k}": z[:, k] for k in range(z.shape[1])}
    cols["label"] = y
    return pa.table(cols)


@pytest.mark.parametrize("kind", list(TEMPERATURE))
def test_fit_temperature_on_every_engine(kind: str, tmp_path: Path, spark: Any) -> None:
    """The same Newton iteration, one aggregation (or pass) per step: the in-memory
    temperature to 1e-9 relative."""
    z, y, columns = TEMPERATURE[kind]
    path = _write(tmp_path / f"{kind}.parquet", _logit_table(z, y))
    ref = ck.fit_temperature(z, y)
    assert ref > 1.5  # the data were made over-confident (T = 2): a real fit, not T = 1

    def chunks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for a, b in ((0, 1), (1, 1), (1, 1000), (1000, 1003), (1003, z.shape[0])):
            yield z[a:b], y[a:b]

    fits = {
        "duckdb": ck.fit_temperature(str(path), engine="duckdb", columns=columns),
        "spark": ck.fit_temperature(spark.read.parquet(str(path)), engine="spark", columns=columns),
        "stream-file": ck.fit_temperature(path, engine="stream", columns=columns),
        "stream-chunks": ck.fit_temperature(chunks, engine="stream"),
    }
    for engine, t in fits.items():
        assert t == pytest.approx(ref, rel=1e-9), engine


@pytest.mark.parametrize("kind", list(TEMPERATURE))
def test_fit_temperature_separable_data_is_an_error(kind: str, tmp_path: Path, spark: Any) -> None:
    """Every prediction right with a margin: no finite temperature, on any engine."""
    z, y, columns = TEMPERATURE[kind]
    z = z.copy()
    if z.ndim == 1:
        z = np.where(y == 1, np.abs(z) + 0.1, -np.abs(z) - 0.1)
    else:
        z[np.arange(z.shape[0]), y] = z.max(axis=1) + 0.5
    path = _write(tmp_path / "separable.parquet", _logit_table(z, y))
    with pytest.raises(InputError, match="separable"):
        ck.fit_temperature(z, y)
    runs = {
        "duckdb": lambda: ck.fit_temperature(str(path), engine="duckdb", columns=columns),
        "spark": lambda: ck.fit_temperature(
            spark.read.parquet(str(path)), engine="spark", columns=columns
        ),
        "stream": lambda: ck.fit_temperature(path, engine="stream", columns=columns),
        "stream-chunks": lambda: ck.fit_temperature(lambda: iter([(z, y)]), engine="stream"),
    }
    for engine, run in runs.items():
        with pytest.raises(InputError, match="separable"):
            run()
        assert engine


def test_fit_temperature_needs_a_stream_it_can_read_again() -> None:
    z, y, _ = TEMPERATURE["multiclass"]
    with pytest.raises(InputError, match="once per Newton step.*callable"):
        ck.fit_temperature(iter([(z, y)]), engine="stream")


def test_fit_temperature_needs_logits(files: dict[tuple[str, str], Path]) -> None:
    for engine in ("duckdb", "stream"):
        with pytest.raises(InputError, match="needs logits"):
            ck.fit_temperature(
                files["binary-probs", "parquet"],
                engine=engine,
                columns={"probs": "p", "label": "y"},
            )


@pytest.mark.parametrize("fetch_max", [1, 50, 8192])
def test_order_statistics_by_refinement_equal_the_in_memory_quantiles(
    tmp_path, monkeypatch, fetch_max
):
    """Above QUANTILE_AGGREGATE_MAX rows DuckDB (and Spark always) find order statistics by
    histogram refinement; forced here on small, tie-heavy data, the edges and every bin equal
    the in-memory engine's (np.quantile's) exactly."""
    import calibkit.engines._select as select
    import calibkit.engines._sql_engine as sql_engine
    from calibkit.engines.duckdb import DuckDBEngine

    monkeypatch.setattr(sql_engine, "QUANTILE_AGGREGATE_MAX", 0)
    monkeypatch.setattr(select, "FETCH_MAX", fetch_max)
    rng = np.random.default_rng(11)
    n = 20_000
    p = rng.beta(8.0, 0.4, n)
    p[: n // 5] = 1.0  # a fifth of the forecasts tied at exactly 1
    p[n // 5 : n // 4] = np.round(p[n // 5 : n // 4], 2)
    y = (rng.random(n) < p).astype(np.int8)
    path = tmp_path / "ties.parquet"
    pq.write_table(pa.table({"p": p, "y": y}), path)
    binning = Binning(n_bins=20, strategy="quantile", closed="left")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ck.CalibkitWarning)  # the ties collapse quantile bins
        expected = summarize(prepare(p, y, from_logits=False, where="t"), binning)
        got = DuckDBEngine(path, columns={"probs": "p", "label": "y"}).summarize(binning, where="t")
    assert np.array_equal(got.binning.values, expected.binning.values)
    assert np.array_equal(got.deciles.edges, expected.deciles.edges)
    assert got.allclose(expected)
