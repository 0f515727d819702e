"""One call that runs a whole calibration audit and returns an :class:`Audit`."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from . import _validate as v
from .forecasts import softmax, top_label
from .measure.bins import BinStats
from .measure.errors import classwise_ece, debiased_squared_ce_from_stats, ece_from_stats
from .measure.intervals import INTERVALS
from .measure.ranking import auc_of
from .measure.reliability import ReliabilityTable, make_table
from .measure.scores import BrierDecomposition, brier, decompose_stats, nll
from .measure.slope import CalibrationSlope, slope_of
from .measure.summary import HL_GROUPS, Summary
from .measure.uncertainty import (
    BOOTSTRAP_FROM_STATS,
    BootstrapInterval,
    NoiseFloor,
    TestResult,
    bootstrap_ece,
    bootstrap_from_stats,
    format_p,
    hosmer_lemeshow,
    hosmer_lemeshow_from_stats,
    noise_floor,
    noise_floor_from_stats,
    spiegelhalter_from_stats,
)

__all__ = ["Audit", "audit", "audit_from_summary"]

#: The stages ``audit(progress=...)`` reports, in order.
AUDIT_STAGES = ("reliability table", "bootstrap interval", "noise floor", "scores", "tests")


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
        critical = NormalDist().inv_cdf(0.5 + self.table.level / 2.0)
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
            "accuracy": self.accuracy,
            "mean_confidence": self.mean_confidence,
            "tests": [t.to_dict() for t in self.tests],
            "calibration_slope": (
                None if self.calibration_slope is None else self.calibration_slope.to_dict()
            ),
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
        rows = [
            ("ECE", f"{self.ece:.4f}", f"{pct}% CI [{ci.low:.4f}, {ci.high:.4f}]; {binning}"),
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
            (
                "AUC",
                "-" if self.auc is None else f"{self.auc:.4f}",
                "confidence ranks correct above wrong"
                if self.kind == "top-label"
                else "P(label = 1) ranks positives above negatives",
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
) -> Audit:
    """Audit the calibration of a model's predictions.

    Parameters
    ----------
    probs : array of shape (N,) or (N, C)
        1-D: P(label = 1) for binary labels, or a confidence with ``labels`` as its 0/1 outcome.
        2-D: class probabilities (rows sum to 1), audited top-label. With ``from_logits=True``,
        scores/logits instead (sigmoid for 1-D, softmax for 2-D).
    labels : array of shape (N,)
        0/1 for 1-D input, class indices 0..C-1 for 2-D input.
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
    """
    where = "audit"
    if labels is None and (source := batches_source(probs)) is not None:
        probs = source
    if engine is not None or _is_stream(probs):
        from .engines import audit_with_engine

        return audit_with_engine(
            probs,
            labels,
            engine=engine,
            columns=columns,
            from_logits=from_logits,
            n_bins=n_bins,
            strategy=strategy,
            closed=closed,
            edges=edges,
            interval=interval,
            level=level,
            n_boot=n_boot,
            n_sims=n_sims,
            seed=seed,
            progress=progress,
        )
    if columns is not None:
        raise v.InputError(
            f"{where}: columns= names the columns of a file or table read by an engine; "
            "with arrays in memory, pass the arrays themselves (or engine='duckdb')."
        )
    if labels is None:
        raise v.InputError(
            f"{where}: pass the labels with the predictions (or a stream of (probs, labels) "
            "chunks, or a file with engine=)."
        )
    seed = v.positive_int(seed, name="seed", where=where, minimum=0)
    f = prepare(probs, labels, from_logits=from_logits, where=where)
    kind, n_classes, conf, outcome, p, y = f.kind, f.n_classes, f.conf, f.outcome, f.p, f.y
    x = f.scores
    accuracy = float(np.mean(f.correct))
    cw = (
        classwise_ece(p, y, n_bins=n_bins, strategy=strategy, closed=closed)
        if kind == "top-label"
        else None
    )

    stages = iter(AUDIT_STAGES)

    def step() -> None:
        if progress is not None:
            stage = next(stages, "done")
            progress(
                stage,
                AUDIT_STAGES.index(stage) if stage != "done" else len(AUDIT_STAGES),
                len(AUDIT_STAGES),
            )

    step()
    table = make_table(
        conf,
        outcome,
        n_bins=n_bins,
        strategy=strategy,
        closed=closed,
        edges=edges,
        interval=interval,
        level=level,
        where=where,
    )
    stats = table.stats
    same_bins = stats.edges  # the noise floor and the bootstrap use the table's exact bins
    score_input = x if from_logits else p
    step()
    ece_interval = bootstrap_ece(
        conf, outcome, edges=same_bins, closed=closed, n_boot=n_boot, level=level, seed=seed
    )
    step()
    floor = noise_floor(conf, edges=same_bins, closed=closed, n_sims=n_sims, seed=seed)
    step()
    scores = (
        brier(p, y),
        nll(score_input, y, from_logits=from_logits),
        _auc_or_none(conf, outcome),
    )
    step()
    tests = (spiegelhalter_from_stats(stats), hosmer_lemeshow(conf, outcome))
    step()
    return Audit(
        kind=kind,
        n_classes=n_classes,
        table=table,
        ece=ece_from_stats(stats),
        ece_interval=ece_interval,
        noise_floor=floor,
        mce=ece_from_stats(stats, norm="max"),
        rmsce=ece_from_stats(stats, norm="l2"),
        debiased_squared_ce=debiased_squared_ce_from_stats(stats),
        classwise_ece=cw,
        brier=scores[0],
        brier_decomposition=decompose_stats(stats),
        nll=scores[1],
        auc=scores[2],
        accuracy=accuracy,
        mean_confidence=float(np.mean(conf)),
        tests=tests,
        seed=seed,
        calibration_slope=slope_of(conf, outcome, level=level),
    )


@dataclass(frozen=True, eq=False)
class Prepared:
    """Validated input reduced to the audit's event: ``conf`` and ``outcome`` (the binary event
    of the table), ``p`` the forecast as probabilities, ``y`` the labels, ``correct`` whether
    each prediction was right, ``scores`` the input as given (logits stay logits)."""

    kind: str
    n_classes: int
    scores: np.ndarray
    p: np.ndarray
    y: np.ndarray
    conf: np.ndarray
    outcome: np.ndarray
    correct: np.ndarray
    from_logits: bool


def prepare(probs: Any, labels: Any, *, from_logits: bool, where: str) -> Prepared:
    """Check the input and reduce it to the audit's binary event (shared by every engine that
    sees arrays: memory, and each chunk of a stream)."""
    x = v.to_numpy(probs, name="probs", where=where)
    if x.ndim == 2:
        if from_logits:
            p = softmax(v.scores(x, where=where, ndim=2))
        else:
            p = v.probabilities(x, where=where)
        y = v.labels(labels, n=p.shape[0], n_classes=p.shape[1], where=where)
        conf, outcome = top_label(p, y)
        return Prepared("top-label", p.shape[1], x, p, y, conf, outcome, outcome, from_logits)
    if x.ndim == 1:
        if from_logits:
            from .forecasts import sigmoid

            conf = sigmoid(v.scores(x, where=where, ndim=1))
        else:
            conf = v.confidence(x, where=where, name="probs").astype(np.float64, copy=False)
        y = v.labels(labels, n=conf.shape[0], n_classes=2, where=where)
        outcome = y == 1
        pred = x >= 0 if from_logits else conf >= 0.5
        return Prepared("binary", 2, x, conf, y, conf, outcome, pred == outcome, from_logits)
    raise v.InputError(f"{where}: probs must be 1-D (binary) or 2-D (N, C), got shape {x.shape}.")


def _is_stream(data: Any) -> bool:
    """An iterator (or a callable that makes one) of chunks, not an array-like; or a list of
    ``(probs, labels)`` batches (see :func:`batches_source`)."""
    if callable(data) or batches_source(data) is not None:
        return True
    return isinstance(data, Iterable) and iter(data) is data


def batches_source(data: Any) -> Callable[[], Any] | None:
    """A list or tuple of ``(probs, labels)`` pairs (batches collected in a loop) as a callable
    stream that can be read twice (so quantile edges stay exact); None for anything else."""
    if not isinstance(data, (list, tuple)) or not data:
        return None
    if not all(isinstance(b, (tuple, list)) and len(b) == 2 for b in data):
        return None
    if all(np.ndim(b[0]) == 0 for b in data):  # a list of (p, y) number pairs, not batches
        return None
    batches = list(data)
    return lambda: iter(batches)


def audit_from_summary(
    summary: Summary,
    *,
    interval: str | None = "wilson",
    level: float = 0.95,
    n_boot: int = 1000,
    n_sims: int = 1000,
    seed: int = 0,
) -> Audit:
    """The audit computed from a :class:`~calibkit.measure.summary.Summary` alone: what every
    engine (streaming, DuckDB, Spark) returns. The ECE interval is the bootstrap of the bin sums
    and the noise floor simulates each bin's outcome total from its sums (their ``method``)."""
    where = "audit"
    seed = v.positive_int(seed, name="seed", where=where, minimum=0)
    n_boot = v.positive_int(n_boot, name="n_boot", where=where)
    n_sims = v.positive_int(n_sims, name="n_sims", where=where)
    if interval is not None:
        interval = v.choice(interval, name="interval", allowed=INTERVALS, where=where)
    level = v.level(level, where=where)
    stats = summary.stats
    if stats.n == 0:
        raise v.InputError(f"{where}: no forecasts to audit (the input held no rows).")
    rng = np.random.default_rng(seed)
    values = bootstrap_from_stats(stats, "l1", n_boot, rng)
    alpha = 1.0 - level
    low, high = np.percentile(values, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    ece = ece_from_stats(stats)
    n = stats.n
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
        noise_floor=noise_floor_from_stats(stats, n_sims=n_sims, seed=seed),
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
        tests=(
            spiegelhalter_from_stats(stats),
            hosmer_lemeshow_from_stats(summary.deciles, requested=HL_GROUPS),
        ),
        seed=seed,
        calibration_slope=summary.slope,
    )


def _auc_or_none(conf: np.ndarray, outcome: np.ndarray) -> float | None:
    if outcome.all() or not outcome.any():
        return None  # AUC needs both outcomes; the report shows "-"
    return auc_of(conf, np.asarray(outcome, dtype=bool))
