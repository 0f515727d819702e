"""The monitor: one confidence sequence of the gap of all rows and one per bin, checked after
every batch, and the frozen results it reports."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _kernels
from .. import _validate as v
from ..measure.bins import CLOSED, resolve_edges
from ..measure.change import per_test_level
from .sequences import Betting, Mixture

__all__ = ["METHODS", "GapSequence", "SequentialMonitor", "SequentialStatus"]

METHODS = ("betting", "mixture")


def _exp(log_value: float) -> float:
    """``exp`` that returns infinity past the largest float instead of raising."""
    return math.exp(log_value) if log_value < 709.0 else math.inf


def _bin_name(bounds: tuple[float, float], closed: str) -> str:
    low, high = bounds
    return f"({low:g}, {high:g}]" if closed == "right" else f"[{low:g}, {high:g})"


@dataclass(frozen=True)
class GapSequence:
    """One confidence sequence for the gap ``mean(outcome - confidence)``: of all rows
    (``bin`` is None) or of the rows of one bin of confidences (``bin = (low, high)``).

    The gap lies in ``(low, high)`` at every time with probability ``level`` (the ends of the
    gap's range may be included); ``evidence`` is the capital (betting) or mixture martingale
    against a gap of 0, an e-process: 0 is excluded once it reaches ``1 / (1 - level)``.
    """

    bin: tuple[float, float] | None
    n: int
    gap: float
    low: float
    high: float
    level: float
    evidence: float
    alarm: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "bin": None if self.bin is None else list(self.bin),
            "n": self.n,
            "gap": self.gap,
            "low": self.low,
            "high": self.high,
            "level": self.level,
            "evidence": self.evidence,
            "alarm": self.alarm,
        }


@dataclass(frozen=True)
class SequentialStatus:
    """Where a :class:`SequentialMonitor` stands after its latest batch."""

    method: str
    level: float
    batches: int
    n: int
    overall: GapSequence
    bins: tuple[GapSequence, ...]
    #: (batch, rows seen) at the first alarm, counting batches from 1; None before any alarm.
    alarm_at: tuple[int, int] | None
    #: The sequence that alarmed first: ``"all"`` or a bin as ``"(0.9, 1]"``.
    alarm_by: str | None
    closed: str = "right"

    @property
    def alarm(self) -> bool:
        return self.alarm_at is not None

    def __str__(self) -> str:
        head = (
            f"Sequential calibration monitor ({self.method}, {self.level:.0%} for all sequences "
            f"together): {self.batches} batches, {self.n:,} rows"
        )
        lines = [head, f"{'rows of':<14}{'n':>9}{'gap':>9}  {'interval':<20}{'evidence':>10}"]
        for seq in (self.overall, *self.bins):
            name = "all" if seq.bin is None else _bin_name(seq.bin, self.closed)
            mark = "  ALARM" if seq.alarm else ""
            lines.append(
                f"{name:<14}{seq.n:>9,}{seq.gap:>+9.4f}  "
                f"({seq.low:+.4f}, {seq.high:+.4f}){seq.evidence:>11.3g}{mark}"
            )
        if self.alarm_at is None:
            lines.append("no alarm: 0 (calibrated) lies in every confidence sequence so far.")
        else:
            batch, rows = self.alarm_at
            lines.append(f"ALARM at batch {batch} ({rows:,} rows), first by {self.alarm_by}.")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "level": self.level,
            "batches": self.batches,
            "n": self.n,
            "overall": self.overall.to_dict(),
            "bins": [b.to_dict() for b in self.bins],
            "alarm": self.alarm,
            "alarm_at": None if self.alarm_at is None else list(self.alarm_at),
            "alarm_by": self.alarm_by,
        }


class SequentialMonitor:
    """Watch calibration as labelled batches arrive, with alarms that stay at their level
    however often they are checked.

    Parameters
    ----------
    level : float
        Probability that no sequence ever excludes its true gap (so that a calibrated model
        never raises an alarm), for all sequences together.
    n_bins, edges, closed : int or None, array, str
        Bins of confidence with a sequence each (uniform ``n_bins``, or explicit ``edges``);
        ``n_bins=None`` watches calibration in the large only.
    method : {"betting", "mixture"}
        The construction (module docstring).
    grid : int
        Odd number of candidate gaps in [-1, 1] for ``"betting"`` (step ``2 / (grid - 1)``).
        The alarm does not depend on it (0 is always on the grid); the interval's resolution
        does.
    horizon : int
        Rows at which the ``"mixture"`` boundary of all rows is tightest (bins: ``horizon /
        n_bins``); any value keeps the level.

    Examples
    --------
    >>> import calibkit as ck
    >>> mon = ck.SequentialMonitor(n_bins=None, method="mixture", horizon=100)
    >>> status = mon.update([0.5] * 100, [1, 0] * 50)
    >>> [round(x, 3) for x in mon.interval], mon.alarm
    ([-0.304, 0.304], False)
    """

    def __init__(
        self,
        *,
        level: float = 0.95,
        n_bins: int | None = 10,
        edges: Any = None,
        closed: str = "right",
        method: str = "betting",
        grid: int = 1001,
        horizon: int = 10_000,
    ) -> None:
        where = "SequentialMonitor"
        self.level = v.level(level, where=where)
        self.method = v.choice(method, name="method", allowed=METHODS, where=where)
        self.closed = v.choice(closed, name="closed", allowed=CLOSED, where=where)
        grid = v.positive_int(grid, name="grid", where=where, minimum=3)
        if grid % 2 == 0:
            raise v.InputError(f"{where}: grid must be odd so that 0 is on it, got {grid}.")
        horizon = v.positive_int(horizon, name="horizon", where=where)
        self.edges = np.zeros(1)  # one edge: no bins
        if n_bins is not None or edges is not None:
            self.edges = resolve_edges(
                None, n_bins=10 if n_bins is None else n_bins, strategy="uniform",
                edges=edges, where=where,
            ).values  # fmt: skip
        k = self.edges.size - 1
        self.overall_level = self.level if k == 0 else per_test_level(self.level, 2)
        self.bin_level = per_test_level(self.level, 2 * k) if k else self.level
        half = (grid - 1) // 2
        gaps = (np.arange(grid, dtype=np.float64) - half) / half  # symmetric, 0 exactly

        def make(lo: float, hi: float, lvl: float, rows: float) -> Betting | Mixture:
            if self.method == "betting":
                return Betting(lo, hi, 1.0 - lvl, gaps)
            return Mixture(lo, hi, 1.0 - lvl, rows)

        self._overall = make(-1.0, 1.0, self.overall_level, horizon)
        self._bins = [
            make(-float(self.edges[b + 1]), 1.0 - float(self.edges[b]), self.bin_level,
                 horizon / k)
            for b in range(k)
        ]  # fmt: skip
        self.batches, self.n = 0, 0
        self._alarm_at: tuple[int, int] | None = None
        self._alarm_by: str | None = None
        self._alarmed = [False] * (k + 1)
        self._status = self._snapshot()

    def update(self, confidence: Any, outcome: Any) -> SequentialStatus:
        """Add one batch of labelled forecasts (in the order they happened) and check every
        sequence; returns the status after the batch."""
        where = "SequentialMonitor.update"
        conf = v.confidence(confidence, where=where).astype(np.float64, copy=False)
        out = v.outcome(outcome, n=conf.size, where=where).astype(np.float64, copy=False)
        gap = out - conf
        self._overall.add(gap)
        if self._bins and conf.size:
            idx = _kernels.bin_index(conf, self.edges, self.closed)
            for b in np.unique(idx):
                self._bins[b].add(gap[idx == b])
        self.batches += 1
        self.n += conf.size
        for i, seq in enumerate([self._overall, *self._bins]):
            limit = math.log(1.0 / seq.alpha)
            if not self._alarmed[i] and seq.log_capital() >= limit:
                self._alarmed[i] = True
                if self._alarm_at is None:
                    self._alarm_at = (self.batches, self.n)
                    self._alarm_by = "all" if i == 0 else self._bin_name(i - 1)
        self._status = self._snapshot()
        return self._status

    def _bin_name(self, b: int) -> str:
        return _bin_name((float(self.edges[b]), float(self.edges[b + 1])), self.closed)

    def _sequence(self, i: int) -> GapSequence:
        seq = self._overall if i == 0 else self._bins[i - 1]
        low, high = seq.interval()
        edges = None if i == 0 else (float(self.edges[i - 1]), float(self.edges[i]))
        return GapSequence(
            bin=edges,
            n=seq.t,
            gap=seq.sum_z / seq.t if seq.t else 0.0,
            low=low,
            high=high,
            level=self.overall_level if i == 0 else self.bin_level,
            evidence=_exp(seq.log_capital()),
            alarm=self._alarmed[i],
        )

    def _snapshot(self) -> SequentialStatus:
        return SequentialStatus(
            method=self.method,
            level=self.level,
            batches=self.batches,
            n=self.n,
            overall=self._sequence(0),
            bins=tuple(self._sequence(i + 1) for i in range(len(self._bins))),
            alarm_at=self._alarm_at,
            alarm_by=self._alarm_by,
            closed=self.closed,
        )

    @property
    def status(self) -> SequentialStatus:
        """The status after the latest batch."""
        return self._status

    @property
    def alarm(self) -> bool:
        """Whether 0 (calibrated) has left any sequence at some batch (it stays True)."""
        return self._alarm_at is not None

    @property
    def alarm_at(self) -> tuple[int, int] | None:
        """(batch, rows seen) at the first alarm, batches counted from 1; None before."""
        return self._alarm_at

    @property
    def alarm_by(self) -> str | None:
        """The sequence that alarmed first: ``"all"`` or a bin such as ``"(0.9, 1]"``."""
        return self._alarm_by

    @property
    def interval(self) -> tuple[float, float]:
        """The current confidence sequence of the gap of all rows."""
        return self._status.overall.low, self._status.overall.high

    @property
    def bins(self) -> tuple[GapSequence, ...]:
        """The current confidence sequence of each bin's gap."""
        return self._status.bins
