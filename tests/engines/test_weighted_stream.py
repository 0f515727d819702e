"""Sample weights in the streaming engine: chunks of ``(probs, labels, sample_weight)`` triples
and a file's weight column read in batches.

A weighted stream gives the weighted in-memory audit (every number of ``to_dict()``, the AUC
within the grid's stated bound), and, with integer weights, the numbers of the stream of the
rows repeated w times; a file's weight column gives DuckDB's summary. Bad weights are counted
over the whole stream and placed at their row of the stream.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from sklearn.metrics import roc_auc_score

import calibkit as ck
from calibkit import InputError
from calibkit.engines import summarize_with_engine
from calibkit.engines._plan import Binning
from calibkit.engines.stream import APPROXIMATE_EDGES, summarize_stream
from calibkit.forecasts import prepare
from calibkit.measure.bins import BinStats
from calibkit.measure.summary import Summary, coarsen, fine_edges

N = 3000
CHUNK = 700
FAST = {"n_boot": 50, "n_sims": 50}


def _binary(seed: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    p = rng.random(N)
    y = (rng.random(N) < p**1.5).astype(np.int64)
    w = rng.integers(0, 4, N).astype(np.float64)  # zeros among them: rows left out
    return p, y, w


def _logits(seed: int = 2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(N, 4)) * 2
    y = np.argmax(z + rng.gumbel(size=(N, 4)) * 1.5, axis=1)
    w = rng.gamma(2.0, 0.7, N)  # non-integer weights
    return z, y, w


def _chunks(*arrays: np.ndarray, size: int = CHUNK) -> list[tuple[np.ndarray, ...]]:
    return [tuple(a[i : i + size] for a in arrays) for i in range(0, arrays[0].shape[0], size)]


def _again(chunks: list[tuple[np.ndarray, ...]]) -> Any:
    """A stream that can be read again (what ``ck.audit`` makes of a list of batches)."""
    return lambda: iter(chunks)


def _same(memory: Any, stream: Any, path: str = "") -> None:
    """Every entry equal, floats to 1e-9 (the summation order differs by chunk)."""
    if isinstance(memory, dict):
        assert memory.keys() == stream.keys(), path
        for key in memory:
            _same(memory[key], stream[key], f"{path}/{key}")
    elif isinstance(memory, list):
        assert len(memory) == len(stream), path
        for i, (a, b) in enumerate(zip(memory, stream, strict=True)):
            _same(a, b, f"{path}[{i}]")
    elif isinstance(memory, float) and isinstance(stream, float):
        assert math.isclose(memory, stream, rel_tol=1e-9, abs_tol=1e-12) or (
            math.isnan(memory) and math.isnan(stream)
        ), (path, memory, stream)
    else:
        assert memory == stream, (path, memory, stream)


def _without_grid(d: dict[str, Any]) -> dict[str, Any]:
    """An audit's dictionary without what the stream documents to approximate (the AUC from
    its logit grid, with the note that says so)."""
    return {k: v for k, v in d.items() if k not in ("auc", "auc_error", "notes")}


def _quiet(f: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ck.CalibkitWarning)
        return f()


# ----------------------------------------------------------------------------- weighted = memory


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
@pytest.mark.parametrize("kind", ["binary", "multiclass-logits"])
def test_weighted_stream_audit_equals_weighted_memory_audit(kind: str, strategy: str) -> None:
    scores, y, w = _binary() if kind == "binary" else _logits()
    logits = kind != "binary"
    memory = _quiet(
        lambda: ck.audit(scores, y, sample_weight=w, from_logits=logits, strategy=strategy, **FAST)
    )
    stream = _quiet(
        lambda: ck.audit(
            _chunks(scores, y, w), engine="stream", from_logits=logits, strategy=strategy, **FAST
        )
    )
    _same(_without_grid(memory.to_dict()), _without_grid(stream.to_dict()))
    assert stream.to_dict()["table"]["total_weight"] == pytest.approx(w.sum(), rel=1e-12)
    # the AUC within the bound the stream states, of scikit-learn's weighted AUC
    f = prepare(scores, y, from_logits=logits, where="test")
    exact = roc_auc_score(f.outcome, f.conf, sample_weight=w)
    assert memory.auc == pytest.approx(exact, abs=1e-12)
    assert 0 < stream.auc_error < 1e-4
    assert abs(stream.auc - exact) <= stream.auc_error + 1e-12


def test_weighted_summary_fields_equal_memory() -> None:
    """The Summary itself: bins, deciles, scores, correct weight, Spiegelhalter's variance,
    the pooled forecasts' weights and the slope's counts of rows of positive weight."""
    p, y, w = _binary()
    binning = Binning(strategy="quantile")
    memory = _quiet(lambda: summarize_with_engine(p, y, sample_weight=w, binning=binning))
    stream = _quiet(lambda: summarize_stream(_again(_chunks(p, y, w)), binning=binning))
    assert stream.allclose(memory)
    assert stream.stats.weighted and stream.deciles.weighted
    assert stream.correct_weight == pytest.approx(w[(p >= 0.5) == (y == 1)].sum(), rel=1e-12)
    assert stream.spiegelhalter_variance == pytest.approx(memory.spiegelhalter_variance)
    assert memory.pooled is not None and stream.pooled is not None
    np.testing.assert_array_equal(stream.pooled.x, memory.pooled.x)
    np.testing.assert_array_equal(stream.pooled.count, memory.pooled.count)
    np.testing.assert_allclose(stream.pooled.mass, memory.pooled.mass, rtol=1e-12)
    np.testing.assert_allclose(stream.pooled.mass_sq, memory.pooled.mass_sq, rtol=1e-12)
    assert memory.slope is not None and stream.slope is not None
    assert stream.slope.n == memory.slope.n == int(np.count_nonzero(w > 0))
    assert stream.slope.weight == pytest.approx(w.sum(), rel=1e-12)
    assert stream.slope.slope == pytest.approx(memory.slope.slope, rel=1e-9)


# ----------------------------------------------------------------------------- integer weights


def _repeated(p: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    rows = np.repeat(np.arange(p.size), w.astype(np.int64))
    return p[rows], y[rows]


def _as_repeated(weighted: Summary, repeated: Summary) -> None:
    """The weighted numbers are those of the rows repeated w times: each bin's weight is the
    repeated count, every sum and mean theirs (the AUC of each within its grid bound)."""
    for a, b in ((weighted.stats, repeated.stats), (weighted.deciles, repeated.deciles)):
        np.testing.assert_array_equal(a.edges, b.edges)
        np.testing.assert_array_equal(a.mass, b.count.astype(np.float64))
        for field in ("sum_conf", "sum_outcome", "sum_conf_sq", "sum_var_weight"):
            np.testing.assert_allclose(getattr(a, field), getattr(b, field), rtol=1e-12)
    assert weighted.mass == repeated.n
    assert weighted.accuracy == pytest.approx(repeated.accuracy, rel=1e-12)
    assert weighted.brier_sum == pytest.approx(repeated.brier_sum, rel=1e-12)
    assert weighted.nll_sum == pytest.approx(repeated.nll_sum, rel=1e-12)
    assert weighted.auc is not None and repeated.auc is not None
    assert weighted.auc == pytest.approx(repeated.auc, abs=1e-12)


def test_integer_weights_give_the_stream_of_repeated_rows() -> None:
    p, y, w = _binary()
    binning = Binning(strategy="quantile")
    weighted = _quiet(lambda: summarize_stream(_again(_chunks(p, y, w)), binning=binning))
    repeated = _quiet(
        lambda: summarize_stream(_again(_chunks(*_repeated(p, y, w))), binning=binning)
    )
    _as_repeated(weighted, repeated)
    assert weighted.slope is not None and repeated.slope is not None
    assert weighted.slope.slope == pytest.approx(repeated.slope.slope, rel=1e-9)
    assert weighted.slope.slope_se == pytest.approx(repeated.slope.slope_se, rel=1e-9)
    assert weighted.slope.in_the_large == pytest.approx(repeated.slope.in_the_large, rel=1e-9)


def test_a_one_pass_iterator_cuts_its_quantile_bins_by_weight() -> None:
    """Read once (an iterator), the quantile edges come from the fine grid, cut by weight: the
    edges and bins of the repeated rows, not those of the raw counts."""
    p, y, w = _binary()
    binning = Binning(strategy="quantile", n_bins=10)
    weighted = _quiet(lambda: summarize_stream(iter(_chunks(p, y, w)), binning=binning))
    repeated = _quiet(lambda: summarize_stream(iter(_chunks(*_repeated(p, y, w))), binning=binning))
    assert APPROXIMATE_EDGES in weighted.notes
    _as_repeated(weighted, repeated)
    assert weighted.slope is not None and not weighted.slope.defined  # needs passes
    # cut by count, the edges would differ (the weights are far from uniform here)
    fine = BinStats.from_forecasts(p, y, edges=fine_edges())
    by_count, _ = _quiet(lambda: coarsen(fine, n_bins=10, where="test"))
    assert not np.array_equal(by_count.edges, weighted.stats.edges)


def test_a_one_pass_iterator_with_fixed_bins_equals_memory() -> None:
    p, y, w = _binary()
    stream = summarize_stream(iter(_chunks(p, y, w)), binning=Binning())
    memory = summarize_with_engine(p, y, sample_weight=w, binning=Binning())
    assert stream.stats.allclose(memory.stats)  # the deciles' edges are quantiles: approximate


def test_a_chunk_whose_weights_are_all_zero_adds_its_rows_and_no_weight() -> None:
    p, y, w = _binary()
    w[:CHUNK] = 0.0
    stream = summarize_stream(_again(_chunks(p, y, w)), binning=Binning())
    memory = summarize_with_engine(p, y, sample_weight=w, binning=Binning())
    assert stream.allclose(memory)
    assert stream.n == N  # the raw count keeps the rows of weight 0


# ----------------------------------------------------------------------------- files


def _parquet(tmp_path: Path, p: np.ndarray, y: np.ndarray, w: np.ndarray) -> Path:
    path = tmp_path / "w.parquet"
    pq.write_table(pa.table({"p": p, "y": y, "w": w}), path)
    return path


COLUMNS = {"probs": "p", "label": "y", "weight": "w"}


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_a_weighted_file_on_the_stream_equals_duckdb(tmp_path: Path, strategy: str) -> None:
    p, y, w = _binary()
    path = _parquet(tmp_path, np.round(p, 3), y, w)  # rounded: ties in the quantile cells
    binning = Binning(strategy=strategy)
    stream = _quiet(
        lambda: summarize_with_engine(path, engine="stream", columns=COLUMNS, binning=binning)
    )
    duck = _quiet(
        lambda: summarize_with_engine(path, engine="duckdb", columns=COLUMNS, binning=binning)
    )
    assert stream.weighted and duck.weighted
    assert stream.allclose(duck)
    assert stream.correct_weight == pytest.approx(duck.correct_weight, rel=1e-12)
    assert stream.spiegelhalter_variance == pytest.approx(duck.spiegelhalter_variance)


def test_a_file_read_in_batches_weighs_every_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import calibkit.io

    whole = calibkit.io.read_batches
    monkeypatch.setattr(
        calibkit.io, "read_batches", lambda path, fmt, plan: whole(path, fmt, plan, batch_rows=500)
    )
    p, y, w = _binary()
    path = _parquet(tmp_path, p, y, w)
    audited = _quiet(lambda: ck.audit(path, engine="stream", columns=COLUMNS, **FAST))
    memory = _quiet(lambda: ck.audit(p, y, sample_weight=w, **FAST))
    _same(_without_grid(memory.to_dict()), _without_grid(audited.to_dict()))
    # before: the weight column was read and dropped, an unweighted audit
    assert audited.to_dict()["table"]["total_weight"] == pytest.approx(w.sum(), rel=1e-12)


# ----------------------------------------------------------------------------- bad weights


def test_negative_weights_in_a_later_chunk_are_counted_over_the_stream() -> None:
    p, y, w = _binary()
    w[[1403, 1410, 2900]] = -1.0
    with pytest.raises(
        InputError,
        match=r"sample_weight must not be negative; 3 weights are, first at row 1403 of the "
        r"stream: -1\.0",
    ):
        summarize_stream(iter(_chunks(p, y, w)), binning=Binning())


def test_an_infinite_weight_in_a_later_chunk_names_its_row_of_the_stream() -> None:
    p, y, w = _binary()
    w[2101] = np.inf
    with pytest.raises(InputError, match=r"sample_weight .*row 2101 of the stream"):
        summarize_stream(_chunks(p, y, w), binning=Binning())


def test_a_weight_chunk_of_the_wrong_length_names_the_chunk() -> None:
    p, y, w = _binary()
    chunks = _chunks(p, y, w)
    chunks[2] = (chunks[2][0], chunks[2][1], chunks[2][2][:-1])
    with pytest.raises(InputError, match=r"sample_weight.*\(in the chunk starting at row 1400\)"):
        summarize_stream(chunks, binning=Binning())


def test_bad_weights_in_a_later_batch_of_a_file_name_the_column_and_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import calibkit.io

    whole = calibkit.io.read_batches
    monkeypatch.setattr(
        calibkit.io, "read_batches", lambda path, fmt, plan: whole(path, fmt, plan, batch_rows=500)
    )
    p, y, w = _binary()
    w[[1234, 2500]] = -2.0
    path = _parquet(tmp_path, p, y, w)
    with pytest.raises(
        InputError,
        match=r"weight column 'w' must not be negative; 2 weights are, first at row 1234 of the "
        r"stream",
    ):
        summarize_with_engine(path, engine="stream", columns=COLUMNS)


def test_every_weight_of_the_stream_zero_is_refused() -> None:
    p, y, _ = _binary()
    with pytest.raises(InputError, match="every sample_weight of the stream is zero"):
        summarize_stream(_chunks(p, y, np.zeros(N)), binning=Binning())


def test_every_weight_of_a_file_zero_is_refused(tmp_path: Path) -> None:
    p, y, _ = _binary()
    path = _parquet(tmp_path, p, y, np.zeros(N))
    with pytest.raises(InputError, match="every weight in column 'w' is zero"):
        summarize_with_engine(path, engine="stream", columns=COLUMNS)


def test_pairs_and_triples_are_not_mixed() -> None:
    p, y, w = _binary()
    chunks: list[tuple[np.ndarray, ...]] = _chunks(p, y, w)
    chunks[1] = chunks[1][:2]
    with pytest.raises(
        InputError, match=r"chunk 1 of the stream .*starts at row 700\) has no sample weights"
    ):
        summarize_stream(chunks, binning=Binning())
    pairs: list[tuple[np.ndarray, ...]] = _chunks(p, y)
    pairs[3] = (*pairs[3], w[2100:2800])
    with pytest.raises(InputError, match=r"chunk 3 of the stream .*carries sample weights"):
        summarize_stream(pairs, binning=Binning())


def test_a_chunk_of_four_items_is_refused() -> None:
    p, y, w = _binary()
    with pytest.raises(InputError, match=r"\(probs, labels, sample_weight\) triple; got tuple"):
        summarize_stream([(p, y, w, w)], binning=Binning())


def test_an_array_of_weights_beside_a_stream_is_refused() -> None:
    p, y, w = _binary()
    with pytest.raises(InputError, match=r"a stream carries its weights: make each chunk"):
        ck.audit(_chunks(p, y), engine="stream", sample_weight=w)


def test_an_array_of_weights_beside_a_duckdb_file_is_refused(tmp_path: Path) -> None:
    p, y, w = _binary()
    path = _parquet(tmp_path, p, y, w)
    with pytest.raises(InputError, match=r"engine='duckdb' the weights are a column"):
        summarize_with_engine(
            path, engine="duckdb", columns={"probs": "p", "label": "y"}, sample_weight=w
        )


def test_a_callable_stream_of_triples_is_read_twice() -> None:
    """A callable returning a fresh iterator of triples: exact quantile edges (no note)."""
    p, y, w = _binary()
    chunks = _chunks(p, y, w)

    def fresh() -> Iterator[tuple[np.ndarray, ...]]:
        return iter(chunks)

    binning = Binning(strategy="quantile")
    stream = _quiet(lambda: summarize_stream(fresh, binning=binning))
    memory = _quiet(lambda: summarize_with_engine(p, y, sample_weight=w, binning=binning))
    assert APPROXIMATE_EDGES not in stream.notes
    assert stream.allclose(memory)


def test_the_streams_section_of_docs_weights_runs() -> None:
    import doctest

    text = (Path(__file__).parents[2] / "docs" / "weights.md").read_text()
    section = text.split("## Streams and the monitor", 1)[1].split("\n## ", 1)[0]
    test = doctest.DocTestParser().get_doctest(section, {}, "weights.md#streams", None, 0)
    runner = doctest.DocTestRunner()
    _quiet(lambda: runner.run(test))  # four forecasts: the deciles collapse, as warned
    assert runner.summarize(verbose=False).failed == 0
    assert len(test.examples) >= 3
