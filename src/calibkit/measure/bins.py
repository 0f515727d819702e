"""Bin edges, bin assignment, and :class:`BinStats`, the mergeable per-bin sufficient statistics.

Every binned quantity in calibkit (the reliability table, ECE/MCE/RMSCE, the Brier
decompositions, Hosmer-Lemeshow, Spiegelhalter's Z) is computed from a :class:`BinStats`. The
statistics of two chunks add, so the same type serves in-memory data, streams of chunks and
database engines (a GROUP BY on the bin index yields the same sums).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _kernels
from .. import _validate as v
from .._errors import CalibkitWarning, InputError
from .._torch_kernels import takes
from .masses import Masses
from .ranking import order_statistics

__all__ = ["BinStats", "bin_edges", "bin_index"]

STRATEGIES = ("uniform", "quantile")
CLOSED = ("right", "left")


@dataclass(frozen=True)
class Edges:
    """Bin edges with the record of how they were made."""

    values: np.ndarray
    strategy: str
    requested: int

    @property
    def collapsed(self) -> int:
        """How many requested bins were merged away because quantile edges coincided (ties)."""
        return self.requested - (self.values.size - 1)

    def warn_if_collapsed(self, where: str, *, stacklevel: int) -> None:
        if self.collapsed:
            warnings.warn(
                f"{where}: {self.collapsed} of {self.requested} quantile bins collapsed because "
                f"tied confidences made their edges coincide; using {self.values.size - 1} bins.",
                CalibkitWarning,
                stacklevel=stacklevel + 1,
            )


def bin_edges(
    confidence: Any = None,
    *,
    n_bins: int = 15,
    strategy: str = "uniform",
    closed: str = "right",
    edges: Any = None,
) -> np.ndarray:
    """Bin edges from 0 to 1.

    ``strategy="uniform"`` gives ``np.linspace(0, 1, n_bins + 1)``; ``"quantile"`` gives
    equal-mass bins whose inner edges are the ``k / n_bins`` quantiles of ``confidence``
    (``np.quantile``, linear interpolation, in float64), with 0 and 1 as the outer edges.
    Coinciding quantile edges (ties) are collapsed, with a :class:`CalibkitWarning` saying how
    many bins were lost; a quantile of exact zeros (exact ones with ``closed="left"``) keeps a
    bin [0, 0] ([1, 1]) of its own. Explicit ``edges`` must be strictly increasing from 0 to 1.

    Examples
    --------
    >>> import calibkit as ck
    >>> ck.bin_edges(n_bins=4).tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    >>> ck.bin_edges([0.1, 0.2, 0.3, 0.4], n_bins=2, strategy="quantile").tolist()
    [0.0, 0.25, 1.0]
    """
    where = "bin_edges"
    closed = v.choice(closed, name="closed", allowed=CLOSED, where=where)
    return resolve_edges(
        confidence, n_bins=n_bins, strategy=strategy, edges=edges, where=where, closed=closed
    ).values


def resolve_edges(
    confidence: np.ndarray | Any,
    *,
    n_bins: int,
    strategy: str,
    edges: Any,
    where: str,
    closed: str = "right",
    warn: bool = True,
) -> Edges:
    """Edges plus how they were made (used by every binned measure).

    Quantile edges that coincide are merged, except that when a whole quantile sits at
    exactly 0 (``closed="right"``) or 1 (``closed="left"``) those forecasts keep a bin of their
    own, [0, 0] or [1, 1], as scikit-learn's ``calibration_curve`` keeps them.
    """
    if edges is not None:
        values = v.edges(edges, where=where)
        return Edges(values, "explicit", values.size - 1)
    n_bins = v.n_bins(n_bins, where=where)
    strategy = v.choice(strategy, name="strategy", allowed=STRATEGIES, where=where)
    if strategy == "uniform":
        return Edges(np.linspace(0.0, 1.0, n_bins + 1), strategy, n_bins)
    if confidence is None:
        raise InputError(f"{where}: quantile edges need the confidences they are computed from.")
    conf = v.confidence(confidence, where=where).astype(np.float64, copy=False)
    inner = quantiles(conf, n_bins)
    return quantile_edges(inner, n_bins=n_bins, closed=closed, where=where, stacklevel=4, warn=warn)


def quantiles(conf: np.ndarray, n_bins: int) -> np.ndarray:
    """The inner quantile edges of checked confidences, bit-identical to ``np.quantile(conf,
    quantile_levels(n_bins))``: the order statistics they lie between, found in one selection
    (:func:`calibkit.measure.ranking.order_statistics`), interpolated as numpy does.

    Examples
    --------
    >>> import numpy as np
    >>> quantiles(np.array([0.1, 0.2, 0.3, 0.4, 0.9]), 4).tolist()
    [0.2, 0.3, 0.4]
    """
    lo, hi, gamma = order_statistic_ranks(conf.size, n_bins)
    ranks = np.unique(np.concatenate((lo, hi)))
    values = order_statistics(conf, ranks)
    return interpolate_order_statistics(
        values[np.searchsorted(ranks, lo)], values[np.searchsorted(ranks, hi)], gamma
    )


def quantile_levels(n_bins: int) -> np.ndarray:
    """The levels k / M, k = 1..M-1, of the inner quantile edges."""
    return np.arange(1, n_bins) / n_bins


def order_statistic_ranks(n: int, n_bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each inner quantile edge of ``n`` values: the 0-based ranks of the two order
    statistics it lies between and the interpolation weight, exactly as ``np.quantile``'s
    default (linear) method computes them.

    An engine that can fetch order statistics (DuckDB, Spark, a re-readable stream) gets the
    same edges as the in-memory path from :func:`interpolate_order_statistics`.
    """
    virtual = (n - 1) * quantile_levels(n_bins)
    below = np.floor(virtual)
    gamma = virtual - below
    lo = below.astype(np.int64)
    hi = np.minimum(lo + 1, n - 1)
    return lo, hi, gamma


def interpolate_order_statistics(
    lower: np.ndarray, upper: np.ndarray, gamma: np.ndarray
) -> np.ndarray:
    """numpy's linear interpolation between order statistics, operation for operation (so the
    edges are bit-identical to ``np.quantile``'s)."""
    diff = upper - lower
    out = lower + diff * gamma
    return np.where(gamma >= 0.5, upper - diff * (1 - gamma), out)


def quantile_edges(
    inner: np.ndarray,
    *,
    n_bins: int,
    closed: str,
    where: str,
    stacklevel: int = 2,
    warn: bool = True,
) -> Edges:
    """Edges from the inner quantiles: ties collapsed (with a warning unless ``warn`` is False:
    a test whose result notes the groups it used), a bin [0, 0] or [1, 1] kept for a quantile of
    exact zeros or ones."""
    values = np.unique(np.concatenate(([0.0], inner, [1.0])))
    if closed == "right" and inner.size and inner[0] == 0.0:
        values = np.concatenate(([0.0], values))  # the bin [0, 0]
    elif closed == "left" and inner.size and inner[-1] == 1.0:
        values = np.concatenate((values, [1.0]))  # the bin [1, 1]
    made = Edges(values, "quantile", n_bins)
    if warn:
        made.warn_if_collapsed(where, stacklevel=stacklevel)
    return made


def bin_index(confidence: Any, edges: Any, *, closed: str = "right") -> np.ndarray:
    """Bin number of each confidence, by comparison with the edge array.

    ``closed="right"``: bins (e_k, e_k+1], a value on an edge goes to the lower bin, the first
    bin includes 0. ``closed="left"``: bins [e_k, e_k+1), a value on an edge goes to the upper
    bin, the last bin includes 1.

    Examples
    --------
    >>> import calibkit as ck
    >>> e = [0.0, 0.5, 1.0]
    >>> ck.bin_index([0.0, 0.5, 1.0], e).tolist()
    [0, 0, 1]
    >>> ck.bin_index([0.0, 0.5, 1.0], e, closed="left").tolist()
    [0, 1, 1]
    """
    where = "bin_index"
    closed = v.choice(closed, name="closed", allowed=CLOSED, where=where)
    conf = v.confidence(confidence, where=where)
    return _kernels.bin_index(conf, v.edges(edges, where=where), closed)


@dataclass(frozen=True, eq=False)
class BinStats(Masses):
    """Per-bin sufficient statistics of (confidence, outcome) pairs.

    For bin b: ``count`` n_b, ``sum_conf`` = sum p, ``sum_outcome`` = sum y, ``sum_conf_sq`` =
    sum p^2, ``sum_conf_outcome`` = sum p*y, and ``sum_var_weight`` = sum p(1-p)(1-2p)^2 (the
    variance term of Spiegelhalter's Z). Statistics over the same edges add: ``a + b`` equals the
    statistics of the concatenated data.

    With sample weights w, every sum is a weighted sum (sum w p, sum w y, ...), ``count`` stays
    the raw number of rows, ``weight`` is sum w and ``weight_sq`` sum w^2 per bin; unweighted
    statistics leave both ``None``. Every measure divides by :attr:`mass` (the weight, or the
    count), so integer weights give the numbers of the data with each row repeated that many
    times; :attr:`effective_count` is Kish's effective sample size per bin, (sum w)^2 / sum w^2,
    which binomial intervals and noise floors use in place of the count.

    >>> s = BinStats.from_forecasts([0.3, 0.4], [1, 0], edges=[0, 1], sample_weight=[1, 3])
    >>> s.count.tolist(), s.mass.tolist(), s.effective_count.tolist()
    ([2], [4.0], [1.6])

    Examples
    --------
    >>> import calibkit as ck
    >>> edges = ck.bin_edges(n_bins=2)
    >>> a = ck.BinStats.from_forecasts([0.3, 0.9], [1, 1], edges=edges)
    >>> b = ck.BinStats.from_forecasts([0.4], [0], edges=edges)
    >>> (a + b).count.tolist(), (a + b).sum_outcome.tolist()
    ([2, 1], [1.0, 1.0])
    """

    edges: np.ndarray
    closed: str
    count: np.ndarray
    sum_conf: np.ndarray
    sum_outcome: np.ndarray
    sum_conf_sq: np.ndarray
    sum_conf_outcome: np.ndarray
    sum_var_weight: np.ndarray
    weight: np.ndarray | None = None
    weight_sq: np.ndarray | None = None

    # -------------------------------------------------------------- construction
    @classmethod
    def empty(cls, edges: Any, *, closed: str = "right") -> BinStats:
        """Statistics of no data (the identity of ``+``)."""
        e = v.edges(edges, where="BinStats.empty")
        closed = v.choice(closed, name="closed", allowed=CLOSED, where="BinStats.empty")
        m = e.size - 1
        zeros = [np.zeros(m) for _ in _kernels.SUM_FIELDS]
        return cls(e, closed, np.zeros(m, dtype=np.int64), *zeros)

    @classmethod
    def from_forecasts(
        cls,
        confidence: Any,
        outcome: Any,
        *,
        edges: Any,
        closed: str = "right",
        sample_weight: Any = None,
        where: str = "BinStats.from_forecasts",
    ) -> BinStats:
        """Statistics of one batch of forecasts, in one pass over the data (weighted sums when
        ``sample_weight`` is given)."""
        e = v.edges(edges, where=where)
        closed = v.choice(closed, name="closed", allowed=CLOSED, where=where)
        if sample_weight is None and takes(confidence):
            on_device = _tensor_stats(confidence, outcome, e, closed, where)
            if on_device is not None:
                return cls(e, closed, on_device[0], *on_device[1])
        conf = v.float_array(confidence, name="confidence", where=where, ndim=1)
        out = v.outcome_array(outcome, n=conf.shape[0], where=where)
        w = v.sample_weight(sample_weight, n=conf.shape[0], where=where)

        def validate(c: np.ndarray, o: np.ndarray) -> None:
            v.unit_interval(c, name="confidence", where=where)
            v.outcome_values(o, where=where)

        if w is not None:
            validate(conf, out)
            return cls.of_checked(conf, out, edges=e, closed=closed, sample_weight=w)
        count, sums = _kernels.bin_sums(conf, out, e, closed, validate=validate)
        return cls(e, closed, count, *sums)

    @classmethod
    def of_checked(
        cls,
        confidence: np.ndarray,
        outcome: np.ndarray,
        *,
        edges: np.ndarray,
        closed: str,
        sample_weight: np.ndarray | None = None,
    ) -> BinStats:
        """:meth:`from_forecasts` of arrays, edges and weights already checked (an engine's
        prepared input): one pass, nothing checked again."""
        if sample_weight is not None:
            count, sums, wsum, wsq = _kernels.weighted_bin_sums(
                confidence, outcome, sample_weight, edges, closed
            )
            return cls.of_sums(edges, closed, count, sums, weight=wsum, weight_sq=wsq)
        count, sums = _kernels.bin_sums(confidence, outcome, edges, closed, validate=None)
        return cls(edges, closed, count, *sums)

    @classmethod
    def of_sums(
        cls,
        edges: np.ndarray,
        closed: str,
        count: np.ndarray,
        sums: Any,
        *,
        weight: np.ndarray | None = None,
        weight_sq: np.ndarray | None = None,
    ) -> BinStats:
        """Statistics from the count and the :data:`~calibkit._kernels.SUM_FIELDS` sums in
        order (weighted sums with ``weight`` and ``weight_sq``)."""
        conf, outcome, conf_sq, conf_outcome, var_weight = sums
        return cls(
            edges,
            closed,
            count,
            conf,
            outcome,
            conf_sq,
            conf_outcome,
            var_weight,
            weight=weight,
            weight_sq=weight_sq,
        )

    @classmethod
    def from_chunks(
        cls, chunks: Iterable[tuple[Any, ...]], *, edges: Any, closed: str = "right"
    ) -> BinStats:
        """Accumulate statistics over an iterable of ``(confidence, outcome)`` chunks (or
        ``(confidence, outcome, sample_weight)``), holding one chunk at a time. Empty chunks add
        nothing; a stream with no forecasts at all is an error."""
        where = "BinStats.from_chunks"
        total = cls.empty(edges, closed=closed)
        for chunk in chunks:
            conf, out, w = (*chunk, None)[:3] if len(chunk) == 2 else chunk
            if np.size(conf) == 0 and np.size(out) == 0:
                continue  # an empty batch from a stream adds nothing
            total = total + cls.from_forecasts(
                conf, out, edges=total.edges, closed=closed, sample_weight=w, where=where
            )
        if total.n == 0:
            raise InputError(
                f"{where}: the chunks held no forecasts (empty input); check the "
                "source of the stream."
            )
        return total

    # -------------------------------------------------------------- algebra
    def __add__(self, other: BinStats) -> BinStats:
        if not isinstance(other, BinStats):
            return NotImplemented
        if self.closed != other.closed or not np.array_equal(self.edges, other.edges):
            raise InputError(
                "BinStats: only statistics over the same edges and closed side can be added; "
                "compute both with the same edges= (quantile edges differ between chunks: "
                "compute them once on all the data first)."
            )
        weighted = self.weighted or other.weighted
        return BinStats.of_sums(
            self.edges,
            self.closed,
            self.count + other.count,
            [getattr(self, f) + getattr(other, f) for f in _kernels.SUM_FIELDS],
            weight=self.mass + other.mass if weighted else None,
            weight_sq=self.mass_sq + other.mass_sq if weighted else None,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BinStats):
            return NotImplemented
        return (
            self.closed == other.closed
            and np.array_equal(self.edges, other.edges)
            and np.array_equal(self.count, other.count)
            and all(
                np.array_equal(getattr(self, f), getattr(other, f)) for f in _kernels.SUM_FIELDS
            )
            and self.weighted == other.weighted
            and np.array_equal(self.mass, other.mass)
            and np.array_equal(self.mass_sq, other.mass_sq)
        )

    def allclose(self, other: BinStats, *, rtol: float = 1e-12, atol: float = 1e-12) -> bool:
        """Equal counts; sums (and edges) equal up to floating-point rounding: of the summation
        order, and of ``exp`` in another math library (quantile edges of softmax output)."""
        return (
            self.closed == other.closed
            and self.edges.shape == other.edges.shape
            and np.allclose(self.edges, other.edges, rtol=rtol, atol=atol)
            and np.array_equal(self.count, other.count)
            and all(
                np.allclose(getattr(self, f), getattr(other, f), rtol=rtol, atol=atol)
                for f in _kernels.SUM_FIELDS
            )
            and self.weighted == other.weighted
            and np.allclose(self.mass, other.mass, rtol=rtol, atol=atol)
            and np.allclose(self.mass_sq, other.mass_sq, rtol=rtol, atol=atol)
        )

    # -------------------------------------------------------------- derived
    @property
    def n_bins(self) -> int:
        return int(self.count.size)

    @property
    def conf(self) -> np.ndarray:
        """Mean confidence per bin (NaN for an empty bin)."""
        return self._mean(self.sum_conf)

    @property
    def acc(self) -> np.ndarray:
        """Observed frequency of the outcome per bin (NaN for an empty bin)."""
        return self._mean(self.sum_outcome)

    def _mean(self, total: np.ndarray) -> np.ndarray:
        out = np.full(self.count.shape, np.nan)
        mass = self.mass
        nz = mass > 0
        out[nz] = total[nz] / mass[nz]
        return out

    def __str__(self) -> str:
        """One line: the rows, the bins and how many hold data.

        >>> print(BinStats.from_forecasts([0.3, 0.9, 0.4], [1, 1, 0], edges=[0, 0.5, 1]))
        BinStats of 3 forecasts in 2 bins (2 with data), mean confidence 0.5333, mean outcome 0.6667
        """
        n = int(self.count.sum())
        if not n:
            return f"BinStats of no forecasts in {self.count.size} bins"
        mass = self.total_mass
        weights = f" (total weight {mass:g})" if self.weighted else ""
        return (
            f"BinStats of {n:,} forecasts{weights} in {self.count.size} bins "
            f"({int((self.count > 0).sum())} with data), mean confidence "
            f"{self.sum_conf.sum() / mass:.4f}, mean outcome {self.sum_outcome.sum() / mass:.4f}"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dictionary (lists of numbers)."""
        out: dict[str, Any] = {
            "edges": self.edges.tolist(),
            "closed": self.closed,
            "count": self.count.tolist(),
        }
        out.update({f: getattr(self, f).tolist() for f in _kernels.SUM_FIELDS})
        if self.weight is not None and self.weight_sq is not None:
            out["weight"] = self.weight.tolist()
            out["weight_sq"] = self.weight_sq.tolist()
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BinStats:
        try:
            return cls.of_sums(
                np.asarray(data["edges"], dtype=np.float64),
                str(data["closed"]),
                np.asarray(data["count"], dtype=np.int64),
                [np.asarray(data[f], dtype=np.float64) for f in _kernels.SUM_FIELDS],
                weight=_optional(data.get("weight")),
                weight_sq=_optional(data.get("weight_sq")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"BinStats.from_dict: malformed statistics ({exc}).") from None


def _tensor_stats(
    confidence: Any, outcome: Any, edges: np.ndarray, closed: str, where: str
) -> tuple[np.ndarray, np.ndarray] | None:
    """Count and sums of a PyTorch tensor's forecasts, checked and summed on its device (only
    the sums reach the host); ``None`` for a tensor the host path reads instead."""
    from .. import _torch_kernels as tk

    conf = tk.confidence_on(confidence, where=where)
    out = (
        None if conf is None else tk.outcome_on(outcome, conf.device, n=conf.shape[0], where=where)
    )
    if conf is None or out is None:
        return None
    count, sums = tk.bin_sums(conf, out, edges, closed)
    return count.cpu().numpy(), sums.cpu().numpy()


def _optional(values: Any) -> np.ndarray | None:
    return None if values is None else np.asarray(values, dtype=np.float64)
