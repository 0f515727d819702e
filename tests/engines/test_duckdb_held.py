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
    [(None, 2), (9 * N, 2), (9 * N - 1, 9), (0, 9)],
)
def test_the_rows_are_held_when_they_fit(path: Path, hold: int | None, queries: int) -> None:
    """Within ``hold_bytes`` (8 bytes a score and 1 a label per row; the default: an eighth
    of the machine's memory) the audit is the checks' scan and one read of the rows; beyond it,
    the nine SQL aggregations. Both give the in-memory reference's summary."""
    engine = DuckDBEngine(path, columns=COLUMNS)
    if hold is not None:
        engine.hold_bytes = hold
    sent = _counted(engine)
    binning = Binning(n_bins=10, strategy="quantile")
    got = engine.summarize(binning, where="test")
    assert len(sent) == queries
    f = pq.read_table(path)
    ref = summarize(
        prepare(f["p"].to_numpy(), f["y"].to_numpy(), from_logits=False, where="t"), binning
    )
    assert got.allclose(ref)
    assert got.auc == pytest.approx(ref.auc, rel=1e-12)
    assert got.engine == "duckdb" and got.pooled is None  # as on the SQL path


def test_progress_names_the_stages_of_each_path(path: Path) -> None:
    """The path is chosen after the checks, so their stage counts the SQL path's six stages;
    held rows then report one stage more, of two."""
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


def test_bad_rows_are_named_by_the_checks_before_any_row_is_held(tmp_path: Path) -> None:
    """The checks' scan runs first on both paths: a bad cell is reported with the file's
    column name and row count, never as an index into arrays the user did not make."""
    bad = tmp_path / "bad.parquet"
    pq.write_table(pa.table({"p": [0.2, 1.5, 0.7], "y": [0, 1, 1]}), bad)
    for hold in (DuckDBEngine.hold_bytes, 0):
        engine = DuckDBEngine(bad, columns=COLUMNS)
        engine.hold_bytes = hold
        with pytest.raises(InputError, match=r"column 'p' has values outside \[0, 1\]: 1 row of 3"):
            engine.summarize(Binning(), where="audit")
