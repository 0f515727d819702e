"""Calibration over time and cohorts: every group audited with the same bins, each group's ECE
beside its interval, its noise floor and its temperature, and the groups whose calibration moved
beyond noise from a reference flagged.

The per-group sums come from any engine (arrays in memory, a stream of chunks, DuckDB or Spark:
one GROUP BY on the group and the bin), and the temperatures of all groups are fitted together,
one aggregation per Newton step. A group is flagged when its ECE change from the reference lies
outside the band of changes of two cohorts of the same sizes and confidences whose calibration
did not move (:func:`calibkit.measure.change.ece_change_band`); the band's level is corrected
for the number of groups compared (Bonferroni), so a run of stable weeks raises a false alarm
with probability at most ``1 - level`` in all.

With sample weights (``sample_weight=`` for arrays and tables, a file's weight column
``columns={"weight": ...}`` on any engine) every group's bins, ECE, accuracy and mean confidence
are weighted (integer weights: those of the rows repeated), the shared quantile edges are
weighted quantiles, and the noise floor, the ECE interval and the no-change band use each bin's
Kish effective count (:func:`calibkit.measure.change.ece_change_band`): each row is one
observation carrying its weight, so a group whose weight sits on a few rows is flagged only
for a correspondingly larger move, and the flags keep their level.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from . import _display
from . import _validate as v
from ._errors import InputError
from .engines import Binning
from .engines.groups import group_label
from .io import entry, naming_columns, retagged
from .measure.bins import BinStats, Edges
from .measure.change import ChangeBand, ece_change_band, per_test_level
from .measure.errors import ece_from_stats
from .measure.uncertainty import (
    BOOTSTRAP_FROM_STATS,
    BootstrapInterval,
    NoiseFloor,
    bootstrap_from_stats,
    noise_floor_from_stats,
)

__all__ = ["GroupCalibration", "Monitor", "group_label", "monitor"]


@dataclass(frozen=True, eq=False)
class GroupCalibration:
    """One group's calibration, and how it compares with the reference."""

    group: Any
    stats: BinStats
    n_correct: int
    ece: float
    interval: BootstrapInterval
    noise_floor: NoiseFloor
    temperature: float | None
    temperature_note: str | None
    band: ChangeBand | None
    #: The weight of the correct predictions (None when unweighted).
    correct_weight: float | None = None

    @property
    def n(self) -> int:
        """The group's rows (whatever their weights)."""
        return self.stats.n

    @property
    def weight(self) -> float | None:
        """The group's total weight (None when unweighted)."""
        return self.stats.total_mass if self.stats.weighted else None

    @property
    def moved(self) -> bool:
        return bool(self.band is not None and self.band.moved)

    @property
    def accuracy(self) -> float:
        correct = self.n_correct if self.correct_weight is None else self.correct_weight
        return correct / self.stats.total_mass

    @property
    def mean_confidence(self) -> float:
        return float(self.stats.sum_conf.sum() / self.stats.total_mass)

    @property
    def observed(self) -> float:
        """The observed frequency of the audited event (weighted when weighted)."""
        return float(self.stats.sum_outcome.sum() / self.stats.total_mass)

    def to_dict(self) -> dict[str, Any]:
        weighted = {} if self.weight is None else {"weight": self.weight}
        return {
            "group": group_label(self.group),
            "n": self.n,
            **weighted,
            "ece": self.ece,
            "ece_interval": self.interval.to_dict(),
            "noise_floor": self.noise_floor.to_dict(),
            "accuracy": self.accuracy,
            "mean_confidence": self.mean_confidence,
            "temperature": self.temperature,
            "temperature_note": self.temperature_note,
            "change": None if self.band is None else asdict(self.band),
            "moved": self.moved,
        }


@dataclass(frozen=True, eq=False)
class Monitor:
    """The groups in order, the reference they are compared with, and the settings."""

    by: str
    reference: str
    reference_stats: BinStats
    groups: tuple[GroupCalibration, ...]
    binning: Edges
    level: float
    family_level: float
    engine: str

    @property
    def flagged(self) -> tuple[GroupCalibration, ...]:
        return tuple(g for g in self.groups if g.moved)

    def verdict(self) -> str:
        flagged = self.flagged
        compared = sum(g.band is not None for g in self.groups)
        if not flagged:
            return (
                f"no group moved beyond noise from {self.reference} ({compared} compared; "
                f"family-wise level {self.family_level:.0%})."
            )
        names = ", ".join(str(group_label(g.group)) for g in flagged[:8])
        more = f" and {len(flagged) - 8} more" if len(flagged) > 8 else ""
        return (
            f"{len(flagged)} of {compared} groups moved beyond noise from {self.reference}: "
            f"{names}{more}; first at {group_label(flagged[0].group)}."
        )

    #: Columns of :meth:`rows` (80 columns wide) and, with ``wide``, the intervals too.
    HEADER = ("group", "N", "acc", "conf", "ECE", "floor", "T", "change", "")
    WIDE_HEADER = (
        *("group", "N", "acc", "conf", "ECE", "interval", "floor", "T", "change"),
        *("noise band", ""),
    )

    def rows(self, *, wide: bool = False) -> list[tuple[str, ...]]:
        """Rows of the table: group, N, accuracy, mean confidence, ECE (with its interval when
        ``wide``), noise floor, temperature, change from the reference (with its no-change band
        when ``wide``) and the flag. ``acc`` is the observed frequency of the audited event
        (the accuracy for top-label input, the rate of y = 1 for binary). Weighted, N shows
        the rows and the weight beside them ("120 (w 310.5)") and the means are weighted."""
        out: list[tuple[str, ...]] = []
        for g in self.groups:
            change = "reference" if g.band is None else f"{g.band.change:+.4f}"
            band = "" if g.band is None else f"[{g.band.low:+.4f}, {g.band.high:+.4f}]"
            t = "-" if g.temperature is None else f"{g.temperature:.3f}"
            n = str(g.n) if g.weight is None else f"{g.n} (w {g.weight:g})"
            head = (
                str(group_label(g.group)),
                n,
                f"{g.observed:.3f}",
                f"{g.mean_confidence:.3f}",
            )
            interval = f"[{g.interval.low:.4f}, {g.interval.high:.4f}]"
            flag = "MOVED" if g.moved else ""
            if wide:
                out.append((*head, f"{g.ece:.4f}", interval, f"{g.noise_floor.mean:.4f}", t,
                            change, band, flag))  # fmt: skip
            else:
                out.append((*head, f"{g.ece:.4f}", f"{g.noise_floor.mean:.4f}", t, change, flag))
        return out

    def _repr_html_(self) -> str:
        """What a notebook shows: the HTML report's section for this result."""
        return _display.html(self)

    def __str__(self) -> str:
        rows = [self.HEADER, *self.rows()]
        widths = [max(len(r[i]) for r in rows) for i in range(len(self.HEADER))]
        lines = [
            "  ".join(cell.rjust(w) for cell, w in zip(r, widths, strict=True)).rstrip()
            for r in rows
        ]
        lines.append(self.note())
        return "\n".join(lines + ["", self.verdict()])

    def note(self) -> str:
        """How to read the table."""
        m = self.binning.values.size - 1
        return (
            f"acc: observed frequency of the event; conf: mean confidence; M = {m} "
            f"{self.binning.strategy} bins shared by every group; floor: mean ECE of a calibrated "
            "forecaster with the group's confidences; change: ECE minus the reference's, flagged "
            f"when beyond the band of a calibration that did not move ({self.level:.2%} per "
            f"group, {self.family_level:.0%} family-wise; --wide shows the bands and the ECE "
            f"intervals, {self.groups[0].interval.level:.0%} bootstrap); T: the group's "
            "temperature"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "by": self.by,
            "reference": self.reference,
            "engine": self.engine,
            "binning": {
                "strategy": self.binning.strategy,
                "edges": self.binning.values.tolist(),
                "closed": self.reference_stats.closed,
            },
            "level_per_group": self.level,
            "family_level": self.family_level,
            "groups": [g.to_dict() for g in self.groups],
            "flagged": [group_label(g.group) for g in self.flagged],
            "verdict": self.verdict(),
        }


# ----------------------------------------------------------------------------- entry point


def monitor(
    data: Any,
    labels: Any = None,
    *,
    by: Any,
    engine: str | None = None,
    columns: Mapping[str, Any] | None = None,
    time: str | None = None,
    from_logits: bool = False,
    reference: Any = None,
    n_bins: int = 15,
    strategy: str = "uniform",
    closed: str = "right",
    edges: Any = None,
    level: float = 0.95,
    temperature: bool = True,
    n_boot: int = 1000,
    n_sims: int = 2000,
    seed: int = 0,
    pos_label: Any = None,
    sample_weight: Any = None,
) -> Monitor:
    """Audit every group of ``data`` with the same bins and flag those whose calibration moved.

    Parameters
    ----------
    data, labels
        Arrays in memory (``probs`` (N,) or (N, C) with ``labels``; ``by`` an array of N group
        values), a path, a pandas or polars DataFrame or a pyarrow Table (its columns read as
        a file's: detected, or named by ``columns``), or (``engine="duckdb"`` / ``"spark"``) a
        file, glob or Spark DataFrame.
    by : str or array
        The grouping: a column (a cohort, a segment, a model version), or ``"day"``, ``"week"``
        or ``"month"`` of the ``time`` column (weeks start on Monday).
    engine : {"memory", "duckdb", "spark"}, optional
        Where the sums are computed (memory for arrays and by default for a path).
    reference
        The group the others are compared with (default: the first, in order), or a
        calibration record (a dict, or the path of a JSON record) with the same bins.
    level : float
        Family-wise level of the flags (Bonferroni over the groups compared) and the level of
        every interval.
    temperature : bool
        Fit each group's temperature (needs logits).
    pos_label : optional
        For a 1-D forecast of arrays or a table, the label value it is the probability of (as
        in :func:`calibkit.audit`).
    sample_weight : array of shape (N,) or str, optional
        One non-negative weight per row (arrays), or the name of the weight column of a table
        or file (the same as ``columns={"weight": name}``, on every engine). Each group's
        numbers are weighted; the bands use Kish's effective counts (module docstring).

    Examples
    --------
    >>> import numpy as np, calibkit as ck
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0, 1, 6000); y = (rng.random(6000) < p).astype(int)
    >>> week = np.repeat([1, 2, 3], 2000)
    >>> y[week == 3] = (rng.random(2000) < p[week == 3] ** 3).astype(int)  # week 3 drifts
    >>> m = ck.monitor(p, y, by=week, n_boot=200, n_sims=500)
    >>> [g.moved for g in m.groups]
    [False, False, True]
    """
    where = "monitor"
    binning = Binning.checked(
        n_bins=n_bins, strategy=strategy, closed=closed, edges=edges, where=where
    )
    level = v.level(level, where=where)
    n_boot = v.positive_int(n_boot, name="n_boot", where=where)
    n_sims = v.positive_int(n_sims, name="n_sims", where=where)
    seed = v.positive_int(seed, name="seed", where=where, minimum=0)
    engine = (
        "memory"
        if engine is None
        else v.choice(engine, name="engine", allowed=("memory", "duckdb", "spark"), where=where)
    )
    from .engines.groups import group_sums, table_groups

    if isinstance(sample_weight, str):  # a column of the table or file
        if dict(columns or {}).get("weight", sample_weight) != sample_weight:
            raise InputError(
                f"{where}: sample_weight={sample_weight!r} and columns['weight']="
                f"{dict(columns or {})['weight']!r} name two weight columns; give one."
            )
        columns, sample_weight = {**dict(columns or {}), "weight": sample_weight}, None
    given = entry(
        data,
        labels,
        engine=engine,
        columns=columns,
        pos_label=pos_label,
        from_logits=from_logits,
        where=where,
        files=False,
    )
    named: Any = contextlib.nullcontext()
    by_name = None
    if given.source is not None and given.read is not None:  # a table: its columns, by name
        with retagged(where):
            by, by_name = table_groups(given.source, by, time, where)
        data, labels, columns, time = given.data, given.labels, None, None
        from_logits = given.from_logits
        named = naming_columns(given.read.columns, labels=given.labels)
        if given.read.sample_weight is not None:
            sample_weight = given.read.sample_weight
    with named:
        sums = group_sums(
            data,
            labels,
            by=by,
            engine=engine,
            columns=columns,
            time=time,
            from_logits=from_logits,
            binning=binning,
            temperature=temperature,
            where=where,
            sample_weight=sample_weight,
        )
    if by_name is not None:
        sums = replace(sums, by=by_name)
    if not sums.groups:
        raise InputError(f"{where}: the input has no rows, so no groups.")
    for key, stats in zip(sums.groups, sums.stats, strict=True):
        if stats.weighted and not stats.total_mass > 0:
            raise InputError(
                f"{where}: every weight of group {group_label(key)!r} ({stats.n} rows) is zero, "
                "so it has nothing to measure; leave the group out or give its rows weights."
            )
    correct_weights: list[float | None] = (
        list(sums.correct_weight) if sums.correct_weight else [None] * len(sums.groups)
    )
    ref_name, ref_stats = _reference(reference, sums, where)
    compared = len(sums.groups) - (1 if ref_name.startswith("group ") else 0)
    per_group = per_test_level(level, compared)
    rng = np.random.default_rng(seed)
    groups = []
    for key, stats, correct, correct_weight in zip(
        sums.groups, sums.stats, sums.n_correct, correct_weights, strict=True
    ):
        is_ref = ref_name == f"group {group_label(key)}"
        values = bootstrap_from_stats(stats, "l1", n_boot, rng)
        low, high = np.percentile(values, [50 * (1 - level), 100 - 50 * (1 - level)])
        ece = ece_from_stats(stats)
        fitted = sums.temperatures.get(key)
        groups.append(
            GroupCalibration(
                group=key,
                stats=stats,
                n_correct=correct,
                ece=ece,
                interval=BootstrapInterval(
                    ece, float(low), float(high), level, n_boot, seed, BOOTSTRAP_FROM_STATS
                ),
                noise_floor=noise_floor_from_stats(stats, n_sims=min(n_sims, 1000), seed=seed),
                temperature=fitted if isinstance(fitted, float) else None,
                temperature_note=fitted if isinstance(fitted, str) else None,
                band=None
                if is_ref
                else ece_change_band(ref_stats, stats, level=per_group, n_sims=n_sims, seed=seed),
                correct_weight=correct_weight,
            )
        )
    return Monitor(
        by=sums.by,
        reference=ref_name,
        reference_stats=ref_stats,
        groups=tuple(groups),
        binning=sums.edges,
        level=per_group,
        family_level=level,
        engine=engine,
    )


def _reference(reference: Any, sums: Any, where: str) -> tuple[str, BinStats]:
    if reference is None:
        return f"group {group_label(sums.groups[0])}", sums.stats[0]
    if isinstance(reference, (str, os.PathLike)) and str(reference).endswith(".json"):
        from .record import read_record

        reference = read_record(reference)
    if isinstance(reference, Mapping):
        from .record import record_stats

        stats = record_stats(reference)
        if stats.closed != sums.stats[0].closed or not np.array_equal(
            stats.edges, sums.stats[0].edges
        ):
            raise InputError(
                f"{where}: the reference record bins differently ({stats.n_bins} bins, "
                f"{stats.closed}-closed) from the monitor ({sums.stats[0].n_bins} bins, "
                f"{sums.stats[0].closed}-closed); monitor with the record's bins (edges=)."
            )
        data = reference.get("data")
        event = data.get("event") if isinstance(data, Mapping) else None
        if event is not None and event != sums.event:
            raise InputError(
                f"{where}: the reference record forecasts another event ({event}) than the "
                f"monitor ({sums.event}); record the reference from the same kind of predictions."
            )
        context = reference.get("context")
        name = context.get("model") if isinstance(context, Mapping) else None
        return f"the record{f' of {name}' if name else ''}", stats
    plain = [group_label(g) for g in sums.groups]
    wanted = group_label(reference)
    if wanted not in plain and isinstance(wanted, str):  # from the command line: match as text
        wanted = next((g for g in plain if str(g) == wanted), wanted)
    if wanted not in plain:
        shown = ", ".join(str(g) for g in plain[:10])
        raise InputError(f"{where}: no group {reference!r}; the groups are {shown}.")
    i = plain.index(wanted)
    return f"group {wanted}", sums.stats[i]
