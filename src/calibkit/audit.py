"""One call that runs a whole calibration audit and returns an :class:`Audit`."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _validate as v
from .engines import Binning, summarize_with_engine
from .forecasts import batches_source, is_stream
from .io import entry, naming_columns
from .measure.bins import BinStats
from .measure.distinct import (
    MAX_ROWS,
    MAX_STREAM_ROWS,
    NOT_ON_SQL,
    TOO_MANY_ROWS,
    DistinctMeasures,
    distinct_measures,
)
from .measure.distributions import normal_quantile
from .measure.errors import debiased_squared_ce_from_stats, ece_from_stats
from .measure.intervals import INTERVALS
from .measure.reliability import ReliabilityTable
from .measure.scores import BrierDecomposition, decompose_stats
from .measure.slope import CalibrationSlope
from .measure.summary import HL_GROUPS, Summary
from .measure.uncertainty import (
    BOOTSTRAP_FROM_STATS,
    BootstrapInterval,
    NoiseFloor,
    TestResult,
    bootstrap_from_stats,
    format_p,
    hosmer_lemeshow_from_stats,
    noise_floor_from_stats,
    spiegelhalter_from_stats,
)

__all__ = ["Audit", "audit", "audit_from_summary"]

#: The stages ``audit(progress=...)`` reports, in order.
AUDIT_STAGES = ("sums", "bootstrap interval", "noise floor", "tests")


@dataclass(frozen=True, eq=False)
class Audit:
    """Everything a calibration audit measured, with the settings that produced it.

    ``kind`` is ``"binary"`` (1-D input: P(label = 1), or a confidence with its 0/1 outcome) or
    ``"top-label"`` ((N, C) input reduced to max probability and correctness). The reliability
    table, ECE, MCE, the Brier decomposition and the tests concern that binary event; ``brier``
    and ``nll`` score the full forecast as given (multiclass for (N, C) input).
    """

    kind: str
    n_classes: int
    table: ReliabilityTable
    ece: float
    ece_interval: BootstrapInterval
    noise_floor: NoiseFloor
    mce: float
    rmsce: float
    debiased_squared_ce: float
    classwise_ece: float | None
    brier: float
    brier_decomposition: BrierDecomposition
    nll: float
    auc: float | None
    accuracy: float
    mean_confidence: float
    tests: tuple[TestResult, ...]
    seed: int | None
    calibration_slope: CalibrationSlope | None = None
    auc_error: float = 0.0
    notes: tuple[str, ...] = ()
    distinct: DistinctMeasures | None = None

    @property
    def n(self) -> int:
        return self.table.n

    @property
    def n_bins(self) -> int:
        return self.table.stats.n_bins

    @property
    def stats(self) -> BinStats:
        return self.table.stats

    @property
    def within_noise(self) -> bool:
        """True when ECE does not exceed the 95th percentile of the noise floor."""
        return self.ece <= self.noise_floor.p95

    def verdict(self) -> str:
        """One sentence that reads the ECE against its noise floor and, when it is beyond noise,
        the direction of the miscalibration from what measures it: for top-label confidence the
        mean confidence against the accuracy; for binary forecasts the calibration slope (spread
        too wide or too narrow) and, separately, the mean forecast against the observed rate.
        A difference within noise is called so, never given a direction."""
        floor = self.noise_floor
        if self.within_noise:
            return (
                f"ECE {self.ece:.4f} is within the noise of a perfectly calibrated forecaster "
                f"with these confidences (95th percentile {floor.p95:.4f})."
            )
        times = self.ece / floor.mean if floor.mean > 0 else math.inf
        head = (
            f"ECE {self.ece:.4f} is {times:.1f}x the noise floor ({floor.mean:.4f}; 95th "
            f"percentile {floor.p95:.4f}): miscalibrated beyond noise"
        )
        if self.kind == "top-label":
            return f"{head}, {self._on_average()}."
        return f"{head}; {self._spread()}, and {self._frequency()}."

    def in_the_large_z(self) -> float:
        """Calibration-in-the-large score test from the sums: (observed - expected number of
        events) / sqrt(sum p (1 - p)), standard normal under calibration (NaN when every
        forecast is 0 or 1)."""
        stats = self.stats
        variance = float(stats.sum_conf.sum() - stats.sum_conf_sq.sum())
        if variance <= 0.0:
            return math.nan
        return float(stats.sum_outcome.sum() - stats.sum_conf.sum()) / math.sqrt(variance)

    def _beyond(self) -> int:
        """+1 / -1 when the event happens more / less often than forecast beyond noise (at the
        audit's level), 0 when the difference is within noise."""
        z = self.in_the_large_z()
        critical = normal_quantile(0.5 + self.table.level / 2.0)
        if not math.isfinite(z) or abs(z) <= critical:
            return 0
        return 1 if z > 0 else -1

    def _on_average(self) -> str:
        observed = self.accuracy_of_event
        compared = f"mean confidence {self.mean_confidence:.4f} vs observed {observed:.4f}"
        side = self._beyond()
        if side == 0:
            return f"but not on average ({compared}, within noise): the gaps differ by bin"
        return f"{'underconfident' if side > 0 else 'overconfident'} on average ({compared})"

    def _spread(self) -> str:
        s = self.calibration_slope
        if s is None:
            return "the calibration slope was not fitted on this engine, so the spread is not read"
        if not s.defined:
            return f"the calibration slope is undefined ({s.note})"
        pct = f"{s.level * 100:g}%"
        low, high = s.slope_ci
        fit = f"calibration slope {s.slope:.3f}, {pct} CI [{low:.3f}, {high:.3f}]"
        failed = (
            f"; {s.n_failed} {'forecast' if s.n_failed == 1 else 'forecasts'} of exactly 0 or 1 "
            "failed, overconfident there"
            if s.n_failed
            else ""
        )
        if s.spread == "too wide":
            return (
                f"the forecasts are spread too wide, overconfident ({fit}; 1 = calibrated){failed}"
            )
        if s.spread == "too narrow":
            return (
                f"the forecasts are spread too narrowly, underconfident ({fit}; 1 = calibrated)"
                f"{failed}"
            )
        return (
            f"the {fit} is consistent with 1 (neither over- nor underconfident in spread){failed}"
        )

    def _frequency(self) -> str:
        observed = self.accuracy_of_event
        compared = f"mean forecast {self.mean_confidence:.4f} vs observed rate {observed:.4f}"
        side = self._beyond()
        if side == 0:
            return f"the event y = 1 is forecast as often as it happens ({compared}, within noise)"
        more = "less" if side > 0 else "more"
        return f"the event y = 1 is forecast {more} often than it happens ({compared})"

    @property
    def accuracy_of_event(self) -> float:
        """Observed frequency of the binary event the table is about."""
        return float(self.stats.sum_outcome.sum() / self.n)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary of every number and setting."""
        return {
            "kind": self.kind,
            "n": self.n,
            "n_classes": self.n_classes,
            "binning": {
                "n_bins": self.n_bins,
                "requested_bins": self.table.requested_bins,
                "strategy": self.table.strategy,
                "closed": self.table.closed,
                "edges": self.table.edges.tolist(),
            },
            "ece": self.ece,
            "ece_interval": self.ece_interval.to_dict(),
            "noise_floor": self.noise_floor.to_dict(),
            "within_noise": self.within_noise,
            "mce": self.mce,
            "rmsce": self.rmsce,
            "debiased_squared_ce": self.debiased_squared_ce,
            "classwise_ece": self.classwise_ece,
            "brier": self.brier,
            "brier_decomposition": self.brier_decomposition.to_dict(),
            "nll": _finite_or_none(self.nll),
            "auc": self.auc,
            "auc_error": self.auc_error,
            "notes": list(self.notes),
            "accuracy": self.accuracy,
            "mean_confidence": self.mean_confidence,
            "tests": [t.to_dict() for t in self.tests],
            "calibration_slope": (
                None if self.calibration_slope is None else self.calibration_slope.to_dict()
            ),
            "distinct": None if self.distinct is None else self.distinct.to_dict(),
            "in_the_large_z": _finite_or_none(self.in_the_large_z()),
            "table": self.table.to_dict(),
            "seed": self.seed,
            "verdict": self.verdict(),
        }

    def metric_rows(self) -> list[tuple[str, str, str]]:
        """(name, value, note) rows of the report, shared by the text and terminal renderers."""
        ci, floor = self.ece_interval, self.noise_floor
        pct = int(round(ci.level * 100))
        binning = (
            f"M = {self.n_bins} {self.table.strategy}, {self.table.closed}-closed, N = {self.n}"
        )
        interval = f"{pct}% CI [{ci.low:.4f}, {ci.high:.4f}]"
        if self.ece < ci.low:
            # binned ECE is biased upward; resampling adds to that bias, so at small N per bin the
            # percentile interval can lie wholly above the estimate
            interval += " (above the estimate: ECE's upward bias at this N; read the noise floor)"
        rows = [
            ("ECE", f"{self.ece:.4f}", f"{interval}; {binning}"),
            (
                "noise floor",
                f"{floor.mean:.4f}",
                f"95th pct {floor.p95:.4f}, {floor.n_sims} simulations of a calibrated forecaster",
            ),
            ("MCE", f"{self.mce:.4f}", "largest bin gap (check its count)"),
            ("RMSCE", f"{self.rmsce:.4f}", "L2 calibration error"),
            ("debiased sq. CE", f"{self.debiased_squared_ce:.6f}", "Kumar et al. 2019, same bins"),
        ]
        if self.classwise_ece is not None:
            rows.append(("class-wise ECE", f"{self.classwise_ece:.4f}", "mean over classes"))
        if self.distinct is not None:
            rows += self.distinct.ece_rows()
        brier_note = "multiclass, 0 to 2" if self.kind == "top-label" else "binary, 0 to 1"
        d = self.brier_decomposition
        rows += [
            ("Brier", f"{self.brier:.4f}", brier_note),
            (
                "  calibration",
                f"{d.calibration:.4f}",
                f"+ refinement {d.refinement:.4f} + within-bin {d.within_bin:+.4f} "
                f"= {d.brier:.4f} ({'top-label event' if self.kind == 'top-label' else 'binary'})",
            ),
            (
                "  resolution",
                f"{d.resolution:.4f}",
                f"Murphy: reliability - resolution + uncertainty {d.uncertainty:.4f}",
            ),
            ("NLL", f"{self.nll:.4f}", "log loss, natural log"),
            *(
                self.distinct.score_rows("top-label" if self.kind == "top-label" else "binary")
                if self.distinct is not None
                else []
            ),
            (
                "AUC",
                "-" if self.auc is None else f"{self.auc:.4f}",
                (
                    "confidence ranks correct above wrong"
                    if self.kind == "top-label"
                    else "P(label = 1) ranks positives above negatives"
                )
                + (f"; within +-{self.auc_error:.1e} (a logit grid)" if self.auc_error else ""),
            ),
            (
                "accuracy",
                f"{self.accuracy:.4f}",
                "argmax" if self.kind == "top-label" else "p >= 0.5 predicts 1",
            ),
            ("mean confidence", f"{self.mean_confidence:.4f}", ""),
            *self._slope_rows(),
        ]
        rows += [
            (
                t.name,
                "-" if np.isnan(t.statistic) else f"{t.statistic:.3f}",
                (format_p(t.p_value) if np.isfinite(t.p_value) else "")
                + (f", df = {t.df}" if t.df is not None else "")
                + (f"; {t.note}" if t.note else ""),
            )
            for t in self.tests
        ]
        if self.distinct is not None:
            rows += self.distinct.test_rows()
        return rows

    def _slope_rows(self) -> list[tuple[str, str, str]]:
        s = self.calibration_slope
        if s is None:
            return [("calibration slope", "-", "not fitted on this engine")]
        if not s.defined:
            return [("calibration slope", "-", f"undefined: {s.note}")]
        pct = f"{s.level * 100:g}%"
        return [
            (
                "calibration slope",
                f"{s.slope:.4f}",
                f"{pct} CI [{s.slope_ci[0]:.4f}, {s.slope_ci[1]:.4f}]; 1 = calibrated, below 1 "
                "= spread too wide" + (f"; {s.note}" if s.note else ""),
            ),
            (
                "  in the large",
                f"{s.in_the_large:+.4f}",
                f"{pct} CI [{s.in_the_large_ci[0]:.4f}, {s.in_the_large_ci[1]:.4f}]; logistic "
                "intercept at slope 1, 0 = calibrated",
            ),
        ]

    def __str__(self) -> str:
        what = (
            f"top-label forecasts of a {self.n_classes}-class model"
            if self.kind == "top-label"
            else "binary forecasts (a confidence and its 0/1 outcome)"
        )
        lines = [f"calibkit audit: {self.n} {what}", "", self.table.text(kind=self.kind), ""]
        width = max(len(r[0]) for r in self.metric_rows())
        lines += [
            f"{name:<{width}}  {value:>8}  {note}".rstrip()
            for name, value, note in self.metric_rows()
        ]
        lines += [f"note: {note}" for note in self.notes]
        lines += ["", self.verdict()]
        return "\n".join(lines)


def _finite_or_none(x: float) -> float | None:
    return x if math.isfinite(x) else None


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
    stages.next()
    floor = noise_floor_from_stats(stats, n_sims=n_sims, seed=seed)
    stages.next()
    tests = (
        spiegelhalter_from_stats(stats),
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
        brier=summary.brier_sum / n,
        brier_decomposition=decompose_stats(stats),
        nll=summary.nll_sum / n,
        auc=summary.auc,
        accuracy=summary.n_correct / n,
        mean_confidence=float(stats.sum_conf.sum() / n),
        tests=tests,
        seed=seed,
        calibration_slope=None if summary.slope is None else summary.slope.at_level(level),
        auc_error=summary.auc_error,
        notes=summary.notes + distinct_note,
        distinct=distinct,
    )
