"""The audit's measures that need every distinct forecast rather than bin sums: the CORP
decompositions of the Brier score and the log loss (Dimitriadis, Gneiting and Jordan 2021), the
smooth ECE (Blasiok and Nakkiran 2023) and the KS and Kuiper tests on the cumulative gap (Gupta et
al. 2021).

They are computed from the forecasts pooled by value (:class:`~calibkit.measure.pooled.Pooled`:
each distinct forecast with its count and events), which the memory and stream engines hold; the
SQL engines do not, and the audit then says so in its notes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .corp import CorpResult, corp_from_pooled
from .cumulative import CumulativeCalibration, cumulative_from_pooled
from .pooled import Pooled
from .smooth import SmoothECE, smooth_ece_from_pooled

__all__ = [
    "MAX_ROWS",
    "MAX_STREAM_ROWS",
    "NOT_ON_SQL",
    "TOO_MANY_ROWS",
    "DistinctMeasures",
    "distinct_measures",
    "merge_pooled",
]

#: The audit computes these measures for at most this many forecasts: they need the forecasts
#: pooled by value (a sort, or a merge of the exact AUC's order) and a few passes over every
#: distinct one (about half the rest of the audit's time at 1e6); above it the audit says so
#: and the functions themselves (``ck.corp``, ``ck.smooth_ece``, ``ck.ks_test``) take any N.
MAX_ROWS = 5_000_000

#: A stream keeps its distinct forecasts for at most this many rows (a few MB), so that its
#: memory stays bounded whatever its length.
MAX_STREAM_ROWS = 200_000

TOO_MANY_ROWS = (
    "CORP decompositions, smooth ECE and the KS/Kuiper tests are computed for up to {limit:,} "
    "forecasts on the {engine} engine (each sorts them); call ck.corp, ck.smooth_ece and "
    "ck.ks_test on the arrays for these {n:,}"
)

#: Why a SQL engine's audit has none of these measures.
NOT_ON_SQL = (
    "CORP decompositions, smooth ECE and the KS/Kuiper tests need every distinct forecast, "
    "which the {engine} engine does not collect: audit with engine='memory' or 'stream' for them"
)


@dataclass(frozen=True)
class DistinctMeasures:
    """CORP (without bands: :func:`calibkit.corp` draws them), smooth ECE and the cumulative
    gap's tests, from one pooling of the forecasts."""

    corp: CorpResult
    smooth: SmoothECE
    cumulative: CumulativeCalibration

    def ece_rows(self) -> list[tuple[str, str, str]]:
        """Report rows beside the binned ECE."""
        s = self.smooth
        return [
            (
                "smooth ECE",
                f"{s.value:.4f}",
                f"Blasiok and Nakkiran 2023, Gaussian kernel of width {s.bandwidth:.3g}, no bins",
            ),
            (
                "KS calib. error",
                f"{self.cumulative.ks_error:.4f}",
                "largest cumulative gap (Gupta et al. 2021), no bins",
            ),
        ]

    def score_rows(self, event: str) -> list[tuple[str, str, str]]:
        """Report rows of what recalibration would remove (CORP's MCB) from the score of
        ``event`` (the binary forecast, or the top-label event)."""
        rows = []
        for d in (self.corp.brier, self.corp.log_loss):
            if math.isfinite(d.miscalibration):
                share = "" if math.isnan(d.removable) else f"{d.removable:.1%} of "
                note = (
                    f"what isotonic recalibration removes: {share}the {event} {d.name} "
                    f"{d.score:.4f} (CORP; DSC {d.discrimination:.4f}, UNC {d.uncertainty:.4f})"
                )
                value = f"{d.miscalibration:.4f}"
            else:
                note, value = f"{event} {d.name}: {d.note}", "inf"
            rows.append((f"  {d.name} MCB", value, note))
        return rows

    def test_rows(self) -> list[tuple[str, str, str]]:
        """Report rows of the KS and Kuiper tests."""
        out = []
        for name, t in (("KS test", self.cumulative.ks), ("Kuiper test", self.cumulative.kuiper)):
            p = (
                "p -"
                if math.isnan(t.p_value)
                else ("p < 1e-300" if t.p_value < 1e-300 else f"p = {t.p_value:.3g}")
            )
            stat = "-" if math.isnan(t.statistic) else f"{t.statistic:.3f}"
            out.append((name, stat, f"{p}; cumulative gap / its s.d. under calibration"))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "brier_decomposition": self.corp.brier.to_dict(),
            "log_loss_decomposition": self.corp.log_loss.to_dict(),
            "pav_blocks": len(self.corp.blocks),
            "smooth_ece": {"value": self.smooth.value, "bandwidth": self.smooth.bandwidth},
            "ks_calibration_error": self.cumulative.ks_error,
            "ks_test": self.cumulative.ks.to_dict(),
            "kuiper_test": self.cumulative.kuiper.to_dict(),
        }


def distinct_measures(pooled: Pooled) -> DistinctMeasures:
    """The measures of pooled forecasts.

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.measure.pooled import pool_ties
    >>> m = distinct_measures(pool_ties(np.array([0.4, 0.3, 0.2, 0.1, 0.5, 0.9]),
    ...                                 np.array([0, 0, 0, 1, 1, 1])))
    >>> round(m.corp.brier.miscalibration, 7), m.corp.brier.uncertainty
    (0.1016667, 0.25)
    """
    return DistinctMeasures(
        corp=corp_from_pooled(pooled, n_boot=0),
        smooth=smooth_ece_from_pooled(pooled),
        cumulative=cumulative_from_pooled(pooled),
    )


def merge_pooled(parts: list[Pooled]) -> Pooled:
    """Pooled forecasts of several batches as one (the same as pooling all rows at once;
    weighted when any batch is: an unweighted batch's rows weigh 1).

    >>> a = Pooled(np.array([0.2, 0.7]), np.array([1, 2]), np.array([0.0, 1.0]))
    >>> b = Pooled(np.array([0.7, 0.9]), np.array([1, 1]), np.array([1.0, 1.0]))
    >>> m = merge_pooled([a, b]); m.x.tolist(), m.count.tolist(), m.hits.tolist()
    ([0.2, 0.7, 0.9], [1, 3, 1], [0.0, 2.0, 1.0])
    """
    if len(parts) == 1:
        return parts[0]
    x = np.concatenate([p.x for p in parts])
    count = np.concatenate([p.count for p in parts])
    hits = np.concatenate([p.hits for p in parts])
    order = np.argsort(x, kind="stable")
    x, count, hits = x[order], count[order], hits[order]
    new = np.empty(x.size, dtype=bool)
    new[:1] = True
    np.not_equal(x[1:], x[:-1], out=new[1:])
    starts = np.flatnonzero(new)
    if not any(p.weighted for p in parts):
        return Pooled(x[starts], np.add.reduceat(count, starts), np.add.reduceat(hits, starts))
    weight = np.concatenate([p.mass for p in parts])[order]
    weight_sq = np.concatenate([p.mass_sq for p in parts])[order]
    return Pooled(
        x[starts],
        np.add.reduceat(count, starts),
        np.add.reduceat(hits, starts),
        weight=np.add.reduceat(weight, starts),
        weight_sq=np.add.reduceat(weight_sq, starts),
    )
