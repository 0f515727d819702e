"""Reading a file in batches (for the stream engine): its schema, then its planned columns one
pyarrow batch at a time, with a problem of the file counted over every batch."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import InputError
from ._problems import Problem
from ._rules import check_names, short, shown
from ._sources import (
    CSV_BLOCK_BYTES,
    WHERE,
    Source,
    check_file,
    csv_options,
    csv_parse_options,
    json_options,
)

#: Rows per batch when a file is read in batches.
BATCH_ROWS = 1 << 20


def file_schema(path: Path, fmt: str) -> tuple[list[str], set[str]]:
    """Column names and the list (matrix) columns of a file, from its schema alone, after the
    checks of the file itself (:func:`calibkit.io._sources.check_file`)."""
    import pyarrow as pa

    header = check_file(path, fmt)
    if header is not None:
        return header, set()
    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            schema = pq.read_schema(path)
        except (pa.ArrowException, OSError) as exc:
            raise InputError(
                f"{WHERE}: could not read '{shown(path)}' as PARQUET: {short(exc)}"
            ) from None
    else:
        reader = _batch_reader(path, fmt, BATCH_ROWS)
        schema = reader.schema
        reader.close()
    check_names(list(schema.names), path)
    lists = {
        f.name
        for f in schema
        if pa.types.is_list(f.type)
        or pa.types.is_large_list(f.type)
        or pa.types.is_fixed_size_list(f.type)
    }
    return list(schema.names), lists


def read_batches(
    path: Path, fmt: str, plan: Any, *, batch_rows: int = BATCH_ROWS
) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray | None, int]]:
    """``(scores, labels, weights, first_row)`` of each batch of a CSV, TSV, Parquet or
    JSON-lines file (checked by :func:`file_schema` first), read through pyarrow one batch at a
    time; ``weights`` are the values of the plan's weight column as numbers (None without
    one: the stream checks them, over every batch). A missing value or a cell that is not a
    number is counted to the end of the file before the error, which gives the total and the
    first row of the file, as reading it whole would."""
    import pyarrow as pa

    from ._plan import planned_names, planned_roles
    from ._read import read_planned
    from ._sources import TableSource

    reader = _batch_reader(path, fmt, batch_rows, text=planned_names(plan))
    roles = planned_roles(plan)
    start = 0
    problem: Problem | None = None
    try:
        for batch in reader:
            rows = batch.num_rows
            if rows == 0:
                continue
            src = TableSource.of_table(pa.Table.from_batches([batch]), path, fmt)
            if problem is not None:  # count the first problem on to the end of the file
                problem = problem.plus(src.checked(problem.name, roles[problem.name])[1], rows)
            else:
                problem = _first_problem(src, roles, start)
                if problem is None:
                    try:
                        scores, labels = read_planned(src, plan)
                    except InputError as exc:
                        raise InputError(
                            f"{exc} (in the batch of rows {start}..{start + rows - 1})"
                        ) from None
                    weights = None if plan.weight is None else src.get(plan.weight, "numeric")
                    yield scores, labels, weights, start
            start += rows
    except (pa.ArrowException, OSError) as exc:
        raise InputError(
            f"{WHERE}: could not read '{shown(path)}' as {fmt.upper()} after row {start}: "
            f"{short(exc)}"
        ) from None
    if problem is not None:
        raise problem.error()


def _first_problem(src: Source, roles: dict[str, str], start: int) -> Problem | None:
    """The first counted problem of a batch starting at row ``start``, in file rows."""
    for name, role in roles.items():
        found = src.checked(name, role)[1]  # type: ignore[attr-defined]
        if found is not None:
            return replace(found, first=start + found.first, n=start + found.n)
    return None


def _batch_reader(path: Path, fmt: str, batch_rows: int, text: list[str] | None = None) -> Any:
    """A pyarrow reader of batches; for CSV and TSV, the ``text`` columns read as text."""
    import pyarrow as pa

    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            return pq.ParquetFile(path).iter_batches(batch_size=batch_rows)
        if fmt in ("csv", "tsv"):
            import pyarrow.csv as pc

            return pc.open_csv(
                path,
                read_options=pc.ReadOptions(block_size=CSV_BLOCK_BYTES),
                parse_options=csv_parse_options(fmt),
                convert_options=None if text is None else csv_options(text, as_text=True),
            )
        if fmt == "jsonl":
            import pyarrow.json as pj

            return pj.open_json(path, read_options=json_options())
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise InputError(
            f"{WHERE}: could not read '{shown(path)}' as {fmt.upper()}: {short(exc)}"
        ) from None
    raise InputError(
        f"{WHERE}: .{fmt} files cannot be read in batches; audit them in memory "
        "(engine='memory'), or convert to Parquet."
    )
