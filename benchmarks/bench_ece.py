"""Time calibkit's ECE beside every peer implementation, on the same data, in one run.

    bash benchmarks/setup_env.sh                                # once: the peers' own venv
    .venv-bench/bin/python benchmarks/bench_ece.py              # all four cases
    .venv-bench/bin/python benchmarks/bench_ece.py --quick      # small sizes only
    .venv-bench/bin/python benchmarks/bench_ece.py --no-mem     # skip the memory probe

Cases: top-label float32 (N=1e6, C=10) and (N=1e5, C=1000); binary float64 N=1e7 and 1e8.
Per peer: best of `repeat` calls after a warm-up (first call reported separately), the value
and |value - ref_ece|, peak extra resident memory of one call (forked child, VmHWM), and the
time / read-floor ratio (floor = input bytes / this machine's read bandwidth measured here).

At 1e8 a peer is skipped when the 1e7 run predicts (x10, linear) more than MAX_SECONDS per
call or more than MAX_BYTES extra memory.  Results also go to benchmarks/results/bench_ece.json.

calibkit runs twice: on its fused numba kernel (the default when numba is installed) and on
its numpy reference path (``CALIBKIT_KERNEL=numpy``). The closing table gives, per case, the
fastest peer and calibkit's speed-up over it: ratios hold on a shared, noisy machine where
absolute times drift.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import time
from pathlib import Path

# torch and numba both run OpenMP thread pools in this one process; on two cores, threads that
# spin-wait after one library's parallel region steal the cores of the next library's. Passive
# waiting keeps each library's time its own (set before either is imported).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness as H  # noqa: E402
import peers as P  # noqa: E402

import calibkit as ck  # noqa: E402


def _ck_toplabel(probs, labels):
    return ck.ece(*ck.top_label(probs, labels), n_bins=15)


def _ck_binary(p, y):
    return ck.ece(p, y, n_bins=15)


CALIBKIT_TOPLABEL = {
    "calibkit": H.on_kernel_path("numba", _ck_toplabel),
    "calibkit (numpy path)": H.on_kernel_path("numpy", _ck_toplabel),
}
CALIBKIT_BINARY = {
    "calibkit": H.on_kernel_path("numba", _ck_binary),
    "calibkit (numpy path)": H.on_kernel_path("numpy", _ck_binary),
}

MAX_SECONDS = 60.0
MAX_BYTES = 8 << 30


def _repeat_for(first: float) -> int:
    if first > 20:
        return 0
    if first > 4:
        return 1
    return 3


def bench_case(label, task, reg, ref_fn, args, bw, *, mem, predict=None, log=print):
    """Run every peer of `reg` on args; return list of row dicts."""
    rows = []
    floor = H.read_floor(*args, bw=bw)
    t0 = time.perf_counter()
    ref = ref_fn(*args)
    ref_t = time.perf_counter() - t0
    items = [("numpy ref_ece", ref_fn)] + list(reg.items())
    for name, fn in items:
        row = {"case": label, "task": task, "peer": name, "floor_s": floor}
        if predict is not None and name in predict:
            reason = predict[name]
            if reason:
                row["skipped"] = reason
                rows.append(row)
                log(f"  {name:24s} skipped: {reason}")
                continue
        try:
            # first call decides how many repeats we can afford
            gc.collect()
            t0 = time.perf_counter()
            v = fn(*args)
            first = time.perf_counter() - t0
            rep = _repeat_for(first)
            if rep:
                t = H.timeit(fn, *args, repeat=rep)
                best, v = t.best, t.result
            else:
                best = first
            row.update(
                first_s=first,
                best_s=best,
                repeat=rep,
                value=float(v),
                diff=abs(float(v) - ref),
                ratio_floor=best / floor,
            )
            if mem:
                row["mem_bytes"] = H.peak_extra_memory(fn, *args)
            log(
                f"  {name:24s} best {H.fmt_seconds(best):>10s} first {H.fmt_seconds(first):>10s}"
                f"  ECE {v:.8f} |d| {abs(v - ref):.1e}  mem {H.fmt_bytes(row.get('mem_bytes'))}"
            )
        except Exception as e:  # noqa: BLE001
            row["error"] = f"{type(e).__name__}: {e}"[:200]
            log(f"  {name:24s} ERROR {row['error']}")
        rows.append(row)
    del ref_t
    return rows


def predict_1e8(rows_1e7, scale=10.0):
    """{peer: skip reason or ''} from the 1e7 binary rows, assuming linear scaling."""
    out = {}
    for r in rows_1e7:
        if "best_s" not in r:
            out[r["peer"]] = f"failed at 1e7 ({r.get('error', r.get('skipped', '?'))})"[:120]
            continue
        t = r["best_s"] * scale
        m = r.get("mem_bytes", 0) * scale
        reasons = []
        if t > MAX_SECONDS:
            reasons.append(f"~{t:.0f} s/call predicted (1e7: {r['best_s']:.1f} s)")
        if m > MAX_BYTES:
            reasons.append(
                f"~{m / 2**30:.0f} GiB extra predicted (1e7: {r['mem_bytes'] / 2**30:.1f} GiB)"
            )
        out[r["peer"]] = "; ".join(reasons)
    return out


def print_table(rows, bw):
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # plain fallback
        Console = None
    headers = ["case", "peer", "best", "first", "x floor", "extra mem", "ECE", "|ECE-ref|", "note"]
    body = []
    for r in rows:
        note = r.get("skipped") or r.get("error") or ""
        body.append(
            [
                r["case"],
                r["peer"],
                H.fmt_seconds(r.get("best_s")),
                H.fmt_seconds(r.get("first_s")),
                f"{r['ratio_floor']:.0f}" if "ratio_floor" in r else "-",
                H.fmt_bytes(r.get("mem_bytes")),
                f"{r['value']:.6f}" if "value" in r else "-",
                f"{r['diff']:.1e}" if "diff" in r else "-",
                note,
            ]
        )
    title = (
        f"ECE, 15 bins, L1 -- read bandwidth {bw.gb_per_s:.1f} GB/s (1 core); "
        f"'x floor' = best / (input bytes / bandwidth)"
    )
    if Console is None:
        print(title)
        print(" | ".join(headers))
        for b in body:
            print(" | ".join(b))
        return
    t = Table(title=title, show_lines=False)
    for h in headers:
        t.add_column(
            h, overflow="fold", justify="right" if h not in ("case", "peer", "note") else "left"
        )
    last = None
    for r, b in zip(rows, body, strict=False):
        if last is not None and r["case"] != last:
            t.add_section()
        last = r["case"]
        t.add_row(*b)
    Console(width=200).print(t)


def print_ratios(rows):
    """Per case: calibkit, the fastest peer, the speed-up, and calibkit's multiple of the floor."""
    print()
    header = (
        f"{'case':<22} {'calibkit':>10} {'numpy path':>11} {'fastest peer':>24} "
        f"{'speed-up':>9} {'x floor':>8} {'extra mem':>10}"
    )
    print(header)
    print("-" * len(header))
    for case in dict.fromkeys(r["case"] for r in rows):
        timed = [r for r in rows if r["case"] == case and "best_s" in r]
        mine = next((r for r in timed if r["peer"] == "calibkit"), None)
        ref = next((r for r in timed if r["peer"] == "calibkit (numpy path)"), None)
        peers = [r for r in timed if not r["peer"].startswith(("calibkit", "numpy ref"))]
        if mine is None or not peers:
            continue
        best = min(peers, key=lambda r: r["best_s"])
        print(
            f"{case:<22} {H.fmt_seconds(mine['best_s']):>10} "
            f"{H.fmt_seconds(ref['best_s']) if ref else '-':>11} "
            f"{best['peer'] + ' ' + H.fmt_seconds(best['best_s']):>24} "
            f"{best['best_s'] / mine['best_s']:>8.1f}x {mine['ratio_floor']:>8.1f} "
            f"{H.fmt_bytes(mine.get('mem_bytes')):>10}"
        )


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="small sizes (1e5 / 1e4x1000 / 1e6 / 1e7)")
    ap.add_argument("--no-mem", action="store_true", help="skip peak-memory measurement")
    ap.add_argument("--peers", default="", help="comma-separated subset of peer names")
    ap.add_argument("--out", default=str(HERE / "results" / "bench_ece.json"))
    a = ap.parse_args(argv)

    if P.IMPORT_ERRORS:
        print("peers that failed to import:", P.IMPORT_ERRORS)
    sel = [s for s in a.peers.split(",") if s]
    top = CALIBKIT_TOPLABEL | {k: v for k, v in P.TOPLABEL.items() if not sel or k in sel}
    binr = CALIBKIT_BINARY | {k: v for k, v in P.BINARY.items() if not sel or k in sel}

    import torch

    print(
        f"python {platform.python_version()}, numpy {np.__version__}, torch {torch.__version__} "
        f"({torch.get_num_threads()} threads), cpus {os.cpu_count()}"
    )
    bw = H.read_bandwidth()
    print(
        f"read bandwidth: {bw.gb_per_s:.2f} GB/s (np.add.reduce over {H.fmt_bytes(bw.nbytes)}, "
        f"best {H.fmt_seconds(bw.best_s)})"
    )

    if a.quick:
        tl_cases, bin_sizes = [(10**5, 10), (10**4, 1000)], [10**6, 10**7]
    else:
        tl_cases, bin_sizes = [(10**6, 10), (10**5, 1000)], [10**7, 10**8]
    mem = not a.no_mem
    rows = []
    for N, C in tl_cases:
        label = f"top N={N:.0e} C={C}"
        print(label)
        args = H.make_topLabel(N, C, seed=0)
        rows += bench_case(label, "toplabel", top, P.ref_toplabel, args, bw, mem=mem)
        del args
        gc.collect()
    prev = None
    for i, N in enumerate(bin_sizes):
        label = f"binary N={N:.0e}"
        print(label)
        args = H.make_binary(N, seed=0)
        pred = predict_1e8(prev, scale=N / bin_sizes[i - 1]) if prev is not None else None
        case_rows = bench_case(label, "binary", binr, P.ref_binary, args, bw, mem=mem, predict=pred)
        rows += case_rows
        prev = case_rows
        del args
        gc.collect()

    print_table(rows, bw)
    print_ratios(rows)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"read_bandwidth_Bps": bw.bytes_per_s, "rows": rows}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
