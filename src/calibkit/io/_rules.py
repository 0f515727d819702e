"""What a prediction file may hold: the rules every engine applies, written once.

The table in ``docs/file-rules.md`` is this module in words. Reading into memory (pyarrow), the
stream (pyarrow in batches), DuckDB and Spark all take their rules from here: the checks of the
file itself (a regular file; for text formats, a UTF-8 header with distinct names; JSON lines
nested at most :data:`MAX_JSON_DEPTH` deep) run in Python before any engine opens the file, and
the forms a CSV or TSV cell may take are data (:data:`NUMBER`, :data:`MISSING`, ...) that
:func:`parse_cells` applies with pyarrow and :mod:`calibkit.engines._sql` writes as SQL.
"""

from __future__ import annotations

import csv
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._arrow import to_numpy
from .._errors import InputError
from .._json import MAX_JSON_DEPTH

WHERE = "read_predictions"

# ----------------------------------------------------------------------------- cells of CSV / TSV

#: A number, after the spaces around it are removed: an optional sign, digits with an optional
#: decimal point (or a point and digits), an optional exponent. No thousands separators, no
#: decimal comma, no hexadecimal. Written without backslashes, so the same text is a valid
#: pattern for Python, pyarrow (RE2), DuckDB (RE2) and Spark (Java).
NUMBER = "^[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][+-]?[0-9]+)?$"

#: The characters a number is written with.
NUMBER_CHARACTERS = "0123456789.eE+-"

#: Cells that mean "no value" (compared without regard to case): refused, with their count, in
#: every column the audit reads.
MISSING = ("", "na", "n/a", "#n/a", "<na>", "null", "none")

#: Cells that are NaN (without regard to case): refused like missing values.
NAN = ("nan", "+nan", "-nan")

#: Infinities (without regard to case): numbers, so a value rule refuses them with its reason
#: (a probability outside [0, 1], an infinite logit).
POSITIVE_INFINITY = ("inf", "+inf", "infinity", "+infinity")
NEGATIVE_INFINITY = ("-inf", "-infinity")

#: Words for 1 and 0 (without regard to case), in outcome and label columns only; never in a
#: score column (a confidence of "true" is refused as text).
TRUE = ("true",)
FALSE = ("false",)

#: The only character removed around a cell (tabs are kept: in a TSV they separate cells).
SPACE = " "

#: Where a word stands for a number: every role but the scores takes TRUE/FALSE.
ROLES_WITH_WORDS = ("label", "outcome")


@dataclass(frozen=True)
class Cells:
    """One CSV/TSV column read by the rules.

    ``number`` holds each cell's value (NaN where the cell is missing, NaN or text); the masks
    say which rule each cell met: ``is_number`` (a number or an infinity), ``missing``
    (empty/NA/null), ``nan``, ``bad`` (text that is none of the admitted forms; TRUE/FALSE,
    where the role takes it, is 1/0 in ``number``). :meth:`text` gives the cells as written,
    without the spaces around them.
    """

    number: np.ndarray
    trimmed: Any
    is_number: np.ndarray
    missing: np.ndarray
    nan: np.ndarray
    bad: np.ndarray

    def text(self, i: int | None = None) -> Any:
        """Cell ``i`` as text, or every cell (a numpy array of str) when ``i`` is None."""
        if i is not None:
            return str(self.trimmed[i].as_py() or "")
        return np.asarray(self.trimmed.fill_null("").to_pylist(), dtype=str)


def parse_cells(column: Any, role: str) -> Cells:
    """Apply the cell rules to a pyarrow string column (``role``: numeric, label, outcome or
    compare: only label and outcome take TRUE/FALSE).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from calibkit.io._rules import parse_cells
    >>> c = parse_cells(pa.array(["+0.5", " 1e-1 ", "NA", "nan", "True", "cat"]), "label")
    >>> c.number[[0, 1, 4]].tolist(), c.missing.nonzero(), c.nan.nonzero(), c.bad.nonzero()
    ([0.5, 0.1, 1.0], (array([2]),), (array([3]),), (array([5]),))
    >>> c.text(5)
    'cat'
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    col = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    col = col.cast(pa.string()) if not pa.types.is_string(col.type) else col
    trimmed = pc.utf8_trim(col, characters=SPACE)
    n = len(col)
    try:  # pyarrow's cast takes exactly the forms of NUMBER and the NaN and infinity words,
        fast = to_numpy(pc.cast(trimmed, pa.float64()))  # and nan(1)
    except pa.ArrowInvalid:  # text, or missing cells: apply every rule, cell by cell
        fast = None
    if fast is not None and not np.isnan(fast).any():  # the common case: a column of numbers
        none = np.zeros(n, dtype=bool)
        return Cells(fast, trimmed, ~none, none, none, none)
    is_number = _mask(pc.match_substring_regex(trimmed, NUMBER))
    number = np.full(n, np.nan)
    if is_number.any():
        digits = trimmed if is_number.all() else pc.filter(trimmed, pa.array(is_number))
        if pc.any(pc.starts_with(digits, "+")).as_py():
            digits = pc.replace_substring_regex(digits, "^[+]", "")
        number[is_number] = to_numpy(pc.cast(digits, pa.float64()))
    low = pc.utf8_lower(trimmed)

    def among(words: tuple[str, ...]) -> np.ndarray:
        return _mask(pc.is_in(low, value_set=pa.array(words, pa.string())))

    missing = among(MISSING) | _mask(pc.is_null(col))
    nan = among(NAN)
    plus, minus = among(POSITIVE_INFINITY), among(NEGATIVE_INFINITY)
    number[plus], number[minus] = np.inf, -np.inf
    known = missing | nan | is_number | plus | minus
    if role in ROLES_WITH_WORDS:
        true, false = among(TRUE), among(FALSE)
        number[true], number[false] = 1.0, 0.0
        known |= true | false
    return Cells(number, trimmed, is_number | plus | minus, missing, nan, ~known)


def _mask(array: Any) -> np.ndarray:
    return np.asarray(to_numpy(array.fill_null(False)), dtype=bool)


# ----------------------------------------------------------------------------- echoed text

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def shown(text: object) -> str:
    """``text`` safe to print on a terminal: control characters (escape sequences, carriage
    returns, bidirectional overrides) written as ``\\xNN`` / ``\\uNNNN``.

    Examples
    --------
    >>> from calibkit.io._rules import shown
    >>> shown("p\\x1b[31m"), shown("ok")
    ('p\\\\x1b[31m', 'ok')
    """
    return _CONTROL.sub(_escape, str(text))


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def short(text: object, limit: int = 200) -> str:
    """``text`` on one line, control characters escaped, at most ``limit`` characters."""
    one = shown(" ".join(str(text).split()))
    return one if len(one) <= limit else one[: limit - 3] + "..."


# ----------------------------------------------------------------------------- the file itself


def check_regular(path: Path, where: str = WHERE) -> None:
    """The path exists, is readable and is a regular file (not a directory, FIFO, socket or
    device, which could block a reader forever or never end)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise InputError(f"{where}: no such file: '{shown(path)}'.") from None
    except OSError as exc:
        raise InputError(f"{where}: cannot read '{shown(path)}': {exc.strerror or exc}.") from None
    if stat.S_ISDIR(mode):
        raise InputError(f"{where}: '{shown(path)}' is a directory; pass a prediction file.")
    if not stat.S_ISREG(mode):
        kind = (
            "a FIFO (named pipe)"
            if stat.S_ISFIFO(mode)
            else "a socket"
            if stat.S_ISSOCK(mode)
            else "a device"
            if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "not a regular file"
        )
        raise InputError(
            f"{where}: '{shown(path)}' is {kind}; calibkit reads regular files (it may read a "
            "file twice). Write the data to a file first."
        )
    if not os.access(path, os.R_OK):
        raise InputError(f"{where}: cannot read '{shown(path)}': permission denied.")


#: The longest header line read (a file whose first line is longer is refused).
MAX_HEADER_BYTES = 1 << 20

#: First bytes of binary formats, named in the message when a text format was asked for.
_MAGIC = {b"PAR1": "Parquet", b"PK\x03\x04": "zip (an .npz?)", b"\x93NUMPY": "NumPy .npy"}


def _open_text(path: Path) -> Any:
    import pyarrow as pa

    return pa.input_stream(str(path), compression="detect")


def read_header(path: Path, fmt: str, where: str = WHERE) -> list[str]:
    """The column names on the first line of a CSV or TSV file: UTF-8 (a byte-order mark is
    skipped), quoted as RFC 4180 (``""`` inside quotes), names distinct without regard to case.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from calibkit.io._rules import read_header
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "p.csv"
    >>> _ = path.write_bytes(b'p,"a ""b"" c",y\\n0.5,1,1\\n')
    >>> read_header(path, "csv")
    ['p', 'a "b" c', 'y']
    """
    import pyarrow as pa

    name, upper = shown(path), fmt.upper()
    try:
        with _open_text(path) as stream:
            head = b""
            while b"\n" not in head and len(head) <= MAX_HEADER_BYTES:
                block = stream.read(1 << 16)
                if not block:
                    break
                head += block
    except (pa.ArrowException, OSError) as exc:
        raise InputError(f"{where}: could not read '{name}' as {upper}: {short(exc)}") from None
    for magic, kind in _MAGIC.items():
        if head.startswith(magic):
            raise InputError(
                f"{where}: '{name}' is not {upper} text: it is a {kind} file. Pass the format it "
                "has (--format), or let the extension tell it."
            )
    if not head:
        raise InputError(
            f"{where}: could not read '{name}' as {upper}: Empty {upper} file (a {upper} file "
            "starts with a line naming its columns)."
        )
    line = head.split(b"\n", 1)[0]
    if len(line) > MAX_HEADER_BYTES:
        raise InputError(
            f"{where}: the first line of '{name}' is longer than {MAX_HEADER_BYTES:,} bytes; "
            f"is it {upper} text?"
        )
    if b"\x00" in head[:4096]:
        raise InputError(
            f"{where}: '{name}' is not {upper} text: it holds binary data (NUL bytes). Pass the "
            "format it has (--format), or let the extension tell it."
        )
    if not line.strip():
        raise InputError(
            f"{where}: '{name}' has no header: its first line is empty. A {upper} file starts "
            "with a line naming its columns."
        )
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{where}: the header of '{name}' is not UTF-8 text: byte "
            f"0x{line[exc.start]:02x} at position {exc.start} of the first line. Save the file "
            "as UTF-8."
        ) from None
    text = text.removeprefix("\ufeff").rstrip("\r")
    try:
        names = next(
            csv.reader(
                [text],
                delimiter="\t" if fmt == "tsv" else ",",
                quotechar='"',
                doublequote=True,
                strict=True,
            )
        )
    except csv.Error as exc:
        raise InputError(
            f"{where}: could not read the header of '{name}' as {upper}: {exc} (quotes inside a "
            'quoted name are written twice: "a ""b""").'
        ) from None
    check_names(names, path, where)
    return names


def check_quoting(path: Path, fmt: str, where: str = WHERE) -> None:
    """Refuse a CSV or TSV file whose quoting is not RFC 4180: a quote inside a quoted field
    must be written twice (``"a ""b"" c"``), and a quoted field ends at a delimiter or a line
    break (``"a \\"b\\" c"`` does not). DuckDB refuses such a file, pyarrow and Spark would
    read on, each in its own way; a file without a quote character is passed at once."""
    key = _file_key(path, -1)
    if key in _CHECKED:
        return
    with _open_text(path) as stream:
        if not _has_quote(stream):
            _CHECKED.add(key)
            return
    with _open_text(path) as stream:
        reader = csv.reader(
            _lines(stream),
            delimiter="\t" if fmt == "tsv" else ",",
            quotechar='"',
            doublequote=True,
            strict=True,
        )
        try:
            for _ in reader:
                pass
        except csv.Error as exc:
            raise InputError(
                f"{where}: could not read '{shown(path)}' as {fmt.upper()}: line "
                f"{reader.line_num}: {exc}; a quote inside a quoted field is written twice "
                '("a ""b"" c"), and a backslash does not escape it.'
            ) from None
    _CHECKED.add(key)


def _has_quote(stream: Any) -> bool:
    while block := stream.read(_SCAN_BYTES):
        if b'"' in block:
            return True
    return False


def _lines(stream: Any) -> Any:
    """The text of a stream, line by line (split at line feeds only, ends kept)."""
    import codecs

    decode = codecs.getincrementaldecoder("utf-8")(errors="replace").decode
    carry = ""
    while block := stream.read(_SCAN_BYTES):
        parts = (carry + decode(block)).split("\n")
        carry = parts.pop()
        yield from (part + "\n" for part in parts)
    carry += decode(b"", final=True)
    if carry:
        yield carry


def check_names(names: list[str], path: object, where: str = WHERE) -> None:
    """Refuse two columns with the same name; names are compared without regard to case, as
    DuckDB and Spark compare them. Unnamed columns (an empty header cell, such as the index
    column pandas writes) are allowed and can be chosen by no option."""
    seen: dict[str, list[str]] = {}
    for n in names:
        if n:
            seen.setdefault(n.casefold(), []).append(n)
    for group in seen.values():
        if len(group) > 1:
            same = len(set(group)) == 1
            listed = repr(group[0]) if same else " and ".join(repr(g) for g in dict.fromkeys(group))
            case = "" if same else " (names are compared without regard to case)"
            raise InputError(
                f"{where}: '{shown(path)}' has {len(group)} columns named {listed}{case}; "
                "rename them so each name is used once."
            )


#: The longest line of a JSON-lines file, and pyarrow's block size when it reads one.
JSON_BLOCK_BYTES = 1 << 24

#: Bytes scanned at a time for the depth check (lines are never split).
_SCAN_BYTES = 1 << 20

# A JSON string within one line (strings hold no raw line breaks), in linear time.
_LINE_STRING = re.compile(rb'"[^"\\\n]*(?:\\[^\n][^"\\\n]*)*"')
_STEP = np.zeros(256, dtype=np.int32)
_STEP[[ord("["), ord("{")]] = 1
_STEP[[ord("]"), ord("}")]] = -1


def check_json_lines(path: Path, where: str = WHERE, max_depth: int = MAX_JSON_DEPTH) -> None:
    """Refuse a JSON-lines file with a line nested deeper than ``max_depth`` levels, or a line
    longer than :data:`JSON_BLOCK_BYTES`, before any JSON parser sees it (pyarrow's crashes the
    process on deep nesting). One linear pass; brackets inside strings do not count.
    """
    import pyarrow as pa

    key = _file_key(path, max_depth)
    if key in _CHECKED:
        return
    carry, first_line = b"", 1
    try:
        with _open_text(path) as stream:
            while True:
                block = stream.read(_SCAN_BYTES)
                data = carry + block
                cut = data.rfind(b"\n") + 1 if block else len(data)
                if cut == 0 and len(data) > JSON_BLOCK_BYTES:
                    raise InputError(
                        f"{where}: line {first_line} of '{shown(path)}' is longer than "
                        f"{JSON_BLOCK_BYTES:,} bytes; calibkit reads JSON lines of at most that "
                        "length (one prediction per line)."
                    )
                part, carry = data[:cut], data[cut:]
                depth, line = line_depth(part)
                if depth > max_depth:
                    raise InputError(
                        f"{where}: line {first_line + line} of '{shown(path)}' nests JSON "
                        f"{depth} levels deep; calibkit reads at most {max_depth} levels (a "
                        "prediction file needs 2). Remove or flatten that field."
                    )
                first_line += part.count(b"\n")
                if not block:
                    break
    except (pa.ArrowException, OSError) as exc:
        raise InputError(
            f"{where}: could not read '{shown(path)}' as JSONL: {short(exc)}"
        ) from None
    _CHECKED.add(key)


#: Files that passed the depth check, by path, size and modification time (the stream reads
#: a file twice and checks it each time).
_CHECKED: set[tuple[Any, ...]] = set()


def _file_key(path: Path, max_depth: int) -> tuple[Any, ...]:
    try:
        st = os.stat(path)
    except OSError:
        return (str(path), None)
    return (os.path.realpath(path), st.st_size, st.st_mtime_ns, st.st_ino, max_depth)


def line_depth(data: bytes) -> tuple[int, int]:
    """The deepest nesting of any line of ``data`` (JSON lines) and that line's 0-based index.

    Examples
    --------
    >>> from calibkit.io._rules import line_depth
    >>> line_depth(b'{"a": [1]}\\n[[["]]]]"]]]\\n{}'), line_depth(b"[[[\\n[]")
    ((3, 1), (3, 0))
    """
    if b"[" not in data and b"{" not in data:
        return 0, 0
    stripped = _LINE_STRING.sub(b"", data) if b'"' in data else data
    codes = np.frombuffer(stripped, dtype=np.uint8)
    depth = np.cumsum(_STEP[codes], dtype=np.int32)
    ends = np.flatnonzero(codes == 10)
    if ends.size:  # each line starts again at depth 0, whatever its brackets left open
        last = np.full(codes.size, -1, dtype=np.int64)
        last[ends] = ends
        last = np.maximum.accumulate(last)
        depth -= np.where(last >= 0, depth[np.maximum(last, 0)], 0).astype(np.int32)
    top = int(np.argmax(depth))
    return int(depth[top]), int(np.searchsorted(ends, top))
