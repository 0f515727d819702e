"""The Spark engine: the audit's sums as Spark SQL aggregations over a DataFrame, for a cluster.

The same SQL as the DuckDB engine runs through ``spark.sql`` on a temporary view of the
DataFrame: every query is a GROUP BY or a global aggregate, so only per-bin and scalar sums
reach the driver; no Python function runs on the rows. Two steps sort: the exact AUC (distinct
confidences ordered by a window, which Spark runs in one partition) and ``percentile_disc`` for
quantile edges (which keeps the distinct values of a column in its aggregation buffer); on data
with billions of distinct confidences prefer uniform bins, and expect those two steps to
dominate.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._errors import InputError
from ..io import Schema, plan_columns
from ..io._sources import one_line, resolve_format
from ._sql import SPARK
from ._sql_engine import SqlEngine

_views = itertools.count()


def type_class(data_type: Any) -> str:
    """number, bool, text, list or other, from a Spark data type."""
    from pyspark.sql import types as T

    if isinstance(data_type, T.NumericType):
        return "number"
    if isinstance(data_type, T.BooleanType):
        return "bool"
    if isinstance(data_type, T.StringType):
        return "text"
    if isinstance(data_type, T.ArrayType):
        return "list"
    return "other"


class SparkEngine(SqlEngine):
    """A Spark DataFrame (or a Parquet / CSV / JSON-lines path read by the active session).

    ``source`` is a ``pyspark.sql.DataFrame``, or a path with ``spark`` a ``SparkSession`` (the
    active one when omitted).
    """

    name = "spark"
    dialect = SPARK

    def __init__(
        self,
        source: Any,
        *,
        columns: Mapping[str, Any] | None = None,
        spark: Any = None,
        where: str = "audit",
    ) -> None:
        try:
            from pyspark.sql import DataFrame, SparkSession
        except ImportError:
            raise InputError(
                f"{where}: engine='spark' needs pyspark: pip install 'calibkit[spark]' (and "
                "Java 17 or later)."
            ) from None
        self.where = where
        if isinstance(source, DataFrame):
            frame, place, label = source, "the Spark DataFrame", "DataFrame"
        elif isinstance(source, (str, os.PathLike)):
            session = spark or SparkSession.getActiveSession()
            if session is None:
                raise InputError(
                    f"{where}: engine='spark' with a path needs a SparkSession: pass spark= "
                    "(or start one first)."
                )
            frame = _read(session, source, where)
            place, label = f"'{source}'", str(source)
        else:
            raise InputError(
                f"{where}: engine='spark' takes a Spark DataFrame or a path, not "
                f"{type(source).__name__}."
            )
        self.spark = frame.sparkSession
        self._view = f"calibkit_input_{os.getpid()}_{next(_views)}"
        frame.createOrReplaceTempView(self._view)
        types = {f.name: type_class(f.dataType) for f in frame.schema.fields}
        lists = {n for n, t in types.items() if t == "list"}
        schema = Schema(label, "spark", list(types), lists)
        super().__init__(plan_columns(schema, **dict(columns or {})), types, place)

    @property
    def relation(self) -> str:
        return self._view

    def fetch(self, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        from pyspark.errors import PySparkException

        try:
            # named parameters are bound as values (pyspark 3.5+), never spliced into the SQL
            frame = self.spark.sql(sql, args=dict(params)) if params else self.spark.sql(sql)
            return [tuple(row) for row in frame.collect()]
        except PySparkException as exc:
            raise InputError(
                f"{self.where}: Spark could not compute over "
                f"{getattr(self, 'place', 'the input')}: "
                f"{one_line(exc)[:400]}"
            ) from None


def _read(session: Any, source: str | os.PathLike[str], where: str) -> Any:
    from pyspark.errors import PySparkException

    path = os.fspath(source)  # as given: Path() would turn s3://bucket into s3:/bucket
    fmt = resolve_format(Path(path), None)
    reader = session.read
    try:
        if fmt == "parquet":
            return reader.parquet(path)
        if fmt in ("csv", "tsv"):
            sep = "\t" if fmt == "tsv" else ","
            return reader.csv(path, header=True, inferSchema=True, sep=sep)
        if fmt == "jsonl":
            return reader.json(path)
    except PySparkException as exc:  # a missing path, an unreadable file
        raise InputError(f"{where}: Spark could not read '{path}': {one_line(exc)[:400]}") from None
    raise InputError(f"{where}: Spark reads Parquet, CSV, TSV and JSON lines, not .{fmt}.")
