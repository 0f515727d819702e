"""The audit computed from the sums an engine gives (:class:`~calibkit.measure.summary.Summary`):
every engine's audit, and each group's in an audit by group."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _validate as v
from ..measure.distinct import (
    MAX_ROWS,
    MAX_STREAM_ROWS,
    NOT_ON_SQL,
    TOO_MANY_ROWS,
    distinct_measures,
)
from ..measure.errors import debiased_squared_ce_from_stats, ece_from_stats
from ..measure.intervals import INTERVALS
from ..measure.reliability import ReliabilityTable
from ..measure.scores import decompose_stats
from ..measure.summary import HL_GROUPS, Summary
from ..measure.uncertainty import (
    BOOTSTRAP_FROM_STATS,
    BootstrapInterval,
    bootstrap_from_stats,
    hosmer_lemeshow_from_stats,
    noise_floor_from_stats,
    spiegelhalter_from_stats,
)
from .result import Audit

__all__ = ["AUDIT_STAGES", "Stages", "audit_from_summary", "checked_settings"]

AUDIT_STAGES = ("sums", "bootstrap interval", "noise floor", "tests")


class Stages:
    """Reports the in-memory audit's stages (:data:`AUDIT_STAGES`) to a progress callback; an
    engine reports its own."""

    def __init__(self, progress: Callable[[str, int, int], None] | None) -> None:
        self.progress, self.done = progress, 0

    def next(self) -> None:
        if self.progress is None:
            return
        total = len(AUDIT_STAGES)
        stage = AUDIT_STAGES[self.done] if self.done < total else "done"
        self.progress(stage, self.done, total)
        self.done += 1


def checked_settings(
    *, interval: str | None, level: float, n_boot: int, n_sims: int, seed: int
) -> dict[str, Any]:
    where = "audit"
    return {
        "interval": None
        if interval is None
        else v.choice(interval, name="interval", allowed=INTERVALS, where=where),
        "level": v.level(level, where=where),
        "n_boot": v.positive_int(n_boot, name="n_boot", where=where),
        "n_sims": v.positive_int(n_sims, name="n_sims", where=where),
        "seed": v.positive_int(seed, name="seed", where=where, minimum=0),
    }


def audit_from_summary(
    summary: Summary,
    *,
    interval: str | None = "wilson",
    level: float = 0.95,
    n_boot: int = 1000,
    n_sims: int = 1000,
    seed: int = 0,
    stages: Stages | None = None,
) -> Audit:
    """The audit computed from a :class:`~calibkit.measure.summary.Summary` alone: what
    :func:`audit` returns for every engine (memory included), so engines can differ only in the
    rounding of their sums. The ECE interval is the bootstrap of the bin sums and the noise floor
    simulates each bin's outcome total from its sums (their ``method`` says so)."""
    stages = stages or Stages(None)
    checked = checked_settings(
        interval=interval, level=level, n_boot=n_boot, n_sims=n_sims, seed=seed
    )
    interval, level = checked["interval"], checked["level"]
    n_boot, n_sims, seed = checked["n_boot"], checked["n_sims"], checked["seed"]
    stats = summary.stats
    if stats.n == 0:
        raise v.InputError("audit: no forecasts to audit (the input held no rows).")
    stages.next()
    rng = np.random.default_rng(seed)
    values = bootstrap_from_stats(stats, "l1", n_boot, rng)
    alpha = 1.0 - level
    low, high = np.percentile(values, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    ece = ece_from_stats(stats)
    n = stats.n
    stages.next()
    floor = noise_floor_from_stats(stats, n_sims=n_sims, seed=seed)
    stages.next()
    tests = (
        spiegelhalter_from_stats(stats, variance=summary.spiegelhalter_variance),
        hosmer_lemeshow_from_stats(summary.deciles, requested=HL_GROUPS),
    )
    distinct = None if summary.pooled is None else distinct_measures(summary.pooled)
    distinct_note: tuple[str, ...] = ()
    if summary.pooled is None:
        why = NOT_ON_SQL if summary.engine in ("duckdb", "spark") else TOO_MANY_ROWS
        limit = MAX_STREAM_ROWS if summary.engine == "stream" else MAX_ROWS
        distinct_note = (why.format(engine=summary.engine, n=n, limit=limit),)
    stages.next()
    return Audit(
        kind=summary.kind,
        n_classes=summary.n_classes,
        table=ReliabilityTable(
            stats, summary.binning.strategy, summary.binning.requested, interval, level
        ),
        ece=ece,
        ece_interval=BootstrapInterval(
            ece, float(low), float(high), level, n_boot, seed, BOOTSTRAP_FROM_STATS
        ),
        noise_floor=floor,
        mce=ece_from_stats(stats, norm="max"),
        rmsce=ece_from_stats(stats, norm="l2"),
        debiased_squared_ce=debiased_squared_ce_from_stats(stats),
        classwise_ece=(
            float(np.mean([ece_from_stats(s) for s in summary.classwise]))
            if summary.classwise
            else None
        ),
        brier=summary.brier_sum / summary.mass,
        brier_decomposition=decompose_stats(stats),
        nll=summary.nll_sum / summary.mass,
        auc=summary.auc,
        accuracy=summary.accuracy,
        mean_confidence=float(stats.sum_conf.sum() / summary.mass),
        tests=tests,
        seed=seed,
        calibration_slope=None if summary.slope is None else summary.slope.at_level(level),
        auc_error=summary.auc_error,
        notes=summary.notes + distinct_note,
        distinct=distinct,
    )
