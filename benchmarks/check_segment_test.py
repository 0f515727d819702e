"""How often does each test flag a segment that is calibrated as the rest of the rows?

Two ways to ask whether a segment is calibrated worse than the other rows of the same data,
both over 10 equal-width bins of N = 4,000 rows, one-sided: the segment test of
``calibkit.measure.segment_change`` (each bin's events conditioned on, Fisher's noncentral
hypergeometric draws) and the monitor's no-change band (``ece_change_band``: a pooled gap
plugged in, normal draws). In every case below the segment and the rest share one calibration,
so every flag is a false alarm: a test at level a should flag about a of the runs.

Run: ``python benchmarks/check_segment_test.py [--runs 4000]`` (a few minutes).
"""

from __future__ import annotations

import argparse

import numpy as np

from calibkit.measure.bins import BinStats
from calibkit.measure.change import ece_change_band
from calibkit.measure.segment_change import segment_change

EDGES = np.linspace(0.0, 1.0, 11)
N = 4000


def case(name: str, n_seg: int, rng: np.random.Generator) -> tuple[BinStats, BinStats]:
    """A segment of ``n_seg`` rows and the rest, sharing one calibration."""
    if name == "calibrated":  # both calibrated, the same confidences
        conf = rng.uniform(0.5, 1.0, N)
        hit = rng.random(N) < conf
    else:  # both 0.1 overconfident; the segment's confidences crowd the top of their bins
        conf = np.concatenate([rng.uniform(0.85, 1.0, n_seg), rng.uniform(0.5, 1.0, N - n_seg)])
        hit = rng.random(N) < conf - 0.1
    seg = BinStats.from_forecasts(conf[:n_seg], hit[:n_seg], edges=EDGES)
    rest = BinStats.from_forecasts(conf[n_seg:], hit[n_seg:], edges=EDGES)
    return seg, rest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=4000)
    runs = parser.parse_args().runs
    print(f"false-alarm rates over {runs} runs (nominal one-sided 1% and 5%)")
    print(f"{'case':<28}{'segment':>8}  {'segment test':>18}  {'monitor band':>18}")
    for name in ("calibrated", "overconfident, shifted"):
        for n_seg in (150, 400):
            flags = np.zeros((2, 2))
            for run in range(runs):
                seg, rest = case(name, n_seg, np.random.default_rng(50_000 + run))
                p_value = segment_change(seg, rest, seed=run).p_value
                for j, alpha in enumerate((0.01, 0.05)):
                    flags[0, j] += p_value <= alpha
                    band = ece_change_band(rest, seg, level=1 - 2 * alpha, seed=run)
                    flags[1, j] += band.change > band.high
            rates = flags / runs
            ours = f"{rates[0, 0]:.2%} / {rates[0, 1]:.2%}"
            theirs = f"{rates[1, 0]:.2%} / {rates[1, 1]:.2%}"
            print(f"{name:<28}{n_seg:>8}  {ours:>18}  {theirs:>18}")


if __name__ == "__main__":
    main()
