"""The chunks of a stream, checked: each prepared for the audit (with its weights, for a stream
of ``(probs, labels, sample_weight)`` triples), all of one shape, a bad value
counted over the whole stream before it is reported, and the fingerprint of a pass that tells
whether a second pass over a re-readable input read the same rows."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .. import _validate as v
from .._errors import InputError
from ..forecasts import Prepared, prepare


def _parts(chunk: Any, where: str) -> tuple[Any, Any, Any]:
    """``(probs, labels, sample_weight)`` of a chunk (the weight None for a pair)."""
    try:
        parts = tuple(chunk)
    except TypeError:
        parts = ()
    if len(parts) not in (2, 3):
        raise InputError(
            f"{where}: each chunk of a stream must be a (probs, labels) pair or a (probs, "
            f"labels, sample_weight) triple; got {type(chunk).__name__}"
            f"{f' of {len(parts)} items' if parts else ''}."
        ) from None
    return parts[0], parts[1], parts[2] if len(parts) == 3 else None


def _empty(probs: Any, labels: Any, weight: Any) -> bool:
    return np.size(probs) == 0 and np.size(labels) == 0 and (weight is None or np.size(weight) == 0)


def _prepared(
    probs: Any, labels: Any, weight: Any, from_logits: bool, where: str, weight_name: str
) -> Prepared:
    """One chunk checked: its forecasts, then its labels, then its weights (which may all be
    zero in one chunk: the stream's total is checked at its end)."""
    f = prepare(probs, labels, from_logits=from_logits, where=where)
    if weight is None:
        return f
    w = v.weight_values(weight, n=f.conf.size, where=where, name=weight_name)
    return replace(f, weight=w)


def prepared_chunks(
    chunks: Iterable[Any],
    from_logits: bool,
    where: str,
    unit: str,
    *,
    weight_name: str = "sample_weight",
) -> Iterator[Prepared]:
    """Each non-empty ``(probs, labels)`` pair or ``(probs, labels, sample_weight)`` triple
    checked and prepared, all of one shape, and all weighted or none.

    A value that breaks a check is counted over the whole stream before the error is raised:
    the message gives the stream's total and the first bad row's position in the stream
    (:meth:`calibkit._validate.CountedError.totalled`). ``weight_name`` is what the messages
    call the weights (a file's weight column)."""
    start = 0
    first: Prepared | None = None
    items = iter(chunks)
    for i, chunk in enumerate(items):
        probs, labels, weight = _parts(chunk, where)
        if _empty(probs, labels, weight):
            continue  # an empty batch adds nothing
        try:
            f = _prepared(probs, labels, weight, from_logits, where, weight_name)
        except v.CountedError as exc:
            raise _totalled(
                exc, start, items, i + 1, from_logits, where, unit, weight_name
            ) from None
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
        elif (f.weight is None) != (first.weight is None):
            this, before = ("carries", "do not") if first.weight is None else ("has no", "carry")
            raise InputError(
                f"{where}: {unit} {i} of the stream (counting from 0; it starts at row "
                f"{start}) {this} sample weights, the {unit}{'es' if unit == 'batch' else 's'} "
                f"before it {before}; give every {unit} its weights as a (probs, labels, "
                "sample_weight) triple (weight 1 for a row that counts once), or none."
            )
        start += f.conf.size
        yield f


def _shape(f: Prepared) -> str:
    if f.kind == "binary":
        return "binary forecasts (1-D)"
    return f"{f.kind} forecasts of {f.n_classes} classes"


_END = object()


#: The order in which a chunk's checks run (:func:`_prepared`): a chunk that fails a later
#: check passed every earlier one.
_STAGE = {"labels": 1, "weights": 2}


def _totalled(
    error: v.CountedError,
    start: int,
    rest: Iterator[Any],
    index: int,
    from_logits: bool,
    where: str,
    unit: str,
    weight_name: str,
) -> InputError:
    """``error`` of the chunk starting at row ``start``, counted over the rest of the stream
    too: every later chunk is checked, and its values that break the same rule are added.

    A later chunk that fails another check first hides its count of this one, except that
    :func:`_prepared` checks the forecasts, then the labels, then the weights: a chunk that
    fails a later check passed every check before it. The message then says the count is a
    lower bound.
    """

    def stage(name: str) -> int:
        return _STAGE["weights"] if name == weight_name else _STAGE.get(name, 0)

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
            probs, labels, weight = _parts(chunk, where)
            if _empty(probs, labels, weight):
                continue
            _prepared(probs, labels, weight, from_logits, where, weight_name)
        except v.CountedError as later:
            if (later.rule, later.name) == (error.rule, error.name):
                count += later.count
                continue
            if stage(later.name) > stage(error.name):
                continue  # it passed the check that failed: none of its values breaks it
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
