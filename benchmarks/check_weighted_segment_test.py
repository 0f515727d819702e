"""How often does the weighted segment test flag a segment that is calibrated as the rest?

The weighted form of ``calibkit.measure.segment_change`` (each bin's weighted outcome sum of
the segment drawn from its normal law given the bin's observed total, at the effective sizes;
``WEIGHTED_SEGMENT_TEST``), over 10 equal-width bins of N = 4,000 rows with lognormal sample
weights (log-sd ``sigma``). In every case the segment and the rest share one calibration, so
every flag is a false alarm: a test at one-sided level a should flag about a of the runs.
Cases: both calibrated with the same confidences; both 0.1 overconfident with the segment's
confidences crowding the top of their bins (the shared miscalibration must be conditioned out).

Run: ``python benchmarks/check_weighted_segment_test.py [--runs 4000]`` (about a minute).
"""

from __future__ import annotations

import argparse

import numpy as np

from calibkit.measure.bins import BinStats
from calibkit.measure.segment_change import segment_change

EDGES = np.linspace(0.0, 1.0, 11)
N = 4000


def case(
    name: str, n_seg: int, sigma: float, rng: np.random.Generator
) -> tuple[BinStats, BinStats]:
    """A segment of ``n_seg`` weighted rows and the rest, sharing one calibration."""
    if name == "calibrated":
        conf = rng.uniform(0.5, 1.0, N)
        hit = rng.random(N) < conf
    else:
        conf = np.concatenate([rng.uniform(0.85, 1.0, n_seg), rng.uniform(0.5, 1.0, N - n_seg)])
        hit = rng.random(N) < conf - 0.1
    w = rng.lognormal(0.0, sigma, N)
    seg = BinStats.from_forecasts(conf[:n_seg], hit[:n_seg], edges=EDGES, sample_weight=w[:n_seg])
    rest = BinStats.from_forecasts(conf[n_seg:], hit[n_seg:], edges=EDGES, sample_weight=w[n_seg:])
    return seg, rest


def rates(name: str, n_seg: int, sigma: float, runs: int, n_sims: int = 2000) -> np.ndarray:
    """The share of ``runs`` flagged at one-sided 1% and 5%."""
    flags = np.zeros(2)
    for run in range(runs):
        seg, rest = case(name, n_seg, sigma, np.random.default_rng(70_000 + run))
        p_value = segment_change(seg, rest, n_sims=n_sims, seed=run).p_value
        flags += [p_value <= 0.01, p_value <= 0.05]
    return flags / runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4000)
    runs = parser.parse_args().runs
    print(f"false-alarm rates over {runs} runs (nominal one-sided 1% / 5%), lognormal weights")
    print(f"{'case':<28}{'segment':>8}{'sigma':>7}  {'weighted test':>16}")
    for name in ("calibrated", "overconfident, shifted"):
        for n_seg in (150, 400):
            for sigma in (0.5, 1.0):
                r = rates(name, n_seg, sigma, runs)
                print(f"{name:<28}{n_seg:>8}{sigma:>7}  {f'{r[0]:.2%} / {r[1]:.2%}':>16}")


if __name__ == "__main__":
    main()
