"""The simulations of the noise floor and the bootstrap of ECE with sample weights: outcomes
drawn Bernoulli(confidence) with the weights kept, rows resampled carrying their weights, and
their approximations from binned statistics alone (Kish's effective size per bin)."""

from __future__ import annotations

import numpy as np

from .bins import BinStats

__all__ = [
    "NOISE_FROM_WEIGHTED_STATS",
    "BOOTSTRAP_FROM_WEIGHTED_STATS",
    "weighted_bootstrap_rows",
    "weighted_bootstrap_stats",
    "weighted_noise_from_stats",
    "weighted_simulated_sums",
]

#: Bins with at most this many forecasts are simulated draw by draw (exactly).
EXACT_BIN_MAX = 4096
_BLOCK = 1 << 22

#: How :func:`weighted_noise_from_stats` simulates.
NOISE_FROM_WEIGHTED_STATS = (
    "from weighted bin sums: each bin's weighted outcome total drawn normal with mean sum w p "
    "and variance (mean of p(1 - p)) * sum w^2; below an effective variance of 50, as its "
    "weight times a binomial of Kish's effective size (rounded) with the bin's mean"
)
#: How :func:`weighted_bootstrap_stats` resamples.
BOOTSTRAP_FROM_WEIGHTED_STATS = (
    "multinomial bin shares of the rounded total effective size (Kish), each effective row "
    "carrying the bin's weight per effective row; normal within-bin weighted gaps"
)


def weighted_simulated_sums(
    conf: np.ndarray,
    weight: np.ndarray,
    idx: np.ndarray,
    m: int,
    n_sims: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, str]:
    """Per-bin sums of w * Bernoulli(conf) outcomes, shape (n_sims, m).

    Bins of at most :data:`EXACT_BIN_MAX` rows are drawn row by row; larger bins from the
    normal law of the weighted sum (mean sum w p, variance sum w^2 p (1 - p)) when
    sum p (1 - p) reaches 50, else from compound Poisson laws on each side (Le Cam): the
    surprises among forecasts <= 0.5 (> 0.5) are Poisson with rate sum p (sum 1 - p), each
    falling on a row with probability proportional to p (to 1 - p) and adding (removing)
    its weight.
    """
    out = np.zeros((n_sims, m))
    approximated = False
    order = np.argsort(idx, kind="stable")
    bounds = np.searchsorted(idx[order], np.arange(m + 1))
    for b in range(m):
        rows = order[bounds[b] : bounds[b + 1]]
        p, w = conf[rows], weight[rows]
        if p.size == 0:
            continue
        if p.size <= EXACT_BIN_MAX:
            per = max(1, _BLOCK // p.size)
            for s in range(0, n_sims, per):
                draws = rng.random((min(per, n_sims - s), p.size)) < p
                out[s : s + per, b] = draws.astype(np.float64) @ w
            continue
        approximated = True
        if float(np.sum(p * (1.0 - p))) >= 50.0:
            sd = float(np.sqrt(np.sum(w * w * p * (1.0 - p))))
            out[:, b] = rng.normal(float(np.sum(w * p)), sd, n_sims)
        else:
            low = p <= 0.5
            out[:, b] = (
                _compound_poisson(p[low], w[low], n_sims, rng)
                + float(w[~low].sum())
                - _compound_poisson(1.0 - p[~low], w[~low], n_sims, rng)
            )
    method = (
        "exact, weights kept"
        if not approximated
        else (
            f"exact, weights kept, for bins of <= {EXACT_BIN_MAX} forecasts; normal (or compound "
            "Poisson, for near-0/1 forecasts) approximation of the weighted sum in larger bins"
        )
    )
    return out, method


def _compound_poisson(
    rate: np.ndarray, weight: np.ndarray, n_sims: int, rng: np.random.Generator
) -> np.ndarray:
    """n_sims draws of the sum of the weights of Poisson(sum rate) rows picked by rate."""
    total = float(rate.sum())
    if total <= 0.0:
        return np.zeros(n_sims)
    k = rng.poisson(total, n_sims)
    picks = rng.choice(rate.size, size=int(k.sum()), p=rate / total)
    return np.bincount(np.repeat(np.arange(n_sims), k), weights=weight[picks], minlength=n_sims)


def weighted_noise_from_stats(stats: BinStats, n_sims: int, rng: np.random.Generator) -> np.ndarray:
    """Per-bin weighted outcome sums of a calibrated forecaster, shape (n_sims, M), from
    weighted :class:`BinStats` (see :data:`NOISE_FROM_WEIGHTED_STATS`)."""
    mass, n_eff = stats.mass, stats.effective_count
    safe = np.where(mass > 0, mass, 1.0)
    mean_var = np.maximum(stats.sum_conf - stats.sum_conf_sq, 0.0) / safe  # mean of p(1 - p)
    normal = mean_var * n_eff >= 50.0
    sums = np.zeros((n_sims, stats.n_bins))
    sd = np.sqrt(mean_var[normal] * stats.mass_sq[normal])
    sums[:, normal] = rng.normal(stats.sum_conf[normal], sd, (n_sims, int(normal.sum())))
    small = ~normal & (mass > 0)
    trials = np.maximum(np.round(n_eff[small]), 1.0)
    mean = np.clip(stats.sum_conf[small] / mass[small], 0.0, 1.0)
    draws = rng.binomial(trials.astype(np.int64), mean, (n_sims, int(small.sum())))
    sums[:, small] = draws * (mass[small] / trials)
    return sums


def weighted_bootstrap_rows(
    conf: np.ndarray,
    out: np.ndarray,
    weight: np.ndarray,
    idx: np.ndarray,
    m: int,
    n_boot: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows resampled with replacement, each carrying its weight: per resample and bin the
    weight, sum w p and sum w y, each of shape (n_boot, m)."""
    n = conf.size
    mass = np.empty((n_boot, m))
    sum_conf = np.empty((n_boot, m))
    sum_out = np.empty((n_boot, m))
    wc, wo = weight * conf, weight * out
    per_block = max(1, _BLOCK // n)
    for start in range(0, n_boot, per_block):
        b = min(per_block, n_boot - start)
        draw = rng.integers(0, n, size=(b, n))
        key = (np.arange(b)[:, None] * m + idx[draw]).ravel()
        for target, values in ((mass, weight), (sum_conf, wc), (sum_out, wo)):
            target[start : start + b] = np.bincount(
                key, weights=values[draw].ravel(), minlength=b * m
            ).reshape(b, m)
    return mass, sum_conf, sum_out


def weighted_bootstrap_stats(
    stats: BinStats, n_boot: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Resampled bin weights and weighted gap sums, each (n_boot, M), from weighted
    :class:`BinStats` (see :data:`BOOTSTRAP_FROM_WEIGHTED_STATS`)."""
    mass, n_eff = stats.mass, stats.effective_count
    safe = np.where(mass > 0, mass, 1.0)
    gap = (stats.sum_outcome - stats.sum_conf) / safe
    # weighted within-bin variance of d = y - p: E_w[y - 2py + p^2] - gap^2
    var_d = np.maximum(
        (stats.sum_outcome - 2.0 * stats.sum_conf_outcome + stats.sum_conf_sq) / safe - gap**2,
        0.0,
    )
    total = float(n_eff.sum())
    counts = rng.multinomial(max(1, int(round(total))), n_eff / total, size=n_boot).astype(
        np.float64
    )
    per_row = np.where(n_eff > 0, mass / np.where(n_eff > 0, n_eff, 1.0), 0.0)
    draws = gap + rng.standard_normal(counts.shape) * np.sqrt(var_d / np.maximum(counts, 1.0))
    resampled = counts * per_row
    return resampled, np.where(counts > 0, draws * resampled, 0.0)
