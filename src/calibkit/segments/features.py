"""The feature columns of a segment search, each turned into levels: a categorical column's
values as they are, a numeric column cut at its quantiles.

A column is *numeric* when it holds integers or floats (not booleans) with more distinct values
than the number of quantile bins asked for, and it is not named in ``categorical``; it is cut
at its ``k / n_quantiles`` quantiles (``np.quantile``, linear interpolation, over all rows:
the cut uses no outcome, so both halves of the search share it), a value equal to a cut point
going to the lower level; with sample weights, at the weighted quantiles (those of the rows
repeated by their integer weights, :func:`calibkit.measure.weighted.weighted_quantiles`). Every
other column is *categorical*: one level per distinct value,
refused beyond ``max_levels`` values (a search over hundreds of small groups has no power).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import _validate as v
from .._errors import InputError
from ..io import FrameSource, column_list, is_frame, open_source, resolve_format, retagged
from ..measure.weighted import weighted_quantiles

__all__ = ["Feature", "Level", "code_features", "read_features"]

_NUMERIC_HINT = " (it is numeric: leave it out of categorical= to cut it at its quantiles)."


@dataclass(frozen=True)
class Level:
    """One level of a feature: a categorical ``value``, or the numeric range ``low < x <=
    high`` (None for an open end); ``label`` says it in words (``qset = sciq``, ``age <= 34``)."""

    feature: str
    label: str
    value: Any = None
    low: float | None = None
    high: float | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"feature": self.feature, "label": self.label}
        if self.low is None and self.high is None:
            out["value"] = self.value
        else:
            out["low"], out["high"] = self.low, self.high
        return out


@dataclass(frozen=True)
class Feature:
    """A feature column and its levels: ``kind`` is ``"categorical"`` or ``"quantile"`` (with
    the inner ``cuts``)."""

    name: str
    kind: str
    levels: tuple[Level, ...]
    cuts: tuple[float, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "levels": [level.label for level in self.levels],
            "cuts": list(self.cuts),
        }


def code_features(
    features: Any,
    *,
    n: int,
    n_quantiles: int,
    categorical: Sequence[str],
    max_levels: int,
    where: str,
    sample_weight: np.ndarray | None = None,
) -> tuple[tuple[Feature, ...], np.ndarray]:
    """The features and the level of every row in each, as an (F, N) int array (numeric
    features cut at the quantiles weighted by ``sample_weight``, checked, when given)."""
    columns = _columns(features, n=n, where=where)
    if not columns:
        raise InputError(f"{where}: features is empty; pass at least one feature column.")
    names = list(columns)
    unknown = [name for name in categorical if name not in columns]
    if unknown:
        raise InputError(
            f"{where}: categorical names {', '.join(repr(u) for u in unknown)}, which "
            f"{'is not a feature' if len(unknown) == 1 else 'are not features'}; the features "
            f"are {column_list(names)}."
        )
    coded, codes = [], np.empty((len(names), n), dtype=np.int64)
    for i, name in enumerate(names):
        feature, codes[i] = _code(
            name,
            columns[name],
            n_quantiles=n_quantiles,
            categorical=name in categorical,
            max_levels=max_levels,
            where=where,
            sample_weight=sample_weight,
        )
        coded.append(feature)
    return tuple(coded), codes


def read_features(source: Any, names: Iterable[str], *, fmt: str | None = None) -> dict[str, Any]:
    """The named columns of a file (by the file rules of :mod:`calibkit.io`) or of a table in
    memory, as arrays by name: the ``features`` of :func:`find_miscalibrated_segments`."""
    where = "segments"
    names = list(names)
    if is_frame(source):
        with retagged(where):
            table = FrameSource(source)
            return {name: table.get(name, "any") for name in names}
    if not isinstance(source, (str, os.PathLike)):
        raise InputError(
            f"{where}: read_features takes a file path or a table, got {type(source).__name__}."
        )
    path = Path(source)
    with retagged(where), open_source(path, resolve_format(path, fmt)) as src:
        columns = {name: src.get(name, "any") for name in names}
    if getattr(src, "cells", False):  # CSV, TSV: an empty cell of a text column is missing
        for name, values in columns.items():
            if values.dtype.kind == "U":
                _no_empty_cells(name, values, where)
    return columns


def _no_empty_cells(name: str, values: np.ndarray, where: str) -> None:
    empty = np.char.strip(values) == ""
    if empty.any():
        count, first = int(empty.sum()), int(np.argmax(empty))
        raise InputError(
            f"{where}: column {name!r} has {count} missing {'value' if count == 1 else 'values'} "
            f"(empty cells), first at row {first} (0-based, header not counted, of "
            f"{values.size} rows); calibkit does not drop rows silently: fill them or leave "
            "the column out."
        )


def _columns(features: Any, *, n: int, where: str) -> dict[str, np.ndarray]:
    """The feature columns by name, each checked (one value per row, none missing)."""
    if is_frame(features):
        with retagged(where):
            src = FrameSource(features)
            raw: Mapping[str, Any] = {name: src.get(name, "any") for name in src.names}
    elif isinstance(features, Mapping):
        raw = features
    else:
        raise InputError(
            f"{where}: features must be a dict of columns (name -> array) or a table (pandas, "
            f"polars, pyarrow), got {type(features).__name__}."
        )
    out = {}
    for name, values in raw.items():
        if not isinstance(name, str) or not name:
            raise InputError(f"{where}: feature names must be non-empty text, got {name!r}.")
        out[name] = v.group_values(values, n=n, where=where, name=f"feature {name!r}")
    return out


def _code(
    name: str,
    values: np.ndarray,
    *,
    n_quantiles: int,
    categorical: bool,
    max_levels: int,
    where: str,
    sample_weight: np.ndarray | None = None,
) -> tuple[Feature, np.ndarray]:
    numeric = values.dtype.kind in "iuf"
    if numeric and not categorical and _more_values_than(values, n_quantiles):
        at = np.arange(1, n_quantiles) / n_quantiles
        if sample_weight is None:
            cuts = np.quantile(values, at)
        else:
            cuts = weighted_quantiles(values, sample_weight, at)
        return _quantile_levels(name, values, np.unique(cuts))
    kept, codes = np.unique(values, return_inverse=True)
    if kept.size > max_levels:
        raise InputError(
            f"{where}: feature {name!r} has {kept.size:,} distinct values, more than "
            f"max_levels={max_levels}; a search over so many small groups finds little: leave "
            "it out, group its values first, or raise max_levels"
            + (_NUMERIC_HINT if numeric else ".")
        )
    levels = tuple(
        Level(name, f"{name} = {_shown(value)}", value=_plain(value)) for value in kept.tolist()
    )
    return Feature(name, "categorical", levels), codes.astype(np.int64)


def _more_values_than(values: np.ndarray, k: int) -> bool:
    """Whether ``values`` holds more than ``k`` distinct values (a first block of them often
    tells, without sorting the whole column)."""
    return bool(np.unique(values[:4096]).size > k or np.unique(values).size > k)


def _quantile_levels(name: str, values: np.ndarray, cuts: np.ndarray) -> tuple[Feature, np.ndarray]:
    """Levels (-inf, c1], (c1, c2], ..., (ck, inf) of a numeric column; empty ones dropped."""
    codes = np.searchsorted(cuts, values, side="left")
    counts = np.bincount(codes, minlength=cuts.size + 1)
    used = np.flatnonzero(counts)  # the levels that hold rows, renumbered 0, 1, ...
    codes = (np.cumsum(counts > 0) - 1)[codes]
    shown = _cut_labels(cuts)
    levels = []
    for k in used.tolist():
        low = float(cuts[k - 1]) if k > 0 else None
        high = float(cuts[k]) if k < cuts.size else None
        if low is None:
            label = f"{name} <= {shown[k]}"
        elif high is None:
            label = f"{name} > {shown[k - 1]}"
        else:
            label = f"{shown[k - 1]} < {name} <= {shown[k]}"
        levels.append(Level(name, label, low=low, high=high))
    feature = Feature(name, "quantile", tuple(levels), tuple(float(c) for c in cuts))
    return feature, codes.astype(np.int64)


def _cut_labels(cuts: np.ndarray) -> list[str]:
    """The cut points as short text that still tells them apart (4 significant digits, more
    where two would read alike)."""
    for digits in (4, 6, 8, 12, 17):
        shown = [f"{c:.{digits}g}" for c in cuts.tolist()]
        if len(set(shown)) == len(shown):
            return shown
    return [repr(c) for c in cuts.tolist()]


def _plain(value: Any) -> Any:
    """A level's value as JSON holds it (numpy scalars as Python, dates as ISO text)."""
    if isinstance(value, (np.datetime64, np.timedelta64)):
        return str(value)
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def _shown(value: Any) -> str:
    return str(_plain(value))
