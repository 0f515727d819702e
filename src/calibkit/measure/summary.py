"""What an audit needs from a set of forecasts, as sums: the :class:`Summary` every engine makes.

The in-memory engine (:func:`summarize`), the streaming engine, DuckDB and Spark all produce a
:class:`Summary`; the audit is then computed from it by one function
(:func:`calibkit.audit.audit_from_summary`), so the engines cannot disagree on anything but the
sums themselves. Every part adds: the summary of two chunks is the sum of their summaries.

For a one-pass stream, the ranking (AUC) and any quantile edges come from a fine grid on the
logit scale (:class:`RankGrid`, :func:`fine_edges`), and the summary says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from .. import _kernels
from .._errors import InputError
from .bins import BinStats, Edges, quantile_levels
from .pooled import Pooled
from .slope import CalibrationSlope

__all__ = ["RankGrid", "Summary", "coarsen", "fine_edges", "grid_index"]

#: Kinds of forecast a summary describes (as :class:`calibkit.audit.Audit`).
KINDS = ("binary", "top-label")
#: Equal-mass groups of the Hosmer-Lemeshow test.
HL_GROUPS = 10
#: Logit grids of streams: |logit| clipped at LOGIT_SPAN, so many cells per unit of logit, for
#: the AUC (RankGrid) and for the fine bins that locate quantile edges.
LOGIT_SPAN = 37.0
AUC_STEPS = 1 << 13
FINE_STEPS = 1 << 10


def grid_index(confidence: np.ndarray, steps: int = AUC_STEPS) -> np.ndarray:
    """Cell of each confidence on a logit grid (monotone: a larger confidence never gets a
    smaller cell). Exact 0 and 1 fall in the first and last cells."""
    c = np.asarray(confidence, dtype=np.float64)
    with np.errstate(divide="ignore"):
        t = np.log(c) - np.log1p(-c)
    t = np.clip(t, -LOGIT_SPAN, LOGIT_SPAN)
    return np.rint((t + LOGIT_SPAN) * steps).astype(np.int64)


def grid_cells(steps: int) -> int:
    return int(2 * LOGIT_SPAN * steps) + 1


def fine_edges() -> np.ndarray:
    """Bin edges on [0, 1] at the midpoints of a logit grid (to locate quantile edges)."""
    t = (np.arange(grid_cells(FINE_STEPS) - 1) + 0.5) / FINE_STEPS - LOGIT_SPAN
    inner = 1.0 / (1.0 + np.exp(-t))
    values = np.unique(np.concatenate(([0.0], inner, [1.0])))
    return values


@dataclass(frozen=True, eq=False)
class RankGrid:
    """Counts of positive and negative outcomes per cell of the logit grid (mergeable); with
    sample weights, the sums of their weights (float64).

    The AUC from it counts a pair in one cell as a tie (one half); the exact AUC lies within
    ``error`` of it (half the share of positive-negative pairs that share a cell). Weighted,
    a pair counts w_i w_j, as in :func:`calibkit.auc` with ``sample_weight``.

    Examples
    --------
    >>> import numpy as np
    >>> from calibkit.measure.summary import RankGrid
    >>> g = RankGrid.of(np.array([0.1, 0.4, 0.8]), np.array([0, 1, 1]),
    ...                 sample_weight=np.array([3.0, 1.0, 1.0]))
    >>> float(g.positives.sum()), float(g.negatives.sum()), g.auc()
    (2.0, 3.0, (1.0, 0.0))
    """

    positives: np.ndarray
    negatives: np.ndarray

    @classmethod
    def of(
        cls,
        confidence: np.ndarray,
        outcome: np.ndarray,
        *,
        sample_weight: np.ndarray | None = None,
    ) -> RankGrid:
        cells = grid_index(confidence)
        hit = np.asarray(outcome, dtype=bool)
        size = grid_cells(AUC_STEPS)
        if sample_weight is not None:
            w = np.asarray(sample_weight, dtype=np.float64)
            return cls(
                np.bincount(cells[hit], weights=w[hit], minlength=size),
                np.bincount(cells[~hit], weights=w[~hit], minlength=size),
            )
        return cls(
            np.bincount(cells[hit], minlength=size), np.bincount(cells[~hit], minlength=size)
        )

    def __add__(self, other: RankGrid) -> RankGrid:
        return RankGrid(self.positives + other.positives, self.negatives + other.negatives)

    def auc(self) -> tuple[float | None, float]:
        """(AUC, error bound); (None, 0) when one outcome never occurs."""
        pos = self.positives.astype(np.float64)
        neg = self.negatives.astype(np.float64)
        n_pos, n_neg = pos.sum(), neg.sum()
        if n_pos == 0 or n_neg == 0:
            return None, 0.0
        below = np.cumsum(neg) - neg
        pairs = n_pos * n_neg
        return float(np.sum(pos * (below + neg / 2.0)) / pairs), float(
            np.sum(pos * neg) / (2.0 * pairs)
        )


@dataclass(frozen=True, eq=False)
class Summary:
    """Everything an audit uses, as sums over the forecasts.

    ``stats`` are the table's bins (``binning`` says how they were made), ``deciles`` the
    Hosmer-Lemeshow groups, ``classwise`` one :class:`BinStats` per class (top-label input only);
    ``n_correct`` counts correct predictions (argmax for top-label, p >= 0.5 for binary),
    ``brier_sum`` and ``nll_sum`` add the full forecast's scores (``nll_sum`` is inf when a true
    class had probability 0). ``auc`` is exact when ``auc_error`` is 0, else within it.
    ``slope`` is the calibration slope fit (by Newton steps over the data, so not a sum: None
    where the engine did not fit it). ``pooled`` holds each distinct forecast with its count and
    events (None where the engine does not collect them: the SQL engines). ``notes`` say where an
    approximation was used.

    With sample weights, ``stats`` and ``deciles`` hold weighted sums, ``brier_sum`` and
    ``nll_sum`` are sums of weight times score, ``correct_weight`` is the weight of the correct
    predictions (``n_correct`` stays their raw count), ``spiegelhalter_variance`` is
    sum w^2 p (1 - p)(1 - 2p)^2 (which the bins do not hold), and every mean divides by
    :attr:`mass`.
    """

    kind: str
    n_classes: int
    binning: Edges
    stats: BinStats
    deciles: BinStats
    classwise: tuple[BinStats, ...]
    n_correct: int
    brier_sum: float
    nll_sum: float
    auc: float | None
    auc_error: float = 0.0
    slope: CalibrationSlope | None = None
    pooled: Pooled | None = None
    engine: str = "memory"
    notes: tuple[str, ...] = field(default=())
    correct_weight: float | None = None
    spiegelhalter_variance: float | None = None

    @property
    def n(self) -> int:
        return self.stats.n

    @property
    def weighted(self) -> bool:
        return self.stats.weighted

    @property
    def mass(self) -> float:
        """The total weight (the number of forecasts when unweighted): what means divide by."""
        return self.stats.total_mass

    @property
    def accuracy(self) -> float:
        correct = self.n_correct if self.correct_weight is None else self.correct_weight
        return correct / self.mass

    def allclose(self, other: Summary, *, rtol: float = 1e-12) -> bool:
        """Same counts and kinds, sums equal to ``rtol`` (summation order differs by engine)."""

        def close(a: float | None, b: float | None, bound: float = 0.0) -> bool:
            if a is None or b is None:
                return a is b
            return a == b or math.isclose(a, b, rel_tol=rtol, abs_tol=rtol + bound)

        return (
            self.kind == other.kind
            and self.n_classes == other.n_classes
            and self.n_correct == other.n_correct
            and self.stats.allclose(other.stats, rtol=rtol, atol=rtol)
            and self.deciles.allclose(other.deciles, rtol=rtol, atol=rtol)
            and len(self.classwise) == len(other.classwise)
            and all(
                a.allclose(b, rtol=rtol, atol=rtol)
                for a, b in zip(self.classwise, other.classwise, strict=True)
            )
            and close(self.accuracy, other.accuracy)
            and close(self.brier_sum / self.mass, other.brier_sum / other.mass)
            and close(self.nll_sum / self.mass, other.nll_sum / other.mass)
            and close(self.auc, other.auc, self.auc_error + other.auc_error)
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "n_classes": self.n_classes,
            "n": self.n,
            "binning": {
                "strategy": self.binning.strategy,
                "requested_bins": self.binning.requested,
            },
            "stats": self.stats.to_dict(),
            "deciles": self.deciles.to_dict(),
            "classwise": [s.to_dict() for s in self.classwise],
            "n_correct": self.n_correct,
            "correct_weight": self.correct_weight,
            "brier_sum": self.brier_sum,
            "nll_sum": self.nll_sum if math.isfinite(self.nll_sum) else None,
            "auc": self.auc,
            "auc_error": self.auc_error,
            "engine": self.engine,
            "notes": list(self.notes),
        }

    def __add__(self, other: Summary) -> Summary:
        """The summary of two batches over the same edges (the AUC must come from a grid)."""
        if not isinstance(other, Summary):
            return NotImplemented
        if (self.kind, self.n_classes) != (other.kind, other.n_classes):
            raise InputError(
                f"summaries of {self.kind} forecasts ({self.n_classes} classes) and of "
                f"{other.kind} forecasts ({other.n_classes} classes) cannot be added: every "
                "chunk must have the same columns."
            )
        return replace(
            self,
            stats=self.stats + other.stats,
            deciles=self.deciles + other.deciles,
            classwise=tuple(a + b for a, b in zip(self.classwise, other.classwise, strict=True)),
            n_correct=self.n_correct + other.n_correct,
            correct_weight=_added(self.correct_weight, other.correct_weight),
            brier_sum=self.brier_sum + other.brier_sum,
            nll_sum=self.nll_sum + other.nll_sum,
            auc=None,
            auc_error=0.0,
            slope=None,
            pooled=None,
            spiegelhalter_variance=_added(
                self.spiegelhalter_variance, other.spiegelhalter_variance
            ),
        )

    def with_engine(self, engine: str, *notes: str) -> Summary:
        return replace(self, engine=engine, notes=self.notes + tuple(notes))


def _added(a: float | None, b: float | None) -> float | None:
    return None if a is None and b is None else (a or 0.0) + (b or 0.0)


def coarsen(
    fine: BinStats, *, n_bins: int, where: str, stacklevel: int = 2
) -> tuple[BinStats, Edges]:
    """Merge fine bins into ``n_bins`` groups of about equal mass: the statistics are exact for
    the edges returned, which approximate the quantile edges to within one fine bin. Weighted
    statistics are cut by their weight (the mass of :class:`BinStats`), as weighted quantiles
    are; a fine bin holding only rows of weight 0 closes no group.

    Examples
    --------
    >>> import numpy as np, calibkit as ck
    >>> from calibkit.measure.summary import coarsen
    >>> fine = ck.BinStats.from_forecasts([0.1, 0.3, 0.6, 0.9], [0, 0, 1, 1],
    ...     edges=[0, 0.25, 0.5, 0.75, 1], sample_weight=[3, 1, 1, 1])
    >>> stats, edges = coarsen(fine, n_bins=2, where="x")
    >>> edges.values.tolist(), stats.count.tolist(), stats.mass.tolist()
    ([0.0, 0.25, 1.0], [1, 3], [3.0, 3.0])
    """
    total = fine.n
    if total == 0:
        raise InputError(f"{where}: no forecasts to bin.")
    if fine.weighted:
        cumulative: np.ndarray = np.cumsum(fine.mass)
        targets = quantile_levels(n_bins) * fine.total_mass
    else:
        cumulative = np.cumsum(fine.count)
        targets = quantile_levels(n_bins) * total
    # the first fine bin whose cumulative count (weight) reaches each target closes a group
    closers = np.unique(np.searchsorted(cumulative, targets, side="left"))
    closers = closers[closers < fine.n_bins - 1]
    starts = np.concatenate(([0], closers + 1))
    edges = np.concatenate(([0.0], fine.edges[closers + 1], [1.0]))
    made = Edges(edges, "quantile", n_bins)
    count = np.add.reduceat(fine.count, starts)
    sums = [np.add.reduceat(getattr(fine, f), starts) for f in _kernels.SUM_FIELDS]
    made.warn_if_collapsed(where, stacklevel=stacklevel)
    weights = {}
    if fine.weighted:
        weights = {
            "weight": np.add.reduceat(fine.mass, starts),
            "weight_sq": np.add.reduceat(fine.mass_sq, starts),
        }
    return BinStats.of_sums(edges, fine.closed, count, sums, **weights), made
