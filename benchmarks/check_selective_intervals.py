"""How often the intervals of ck.risk_at_coverage and ck.coverage_at_risk cover the truth, in
seeded simulations: the table of docs/selective-prediction.md.

    python benchmarks/check_selective_intervals.py            # 2,000 draws a setting (minutes)
    python benchmarks/check_selective_intervals.py --quick    # 200 draws a setting

Each draw has N confidences uniform on [0.5, 1], each prediction right with probability equal
to its confidence. At coverage c the population threshold is 1 - c / 2 and the selective risk
c / 4, so the risk at coverage c is c / 4 and the coverage at risk r is 4 r (r <= 1/4).
"""

from __future__ import annotations

import argparse

import numpy as np

import calibkit as ck

RISK_SETTINGS = [(100, 0.2), (400, 0.5), (400, 0.9), (2000, 0.5), (10_000, 0.8)]
COVERAGE_SETTINGS = [(500, 0.15), (2000, 0.15), (500, 0.05), (5000, 0.02)]


def _draw(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    conf = rng.uniform(0.5, 1.0, n)
    return conf, (rng.random(n) < conf).astype(int)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 draws a setting")
    args = parser.parse_args()
    reps = 200 if args.quick else 2000
    rng = np.random.default_rng(7)
    methods = ("wilson", "clopper-pearson", "jeffreys")
    print(f"risk at coverage, 95% intervals, {reps} draws a setting")
    print(f"{'N':>7} {'coverage':>8} {'acted':>6} " + " ".join(f"{m:>15}" for m in methods))
    for n, c in RISK_SETTINGS:
        hits = dict.fromkeys(methods, 0)
        for _ in range(reps):
            conf, out = _draw(rng, n)
            for m in methods:
                r = ck.risk_at_coverage(conf, out, target_coverage=c, interval=m)
                hits[m] += r.low <= c / 4 <= r.high
        cells = " ".join(f"{hits[m] / reps:>15.3f}" for m in methods)
        print(f"{n:>7} {c:>8} {round(c * n):>6} {cells}")
    boot_reps = max(100, reps // 4)
    print(f"\ncoverage at risk, 95% percentile bootstrap (500 resamples), {boot_reps} draws")
    print(f"{'N':>7} {'risk':>6} {'true coverage':>13} {'covered':>8}")
    for n, r in COVERAGE_SETTINGS:
        hits = 0
        for rep in range(boot_reps):
            conf, out = _draw(rng, n)
            res = ck.coverage_at_risk(conf, out, target_risk=r, n_boot=500, seed=rep)
            hits += res.low <= 4 * r <= res.high
        print(f"{n:>7} {r:>6} {4 * r:>13} {hits / boot_reps:>8.3f}")


if __name__ == "__main__":
    main()
