"""The reliability table: per bin, count, mean confidence, observed accuracy, gap, interval."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .. import _validate as v
from .bins import CLOSED, BinStats, Edges, resolve_edges
from .intervals import INTERVALS, binomial_interval

__all__ = ["ReliabilityRow", "ReliabilityTable", "reliability_bins"]


@dataclass(frozen=True)
class ReliabilityRow:
    """One bin. ``conf``, ``acc``, ``gap`` (= acc - conf), ``se`` and the interval are NaN for an
    empty bin."""

    lo: float
    hi: float
    count: int
    conf: float
    acc: float
    gap: float
    se: float
    ci_low: float
    ci_high: float

    def to_dict(self) -> dict[str, Any]:
        """The bin as a JSON-ready ``dict`` (NaN of an empty bin as None)."""
        return {k: (None if isinstance(x, float) and x != x else x) for k, x in vars(self).items()}

    def __str__(self) -> str:
        if not self.count:
            return f"({self.lo:.2f}, {self.hi:.2f}]: empty"
        return (
            f"({self.lo:.2f}, {self.hi:.2f}]: n {self.count:,}, conf {self.conf:.4f}, "
            f"acc {self.acc:.4f} [{self.ci_low:.4f}, {self.ci_high:.4f}]"
        )


@dataclass(frozen=True, eq=False)
class ReliabilityTable:
    """Reliability table of a binned forecast, with counts beside every estimate.

    ``se`` is the binomial standard error sqrt(acc (1 - acc) / n) of each bin's accuracy;
    ``ci_low``/``ci_high`` the ``interval`` at ``level``. Empty bins stay as rows with count 0.
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
    def se(self) -> np.ndarray:
        acc = self.acc
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.sqrt(acc * (1.0 - acc) / self.count)

    @property
    def ci(self) -> tuple[np.ndarray, np.ndarray]:
        if self.interval is None:
            nan = np.full(self.count.shape, np.nan)
            return nan, nan.copy()
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
        return tuple(
            ReliabilityRow(float(a), float(b), int(c), *map(float, rest))
            for a, b, c, *rest in columns
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
        """JSON-ready: the binning and one dict per row (None for undefined values)."""
        return {
            "n": self.n,
            "n_bins": self.stats.n_bins,
            "requested_bins": self.requested_bins,
            "strategy": self.strategy,
            "closed": self.closed,
            "edges": self.edges.tolist(),
            "interval": self.interval,
            "level": self.level,
            "rows": [{k: _json(x) for k, x in asdict(row).items()} for row in self.rows],
        }

    def __str__(self) -> str:
        return self.text()

    def text(self, *, kind: str | None = None) -> str:
        """The table as text; ``kind`` (``"top-label"`` or ``"binary"``) words the gap's note."""
        labels = self.bin_labels()
        width = max(len(s) for s in labels + ["bin"])
        ci_head = f"{int(round(self.level * 100))}% {self.interval}" if self.interval else ""
        head = (
            f"{'bin':<{width}}  {'count':>7}  {'conf':>6}  {'acc':>6}  {'gap':>7}  "
            f"{'se':>6}  {ci_head}"
        )
        lines = [head.rstrip()]
        for label, row in zip(labels, self.rows, strict=True):
            if row.count == 0:
                lines.append(f"{label:<{width}}  {0:>7}  {'-':>6}  {'-':>6}  {'-':>7}  {'-':>6}")
                continue
            ci = f"[{row.ci_low:.4f}, {row.ci_high:.4f}]" if self.interval else ""
            lines.append(
                f"{label:<{width}}  {row.count:>7}  {row.conf:>6.4f}  {row.acc:>6.4f}  "
                f"{row.gap:>+7.4f}  {row.se:>6.4f}  {ci}".rstrip()
            )
        collapsed = self.requested_bins - self.stats.n_bins
        note = f", {collapsed} collapsed by ties" if collapsed > 0 else ""
        lines.append(
            f"N = {self.n}, M = {self.stats.n_bins} {self.strategy} bins{note}, "
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
) -> tuple[BinStats, Edges]:
    """Validate, choose edges and accumulate :class:`BinStats` (shared by every binned measure)."""
    closed = v.choice(closed, name="closed", allowed=CLOSED, where=where)
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
        confidence, outcome, edges=made.values, closed=closed, where=where
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

    Examples
    --------
    Ten predictions in two bins:

    >>> import calibkit as ck
    >>> conf = [0.3, 0.4, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.9, 0.9]
    >>> hit = [1, 0, 1, 0, 1, 1, 0, 1, 0, 1]
    >>> t = ck.reliability_bins(conf, hit, n_bins=2)
    >>> [(r.count, round(r.conf, 2), round(r.acc, 2)) for r in t.rows]
    [(4, 0.4, 0.5), (6, 0.8, 0.67)]
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
    )
    return ReliabilityTable(stats, made.strategy, made.requested, interval, level)
