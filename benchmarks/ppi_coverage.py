"""Coverage of the judged audit's 95% intervals (prediction-powered inference against the naive
judge-as-truth numbers) on the shipped stated-confidence data: the table of docs/judged.md.

    python benchmarks/ppi_coverage.py            # 500 repeats per setting (several minutes)
    python benchmarks/ppi_coverage.py --quick    # 30 repeats per setting (under a minute)

The data: examples/data/llm_stated_confidence.parquet (72,185 replies of 11 models; confidence =
stated_confidence). Its real ``correct`` plays the person; the truth is each measure on all
72,185 real labels. In each repeat a judge is made by flipping a copy of ``correct`` with
probability 0.05 + 0.20 * (1 - confidence), independently per item, and n items (drawn uniformly
without replacement) keep the person's label. Coverage: the share of repeats whose interval
holds the truth (per-bin: averaged over the bins that have an interval).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import calibkit as ck
from calibkit.measure.slope import calibration_slope
from calibkit.stated import judged_audit

DATA = Path(__file__).resolve().parents[1] / "examples" / "data" / "llm_stated_confidence.parquet"


def flip_rate(conf: np.ndarray) -> np.ndarray:
    """The judge's error rate at each confidence."""
    return 0.05 + 0.20 * (1.0 - conf)


def covers(ci: tuple[float, float] | None, truth: float) -> float:
    return float("nan") if ci is None else float(ci[0] <= truth <= ci[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="30 repeats per setting")
    parser.add_argument("--repeats", type=int, default=None)
    parser.add_argument("--n-boot", type=int, default=200)
    args = parser.parse_args()
    repeats = args.repeats or (30 if args.quick else 500)
    import pyarrow.parquet as pq

    table = pq.read_table(DATA, columns=["stated_confidence", "correct"])
    conf = table.column("stated_confidence").to_numpy().astype(np.float64)
    y = table.column("correct").to_numpy().astype(np.float64)
    edges = ck.bin_edges(n_bins=15)
    b = ck.bin_index(conf, edges)
    truth = {
        "accuracy": y.mean(),
        "ece": ck.ece(conf, y),
        "slope": calibration_slope(conf, y).slope,
    }
    bin_truth = {k: y[b == k].mean() for k in range(15) if (b == k).any()}
    print(f"N = {conf.size}; truth: accuracy {truth['accuracy']:.4f}, ECE {truth['ece']:.4f}, "
          f"slope {truth['slope']:.4f}; judge error rate 0.05 + 0.20 (1 - confidence), "
          f"{repeats} repeats, {args.n_boot} bootstrap resamples")  # fmt: skip
    rows = []
    start = time.perf_counter()
    for n in (200, 500):
        rng = np.random.default_rng(n)
        cov: dict[str, list[float]] = {}
        for _ in range(repeats):
            judge = np.where(rng.random(conf.size) < flip_rate(conf), 1.0 - y, y)
            person = np.full(conf.size, np.nan)
            idx = rng.choice(conf.size, n, replace=False)
            person[idx] = y[idx]
            r = judged_audit(conf, judge, person, n_boot=args.n_boot, seed=int(rng.integers(2**31)))
            for part, m in (("ppi", r.ppi), ("naive", r.naive)):
                for name in ("accuracy", "ece", "slope"):
                    hit = covers(getattr(m, name + "_ci"), truth[name])
                    cov.setdefault(f"{part} {name}", []).append(hit)
                per_bin = [covers(x.ci, bin_truth[int(round(x.lo * 15))]) for x in m.bins]
                cov.setdefault(f"{part} bins", []).append(float(np.nanmean(per_bin)))
        rows.append((n, {k: float(np.nanmean(v)) for k, v in cov.items()}))
    took = time.perf_counter() - start
    print()
    print("| n labelled | method | accuracy | ECE | slope | per-bin accuracy (mean over bins) |")
    print("|---|---|---|---|---|---|")
    for n, c in rows:
        for part in ("ppi", "naive"):
            cells = " | ".join(
                f"{c[f'{part} {k}']:.3f}" for k in ("accuracy", "ece", "slope", "bins")
            )
            print(f"| {n} | {part.upper() if part == 'ppi' else part} | {cells} |")
    print(f"\n({took:.0f} s)")


if __name__ == "__main__":
    main()
