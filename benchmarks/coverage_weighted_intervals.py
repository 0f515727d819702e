"""How often the weighted intervals of calibkit cover the truth, in seeded simulations: the
table of docs/weights.md.

    python benchmarks/coverage_weighted_intervals.py            # 20,000 / 1,000 draws (minutes)
    python benchmarks/coverage_weighted_intervals.py --quick    # 2,000 / 200 draws

Per-bin interval (``ck.reliability_bins(..., sample_weight=w)``): one bin of n rows whose
outcomes are Bernoulli(mu), weights drawn lognormal(0, sigma) or uniform on the integers 1..5;
the 95% Wilson and Clopper-Pearson intervals of the weighted accuracy with Kish's effective
size must cover mu.

Bootstrap interval of ECE (``ck.bootstrap_ece(..., sample_weight=w)``): N confidences uniform on
[0.3, 0.95], each outcome Bernoulli(confidence - 0.1), weights as above and independent of the
rest, 5 equal-width bins; every bin's weighted gap is -0.1, so the population's weighted ECE is
0.1, which the 95% percentile interval must cover.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np

import calibkit as ck
from calibkit.measure.intervals import proportion_interval

Weights = Callable[[np.random.Generator, tuple[int, ...]], np.ndarray]

WEIGHTS: dict[str, Weights] = {
    "lognormal(0, 0.5)": lambda rng, shape: rng.lognormal(0.0, 0.5, shape),
    "lognormal(0, 1)": lambda rng, shape: rng.lognormal(0.0, 1.0, shape),
    "integers 1..5": lambda rng, shape: rng.integers(1, 6, shape).astype(np.float64),
}
BIN_SETTINGS = [(30, 0.3), (60, 0.3), (200, 0.1), (200, 0.5), (1000, 0.05)]
ECE_SETTINGS = [500, 2000]


def bin_coverage(weights: Weights, n: int, mu: float, reps: int, rng: np.random.Generator) -> dict:
    """Share of draws whose per-bin interval covers mu, by method."""
    w = weights(rng, (reps, n))
    y = rng.random((reps, n)) < mu
    total = w.sum(axis=1)
    n_eff = total**2 / (w**2).sum(axis=1)
    acc = (w * y).sum(axis=1) / total
    out = {}
    for method in ("wilson", "clopper-pearson"):
        lo, hi = proportion_interval(acc * n_eff, n_eff, method=method, level=0.95)
        out[method] = float(np.mean((lo <= mu) & (mu <= hi)))
    return out


def ece_coverage(
    weights: Weights, n: int, reps: int, n_boot: int, rng: np.random.Generator
) -> float:
    """Share of draws whose weighted bootstrap interval covers the weighted ECE 0.1."""
    hits = 0
    for s in range(reps):
        p = rng.uniform(0.3, 0.95, n)
        y = (rng.random(n) < p - 0.1).astype(int)
        w = weights(rng, (n,))
        ci = ck.bootstrap_ece(p, y, n_bins=5, n_boot=n_boot, sample_weight=w, seed=s)
        hits += ci.low <= 0.1 <= ci.high
    return hits / reps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer draws a setting")
    args = parser.parse_args()
    bin_reps, ece_reps = (2000, 200) if args.quick else (20_000, 1000)
    rng = np.random.default_rng(7)
    print(f"per-bin 95% intervals with Kish's n_eff, {bin_reps} draws a setting")
    print(f"{'weights':>18} {'n':>5} {'mu':>5} {'mean n_eff':>10} {'wilson':>7} {'c-p':>7}")
    for name, weights in WEIGHTS.items():
        for n, mu in BIN_SETTINGS:
            rates = bin_coverage(weights, n, mu, bin_reps, rng)
            w = weights(rng, (2000, n))
            n_eff = float(np.mean(w.sum(axis=1) ** 2 / (w**2).sum(axis=1)))
            print(
                f"{name:>18} {n:>5} {mu:>5} {n_eff:>10.1f} {rates['wilson']:>7.3f} "
                f"{rates['clopper-pearson']:>7.3f}"
            )
    print(f"\nweighted bootstrap 95% interval of ECE (true 0.1), {ece_reps} draws, 500 resamples")
    print(f"{'weights':>18} {'N':>5} {'coverage':>8}")
    for name, weights in WEIGHTS.items():
        for n in ECE_SETTINGS:
            print(f"{name:>18} {n:>5} {ece_coverage(weights, n, ece_reps, 500, rng):>8.3f}")


if __name__ == "__main__":
    main()
