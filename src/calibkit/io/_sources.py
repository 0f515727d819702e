"""Open a prediction file and hand out its columns as numpy arrays (pyarrow and numpy, lazily).

A source has ``names`` (columns, or arrays of an ``.npz``, in file order) and ``get(name, role)``,
which returns a 1-D column or a 2-D matrix after the checks that belong to reading: no missing
values, numbers (or, for the roles that allow it, text), equal-length lists.
"""

from __future__ import annotations

import abc
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from .._arrow import to_numpy
from .._errors import InputError
from . import _rules as rules
from ._problems import Problem, booleans, missing_values, nan_problem, text_column, whole

WHERE = rules.WHERE

#: Roles a column plays, and what each accepts besides numbers (docs/file-rules.md):
#: "numeric": numbers only (scores); "label": also booleans and TRUE/FALSE cells (class
#: indices); "outcome": also TRUE/FALSE text (a 0/1 outcome); "compare": numbers or text, for
#: the prediction == label comparison; "any": as the reader types it (group columns).
ROLES = ("numeric", "label", "outcome", "compare", "any")


def one_line(text: object) -> str:
    """``text`` on one line, control characters escaped."""
    return rules.shown(" ".join(str(text).split()))


def column_list(names: list[str], limit: int = 20) -> str:
    listed = ", ".join(rules.shown(n) for n in names[:limit])
    more = f", ... ({len(names) - limit} more)" if len(names) > limit else ""
    return (listed + more) if names else "(none)"


def check_path(path: Path) -> None:
    """The input is a regular file calibkit may read (see :func:`._rules.check_regular`)."""
    rules.check_regular(path)


def check_file(path: Path, fmt: str, where: str = WHERE) -> list[str] | None:
    """The checks of the file itself that every engine runs before reading it: a regular file;
    for CSV and TSV, the header (returned: the column names); for JSON lines, the depth."""
    rules.check_regular(path, where)
    if fmt in ("csv", "tsv"):
        names = rules.read_header(path, fmt, where)
        rules.check_quoting(path, fmt, where)
        return names
    if fmt == "jsonl":
        rules.check_json_lines(path, where)
    return None


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
        """The named column, checked for ``role`` (one of :data:`ROLES`)."""

    @property
    def shown_as(self) -> str:
        """The source as messages name it: the quoted path of a file."""
        return f"'{rules.shown(self.path)}'"

    def unreadable(self, exc: BaseException) -> InputError:
        return InputError(
            f"{WHERE}: could not read {self.shown_as} as {self.fmt.upper()}: "
            f"{rules.short(exc) or type(exc).__name__}"
        )

    def require(self, name: str) -> None:
        if name not in self.names:
            raise InputError(
                f"{WHERE}: {self.shown_as} has no {self.kind_of_name} {name!r}; "
                f"{self.kind_of_name}s: {column_list(self.names)}."
            )


# ----------------------------------------------------------------------------- tables (pyarrow)


class TableSource(Source):
    """CSV and TSV are read by the cell rules of :mod:`._rules` (the columns the plan reads as
    text, once); JSON lines whole, after the depth check; Parquet column by column."""

    def __init__(self, path: Path, fmt: str) -> None:
        import pyarrow as pa

        self.path, self.fmt = path, fmt
        self._table: Any = None
        self._parquet: Any = None
        self._columns: dict[str, Any] = {}
        self._text: dict[str, Any] = {}
        self._checked: dict[tuple[str, str], tuple[np.ndarray, Problem | None]] = {}
        self.cells = fmt in ("csv", "tsv")
        try:
            if fmt == "parquet":
                import pyarrow.parquet as pq

                self._parquet = pq.ParquetFile(path)
                self.names = list(self._parquet.schema_arrow.names)
                rules.check_names(self.names, path)
            elif fmt == "jsonl":
                import pyarrow.json as pj

                rules.check_json_lines(path)
                self._table = pj.read_json(path, read_options=json_options())
                self.names = list(self._table.column_names)
                rules.check_names(self.names, path)
            else:  # every column as text: the file is parsed whole, its cells read by the rules
                self.names = check_file(path, fmt) or []
                self._text = self._read_csv(None, as_text=True)
        except (pa.ArrowException, OSError, ValueError) as exc:
            if isinstance(exc, InputError):
                raise
            raise self.unreadable(exc) from None

    @classmethod
    def of_table(cls, table: Any, path: Path, fmt: str) -> TableSource:
        """A source over a pyarrow table already read (one batch of a larger file; a CSV batch
        holds the planned columns as text, see :func:`csv_options`)."""
        src = cls.__new__(cls)
        src.path, src.fmt, src._table, src._parquet = path, fmt, table, None
        src.names = list(table.column_names)
        src._columns, src._text, src._checked = {}, {}, {}
        src.cells = fmt in ("csv", "tsv")
        if src.cells:
            src._text = {n: table.column(n) for n in src.names}
        return src

    def close(self) -> None:
        if self._parquet is not None:
            self._parquet.close()

    def _read_csv(self, names: list[str] | None, *, as_text: bool) -> dict[str, Any]:
        """The named columns of a CSV (all with None): as text, or as pyarrow infers them."""
        import pyarrow as pa
        import pyarrow.csv as pc

        try:
            table = pc.read_csv(
                self.path,
                read_options=pc.ReadOptions(block_size=CSV_BLOCK_BYTES),
                parse_options=csv_parse_options(self.fmt),
                convert_options=csv_options(names, as_text=as_text, all_names=self.names),
            )
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise self.unreadable(exc) from None
        return dict(zip(table.column_names, table.columns, strict=True))

    def _column(self, name: str) -> Any:
        """The column as the reader types it (CSV: pyarrow's inference, for group columns)."""
        import pyarrow as pa

        self.require(name)
        if name not in self._columns:
            if self._parquet is not None:
                try:
                    col = self._parquet.read(columns=[name]).column(0)
                except (pa.ArrowException, OSError, ValueError) as exc:
                    raise self.unreadable(exc) from None
            elif self._table is not None:
                col = self._table.column(name)
            else:  # a CSV column as pyarrow types it (dates for a period, numbers for groups)
                col = self._read_csv([name], as_text=False)[name]
            if pa.types.is_dictionary(col.type):
                col = col.cast(col.type.value_type)
            self._columns[name] = col
        return self._columns[name]

    def typed(self, names: list[str]) -> dict[str, Any]:
        """The named columns as pyarrow types them, for a table written out again: Parquet and
        JSON lines as stored; CSV and TSV as pyarrow infers them (one read for all), except
        that a column of whole numbers written with leading zeros (an ID such as 007) stays
        text, so that no digit is lost."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if not self.cells:
            return {name: self._column(name) for name in names}
        if not names:
            return {}
        typed = self._read_csv(names, as_text=False)
        for name in names:
            if pa.types.is_integer(typed[name].type):
                text = pc.utf8_trim(self._text[name], characters=rules.SPACE)
                padded = pc.match_substring_regex(text, "^[+-]?0[0-9]")
                if pc.any(padded).as_py():
                    typed[name] = self._text[name]
        return typed

    def ndim(self, name: str) -> int:
        import pyarrow as pa

        if self.cells:
            self.require(name)
            return 1
        t = self._column(name).type
        return (
            2
            if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
            else 1
        )

    def get(self, name: str, role: str = "numeric") -> np.ndarray:
        values, problem = self.checked(name, role)
        if problem is not None:
            raise problem.error()
        return values

    def checked(self, name: str, role: str) -> tuple[np.ndarray, Problem | None]:
        """The column's values and its first counted problem (missing values or text that is
        not a number), so that a reader of batches can total a problem over the file."""
        key = (name, role)
        if key not in self._checked:
            self._checked[key] = self._check(name, role)
        return self._checked[key]

    def _check(self, name: str, role: str) -> tuple[np.ndarray, Problem | None]:
        import pyarrow as pa
        import pyarrow.compute as pc

        if self.cells and role != "any":
            self.require(name)
            return self._cells(name, role)
        col = self._column(name)
        n = len(col)
        if col.null_count:
            first = int(np.argmax(to_numpy(pc.is_null(col))))
            return np.empty(0), Problem(name, role, "missing", col.null_count, first, n)
        if self.ndim(name) == 2:
            return self._matrix(name, col), None
        t = col.type
        if pa.types.is_boolean(t):
            return booleans(name, to_numpy(col), role), None
        if pa.types.is_decimal(t):
            col = col.cast(pa.float64())
        if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
            arr = to_numpy(col)
            return arr, nan_problem(name, arr, role)
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            return text_column(name, np.asarray(col.to_pylist(), dtype=str), role), None
        if role == "any":
            return np.asarray(col.to_numpy(zero_copy_only=False)), None
        raise InputError(f"{WHERE}: column {name!r} must hold numbers; it holds {t}.")

    def _cells(self, name: str, role: str) -> tuple[np.ndarray, Problem | None]:
        """A CSV column read by the cell rules."""
        cells = rules.parse_cells(self._text[name], role)
        n = cells.number.size
        if cells.bad.any() and role != "compare":  # text is a value to compare
            i = int(np.argmax(cells.bad))
            problem = Problem(name, role, "text", int(cells.bad.sum()), i, n, 0, cells.text(i))
            return cells.number, problem
        gone = cells.missing | cells.nan
        if gone.any():
            first, nan = int(np.argmax(gone)), int(cells.nan.sum())
            return cells.number, Problem(name, role, "missing", int(gone.sum()), first, n, nan)
        if role == "compare" and not cells.is_number.all():
            # text is compared as text, and numbers among it by value (1, 1.0 and +1e0 alike)
            text = cells.text().astype(object)
            text[cells.is_number] = [repr(x + 0.0) for x in cells.number[cells.is_number].tolist()]
            return text.astype(str), None
        return whole(cells.number) if role in rules.ROLES_WITH_WORDS else cells.number, None

    def _matrix(self, name: str, col: Any) -> np.ndarray:
        import pyarrow as pa
        import pyarrow.compute as pc

        col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        lengths = to_numpy(pc.list_value_length(col))
        if lengths.size and (lengths != lengths[0]).any():
            i = int(np.argmax(lengths != lengths[0]))
            raise InputError(
                f"{WHERE}: column {name!r} holds lists of different lengths: row 0 has "
                f"{lengths[0]} values, row {i} has {lengths[i]}; every row needs one value per "
                "class."
            )
        values = pc.list_flatten(col)
        if values.null_count:
            parents = to_numpy(pc.list_parent_indices(col))
            first = int(parents[int(np.argmax(to_numpy(pc.is_null(values))))])
            raise missing_values(name, values.null_count, first, len(col))
        t = values.type
        if not (pa.types.is_integer(t) or pa.types.is_floating(t)):
            raise InputError(
                f"{WHERE}: column {name!r} must hold lists of numbers; its values are {t}."
            )
        width = int(lengths[0]) if lengths.size else 0
        return to_numpy(values).reshape(len(col), width)


#: pyarrow's block size for CSV, TSV (a row may be this long) and JSON lines.
CSV_BLOCK_BYTES = rules.JSON_BLOCK_BYTES


def json_options() -> Any:
    import pyarrow.json as pj

    return pj.ReadOptions(block_size=rules.JSON_BLOCK_BYTES)


def csv_parse_options(fmt: str) -> Any:
    """RFC 4180: fields may be quoted with ``"``, a quote inside is written twice, a backslash
    is an ordinary character, a quoted field may hold line breaks; no comment lines."""
    import pyarrow.csv as pc

    return pc.ParseOptions(
        delimiter="\t" if fmt == "tsv" else ",",
        quote_char='"',
        double_quote=True,
        escape_char=False,
        newlines_in_values=True,
    )


def csv_options(
    names: list[str] | None, *, as_text: bool, all_names: list[str] | None = None
) -> Any:
    """Read ``names`` (every column of ``all_names`` with None): as text, to apply the cell
    rules, or as pyarrow infers them."""
    import pyarrow as pa
    import pyarrow.csv as pc

    include = [] if names is None else names
    if not as_text:
        return pc.ConvertOptions(include_columns=include)
    typed = names if names is not None else all_names or []
    return pc.ConvertOptions(
        include_columns=include,
        column_types={n: pa.string() for n in typed},
        strings_can_be_null=False,
    )


# ----------------------------------------------------------------------------- npz (numpy)


class NpzSource(Source):
    kind_of_name = "array"

    def __init__(self, path: Path) -> None:
        self.path, self.fmt = path, "npz"
        try:
            if not zipfile.is_zipfile(path):
                raise InputError(
                    f"{WHERE}: could not read '{rules.shown(path)}' as NPZ: not a zip archive "
                    "(an .npz is written by numpy.savez)."
                )
            self._npz = np.load(path, allow_pickle=False)
        except InputError:
            raise
        except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
            raise self.unreadable(exc) from None
        if not isinstance(self._npz, np.lib.npyio.NpzFile):
            raise InputError(
                f"{WHERE}: could not read '{rules.shown(path)}' as NPZ: it holds a single "
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
                    f"{WHERE}: could not read array {name!r} of '{rules.shown(self.path)}': "
                    f"{rules.short(exc)}"
                ) from None
            if not isinstance(arr, np.ndarray):  # a member that is not .npy: its raw bytes
                raise InputError(
                    f"{WHERE}: member {name!r} of '{rules.shown(self.path)}' is not a NumPy "
                    "array (.npy); an .npz holds arrays written by numpy.savez."
                )
            if arr.ndim not in (1, 2):
                raise InputError(
                    f"{WHERE}: array {name!r} has shape {arr.shape}; expected a "
                    "1-D column or a 2-D (N, C) matrix."
                )
            self._arrays[name] = arr
        return self._arrays[name]

    def ndim(self, name: str) -> int:
        return self._array(name).ndim

    def shape(self, name: str) -> tuple[int, ...]:
        """The shape of an array, whatever its number of dimensions."""
        if name in self._arrays:
            return self._arrays[name].shape
        self.require(name)
        try:
            return tuple(self._npz[name].shape)
        except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError, AttributeError):
            return self._array(name).shape  # says what is wrong with it

    def raw(self, name: str) -> np.ndarray:
        """The array as stored (1-D or 2-D), unchecked: a column copied as it is."""
        return self._array(name)

    def get(self, name: str, role: str = "numeric") -> np.ndarray:
        arr = self._array(name)
        kind = arr.dtype.kind
        if kind == "b":
            return booleans(name, arr, role, what="array")
        if kind in "iu" or (kind == "f" and arr.ndim == 2):
            return arr
        if kind == "f":
            problem = nan_problem(name, arr, role)
            if problem is not None:
                raise problem.error()
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
        raise InputError(f"{WHERE}: the column {name!r} of {self.shown_as} stays in the engine.")
