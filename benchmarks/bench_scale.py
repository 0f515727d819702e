"""The audit of 1e8 binary forecasts from a Parquet file, on every engine, beside the fastest peer.

    .venv-bench/bin/python benchmarks/bench_scale.py                 # 1e8 rows, all engines
    .venv-bench/bin/python benchmarks/bench_scale.py --rows 1e7      # smaller
    .venv-bench/bin/python benchmarks/bench_scale.py --bounded 3e8   # + a file larger than the
                                                                     #   memory DuckDB may use

Each way of auditing runs in its own child process (so its peak resident memory, from the
kernel's rusage of that child, is its own), one after another on the same file:

- ``duckdb``: ``ck.audit(path, engine="duckdb")``: the sums inside DuckDB, no row in Python;
- ``memory``: pyarrow reads the two columns, then ``ck.audit(arrays)`` (the in-memory engine);
- ``stream``: ``ck.audit(path, engine="stream")``: pyarrow batches, one held at a time;
- ``spark``: ``ck.audit(df, engine="spark")`` on ``local[2]`` (only with ``--spark``; it is
  there for clusters, and this measures its overhead on two cores honestly);
- ``peer ECE``: pyarrow read, then relplot's binned ECE (the fastest peer ECE of
  ``bench_ece.py``) on the loaded arrays;
- ``peer audit``: pyarrow read, then what a peer audit takes: relplot's binned ECE and
  scikit-learn's ``brier_score_loss``, ``log_loss`` and ``roc_auc_score``.

Rows per second and the ratio to the in-memory path are printed (ratios hold on a shared,
noisy machine; absolute times drift). ``--bounded N`` writes a second file of N rows and audits
it with DuckDB held to ``--memory-limit`` (default 1 GB): the file is larger than that, the
audit still completes, and its peak memory is printed. Results also go to
``benchmarks/results/bench_scale.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "results" / "data"
COLUMNS = {"probs": "p", "label": "y"}
FAST = {"n_boot": 200, "n_sims": 200}  # the interval and floor come from bin sums: cheap


def make_file(rows: int, path: Path, seed: int = 0) -> Path:
    """Calibrated binary forecasts, written in row groups of 2^20 without holding them all."""
    if path.exists():
        return path
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    schema = pa.schema([("p", pa.float64()), ("y", pa.int8())])
    rng = np.random.default_rng(seed)
    with pq.ParquetWriter(tmp, schema) as writer:
        for start in range(0, rows, 1 << 22):
            k = min(1 << 22, rows - start)
            p = rng.random(k)
            y = (rng.random(k) < p).astype(np.int8)
            writer.write_table(pa.table({"p": p, "y": y}, schema=schema), row_group_size=1 << 20)
    tmp.replace(path)
    return path


# ----------------------------------------------------------------------------- child runs


def run_child(way: str, path: Path, memory_limit: str | None = None) -> dict:
    """One way of auditing in a fresh process: its wall time, peak RSS and numbers."""
    cmd = [sys.executable, __file__, "--child", way, "--file", str(path)]
    if memory_limit:
        cmd += ["--memory-limit", memory_limit]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage: its peak RSS
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        return {"way": way, "error": f"exit {proc.returncode}"}
    result = json.loads(out.strip().splitlines()[-1])
    result["peak_rss"] = usage.ru_maxrss * 1024
    return result


def child(way: str, path: Path, memory_limit: str | None) -> dict:
    import numpy as np
    import pyarrow.parquet as pq

    import calibkit as ck

    def read():
        table = pq.read_table(path, columns=["p", "y"])
        return table.column("p").to_numpy(), table.column("y").to_numpy()

    if way.startswith("peer"):  # imported before the clock starts, as calibkit is
        sys.path.insert(0, str(HERE))
        import peers as P
        from sklearn.metrics import brier_score_loss, log_loss, roc_auc_score
    t0 = time.perf_counter()
    out: dict = {"way": way}
    if way == "duckdb":
        if memory_limit:
            from calibkit.audit import audit_from_summary
            from calibkit.engines._plan import Binning
            from calibkit.engines.duckdb import DuckDBEngine

            engine = DuckDBEngine(path, columns=COLUMNS)
            engine.con.execute(f"SET memory_limit = '{memory_limit}'")
            engine.con.execute("SET threads = 2")
            a = audit_from_summary(engine.summarize(Binning(), where="audit"), **FAST)
        else:
            a = ck.audit(str(path), engine="duckdb", columns=COLUMNS, **FAST)
    elif way == "memory":
        p, y = read()
        out["read_s"] = time.perf_counter() - t0
        a = ck.audit(p, y, **FAST)
    elif way == "stream":
        a = ck.audit(path, engine="stream", columns=COLUMNS, **FAST)
    elif way == "spark":
        from pyspark.sql import SparkSession

        spark = (
            SparkSession.builder.master("local[2]")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.memory", "4g")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        out["session_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()  # the audit's own time; starting the JVM is reported apart
        a = ck.audit(spark.read.parquet(str(path)), engine="spark", columns=COLUMNS, **FAST)
    elif way in ("peer ECE", "peer audit"):
        p, y = read()
        out["read_s"] = time.perf_counter() - t0
        out["ece"] = float(P.relplot_binned_binary(p, y))
        if way == "peer audit":
            out["brier"] = float(brier_score_loss(y, p))
            out["nll"] = float(log_loss(y, np.clip(p, 1e-300, 1 - 1e-16)))
            out["auc"] = float(roc_auc_score(y, p))
        out["seconds"] = time.perf_counter() - t0
        return out
    else:
        raise SystemExit(f"unknown way {way!r}")
    out["seconds"] = time.perf_counter() - t0
    out.update(ece=a.ece, brier=a.brier, nll=a.nll, auc=a.auc, n=a.n)
    return out


# ----------------------------------------------------------------------------- report


def _fmt_rate(rows: int, seconds: float) -> str:
    return f"{rows / seconds / 1e6:,.1f} M rows/s"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rows", type=float, default=1e8)
    ap.add_argument("--spark", action="store_true", help="also Spark on local[2]")
    ap.add_argument("--bounded", type=float, default=0, help="rows of the larger-than-limit file")
    ap.add_argument("--memory-limit", default=None)
    ap.add_argument("--only", default=None, help="comma-separated ways to run (default: all)")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--file", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, Path(args.file), args.memory_limit)))
        return

    rows = int(args.rows)
    path = make_file(rows, DATA / f"binary_{rows}.parquet")
    size = path.stat().st_size
    print(
        f"{rows:,} binary forecasts, {path} ({size / 2**30:.2f} GiB Parquet); "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"
    )
    ways = ["duckdb", "memory", "stream", "peer ECE", "peer audit"] + (
        ["spark"] if args.spark else []
    )
    if args.only:
        ways = [w.strip() for w in args.only.split(",")]
    results = []
    for way in ways:
        r = run_child(way, path)
        results.append(r)
        print(
            f"  {way:<11} {r.get('seconds', float('nan')):8.2f} s  peak RSS "
            f"{r.get('peak_rss', 0) / 2**30:5.2f} GiB  {r}",
            flush=True,
        )
    memory = next((r for r in results if r["way"] == "memory" and "seconds" in r), None)
    base = memory["seconds"] if memory else float("nan")
    print()
    print("| way | seconds | rows / s | x in-memory path | peak memory |")
    print("|---|---|---|---|---|")
    for r in results:
        if "seconds" not in r:
            continue
        print(
            f"| {r['way']} | {r['seconds']:.2f} | {_fmt_rate(rows, r['seconds'])} | "
            f"{r['seconds'] / base:.2f} | {r['peak_rss'] / 2**30:.2f} GiB |"
        )
    report = {"rows": rows, "file_bytes": size, "results": results}
    if args.bounded:
        big = int(args.bounded)
        big_path = make_file(big, DATA / f"binary_{big}.parquet", seed=1)
        limit = args.memory_limit or "1GB"
        r = run_child("duckdb", big_path, memory_limit=limit)
        raw = big * 9  # float64 + int8 per row, uncompressed
        print(
            f"\nbounded: {big:,} rows, {big_path.stat().st_size / 2**30:.2f} GiB Parquet "
            f"({raw / 2**30:.2f} GiB of raw columns), DuckDB memory_limit {limit}: "
            f"{r.get('seconds', float('nan')):.1f} s, "
            f"peak RSS {r.get('peak_rss', 0) / 2**30:.2f} GiB "
            f"({_fmt_rate(big, r['seconds']) if 'seconds' in r else r})"
        )
        report["bounded"] = {
            "rows": big,
            "file_bytes": big_path.stat().st_size,
            "limit": limit,
            **r,
        }
    out = HERE / "results" / "bench_scale.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
