"""Time calibkit's decide functions against one sort of the same confidences, in one run.

    .venv-bench/bin/python benchmarks/bench_decide.py            # N = 1e7 (curve), 1e6 (actions)
    .venv-bench/bin/python benchmarks/bench_decide.py --quick    # N = 1e6 and 1e5

Issue 4's targets: ``risk_coverage`` and ``choose_threshold`` on 1e7 forecasts in about the time
of one sort of the confidences (the ratio to ``np.argsort`` is printed; both functions sort once,
stably, and do O(N) work around it; so does ``choose_binary_threshold``, the exact threshold on
P(y = 1) from the costs of a binary model's two errors), and the exact three-action search
``choose_actions`` on
1e6 forecasts in seconds. Two inputs: distinct float64 confidences (every value its own step)
and float32-rounded ones (ties, as a top-label softmax in float32 gives). Best of ``repeat``
calls after one warm-up (harness.timeit); ratios hold on a shared, noisy machine where absolute
times drift. Functions that this install of calibkit lacks are reported as missing, not timed.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness as H  # noqa: E402

import calibkit as ck  # noqa: E402


def _optional(module: str, name: str):
    try:
        mod = __import__(f"calibkit.decide.{module}", fromlist=[name])
        return getattr(mod, name)
    except (ImportError, AttributeError) as e:
        H.IMPORT_ERRORS[f"{module}.{name}"] = f"{type(e).__name__}: {e}"
        return None


def _data(n: int, seed: int, *, float32: bool) -> tuple[np.ndarray, np.ndarray, str]:
    p, y = H.make_binary(n, seed=seed)
    conf = 0.5 + 0.5 * p  # a top-label confidence lives in [1/C, 1]
    correct = (np.random.default_rng(seed + 1).random(n) < conf).astype(np.int8)
    if float32:
        conf = conf.astype(np.float32).astype(np.float64)
    label = "float32-rounded (ties)" if float32 else "distinct float64"
    return conf, correct, label


def bench_curve(n: int, repeat: int, log=print) -> list[dict]:
    rows = []
    for float32 in (False, True):
        conf, correct, label = _data(n, 0, float32=float32)
        distinct = int(np.unique(conf).size)
        log(f"\n== risk_coverage / choose_threshold, N = {n:.0e}, {label}, {distinct} distinct ==")
        sort = H.timeit(np.argsort, conf, repeat=repeat)
        stable = H.timeit(lambda c: np.argsort(-c, kind="stable"), conf, repeat=repeat)
        cases = {
            "np.argsort(conf)": sort,
            "np.argsort(-conf, kind='stable')": stable,
            "ck.risk_coverage": H.timeit(ck.risk_coverage, conf, correct, repeat=repeat),
            "ck.choose_threshold (10, 1)": H.timeit(
                ck.choose_threshold, conf, correct, 10.0, 1.0, repeat=repeat
            ),
        }
        choose_binary = _optional("binary", "choose_binary_threshold")
        if choose_binary is not None:  # the confidences read as P(y = 1), the outcomes as labels
            cases["choose_binary_threshold (1, 20)"] = H.timeit(
                choose_binary,
                conf,
                correct,
                l_false_positive=1.0,
                l_false_negative=20.0,
                repeat=repeat,
            )
        log(f"{'call':<34} {'best':>10} {'first':>10} {'/ argsort':>10}")
        for name, t in cases.items():
            ratio = t.best / sort.best
            log(
                f"{name:<34} {H.fmt_seconds(t.best):>10} {H.fmt_seconds(t.first):>10} "
                f"{ratio:>9.2f}x"
            )
            rows.append(
                {
                    "case": label,
                    "n": n,
                    "call": name,
                    "best_s": t.best,
                    "first_s": t.first,
                    "ratio_to_argsort": ratio,
                }
            )
        rc = cases["ck.risk_coverage"].result
        assert rc.coverage.size == distinct + 1 and np.isclose(rc.risk[-1], 1 - correct.mean())
    return rows


def bench_actions(n: int, repeat: int, log=print) -> list[dict]:
    rows = []
    choose_actions = _optional("actions", "choose_actions")
    guaranteed_threshold = _optional("guarantee", "guaranteed_threshold")
    conf, correct, label = _data(n, 1, float32=False)
    log(f"\n== three actions and guaranteed risk, N = {n:.0e}, {label} ==")
    sort = H.timeit(np.argsort, conf, repeat=repeat)
    calls = {"np.argsort(conf)": (np.argsort, (conf,), {})}
    if choose_actions is not None:
        costs = {"l_wrong": 10.0, "l_defer": 1.0, "l_ask": 0.5, "l_ask_wrong": 4.0}
        calls["choose_actions (10, 1, 0.5, 4)"] = (choose_actions, (conf, correct), costs)
    if guaranteed_threshold is not None:
        calls["guaranteed_threshold (0.1, 0.05)"] = (
            guaranteed_threshold,
            (conf, correct),
            {"target_risk": 0.1, "delta": 0.05},
        )
    log(f"{'call':<34} {'best':>10} {'first':>10} {'/ argsort':>10}")
    for name, (fn, args, kwargs) in calls.items():
        t = sort if fn is np.argsort else H.timeit(fn, *args, repeat=repeat, **kwargs)
        ratio = t.best / sort.best
        log(f"{name:<34} {H.fmt_seconds(t.best):>10} {H.fmt_seconds(t.first):>10} {ratio:>9.2f}x")
        rows.append({"case": label, "n": n, "call": name, "best_s": t.best, "first_s": t.first})
    for name, why in H.IMPORT_ERRORS.items():
        log(f"{name}: not timed ({why})")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="N = 1e6 (curve) and 1e5 (actions)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json-out", type=Path, default=None, help="also write the rows as JSON")
    args = ap.parse_args()
    n_curve, n_actions = (10**6, 10**5) if args.quick else (10**7, 10**6)
    print(
        f"calibkit {ck.__version__}, numpy {np.__version__}, python {platform.python_version()}, "
        f"{platform.machine()}"
    )
    rows = bench_curve(n_curve, args.repeat) + bench_actions(n_actions, args.repeat)
    if args.json_out is not None:
        args.json_out.write_text(json.dumps({"rows": rows, "missing": H.IMPORT_ERRORS}, indent=2))
        print(f"\nwrote {args.json_out}")


if __name__ == "__main__":
    main()
