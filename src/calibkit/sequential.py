"""Anytime-valid calibration monitoring as labels arrive: confidence sequences for the gap
``mean(outcome - confidence)``, in the large and per bin, that may be checked after every batch.

A *confidence sequence* at level ``1 - a`` is a sequence of intervals ``C_1, C_2, ...`` with
``P(the truth lies outside some C_t) <= a``: valid at all times simultaneously, so looking after
every batch, and stopping at any time, costs nothing (Robbins 1970; Howard et al. 2021). The
null it covers is that every row's conditional gap ``E[outcome - confidence | confidence,
past rows]`` equals one constant ``m``; under calibration ``m = 0`` whatever the confidences do
over time, so the alarm "0 has left a confidence sequence" fires with probability at most
``1 - level`` over the whole (unbounded) run when the forecasts stay calibrated.

Two constructions, both exact to their definitions:

``"betting"``
    The hedged capital process of Waudby-Smith and Ramdas (2023, JRSSB, "Estimating means of
    bounded random variables by betting"), Theorem 3 with the predictable plug-in bets of their
    eq. (26)-(27) (``c = 1/2``, ``theta = 1/2``). Each gap ``z`` in ``[lo, hi]`` is mapped to
    ``x = (z - lo) / (hi - lo)`` in [0, 1]; for a candidate mean ``m`` the two capitals are
    ``K+(m) = prod(1 + min(lam_i, c/m) (x_i - m))`` and ``K-(m) = prod(1 - min(lam_i, c/(1-m))
    (x_i - m))``, and ``m`` is excluded once ``max(theta K+(m), (1-theta) K-(m)) >= 1/a``.
    The capitals are kept on a grid of candidate gaps (``grid`` points in [-1, 1], 0 among
    them); ``K+`` falls and ``K-`` rises with ``m``, so the set is an interval and the reported
    ends are the first excluded grid points around it (rounded outward). Adapts to the variance.
``"mixture"``
    The two-sided normal-mixture boundary (Robbins 1970; Howard et al. 2021, "Time-uniform,
    nonparametric, nonasymptotic confidence sequences", Section 3.2): a gap in ``[lo, hi]`` is
    sub-Gaussian with variance proxy ``s2 = ((hi - lo) / 2)^2`` (Hoeffding), the intrinsic time
    is ``V = s2 t``, and ``|sum(z_i - m)| < sqrt((V + rho) log((V + rho) / (rho a^2)))`` holds
    at all times with probability ``1 - a``. ``rho`` makes the boundary tightest at ``horizon``
    rows. Closed form, order-free, conservative when the variance is small.

Per-bin sequences use the bin's own gap range ``[-b, 1 - a']`` for a bin of confidences
``[a', b]``, and a union bound: with bins, the in-the-large sequence gets half of the error
``1 - level`` and each of the ``n_bins`` bins an equal share of the other half, so the alarm
(any sequence excluding 0) keeps ``1 - level`` in all.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _kernels
from . import _validate as v
from .measure.bins import CLOSED, resolve_edges
from .measure.change import per_test_level

__all__ = ["GapSequence", "SequentialMonitor", "SequentialStatus"]

METHODS = ("betting", "mixture")
#: The bet cap ``c`` and the hedge weight ``theta`` of Waudby-Smith and Ramdas (2023).
BET_CAP = 0.5
HEDGE = 0.5
#: Rows of one block of the (rows x grid) betting update (bounds its memory).
BLOCK_ROWS = 2048


class _Betting:
    """The hedged capital process on a grid of candidate gaps for gaps in ``[lo, hi]``."""

    def __init__(self, lo: float, hi: float, alpha: float, grid: np.ndarray) -> None:
        self.lo, self.hi, self.alpha = lo, hi, alpha
        self.gaps = grid[(grid >= lo) & (grid <= hi)]
        self.zero = int(np.flatnonzero(self.gaps == 0.0)[0])
        self.m = (self.gaps - lo) / (hi - lo)  # candidate means of x in [0, 1]
        with np.errstate(divide="ignore"):
            self.cap_up = BET_CAP / self.m
            self.cap_down = BET_CAP / (1.0 - self.m)
        self.log_up = np.zeros_like(self.m)
        self.log_down = np.zeros_like(self.m)
        self.t, self.sum_x, self.sum_sq, self.var = 0, 0.0, 0.0, 0.25
        self.sum_z = 0.0

    def add(self, z: np.ndarray) -> None:
        self.sum_z += float(z.sum())
        x = (z - self.lo) / (self.hi - self.lo)
        for start in range(0, x.size, BLOCK_ROWS):
            self._add_block(x[start : start + BLOCK_ROWS])

    def _add_block(self, x: np.ndarray) -> None:
        t = self.t + np.arange(1, x.size + 1, dtype=np.float64)
        mean = (0.5 + self.sum_x + np.cumsum(x)) / (t + 1.0)
        sq = self.sum_sq + np.cumsum((x - mean) ** 2)
        var = (0.25 + sq) / (t + 1.0)
        var_before = np.concatenate(([self.var], var[:-1]))
        lam = np.sqrt(2.0 * math.log(2.0 / self.alpha) / (var_before * t * np.log1p(t)))
        lam = np.minimum(lam, BET_CAP)[:, None]
        dev = x[:, None] - self.m[None, :]
        self.log_up += np.log1p(np.minimum(lam, self.cap_up) * dev).sum(axis=0)
        self.log_down += np.log1p(-np.minimum(lam, self.cap_down) * dev).sum(axis=0)
        self.t += x.size
        self.sum_x += float(x.sum())
        self.sum_sq = float(sq[-1])
        self.var = float(var[-1])

    def log_capital(self) -> float:
        """Log of the hedged capital against a gap of 0."""
        i = self.zero
        return max(math.log(HEDGE) + self.log_up[i], math.log(1 - HEDGE) + self.log_down[i])

    def interval(self) -> tuple[float, float]:
        bound = math.log(1.0 / self.alpha)
        up_ok = math.log(HEDGE) + self.log_up < bound  # False, then True as m grows
        down_ok = math.log(1 - HEDGE) + self.log_down < bound  # True, then False
        g = self.gaps
        p = int(np.argmax(up_ok)) if up_ok.any() else g.size
        q = g.size - 1 - int(np.argmax(down_ok[::-1])) if down_ok.any() else -1
        low = float(g[p - 1]) if p >= 1 else self.lo
        high = float(g[q + 1]) if q + 1 < g.size else self.hi
        return low, high


def _mixture_ratio(alpha: float) -> float:
    """``r = V / rho`` at which the two-sided normal-mixture boundary is tightest: the root of
    ``r = 2 log(1/a) + log(1 + r)`` (setting the derivative in ``rho`` to zero)."""
    r = 2.0 * math.log(1.0 / alpha)
    for _ in range(50):
        r = 2.0 * math.log(1.0 / alpha) + math.log1p(r)
    return r


class _Mixture:
    """The normal-mixture confidence sequence for gaps in ``[lo, hi]``."""

    def __init__(self, lo: float, hi: float, alpha: float, horizon: float) -> None:
        self.lo, self.hi, self.alpha = lo, hi, alpha
        self.s2 = ((hi - lo) / 2.0) ** 2
        self.rho = self.s2 * horizon / _mixture_ratio(alpha)
        self.t, self.sum_z = 0, 0.0

    def add(self, z: np.ndarray) -> None:
        self.t += z.size
        self.sum_z += float(z.sum())

    def log_capital(self) -> float:
        """Log of the mixture martingale against a gap of 0."""
        vr = self.s2 * self.t + self.rho
        return 0.5 * math.log(self.rho / vr) + self.sum_z**2 / (2.0 * vr)

    def interval(self) -> tuple[float, float]:
        if self.t == 0:
            return self.lo, self.hi
        vr = self.s2 * self.t + self.rho
        half = math.sqrt(vr * math.log(vr / (self.rho * self.alpha**2))) / self.t
        mean = self.sum_z / self.t
        return max(mean - half, self.lo), min(mean + half, self.hi)


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

        def make(lo: float, hi: float, lvl: float, rows: float) -> _Betting | _Mixture:
            if self.method == "betting":
                return _Betting(lo, hi, 1.0 - lvl, gaps)
            return _Mixture(lo, hi, 1.0 - lvl, rows)

        self._overall = make(-1.0, 1.0, self.overall_level, horizon)
        self._bins = [
            make(-float(self.edges[b + 1]), 1.0 - float(self.edges[b]), self.bin_level,
                 horizon / k)
            for b in range(k)
        ]  # fmt: skip
        self.batches, self.n = 0, 0
        self.alarm_at: tuple[int, int] | None = None
        self.alarm_by: str | None = None
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
                if self.alarm_at is None:
                    self.alarm_at = (self.batches, self.n)
                    self.alarm_by = "all" if i == 0 else self._bin_name(i - 1)
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
            alarm_at=self.alarm_at,
            alarm_by=self.alarm_by,
            closed=self.closed,
        )

    @property
    def status(self) -> SequentialStatus:
        """The status after the latest batch."""
        return self._status

    @property
    def alarm(self) -> bool:
        """Whether 0 (calibrated) has left any sequence at some batch (it stays True)."""
        return self.alarm_at is not None

    @property
    def interval(self) -> tuple[float, float]:
        """The current confidence sequence of the gap of all rows."""
        return self._status.overall.low, self._status.overall.high

    @property
    def bins(self) -> tuple[GapSequence, ...]:
        """The current confidence sequence of each bin's gap."""
        return self._status.bins
