"""Time and check calibkit's temperature scaling beside every peer, on the same data, in one run.

    .venv-bench/bin/python benchmarks/bench_temperature.py            # demo, 1e6 x 10, 5e4 x 1000
    .venv-bench/bin/python benchmarks/bench_temperature.py --quick    # small sizes only

Cases: a 4,000-example demo (4 classes, labels ~ softmax(z*), reported z = 2.5 z*, drawn with
the mulberry32 generator, seed 11, as a JavaScript demo draws them; stored as float32), and
float32 logits (N=1e6, C=10) and (N=5e4, C=1000) with labels drawn by Gumbel-max from z / 2.5,
so the maximum-likelihood T is near 2.5.

Per method: best of 3 calls after a warm-up (the warm-up alone when it takes > 60 s), the fitted
T, its relative error against calibkit's T and against an independent reference (scipy
``minimize_scalar`` bounded over log T, xatol=1e-12, on the float64 NLL computed in chunks), and
"converged" = relative error vs the reference < 1e-4.  netcal only takes probabilities:
softmax(z) is built once per case in float64 and in float32 (not timed: that is its user's
input), and its rows also give the optimum of netcal's OWN input, log(clip(p, eps, 1 - eps)),
to tell its optimiser's error from its preprocessing's.

calibkit runs on its numba kernel and on its numpy path (``CALIBKIT_KERNEL=numpy``).  The ratio
lines give, per case, calibkit's time, the fastest converged peer and the speed-up: ratios hold
on a shared, noisy machine where absolute times drift.  Isotonic calibration on 1e6 binary
scores (scikit-learn ``IsotonicRegression(out_of_bounds="clip").fit`` vs calibkit's
``IsotonicCalibration().fit``) closes the run when ``calibkit.recalibrate.isotonic`` imports.
Results also go to benchmarks/results/bench_temperature.json.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
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
import temperature_peers as TP  # noqa: E402

import calibkit as ck  # noqa: E402

T_TRUE = 2.5
CONVERGED_REL = 1e-4
ONE_RUN_ABOVE_S = 60.0
REPEAT = 3


def _ck_fit(z, y):
    return ck.fit_temperature(z, y)


CALIBKIT = {
    "calibkit": (H.on_kernel_path("numba", _ck_fit), "logits"),
    "calibkit (numpy path)": (H.on_kernel_path("numpy", _ck_fit), "logits"),
}


def time_call(fn, *args):
    """Warm-up call, then best of REPEAT (gc collected before and disabled during each call);
    a warm-up over ONE_RUN_ABOVE_S is the only run.  Returns (best, first, repeat, result)."""
    gc.collect()
    t0 = time.perf_counter()
    res = fn(*args)
    first = time.perf_counter() - t0
    if first > ONE_RUN_ABOVE_S:
        return first, first, 0, res
    times = []
    for _ in range(REPEAT):
        gc.collect()
        gc.disable()
        try:
            t0 = time.perf_counter()
            res = fn(*args)
            times.append(time.perf_counter() - t0)
        finally:
            gc.enable()
    return min(times), first, REPEAT, res


def _rel(a: float, b: float) -> float:
    return abs(a - b) / abs(b)


class Inputs:
    """The inputs of one case, built on demand: logits, and netcal's probabilities (dropped as
    soon as no remaining method needs them, so at most one extra N x C array is alive)."""

    def __init__(self, z, y):
        self.z, self.y = z, y
        self._probs: dict[str, np.ndarray] = {}

    def get(self, kind: str) -> np.ndarray:
        if kind == "logits":
            return self.z
        if kind not in self._probs:
            self._probs.clear()
            gc.collect()
            dtype = np.float64 if kind == "probs64" else np.float32
            self._probs[kind] = TP.softmax_probs(self.z, dtype)
        return self._probs[kind]

    def drop(self):
        self._probs.clear()
        gc.collect()


def bench_case(label, z, y, methods, *, own_ref=True, log=print):
    """Reference first, then every method on the same (z, y). Returns (rows, case info)."""
    N, C = z.shape
    t0 = time.perf_counter()
    t_ref, n_eval = TP.reference_temperature(z, y)
    ref_s = time.perf_counter() - t0
    info = {"case": label, "N": N, "C": C, "t_ref": t_ref, "ref_evals": n_eval, "ref_s": ref_s}
    # calibkit's own account of the fit (untimed): passes over the data and its converged_ flag
    ts = ck.TemperatureScaling().fit(z, y)
    info.update(ck_evaluations=ts.n_evaluations_, ck_converged=bool(ts.converged_))
    log(
        f"{label}: reference T = {t_ref:.10f} ({n_eval} float64 NLL passes, {ref_s:.1f} s); "
        f"calibkit: {ts.n_evaluations_} passes, converged_={ts.converged_}"
    )
    inputs = Inputs(z, y)
    rows = []
    t_ck = None
    kinds_left = [kind for _, kind in methods.values()]
    for name, (fn, kind) in methods.items():
        kinds_left.remove(kind)
        row = {"case": label, "method": name, "input": kind}
        try:
            X = inputs.get(kind)
            best, first, rep, T = time_call(fn, X, y)
            T = float(T)
            if name == "calibkit":
                t_ck = T
            row.update(
                best_s=best,
                first_s=first,
                repeat=rep,
                T=T,
                rel_err_ref=_rel(T, t_ref),
                rel_err_ck=_rel(T, t_ck) if t_ck is not None else None,
            )
            row["converged"] = bool(row["rel_err_ref"] < CONVERGED_REL)
            if own_ref and kind.startswith("probs"):
                dtype = np.float64 if kind == "probs64" else np.float32
                t_own, _ = TP.reference_temperature(X, y, transform=TP.netcal_transform(dtype))
                row.update(t_own=t_own, rel_err_own=_rel(T, t_own), own_vs_ref=_rel(t_own, t_ref))
            extra = (
                f"  (own-input optimum {row['t_own']:.6f}: err vs it {row['rel_err_own']:.1e})"
                if "t_own" in row
                else ""
            )
            log(
                f"  {name:30s} best {H.fmt_seconds(best):>9s} first {H.fmt_seconds(first):>9s}"
                f"  T {T:.8f}  err vs ref {row['rel_err_ref']:.1e}"
                f"  {'converged' if row['converged'] else 'NOT CONVERGED'}{extra}"
            )
        except Exception as e:  # noqa: BLE001
            row["error"] = f"{type(e).__name__}: {e}"[:200]
            log(f"  {name:30s} ERROR {row['error']}")
        if kind.startswith("probs") and kind not in kinds_left:
            inputs.drop()
        rows.append(row)
    inputs.drop()
    return rows, info


def bench_isotonic(N: int, log=print):
    """sklearn IsotonicRegression(out_of_bounds="clip").fit vs calibkit IsotonicCalibration.fit
    on N binary scores; agreement = max |prediction difference| on a grid over [0, 1]."""
    from sklearn.isotonic import IsotonicRegression

    label = f"isotonic binary N={N:.0e}"
    p, y = H.make_binary(N, seed=0, true_power=1.3)
    grid = np.linspace(0.0, 1.0, 10_001)
    rows = []
    try:
        from calibkit.recalibrate.isotonic import IsotonicCalibration
    except ImportError as e:
        IsotonicCalibration = None
        log(f"{label}: calibkit.recalibrate.isotonic is not available yet ({e}); row skipped")

    def sk_fit(p, y):
        return IsotonicRegression(out_of_bounds="clip").fit(p, y)

    def ck_fit(p, y):
        return IsotonicCalibration().fit(p, y)

    methods = {"sklearn IsotonicRegression": sk_fit}
    if IsotonicCalibration is not None:
        methods = {"calibkit IsotonicCalibration": ck_fit} | methods
    preds = {}
    for name, fn in methods.items():
        row = {"case": label, "method": name, "input": "scores"}
        try:
            best, first, rep, model = time_call(fn, p, y)
            predict = model.predict_proba if name.startswith("calibkit") else model.predict
            preds[name] = np.asarray(predict(grid), dtype=np.float64)
            row.update(best_s=best, first_s=first, repeat=rep)
            log(f"  {name:30s} best {H.fmt_seconds(best):>9s} first {H.fmt_seconds(first):>9s}")
        except Exception as e:  # noqa: BLE001
            row["error"] = f"{type(e).__name__}: {e}"[:200]
            log(f"  {name:30s} ERROR {row['error']}")
        rows.append(row)
    if len(preds) == 2:
        a, b = preds.values()
        diff = float(np.max(np.abs(a - b)))
        for r in rows:
            r["max_abs_pred_diff"] = diff
        log(f"  max |calibkit - sklearn| prediction on a 10,001-point grid: {diff:.1e}")
    return rows


def _fmt_err(x):
    return "-" if x is None else f"{x:.1e}"


def print_table(rows, infos):
    headers = ["method", "input", "best", "first", "T", "err vs ck", "err vs ref", "conv", "note"]
    widths = [30, 7, 9, 9, 12, 9, 10, 4, 0]
    print()
    print(" ".join(f"{h:<{w}}" if w else h for h, w in zip(headers, widths, strict=True)))
    last = None
    for r in rows:
        if r["case"] != last:
            info = next((i for i in infos if i["case"] == r["case"]), None)
            ref = f"   (reference T = {info['t_ref']:.8f})" if info else ""
            print(f"-- {r['case']}{ref}")
            last = r["case"]
        note = r.get("error", "")
        if "t_own" in r:
            note = (
                f"own-input opt {r['t_own']:.6f} (vs ref {r['own_vs_ref']:.1e}); "
                f"err vs it {r['rel_err_own']:.1e}"
            )
        if "max_abs_pred_diff" in r:
            note = f"max |pred diff| {r['max_abs_pred_diff']:.1e}"
        cells = [
            r["method"],
            r["input"],
            H.fmt_seconds(r.get("best_s")),
            H.fmt_seconds(r.get("first_s")),
            f"{r['T']:.8f}" if "T" in r else "-",
            _fmt_err(r.get("rel_err_ck")),
            _fmt_err(r.get("rel_err_ref")),
            ("yes" if r["converged"] else "NO") if "converged" in r else "-",
            note,
        ]
        print(" ".join(f"{c:<{w}}" if w else c for c, w in zip(cells, widths, strict=True)))


def print_ratios(rows):
    print()
    header = (
        f"{'case':<26} {'calibkit':>9} {'numpy path':>10}  {'fastest converged peer':<40} "
        f"{'speed-up':>8}  fastest peer of any kind"
    )
    print(header)
    print("-" * len(header))
    summary = []
    for case in dict.fromkeys(r["case"] for r in rows):
        timed = [r for r in rows if r["case"] == case and "best_s" in r]
        mine = next((r for r in timed if r["method"] == "calibkit"), None)
        numpy_path = next((r for r in timed if r["method"] == "calibkit (numpy path)"), None)
        if case.startswith("isotonic"):
            mine = next((r for r in timed if r["method"].startswith("calibkit")), None)
            peers = [r for r in timed if not r["method"].startswith("calibkit")]
            conv = peers
        else:
            peers = [r for r in timed if not r["method"].startswith("calibkit")]
            conv = [r for r in peers if r.get("converged")]
        if mine is None:
            continue
        best = min(conv, key=lambda r: r["best_s"]) if conv else None
        anyp = min(peers, key=lambda r: r["best_s"]) if peers else None
        up = best["best_s"] / mine["best_s"] if best else None
        best_txt = f"{best['method']} {H.fmt_seconds(best['best_s'])}" if best else "none"
        any_txt = (
            f"{anyp['method']} {H.fmt_seconds(anyp['best_s'])}"
            + ("" if anyp.get("converged", True) else " (not converged)")
            if anyp
            else "-"
        )
        print(
            f"{case:<26} {H.fmt_seconds(mine['best_s']):>9} "
            f"{H.fmt_seconds(numpy_path['best_s']) if numpy_path else '-':>10}  "
            f"{best_txt:<40} {f'{up:.1f}x' if up else '-':>8}  {any_txt}"
        )
        summary.append(
            {
                "case": case,
                "calibkit_s": mine["best_s"],
                "numpy_path_s": numpy_path["best_s"] if numpy_path else None,
                "fastest_converged_peer": best["method"] if best else None,
                "fastest_converged_peer_s": best["best_s"] if best else None,
                "speed_up": up,
            }
        )
    return summary


def main(argv=None):
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="small sizes (1e5 x 10, 5e3 x 1000)")
    ap.add_argument("--methods", default="", help="comma-separated subset of peer names")
    ap.add_argument(
        "--no-own-ref", action="store_true", help="skip the optimum of netcal's own input"
    )
    ap.add_argument("--out", default=str(HERE / "results" / "bench_temperature.json"))
    a = ap.parse_args(argv)

    if TP.IMPORT_ERRORS:
        print("peers that failed to import:", TP.IMPORT_ERRORS)
    sel = [s for s in a.methods.split(",") if s]
    methods = CALIBKIT | {k: v for k, v in TP.PEERS.items() if not sel or k in sel}

    import numba
    import torch

    print(
        f"python {platform.python_version()}, numpy {np.__version__}, torch {torch.__version__} "
        f"({torch.get_num_threads()} threads), numba {numba.__version__} "
        f"({numba.config.NUMBA_NUM_THREADS} threads), cpus {os.cpu_count()}"
    )
    sizes = [(10**5, 10), (5_000, 1000)] if a.quick else [(10**6, 10), (50_000, 1000)]
    rows, infos = [], []

    z, y = TP.demo_4000x4()
    z = z.astype(np.float32)
    r, i = bench_case("demo 4000x4", z, y, methods, own_ref=not a.no_own_ref)
    rows += r
    infos.append(i)
    for N, C in sizes:
        z, y = TP.make_logits(N, C, t_true=T_TRUE, seed=0)
        r, i = bench_case(f"N={N:.0e} C={C}", z, y, methods, own_ref=not a.no_own_ref)
        rows += r
        infos.append(i)
        del z, y
        gc.collect()

    iso_n = 10**5 if a.quick else 10**6
    print(f"isotonic binary N={iso_n:.0e}")
    rows += bench_isotonic(iso_n)

    print_table(rows, infos)
    summary = print_ratios(rows)
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    clean = json.loads(
        json.dumps(
            {"cases": infos, "rows": rows, "summary": summary},
            default=lambda o: None if isinstance(o, float) and not math.isfinite(o) else str(o),
        )
    )
    out.write_text(json.dumps(clean, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
