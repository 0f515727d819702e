"""The whole audit a user runs, and each of its parts, beside the peers, in one run.

    .venv-bench/bin/python benchmarks/bench_audit.py            # 1e6 and 1e7, every case
    .venv-bench/bin/python benchmarks/bench_audit.py --quick    # small sizes, a quick look
    .venv-bench/bin/python benchmarks/bench_audit.py --big      # also 1e8 (about 6 GiB free)

Cases (binary forecasts p ~ U(0, 1), outcomes ~ Bernoulli(p^1.2), float64 and int8):

- whole audit, ``ck.audit(p, y)`` (every number: table, ECE with its interval and noise
  floor, Brier and its decompositions, log loss, exact AUC, Hosmer-Lemeshow, Spiegelhalter,
  the calibration slope) against the peer combination: relplot's ``binnedECE`` and
  scikit-learn's ``brier_score_loss``, ``log_loss`` and ``roc_auc_score``; and against
  calibkit's own ``ck.ece`` on the same data (the issue's "at most 10x its ECE"). The audit's
  peak extra resident memory is printed beside one copy of the scores.
- calibration slope: ``ck.calibration_slope`` (one pass: the logit moment histogram, the fit on
  its cells) beside the two-pass fit it replaced (the count histogram's start, then one Newton
  round over the rows; still the path of logits beyond +-37) and scikit-learn's unpenalised
  ``LogisticRegression`` on the logits (lbfgs, tol 1e-10); the three slopes agree (printed).
- ECE alone: ``ck.ece`` against relplot's ``binnedECE``.
- distinct measures (1e6): ``ck.corp(n_boot=0)``, ``ck.smooth_ece`` and
  ``ck.cumulative_calibration`` on the numba kernels and on the numpy path, beside
  scikit-learn's ``IsotonicRegression().fit`` and relplot's ``smECE``.

The whole-audit case also times the audit with its slope fitted the previous way
(``audit_two_pass_slope``), to show what the one-pass slope saves.
- exact AUC: ``ck.auc`` against ``sklearn.metrics.roc_auc_score``. calibkit's value is checked
  to be the exact pair count divided once (correctly rounded, by ``fractions``) and
  scikit-learn's to lie within 4 ulps of it (its trapezoid sums round; the ulps apart are
  printed).
- risk-coverage: ``ck.risk_coverage`` of the predicted class's confidence against one
  ``np.argsort`` and a cumulative sum (the least a sort-based curve costs).
- temperature: ``ck.fit_temperature`` against torch LBFGS with a strong-Wolfe line search
  (float32, and on a float64 copy; ``temperature_peers.torch_lbfgs``) on float32 logits:
  the wide low-information model of the issue (z* ~ 1.5 N(0, 1) for each of 1000 classes,
  labels by Gumbel-max from z*, logits 2.5 z*; N = 5e4), the 1e6 x 10 case and the confident
  wide case of ``bench_temperature.py``. "converged" means within 1e-4 of the independent
  float64 optimum (``temperature_peers.reference_temperature``); only converged peers count.
- DuckDB: ``ck.audit(path, engine="duckdb")`` on a Parquet file of 1e7 rows (1e8 with
  ``--big``) against the floor of one DuckDB scan with one GROUP BY of the same file (the 15
  bins' count, sum p and sum y); the number of queries the engine sends is printed.

calibkit runs on its numba kernels (``CALIBKIT_KERNEL=numba``, as ``pip install
'calibkit[fast]'`` gives them once they are loaded: an audit of 2e6 forecasts or more loads
them by itself; ``bench_ece.py`` and ``bench_temperature.py`` also time the numpy path).

Each case runs every method once to warm up (imports, JIT, caches), then ``--repeat`` rounds
in which the methods take turns (interleaved, so that drifting load on a shared machine
falls on all of them alike); the median of the rounds is reported, and the ratios are taken
of medians. Results also go to benchmarks/results/bench_audit.json.
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
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

# torch and numba both run thread pools in this one process; passive waiting keeps each
# library's time its own (set before either is imported).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness as H  # noqa: E402
import peers as P  # noqa: E402
import temperature_peers as TP  # noqa: E402
from bench_scale import make_file  # noqa: E402

import calibkit as ck  # noqa: E402

os.environ["CALIBKIT_KERNEL"] = "numba"  # see the module docstring
COLUMNS = {"probs": "p", "label": "y"}
CONVERGED_REL = 1e-4


# ----------------------------------------------------------------------------- timing


def interleaved(methods: dict[str, Callable[[], Any]], repeat: int) -> dict[str, dict]:
    """Each method once to warm up, then ``repeat`` rounds of all of them in turn: per method
    the median and the list of times, the warm-up time and the last result."""
    out: dict[str, dict] = {}
    for name, fn in methods.items():
        gc.collect()
        t0 = time.perf_counter()
        result = fn()
        out[name] = {"first": time.perf_counter() - t0, "times": [], "result": result}
    for _ in range(repeat):
        for name, fn in methods.items():
            gc.collect()
            gc.disable()
            try:
                t0 = time.perf_counter()
                out[name]["result"] = fn()
                out[name]["times"].append(time.perf_counter() - t0)
            finally:
                gc.enable()
    for row in out.values():
        row["median"] = float(np.median(row["times"])) if row["times"] else row["first"]
    return out


ROWS: list[dict] = []  # the ratio table: one row per (case, calibkit method, peer)


def ratio_row(case: str, mine: str, timed: dict, peer: str, *, target: str, note: str = "") -> None:
    ours, theirs = timed[mine]["median"], timed[peer]["median"]
    ROWS.append(
        {
            "case": case,
            "calibkit": mine,
            "calibkit_s": ours,
            "peer": peer,
            "peer_s": theirs,
            "ratio": theirs / ours,
            "target": target,
            "note": note,
        }
    )
    print(
        f"  {mine} {H.fmt_seconds(ours)} vs {peer} {H.fmt_seconds(theirs)}: "
        f"{theirs / ours:.1f}x (target {target}){'; ' + note if note else ''}",
        flush=True,
    )


def show(timed: dict) -> None:
    for name, row in timed.items():
        print(
            f"    {name:<44} median {H.fmt_seconds(row['median']):>9}  "
            f"(first {H.fmt_seconds(row['first'])}, {len(row['times'])} rounds)",
            flush=True,
        )


# ----------------------------------------------------------------------------- the peers


def _sklearn() -> Any:
    from sklearn import metrics

    return metrics


def peer_audit(p: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """What a peer audit takes: relplot's binned ECE and scikit-learn's Brier, log loss, AUC."""
    m = _sklearn()
    return {
        "ece": float(P.relplot_binned_binary(p, y)),
        "brier": float(m.brier_score_loss(y, p)),
        "nll": float(m.log_loss(y, np.clip(p, 1e-300, 1 - 1e-16))),
        "auc": float(m.roc_auc_score(y, p)),
    }


def audit_two_pass_slope(p: np.ndarray, y: np.ndarray) -> Any:
    """``ck.audit`` with the calibration slope fitted as before the moment histogram: the
    count histogram's start, then a Newton round over the rows (``rows_slope``)."""
    from calibkit.engines import memory
    from calibkit.measure.slope import rows_slope

    one_pass = memory.slope_of
    memory.slope_of = lambda conf, outcome, sample_weight=None: rows_slope(  # type: ignore
        conf, outcome, sample_weight=sample_weight
    )
    try:
        return ck.audit(p, y)
    finally:
        memory.slope_of = one_pass


def argsort_cumsum(conf: np.ndarray, right: np.ndarray) -> np.ndarray:
    order = np.argsort(conf)
    return np.cumsum(right[order])


# ----------------------------------------------------------------------------- cases


def case_audit(n: int, repeat: int, *, memory: bool) -> None:
    p, y = H.make_binary(n, seed=1, true_power=1.2)
    case = f"whole audit, N = {n:.0e}"
    print(f"{case}", flush=True)
    timed = interleaved(
        {
            "ck.audit": lambda: ck.audit(p, y),
            "ck.audit, its slope fitted in two passes": lambda: audit_two_pass_slope(p, y),
            "ck.ece": lambda: ck.ece(p, y),
            "peer audit": lambda: peer_audit(p, y),
        },
        repeat,
    )
    show(timed)
    a, peer = timed["ck.audit"]["result"], timed["peer audit"]["result"]
    before = timed["ck.audit, its slope fitted in two passes"]["result"].calibration_slope
    assert abs(a.calibration_slope.slope - before.slope) < 1e-10 * abs(before.slope)
    assert abs(a.ece - peer["ece"]) < 1e-12, (a.ece, peer["ece"])
    assert abs(a.brier - peer["brier"]) < 1e-12 and abs(a.auc - peer["auc"]) < 1e-12
    extra = ""
    if memory:
        gc.collect()
        extra_bytes = H.peak_extra_memory(ck.audit, p, y)
        extra = (
            f"peak extra memory {H.fmt_bytes(extra_bytes)} = "
            f"{extra_bytes / p.nbytes:.2f} copies of the scores"
        )
    ratio_row(case, "ck.audit", timed, "peer audit", target=">= 10x", note=extra)
    ratio_row(
        case,
        "ck.audit",
        timed,
        "ck.audit, its slope fitted in two passes",
        target="(none)",
        note="the slope's previous fit: a count histogram's start, then a round over the rows",
    )
    ours, ece = timed["ck.audit"]["median"], timed["ck.ece"]["median"]
    ROWS.append(
        {
            "case": case,
            "calibkit": "ck.audit / ck.ece",
            "calibkit_s": ours,
            "peer": "ck.ece",
            "peer_s": ece,
            "ratio": ours / ece,
            "target": "<= 10 (audit time over ECE time)",
            "note": "",
        }
    )
    print(f"  the audit takes {ours / ece:.1f}x the time of calibkit's ECE (target <= 10)")


def on_numpy(fn: Callable[[], Any]) -> Any:
    """``fn()`` on calibkit's numpy path (the reference the numba kernels are tested against)."""
    os.environ["CALIBKIT_KERNEL"] = "numpy"
    try:
        return fn()
    finally:
        os.environ["CALIBKIT_KERNEL"] = "numba"


def case_distinct(n: int, repeat: int) -> None:
    """The audit's measures of the distinct forecasts, each on the numba kernels, on the numpy
    path, and beside a peer: CORP (pooling, PAV, decompositions) against scikit-learn's
    ``IsotonicRegression().fit`` (PAV alone), smooth ECE against relplot's ``smECE`` (the
    values agree to 1e-6, the bandwidths exactly: asserted), the KS and Kuiper tests."""
    from sklearn.isotonic import IsotonicRegression

    p, y = H.make_binary(n, seed=1, true_power=1.2)
    case = f"distinct measures, N = {n:.0e}"
    print(case, flush=True)
    methods: dict[str, Callable[[], Any]] = {
        "ck.corp(n_boot=0)": lambda: ck.corp(p, y, n_boot=0),
        "ck.corp(n_boot=0), numpy path": lambda: on_numpy(lambda: ck.corp(p, y, n_boot=0)),
        "IsotonicRegression().fit": lambda: IsotonicRegression().fit(p, y),
        "ck.smooth_ece": lambda: ck.smooth_ece(p, y),
        "ck.smooth_ece, numpy path": lambda: on_numpy(lambda: ck.smooth_ece(p, y)),
        "ck.cumulative_calibration": lambda: ck.cumulative_calibration(p, y),
        "ck.cumulative_calibration, numpy path": lambda: on_numpy(
            lambda: ck.cumulative_calibration(p, y)
        ),
    }
    if "relplot" not in H.IMPORT_ERRORS:
        import relplot

        methods["relplot smECE"] = lambda: relplot.smECE(p, y.astype(float), return_width=True)
    timed = interleaved(methods, repeat)
    show(timed)
    mine = timed["ck.smooth_ece"]["result"]
    assert mine.value == timed["ck.smooth_ece, numpy path"]["result"].value
    if "relplot smECE" in timed:
        theirs, width = timed["relplot smECE"]["result"]
        assert abs(mine.value - theirs) < 1e-6 and mine.bandwidth == width, (mine, theirs)
        ratio_row(case, "ck.smooth_ece", timed, "relplot smECE", target="(none)")
    ratio_row(case, "ck.corp(n_boot=0)", timed, "IsotonicRegression().fit", target="(none)")
    for name in ("ck.corp(n_boot=0)", "ck.smooth_ece", "ck.cumulative_calibration"):
        ratio_row(case, name, timed, f"{name}, numpy path", target="(none)")


def sklearn_slope(p: np.ndarray, y: np.ndarray) -> float:
    from sklearn.linear_model import LogisticRegression

    x = (np.log(p) - np.log1p(-p))[:, None]
    fit = LogisticRegression(penalty=None, tol=1e-10, max_iter=10_000).fit(x, y)
    return float(fit.coef_[0, 0])


def case_slope(n: int, repeat: int) -> None:
    from calibkit.measure import slope as S

    p, y = H.make_binary(n, seed=5, true_power=1.2)
    p = np.clip(p, 1e-12, 1 - 1e-12)  # finite logits for scikit-learn
    case = f"calibration slope, N = {n:.0e}"
    print(case, flush=True)
    timed = interleaved(
        {
            "ck.calibration_slope": lambda: ck.calibration_slope(p, y).slope,
            "two passes (count histogram + a row round)": lambda: S.rows_slope(p, y).slope,
            "sklearn LogisticRegression": lambda: sklearn_slope(p, y),
        },
        repeat,
    )
    show(timed)
    ours = timed["ck.calibration_slope"]["result"]
    apart = {k: abs(r["result"] - ours) / abs(ours) for k, r in timed.items()}
    assert apart["two passes (count histogram + a row round)"] < 1e-10, apart
    note = "; ".join(f"{k} {v:.0e} apart" for k, v in apart.items() if k != "ck.calibration_slope")
    ratio_row(
        case,
        "ck.calibration_slope",
        timed,
        "sklearn LogisticRegression",
        target="(none)",
        note=note,
    )
    ratio_row(
        case,
        "ck.calibration_slope",
        timed,
        "two passes (count histogram + a row round)",
        target="(none)",
    )


def case_ece(n: int, repeat: int, bw: H.Bandwidth) -> None:
    p, y = H.make_binary(n, seed=2)
    case = f"ECE alone, binary, N = {n:.0e}"
    print(case, flush=True)
    timed = interleaved(
        {
            "ck.ece": lambda: ck.ece(p, y),
            "relplot binnedECE": lambda: P.relplot_binned_binary(p, y),
        },
        repeat,
    )
    show(timed)
    floor = bw.floor(p, y)
    assert abs(timed["ck.ece"]["result"] - timed["relplot binnedECE"]["result"]) < 1e-12
    note = (
        f"one read of the input {H.fmt_seconds(floor)} ({bw.gb_per_s:.0f} GB/s): "
        f"ck.ece at {timed['ck.ece']['median'] / floor:.1f}x it (target <= 3x)"
    )
    ratio_row(case, "ck.ece", timed, "relplot binnedECE", target=">= 3x", note=note)


def case_auc(n: int, repeat: int) -> None:
    p, y = H.make_binary(n, seed=3)
    case = f"exact AUC, N = {n:.0e}"
    print(case, flush=True)
    m = _sklearn()
    timed = interleaved(
        {"ck.auc": lambda: ck.auc(p, y), "roc_auc_score": lambda: m.roc_auc_score(y, p)},
        repeat,
    )
    show(timed)
    from calibkit.measure.ranking import pair_counts

    twice_u, n_pos, n_neg = pair_counts(p, y == 1)
    ours, theirs = timed["ck.auc"]["result"], timed["roc_auc_score"]["result"]
    assert ours == float(Fraction(twice_u, 2 * n_pos * n_neg)), "not the exact pair count"
    ulps = abs(ours - theirs) / math.ulp(ours)
    assert ulps <= 4, (ours, theirs)
    note = f"values {ours!r} (exact) and {theirs!r}: {ulps:.0f} ulp apart"
    ratio_row(case, "ck.auc", timed, "roc_auc_score", target=">= 5x, same value", note=note)


def case_risk_coverage(n: int, repeat: int) -> None:
    p, y = H.make_binary(n, seed=4)
    conf = np.maximum(p, 1.0 - p)  # the predicted class's confidence
    right = ((p >= 0.5) == (y == 1)).astype(np.int8)
    case = f"risk-coverage, N = {n:.0e}"
    print(case, flush=True)
    timed = interleaved(
        {
            "ck.risk_coverage": lambda: ck.risk_coverage(conf, right),
            "np.argsort + cumsum": lambda: argsort_cumsum(conf, right),
        },
        repeat,
    )
    show(timed)
    rc = timed["ck.risk_coverage"]["result"]
    assert rc.errors == int(np.count_nonzero(right == 0))
    ratio_row(case, "ck.risk_coverage", timed, "np.argsort + cumsum", target=">= 3x")


def low_information_logits(n: int, c: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """z* ~ 1.5 N(0, 1) for every class, labels by Gumbel-max from z*, logits 2.5 z* (float32),
    made in row chunks."""
    rng = np.random.default_rng(seed)
    z = np.empty((n, c), dtype=np.float32)
    y = np.empty(n, dtype=np.int64)
    rows = max(1, (1 << 22) // c)
    for s in range(0, n, rows):
        e = min(n, s + rows)
        zs = 1.5 * rng.standard_normal((e - s, c))
        y[s:e] = (zs + rng.gumbel(size=zs.shape)).argmax(axis=1)
        z[s:e] = 2.5 * zs
    return z, y


def case_temperature(label: str, z: np.ndarray, y: np.ndarray, repeat: int) -> None:
    case = f"temperature, {label}"
    print(case, flush=True)
    t_ref, _ = TP.reference_temperature(z, y)
    ts = ck.TemperatureScaling().fit(z, y)
    timed = interleaved(
        {
            "ck.fit_temperature": lambda: ck.fit_temperature(z, y),
            "torch LBFGS strong-Wolfe": lambda: TP.torch_lbfgs(z, y),
            "torch LBFGS strong-Wolfe, float64 copy": lambda: TP.torch_lbfgs64(z, y),
        },
        repeat,
    )
    show(timed)
    converged = {}
    for name, row in timed.items():
        err = abs(float(row["result"]) - t_ref) / t_ref
        converged[name] = err < CONVERGED_REL
        print(f"    {name:<44} T {float(row['result']):.8f}  error vs the optimum {err:.1e}")
    assert converged["ck.fit_temperature"]
    peers = [k for k in timed if k != "ck.fit_temperature" and converged[k]]
    if not peers:
        print("  no converged peer")
        return
    best = min(peers, key=lambda k: timed[k]["median"])
    note = f"calibkit: {ts.n_evaluations_} passes; optimum T = {t_ref:.8f}"
    ratio_row(case, "ck.fit_temperature", timed, best, target=">= 5x", note=note)


def case_duckdb(n: int, repeat: int) -> None:
    import duckdb

    from calibkit.engines import duckdb as ck_duckdb

    path = make_file(n, HERE / "results" / "data" / f"binary_{n}.parquet")
    case = f"DuckDB engine, Parquet, N = {n:.0e}"
    print(f"{case} ({path.stat().st_size / 2**20:.0f} MiB)", flush=True)
    con = duckdb.connect()
    scan = (
        "SELECT least(CAST(floor(p * 15) AS INT), 14) AS b, count(*), sum(p), sum(y) "
        f"FROM read_parquet('{path}') GROUP BY b"
    )
    queries = []
    fetch = ck_duckdb.DuckDBEngine.fetch

    def counted(self: Any, sql: str, *args: Any, **kw: Any) -> Any:
        queries.append(sql)
        return fetch(self, sql, *args, **kw)

    ck_duckdb.DuckDBEngine.fetch = counted  # type: ignore[method-assign]
    try:
        timed = interleaved(
            {
                "ck.audit(engine='duckdb')": lambda: ck.audit(
                    str(path), engine="duckdb", columns=COLUMNS
                ),
                "one DuckDB GROUP BY scan": lambda: con.execute(scan).fetchall(),
            },
            repeat,
        )
    finally:
        ck_duckdb.DuckDBEngine.fetch = fetch  # type: ignore[method-assign]
    show(timed)
    per_audit = len(queries) // (repeat + 1)
    ours, floor = timed["ck.audit(engine='duckdb')"]["median"], timed["one DuckDB GROUP BY scan"]
    ROWS.append(
        {
            "case": case,
            "calibkit": "ck.audit(engine='duckdb') / one scan",
            "calibkit_s": ours,
            "peer": "one DuckDB GROUP BY scan",
            "peer_s": floor["median"],
            "ratio": ours / floor["median"],
            "target": "<= 4 (audit time over one scan)",
            "note": f"{per_audit} queries per audit",
        }
    )
    print(
        f"  the DuckDB audit takes {ours / floor['median']:.1f}x one GROUP BY scan "
        f"(target <= 4); {per_audit} queries per audit"
    )


# ----------------------------------------------------------------------------- report


def print_table() -> None:
    print()
    print("| case | calibkit | peer or floor | ratio | target | note |")
    print("|---|---|---|---|---|---|")
    for r in ROWS:
        times_lower = "/" in r["calibkit"]
        ratio = f"{r['ratio']:.1f}" if times_lower else f"**{r['ratio']:.1f}x**"
        print(
            f"| {r['case']} | {r['calibkit']} {H.fmt_seconds(r['calibkit_s'])} | {r['peer']} "
            f"{H.fmt_seconds(r['peer_s'])} | {ratio} | {r['target']} | {r['note']} |"
        )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="small sizes (1e5, 1e6; 1e4 x 100)")
    ap.add_argument("--big", action="store_true", help="also 1e8 rows (audit, ECE, DuckDB)")
    ap.add_argument("--repeat", type=int, default=5, help="interleaved rounds per case")
    ap.add_argument(
        "--only", default="", help="comma-separated cases: audit,distinct,slope,ece,auc,rc,t,duckdb"
    )
    ap.add_argument("--out", default=str(HERE / "results" / "bench_audit.json"))
    a = ap.parse_args(argv)
    if H.IMPORT_ERRORS:
        print("peers that failed to import:", H.IMPORT_ERRORS)
    only = {s for s in a.only.split(",") if s}

    def wanted(name: str) -> bool:
        return not only or name in only

    import numba
    import torch

    print(
        f"python {platform.python_version()}, numpy {np.__version__}, numba {numba.__version__}, "
        f"torch {torch.__version__} ({torch.get_num_threads()} threads), cpus {os.cpu_count()}",
        flush=True,
    )
    bw = H.read_bandwidth(nbytes=1 << 29)
    sizes = [10**5, 10**6] if a.quick else [10**6, 10**7]
    big = sizes[-1] * 10 if a.big else None
    if wanted("audit"):
        for n in sizes + ([big] if big else []):
            case_audit(n, a.repeat if n < 10**8 else max(1, a.repeat // 2), memory=n >= 10**7)
    if wanted("distinct"):
        case_distinct(sizes[0], a.repeat)
    if wanted("slope"):
        case_slope(sizes[-1], a.repeat)
    if wanted("ece"):
        for n in [sizes[-1]] + ([big] if big else []):
            case_ece(n, a.repeat, bw)
    if wanted("auc"):
        case_auc(sizes[-1], a.repeat)
    if wanted("rc"):
        case_risk_coverage(sizes[-1], a.repeat)
    if wanted("t"):
        wide = (5_000, 100) if a.quick else (50_000, 1000)
        narrow = (10**5, 10) if a.quick else (10**6, 10)
        z, y = low_information_logits(*wide)
        case_temperature(f"{wide[0]:.0e} x {wide[1]}, low information", z, y, a.repeat)
        z, y = TP.make_logits(*narrow, t_true=2.5, seed=0)
        case_temperature(f"{narrow[0]:.0e} x {narrow[1]}", z, y, a.repeat)
        z, y = TP.make_logits(*wide, t_true=2.5, seed=0)
        case_temperature(f"{wide[0]:.0e} x {wide[1]}, confident", z, y, a.repeat)
        del z, y
        gc.collect()
    if wanted("duckdb"):
        for n in [sizes[-1]] + ([big] if big else []):
            case_duckdb(n, a.repeat)
    print_table()
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"bandwidth_gb_s": bw.gb_per_s, "rows": ROWS}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
