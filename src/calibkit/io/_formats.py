"""The one map from a file's extension to its format, and the format a file is read as."""

from __future__ import annotations

from pathlib import Path

from .._errors import InputError
from . import _rules as rules

WHERE = rules.WHERE

FORMATS = ("csv", "tsv", "parquet", "jsonl", "npz")

#: The one map from a file's extension to its format (a compression suffix is looked through).
EXTENSIONS = {
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


def _extension(path: Path) -> str:
    """The extension that tells the format: the last suffix, a compression suffix skipped."""
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] in _COMPRESSED:
        suffixes = suffixes[:-1]
    return suffixes[-1] if suffixes else ""


def format_from_extension(path: str | Path) -> str | None:
    """The format :data:`EXTENSIONS` gives ``path`` by its extension, or None.

    Examples
    --------
    >>> from calibkit.io import format_from_extension
    >>> format_from_extension("a.TSV"), format_from_extension("b.jsonl.gz")
    ('tsv', 'jsonl')
    >>> format_from_extension("c.txt") is None
    True
    """
    return EXTENSIONS.get(_extension(Path(path)))


def resolve_format(path: Path, fmt: str | None) -> str:
    if fmt is not None:
        key = str(fmt).lower().lstrip(".")
        key = {"tab": "tsv", "pq": "parquet", "ndjson": "jsonl"}.get(key, key)
        if key not in FORMATS:
            raise InputError(f"{WHERE}: unknown format {fmt!r}; use one of {', '.join(FORMATS)}.")
        return key
    ext = _extension(path)
    if ext in EXTENSIONS:
        return EXTENSIONS[ext]
    hint = " For JSON lines, name the file .jsonl or pass format='jsonl'." if ext == ".json" else ""
    raise InputError(
        f"{WHERE}: cannot tell the format of '{rules.shown(path)}' from its extension "
        f"{ext or '(none)'!r}; known: {', '.join(sorted(EXTENSIONS))}. Pass format= one of "
        f"{', '.join(FORMATS)} (--format on the command line).{hint}"
    )
