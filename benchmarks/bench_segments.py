"""The segment search: its power on a planted segment, its false discoveries, and its time.

    python benchmarks/bench_segments.py            # 100 + 100 runs, then 1e6 rows x 10 features
    python benchmarks/bench_segments.py --quick    # 20 + 20 runs, then 1e5 rows

Power and false discoveries: 4,000 rows with confidences uniform in [0.5, 1] and three
features (a site A-D, a normal number cut at its quartiles, a tier 0-2 taken as categorical).
In the planted runs the forecasts at site C (about 1,000 rows) come true ``shift`` less often
than stated and everything else is calibrated; in the null runs everything is calibrated.
Power: the share of planted runs that confirm ``site = C``. A false discovery is a confirmed
segment that is not site C or inside it; the false-discovery rate is the mean over runs of
false / confirmed (0 when nothing is confirmed), and in the null runs every confirmation is
false, so there it is the share of runs that confirm anything (the family-wise error rate,
at most 5% by construction).

Time: N rows of top-label confidences and ten features (four categorical with 3 to 8 levels,
six numeric cut at quartiles), one planted segment; best of ``repeat`` calls after a warm-up
(harness.timeit), beside one ``ck.ece`` of the same rows for scale.
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


def planted(seed: int, shift: float, n: int = 4000) -> tuple[np.ndarray, np.ndarray, dict]:
    rng = np.random.default_rng(seed)
    conf = rng.uniform(0.5, 1.0, n)
    site = rng.choice(list("ABCD"), n)
    features = {"site": site, "x": rng.normal(0.0, 1.0, n), "tier": rng.integers(0, 3, n)}
    hit = rng.random(n) < conf - shift * (site == "C")
    return conf, hit, features


def repeat_runs(runs: int, shift: float) -> tuple[float, float, float]:
    """(power, false-discovery rate, share of runs with a false discovery)."""
    found = fdp = any_false = 0.0
    for run in range(runs):
        conf, hit, features = planted(10_000 + run, shift)
        result = ck.find_miscalibrated_segments(
            conf, hit, features, categorical=["tier"], seed=run, n_boot=100
        )
        names = [s.name for s in result.confirmed]
        true = "site = C" in names
        false = [name for name in names if not name.startswith("site = C")]
        found += true and shift > 0
        fdp += len(false) / max(len(names), 1)
        any_false += bool(false)
    return found / runs, fdp / runs, any_false / runs


def wide_data(n: int) -> tuple[np.ndarray, np.ndarray, dict]:
    rng = np.random.default_rng(7)
    conf = rng.uniform(0.5, 1.0, n)
    features: dict[str, np.ndarray] = {}
    for k, levels in enumerate((3, 4, 5, 8)):
        features[f"cat{k}"] = rng.integers(0, levels, n).astype(str)
    for k in range(6):
        features[f"num{k}"] = rng.normal(0.0, 1.0, n)
    weak = (features["cat1"] == "2") & (features["num0"] > 0.67)
    hit = rng.random(n) < conf - 0.1 * weak
    return conf, hit, features


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    runs = 20 if args.quick else 100
    print(f"== {runs} planted and {runs} null runs, N = 4000, family-wise level 95% ==")
    print(f"{'case':<30} {'power':>7} {'FDR':>7} {'runs with a false discovery':>28}")
    for shift in (0.08, 0.1, 0.12):
        power, fdr, any_false = repeat_runs(runs, shift)
        print(f"{f'site C {shift} overconfident':<30} {power:>7.0%} {fdr:>7.1%} {any_false:>28.0%}")
    _, fdr, any_false = repeat_runs(runs, 0.0)
    print(f"{'calibrated (null)':<30} {'-':>7} {fdr:>7.1%} {any_false:>28.0%}")

    n = 10**5 if args.quick else 10**6
    conf, hit, features = wide_data(n)
    print(f"\n== time: N = {n:.0e}, 10 features (4 categorical, 6 numeric at quartiles) ==")
    ece = H.timeit(ck.ece, conf, hit, repeat=3)
    search = H.timeit(ck.find_miscalibrated_segments, conf, hit, features, repeat=2)
    result = ck.find_miscalibrated_segments(conf, hit, features)
    ratio = search.best / ece.best
    print(f"ck.ece: {H.fmt_seconds(ece.best)}; search: {H.fmt_seconds(search.best)} ", end="")
    print(f"({ratio:.0f} ECEs), first call {H.fmt_seconds(search.first)}")
    print(f"{result.n_searched} segments searched, {result.n_screened} found on the search half")
    print(result.verdict())


if __name__ == "__main__":
    main()
