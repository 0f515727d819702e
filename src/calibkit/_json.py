"""JSON in and out: turning results into plain JSON values, and the one bounded JSON reader.

Every JSON document calibkit reads (a calibrator, a record, a decision set, a model's reply, a
schema) goes through :func:`parse_json`, which refuses a document that is too large or nested
too deeply *before* the parser sees it, so no input can raise ``RecursionError``, run for
minutes, or exhaust memory: it raises :class:`calibkit.InputError` with what, where and how to
fix it.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ._errors import InputError

__all__ = [
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "json_depth",
    "jsonable",
    "parse_json",
    "read_json_file",
    "shown",
]

#: The deepest nesting of arrays and objects :func:`parse_json` accepts by default. calibkit's
#: own documents nest fewer than 10 levels; Python's parser fails near 1,000.
MAX_JSON_DEPTH = 64

#: The largest document :func:`parse_json` accepts by default (64 MiB of text).
MAX_JSON_BYTES = 64 * 2**20

# A JSON string: the "unrolled loop" form, linear in the length of the text (no nested
# quantifiers to backtrack through). An unterminated string does not match and its quote is
# then counted as nothing, which can only overstate the depth of an invalid document.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_OPEN = np.zeros(256, dtype=np.int8)
_OPEN[[ord("["), ord("{")]] = 1
_OPEN[[ord("]"), ord("}")]] = -1


def jsonable(value: Any) -> Any:
    """Plain JSON values: mappings and sequences recursed, numpy scalars and arrays unwrapped,
    NaN and infinity as null (strict JSON has neither).

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit._json import jsonable
    >>> jsonable({"a": np.float32(0.5), "b": [np.nan, np.int64(2)], 3: np.arange(2)})
    {'a': 0.5, 'b': [None, 2], '3': [0, 1]}
    """
    if isinstance(value, Mapping):
        return {str(k): jsonable(x) for k, x in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(x) for x in value]
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist())
    if isinstance(value, np.generic):
        return jsonable(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def shown(x: Any, *, limit: int = 60) -> str:
    """A value as JSON would write it, for a message: cut to ``limit`` characters, an integer
    of more than 64 bits by its length (such a number is usually the problem), NaN and infinity
    by name, anything JSON cannot write by its ``repr``.

    Examples
    --------
    >>> from calibkit._json import shown
    >>> shown("false"), shown(10**400), shown(float("inf")), shown([1.5, None])
    ('"false"', 'an integer of about 401 digits', 'Infinity', '[1.5, null]')
    """
    if isinstance(x, int) and not isinstance(x, bool) and x.bit_length() > 64:
        return f"an integer of about {int(x.bit_length() * math.log10(2)) + 1} digits"
    if isinstance(x, float) and not math.isfinite(x):
        return "NaN" if math.isnan(x) else ("Infinity" if x > 0 else "-Infinity")
    try:
        text = json.dumps(x, allow_nan=False)
    except (TypeError, ValueError):
        text = repr(x)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def json_depth(text: str | bytes) -> int:
    """The deepest nesting of ``[`` and ``{`` in a JSON text, outside strings, in one linear
    pass (brackets inside strings do not count).

    Examples
    --------
    >>> from calibkit._json import json_depth
    >>> json_depth('{"a": [1, [2, "]]]"]]}'), json_depth("3"), json_depth("[[[")
    (3, 0, 3)
    """
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    if b"[" not in data and b"{" not in data:
        return 0
    if b'"' in data:
        data = _STRING.sub(b"", data)
    steps = _OPEN[np.frombuffer(data, dtype=np.uint8)]
    if not steps.any():
        return 0
    return int(np.cumsum(steps, dtype=np.int64).max())


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_json(
    text: str | bytes,
    *,
    what: str,
    max_depth: int = MAX_JSON_DEPTH,
    max_bytes: int = MAX_JSON_BYTES,
    strict: bool = True,
) -> Any:
    """Parse one JSON document with bounds on its size and nesting.

    Parameters
    ----------
    text : str or bytes
        The document.
    what : str
        Where it came from, for the message (``"load_calibrator: 'ts.json'"``).
    max_depth, max_bytes
        The bounds; a document beyond either is refused before it is parsed.
    strict : bool
        Refuse ``NaN``, ``Infinity`` and ``-Infinity``, which strict JSON does not have.

    Raises
    ------
    InputError
        When the document is too large, too deep, not valid JSON, or (strict) holds a
        non-standard constant.

    Examples
    --------
    >>> from calibkit._json import parse_json
    >>> parse_json('{"t": [1.5]}', what="example")
    {'t': [1.5]}
    >>> parse_json("[" * 100 + "]" * 100, what="example")
    Traceback (most recent call last):
    ...
    calibkit._errors.InputError: example: JSON nested 100 levels deep; calibkit reads at most 64 ...
    """
    size = len(text)
    if size > max_bytes:
        raise InputError(
            f"{what}: the JSON document is {size:,} characters long; calibkit reads at most "
            f"{max_bytes:,}. Check that this is the file you meant."
        )
    if isinstance(text, str):
        opens = text.count("[") + text.count("{")
    else:
        opens = text.count(b"[") + text.count(b"{")
    # fewer brackets than the bound cannot nest beyond it: most documents skip the measurement
    depth = json_depth(text) if opens > max_depth else 0
    if depth > max_depth:
        raise InputError(
            f"{what}: JSON nested {depth} levels deep; calibkit reads at most {max_depth} "
            "levels (its own documents use fewer than 10). Check that this is the file you meant."
        )
    try:
        if strict:
            return json.loads(text, parse_constant=_reject_constant)
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{what}: not valid JSON ({exc}).") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{what}: not UTF-8 text ({exc}).") from None
    except ValueError as exc:  # a constant refused, or an integer beyond Python's digit limit
        raise InputError(f"{what}: not strict JSON ({exc}).") from None
    except RecursionError:  # pragma: no cover - the depth bound keeps the parser far from it
        raise InputError(f"{what}: JSON nested too deeply to parse.") from None


def read_json_file(
    path: str | os.PathLike[str],
    *,
    where: str,
    max_depth: int = MAX_JSON_DEPTH,
    max_bytes: int = MAX_JSON_BYTES,
) -> Any:
    """Read one JSON file through :func:`parse_json`, never more than ``max_bytes + 1`` bytes of
    it: a missing file, a folder, an unreadable, too large, too deep or invalid document is an
    :class:`calibkit.InputError` that names the file.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from calibkit._json import read_json_file
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "deep.json"
    >>> _ = path.write_text("[" * 5000 + "]" * 5000)
    >>> read_json_file(path, where="example")
    Traceback (most recent call last):
    ...
    calibkit._errors.InputError: example: '...deep.json': JSON nested 5000 levels deep; ...
    """
    source = Path(path)
    try:
        with open(source, "rb") as handle:
            data = handle.read(max_bytes + 1)
    except FileNotFoundError:
        raise InputError(f"{where}: no such file: '{source}'.") from None
    except IsADirectoryError:
        raise InputError(f"{where}: '{source}' is a directory; pass a JSON file.") from None
    except OSError as exc:
        raise InputError(f"{where}: cannot read '{source}' ({exc.strerror or exc}).") from None
    if len(data) > max_bytes:
        raise InputError(
            f"{where}: '{source}' is larger than {max_bytes:,} bytes; calibkit reads JSON "
            "documents up to that size. Check that this is the file you meant."
        )
    return parse_json(data, what=f"{where}: '{source}'", max_depth=max_depth, max_bytes=max_bytes)
