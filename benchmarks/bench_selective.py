"""Time the selective prediction measures against one sort of the same confidences.

    python benchmarks/bench_selective.py            # N = 1e6 and 1e7
    python benchmarks/bench_selective.py --quick    # N = 1e5 and 1e6

Every measure is read off ``ck.risk_coverage``'s curve (one sort, O(N) around it), so each
call costs about one ``risk_coverage``; the bootstrap of ``coverage_at_risk`` costs n_boot
times the distinct confidences on top and is timed with 100 resamples, up to N = 1e6. Two
inputs: distinct float64 confidences and float32-rounded ones (ties, as a float32 softmax
gives). Best of
``repeat`` calls after one warm-up (harness.timeit): the ratios to ``np.argsort`` hold on a
shared, noisy machine where absolute times drift.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness as H  # noqa: E402

import calibkit as ck  # noqa: E402


def _data(n: int, *, float32: bool) -> tuple[np.ndarray, np.ndarray]:
    p, _ = H.make_binary(n, seed=0)
    conf = 0.5 + 0.5 * p
    correct = (np.random.default_rng(1).random(n) < conf).astype(np.int8)
    if float32:
        conf = conf.astype(np.float32).astype(np.float64)
    return conf, correct


def bench(n: int, repeat: int) -> None:
    for float32 in (False, True):
        conf, correct = _data(n, float32=float32)
        label = "float32-rounded (ties)" if float32 else "distinct float64"
        print(f"\n== N = {n:.0e}, {label}, {np.unique(conf).size} distinct ==")
        sort = H.timeit(np.argsort, conf, repeat=repeat).best
        cases = {
            "np.argsort(conf)": (np.argsort, {}),
            "ck.risk_coverage": (ck.risk_coverage, {}),
            "ck.augrc": (ck.augrc, {}),
            "ck.prediction_rejection_ratio": (ck.prediction_rejection_ratio, {}),
            "ck.aurc(convention='rank')": (ck.aurc, {"convention": "rank"}),
            "ck.aurc(convention='trapezoid')": (ck.aurc, {"convention": "trapezoid"}),
            "ck.risk_at_coverage(0.9)": (ck.risk_at_coverage, {"target_coverage": 0.9}),
        }
        if n <= 10**6:  # the bootstrap grows with resamples x distinct confidences
            cases["ck.coverage_at_risk(0.1), 100 resamples"] = (
                ck.coverage_at_risk,
                {"target_risk": 0.1, "n_boot": 100},
            )
        print(f"{'call':<42} {'best':>10} {'/ argsort':>10}")
        for name, (fn, kwargs) in cases.items():
            args = (conf,) if fn is np.argsort else (conf, correct)
            t = H.timeit(fn, *args, repeat=repeat, **kwargs).best
            print(f"{name:<42} {H.fmt_seconds(t):>10} {t / sort:>10.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 1e5 and 1e6")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    for n in (10**5, 10**6) if args.quick else (10**6, 10**7):
        bench(n, args.repeat)


if __name__ == "__main__":
    main()
