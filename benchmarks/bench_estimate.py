"""Speed of label-free estimation and of the sequential monitor, as multiples of one pass.

Usage: python benchmarks/bench_estimate.py [--rows 1000000]

Prints, for a target of --rows rows (a 1-D top-label confidence; the reference 20,000 labelled
rows): one pass over the target (the mean of its confidences), the CBPE / ATC / DoC estimate
with 1 and with 200 resamples, the label-free monitor over 7 periods, and the sequential
monitor's update per labelled batch of 10,000. Times are the best of 3 after a warm-up call,
which is shown too (first call: lazy imports, JIT compiles).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import fmt_seconds, timeit  # noqa: E402

import calibkit as ck  # noqa: E402


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    ref = rng.uniform(0.5, 1.0, 20_000)
    ref_right = (rng.random(ref.shape[0]) < ref).astype(int)
    target = rng.uniform(0.5, 1.0, args.rows)
    one = timeit(np.mean, target, repeat=5)
    print(
        f"target rows: {args.rows:,}; one pass (mean of the confidences): {fmt_seconds(one.best)}"
    )
    print("\n| work | first call | best of 3 | passes |\n|---|---|---|---|")

    def row(name: str, fn, *a, **kw) -> None:
        t = timeit(fn, *a, **kw, repeat=3)
        print(
            f"| {name} | {fmt_seconds(t.first)} | {fmt_seconds(t.best)} "
            f"| {t.best / one.best:,.0f} |"
        )

    for method in ("cbpe", "atc", "doc"):
        est = ck.PerformanceEstimator(method=method).fit(ref, ref_right)
        row(f"{method}, 1 resample", est.estimate, target, n_boot=1)
        row(f"{method}, 200 resamples", est.estimate, target, n_boot=200)
    est = ck.PerformanceEstimator().fit(ref, ref_right)
    week = np.repeat(np.arange(7), -(-args.rows // 7))[: args.rows]
    row("cbpe by period (7 periods, 200 resamples each)", est.by_period, target, week)
    batch = rng.uniform(0, 1, 10_000)
    right = (rng.random(10_000) < batch).astype(int)
    monitor = ck.SequentialMonitor()
    t = timeit(monitor.update, batch, right, repeat=20)
    print(
        f"\nSequentialMonitor.update, batch of 10,000: first {fmt_seconds(t.first)}, "
        f"best {fmt_seconds(t.best)} ({t.best / timeit(np.mean, batch, repeat=20).best:,.0f} "
        "passes over the batch)"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
