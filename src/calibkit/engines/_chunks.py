"""The chunks of a stream, checked: each prepared for the audit, all of one shape, a bad value
counted over the whole stream before it is reported, and the fingerprint of a pass that tells
whether a second pass over a re-readable input read the same rows."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _validate as v
from .._errors import InputError
from ..forecasts import Prepared, prepare


def _pair(chunk: Any, where: str) -> tuple[Any, Any]:
    try:
        probs, labels = chunk
    except (TypeError, ValueError):
        raise InputError(
            f"{where}: each chunk of a stream must be a (probs, labels) pair; got "
            f"{type(chunk).__name__}."
        ) from None
    return probs, labels


def prepared_chunks(
    chunks: Iterable[Any], from_logits: bool, where: str, unit: str
) -> Iterator[Prepared]:
    """Each non-empty ``(probs, labels)`` chunk checked and prepared, all of one shape.

    A value that breaks a check is counted over the whole stream before the error is raised:
    the message gives the stream's total and the first bad row's position in the stream
    (:meth:`calibkit._validate.CountedError.totalled`)."""
    start = 0
    first: Prepared | None = None
    items = iter(chunks)
    for i, chunk in enumerate(items):
        probs, labels = _pair(chunk, where)
        if np.size(probs) == 0 and np.size(labels) == 0:
            continue  # an empty batch adds nothing
        try:
            f = prepare(probs, labels, from_logits=from_logits, where=where)
        except v.CountedError as exc:
            raise _totalled(exc, start, items, i + 1, from_logits, where, unit) from None
        except InputError as exc:
            raise InputError(f"{exc} (in the {unit} starting at row {start})") from None
        if first is None:
            first = f
        elif (f.kind, f.n_classes) != (first.kind, first.n_classes):
            raise InputError(
                f"{where}: {unit} {i} of the stream (counting from 0; it starts at row "
                f"{start}) holds {_shape(f)}, the {unit}{'es' if unit == 'batch' else 's'} "
                f"before it {_shape(first)}; every {unit} needs the same columns."
            )
        start += f.conf.size
        yield f


def _shape(f: Prepared) -> str:
    if f.kind == "binary":
        return "binary forecasts (1-D)"
    return f"{f.kind} forecasts of {f.n_classes} classes"


_END = object()


def _totalled(
    error: v.CountedError,
    start: int,
    rest: Iterator[Any],
    index: int,
    from_logits: bool,
    where: str,
    unit: str,
) -> InputError:
    """``error`` of the chunk starting at row ``start``, counted over the rest of the stream
    too: every later chunk is checked, and its values that break the same rule are added.

    A later chunk that fails another check first hides its count of this one, except that
    :func:`calibkit.audit.prepare` checks the forecasts before the labels: a chunk whose labels
    fail passed every check of its forecasts. The message then says the count is a lower bound.
    """
    count, uncounted = error.count, None
    for i in itertools.count(index):
        try:
            chunk = next(rest, _END)
        except InputError:  # the source itself failed (a file batch that cannot be read)
            uncounted = i if uncounted is None else uncounted
            break
        if chunk is _END:
            break
        try:
            probs, labels = _pair(chunk, where)
            if np.size(probs) == 0 and np.size(labels) == 0:
                continue
            prepare(probs, labels, from_logits=from_logits, where=where)
        except v.CountedError as later:
            if (later.rule, later.name) == (error.rule, error.name):
                count += later.count
                continue
            if error.name != "labels" and later.name == "labels":
                continue  # its forecasts passed: none of them breaks the rule
            uncounted = i if uncounted is None else uncounted
        except InputError:
            uncounted = i if uncounted is None else uncounted
    total = error.totalled(count, start + error.index[0])
    if uncounted is None:
        return total
    return InputError(
        f"{total} The count is at least this: {unit} {uncounted} of the stream (counting from "
        "0) and maybe later ones fail another check first, so their values of this kind were "
        "not counted."
    )


@dataclass
class Fingerprint:
    """The rows one pass read and a checksum of their values, to tell whether two passes over a
    re-readable input saw the same data.

    The checksum hashes each value's float64 bit pattern together with its position in the
    stream (splitmix64's finaliser, a bijection of 64-bit words) and adds the hashes modulo
    2**64: it does not depend on where the chunks are cut, one changed value always changes it,
    and any other change (values moved between rows, labels swapped) leaves it equal only by a
    2**-64 coincidence."""

    rows: int = 0
    scores: int = 0
    labels: int = 0

    def add(self, f: Prepared) -> None:
        width = 1 if f.scores.ndim == 1 else int(f.scores.shape[1])
        self.scores = (self.scores + _checksum(f.scores, self.rows * width)) % 2**64
        self.labels = (self.labels + _checksum(f.y, self.rows)) % 2**64
        self.rows += f.conf.size

    def check(self, first: Fingerprint, where: str, done: bool, what: str) -> None:
        """Raise unless this pass (``done`` when finished) matches ``first`` so far."""
        if self.rows <= first.rows and not (done and self != first):
            return
        seen = f"{first.rows} rows, then {'' if done else 'at least '}{self.rows}"
        if self.rows == first.rows:
            seen = f"the same {self.rows} rows, but different values"
        raise InputError(
            f"{where}: the stream gave different data on {what} than on its first ({seen}). "
            "calibkit reads a callable stream or a file more than once and needs the same rows "
            "each time: make the callable return the same chunks on every call (and leave the "
            "file unchanged while it is read), or pass an iterator, which is read once."
        )


_BLOCK = 1 << 16
_GOLDEN, _MIX1, _MIX2 = (
    np.uint64(0x9E3779B97F4A7C15),
    np.uint64(0xBF58476D1CE4E5B9),
    np.uint64(0x94D049BB133111EB),
)


def _checksum(values: np.ndarray, offset: int) -> int:
    """Sum over the values of splitmix64(bits of the float64 value ^ position * golden ratio),
    mod 2**64 (positions start at ``offset``)."""
    flat = np.ravel(values)
    total = 0
    for lo in range(0, flat.size, _BLOCK):
        block = flat[lo : lo + _BLOCK].astype(np.float64) + 0.0  # -0.0 counts as 0.0
        position = np.arange(offset + lo, offset + lo + block.size, dtype=np.uint64)
        z = block.view(np.uint64) ^ (position * _GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * _MIX1
        z = (z ^ (z >> np.uint64(27))) * _MIX2
        z ^= z >> np.uint64(31)
        total += int(np.sum(z, dtype=np.uint64))
    return total % 2**64
