"""What ``ck.audit`` and ``ck.monitor`` do with their first arguments before an engine sees
them: a table in memory (pandas, polars, pyarrow) is read by the file rules of this package (its
columns detected, or named by ``columns=``), a file audited in memory likewise, and labels with
``pos_label`` (or written as text) become the 0/1 outcome of a 1-D forecast."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from .. import _validate as v
from .._errors import InputError
from ._frames import FrameSource, is_frame
from ._plan import column_options
from ._read import Predictions, read_predictions
from ._sources import WHERE


@dataclass(frozen=True, eq=False)
class Entry:
    """The arguments as an engine takes them. ``read``: the predictions read here (a table or
    a file in memory), whose columns name the values in messages; ``columns``: what is left
    for the engine to read (None when read here); ``source``: the table read."""

    data: Any
    labels: Any
    from_logits: bool
    columns: Mapping[str, Any] | None
    read: Predictions | None = None
    source: FrameSource | None = None


@contextlib.contextmanager
def retagged(where: str) -> Iterator[None]:
    """Messages of the reader under the caller's name (``audit: ...``, not
    ``read_predictions: ...``), for a table the caller was given."""
    try:
        yield
    except InputError as exc:
        text = str(exc)
        if text.startswith(f"{WHERE}: "):
            raise InputError(f"{where}: {text[len(WHERE) + 2 :]}") from None
        raise


def entry(
    data: Any,
    labels: Any,
    *,
    engine: str | None,
    columns: Mapping[str, Any] | None,
    pos_label: Any,
    from_logits: bool,
    where: str,
    files: bool = True,
) -> Entry:
    """Turn ``data`` (arrays, a table in memory, a path) and ``labels`` into what an engine
    takes (see the module docstring). ``files``: read a path here when the engine is memory."""
    from ..forecasts import is_stream

    in_memory = engine in (None, "memory")
    if is_frame(data) and labels is None and in_memory:
        options = column_options(columns, where=where)
        with retagged(where):
            source = FrameSource(data)
            read = _read(source, options, pos_label)
        return Entry(read.scores, read.labels, read.kind == "logits", None, read, source)
    if is_frame(data) and columns is not None:
        raise InputError(
            f"{where}: columns= names the columns of the table; pass the table alone (its label "
            "column is columns['label']), or its score columns with the labels as arrays."
        )
    if files and in_memory and labels is None and isinstance(data, (str, os.PathLike)):
        options = column_options(columns, where=where)
        read = read_predictions(data, pos_label=pos_label, **options)
        return Entry(read.scores, read.labels, read.kind == "logits", None, read)
    path = isinstance(data, (str, os.PathLike))
    if labels is not None and in_memory and not path and not is_stream(data):
        labels = _outcome(data, labels, pos_label, where)
    elif pos_label is not None:
        what = "a DataFrame, or a file with engine='memory'" if files else "or a DataFrame"
        raise InputError(
            f"{where}: pos_label= turns labels into the outcome of a 1-D forecast in memory: "
            f"pass arrays with their labels, {what}. Otherwise write the 0/1 outcome "
            "(label == pos_label) as the label column."
        )
    return Entry(data, labels, from_logits, columns)


def _read(source: FrameSource, options: dict[str, Any], pos_label: Any) -> Predictions:
    if "format" in options:
        raise InputError(
            f"{WHERE}: columns['format'] tells the format of a file; a table in memory has "
            "none (leave it out)."
        )
    return read_predictions(source, pos_label=pos_label, **options)


def _outcome(data: Any, labels: Any, pos_label: Any, where: str) -> Any:
    """Labels of arrays in memory: the 0/1 outcome label == pos_label of a 1-D forecast, and
    text labels refused with their values; other labels as they are."""
    if pos_label is None:
        try:
            y = v.to_numpy(labels, name="labels", where=where)
        except InputError as exc:
            try:
                text = v.label_values(labels, where=where).dtype.kind == "U"
            except InputError:
                text = False
            if not text or _ndim(data, where) != 1:
                raise exc from None
        else:
            if y.ndim == 1 and _ndim(data, where) == 1:
                v.two_valued(y, where=where)
            return labels
    elif _ndim(data, where) != 1:
        shape = v.to_numpy(data, name="probs", where=where).shape
        raise InputError(
            f"{where}: pos_label= says which label value a 1-D forecast is the probability of; "
            f"probs has shape {shape}, whose labels are the class indices 0..{shape[-1] - 1}. "
            "Leave pos_label= out, or pass the one column of that class."
        )
    return v.positive_outcome(labels, pos_label, where=where)


def _ndim(data: Any, where: str) -> int:
    """The number of dimensions of the forecasts, without a copy where they say it."""
    ndim = getattr(data, "ndim", None)
    if isinstance(ndim, int):
        return ndim
    return v.to_numpy(data, name="probs", where=where).ndim
