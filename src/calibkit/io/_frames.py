"""Tables in memory read by the file rules: a pandas or polars DataFrame, or a pyarrow Table,
is a source of named columns like a Parquet file, each column converted to pyarrow when a
plan reads it (a column the plan does not read is never converted, so an odd column beside
the predictions is no obstacle)."""

from __future__ import annotations

from typing import Any

from .._errors import InputError
from ._rules import check_names, short
from ._sources import WHERE, TableSource

#: The tables calibkit reads in memory, by (top-level module, class name), and what messages
#: call them.
FRAMES = {
    ("pandas", "DataFrame"): "pandas DataFrame",
    ("polars", "DataFrame"): "polars DataFrame",
    ("pyarrow", "Table"): "pyarrow Table",
    ("pyarrow", "RecordBatch"): "pyarrow RecordBatch",
}


def frame_kind(obj: Any) -> str | None:
    """What messages call ``obj`` when it is a table calibkit reads (see :data:`FRAMES`), else
    None (nothing is imported to tell)."""
    cls = type(obj)
    return FRAMES.get((cls.__module__.split(".")[0], cls.__name__))


def is_frame(obj: Any) -> bool:
    return frame_kind(obj) is not None


class FrameSource(TableSource):
    """The columns of a DataFrame or pyarrow Table, by name (text names: a pandas column named
    ``0`` is the column ``'0'``), checked like the columns of a Parquet file."""

    def __init__(self, frame: Any) -> None:
        kind = frame_kind(frame)
        if kind is None:
            raise InputError(
                f"{WHERE}: expected a pandas or polars DataFrame or a pyarrow Table, got "
                f"{type(frame).__name__}."
            )
        self._frame, self._kind = frame, kind
        self.path, self.fmt = None, kind.split()[0]  # type: ignore[assignment]
        self._table = self._parquet = None
        self._columns, self._text, self._checked = {}, {}, {}
        self.cells = False
        if kind.startswith("pandas"):
            originals = list(frame.columns)
        else:
            originals = list(frame.column_names if kind.startswith("pyarrow") else frame.columns)
        self._originals = {str(name): name for name in originals}
        self.names = [str(name) for name in originals]
        check_names(self.names, f"the {kind}")
        self.rows = int(frame.num_rows if kind.startswith("pyarrow") else len(frame))

    @property
    def shown_as(self) -> str:
        return f"the {self._kind}"

    def _column(self, name: str) -> Any:
        import pyarrow as pa

        self.require(name)
        if name not in self._columns:
            original = self._originals[name]
            try:
                if self._kind.startswith("pandas"):
                    col = pa.array(self._frame[original], from_pandas=True)
                elif self._kind.startswith("polars"):
                    col = self._frame.get_column(original).to_arrow()
                else:
                    col = self._frame.column(original)
            except (pa.ArrowException, TypeError, ValueError) as exc:
                raise InputError(
                    f"{WHERE}: column {name!r} of {self.shown_as} could not be read as one "
                    f"type: {short(exc)}; give the column one type (numbers, or text) first."
                ) from None
            if pa.types.is_dictionary(col.type):  # categoricals: their values
                col = col.cast(col.type.value_type)
            if pa.types.is_string_view(col.type):
                col = col.cast(pa.large_string())
            self._columns[name] = col
        return self._columns[name]

    def arrow(self, name: str) -> Any:
        """The column as pyarrow holds it (for a table written out again)."""
        return self._column(name)
