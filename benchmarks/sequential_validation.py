"""Does the sequential monitor keep its level when checked after every batch, how fast does it
see a shift, and what does an update cost?

1. No change: ``--runs`` runs of 100 batches of 100 calibrated rows (confidence ~ U(0.5, 1),
   outcome ~ Bernoulli(confidence)), the monitor checked after every batch. The share of runs
   that ever alarm must stay at or below 1 - level = 5%; beside it, a fixed-sample test (the
   95% normal interval of the mean gap of all rows so far, re-checked after every batch), which
   inflates.
2. A shift after batch 30: the outcome becomes Bernoulli(confidence - 0.05) (all rows), or the
   top bin turns overconfident (confidences above 0.9: Bernoulli(confidence - 0.2)). Detection
   delay in batches after the change: quartiles over the runs that detect, and the share that
   detect by batch 100 (runs that alarmed before the change are counted apart).
3. Speed: one update with a batch of 10,000 rows, beside ``ck.reliability_bins`` of the same
   batch (one pass over it), as a ratio; the betting capital on numpy and on the numba kernel
   (``CALIBKIT_KERNEL``).

The alarm does not depend on the betting grid (0 is always on it; tests/test_sequential.py
checks this), so the simulations use ``grid=21``; the speed uses the default 1001.

Run: ``python benchmarks/sequential_validation.py [--runs 1000]`` (about 10 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import math
import os
import time
from collections.abc import Callable

import numpy as np

import calibkit as ck

BATCHES, ROWS, CHANGE = 100, 100, 30
LEVEL = 0.95

Truth = Callable[[np.ndarray, int], np.ndarray]


def calibrated(conf: np.ndarray, batch: int) -> np.ndarray:
    return conf


def shifted_all(conf: np.ndarray, batch: int) -> np.ndarray:
    return conf - 0.05 if batch > CHANGE else conf


def shifted_top_bin(conf: np.ndarray, batch: int) -> np.ndarray:
    return np.where(conf > 0.9, conf - 0.2, conf) if batch > CHANGE else conf


def first_alarm(make: Callable[[], ck.SequentialMonitor], truth: Truth, rng) -> int | None:
    """The batch (from 1) of the first alarm of one run, or None."""
    mon = make()
    for batch in range(1, BATCHES + 1):
        conf = rng.uniform(0.5, 1.0, ROWS)
        mon.update(conf, rng.random(ROWS) < truth(conf, batch))
        if mon.alarm:
            return batch
    return None


def first_naive_alarm(truth: Truth, rng) -> int | None:
    """A 95% normal interval of the mean gap of all rows so far, checked after every batch."""
    total = total_sq = 0.0
    for batch in range(1, BATCHES + 1):
        conf = rng.uniform(0.5, 1.0, ROWS)
        gap = (rng.random(ROWS) < truth(conf, batch)) - conf
        total, total_sq = total + gap.sum(), total_sq + (gap**2).sum()
        n = batch * ROWS
        mean = total / n
        sd = math.sqrt((total_sq - n * mean**2) / (n - 1))
        if abs(mean) > 1.959964 * sd / math.sqrt(n):
            return batch
    return None


def monitors() -> dict[str, Callable[[], ck.SequentialMonitor]]:
    return {
        "betting, 10 bins": lambda: ck.SequentialMonitor(method="betting", grid=21),
        "mixture, 10 bins": lambda: ck.SequentialMonitor(method="mixture"),
        "betting, in the large": lambda: ck.SequentialMonitor(n_bins=None, grid=21),
        "mixture, in the large": lambda: ck.SequentialMonitor(n_bins=None, method="mixture"),
    }


def run(name: str, truth: Truth, runs: int, seed: int) -> list[int | None]:
    rng = np.random.default_rng(seed)
    if name == "fixed-sample test, every batch":
        return [first_naive_alarm(truth, rng) for _ in range(runs)]
    make = monitors()[name]
    return [first_alarm(make, truth, rng) for _ in range(runs)]


def null_table(runs: int) -> None:
    print(f"\n## No change: {runs} runs of {BATCHES} batches x {ROWS} rows, checked every batch")
    print("| monitor | runs that ever alarmed | 95% interval (Wilson) |")
    print("|---|---|---|")
    for name in [*monitors(), "fixed-sample test, every batch"]:
        alarms = sum(a is not None for a in run(name, calibrated, runs, seed=1))
        low, high = ck.binomial_interval(alarms, runs)
        print(f"| {name} | {alarms / runs:.1%} ({alarms}/{runs}) | {low:.1%} .. {high:.1%} |")


def shift_table(runs: int) -> None:
    for label, truth in [
        ("every outcome Bernoulli(confidence - 0.05)", shifted_all),
        ("confidences above 0.9: Bernoulli(confidence - 0.2)", shifted_top_bin),
    ]:
        print(f"\n## Shift after batch {CHANGE}: {label} ({runs} runs)")
        print(
            "| monitor | alarmed before the change | detected by batch 100 "
            "| delay q25 / median / q75 (batches) |"
        )
        print("|---|---|---|---|")
        for name in monitors():
            alarms = run(name, truth, runs, seed=2)
            early = sum(a is not None and a <= CHANGE for a in alarms)
            delays = [a - CHANGE for a in alarms if a is not None and a > CHANGE]
            share = len(delays) / max(runs - early, 1)
            q = np.percentile(delays, [25, 50, 75]) if delays else [math.nan] * 3
            print(f"| {name} | {early} | {share:.1%} | {q[0]:.0f} / {q[1]:.0f} / {q[2]:.0f} |")


def speed_table() -> None:
    rng = np.random.default_rng(3)
    conf = rng.uniform(0.5, 1.0, 10_000)
    outcome = rng.random(10_000) < conf

    def best(fn: Callable[[], object], repeat: int = 5) -> float:
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return min(times)

    base = best(lambda: ck.reliability_bins(conf, outcome, n_bins=10))
    print("\n## Speed: one update with a batch of 10,000 rows")
    print(f"reference: ck.reliability_bins of the batch, {base * 1e3:.2f} ms")
    print("| monitor | ms per update | x reliability_bins |")
    print("|---|---|---|")
    for name, kwargs, kernel in [
        ("betting, 10 bins, grid 1001", {}, "numpy"),
        ("betting, 10 bins, grid 1001", {}, "numba"),
        ("betting, in the large, grid 1001", {"n_bins": None}, "numpy"),
        ("betting, in the large, grid 1001", {"n_bins": None}, "numba"),
        ("betting, 10 bins, grid 201", {"grid": 201}, "numpy"),
        ("mixture, 10 bins", {"method": "mixture"}, "numpy"),
    ]:
        os.environ["CALIBKIT_KERNEL"] = kernel
        mon = ck.SequentialMonitor(**kwargs)  # type: ignore[arg-type]
        mon.update(conf, outcome)  # a history of 10,000 rows first (and numba compiled)
        t = best(lambda mon=mon: mon.update(conf, outcome))
        print(f"| {name}, {kernel} | {t * 1e3:.1f} | {t / base:.0f} |")
    os.environ["CALIBKIT_KERNEL"] = "auto"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    args = parser.parse_args()
    speed_table()
    null_table(args.runs)
    shift_table(args.runs)


if __name__ == "__main__":
    main()
