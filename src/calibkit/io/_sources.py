"""Open a prediction file and hand out its columns as numpy arrays (pyarrow and numpy, lazily).

A source has ``names`` (columns, or arrays of an ``.npz``, in file order) and ``get(name, role)``,
which returns a 1-D column or a 2-D matrix after the checks that belong to reading: no missing
values, numbers (or, for the roles that allow it, text), equal-length lists.
"""

from __future__ import annotations

import abc
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import InputError

WHERE = "read_predictions"

FORMATS = ("csv", "tsv", "parquet", "jsonl", "npz")

_EXTENSIONS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".npz": "npz",
}
_COMPRESSED = (".gz", ".bz2", ".zst", ".lz4")

#: Roles a column plays, and what each accepts besides numbers.
#: "numeric": numbers only; "outcome": also bool and TRUE/FALSE text; "any": also text (for the
#: prediction == label comparison).
ROLES = ("numeric", "outcome", "any")


def one_line(text: object) -> str:
    return " ".join(str(text).split())


def column_list(names: list[str], limit: int = 20) -> str:
    shown = ", ".join(names[:limit])
    more = f", ... ({len(names) - limit} more)" if len(names) > limit else ""
    return (shown + more) if names else "(none)"


def resolve_format(path: Path, fmt: str | None) -> str:
    if fmt is not None:
        key = str(fmt).lower().lstrip(".")
        key = {"tab": "tsv", "pq": "parquet", "ndjson": "jsonl"}.get(key, key)
        if key not in FORMATS:
            raise InputError(f"{WHERE}: unknown format {fmt!r}; use one of {', '.join(FORMATS)}.")
        return key
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] in _COMPRESSED:
        suffixes = suffixes[:-1]
    ext = suffixes[-1] if suffixes else ""
    if ext in _EXTENSIONS:
        return _EXTENSIONS[ext]
    hint = " For JSON lines, name the file .jsonl or pass format='jsonl'." if ext == ".json" else ""
    raise InputError(
        f"{WHERE}: cannot tell the format of '{path}' from its extension "
        f"{ext or '(none)'!r}; known: {', '.join(sorted(_EXTENSIONS))}. Pass format= one of "
        f"{', '.join(FORMATS)} (--format on the command line).{hint}"
    )


def check_path(path: Path) -> None:
    if not path.exists():
        raise InputError(f"{WHERE}: no such file: '{path}'.")
    if path.is_dir():
        raise InputError(f"{WHERE}: '{path}' is a directory; pass a prediction file.")
    if not os.access(path, os.R_OK):
        raise InputError(f"{WHERE}: cannot read '{path}': permission denied.")


def open_source(path: Path, fmt: str) -> Source:
    if fmt == "npz":
        return NpzSource(path)
    return TableSource(path, fmt)


class Source(abc.ABC):
    """Named columns of one file."""

    path: Path
    fmt: str
    names: list[str]
    kind_of_name = "column"

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:  # noqa: B027 - most sources hold nothing open
        """Release what the source holds open (an NPZ archive); nothing by default."""

    @abc.abstractmethod
    def ndim(self, name: str) -> int:
        """1 for a column, 2 for a matrix (an NPZ array or a column of lists)."""

    @abc.abstractmethod
    def get(self, name: str, role: str = "numeric") -> np.ndarray:
        """The named column as numbers (``role`` says what it is for, in error messages)."""

    def unreadable(self, exc: BaseException) -> InputError:
        return InputError(
            f"{WHERE}: could not read '{self.path}' as {self.fmt.upper()}: "
            f"{one_line(exc) or type(exc).__name__}"
        )

    def require(self, name: str) -> None:
        if name not in self.names:
            raise InputError(
                f"{WHERE}: '{self.path}' has no {self.kind_of_name} {name!r}; "
                f"{self.kind_of_name}s: {column_list(self.names)}."
            )


# ----------------------------------------------------------------------------- tables (pyarrow)


class TableSource(Source):
    """CSV, TSV and JSON lines are read whole; Parquet column by column."""

    def __init__(self, path: Path, fmt: str) -> None:
        import pyarrow as pa

        self.path, self.fmt = path, fmt
        self._table: Any = None
        self._parquet: Any = None
        try:
            if fmt == "parquet":
                import pyarrow.parquet as pq

                self._parquet = pq.ParquetFile(path)
                self.names = list(self._parquet.schema_arrow.names)
            elif fmt == "jsonl":
                import pyarrow.json as pj

                self._table = pj.read_json(path)
                self.names = list(self._table.column_names)
            else:
                import pyarrow.csv as pc

                delimiter = "\t" if fmt == "tsv" else ","
                self._table = pc.read_csv(path, parse_options=pc.ParseOptions(delimiter=delimiter))
                self.names = list(self._table.column_names)
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise self.unreadable(exc) from None
        self._columns: dict[str, Any] = {}

    @classmethod
    def of_table(cls, table: Any, path: Path, fmt: str) -> TableSource:
        """A source over a pyarrow table already read (one batch of a larger file)."""
        src = cls.__new__(cls)
        src.path, src.fmt, src._table, src._parquet = path, fmt, table, None
        src.names = list(table.column_names)
        src._columns = {}
        return src

    def close(self) -> None:
        if self._parquet is not None:
            self._parquet.close()

    def _column(self, name: str) -> Any:
        import pyarrow as pa

        self.require(name)
        if self.names.count(name) > 1:
            raise InputError(
                f"{WHERE}: '{self.path}' has {self.names.count(name)} columns "
                f"named {name!r}; rename them so each name is used once."
            )
        if name not in self._columns:
            if self._parquet is not None:
                try:
                    col = self._parquet.read(columns=[name]).column(0)
                except (pa.ArrowException, OSError, ValueError) as exc:
                    raise self.unreadable(exc) from None
            else:
                col = self._table.column(name)
            if pa.types.is_dictionary(col.type):
                col = col.cast(col.type.value_type)
            self._columns[name] = col
        return self._columns[name]

    def ndim(self, name: str) -> int:
        import pyarrow as pa

        t = self._column(name).type
        return (
            2
            if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
            else 1
        )

    def get(self, name: str, role: str = "numeric") -> np.ndarray:
        import pyarrow as pa
        import pyarrow.compute as pc

        col = self._column(name)
        if col.null_count:
            first = int(np.argmax(pc.is_null(col).to_numpy(zero_copy_only=False)))
            raise _nulls(name, col.null_count, first)
        if self.ndim(name) == 2:
            return self._matrix(name, col)
        t = col.type
        if pa.types.is_boolean(t):
            arr = col.to_numpy()
            return arr.astype(np.int8) if role == "outcome" else arr
        if pa.types.is_integer(t) or pa.types.is_floating(t):
            return col.to_numpy()
        if pa.types.is_decimal(t):
            return col.cast(pa.float64()).to_numpy()
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            return text_column(name, np.asarray(col.to_pylist(), dtype=str), role)
        raise InputError(f"{WHERE}: column {name!r} must hold numbers; it holds {t}.")

    def _matrix(self, name: str, col: Any) -> np.ndarray:
        import pyarrow as pa
        import pyarrow.compute as pc

        col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        lengths = pc.list_value_length(col).to_numpy(zero_copy_only=False)
        if lengths.size and (lengths != lengths[0]).any():
            i = int(np.argmax(lengths != lengths[0]))
            raise InputError(
                f"{WHERE}: column {name!r} holds lists of different lengths: row 0 has "
                f"{lengths[0]} values, row {i} has {lengths[i]}; every row needs one value per "
                "class."
            )
        values = pc.list_flatten(col)
        if values.null_count:
            parents = pc.list_parent_indices(col).to_numpy(zero_copy_only=False)
            first = int(parents[int(np.argmax(pc.is_null(values).to_numpy(zero_copy_only=False)))])
            raise _nulls(name, values.null_count, first)
        t = values.type
        if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)):
            raise InputError(
                f"{WHERE}: column {name!r} must hold lists of numbers; its values are {t}."
            )
        width = int(lengths[0]) if lengths.size else 0
        return values.to_numpy(zero_copy_only=False).reshape(len(col), width)


def _nulls(name: str, count: int, first: int) -> InputError:
    return InputError(
        f"{WHERE}: column {name!r} has {count} missing "
        f"{'value' if count == 1 else 'values'} (null/empty/NaN), first at row {first} "
        "(0-based, header not counted); calibkit does not drop rows silently: remove or fill "
        "them first."
    )


# ----------------------------------------------------------------------------- npz (numpy)


class NpzSource(Source):
    kind_of_name = "array"

    def __init__(self, path: Path) -> None:
        self.path, self.fmt = path, "npz"
        try:
            if not zipfile.is_zipfile(path):
                raise InputError(
                    f"{WHERE}: could not read '{path}' as NPZ: not a zip archive "
                    "(an .npz is written by numpy.savez)."
                )
            self._npz = np.load(path, allow_pickle=False)
        except InputError:
            raise
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise self.unreadable(exc) from None
        if not isinstance(self._npz, np.lib.npyio.NpzFile):
            raise InputError(
                f"{WHERE}: could not read '{path}' as NPZ: it holds a single "
                "array, not named arrays."
            )
        self.names = list(self._npz.files)
        self._arrays: dict[str, np.ndarray] = {}

    def close(self) -> None:
        self._npz.close()

    def _array(self, name: str) -> np.ndarray:
        self.require(name)
        if name not in self._arrays:
            try:
                arr = self._npz[name]
            except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError) as exc:
                raise InputError(
                    f"{WHERE}: could not read array {name!r} of '{self.path}': {one_line(exc)}"
                ) from None
            if arr.ndim not in (1, 2):
                raise InputError(
                    f"{WHERE}: array {name!r} has shape {arr.shape}; expected a "
                    "1-D column or a 2-D (N, C) matrix."
                )
            self._arrays[name] = arr
        return self._arrays[name]

    def ndim(self, name: str) -> int:
        return self._array(name).ndim

    def get(self, name: str, role: str = "numeric") -> np.ndarray:
        arr = self._array(name)
        kind = arr.dtype.kind
        if kind == "b":
            return arr.astype(np.int8) if role == "outcome" else arr
        if kind in "iuf":
            return arr
        if kind in "US" and arr.ndim == 1:
            return text_column(name, arr.astype(str), role, what="array")
        raise InputError(f"{WHERE}: array {name!r} must hold numbers; its dtype is {arr.dtype}.")


# ----------------------------------------------------------------------------- schema only


class Schema(Source):
    """Column names and shapes of a table an engine reads where it lives (DuckDB, Spark): enough
    to plan the columns (:func:`calibkit.io.plan_columns`), never read into memory here."""

    def __init__(self, path: Any, fmt: str, names: list[str], matrices: set[str]) -> None:
        self.path, self.fmt, self.names, self._matrices = path, fmt, names, matrices

    def ndim(self, name: str) -> int:
        return 2 if name in self._matrices else 1

    def get(self, name: str, role: str = "numeric") -> np.ndarray:
        raise InputError(f"{WHERE}: the column {name!r} of '{self.path}' stays in the engine.")


# ----------------------------------------------------------------------------- text values

_TRUE = {"true", "1"}
_FALSE = {"false", "0"}


def text_column(name: str, values: np.ndarray, role: str, what: str = "column") -> np.ndarray:
    """Text is kept for a prediction/label comparison, turned into 0/1 for an outcome, and
    otherwise rejected with the first value that is not a number."""
    if role == "any":
        return values
    if role == "outcome":
        low = np.char.lower(np.char.strip(values))
        is_true, is_false = np.isin(low, list(_TRUE)), np.isin(low, list(_FALSE))
        bad = ~(is_true | is_false)
        if not bad.any():
            return is_true.astype(np.int8)
        i = int(np.argmax(bad))
        raise InputError(
            f"{WHERE}: {what} {name!r} must hold 0/1 or TRUE/FALSE; {int(bad.sum())} "
            f"{'value does' if bad.sum() == 1 else 'values do'} not, first at row {i}: "
            f"{str(values[i])!r}."
        )
    for i, value in enumerate(values.tolist()):
        try:
            float(value)
        except ValueError:
            raise InputError(
                f"{WHERE}: {what} {name!r} must hold numbers; it holds text, first non-number "
                f"at row {i}: {value!r}."
            ) from None
    raise InputError(
        f"{WHERE}: {what} {name!r} holds numbers written as text (e.g. "
        f"{str(values[0])!r}); write them as numbers."
    )
