"""What sample weights cost, and calibkit's weighted measures beside scikit-learn's.

For N binary forecasts (p ~ U(0, 1), outcomes ~ Bernoulli(p^1.2)) and weights ~ lognormal(0, 1),
in one process with the methods taking turns (median of ``--repeat`` rounds after a warm-up):

* the whole audit unweighted and weighted (``ck.audit(p, y)``, then with ``sample_weight=w``);
* ECE unweighted and weighted;
* weighted Brier, log loss and ROC AUC: calibkit beside scikit-learn's ``brier_score_loss``,
  ``log_loss`` and ``roc_auc_score`` with ``sample_weight`` (the values are printed too: they
  agree to rounding);
* the DuckDB engine on a Parquet file of the same rows with and without a weight column.

Run: ``.venv/bin/python benchmarks/bench_weights.py [--n 1e6] [--repeat 5]``. Ratios are the
numbers to read: the machines these run on are shared and their absolute times drift.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import calibkit as ck


def _median(cases: dict[str, Callable[[], Any]], repeat: int) -> dict[str, float]:
    for fn in cases.values():  # warm-up: imports, kernels, caches
        fn()
    times: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(repeat):
        for name, fn in cases.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=1e6)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    n = int(args.n)
    rng = np.random.default_rng(0)
    p = rng.uniform(0, 1, n)
    y = (rng.uniform(0, 1, n) < p**1.2).astype(np.int64)
    w = rng.lognormal(0.0, 1.0, n)
    fast = {"n_boot": 200, "n_sims": 200}
    cases: dict[str, Callable[[], Any]] = {
        "audit": lambda: ck.audit(p, y, **fast),
        "audit, weighted": lambda: ck.audit(p, y, sample_weight=w, **fast),
        "ece": lambda: ck.ece(p, y),
        "ece, weighted": lambda: ck.ece(p, y, sample_weight=w),
        "brier+nll+auc, weighted": lambda: (
            ck.brier(p, y, sample_weight=w),
            ck.nll(p, y, sample_weight=w),
            ck.auc(p, y, sample_weight=w),
        ),
    }
    try:
        from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score

        cases["scikit-learn brier+log_loss+roc_auc, weighted"] = lambda: (
            brier_score_loss(y, p, sample_weight=w),
            log_loss(y, p, sample_weight=w),
            roc_auc_score(y, p, sample_weight=w),
        )
    except ImportError:  # pragma: no cover - scikit-learn is a dev dependency
        brier_score_loss = None
    with tempfile.TemporaryDirectory() as tmp:
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = Path(tmp) / "preds.parquet"
        pq.write_table(pa.table({"prob": p, "label": y, "w": w}), path)
        cols = {"probs": "prob", "label": "label"}
        cases["duckdb audit"] = lambda: ck.audit(str(path), engine="duckdb", columns=cols, **fast)
        cases["duckdb audit, weighted"] = lambda: ck.audit(
            str(path), engine="duckdb", columns={**cols, "weight": "w"}, **fast
        )
        t = _median(cases, args.repeat)
    print(f"N = {n:,}, weights lognormal(0, 1), median of {args.repeat} interleaved rounds\n")
    print(f"{'case':<48} {'seconds':>9}")
    for name, s in t.items():
        print(f"{name:<48} {s:>9.4f}")
    print()
    print(f"weighted / unweighted audit:        {t['audit, weighted'] / t['audit']:.2f}")
    print(f"weighted / unweighted ECE:          {t['ece, weighted'] / t['ece']:.2f}")
    print(
        f"weighted / unweighted DuckDB audit: {t['duckdb audit, weighted'] / t['duckdb audit']:.2f}"
    )
    if brier_score_loss is not None:
        peer = t["scikit-learn brier+log_loss+roc_auc, weighted"]
        ours = t["brier+nll+auc, weighted"]
        print(f"scikit-learn / calibkit, weighted Brier + log loss + AUC: {peer / ours:.2f}")
        print(
            "values: calibkit",
            [round(float(x), 12) for x in cases["brier+nll+auc, weighted"]()],
            "scikit-learn",
            [round(float(x), 12) for x in cases["scikit-learn brier+log_loss+roc_auc, weighted"]()],
        )


if __name__ == "__main__":
    main()
