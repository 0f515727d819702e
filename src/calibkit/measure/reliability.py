"""The reliability table: per bin, count, mean confidence, observed accuracy, gap, interval."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from typing import Any, cast

import numpy as np

from .. import _display
from .. import _validate as v
from .bins import CLOSED, BinStats, Edges, resolve_edges
from .intervals import INTERVALS, binomial_interval, proportion_interval
from .weighted import weighted_quantile_edges

__all__ = ["ReliabilityRow", "ReliabilityTable", "reliability_bins"]


@dataclass(frozen=True)
class ReliabilityRow:
    """One bin. ``conf``, ``acc``, ``gap`` (= acc - conf), ``se`` and the interval are NaN for an
    empty bin (or one whose rows all weigh 0).

    ``count`` is the raw number of rows; with sample weights, ``weight`` is their total weight
    and ``n_eff`` Kish's effective size (both ``None`` unweighted)."""

    lo: float
    hi: float
    count: int
    conf: float
    acc: float
    gap: float
    se: float
    ci_low: float
    ci_high: float
    weight: float | None = None
    n_eff: float | None = None

    @property
    def empty(self) -> bool:
        """No rows, or rows that all weigh 0."""
        return not self.count or self.weight == 0.0

    def to_dict(self) -> dict[str, Any]:
        """The bin as a JSON-ready ``dict`` (NaN of an empty bin as None; ``weight`` and
        ``n_eff`` only when weighted)."""
        return {
            k: (None if isinstance(x, float) and x != x else x)
            for k, x in vars(self).items()
            if self.weight is not None or k not in WEIGHT_FIELDS
        }

    def __str__(self) -> str:
        weight = "" if self.weight is None else f" (weight {self.weight:g})"
        if self.empty:
            held = f" ({self.count:,} rows of weight 0)" if self.count else ""
            return f"({self.lo:.2f}, {self.hi:.2f}]: empty{held}"
        return (
            f"({self.lo:.2f}, {self.hi:.2f}]: n {self.count:,}{weight}, conf {self.conf:.4f}, "
            f"acc {self.acc:.4f} [{self.ci_low:.4f}, {self.ci_high:.4f}]"
        )


#: The fields a row has only when weighted.
WEIGHT_FIELDS = ("weight", "n_eff")


@dataclass(frozen=True, eq=False)
class ReliabilityTable:
    """Reliability table of a binned forecast, with counts beside every estimate.

    ``se`` is the binomial standard error sqrt(acc (1 - acc) / n) of each bin's accuracy;
    ``ci_low``/``ci_high`` the ``interval`` at ``level``. Empty bins stay as rows with count 0.
    With sample weights, ``acc`` and ``conf`` are weighted means and ``se`` and the interval use
    Kish's effective size n_eff = (sum w)^2 / sum w^2 of the bin in place of n.
    """

    stats: BinStats
    strategy: str
    requested_bins: int
    interval: str | None
    level: float

    @property
    def edges(self) -> np.ndarray:
        return self.stats.edges

    @property
    def closed(self) -> str:
        return self.stats.closed

    @property
    def n(self) -> int:
        return self.stats.n

    @property
    def lo(self) -> np.ndarray:
        return self.edges[:-1]

    @property
    def hi(self) -> np.ndarray:
        return self.edges[1:]

    @property
    def count(self) -> np.ndarray:
        return self.stats.count

    @property
    def conf(self) -> np.ndarray:
        return self.stats.conf

    @property
    def acc(self) -> np.ndarray:
        return self.stats.acc

    @property
    def gap(self) -> np.ndarray:
        """Observed frequency minus mean confidence: negative where the event happens less
        often than forecast (for a top-label confidence: overconfident)."""
        return self.acc - self.conf

    @property
    def weighted(self) -> bool:
        return self.stats.weighted

    @property
    def weight(self) -> np.ndarray | None:
        """Total weight per bin (``None`` unweighted)."""
        return self.stats.weight

    @property
    def n_eff(self) -> np.ndarray:
        """Kish's effective size per bin (the count when unweighted)."""
        return self.stats.effective_count

    @property
    def se(self) -> np.ndarray:
        acc = self.acc
        n = self.n_eff if self.weighted else self.count
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.sqrt(acc * (1.0 - acc) / n)

    @property
    def ci(self) -> tuple[np.ndarray, np.ndarray]:
        if self.interval is None:
            nan = np.full(self.count.shape, np.nan)
            return nan, nan.copy()
        if self.weighted:
            n_eff = self.n_eff
            successes = np.where(n_eff > 0, np.nan_to_num(self.acc) * n_eff, 0.0)
            return proportion_interval(successes, n_eff, method=self.interval, level=self.level)
        lo, hi = binomial_interval(
            self.stats.sum_outcome, self.count, method=self.interval, level=self.level
        )
        return np.asarray(lo), np.asarray(hi)

    @property
    def rows(self) -> tuple[ReliabilityRow, ...]:
        ci_low, ci_high = self.ci
        columns = zip(
            self.lo,
            self.hi,
            self.count,
            self.conf,
            self.acc,
            self.gap,
            self.se,
            ci_low,
            ci_high,
            strict=True,
        )
        rows = tuple(
            ReliabilityRow(float(a), float(b), int(c), *map(float, rest))
            for a, b, c, *rest in columns
        )
        if self.weight is None:
            return rows
        return tuple(
            replace(row, weight=float(w), n_eff=float(e))
            for row, w, e in zip(rows, self.weight, self.n_eff, strict=True)
        )

    def bin_labels(self) -> list[str]:
        """Interval notation of each bin, e.g. ``(0.1, 0.2]`` for right-closed bins."""
        labels = []
        m = self.stats.n_bins
        for k, (a, b) in enumerate(zip(self.lo, self.hi, strict=True)):
            if self.closed == "right":
                left = "[" if k == 0 else "("
                right = "]"
            else:
                left = "["
                right = "]" if k == m - 1 else ")"
            labels.append(f"{left}{_num(a)}, {_num(b)}{right}")
        return labels

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the binning and one dict per row (None for undefined values); with
        sample weights also the total weight, and each row's ``weight`` and ``n_eff``."""
        out = {
            "n": self.n,
            "n_bins": self.stats.n_bins,
            "requested_bins": self.requested_bins,
            "strategy": self.strategy,
            "closed": self.closed,
            "edges": self.edges.tolist(),
            "interval": self.interval,
            "level": self.level,
            "rows": [
                {
                    k: _json(x)
                    for k, x in asdict(row).items()
                    if self.weighted or k not in WEIGHT_FIELDS
                }
                for row in self.rows
            ],
        }
        if self.weighted:
            out["total_weight"] = self.stats.total_mass
        return out

    def _repr_html_(self) -> str:
        """What a notebook shows: the HTML report's section for this result."""
        return _display.html(self)

    def __str__(self) -> str:
        return self.text()

    def text(self, *, kind: str | None = None) -> str:
        """The table as text; ``kind`` (``"top-label"`` or ``"binary"``) words the gap's note."""
        labels = self.bin_labels()
        width = max(len(s) for s in labels + ["bin"])
        ci_head = f"{int(round(self.level * 100))}% {self.interval}" if self.interval else ""
        weights = f"  {'weight':>9}  {'n_eff':>8}" if self.weighted else ""
        head = (
            f"{'bin':<{width}}  {'count':>7}{weights}  {'conf':>6}  {'acc':>6}  {'gap':>7}  "
            f"{'se':>6}  {ci_head}"
        )
        lines = [head.rstrip()]
        for label, row in zip(labels, self.rows, strict=True):
            if self.weighted:
                weights = f"  {row.weight:>9.4g}  {row.n_eff:>8.4g}"
            if row.empty:
                lines.append(
                    f"{label:<{width}}  {row.count:>7}{weights}  {'-':>6}  {'-':>6}  {'-':>7}  "
                    f"{'-':>6}"
                )
                continue
            ci = f"[{row.ci_low:.4f}, {row.ci_high:.4f}]" if self.interval else ""
            lines.append(
                f"{label:<{width}}  {row.count:>7}{weights}  {row.conf:>6.4f}  {row.acc:>6.4f}  "
                f"{row.gap:>+7.4f}  {row.se:>6.4f}  {ci}".rstrip()
            )
        collapsed = self.requested_bins - self.stats.n_bins
        note = f", {collapsed} collapsed by ties" if collapsed > 0 else ""
        total = f" (total weight {self.stats.total_mass:g})" if self.weighted else ""
        lines.append(
            f"N = {self.n}{total}, M = {self.stats.n_bins} {self.strategy} bins{note}, "
            f"{self.closed}-closed; {gap_note(kind)}"
        )
        return "\n".join(lines)


def gap_note(kind: str | None) -> str:
    """How to read the gap column, by what the confidences forecast: a top-label confidence
    (a negative gap is overconfidence), P(y = 1) of a binary model (a negative gap means y = 1
    happened less often than forecast, which is overconfidence above 0.5 and underconfidence
    below it), or any forecast of an event (``None``)."""
    if kind == "top-label":
        return "gap = acc - conf (negative = overconfident)"
    return "gap = acc - conf (negative: the event happened less often than forecast)"


def _num(x: float) -> str:
    text = f"{x:.4f}".rstrip("0").rstrip(".")
    return text if text else "0"


def _json(x: Any) -> Any:
    if isinstance(x, float) and not np.isfinite(x):
        return None
    return x


def binned(
    confidence: Any,
    outcome: Any,
    *,
    n_bins: int,
    strategy: str,
    closed: str,
    edges: Any,
    where: str,
    warn: bool = True,
    sample_weight: Any = None,
) -> tuple[BinStats, Edges]:
    """Validate, choose edges and accumulate :class:`BinStats` (shared by every binned measure).

    With ``sample_weight``, the sums are weighted and quantile edges are equal-weight edges
    (:func:`~calibkit.measure.weighted.weighted_quantiles`)."""
    closed = v.choice(closed, name="closed", allowed=CLOSED, where=where)
    if sample_weight is not None and strategy == "quantile" and edges is None:
        n_bins = v.n_bins(n_bins, where=where)
        conf = v.confidence(confidence, where=where).astype(np.float64, copy=False)
        w = cast(np.ndarray, v.sample_weight(sample_weight, n=conf.shape[0], where=where))
        made = weighted_quantile_edges(
            conf, w, n_bins=n_bins, closed=closed, where=where, warn=warn
        )
    else:
        made = resolve_edges(
            confidence if strategy == "quantile" and edges is None else None,
            n_bins=n_bins,
            strategy=strategy,
            edges=edges,
            where=where,
            closed=closed,
            warn=warn,
        )
    stats = BinStats.from_forecasts(
        confidence,
        outcome,
        edges=made.values,
        closed=closed,
        sample_weight=sample_weight,
        where=where,
    )
    return stats, made


def reliability_bins(
    confidence: Any,
    outcome: Any,
    *,
    n_bins: int = 15,
    strategy: str = "uniform",
    closed: str = "right",
    edges: Any = None,
    interval: str | None = "wilson",
    level: float = 0.95,
    sample_weight: Any = None,
) -> ReliabilityTable:
    """Reliability table of (confidence, outcome) pairs.

    Parameters
    ----------
    confidence : array of shape (N,)
        Forecast probabilities in [0, 1] (e.g. top-label confidence, or P(label = 1)).
    outcome : array of shape (N,)
        1 if the prediction was correct (the event happened), else 0.
    n_bins, strategy, closed, edges
        Binning: ``"uniform"`` (equal width) or ``"quantile"`` (equal mass) bins, or explicit
        ``edges``; ``closed`` says which side of a bin includes its edge.
    interval : {"wilson", "clopper-pearson", "jeffreys", None}
        Interval for each bin's accuracy, at ``level``.
    sample_weight : array of shape (N,), optional
        Non-negative weight of each row. Each bin keeps its raw ``count`` and gains its total
        ``weight``; ``conf`` and ``acc`` are weighted means (integer weights give the table of
        the rows repeated that many times), quantile bins hold equal weight, and ``se`` and the
        interval treat the bin's weighted accuracy as a proportion out of Kish's effective size
        n_eff = (sum w)^2 / sum w^2 (Wilson or Clopper-Pearson with n_eff trials and
        n_eff * acc successes; Kish 1965), which assumes the rows are independent draws.

    Examples
    --------
    Ten predictions in two bins:

    >>> import calibkit as ck
    >>> conf = [0.3, 0.4, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.9, 0.9]
    >>> hit = [1, 0, 1, 0, 1, 1, 0, 1, 0, 1]
    >>> t = ck.reliability_bins(conf, hit, n_bins=2)
    >>> [(r.count, round(r.conf, 2), round(r.acc, 2)) for r in t.rows]
    [(4, 0.4, 0.5), (6, 0.8, 0.67)]

    Weights: the first bin's rows weigh 1, 1, 1, 3, so its accuracy is (1 + 1) / 6.

    >>> w = [1, 1, 1, 3, 1, 1, 1, 1, 1, 1]
    >>> r = ck.reliability_bins(conf, hit, n_bins=2, sample_weight=w).rows[0]
    >>> r.count, r.weight, round(r.acc, 4), round(r.n_eff, 4)
    (4, 6.0, 0.3333, 3.0)
    """
    return make_table(
        confidence,
        outcome,
        n_bins=n_bins,
        strategy=strategy,
        closed=closed,
        edges=edges,
        interval=interval,
        level=level,
        where="reliability_bins",
        sample_weight=sample_weight,
    )


def make_table(
    confidence: Any,
    outcome: Any,
    *,
    n_bins: int,
    strategy: str,
    closed: str,
    edges: Any,
    interval: str | None,
    level: float,
    where: str,
    sample_weight: Any = None,
) -> ReliabilityTable:
    """:func:`reliability_bins`, with errors reported as coming from ``where``."""
    if interval is not None:
        interval = v.choice(interval, name="interval", allowed=INTERVALS, where=where)
    level = v.level(level, where=where)
    stats, made = binned(
        confidence,
        outcome,
        n_bins=n_bins,
        strategy=strategy,
        closed=closed,
        edges=edges,
        where=where,
        sample_weight=sample_weight,
    )
    return ReliabilityTable(stats, made.strategy, made.requested, interval, level)
