"""The DuckDB engine: the audit's sums computed inside an embedded DuckDB, over Parquet, CSV,
TSV or JSON-lines files (or globs of them), without loading the rows into Python.

DuckDB streams the files, runs the aggregations on every core, and spills sorts (the exact AUC,
the quantile edges) to a temporary directory when they do not fit in memory, so a file larger
than memory is audited in bounded memory.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._errors import InputError
from ..io import Schema, plan_columns
from ..io._sources import check_path, one_line, resolve_format
from ._sql import DUCKDB
from ._sql_engine import SqlEngine

_GLOB = set("*?[")
_NUMBER_TYPES = ("DOUBLE", "FLOAT", "REAL", "DECIMAL", "NUMERIC", "HUGEINT", "UHUGEINT")


def type_class(sql_type: str) -> str:
    """number, bool, text, list or other, from a DuckDB type name."""
    t = sql_type.upper()
    if t.endswith("]") or t.startswith(("LIST", "ARRAY")):
        return "list"
    if t.startswith(_NUMBER_TYPES) or "INT" in t:
        return "number"
    if t == "BOOLEAN":
        return "bool"
    if t.startswith("VARCHAR") or t == "STRING":
        return "text"
    return "other"


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


class DuckDBEngine(SqlEngine):
    """Files (or globs) read by DuckDB where they lie.

    Examples
    --------
    >>> import numpy as np, pyarrow as pa, pyarrow.parquet as pq, tempfile, pathlib
    >>> from calibkit.engines.duckdb import DuckDBEngine
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "preds.parquet"
    >>> pq.write_table(pa.table({"p": [0.2, 0.7, 0.9], "y": [0, 1, 1]}), path)
    >>> engine = DuckDBEngine(path, columns={"probs": "p", "label": "y"})
    >>> engine.plan.kind, engine.fetch(f"SELECT count(*) FROM {engine.relation}")
    ('probs', [(3,)])
    """

    name = "duckdb"
    dialect = DUCKDB

    def __init__(
        self,
        source: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
        *,
        columns: Mapping[str, Any] | None = None,
        format: str | None = None,
        connection: Any = None,
        where: str = "audit",
    ) -> None:
        try:
            import duckdb
        except ImportError:
            raise InputError(
                f"{where}: engine='duckdb' needs the duckdb package: pip install duckdb "
                "(or calibkit[scale])."
            ) from None
        self._error = duckdb.Error
        self.where = where
        paths = (
            [Path(source)] if isinstance(source, (str, os.PathLike)) else [Path(s) for s in source]
        )
        if not paths:
            raise InputError(f"{where}: no files given to DuckDB.")
        for path in paths:
            if not _GLOB & set(str(path)):
                check_path(path)
        fmt = resolve_format(paths[0], format)
        listed = "[" + ", ".join(_literal(str(p)) for p in paths) + "]"
        if fmt == "parquet":
            self._relation = f"read_parquet({listed})"
        elif fmt in ("csv", "tsv"):
            delim = "\\t" if fmt == "tsv" else ","
            self._relation = f"read_csv({listed}, delim = '{delim}', header = true)"
        elif fmt == "jsonl":
            self._relation = f"read_json({listed}, format = 'newline_delimited')"
        else:
            raise InputError(
                f"{where}: DuckDB reads Parquet, CSV, TSV and JSON lines; audit an .{fmt} file "
                "in memory (engine='memory')."
            )
        self.con = connection if connection is not None else duckdb.connect()
        spill = Path(tempfile.gettempdir()) / f"calibkit-duckdb-{os.getpid()}"
        self.con.execute(f"SET temp_directory = {_literal(str(spill))}")
        self.con.execute("SET preserve_insertion_order = false")
        # Parquet min/max statistics leave NaN out, and DuckDB folds isnan(x) and x > 1 to
        # false from them: the NaN check would pass NaN rows silently. Use no statistics.
        self.con.execute("SET disabled_optimizers = 'statistics_propagation'")
        place = f"'{paths[0]}'" + (f" and {len(paths) - 1} more" if len(paths) > 1 else "")
        described = self.fetch(f"DESCRIBE SELECT * FROM {self._relation}")
        names = [str(row[0]) for row in described]
        types = {str(row[0]): type_class(str(row[1])) for row in described}
        schema = Schema(paths[0], fmt, names, {n for n, t in types.items() if t == "list"})
        super().__init__(plan_columns(schema, **dict(columns or {})), types, place)

    @property
    def relation(self) -> str:
        return self._relation

    def fetch(self, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        try:
            return self.con.execute(sql, params or None).fetchall()
        except self._error as exc:
            raise InputError(
                f"{self.where}: DuckDB could not compute over "
                f"{getattr(self, 'place', 'the input')}: "
                f"{one_line(exc)}"
            ) from None
