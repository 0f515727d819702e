"""The result of a calibration audit: every number, the verdict in words, the report rows."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _display
from ..measure.bins import BinStats
from ..measure.distinct import (
    DistinctMeasures,
)
from ..measure.distributions import normal_quantile
from ..measure.reliability import ReliabilityTable
from ..measure.scores import BrierDecomposition
from ..measure.slope import CalibrationSlope
from ..measure.uncertainty import (
    BootstrapInterval,
    NoiseFloor,
    TestResult,
    format_p,
)

__all__ = ["Audit"]


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
        return float(self.stats.sum_outcome.sum() / self.stats.total_mass)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary of every number and setting."""
        return {
            "kind": self.kind,
            "n": self.n,
            **({"total_weight": self.stats.total_mass} if self.stats.weighted else {}),
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

    def _repr_html_(self) -> str:
        """What a notebook shows: the HTML report's section for this result."""
        return _display.html(self)

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
