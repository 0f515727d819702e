"""How much of a calibration number is noise: the noise floor of ECE, a bootstrap interval for
ECE; and (from :mod:`calibkit.measure.fit_tests`) the goodness-of-fit tests, Spiegelhalter's Z
and Hosmer-Lemeshow."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .. import _kernels
from .. import _validate as v
from .bins import BinStats, resolve_edges
from .errors import NORMS, ece_from_stats
from .fit_tests import (
    TestResult,
    format_p,
    hosmer_lemeshow,
    hosmer_lemeshow_from_stats,
    spiegelhalter_from_stats,
    spiegelhalter_variance,
    spiegelhalter_z,
)
from .reliability import binned
from .weighted import weighted_quantile_edges
from .weighted_sims import (
    BOOTSTRAP_FROM_WEIGHTED_STATS,
    NOISE_FROM_WEIGHTED_STATS,
    weighted_bootstrap_rows,
    weighted_bootstrap_stats,
    weighted_noise_from_stats,
    weighted_simulated_sums,
)

__all__ = [
    "BootstrapInterval",
    "NoiseFloor",
    "TestResult",
    "bootstrap_ece",
    "bootstrap_from_stats",
    "format_p",
    "hosmer_lemeshow",
    "hosmer_lemeshow_from_stats",
    "noise_floor",
    "noise_floor_from_stats",
    "spiegelhalter_from_stats",
    "spiegelhalter_variance",
    "spiegelhalter_z",
]

#: Bins with at most this many forecasts are simulated draw by draw (exactly).
EXACT_BIN_MAX = 4096
#: Resampling N rows B times exactly is done while N * B stays below this.
EXACT_BOOTSTRAP_MAX = 50_000_000
_BLOCK = 1 << 22


# ----------------------------------------------------------------------------- noise floor


@dataclass(frozen=True)
class NoiseFloor:
    """ECE of a forecaster calibrated by construction (outcomes drawn Bernoulli(confidence)),
    with the same confidences and bins: its mean and 95th percentile over ``n_sims`` runs."""

    mean: float
    p95: float
    n_sims: int
    n: int
    n_bins: int
    norm: str
    seed: int | None
    method: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return (
            f"noise floor (calibrated by construction, N = {self.n}, M = {self.n_bins}, "
            f"{self.n_sims} simulations): mean {self.mean:.4f}, 95th percentile "
            f"{self.p95:.4f}"
        )


def _simulated_bin_sums(
    conf: np.ndarray, idx: np.ndarray, m: int, n_sims: int, rng: np.random.Generator
) -> tuple[np.ndarray, str]:
    """Per-bin sums of Bernoulli(conf) outcomes, shape (n_sims, m)."""
    out = np.zeros((n_sims, m))
    approximated = False
    order = np.argsort(idx, kind="stable")
    bounds = np.searchsorted(idx[order], np.arange(m + 1))
    for b in range(m):
        members = conf[order[bounds[b] : bounds[b + 1]]]
        if members.size == 0:
            continue
        if members.size <= EXACT_BIN_MAX:
            rows = max(1, _BLOCK // members.size)
            for s in range(0, n_sims, rows):
                draws = rng.random((min(rows, n_sims - s), members.size)) < members
                out[s : s + rows, b] = draws.sum(axis=1)
            continue
        approximated = True
        var = float(np.sum(members * (1.0 - members)))
        if var >= 50.0:  # normal: Berry-Esseen error is small
            out[:, b] = rng.normal(members.sum(), np.sqrt(var), n_sims)
        else:  # Poisson on each side (Le Cam): near-certain events and near-impossible ones
            low = members <= 0.5
            out[:, b] = (
                rng.poisson(members[low].sum(), n_sims)
                + np.count_nonzero(~low)
                - rng.poisson((1.0 - members[~low]).sum(), n_sims)
            )
    method = (
        "exact"
        if not approximated
        else (
            f"exact for bins of <= {EXACT_BIN_MAX} forecasts; normal (or Poisson, for near-0/1 "
            "forecasts) approximation of the sum of Bernoulli outcomes in larger bins"
        )
    )
    return out, method


def noise_floor(
    confidence: Any,
    *,
    n_bins: int = 15,
    strategy: str = "uniform",
    closed: str = "right",
    edges: Any = None,
    norm: str = "l1",
    n_sims: int = 1000,
    seed: int | np.random.Generator | None = 0,
    sample_weight: Any = None,
) -> NoiseFloor:
    """Simulated ECE of a perfectly calibrated forecaster with these confidences.

    Outcomes are drawn Bernoulli(confidence) ``n_sims`` times (vectorised, seeded); each draw's
    ECE is computed with the same bins. An observed ECE inside this range is within noise of
    perfect calibration: on finite data even a calibrated forecaster's ECE is above 0 (the
    consistency resampling of Bröcker and Smith 2007). With ``sample_weight``, each row keeps
    its weight: the floor is the weighted ECE (:func:`ece`) of the simulated outcomes, so
    uneven weights raise it as they lower the effective sample size.

    Examples
    --------
    >>> import numpy as np, calibkit as ck
    >>> conf = np.random.default_rng(1).uniform(0.5, 1.0, 300)
    >>> floor = ck.noise_floor(conf, n_sims=200, seed=0)
    >>> 0.02 < floor.mean < floor.p95 < 0.1
    True
    """
    where = "noise_floor"
    norm = v.choice(norm, name="norm", allowed=NORMS, where=where)
    n_sims = v.positive_int(n_sims, name="n_sims", where=where)
    closed = v.choice(closed, name="closed", allowed=("right", "left"), where=where)
    rng = v.seed_or_rng(seed, where=where)
    conf = v.confidence(confidence, where=where).astype(np.float64, copy=False)
    made = resolve_edges(
        conf, n_bins=n_bins, strategy=strategy, edges=edges, where=where, closed=closed
    )
    m = made.values.size - 1
    w = v.sample_weight(sample_weight, n=conf.shape[0], where=where)
    if w is not None and strategy == "quantile" and edges is None:
        made = weighted_quantile_edges(conf, w, n_bins=made.requested, closed=closed, where=where)
    m = made.values.size - 1
    idx = _kernels.bin_index(conf, made.values, closed)
    if w is None:
        sums, method = _simulated_bin_sums(conf, idx, m, n_sims, rng)
        count = np.bincount(idx, minlength=m)
        sum_conf = np.bincount(idx, weights=conf, minlength=m)
        values = _ece_rows(count, sum_conf, sums, norm)
    else:
        sums, method = weighted_simulated_sums(conf, w, idx, m, n_sims, rng)
        mass = np.bincount(idx, weights=w, minlength=m)
        values = _ece_rows(mass, np.bincount(idx, weights=w * conf, minlength=m), sums, norm)
    return NoiseFloor(
        float(values.mean()),
        float(np.percentile(values, 95)),
        n_sims,
        conf.size,
        m,
        norm,
        seed if isinstance(seed, int) else None,
        method,
    )


#: How :func:`noise_floor_from_stats` simulates (the ``method`` of its result).
NOISE_FROM_STATS = (
    "from bin sums: each bin's outcome total drawn normal with the mean and variance of its "
    "Bernoulli sum (sum p, sum p(1 - p)); binomial with the bin's mean when that variance is "
    "under 50"
)


def noise_floor_from_stats(
    stats: BinStats, *, norm: str = "l1", n_sims: int = 1000, seed: int = 0
) -> NoiseFloor:
    """The noise floor of :func:`noise_floor` from binned sums alone (no row held): the sum of a
    bin's Bernoulli(p) outcomes has mean sum p and variance sum p(1 - p) = sum p - sum p^2,
    both in the :class:`BinStats`; each bin's total is drawn from that normal law (its
    Berry-Esseen error is small once the variance passes 50, as in the large bins of
    :func:`noise_floor`), or from a binomial with the bin's count and mean below that.
    Weighted statistics use each bin's effective count (Kish) in place of its count:
    :data:`~calibkit.measure.weighted_sims.NOISE_FROM_WEIGHTED_STATS` says how.

    Examples
    --------
    >>> import numpy as np, calibkit as ck
    >>> conf = np.random.default_rng(1).uniform(0.5, 1.0, 100_000)
    >>> stats = ck.BinStats.from_forecasts(conf, conf > 0.5, edges=ck.bin_edges())
    >>> floor = noise_floor_from_stats(stats, n_sims=200)
    >>> 0.001 < floor.mean < floor.p95 < 0.01
    True
    """
    values = _floor_draws_from_stats(stats, norm=norm, n_sims=n_sims, seed=seed)
    return NoiseFloor(
        float(values.mean()),
        float(np.percentile(values, 95)),
        n_sims,
        stats.n,
        stats.n_bins,
        norm,
        seed,
        NOISE_FROM_WEIGHTED_STATS if stats.weighted else NOISE_FROM_STATS,
    )


def noise_floor_quantile_from_stats(
    stats: BinStats, quantile: float, *, norm: str = "l1", n_sims: int = 1000, seed: int = 0
) -> float:
    """The ``quantile`` of the ECE of a calibrated forecaster with these bin sums: the
    simulations of :func:`noise_floor_from_stats` (same seed, same draws), read at another
    quantile than the 95th, e.g. the Bonferroni level of one of k groups
    (:func:`calibkit.measure.change.per_test_level`). An ECE above it is beyond noise at
    that level.

    Examples
    --------
    >>> import numpy as np, calibkit as ck
    >>> conf = np.random.default_rng(1).uniform(0.5, 1.0, 2000)
    >>> stats = ck.BinStats.from_forecasts(conf, conf > 0.7, edges=ck.bin_edges())
    >>> floor = noise_floor_from_stats(stats, n_sims=400)
    >>> abs(noise_floor_quantile_from_stats(stats, 0.95, n_sims=400) - floor.p95) < 1e-15
    True
    >>> noise_floor_quantile_from_stats(stats, 0.99, n_sims=400) > floor.p95
    True
    """
    values = _floor_draws_from_stats(stats, norm=norm, n_sims=n_sims, seed=seed)
    return float(np.percentile(values, 100.0 * quantile))


def _floor_draws_from_stats(stats: BinStats, *, norm: str, n_sims: int, seed: int) -> np.ndarray:
    """The ``n_sims`` simulated ECEs behind :func:`noise_floor_from_stats`."""
    rng = np.random.default_rng(seed)
    if stats.weighted:
        return _ece_rows(
            stats.mass, stats.sum_conf, weighted_noise_from_stats(stats, n_sims, rng), norm
        )
    count = stats.count.astype(np.float64)
    var = np.maximum(stats.sum_conf - stats.sum_conf_sq, 0.0)
    normal = var >= 50.0
    sums = np.empty((n_sims, stats.n_bins))
    sums[:, normal] = rng.normal(
        stats.sum_conf[normal], np.sqrt(var[normal]), (n_sims, int(normal.sum()))
    )
    small = ~normal
    mean = np.where(count[small] > 0, stats.sum_conf[small] / np.maximum(count[small], 1), 0.0)
    sums[:, small] = rng.binomial(
        stats.count[small], np.clip(mean, 0.0, 1.0), (n_sims, int(small.sum()))
    )
    return _ece_rows(stats.count, stats.sum_conf, sums, norm)


def _ece_rows(
    count: np.ndarray, sum_conf: np.ndarray, sum_outcome: np.ndarray, norm: str
) -> np.ndarray:
    """ECE of each row of per-bin outcome sums (shape (R, M)) against fixed counts/sums (or
    bin weights: ``count`` may be fractional)."""
    n = count.sum(axis=-1)
    diff = sum_outcome - sum_conf
    if norm == "l1":
        return np.abs(diff).sum(axis=-1) / n
    with np.errstate(invalid="ignore", divide="ignore"):
        gap = np.where(count > 0, diff / np.where(count > 0, count, 1), 0.0)
    if norm == "l2":
        return np.sqrt((diff * gap).sum(axis=-1) / n)
    return np.abs(gap).max(axis=-1)


# ----------------------------------------------------------------------------- bootstrap


@dataclass(frozen=True)
class BootstrapInterval:
    """Percentile bootstrap interval of a calibration error."""

    estimate: float
    low: float
    high: float
    level: float
    n_boot: int
    seed: int | None
    method: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return (
            f"{self.estimate:.4f} ({int(round(self.level * 100))}% bootstrap interval "
            f"{self.low:.4f} to {self.high:.4f}, {self.n_boot} resamples)"
        )


#: The ``method`` of a bootstrap computed from binned sums.
BOOTSTRAP_FROM_STATS = "multinomial bin counts, normal within-bin gaps"


def bootstrap_ece(
    confidence: Any,
    outcome: Any,
    *,
    n_bins: int = 15,
    strategy: str = "uniform",
    closed: str = "right",
    edges: Any = None,
    norm: str = "l1",
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int | np.random.Generator | None = 0,
    sample_weight: Any = None,
) -> BootstrapInterval:
    """Percentile bootstrap interval for ECE (rows resampled with replacement; bins fixed).

    Vectorised: resamples are drawn as blocks of indices and binned with one ``bincount`` per
    block. When N * n_boot exceeds :data:`EXACT_BOOTSTRAP_MAX`, the bin counts are still drawn
    exactly (multinomial) and each bin's resampled gap is drawn from its normal limit, with the
    within-bin variance of (outcome - confidence); ``method`` says which was used.

    With ``sample_weight``, the estimate is the weighted ECE (:func:`ece`) and the bootstrap is
    the weighted one: the N rows are resampled with replacement, each carrying its weight, and
    each resample's weighted ECE is computed over the same bins. Above the exact limit, the bin
    shares are drawn multinomial on Kish's effective counts and the weighted gaps from their
    normal limit (``method`` says so).

    Examples
    --------
    >>> import numpy as np, calibkit as ck
    >>> rng = np.random.default_rng(0)
    >>> conf = rng.uniform(0.5, 1.0, 2000); hit = rng.random(2000) < conf - 0.1
    >>> ci = ck.bootstrap_ece(conf, hit, n_boot=200, seed=0)
    >>> ci.low < ci.estimate < ci.high
    True
    """
    where = "bootstrap_ece"
    norm = v.choice(norm, name="norm", allowed=NORMS, where=where)
    n_boot = v.positive_int(n_boot, name="n_boot", where=where)
    level = v.level(level, where=where)
    rng = v.seed_or_rng(seed, where=where)
    stats, _ = binned(
        confidence,
        outcome,
        n_bins=n_bins,
        strategy=strategy,
        closed=closed,
        edges=edges,
        where=where,
        sample_weight=sample_weight,
    )
    n = stats.n
    if n * n_boot <= EXACT_BOOTSTRAP_MAX:
        conf = np.asarray(v.confidence(confidence, where=where), dtype=np.float64)
        out = np.asarray(v.outcome(outcome, n=n, where=where), dtype=np.float64)
        if stats.weighted:
            w = np.asarray(v.sample_weight(sample_weight, n=n, where=where))
            idx = _kernels.bin_index(conf, stats.edges, stats.closed)
            mass, s_conf, s_out = weighted_bootstrap_rows(
                conf, out, w, idx, stats.n_bins, n_boot, rng
            )
            values = _ece_rows(mass, s_conf, s_out, norm)
            method = "exact resampling of rows, each carrying its weight"
        else:
            values = _bootstrap_exact(conf, out, stats, norm, n_boot, rng)
            method = "exact resampling of rows"
    elif stats.weighted:
        values = bootstrap_from_stats(stats, norm, n_boot, rng)
        method = BOOTSTRAP_FROM_WEIGHTED_STATS
    else:
        values = bootstrap_from_stats(stats, norm, n_boot, rng)
        method = BOOTSTRAP_FROM_STATS
    alpha = 1.0 - level
    low, high = np.percentile(values, [100 * alpha / 2, 100 * (1 - alpha / 2)])
    return BootstrapInterval(
        ece_from_stats(stats, norm=norm),
        float(low),
        float(high),
        level,
        n_boot,
        seed if isinstance(seed, int) else None,
        method,
    )


def _bootstrap_exact(
    conf: np.ndarray,
    out: np.ndarray,
    stats: BinStats,
    norm: str,
    n_boot: int,
    rng: np.random.Generator,
) -> np.ndarray:
    n, m = conf.size, stats.n_bins
    idx = _kernels.bin_index(conf, stats.edges, stats.closed)
    values = np.empty(n_boot)
    per_block = max(1, _BLOCK // n)
    for start in range(0, n_boot, per_block):
        b = min(per_block, n_boot - start)
        draw = rng.integers(0, n, size=(b, n))
        key = (np.arange(b)[:, None] * m + idx[draw]).ravel()
        count = np.bincount(key, minlength=b * m).reshape(b, m)
        sum_conf = np.bincount(key, weights=conf[draw].ravel(), minlength=b * m).reshape(b, m)
        sum_out = np.bincount(key, weights=out[draw].ravel(), minlength=b * m).reshape(b, m)
        values[start : start + b] = _ece_rows(count, sum_conf, sum_out, norm)
    return values


def bootstrap_from_stats(
    stats: BinStats, norm: str, n_boot: int, rng: np.random.Generator
) -> np.ndarray:
    """Bootstrap ECE values from binned statistics alone (for data too large to resample);
    weighted statistics: :data:`~calibkit.measure.weighted_sims.BOOTSTRAP_FROM_WEIGHTED_STATS`."""
    if stats.weighted:
        mass, diff = weighted_bootstrap_stats(stats, n_boot, rng)
        return _ece_rows(mass, np.zeros_like(mass), diff, norm)
    n = stats.n
    cnt = np.maximum(stats.count, 1).astype(np.float64, copy=False)
    conf, acc = stats.sum_conf / cnt, stats.sum_outcome / cnt
    # within-bin variance of d = y - p: E[y] - 2E[py] + E[p^2] - (acc - conf)^2
    var_d = np.maximum(
        (stats.sum_outcome - 2.0 * stats.sum_conf_outcome + stats.sum_conf_sq) / cnt
        - (acc - conf) ** 2,
        0.0,
    )
    counts = rng.multinomial(n, stats.count / n, size=n_boot).astype(np.float64, copy=False)
    safe = np.maximum(counts, 1.0)
    gaps = (acc - conf) + rng.standard_normal(counts.shape) * np.sqrt(var_d / safe)
    diff = np.where(counts > 0, gaps * counts, 0.0)
    return _ece_rows(counts, np.zeros_like(counts), diff, norm)
