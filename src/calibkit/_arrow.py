"""pyarrow columns as numpy arrays without pyarrow's pandas-based conversion.

``pyarrow.Array.to_numpy`` imports pandas on first use (about 0.2 s, more than reading a small
file). Numbers of a fixed width without nulls are read straight from the array's data buffer
(zero copy, as ``to_numpy`` gives them: read-only) and booleans are unpacked from their bits;
any other column (nulls, text, dates) goes to ``to_numpy``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["to_numpy"]


def to_numpy(column: Any) -> np.ndarray:
    """A pyarrow ``Array`` or ``ChunkedArray`` as a numpy array, as
    ``column.to_numpy(zero_copy_only=False)`` gives it.

    Examples
    --------
    >>> import pyarrow as pa
    >>> to_numpy(pa.chunked_array([[1.5, 2.0], [3.0]])).tolist()
    [1.5, 2.0, 3.0]
    >>> to_numpy(pa.array([True, False, True]).slice(1)).tolist()
    [False, True]
    """
    import pyarrow as pa

    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    kind = column.type
    if column.null_count == 0 and len(column.buffers()) == 2:
        data = column.buffers()[1]
        if pa.types.is_boolean(kind):
            if len(column) == 0:
                return np.zeros(0, dtype=bool)
            bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8), bitorder="little")
            return bits[column.offset : column.offset + len(column)].view(bool)
        letter = (
            "f"
            if pa.types.is_floating(kind)
            else "i"
            if pa.types.is_signed_integer(kind)
            else "u"
            if pa.types.is_unsigned_integer(kind)
            else ""
        )
        if letter:
            dtype = np.dtype(f"{letter}{kind.bit_width // 8}")
            if len(column) == 0:
                return np.zeros(0, dtype=dtype)
            return np.frombuffer(
                data, dtype=dtype, count=len(column), offset=column.offset * dtype.itemsize
            )
    return np.asarray(column.to_numpy(zero_copy_only=False))
