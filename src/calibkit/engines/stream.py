"""The streaming engine: an audit over chunks, holding one chunk at a time.

Input: an iterator of ``(probs, labels)`` chunks (read once), a callable that returns a fresh
such iterator (read twice), or a file read in batches through pyarrow (read twice). Chunks may
carry sample weights, ``(probs, labels, sample_weight)`` triples (every chunk or none), and a
file its weight column (``columns={"weight": ...}``): then every sum of the summary is
weighted as the in-memory engine weighs it, quantile edges are weighted quantiles
(:func:`calibkit.measure.weighted.weighted_quantiles`) and the AUC grid sums the weights.

One pass accumulates the :class:`~calibkit.measure.summary.Summary` of every chunk over the
fixed edges, fine bin statistics on a logit grid for the quantile edges (the Hosmer-Lemeshow
deciles always need them), and the :class:`~calibkit.measure.summary.RankGrid` for the AUC.

Quantile edges are then exact when the input can be read again: the fine counts locate the
cell of each order statistic, a second pass collects the forecasts in those few cells, and the
exact order statistics (hence ``np.quantile``'s edges) come from them; the bin statistics follow
from the fine bins, with only the collected cells split by the exact edges. A stream read once
gets its quantile edges at fine-bin boundaries instead (statistics exact for those edges), and
the summary's ``notes`` say so. The AUC comes from the grid, within the error bound it states.

Every chunk is checked as arrays in memory are (:mod:`._chunks`): a bad value is counted over
the whole stream before the error is raised, every chunk must hold forecasts of the same shape,
and the second pass over a re-readable input must read the same rows as the first (their count
and a checksum of their values), or the audit is refused.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from .. import _validate as v
from .._errors import InputError
from ..forecasts import Prepared
from ..measure.bins import (
    BinStats,
    Edges,
)
from ..measure.distinct import MAX_STREAM_ROWS, merge_pooled
from ..measure.pooled import Pooled, pool_ties
from ..measure.slope import (
    GRID_CELLS,
    TERMS,
    CalibrationSlope,
    certain_and_grid,
    grid_counts,
    grid_start,
    slope_from_sums,
    slope_terms,
    terms_at,
    undefined_slope,
    weighted_rows,
)
from ..measure.summary import RankGrid, Summary, coarsen, fine_edges
from ._chunks import Fingerprint, prepared_chunks
from ._exact_edges import exact_stats
from ._plan import Binning, Need, needs
from .memory import chunk_summary

Progress = Callable[[str, int, int], None] | None

#: Note of a summary whose quantile edges come from the fine grid.
APPROXIMATE_EDGES = (
    "quantile edges at boundaries of a fine logit grid (the stream could be read only once); "
    "the bin statistics are exact for the edges shown"
)


@dataclass(frozen=True)
class Reader:
    """How to read the input: ``read()`` yields prepared chunks; ``again`` says whether it can
    be called a second time; ``rows`` is the total when known (for progress)."""

    read: Callable[[], Iterator[Prepared]]
    again: bool
    rows: int | None
    empty: str = "the stream held no forecasts (every chunk was empty)"
    #: The message when every weight of the stream is zero.
    zero: str = ""


def summarize_stream(
    data: Any,
    labels: Any = None,
    *,
    columns: Mapping[str, Any] | None = None,
    from_logits: bool = False,
    binning: Binning,
    where: str = "audit",
    progress: Progress = None,
) -> Summary:
    """The :class:`Summary` of a stream (see the module docstring)."""
    if labels is not None:
        raise InputError(
            f"{where}: a stream carries its labels: each chunk is a (probs, labels) pair; "
            "leave labels= unset."
        )
    reader = _reader(data, columns=columns, from_logits=from_logits, where=where)
    total, fine, grid, wanted, seen, certain = _first_pass(reader, binning, where, progress)
    if total.weighted and not total.mass > 0:
        raise InputError(reader.zero or v.all_weights_zero("sample_weight of the stream", where))
    quantile = {name: need for name, need in wanted.items() if need.fixed is None}
    notes: tuple[str, ...] = ()
    if reader.again:
        exact = exact_stats(reader, quantile, fine, seen, where, progress)
    else:
        exact = {
            name: coarsen(fine[name], n_bins=need.n_bins, where=where, stacklevel=5)
            for name, need in quantile.items()
        }
        notes += (APPROXIMATE_EDGES,) if "table" in quantile else ()
    stats = {name: s for name, (s, _) in exact.items()}
    slope = (
        _slope(reader, total, certain, seen, where, progress)
        if reader.again
        else undefined_slope(total.n, ONE_PASS_SLOPE)
    )
    auc, error = grid.auc()
    if error:
        notes += (f"AUC from a logit grid of {grid.positives.size} cells: within +-{error:.1e}",)
    summary = replace(
        total,
        stats=stats.get("table", total.stats),
        deciles=stats["deciles"],
        classwise=tuple(stats.get(f"class{k}", s) for k, s in enumerate(total.classwise)),
        binning=exact["table"][1] if "table" in exact else total.binning,
        auc=auc,
        auc_error=error,
        slope=slope,
    )
    return summary.with_engine("stream", *notes)


# ----------------------------------------------------------------------------- readers


def _reader(
    data: Any, *, columns: Mapping[str, Any] | None, from_logits: bool, where: str
) -> Reader:
    if isinstance(data, (str, os.PathLike)):
        return _file_reader(Path(data), columns or {}, where)
    if columns:
        raise InputError(
            f"{where}: columns= names the columns of a file; chunks of arrays are (probs, "
            "labels) pairs (or (probs, labels, sample_weight) triples) already."
        )
    if callable(data):
        return Reader(lambda: prepared_chunks(data(), from_logits, where, "chunk"), True, None)
    if isinstance(data, Iterable):
        return Reader(
            _once(lambda: prepared_chunks(data, from_logits, where, "chunk"), where), False, None
        )
    raise InputError(
        f"{where}: a stream is an iterable of (probs, labels) or (probs, labels, "
        "sample_weight) chunks."
    )


def _once(read: Callable[[], Iterator[Prepared]], where: str) -> Callable[[], Iterator[Prepared]]:
    used: list[bool] = []

    def first() -> Iterator[Prepared]:
        if used:
            raise InputError(f"{where}: this stream can be read only once.")
        used.append(True)
        return read()

    return first


def _file_reader(path: Path, columns: Mapping[str, Any], where: str) -> Reader:
    from ..io import Schema, check_path, file_schema, plan_columns, read_batches, resolve_format

    check_path(path)
    fmt = resolve_format(path, columns.get("format"))
    names, lists = file_schema(path, fmt)
    options = {k: v for k, v in columns.items() if k != "format"}
    plan = plan_columns(Schema(path, fmt, names, lists), **options)
    rows = None
    if fmt == "parquet":
        import pyarrow.parquet as pq

        rows = pq.ParquetFile(path).metadata.num_rows

    weight = plan.weight

    def read() -> Iterator[Prepared]:
        batches = (
            (scores, labels) if w is None else (scores, labels, w)
            for scores, labels, w, _ in read_batches(path, fmt, plan)
        )
        named = "sample_weight" if weight is None else f"weight column {weight!r}"
        return prepared_chunks(batches, plan.kind == "logits", where, "batch", weight_name=named)

    return Reader(
        read,
        True,
        rows,
        f"'{path}' has no rows (a header, or a schema, only); there is nothing to audit",
        v.every_weight_zero(str(weight), where),
    )


# ----------------------------------------------------------------------------- passes


def _first_pass(
    reader: Reader, binning: Binning, where: str, progress: Progress
) -> tuple[
    Summary, dict[str, BinStats], RankGrid, dict[str, Need], Fingerprint, tuple[int, int, Any, int]
]:
    """Accumulate everything over fixed edges, the fine grid for quantile edges, the AUC grid,
    the forecasts of exactly 0 or 1 and how many of them failed, the rows the slope fits (of
    positive weight) (and the fingerprint of the rows, when the input is read again)."""
    seen = Fingerprint()
    certain = [0, 0, 0]
    histogram: np.ndarray = np.zeros((2, GRID_CELLS), dtype=np.int64)
    total: Summary | None = None
    grid: RankGrid | None = None
    wanted: dict[str, Need] = {}
    grid_edges = Edges(fine_edges(), "explicit", 0)
    pooled: _Pooling | None = _Pooling()
    passes = 2 if reader.again else 1
    rows = 0
    for f in reader.read():
        if total is None:
            wanted = needs(binning, kind=f.kind, n_classes=f.n_classes, where=where)
        edges = {k: need.fixed or grid_edges for k, need in wanted.items()}
        closed = {k: need.closed for k, need in wanted.items()}
        part = chunk_summary(f, edges, closed=closed)
        total = part if total is None else total + part
        if reader.again:
            seen.add(f)
        if f.weight is None:
            n_certain, n_failed, counts = certain_and_grid(f.conf, f.outcome)
            histogram += counts
            n_fitted = f.conf.size
        else:  # the rows of positive weight, their weights summed per cell
            x, y, wx, n_fitted, n_certain, n_failed = weighted_rows(f.conf, f.outcome, f.weight)
            histogram = histogram + grid_counts(x, y, wx)
        certain[0] += n_certain
        certain[1] += n_failed
        certain[2] += n_fitted
        if pooled is not None:
            pooled.add(f.conf, f.outcome, f.weight)
        chunk_grid = RankGrid.of(f.conf, f.outcome, sample_weight=f.weight)
        grid = chunk_grid if grid is None else grid + chunk_grid
        rows += f.conf.size
        if progress is not None:
            progress(f"pass 1 of {passes}", rows, reader.rows or 0)
    if total is None or grid is None:
        raise InputError(f"{where}: {reader.empty}.")
    fine = {name: _field(total, name) for name, need in wanted.items() if need.fixed is None}
    total = replace(total, pooled=pooled.result()) if pooled is not None else total
    return total, fine, grid, wanted, seen, (certain[0], certain[1], histogram, certain[2])


class _Pooling:
    """Distinct forecasts of a stream with their counts and events (and weights), merged as
    chunks arrive, given up past :data:`~calibkit.measure.distinct.MAX_STREAM_ROWS` rows."""

    def __init__(self) -> None:
        self.parts: list[Pooled] = []
        self.rows = 0
        self.dropped = False

    def add(self, conf: np.ndarray, outcome: np.ndarray, weight: np.ndarray | None) -> None:
        if self.dropped:
            return
        self.rows += conf.size
        if self.rows > MAX_STREAM_ROWS:  # the audit says why there are none
            self.parts, self.dropped = [], True
            return
        self.parts.append(pool_ties(conf, outcome, sample_weight=weight))
        if len(self.parts) > 64:
            self.parts = [merge_pooled(self.parts)]

    def result(self) -> Pooled | None:
        if self.dropped or not self.parts:
            return None
        return merge_pooled(self.parts)


#: Why a stream read once has no calibration slope.
ONE_PASS_SLOPE = (
    "a stream read once cannot fit it (the fit takes a few passes over the data); pass a "
    "callable that returns a fresh iterator, a list of batches, or a file"
)


def _slope(
    reader: Reader,
    total: Summary,
    certain: tuple[int, int, Any, int],
    first: Fingerprint,
    where: str,
    progress: Progress,
) -> CalibrationSlope:
    """The calibration slope fit over a re-readable stream: started from the fit on the first
    pass's logit histogram, then one pass a round of Newton steps (usually one), each checked to
    read the rows of the first. Weighted, every sum weighs its rows (those of weight 0 left
    out), as :func:`calibkit.measure.slope.slope_of` does."""
    rounds = 0

    def evaluate(points: list[tuple[float, ...]]) -> list[np.ndarray]:
        nonlocal rounds
        rounds += 1
        sums = [np.zeros(TERMS) for _ in points]
        seen = Fingerprint()
        rows = 0
        for f in reader.read():
            seen.add(f)
            seen.check(first, where, False, "a pass of the calibration slope")
            if f.weight is None:
                terms = terms_at(f.conf, f.outcome, points)
            else:
                x, y, wx, _, _, _ = weighted_rows(f.conf, f.outcome, f.weight)
                terms = [slope_terms(x, y, a, b, wx) for a, b, *_ in points]
            for part, more in zip(sums, terms, strict=True):
                part += more
            rows += f.conf.size
            if progress is not None:
                progress(f"calibration slope, round {rounds}", rows, reader.rows or 0)
        seen.check(first, where, True, "a pass of the calibration slope")
        return sums

    n_certain, n_failed, histogram, positive = certain
    return slope_from_sums(
        evaluate,
        n=positive,
        n_certain=n_certain,
        n_failed=n_failed,
        start=grid_start(histogram),
        weight=total.mass if total.weighted else None,
    )


def _field(summary: Summary, name: str) -> BinStats:
    if name == "table":
        return summary.stats
    if name == "deciles":
        return summary.deciles
    return summary.classwise[int(name[5:])]


def logit_chunks(
    data: Any, labels: Any = None, *, columns: Mapping[str, Any] | None, where: str
) -> Callable[[], Iterator[tuple[np.ndarray, np.ndarray]]]:
    """A re-readable source of validated ``(logits, labels)`` chunks, for the Newton steps of a
    temperature fit (one pass each)."""
    if labels is not None:
        raise InputError(f"{where}: a stream carries its labels; leave labels= unset.")
    reader = _reader(data, columns=columns, from_logits=True, where=where)
    if not reader.again:
        raise InputError(
            f"{where}: a temperature fit reads the data once per Newton step (a handful of "
            "times); pass a callable that returns a fresh iterator of chunks, or a file path, "
            "instead of an iterator that can be read only once."
        )

    first: list[Fingerprint] = []  # of the first complete pass

    def read() -> Iterator[tuple[np.ndarray, np.ndarray]]:
        seen = Fingerprint()
        for f in reader.read():
            if not f.from_logits:
                raise InputError(
                    f"{where}: temperature scaling needs logits; the file gives probabilities "
                    "or a confidence (pass logits= / --logits)."
                )
            seen.add(f)
            if first:
                seen.check(first[0], where, False, "a later pass")
            yield np.asarray(f.scores), f.y
        if first:
            seen.check(first[0], where, True, "a later pass")
        else:
            first.append(seen)

    return read
