"""Audit confidences that language models state (or give as answer-token probabilities).

:func:`audit_stated` takes a table of answers (one row per answer: group columns such as the model
and the question set, one column per source of confidence, and whether the answer was correct) and
reports, per group and per source, the measures of :mod:`calibkit.measure` on the binary event "the
answer is correct": accuracy, ECE with its bootstrap interval and the noise floor of a calibrated
forecaster, Brier score, log loss, AUC, and a histogram of the stated values (stated confidences are
coarse: most are multiples of 0.05, as Xiong et al. 2024 observe).

Rows whose confidence or outcome is missing (null or NaN) or whose confidence lies outside [0, 1]
are excluded from that source's metrics and counted; nothing is ever filled in.

>>> import calibkit.stated.audit as sa
>>> a = sa.audit_stated({"llm": ["m"] * 4, "stated_confidence": [0.9, 0.9, None, 0.6],
...                      "correct": [1, 0, 1, 1]}, group_by=("llm",),
...                     sources=("stated_confidence",), n_boot=50, n_sims=50)
>>> r = a.rows[0]
>>> (r.n, r.n_missing, round(r.accuracy, 3))
(3, 1, 0.667)
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import _display
from .._errors import CalibkitWarning, InputError
from ..decide.coverage import curve as risk_coverage_of  # checked arrays: no input warning
from ..measure import auc, bootstrap_ece, brier, ece, nll, noise_floor, reliability_bins
from ..measure.reliability import ReliabilityTable

__all__ = ["SourceAudit", "StatedAudit", "audit_stated"]


@dataclass(frozen=True)
class SourceAudit:
    """The audit of one source of confidence in one group.

    ``n_rows`` is the number of rows in the group, ``n`` the number used; ``n_missing`` rows had a
    null/NaN confidence or outcome, ``n_out_of_range`` a confidence outside [0, 1]. Every metric is
    ``None`` when ``n == 0``; ``auc`` is also ``None`` when the used rows hold only one class.
    ``nll`` is infinite when some used row states 0 or 1 and is wrong; ``n_certain_wrong`` counts
    those rows (the audit does not warn about them row by row). ``share_multiple_of_05`` is the
    share of used values that are multiples of 0.05 and
    ``top_values`` the most common values with their shares. ``table`` is the reliability table
    (counts, accuracy and its Wilson interval per bin), and ``aurc`` / ``e_aurc`` summarise the
    risk-coverage curve of acting on the answer when the stated confidence is high enough.
    """

    group: tuple[str, ...]
    source: str
    n_rows: int
    n: int
    n_missing: int
    n_out_of_range: int
    accuracy: float | None
    mean_confidence: float | None
    ece: float | None
    ece_low: float | None
    ece_high: float | None
    noise_floor: float | None
    noise_floor_p95: float | None
    brier: float | None
    nll: float | None
    auc: float | None
    n_certain_wrong: int
    n_distinct: int
    share_multiple_of_05: float | None
    top_values: tuple[tuple[float, float], ...]
    table: ReliabilityTable | None = field(default=None, repr=False)
    aurc: float | None = None
    e_aurc: float | None = None


@dataclass(frozen=True)
class Comparison:
    """Which source has the lower ECE in a group where at least two sources have data.

    ``clear`` is True when the winner's bootstrap interval lies entirely below every other
    source's interval; otherwise the difference is within the resampling noise.
    """

    group: tuple[str, ...]
    better: str
    clear: bool
    ece: dict[str, float]


@dataclass(frozen=True)
class StatedAudit:
    """The result of :func:`audit_stated`: one :class:`SourceAudit` per (group, source)."""

    group_by: tuple[str, ...]
    sources: tuple[str, ...]
    correct: str
    n_bins: int
    seed: int
    n_boot: int
    n_sims: int
    rows: tuple[SourceAudit, ...]
    comparisons: tuple[Comparison, ...] = field(default=())

    def get(self, group: Sequence[str], source: str) -> SourceAudit:
        """The audit of ``source`` in ``group`` (a tuple of group-column values)."""
        key = tuple(str(g) for g in group)
        for row in self.rows:
            if row.group == key and row.source == source:
                return row
        raise KeyError((key, source))

    def better(self, group: Sequence[str]) -> Comparison | None:
        """The comparison of sources in ``group``, or None where fewer than two have data."""
        key = tuple(str(g) for g in group)
        for comp in self.comparisons:
            if comp.group == key:
                return comp
        return None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict (lists instead of tuples)."""
        return {
            "group_by": list(self.group_by),
            "sources": list(self.sources),
            "correct": self.correct,
            "n_bins": self.n_bins,
            "seed": self.seed,
            "n_boot": self.n_boot,
            "n_sims": self.n_sims,
            "rows": [
                {
                    **{k: v for k, v in asdict(r).items() if k != "table"},
                    "group": list(r.group),
                    "top_values": [list(v) for v in r.top_values],
                    "table": None if r.table is None else r.table.to_dict(),
                }
                for r in self.rows
            ],
            "comparisons": [
                {"group": list(c.group), "better": c.better, "clear": c.clear, "ece": dict(c.ece)}
                for c in self.comparisons
            ],
        }

    #: The columns of one source's row in the default (80-column) layout, and with ``wide``.
    NARROW: ClassVar[tuple[str, ...]] = ("source", "N", "acc", "ECE [95% CI]", "floor", "AUC")
    WIDE: ClassVar[tuple[str, ...]] = (
        *("source", "N", "excl", "acc", "ECE [95% CI]", "floor", "Brier", "NLL", "AUC"),
        *("x0.05", "top values", "better"),
    )

    def groups(self) -> list[tuple[tuple[str, ...], list[SourceAudit]]]:
        """The rows by group, in the order they were audited."""
        out: dict[tuple[str, ...], list[SourceAudit]] = {}
        for r in self.rows:
            out.setdefault(r.group, []).append(r)
        return list(out.items())

    def heading(self, group: Sequence[str]) -> str:
        """A group's heading: its values, and which source is better calibrated there."""
        name = ", ".join(f"{k} {v}" for k, v in zip(self.group_by, group, strict=True))
        comp = self.better(group)
        if comp is None:
            return name or "all rows"
        how = "intervals apart" if comp.clear else "intervals overlap"
        return f"{name or 'all rows'}: {comp.better} has the lower ECE ({how})"

    def cells(self, r: SourceAudit, *, wide: bool = False) -> list[str]:
        """One source's row: :attr:`NARROW` (or :attr:`WIDE`) formatted."""
        ece = "-" if r.ece is None else f"{r.ece:.3f} [{r.ece_low:.3f}, {r.ece_high:.3f}]"
        if not wide:
            return [r.source, str(r.n), _fmt(r.accuracy), ece, _fmt(r.noise_floor), _fmt(r.auc)]
        comp = self.better(r.group)
        mark = ""
        if comp is not None and comp.better == r.source:
            mark = "yes" if comp.clear else "yes (overlap)"
        top = ", ".join(f"{v:g}:{s:.0%}" for v, s in r.top_values[:3])
        return [
            r.source,
            str(r.n),
            str(r.n_missing + r.n_out_of_range),
            _fmt(r.accuracy),
            ece,
            _fmt(r.noise_floor),
            _fmt(r.brier),
            _fmt(r.nll),
            _fmt(r.auc),
            _fmt(r.share_multiple_of_05, ".0%"),
            top or "-",
            mark,
        ]

    def _repr_html_(self) -> str:
        """What a notebook shows: the HTML report's section for this result."""
        return _display.html(self)

    def __str__(self) -> str:
        """One block per group: its heading, then a row per source (fits 80 columns)."""
        blocks = []
        for group, rows in self.groups():
            table = [list(self.NARROW)] + [self.cells(r) for r in rows]
            widths = [max(len(row[i]) for row in table) for i in range(len(self.NARROW))]
            lines = [self.heading(group)]
            lines += [
                "  " + "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in
                                 enumerate(zip(row, widths, strict=True))).rstrip()
                for row in table
            ]  # fmt: skip
            blocks.append("\n".join(lines))
        return "\n\n".join(blocks)


def _fmt(x: float | None, spec: str = ".3f") -> str:
    return "-" if x is None else format(x, spec)


def _column(frame_like: Any, name: str, where: str = "audit_stated") -> pa.Array:
    """One column of a pyarrow Table, pandas DataFrame or mapping of arrays, as a pyarrow Array."""
    try:
        if isinstance(frame_like, pa.Table):
            col: Any = frame_like.column(name)
        else:
            col = frame_like[name]
    except (KeyError, IndexError) as exc:
        raise InputError(f"{where}: the table has no column {name!r}.") from exc
    if isinstance(col, pa.ChunkedArray):
        return col.combine_chunks()
    if isinstance(col, pa.Array):
        return col
    if type(col).__module__.startswith("pandas"):
        return pa.Array.from_pandas(col)
    if isinstance(col, np.ndarray):
        return pa.array(col, from_pandas=col.dtype.kind == "f")
    return pa.array(list(col))


def _as_float(arr: pa.Array, name: str, where: str = "audit_stated") -> np.ndarray:
    """Float64 values with NaN where the input is null (or NaN)."""
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        low = pc.utf8_lower(pc.utf8_trim_whitespace(arr))
        mapped = pc.if_else(
            pc.equal(low, "true"), "1", pc.if_else(pc.equal(low, "false"), "0", low)
        )
        arr = pc.cast(mapped, pa.float64(), safe=True)
    try:
        out = pc.cast(arr, pa.float64()).to_numpy(zero_copy_only=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise InputError(f"{where}: column {name!r} is not numeric ({arr.type}).") from exc
    return np.asarray(out, dtype=np.float64)


def _histogram(
    conf: np.ndarray, top: int
) -> tuple[int, float | None, tuple[tuple[float, float], ...]]:
    if conf.size == 0:
        return 0, None, ()
    rounded = np.round(conf, 6)
    values, counts = np.unique(rounded, return_counts=True)
    order = np.lexsort((values, -counts))[:top]
    tops = tuple((float(values[i]), float(counts[i] / conf.size)) for i in order)
    twenty = conf * 20.0
    multiple = np.abs(twenty - np.round(twenty)) < 1e-6
    return int(values.size), float(multiple.mean()), tops


def _audit_one(
    group: tuple[str, ...],
    source: str,
    conf_all: np.ndarray,
    y_all: np.ndarray,
    *,
    n_bins: int,
    seed: int,
    n_boot: int,
    n_sims: int,
    level: float,
    top: int,
) -> SourceAudit:
    missing = np.isnan(conf_all) | np.isnan(y_all)
    out_of_range = ~missing & ((conf_all < 0.0) | (conf_all > 1.0))
    keep = ~missing & ~out_of_range
    conf = conf_all[keep]
    y = y_all[keep].astype(np.int64)
    n = int(conf.size)
    n_distinct, share05, tops = _histogram(conf, top)
    base: dict[str, Any] = {
        "group": group,
        "source": source,
        "n_rows": int(conf_all.size),
        "n": n,
        "n_missing": int(missing.sum()),
        "n_out_of_range": int(out_of_range.sum()),
        "n_certain_wrong": int(((conf == 1.0) & (y == 0)).sum() + ((conf == 0.0) & (y == 1)).sum()),
        "n_distinct": n_distinct,
        "share_multiple_of_05": share05,
        "top_values": tops,
    }
    if n == 0:
        none: dict[str, Any] = dict.fromkeys(
            [
                "accuracy",
                "mean_confidence",
                "ece",
                "ece_low",
                "ece_high",
                "noise_floor",
                "noise_floor_p95",
                "brier",
                "nll",
                "auc",
            ]
        )
        return SourceAudit(**base, **none)
    boot = bootstrap_ece(conf, y, n_bins=n_bins, n_boot=n_boot, level=level, seed=seed)
    floor = noise_floor(conf, n_bins=n_bins, n_sims=n_sims, seed=seed)
    both_classes = 0 < int(y.sum()) < n
    curve = risk_coverage_of(conf, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibkitWarning)
        log_loss = float(nll(conf, y))
    return SourceAudit(
        **base,
        accuracy=float(y.mean()),
        mean_confidence=float(conf.mean()),
        ece=float(ece(conf, y, n_bins=n_bins)),
        ece_low=float(boot.low),
        ece_high=float(boot.high),
        noise_floor=float(floor.mean),
        noise_floor_p95=float(floor.p95),
        brier=float(brier(conf, y)),
        nll=log_loss,
        auc=float(auc(conf, y)) if both_classes else None,
        table=reliability_bins(conf, y, n_bins=n_bins, level=level),
        aurc=curve.aurc,
        e_aurc=curve.e_aurc,
    )


def audit_stated(
    frame_like: Any,
    *,
    group_by: Sequence[str] = ("llm", "qset"),
    sources: Sequence[str] = ("stated_confidence", "chosen_token_confidence"),
    correct: str = "correct",
    n_bins: int = 15,
    seed: int = 0,
    n_boot: int = 1000,
    n_sims: int = 1000,
    level: float = 0.95,
    top: int = 5,
    skip_absent: bool = False,
) -> StatedAudit:
    """Audit each source of confidence in each group of a table of answers.

    ``frame_like`` is a pyarrow Table, a pandas DataFrame or a mapping of column name to array-like.
    ``correct`` names the outcome column (0/1, bool, or "TRUE"/"FALSE" strings). Each ECE, Brier
    score, log loss and AUC is exactly what :func:`calibkit.ece`, :func:`calibkit.brier`,
    :func:`calibkit.nll` and :func:`calibkit.auc` give on the group's non-missing rows; the
    interval is :func:`calibkit.bootstrap_ece` and the floor :func:`calibkit.noise_floor` (mean
    over simulations), both seeded with ``seed``. Groups are listed in order of first appearance.
    ``skip_absent`` leaves out a source in a group where it has no value at all (a table whose
    tasks give different sources); by default such a source is listed with N = 0.
    """
    group_by = tuple(group_by)
    sources = tuple(sources)
    if not sources:
        raise InputError("audit_stated: give at least one source column.")
    if not (isinstance(frame_like, (Mapping, pa.Table)) or hasattr(frame_like, "__getitem__")):
        raise InputError(
            "audit_stated: expected a pyarrow Table, a pandas DataFrame or a dict of arrays, "
            f"got {type(frame_like).__name__}."
        )
    y_all = _as_float(_column(frame_like, correct), correct)
    bad = ~np.isnan(y_all) & (y_all != 0.0) & (y_all != 1.0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"audit_stated: column {correct!r} must hold 0/1 (or booleans); "
            f"row {i} is {y_all[i]!r}."
        )
    confs = {s: _as_float(_column(frame_like, s), s) for s in sources}
    n_rows = y_all.size
    for s, c in confs.items():
        if c.size != n_rows:
            raise InputError(f"audit_stated: column {s!r} has {c.size} rows, {correct!r} {n_rows}.")
    keys_cols = [_column(frame_like, g).cast(pa.string()).to_pylist() for g in group_by]
    groups: dict[tuple[str, ...], list[int]] = {}
    if keys_cols:
        for i, key in enumerate(zip(*keys_cols, strict=True)):
            groups.setdefault(tuple("" if k is None else k for k in key), []).append(i)
    else:
        groups[()] = list(range(n_rows))

    rows: list[SourceAudit] = []
    comparisons: list[Comparison] = []
    for key, idx_list in groups.items():
        idx = np.asarray(idx_list, dtype=np.int64)
        here = [
            _audit_one(
                key,
                s,
                confs[s][idx],
                y_all[idx],
                n_bins=n_bins,
                seed=seed,
                n_boot=n_boot,
                n_sims=n_sims,
                level=level,
                top=top,
            )
            for s in sources
            if not (skip_absent and np.isnan(confs[s][idx]).all())
        ]
        rows.extend(here)
        with_data = [r for r in here if r.ece is not None]
        if len(with_data) >= 2:
            best = min(with_data, key=lambda r: (r.ece, sources.index(r.source)))
            clear = all(
                best.ece_high is not None and r.ece_low is not None and best.ece_high < r.ece_low
                for r in with_data
                if r is not best
            )
            comparisons.append(
                Comparison(
                    key, best.source, clear, {r.source: float(r.ece or 0.0) for r in with_data}
                )
            )
    return StatedAudit(
        group_by=group_by,
        sources=sources,
        correct=correct,
        n_bins=n_bins,
        seed=seed,
        n_boot=n_boot,
        n_sims=n_sims,
        rows=tuple(rows),
        comparisons=tuple(comparisons),
    )
