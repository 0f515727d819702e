"""Check, in the benchmark's environment, that the measures without bins agree with their
references, and time them beside the peer that has each.

    .venv-bench/bin/python benchmarks/check_measures.py            # agreement + speed at 1e6
    .venv-bench/bin/python benchmarks/check_measures.py --large    # speed at 1e7 as well

Agreement:

- CORP: the published check of R's ``reliabilitydiag`` (outcomes [0, 0, 0, 1, 1, 1], forecasts
  [0.4, 0.3, 0.2, 0.1, 0.5, 0.9]: Brier MCB 0.1016667, DSC 0.125, UNC 0.25, score 0.2266667,
  fit [0.25, 0.25, 0.25, 0.25, 1, 1]) and scikit-learn's ``IsotonicRegression`` on random data
  with and without ties;
- smooth ECE: relplot's ``smECE`` (value and bandwidth) on several data sets;
- KS / Kuiper: MAPIE's statistics and p-values when MAPIE is installed (on data without ties,
  where its jitter changes nothing), else its documented values.

Speed (best of 3 after a warm-up): ``ck.corp(n_boot=0)`` (pooling, PAV, both decompositions)
against ``IsotonicRegression().fit`` (a plain PAV); ``ck.corp`` with its bands (no peer:
reliabilitydiag is R; the cost of one resample is printed); ``ck.smooth_ece`` against
``relplot.smECE``; the cumulative tests against MAPIE's when it is installed.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import fmt_seconds, timeit  # noqa: E402

import calibkit as ck  # noqa: E402

ROWS: list[tuple[str, float, float, float]] = []
#: Resamples of the timed band run (each band costs 2 * BANDS_BOOT PAV fits of N rows).
BANDS_BOOT = 20


def agree(name: str, theirs: float, mine: float, tol: float) -> None:
    ROWS.append((name, theirs, mine, tol))


def data(n: int, seed: int, power: float = 1.0, decimals: int | None = None):
    rng = np.random.default_rng(seed)
    f = rng.random(n)
    if decimals is not None:
        f = np.round(f, decimals)
    return f, (rng.random(n) < f**power).astype(np.int64)


def check_corp() -> None:
    from sklearn.isotonic import IsotonicRegression

    r = ck.corp([0.4, 0.3, 0.2, 0.1, 0.5, 0.9], [0, 0, 0, 1, 1, 1], n_boot=0)
    for name, published, mine in [
        ("CORP Brier MCB (reliabilitydiag)", 0.1016667, r.brier.miscalibration),
        ("CORP Brier DSC (reliabilitydiag)", 0.125, r.brier.discrimination),
        ("CORP Brier UNC (reliabilitydiag)", 0.25, r.brier.uncertainty),
        ("CORP Brier score (reliabilitydiag)", 0.2266667, r.brier.score),
    ]:
        agree(name, published, mine, 5e-8)  # published to 7 decimals
    fit = r.recalibrate([0.4, 0.3, 0.2, 0.1, 0.5, 0.9])
    published_fit = np.array([0.25, 0.25, 0.25, 0.25, 1.0, 1.0])
    agree("CORP fit (reliabilitydiag), max |d|", 0.0, float(np.abs(fit - published_fit).max()), 0)
    for decimals in (None, 2):
        x, y = data(100_000, 1, 1.4, decimals)
        theirs = IsotonicRegression(y_min=0.0, y_max=1.0).fit(x, y).predict(x)
        mine = ck.corp(x, y, n_boot=0).recalibrate(x)
        agree(
            f"CORP vs sklearn IsotonicRegression{' (ties)' if decimals else ''}, max |d|",
            0.0,
            float(np.abs(mine - theirs).max()),
            1e-12,
        )


def check_smooth() -> None:
    import relplot

    for seed, n, power in [(0, 1000, 1.0), (1, 5000, 1.5), (2, 300, 0.5), (3, 100_000, 1.05)]:
        f, y = data(n, seed, power)
        theirs, width = relplot.smECE(f, y.astype(float), return_width=True)
        mine = ck.smooth_ece(f, y)
        agree(f"smECE relplot N={n} (sigma {width:.4g})", theirs, mine.value, 1e-6)
        agree(f"smECE bandwidth N={n}", width, mine.bandwidth, 0)


def check_cumulative() -> None:
    if importlib.util.find_spec("mapie") is None:
        # MAPIE's documented values (its docstrings): KS statistic 0.978 on this example; the
        # CDFs of the limits at 1: 0.3708 and 0.0634
        c = ck.cumulative_calibration([0.1, 0.9, 0.21, 0.9, 0.5], [0, 1, 0, 1, 0])
        agree("KS statistic (MAPIE docs)", 0.978, round(c.ks.statistic, 3), 0)
        from calibkit.measure.distributions import brownian_max_abs_sf, brownian_range_sf

        agree("KS limit CDF at 1 (MAPIE docs)", 0.3708, round(1 - brownian_max_abs_sf(1), 4), 0)
        agree("Kuiper limit CDF at 1 (MAPIE docs)", 0.0634, round(1 - brownian_range_sf(1), 4), 0)
        print("(MAPIE is not installed: checked against its documented values)")
        return
    from mapie.metrics import calibration as m

    for seed, n, power in [(0, 2000, 1.0), (1, 5000, 1.3)]:
        f, y = data(n, seed, power)
        c = ck.cumulative_calibration(f, y)
        agree(
            f"KS statistic MAPIE N={n}", m.kolmogorov_smirnov_statistic(y, f), c.ks.statistic, 1e-6
        )
        agree(f"KS p-value MAPIE N={n}", m.kolmogorov_smirnov_p_value(y, f), c.ks.p_value, 1e-6)
        # MAPIE's range leaves out the start C = 0: equal when the path crosses 0
        agree(f"Kuiper statistic MAPIE N={n}", m.kuiper_statistic(y, f), c.kuiper.statistic, 1e-6)


def speed(n: int) -> None:
    import relplot
    from sklearn.isotonic import IsotonicRegression

    x, y = data(n, 11, 1.2)
    lines = []
    ours = timeit(ck.corp, x, y, n_boot=0)
    peer = timeit(lambda: IsotonicRegression(y_min=0.0, y_max=1.0).fit(x, y))
    lines.append(("CORP fit + decompositions", ours.best, "sklearn IsotonicRegression", peer.best))
    bands = timeit(ck.corp, x, y, n_boot=BANDS_BOOT, repeat=0)
    lines.append((f"CORP + both bands, n_boot={BANDS_BOOT}", bands.best, "-", math.nan))
    per = (bands.best - ours.best) / (2 * BANDS_BOOT)
    lines.append(("  one resample of one band", per, "-", math.nan))
    ours = timeit(ck.smooth_ece, x, y)
    peer = timeit(relplot.smECE, x, y.astype(float))
    lines.append(("smooth ECE (searched)", ours.best, "relplot.smECE", peer.best))
    ours = timeit(ck.cumulative_calibration, x, y)
    if importlib.util.find_spec("mapie") is not None:
        from mapie.metrics import calibration as m

        peer = timeit(lambda: (m.kolmogorov_smirnov_p_value(y, x), m.kuiper_p_value(y, x)))
        lines.append(("KS + Kuiper tests", ours.best, "MAPIE KS + Kuiper p-values", peer.best))
    else:
        lines.append(("KS + Kuiper tests", ours.best, "(MAPIE not installed)", math.nan))
    print(f"\nspeed at N = {n:,} (best of 3 after a warm-up)")
    for name, mine, peer_name, theirs in lines:
        ratio = "" if math.isnan(theirs) else f"  {theirs / mine:5.1f}x faster"
        peer_text = "" if math.isnan(theirs) else f"{peer_name} {fmt_seconds(theirs)}"
        print(f"  {name:32s} calibkit {fmt_seconds(mine):>9s}   {peer_text}{ratio}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", action="store_true", help="time at 1e7 rows as well")
    args = parser.parse_args()
    check_corp()
    check_smooth()
    check_cumulative()
    worst = True
    for name, theirs, mine, tol in ROWS:
        ok = abs(theirs - mine) <= tol
        worst &= ok
        print(
            f"{name:46s} reference {theirs:.10g}  calibkit {mine:.10g}  {'ok' if ok else 'DIFFERS'}"
        )
    print("all agree" if worst else "DISAGREEMENT")
    speed(1_000_000)
    if args.large:
        speed(10_000_000)


if __name__ == "__main__":
    main()
