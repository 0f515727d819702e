"""DuckDB's two paths: the checked rows held in memory (inputs within ``hold_bytes``) and SQL
aggregations alone (larger inputs). Which path runs, how many queries each sends, what
progress reports, and that the numbers agree (the per-kind agreement with the in-memory
reference is in ``test_engines.py`` and ``test_weighted_sql.py``, on both paths)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from calibkit import InputError
from calibkit.engines._plan import Binning
from calibkit.engines.duckdb import DuckDBEngine
from calibkit.engines.memory import summarize
from calibkit.forecasts import prepare

N = 500
COLUMNS = {"probs": "p", "label": "y"}


@pytest.fixture
def path(tmp_path: Path) -> Path:
    rng = np.random.default_rng(11)
    p = np.round(rng.uniform(size=N), 3)
    y = (rng.uniform(size=N) < p**1.2).astype(np.int8)
    out = tmp_path / "preds.parquet"
    pq.write_table(pa.table({"p": p, "y": y}), out)
    return out


def _counted(engine: DuckDBEngine) -> list[str]:
    """The SQL of every query ``engine`` runs from now on."""
    sent: list[str] = []
    run = engine._run

    def counting(sql: str, params: Any, take: str) -> Any:
        sent.append(sql)
        return run(sql, params, take)

    engine._run = counting  # type: ignore[method-assign]
    return sent


@pytest.mark.parametrize(
    ("hold", "queries"),
    [(None, 2), (9 * N, 2), (9 * N - 1, 10), (0, 9)],
)
def test_the_rows_are_held_when_they_fit(path: Path, hold: int | None, queries: int) -> None:
    """Within ``hold_bytes`` (8 bytes a score and 1 a label per row; the default: an eighth
    of the machine's memory) the audit of a Parquet file is its row count from the metadata
    and one read of the rows, checked in memory; beyond it, the count, the checks' scan and
    eight SQL aggregations. Both give the in-memory reference's summary."""
    engine = DuckDBEngine(path, columns=COLUMNS)
    if hold is not None:
        engine.hold_bytes = hold
    sent = _counted(engine)
    binning = Binning(n_bins=10, strategy="quantile")
    got = engine.summarize(binning, where="test")
    assert len(sent) == queries
    assert sent[0].startswith("SELECT count(*) FROM read_parquet") == (hold != 0)
    f = pq.read_table(path)
    ref = summarize(
        prepare(f["p"].to_numpy(), f["y"].to_numpy(), from_logits=False, where="t"), binning
    )
    assert got.allclose(ref)
    assert got.auc == pytest.approx(ref.auc, rel=1e-12)
    assert got.engine == "duckdb" and got.pooled is None  # as on the SQL path


def test_progress_names_the_stages_of_each_path(path: Path) -> None:
    """The first stage, the checks (in memory for held Parquet rows, else DuckDB's scan),
    counts the SQL path's six stages; held rows then report one stage more, of two."""
    sql = ["checks", "edges", "bins", "totals", "ranking", "calibration slope", "done"]
    for hold, want in (
        (None, [("checks", 0, 6), ("summary in memory", 1, 2), ("done", 2, 2)]),
        (0, [(stage, k, 6) for k, stage in enumerate(sql)]),
    ):
        engine = DuckDBEngine(path, columns=COLUMNS)
        if hold is not None:
            engine.hold_bytes = hold
        seen: list[tuple[str, int, int]] = []
        engine.summarize(Binning(), where="t", progress=lambda *a, seen=seen: seen.append(a))
        assert seen == want


def test_bad_rows_are_named_by_the_checks_scan(tmp_path: Path) -> None:
    """On both paths a bad cell is reported by the checks' scan, with the file's column name
    and row count, never as an index into arrays the user did not make."""
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"p": [0.2, 1.5, 0.7], "y": [0, 1, 1]}), bad)
    for hold in (DuckDBEngine.hold_bytes, 0):
        engine = DuckDBEngine(bad, columns=COLUMNS)
        engine.hold_bytes = hold
        with pytest.raises(InputError, match=r"column 'p' has values outside \[0, 1\]: 1 row of 3"):
            engine.summarize(Binning(), where="audit")


def _table(**columns: Any) -> pa.Table:
    rng = np.random.default_rng(5)
    p = np.round(rng.uniform(size=40), 3)
    base: dict[str, Any] = {"p": p, "y": (rng.uniform(size=40) < p).astype(np.int64)}
    base.update(columns)
    return pa.table(base)


def _with(values: Any, at: list[int], value: Any) -> Any:
    out = np.array(values, dtype=object if value is None else None)
    out[at] = value
    return out


P = _table()["p"].to_numpy()
Y = _table()["y"].to_numpy()
LABELLED = {"probs": "p", "label": "y"}
WEIGHTED = {"probs": "p", "label": "y", "weight": "w"}

#: Inputs the unchecked read must refuse as the checks' scan does: (table, columns).
REFUSED = {
    "a missing score": (_table(p=pa.array(_with(P, [3], None), pa.float64())), LABELLED),
    "a NaN score": (_table(p=_with(P, [3, 9], np.nan)), LABELLED),
    "a score above 1": (_table(p=_with(P, [3], 1.5)), LABELLED),
    "a negative score": (_table(p=_with(P, [3], -0.0001)), LABELLED),
    "a missing label": (_table(y=pa.array(_with(Y, [2], None), pa.int64())), LABELLED),
    "label 2": (_table(y=_with(Y, [1, 5], 2)), LABELLED),
    "label -1": (_table(y=_with(Y, [1], -1)), LABELLED),
    "label 300 (beyond TINYINT)": (_table(y=_with(Y, [1], 300)), LABELLED),
    "label 0.5": (_table(y=_with(Y.astype(float), [4], 0.5)), LABELLED),
    "label 1.5 (CAST would round it to 2)": (_table(y=_with(Y.astype(float), [4], 1.5)), LABELLED),
    "a NaN label": (_table(y=_with(Y.astype(float), [4], np.nan)), LABELLED),
    "an infinite label": (_table(y=_with(Y.astype(float), [4], np.inf)), LABELLED),
    "a negative weight": (_table(w=_with(np.ones(40), [0], -1.0)), WEIGHTED),
    "a NaN weight": (_table(w=_with(np.ones(40), [0], np.nan)), WEIGHTED),
    "an infinite weight": (_table(w=_with(np.ones(40), [0], np.inf)), WEIGHTED),
    "a missing weight": (_table(w=pa.array(_with(np.ones(40), [0], None), pa.float64())), WEIGHTED),
    "every weight zero": (_table(w=np.zeros(40)), WEIGHTED),
    "an infinite logit": (
        _table(s=_with(np.linspace(-3, 3, 40), [7], np.inf)),
        {"logits": "s", "label": "y"},
    ),
    "a row not summing to 1": (
        _table(a=_with(P, [0], 0.5), b=1 - P),
        {"probs": ["a", "b"], "label": "y"},
    ),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_the_unchecked_read_refuses_what_the_checks_refuse(tmp_path: Path, case: str) -> None:
    """A Parquet file that fits is read without the checks' scan; whatever its rows break,
    the error is the checks' scan's own, word for word: the file's column and the bad rows'
    count (the scan runs once the read is refused), as when every audit stays in SQL."""
    table, columns = REFUSED[case]
    path = tmp_path / "bad.parquet"
    pq.write_table(table, path)
    messages = []
    for hold in (DuckDBEngine.hold_bytes, 0):
        engine = DuckDBEngine(path, columns=columns)
        engine.hold_bytes = hold
        sent = _counted(engine)
        with pytest.raises(InputError) as caught:
            engine.summarize(Binning(), where="audit")
        messages.append(str(caught.value))
        # held: the count, the refused read, the checks' scan; in SQL: the checks' scan only
        assert [q.split(" FROM ")[0] for q in sent][-1].startswith("SELECT count(*), sum(CASE")
        assert len(sent) == (3 if hold else 1)
    assert messages[0] == messages[1]
    assert "row" in messages[0]


#: Inputs the unchecked read takes as the checked one does: (table, columns).
TAKEN = {
    "int64 labels": (_table(), LABELLED),
    "float labels 0.0 and 1.0": (_table(y=Y.astype(np.float64)), LABELLED),
    "boolean labels": (_table(y=Y.astype(bool)), LABELLED),
    "float32 scores": (_table(p=P.astype(np.float32)), LABELLED),
    "weights with zeros": (_table(w=_with(np.linspace(0.5, 2, 40), [0, 1], 0.0)), WEIGHTED),
    "logits": (_table(s=np.linspace(-3, 3, 40)), {"logits": "s", "label": "y"}),
    "two probability columns": (_table(a=P, b=1 - P), {"probs": ["a", "b"], "label": "y"}),
    "a confidence with its outcome": (_table(), {"confidence": "p", "correct": "y"}),
}


@pytest.mark.parametrize("case", list(TAKEN))
def test_the_unchecked_read_gives_the_checked_summary(tmp_path: Path, case: str) -> None:
    """Valid rows of every column type read unchecked (two queries: the metadata's count and
    the read) give the summary of the SQL path to the rounding of its sums."""
    table, columns = TAKEN[case]
    path = tmp_path / "good.parquet"
    pq.write_table(table, path)
    engine = DuckDBEngine(path, columns=columns)
    sent = _counted(engine)
    got = engine.summarize(Binning(), where="audit")
    assert len(sent) == 2 and "CASE WHEN" not in sent[0]
    sql = DuckDBEngine(path, columns=columns)
    sql.hold_bytes = 0
    want = sql.summarize(Binning(), where="audit")
    assert got.n == want.n == 40
    assert got.allclose(want)


def test_a_csv_is_checked_before_it_is_held(tmp_path: Path) -> None:
    """A CSV has no row count without a scan, and its cells are read by the cell rules: the
    checks' scan runs first, then the read."""
    path = tmp_path / "preds.csv"
    path.write_text("p,y\n0.2,0\n0.7,1\n0.9,1\n")
    engine = DuckDBEngine(path, columns=LABELLED)
    sent = _counted(engine)
    assert engine.summarize(Binning(), where="audit").n == 3
    assert len(sent) == 2 and sent[0].startswith("SELECT count(*), sum(CASE")
