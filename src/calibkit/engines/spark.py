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
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._errors import InputError
from .._extras import require
from ..io import (
    Schema,
    check_file,
    check_names,
    plan_columns,
    planned_names,
    resolve_format,
    short,
    shown,
)
from ._sql_cells import SPARK
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
    active one when omitted). A path is read by the rules of :mod:`calibkit.io._rules`, as the
    other engines read it; a DataFrame's columns have the types it gives them.
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
        sql = require("pyspark.sql", f"{where}: engine='spark'", note="(and Java 17 or later)")
        DataFrame, SparkSession = sql.DataFrame, sql.SparkSession
        self.where = where
        options = dict(columns or {})
        fmt = options.pop("format", None)
        cells: list[str] = []
        if isinstance(source, DataFrame):
            frame, place, label = source, "the Spark DataFrame", "DataFrame"
            names = list(frame.columns)
            check_names(names, label, where)
            plan = None
        elif isinstance(source, (str, os.PathLike)):
            session = spark or SparkSession.getActiveSession()
            if session is None:
                raise InputError(
                    f"{where}: engine='spark' with a path needs a SparkSession: pass spark= "
                    "(or start one first)."
                )
            path = os.fspath(source)  # as given: Path() would turn s3://bucket into s3:/bucket
            place, label = f"'{shown(path)}'", path
            frame, plan, cells = _read(session, path, fmt, options, where)
        else:
            raise InputError(
                f"{where}: engine='spark' takes a Spark DataFrame or a path, not "
                f"{type(source).__name__}."
            )
        self.place = place
        self.spark = frame.sparkSession
        self._view = f"calibkit_input_{os.getpid()}_{next(_views)}"
        frame.createOrReplaceTempView(self._view)
        types = {f.name: type_class(f.dataType) for f in frame.schema.fields}
        types.update(dict.fromkeys(cells, "cell"))
        if plan is None:
            lists = {n for n, t in types.items() if t == "list"}
            plan = plan_columns(Schema(label, "spark", list(types), lists), **options)
        super().__init__(plan, types, place)

    @property
    def relation(self) -> str:
        return self._view

    def fetch(self, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        try:
            # named parameters are bound as values (pyspark 3.5+), never spliced into the SQL
            frame = self.spark.sql(sql, args=dict(params)) if params else self.spark.sql(sql)
            return [tuple(row) for row in frame.collect()]
        except _spark_errors() as exc:
            raise InputError(
                f"{self.where}: Spark could not read {getattr(self, 'place', 'the input')}: "
                f"{essential(exc)}"
            ) from None


def _spark_errors() -> tuple[type[BaseException], ...]:
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    return (PySparkException, Py4JError)


def essential(exc: BaseException) -> str:
    """The message of the exception at the root of a Spark error, on one line: a Java
    exception's cause chain is followed to its end, and the JVM stack trace left out."""
    java = getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)
    text = ""
    if java is not None:
        try:
            while java.getCause() is not None:
                java = java.getCause()
            text = str(java.getMessage() or "")
        except Exception:  # noqa: BLE001 - a gateway that is gone: use Python's text
            text = ""
    if not text:
        text = str(exc).split("JVM stacktrace:")[0]
    return short(text, 300) or type(exc).__name__


def _is_local(path: str) -> bool:
    """A path on this machine (no scheme such as s3:// or hdfs://, or file:)."""
    return "://" not in path or path.startswith("file://")


def _read(
    session: Any, path: str, format: str | None, options: dict[str, Any], where: str
) -> tuple[Any, Any, list[str]]:
    """The DataFrame of a file, its column plan, and the columns read as CSV cells.

    A file on this machine gets the checks every engine runs
    (:func:`calibkit.io._sources.check_file`).
    CSV and TSV are read as RFC 4180 (a quote inside quotes written twice, no backslash escape,
    line breaks inside quotes: one task per file), failing on a malformed row rather than
    filling it with nulls; the planned columns are read as text, by the cell rules, and the
    others with Spark's inferred types."""
    fmt = resolve_format(Path(path), format)
    local = path.removeprefix("file://") if _is_local(path) else None
    # a path that is not on this machine may be on the cluster's file system: Spark's to read
    here = local is not None and os.path.lexists(local)
    header = check_file(Path(local), fmt) if here and local is not None else None
    try:
        if fmt in ("csv", "tsv"):
            csv = dict(
                header=True,
                sep="\t" if fmt == "tsv" else ",",
                quote='"',
                escape='"',
                mode="FAILFAST",
                multiLine=True,
            )
            if header is None:
                header = list(session.read.csv(path, inferSchema=False, **csv).columns)
            plan = plan_columns(Schema(path, fmt, header, set()), **options)
            text = planned_names(plan)
            inferred = session.read.csv(path, inferSchema=True, **csv).schema
            from pyspark.sql import types as T

            fields = [
                T.StructField(name or f.name, T.StringType() if name in text else f.dataType)
                for name, f in zip(header, inferred.fields, strict=False)
            ]
            frame = session.read.schema(T.StructType(fields)).csv(path, **csv)
            return frame, plan, text
        if fmt == "parquet":
            frame = session.read.parquet(path)
        elif fmt == "jsonl":
            frame = session.read.json(path, mode="FAILFAST")
        else:
            raise InputError(
                f"{where}: Spark reads Parquet, CSV, TSV and JSON lines, not .{fmt}; audit it in "
                "memory (engine='memory')."
            )
    except _spark_errors() as exc:  # a missing path, an unreadable file
        raise InputError(
            f"{where}: Spark could not read '{shown(path)}': {essential(exc)}"
        ) from None
    names = list(frame.columns)
    check_names(names, path, where)
    lists = {f.name for f in frame.schema.fields if type_class(f.dataType) == "list"}
    return frame, plan_columns(Schema(path, fmt, names, lists), **options), []


#: log4j 2 settings for the session calibkit starts: errors only, and none for the failed tasks
#: whose error calibkit reports itself (one line on stderr, not a stack trace per task).
LOG4J = Path(__file__).with_name("log4j2.properties")


def session(master: str, app: str) -> Any:
    """A SparkSession for calibkit's command line: no UI, no progress bars, log4j quiet, and the
    JVM's own notes at start-up (incubator modules, log levels) kept off the terminal: the JVM
    writes its stderr to a temporary file, shown only if the JVM fails to start."""
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(master)
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={LOG4J.as_uri()}")
    )
    if SparkSession.getActiveSession() is not None:
        return builder.getOrCreate()
    with tempfile.TemporaryFile() as log:
        saved = os.dup(2)
        os.dup2(log.fileno(), 2)  # the JVM started now inherits this stderr
        try:
            spark = builder.getOrCreate()
        except BaseException:
            os.dup2(saved, 2)
            log.seek(0)
            sys.stderr.write(log.read().decode(errors="replace"))
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)
    spark.sparkContext.setLogLevel("ERROR")
    return spark
