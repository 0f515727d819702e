"""Engines: where the sums of an audit are computed.

Every engine turns its input into the same :class:`~calibkit.measure.summary.Summary` (bin
statistics, score sums, the AUC), and the audit is computed from that summary by one function,
so engines agree to the rounding of their sums (tested to 1e-12):

``"memory"``
    Arrays in memory (the reference; :func:`calibkit.audit` on arrays).
``"stream"``
    An iterator of ``(probs, labels)`` chunks (or ``(probs, labels, sample_weight)`` triples),
    a callable returning a fresh one (read twice: exact quantile edges), or a file read in
    batches through pyarrow (its weight column too). One chunk is held at a time.
``"duckdb"``
    Parquet / CSV / TSV / JSON-lines files or globs, aggregated inside DuckDB (files larger than
    memory; exact quantiles and AUC from DuckDB's own sort, which spills to disk).
``"spark"``
    A Spark DataFrame (or a path with a SparkSession), aggregated by Spark: for a cluster.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

from .. import _validate as v
from .._errors import InputError
from ..forecasts import is_stream, prepare
from ..io import column_options
from ..measure.summary import Summary
from ._plan import Binning

__all__ = ["ENGINES", "Binning", "open_engine", "summarize_with_engine"]

ENGINES = ("memory", "stream", "duckdb", "spark")


def open_engine(data: Any, *, engine: str, columns: Mapping[str, Any] | None, where: str) -> Any:
    """A SQL engine (DuckDB or Spark) over ``data``."""
    columns = column_options(columns, where=where)
    if engine == "duckdb":
        from .duckdb import DuckDBEngine

        if not isinstance(data, (str, os.PathLike, list, tuple)):
            raise InputError(
                f"{where}: engine='duckdb' reads files: pass a path, a glob such as "
                f"'preds/*.parquet' or a list of paths, not {type(data).__name__}."
            )
        return DuckDBEngine(data, columns=columns, where=where)
    if engine == "spark":
        from .spark import SparkEngine

        return SparkEngine(data, columns=columns, where=where)
    raise InputError(f"{where}: engine {engine!r} does not run SQL; use 'duckdb' or 'spark'.")


def summarize_with_engine(
    data: Any,
    labels: Any = None,
    *,
    engine: str | None = None,
    columns: Mapping[str, Any] | None = None,
    from_logits: bool = False,
    binning: Binning | None = None,
    where: str = "audit",
    progress: Callable[[str, int, int], None] | None = None,
    sample_weight: Any = None,
) -> Summary:
    """The :class:`Summary` of ``data`` computed by ``engine`` (see the module docstring).

    ``sample_weight``: one weight per row of arrays in memory; a file's or a table's weights
    are its column ``columns["weight"]``, a stream's the third item of each chunk."""
    if columns is not None:
        columns = column_options(columns, where=where)
    binning = binning or Binning()
    engine = _engine_for(data, engine, where)
    if engine in ("duckdb", "spark"):
        if sample_weight is not None:
            raise InputError(
                f"{where}: with engine={engine!r} the weights are a column of the input; name "
                "it in columns= ({'weight': ...}) instead of passing an array."
            )
        if labels is not None:
            raise InputError(
                f"{where}: with engine={engine!r} the labels are a column of the input; name it "
                "in columns= ({'label': ...}) instead of passing labels."
            )
        return open_engine(data, engine=engine, columns=columns, where=where).summarize(
            binning, where=where, progress=progress
        )
    if sample_weight is not None and engine == "stream":
        raise InputError(
            f"{where}: a stream carries its weights: make each chunk a (probs, labels, "
            "sample_weight) triple (or name a file's weight column: columns={'weight': ...}); "
            "leave sample_weight= unset."
        )
    from . import stream

    if engine == "stream":
        return stream.summarize_stream(
            data,
            labels,
            columns=columns,
            from_logits=from_logits,
            binning=binning,
            where=where,
            progress=progress,
        )
    from .memory import summarize

    if isinstance(data, (str, os.PathLike)):
        from ..io import read_predictions

        preds = read_predictions(data, **dict(columns or {}))
        data, labels, from_logits = preds.scores, preds.labels, preds.kind == "logits"
        sample_weight = preds.sample_weight
    elif columns is not None:
        raise InputError(
            f"{where}: columns= names the columns of a file or table read by an engine; "
            "with arrays in memory, pass the arrays themselves (or engine='duckdb')."
        )
    elif labels is None:
        raise InputError(
            f"{where}: pass the labels with the predictions (or a stream of (probs, labels) "
            "chunks, or a file with engine=)."
        )
    return summarize(
        prepare(data, labels, from_logits=from_logits, where=where, sample_weight=sample_weight),
        binning,
    )


def _engine_for(data: Any, engine: str | None, where: str) -> str:
    if engine is None:
        return "stream" if is_stream(data) else "memory"
    return v.choice(engine, name="engine", allowed=ENGINES, where=where)
