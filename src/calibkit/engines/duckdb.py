"""The DuckDB engine: the audit's sums computed inside an embedded DuckDB, over Parquet, CSV,
TSV or JSON-lines files (or globs of them).

When the rows fit in :attr:`DuckDBEngine.hold_bytes` (an eighth of the machine's memory), they
come into memory in one read and the in-memory engine's kernels make the summary: exact AUC,
quantile edges, bins and the slope's moments in a few passes over arrays, where the SQL path
needs nine queries, one a global sort (about 35 times one scan against 3 to 5). A Parquet file
of number and boolean columns is counted from its metadata and read at once, its arrays checked
by :func:`~calibkit.forecasts.prepare`; any other input is first checked by calibkit's rules in
one DuckDB scan. Whatever is refused, the error comes from that scan: it names the file's
columns and counts the bad rows. Larger inputs are summarised by SQL aggregations alone: DuckDB
runs them on every core and spills its sorts (the exact AUC, the quantile edges) to a temporary
directory, so a file larger than memory is audited in bounded memory. Both paths give the same
summary to the rounding of their sums (``tests/engines/test_duckdb_held.py``).
"""

from __future__ import annotations

import glob
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .._arrow import to_numpy
from .._errors import InputError
from ..forecasts import Prepared, prepare
from ..io import (
    Schema,
    check_file,
    check_names,
    column_list,
    plan_columns,
    planned_names,
    resolve_format,
    short,
    shown,
)
from ._sql import Query
from ._sql_cells import DUCKDB
from ._sql_engine import SqlEngine

_GLOB = set("*?[")


def _memory_bytes() -> int:
    """The machine's physical memory (1 GiB where the platform does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return 1 << 30


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
    #: The most bytes of checked rows (8 per score column, 1 for the label, 4 from 128 classes
    #: on, and 8 for a weight) that an audit brings into memory to summarise with calibkit's
    #: kernels; larger inputs stay in SQL. 0 keeps every audit in SQL. The audit then holds
    #: about twice these bytes at once.
    hold_bytes: int = _memory_bytes() // 8
    #: The DuckDB types of a Parquet input's columns (None: another format).
    _raw_types: dict[str, str] | None = None

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
                f"{where}: engine='duckdb' needs the duckdb package, a dependency of calibkit "
                "missing from this environment: pip install 'duckdb>=1.1'."
            ) from None
        self._error = duckdb.Error
        self.where = where
        options = dict(columns or {})
        format = options.pop("format", format)
        paths = (
            [Path(source)] if isinstance(source, (str, os.PathLike)) else [Path(s) for s in source]
        )
        if not paths:
            raise InputError(f"{where}: no files given to DuckDB.")
        fmt = resolve_format(paths[0], format)
        if fmt not in ("parquet", "csv", "tsv", "jsonl"):
            raise InputError(
                f"{where}: DuckDB reads Parquet, CSV, TSV and JSON lines; audit an .{fmt} file "
                "in memory (engine='memory')."
            )
        header = _check_files(paths, fmt, where)
        listed = "[" + ", ".join(_literal(str(p)) for p in paths) + "]"
        self.con = connection if connection is not None else duckdb.connect()
        spill = Path(tempfile.gettempdir()) / f"calibkit-duckdb-{os.getpid()}"
        self.con.execute(f"SET temp_directory = {_literal(str(spill))}")
        self.con.execute("SET preserve_insertion_order = false")
        # Parquet min/max statistics leave NaN out, and DuckDB folds isnan(x) and x > 1 to
        # false from them: the NaN check would pass NaN rows silently. Use no statistics.
        self.con.execute("SET disabled_optimizers = 'statistics_propagation'")
        place = f"'{shown(paths[0])}'" + (f" and {len(paths) - 1} more" if len(paths) > 1 else "")
        self.place = place
        if header is not None:  # CSV, TSV: the planned columns as text, read by the cell rules
            plan = plan_columns(Schema(paths[0], fmt, header, set()), **options)
            text = planned_names(plan)
            self._relation = _read_csv(listed, fmt, text)
            types = {str(n): type_class(str(t)) for n, t in self._describe()}
            types.update(dict.fromkeys(text, "cell"))
        else:
            reader = "read_parquet" if fmt == "parquet" else "read_json"
            extra = "" if fmt == "parquet" else ", format = 'newline_delimited'"
            self._relation = f"{reader}({listed}{extra})"
            described = self._describe()
            names = [str(n) for n, _ in described]
            check_names(names, paths[0])
            types = {str(n): type_class(str(t)) for n, t in described}
            if fmt == "parquet":  # counted from metadata, read unchecked (:meth:`held_rows`)
                self._raw_types = {str(n): str(t).upper() for n, t in described}
            schema = Schema(paths[0], fmt, names, {n for n, t in types.items() if t == "list"})
            plan = plan_columns(schema, **options)
        super().__init__(plan, types, place)

    def held_rows(self, q: Query, where: str) -> Prepared | int:
        """The input's rows as a :class:`~calibkit.forecasts.Prepared` where they fit in
        :attr:`hold_bytes`, read in one query; else the number of checked rows.

        A Parquet file whose read columns are numbers or booleans is counted from its metadata
        and read without the checks' scan: :func:`~calibkit.forecasts.prepare` checks the
        arrays by the same rules. Where anything is refused (a missing value, a label that is
        not a class index, a probability outside [0, 1]), the checks' scan runs after all, so
        the error names the file's column and counts its rows."""
        q.check_types(where, self.place)  # from the schema: no scan
        n = self._stored_rows(q)
        if n is not None and self._fits(q, n):
            held = self._read(q, n, where, checked=False)
            if held is not None:
                return held
        n = self.checked_rows(q, where)
        if not self._fits(q, n):
            return n
        held = self._read(q, n, where, checked=True)
        assert held is not None  # checked rows are refused by nothing
        return held

    def _label_type(self, q: Query) -> tuple[str, int]:
        """The SQL type a label is read as and its bytes."""
        return ("TINYINT", 1) if q.n_classes <= 127 else ("INTEGER", 4)

    def _fits(self, q: Query, n: int) -> bool:
        """Whether ``n`` rows fit in :attr:`hold_bytes` (8 bytes a score column and a weight, the
        label's bytes)."""
        width = max(1, len(self.plan.scores))
        row = 8 * width + self._label_type(q)[1] + 8 * (self.plan.weight is not None)
        return q.by is None and n * row <= self.hold_bytes

    def _stored_rows(self, q: Query) -> int | None:
        """The number of rows of a Parquet input whose read columns are numbers or booleans
        (from the files' metadata: no scan), the rows :meth:`_read` can read unchecked; None
        for every other input."""
        if self._raw_types is None or q.by is not None or self.hold_bytes <= 0:
            return None
        if any(c.kind not in ("number", "bool") or c.role == "compare" for c in q.columns()):
            return None
        return int(self.fetch(f"SELECT count(*) FROM {self.relation}")[0][0])

    def _read(self, q: Query, n: int, where: str, *, checked: bool) -> Prepared | None:
        """The ``n`` rows in one query as checked arrays. ``checked``: rows the checks' scan passed,
        read from the typed relation. Else the raw columns (:meth:`_stored_rows`), each value
        as the typed relation reads it, or NULL where its rules refuse it (a label that is not
        a class index); None when a value is missing or refused, by DuckDB or by
        :func:`~calibkit.forecasts.prepare`, or the row count moved."""
        label, _ = self._label_type(q)
        width = max(1, len(self.plan.scores))
        names = [f"s{k}" for k in range(width)]
        if checked:
            picked = [*names, f"CAST(y AS {label}) AS y"] + (["w"] if q.weighted else [])
            source = q.r
        else:
            cols = {c.name: c for c in q.columns()}
            plan = self.plan
            scores = list(plan.scores) if plan.kind != "confidence" else [str(plan.confidence)]
            truth = cols[str(plan.correct if plan.kind == "confidence" else plan.label)]
            top = 1 if q.kind == "binary" else q.n_classes - 1
            if truth.kind == "bool" or "INT" in (self._raw_types or {}).get(truth.name, ""):
                y = f"CAST({truth.q} AS {label})"  # exact, or DuckDB's out-of-range error
            else:
                x = truth.number
                whole = f"{x} >= 0 AND {x} <= {top} AND {x} = floor({x})"  # False for NaN
                y = f"CASE WHEN {whole} THEN CAST({x} AS {label}) END"
            picked = [f"{cols[s].value} AS s{k}" for k, s in enumerate(scores)] + [f"{y} AS y"]
            if plan.weight is not None:
                picked.append(f"{cols[plan.weight].value} AS w")
            source = self.relation
        try:
            table = self._run(f"SELECT {', '.join(picked)} FROM {source}", None, "arrow")
        except InputError:
            if checked:
                raise
            return None  # a label out of its type's range: the checks' scan names it
        if table.num_rows != n:
            if checked:
                raise InputError(
                    f"{where}: the input changed while it was read ({n} then "
                    f"{table.num_rows} rows)."
                )
            return None
        if not checked and any(column.null_count for column in table.columns):
            return None
        got = {name: to_numpy(table.column(name)) for name in table.column_names}
        scores_ = got["s0"] if width == 1 else np.column_stack([got[k] for k in names])
        try:
            return prepare(
                scores_,
                got["y"],
                from_logits=self.plan.kind == "logits",
                where=where,
                sample_weight=got.get("w"),
            )
        except InputError:
            if checked:
                raise
            return None

    def _describe(self) -> list[tuple[Any, Any]]:
        return [(row[0], row[1]) for row in self.fetch(f"DESCRIBE SELECT * FROM {self._relation}")]

    @property
    def relation(self) -> str:
        return self._relation

    def fetch(self, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        return self._run(sql, params, "fetchall")

    def _run(self, sql: str, params: Mapping[str, Any] | None, take: str) -> Any:
        """The result of one query (its errors named): its rows as tuples (``take="fetchall"``)
        or as a pyarrow table (``"arrow"``, no parameters: DuckDB's columns without a copy)."""
        try:
            if take == "arrow":
                return self.con.sql(sql).to_arrow_table()
            return self.con.execute(sql, params or None).fetchall()
        except self._error as exc:
            raise InputError(
                f"{self.where}: DuckDB could not read {getattr(self, 'place', 'the input')}: "
                f"{short(exc, 300)}"
            ) from None


def _check_files(paths: list[Path], fmt: str, where: str) -> list[str] | None:
    """The checks of the files themselves (:func:`calibkit.io._sources.check_file`), on every
    file a glob matches; for CSV and TSV the header, which every file must share."""
    header: list[str] | None = None
    for pattern in paths:
        matched = (
            sorted(glob.glob(str(pattern), recursive=True))
            if _GLOB & set(str(pattern))
            else [str(pattern)]
        )
        if not matched:
            raise InputError(f"{where}: no file matches '{shown(pattern)}'.")
        for name in matched:
            names = check_file(Path(name), fmt)
            if names is None:
                continue
            if header is None:
                header = names
            elif names != header:
                raise InputError(
                    f"{where}: '{shown(name)}' has the columns {column_list(names)}, the first "
                    f"file {column_list(header)}; files read together need the same header."
                )
    return header


def _read_csv(listed: str, fmt: str, text: list[str]) -> str:
    """DuckDB's read_csv fixed to the rules (RFC 4180 quoting, a header, no comment lines, no
    skipped rows), with the ``text`` columns read as VARCHAR and the others detected."""
    delim = "\\t" if fmt == "tsv" else ","
    types = ", ".join(f"{_literal(n)}: 'VARCHAR'" for n in text)
    return (
        f"read_csv({listed}, delim = '{delim}', header = true, quote = '\"', escape = '\"', "
        f"comment = '', skip = 0, types = {{{types}}})"
    )
