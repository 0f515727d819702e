"""Per-group sums for the monitor: one set of edges for every group, each group's bin
statistics and correct count, and each group's temperature (all groups fitted together)."""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .. import _validate as v
from .._errors import CalibkitWarning, InputError
from ..io import column_list, column_options, missing_values
from ..measure import temperature as tm
from ..measure.bins import BinStats, Edges
from ..measure.weighted import weighted_order_statistics
from ._plan import Binning, plan_edges, table_need

#: ``by`` values that truncate a time column instead of naming a column.
PERIODS = ("day", "week", "month")
#: Column names taken for the time when ``time=`` is not given.
TIME_NAMES = ("time", "timestamp", "date", "datetime", "ts", "created_at", "event_time")


@dataclass(frozen=True)
class GroupSums:
    """Groups in order, with their statistics over shared ``edges``, their correct counts and
    their fitted temperatures (a float, or why the fit failed). With a weight column the
    statistics are weighted sums and ``correct_weight`` holds each group's weight of correct
    predictions (None when unweighted)."""

    by: str
    groups: list[Any]
    stats: list[BinStats]
    n_correct: list[int]
    edges: Edges
    temperatures: dict[Any, float | str]
    #: The binary event binned ("top-label" or "binary"), as a calibration record names it.
    event: str = "top-label"
    correct_weight: list[float] | None = None


def group_label(value: Any) -> Any:
    """A group value as JSON and people read it (dates as ISO text, numpy scalars as Python)."""
    if isinstance(value, np.generic):
        value = value.item()
    if hasattr(value, "isoformat"):
        text = value.isoformat()
        return text[:10] if text.endswith("T00:00:00") or text.endswith(" 00:00:00") else text
    return value


def group_sums(
    data: Any,
    labels: Any,
    *,
    by: Any,
    engine: str,
    columns: Mapping[str, Any] | None,
    time: str | None,
    from_logits: bool,
    binning: Binning,
    temperature: bool,
    where: str,
    sample_weight: Any = None,
) -> GroupSums:
    """The groups' sums; weighted by ``sample_weight`` (arrays in memory, one weight per row)
    or by the weight column ``columns["weight"]`` of a file."""
    if columns is not None:
        columns = column_options(columns, where=where)
    if engine in ("duckdb", "spark"):
        if sample_weight is not None:
            raise InputError(
                f"{where}: with engine={engine!r} the weights are a column of the input; name "
                "it in columns= ({'weight': ...}) instead of passing an array."
            )
        return _sql_groups(data, by, engine, columns, time, binning, temperature, where)
    return _memory_groups(
        data, labels, by, columns, time, from_logits, binning, temperature, where, sample_weight
    )


# ----------------------------------------------------------------------------- SQL engines


def _sql_groups(
    data: Any,
    by: Any,
    engine_name: str,
    columns: Mapping[str, Any] | None,
    time: str | None,
    binning: Binning,
    temperature: bool,
    where: str,
) -> GroupSums:
    from . import open_engine

    engine = open_engine(data, engine=engine_name, columns=columns, where=where)
    if not isinstance(by, str):
        raise InputError(f"{where}: with engine={engine_name!r}, by= names a column or a period.")
    names = list(engine.types)
    q0 = engine.query()
    check_time_option(by, names, time, where)
    if by in names and time is None:
        expr, label = q0.dialect.quote(by), by
    elif by in PERIODS:
        column = time_column(names, time, where)
        # a DATE, not the TIMESTAMP date_trunc gives: Spark's TIMESTAMP is an instant, read
        # back in the Python process's time zone (a Monday 00:00 in the session's zone can
        # come back as Sunday 15:00)
        expr = f"CAST(date_trunc('{by}', CAST({q0.dialect.quote(column)} AS TIMESTAMP)) AS DATE)"
        label = f"{by} of {column}"
    else:
        raise InputError(
            f"{where}: by={by!r} is neither a column ({', '.join(names[:20])}) nor a period "
            f"({', '.join(PERIODS)})."
        )
    q = engine.query(by=expr)
    n = engine.checked_rows(q, where)
    # NaN is a value to SQL, not a null
    if by in names and time is None and engine.types.get(by) == "number":
        (nan,) = engine.fetch(  # a sum, not a WHERE: Parquet statistics would prune the NaN
            f"SELECT sum(CASE WHEN isnan(CAST({expr} AS DOUBLE)) THEN 1 ELSE 0 END) "
            f"FROM {engine.relation}"
        )[0]
        if nan:
            raise InputError(
                f"{where}: the group column {by!r} has NaN in {int(nan)} of {n} rows; calibkit "
                "does not drop rows silently: fill them or choose another column."
            )
    # one set of edges for every group (weighted quantiles with a weight column)
    made = engine.edges(engine.query(), {"table": table_need(binning, where=where)}, n, where)
    made = made["table"]
    per_group: dict[Any, tuple[list[Any], int]] = {}
    for row in engine.fetch(q.bins(made.values, binning.closed)):
        per_group.setdefault(row[0], ([], 0))[0].append(row[1:])
    totals = engine.fetch(q.totals())
    correct = {row[0]: int(row[2]) for row in totals}
    groups = sorted(correct, key=_order)
    weight_of = {row[0]: float(row[8] or 0.0) for row in totals} if q.weighted else None
    from ._sql_engine import stats_from_rows

    stats = [
        stats_from_rows(
            per_group.get(g, ([], 0))[0], made.values, binning.closed, weighted=q.weighted
        )
        for g in groups
    ]
    fits: dict[Any, float | str] = {}
    if temperature and engine.plan.kind == "logits":
        for g, result in engine.fit_temperatures(expr, groups, where=where).items():
            fits[g] = _fitted(result, f"{where}: group {g}")
    return GroupSums(
        label,
        groups,
        stats,
        [correct[g] for g in groups],
        made,
        fits,
        q.kind,
        None if weight_of is None else [weight_of[g] for g in groups],
    )


def check_time_option(by: Any, names: list[str], time: str | None, where: str) -> None:
    """Refuse a ``time`` that the grouping would ignore, and warn when ``by`` names both a
    column and a period (the period of ``time`` is used: that is what passing it asks for)."""
    if time is None or not isinstance(by, str):
        return
    if by not in PERIODS:
        raise InputError(
            f"{where}: time={time!r} (--time) goes with by='day', 'week' or 'month'; by={by!r} "
            "groups by a column, so the time column would be ignored: leave time= out."
        )
    if by in names:
        warnings.warn(
            f"{where}: by={by!r} is also the name of a column; grouping by the {by} of "
            f"{time!r} as time= asks (leave time= out to group by the column {by!r}).",
            CalibkitWarning,
            stacklevel=4,
        )


def time_column(names: list[str], time: str | None, where: str) -> str:
    """The time column: ``time`` when it is one of ``names``, else the one name in
    :data:`TIME_NAMES` (an InputError when there is none, or several)."""
    if time is not None:
        if time not in names:
            raise InputError(f"{where}: no time column {time!r}; columns: {', '.join(names[:20])}.")
        return time
    hits = [n for n in names if n.lower() in TIME_NAMES]
    if len(hits) != 1:
        raise InputError(
            f"{where}: by a period needs the time column: pass time= (--time); "
            + (
                f"{', '.join(hits)} all could be."
                if hits
                else f"none is named {', '.join(TIME_NAMES)}."
            )
        )
    return hits[0]


def _order(value: Any) -> Any:
    return (value is None, value)


def _fitted(result: tm.Solution | InputError, where: str) -> float | str:
    """The temperature, or why the group has none (the error without its "where" prefix)."""
    if isinstance(result, InputError):
        return str(result).removeprefix(f"{where}: ")
    return 1.0 / result.beta


def _shared_edges(
    binning: Binning,
    where: str,
    *,
    n: int,
    order_statistics: Any,
    total_weight: float | None = None,
) -> Edges:
    """One set of edges for every group: uniform or explicit as given, or the quantiles of
    all the groups' confidences together (the table's edges of :func:`._plan.plan_edges`;
    weighted quantiles with ``total_weight``)."""
    wanted = {"table": table_need(binning, where=where)}
    return plan_edges(
        wanted, n=n, order_statistics=order_statistics, where=where, total_weight=total_weight
    )["table"]


# ----------------------------------------------------------------------------- memory


def _memory_groups(
    data: Any,
    labels: Any,
    by: Any,
    columns: Mapping[str, Any] | None,
    time: str | None,
    from_logits: bool,
    binning: Binning,
    temperature: bool,
    where: str,
    sample_weight: Any = None,
) -> GroupSums:
    from ..forecasts import prepare

    label = "group"
    if isinstance(data, (str, os.PathLike)):
        if sample_weight is not None:
            raise InputError(
                f"{where}: a file's weights are its column: name it in columns= "
                "({'weight': ...}) instead of passing an array."
            )
        data, labels, from_logits, by, label, sample_weight = _read_file(
            Path(data), by, columns, time, where
        )
    elif columns is not None:
        raise InputError(f"{where}: columns= names the columns of a file; pass arrays or a path.")
    if labels is None:
        raise InputError(f"{where}: pass the labels with the predictions.")
    f = prepare(data, labels, from_logits=from_logits, where=where, sample_weight=sample_weight)
    keys = group_keys(by, f.conf.size, where)
    w = f.weight
    if w is None:
        made = _shared_edges(
            binning,
            where,
            n=f.conf.size,
            order_statistics=lambda request: {
                "c": np.partition(f.conf, request["c"])[request["c"]]
            },
        )
    else:  # weighted quantiles of every group's confidences together
        made = _shared_edges(
            binning,
            where,
            n=f.conf.size,
            order_statistics=lambda request: {
                "c": weighted_order_statistics(f.conf, w, request["c"])
            },
            total_weight=float(w.sum()),
        )
    groups, inverse = np.unique(keys, return_inverse=True)
    stats: list[BinStats] = []
    correct: list[int] = []
    fits: dict[Any, float | str] = {}
    correct_weight: list[float] = []
    for i, g in enumerate(groups.tolist()):
        rows = inverse == i
        correct.append(int(np.count_nonzero(f.correct[rows])))
        if w is None:
            stats.append(
                BinStats.from_forecasts(
                    f.conf[rows], f.outcome[rows], edges=made.values, closed=binning.closed
                )
            )
        else:
            stats.append(
                BinStats.of_checked(
                    f.conf[rows],
                    f.outcome[rows],
                    edges=made.values,
                    closed=binning.closed,
                    sample_weight=w[rows],
                )
            )
            correct_weight.append(float(w[rows & f.correct].sum()))
            rows &= w > 0  # the temperature is fitted on the rows of positive weight
        if temperature and f.from_logits and not rows.any():
            fits[g] = "no row of positive weight"
        elif temperature and f.from_logits:
            z = v.scores(f.scores, where=where)[rows]
            try:
                fitted = tm.solve(
                    z,
                    f.y[rows],
                    where=f"{where}: group {g}",
                    sample_weight=None if w is None else w[rows],
                )
                fits[g] = _fitted(fitted, "")
            except InputError as exc:
                fits[g] = _fitted(exc, f"{where}: group {g}")
    return GroupSums(
        label,
        groups.tolist(),
        stats,
        correct,
        made,
        fits,
        f.kind,
        None if w is None else correct_weight,
    )


def group_keys(by: Any, n: int, where: str) -> np.ndarray:
    """The group of every prediction: numbers, text, dates or times (a group value may be any
    of these, unlike the numbers of ``_validate.to_numpy``); missing groups are refused."""
    if by is None or isinstance(by, (str, bytes)):
        raise InputError(
            f"{where}: by= must hold one group per prediction (an array), or name a column or "
            f"a period of a file; got {by!r}."
        )
    if hasattr(by, "to_numpy") and not isinstance(by, np.ndarray):  # pandas, polars, arrow
        keys = v.column_to_numpy(by, name="by", where=where)
    else:
        keys = np.asarray(by)
    if keys.ndim != 1 or keys.shape[0] != n:
        raise InputError(
            f"{where}: by= must hold one group per prediction ({n}); got shape {keys.shape}."
        )
    if keys.dtype.kind in "fc":
        missing = np.isnan(keys)
    elif keys.dtype.kind in "mM":
        missing = np.isnat(keys)
    elif keys.dtype == object:
        missing = np.array([k is None or (isinstance(k, float) and k != k) for k in keys.tolist()])
    else:
        missing = np.zeros(n, dtype=bool)
    if missing.any():
        raise InputError(
            f"{where}: by= has {int(missing.sum())} missing groups (None/NaN/NaT), first at "
            f"index {int(np.argmax(missing))}; calibkit does not drop rows silently: remove or "
            "fill them first."
        )
    if keys.dtype == object:
        try:
            np.unique(keys)
        except TypeError:
            raise InputError(
                f"{where}: by= mixes group values that cannot be ordered (e.g. numbers and "
                "text); give every group the same type."
            ) from None
    return keys


def _read_file(
    path: Path, by: Any, columns: Mapping[str, Any] | None, time: str | None, where: str
) -> tuple[Any, Any, bool, Any, str, np.ndarray | None]:
    from ..io import read_predictions

    options = dict(columns or {})
    preds = read_predictions(path, **options)
    keys, label = file_groups(path, by, options.get("format"), time, where)
    return preds.scores, preds.labels, preds.kind == "logits", keys, label, preds.sample_weight


def file_groups(
    path: str | os.PathLike[str], by: Any, fmt: str | None, time: str | None, where: str
) -> tuple[np.ndarray, str]:
    """The group of each row of a file, and what the grouping is called: the column ``by``,
    or the day, week or month of the time column (missing values refused, with their row)."""
    from ..io import open_source, resolve_format

    path = Path(path)
    with open_source(path, resolve_format(path, fmt)) as src:
        check_time_option(by, list(src.names), time, where)
        if isinstance(by, str) and by in src.names and time is None:
            return group_column(src, by), by
        if by in PERIODS:
            column = time_column(src.names, time, where)
            return truncate(group_column(src, column), by, column, where), f"{by} of {column}"
        raise InputError(
            f"{where}: by={by!r} is neither a column of '{path}' ({column_list(src.names)}) "
            f"nor a period ({', '.join(PERIODS)})."
        )


def group_column(src: Any, name: str) -> np.ndarray:
    """A column of group values: text and numbers as the source reads them, and dates or times
    (Parquet timestamps, dates that pyarrow recognised in a CSV or JSON file) as numpy
    datetimes, which the source's numeric reader refuses."""
    column = getattr(src, "_column", None)
    if column is not None:
        import pyarrow as pa

        col = column(name)
        if pa.types.is_temporal(col.type):
            if col.null_count:
                raise InputError(
                    f"{src.fmt}: column {name!r} has {col.null_count} missing times; calibkit "
                    "does not drop rows silently: remove or fill them first."
                )
            return np.asarray(col.to_numpy(zero_copy_only=False))
    values = src.get(name, "any")
    if getattr(src, "fmt", None) in ("csv", "tsv") and values.dtype.kind == "U":
        empty = values == ""
        if empty.any():  # an empty cell is a missing value in a CSV, not a group named ""
            raise missing_values(name, int(empty.sum()), int(np.argmax(empty)), values.size)
    return values


def truncate(values: np.ndarray, period: str, column: str, where: str) -> np.ndarray:
    """Times truncated to the start of their day, week (Monday) or month, as numpy dates
    (``datetime64[D]``: the dates the SQL engines give, ``CAST(date_trunc(...) AS DATE)``)."""
    try:
        t = np.asarray(values).astype("datetime64[s]")
    except (TypeError, ValueError):
        raise InputError(
            f"{where}: column {column!r} must hold dates or times (e.g. 2025-01-31 or "
            "2025-01-31T08:00:00) to group by a period."
        ) from None
    if np.isnat(t).any():
        raise InputError(f"{where}: column {column!r} has {int(np.isnat(t).sum())} missing times.")
    days = t.astype("datetime64[D]")
    if period == "day":
        return days
    if period == "week":
        weekday = (days.astype(np.int64) + 3) % 7  # 1970-01-01 was a Thursday; Monday is 0
        return days - weekday.astype("timedelta64[D]")
    return t.astype("datetime64[M]").astype("datetime64[D]")


def table_groups(src: Any, by: Any, time: str | None, where: str) -> tuple[Any, str]:
    """The group of each row of a table, and what the grouping is called: the column ``by``,
    or the day, week or month of the time column (as for a file: ``engines.groups``)."""
    if not isinstance(by, str):
        return by, "group"
    check_time_option(by, list(src.names), time, where)
    if by in src.names and time is None:
        return group_column(src, by), by
    if by in PERIODS:
        column = time_column(list(src.names), time, where)
        return truncate(group_column(src, column), by, column, where), f"{by} of {column}"
    raise InputError(
        f"{where}: by={by!r} is neither a column of {src.shown_as} ({column_list(src.names)}) "
        f"nor a period ({', '.join(PERIODS)})."
    )
