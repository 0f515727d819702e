"""One call that runs a whole calibration audit and returns an :class:`Audit`: validate once,
reduce to a forecast, let the engine sum it, compute the audit from the sums."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .. import _validate as v
from ..engines import Binning, summarize_with_engine
from ..forecasts import batches_source, is_stream
from ..io import entry, naming_columns
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

__all__ = ["AUDIT_STAGES", "audit", "audit_from_summary"]

AUDIT_STAGES = ("sums", "bootstrap interval", "noise floor", "tests")


def audit(
    probs: Any,
    labels: Any = None,
    *,
    from_logits: bool = False,
    n_bins: int = 15,
    strategy: str = "uniform",
    closed: str = "right",
    edges: Any = None,
    interval: str | None = "wilson",
    level: float = 0.95,
    n_boot: int = 1000,
    n_sims: int = 1000,
    seed: int = 0,
    progress: Callable[[str, int, int], None] | None = None,
    engine: str | None = None,
    columns: Mapping[str, Any] | None = None,
    pos_label: Any = None,
    sample_weight: Any = None,
) -> Audit:
    """Audit the calibration of a model's predictions.

    Parameters
    ----------
    probs : array of shape (N,) or (N, C), or a table
        1-D: P(label = 1) for binary labels, or a confidence with ``labels`` as its 0/1 outcome.
        2-D: class probabilities (rows sum to 1), audited top-label. With ``from_logits=True``,
        scores/logits instead (sigmoid for 1-D, softmax for 2-D). A pandas or polars DataFrame
        or a pyarrow Table without ``labels`` is read like a prediction file: its columns are
        detected by the rules of :mod:`calibkit.io` (``prob_*``, ``logit_*``, ``label``,
        ``y_true``, ...) or named by ``columns``, and every message names the column and row.
    labels : array of shape (N,)
        0/1 for 1-D input, class indices 0..C-1 for 2-D input; with ``pos_label``, any two
        values (text too).
    pos_label : optional
        For a 1-D forecast, the label value it is the probability of: the outcome is
        ``labels == pos_label``. Labels written as text (``"benign"``/``"malignant"``) need it;
        without it the message lists their values.
    n_bins, strategy, closed, edges
        Binning of the reliability table and every binned measure (see :func:`reliability_bins`).
    interval, level
        Per-bin interval and the level of every interval.
    n_boot, n_sims, seed
        Bootstrap resamples for the ECE interval, simulations for its noise floor, and the seed
        of both (same seed, same numbers).
    progress : callable, optional
        Called as ``progress(stage, done, total)`` before each of the audit's stages and once at
        the end (``done == total``), e.g. to drive a progress bar on large inputs.
    engine : {"memory", "stream", "duckdb", "spark"}, optional
        Where the sums are computed (see :mod:`calibkit.engines`). Arrays default to
        ``"memory"``; an iterator of ``(probs, labels)`` chunks, or a callable returning one,
        to ``"stream"`` (never holding more than one chunk). With ``"duckdb"`` ``probs`` is a
        Parquet/CSV path or glob, with ``"spark"`` a Spark DataFrame (or a path); ``columns``
        names the columns as :func:`calibkit.io.read_predictions` takes them (``label``,
        ``probs``, ``logits``, ``confidence``, ``correct``, ``prediction``), detected when
        omitted. Every engine gives the in-memory numbers up to float rounding; the interval
        and the noise floor come from the bin sums there (their ``method`` says so).
    sample_weight : array of shape (N,) or str, optional
        One non-negative weight per row (arrays), or the name of the weight column of a table
        or file (the same as ``columns={"weight": name}``). Every measure is weighted: with
        integer weights, the numbers of the rows repeated; intervals, noise floor and tests
        use Kish's effective sample size (see docs/weights.md). The table keeps the raw count
        of each bin beside its weight.

    Examples
    --------
    >>> import numpy as np, calibkit as ck
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0, 1, 500); y = (rng.random(500) < p).astype(int)
    >>> a = ck.audit(p, y, n_boot=200, n_sims=200)
    >>> a.kind, a.n, a.n_bins, a.within_noise
    ('binary', 500, 15, True)

    A DataFrame with its own column names, labels written as words:

    >>> import pandas as pd
    >>> df = pd.DataFrame({"id": range(500), "p_spam": p, "truth": np.where(y, "spam", "ham")})
    >>> b = ck.audit(df, columns={"probs": "p_spam", "label": "truth"}, pos_label="spam",
    ...              n_boot=200, n_sims=200)
    >>> b.ece == a.ece
    True
    """
    where = "audit"
    if labels is None and (source := batches_source(probs)) is not None:
        probs = source
    if isinstance(sample_weight, str):  # a column of the table or file
        if dict(columns or {}).get("weight", sample_weight) != sample_weight:
            raise v.InputError(
                f"{where}: sample_weight={sample_weight!r} and columns['weight']="
                f"{dict(columns or {})['weight']!r} name two weight columns; give one."
            )
        columns, sample_weight = {**dict(columns or {}), "weight": sample_weight}, None
    given = entry(
        probs,
        labels,
        engine=engine,
        columns=columns,
        pos_label=pos_label,
        from_logits=from_logits,
        where=where,
    )
    probs, labels, columns = given.data, given.labels, given.columns
    from_logits = given.from_logits
    if given.read is not None and given.read.sample_weight is not None:
        sample_weight = given.read.sample_weight
    binning = Binning.checked(
        n_bins=n_bins, strategy=strategy, closed=closed, edges=edges, where=where
    )
    checked = _settings(interval=interval, level=level, n_boot=n_boot, n_sims=n_sims, seed=seed)
    in_memory = engine in (None, "memory") and not is_stream(probs)
    stages = _Stages(progress if in_memory else None)
    stages.next()
    named = (
        naming_columns(given.read.columns, labels=given.labels)
        if given.read is not None
        else contextlib.nullcontext()
    )
    with named:
        summary = summarize_with_engine(
            probs,
            labels,
            engine=engine,
            columns=columns,
            from_logits=from_logits,
            binning=binning,
            where=where,
            progress=None if in_memory else progress,
            sample_weight=sample_weight,
        )
    return audit_from_summary(summary, **checked, stages=stages)


class _Stages:
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


def _settings(
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
    stages: _Stages | None = None,
) -> Audit:
    """The audit computed from a :class:`~calibkit.measure.summary.Summary` alone: what
    :func:`audit` returns for every engine (memory included), so engines can differ only in the
    rounding of their sums. The ECE interval is the bootstrap of the bin sums and the noise floor
    simulates each bin's outcome total from its sums (their ``method`` says so)."""
    stages = stages or _Stages(None)
    checked = _settings(interval=interval, level=level, n_boot=n_boot, n_sims=n_sims, seed=seed)
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
    mass = summary.mass
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
        brier=summary.brier_sum / mass,
        brier_decomposition=decompose_stats(stats),
        nll=summary.nll_sum / mass,
        auc=summary.auc,
        accuracy=summary.accuracy,
        mean_confidence=float(stats.sum_conf.sum() / mass),
        tests=tests,
        seed=seed,
        calibration_slope=None if summary.slope is None else summary.slope.at_level(level),
        auc_error=summary.auc_error,
        notes=summary.notes + distinct_note,
        distinct=distinct,
    )
