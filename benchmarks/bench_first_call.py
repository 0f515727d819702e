"""The first call in a fresh process: what a user waits for the first time, not the warm number.

Each measurement runs in its own Python process (``python -c ...``), so imports, numba's loading
of its compiled kernels, and (with an empty cache) numba's compilation are all counted. Three
states of the numba cache are compared, for ``ck.ece`` and ``ck.audit`` on N binary forecasts
and for ``calibkit audit`` on a CSV file of N rows:

* ``numpy``: ``CALIBKIT_KERNEL=numpy`` (no numba at all: the reference path);
* ``auto, cold``: the default kernel choice with an empty numba cache (``NUMBA_CACHE_DIR`` set
  to a new folder): the first run after installing ``calibkit[fast]``;
* ``auto, warm``: the default with the cache the cold run filled: every later run.
* ``numba, cold``: ``CALIBKIT_KERNEL=numba`` with an empty cache: the compiled path forced.

Run: ``.venv/bin/python benchmarks/bench_first_call.py [--sizes 1e6,1e7,1e8] [--repeat 3]``.
The table gives the median wall time of the whole process and of the call itself.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CALL = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
import calibkit as ck
t1 = time.perf_counter()
n, what = int(float(sys.argv[1])), sys.argv[2]
rng = np.random.default_rng(0)
p = rng.uniform(0, 1, n)
y = (rng.uniform(0, 1, n) < p).astype(np.int64)
t2 = time.perf_counter()
if what == "ece":
    ck.ece(p, y)
else:
    ck.audit(p, y)
t3 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "call": t3 - t2}))
"""


def _run(args: list[str], env: dict[str, str]) -> tuple[float, dict[str, float] | None]:
    import time

    t0 = time.perf_counter()
    out = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - t0
    last = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else ""
    return wall, (json.loads(last) if last.startswith("{") else None)


def _env(kernel: str, cache: str) -> dict[str, str]:
    env = dict(os.environ, CALIBKIT_KERNEL=kernel, NUMBA_CACHE_DIR=cache)
    env.pop("PYTHONWARNINGS", None)
    return env


def _csv(n: int, folder: Path) -> Path:
    import numpy as np

    rng = np.random.default_rng(0)
    p = rng.uniform(0, 1, n)
    y = (rng.uniform(0, 1, n) < p).astype(np.int64)
    path = folder / f"binary_{n}.csv"
    with path.open("w") as fh:
        fh.write("proba,label\n")
        np.savetxt(fh, np.column_stack([p, y]), fmt=["%.17g", "%d"], delimiter=",")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1e6,1e7,1e8")
    parser.add_argument("--cli-sizes", default="1e4,1e6")
    parser.add_argument("--repeat", type=int, default=3)
    a = parser.parse_args()
    sizes = [int(float(s)) for s in a.sizes.split(",") if s]
    cli_sizes = [int(float(s)) for s in a.cli_sizes.split(",") if s]
    calibkit = str(Path(sys.executable).with_name("calibkit"))
    rows: list[tuple[str, str, float, float | None]] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for what, n in [(w, n) for w in ("ece", "audit") for n in sizes] + [
            ("cli", n) for n in cli_sizes
        ]:
            path = _csv(n, folder) if what == "cli" else None
            for state in ("numpy", "auto, cold", "auto, warm", "numba, cold"):
                walls, calls = [], []
                for r in range(a.repeat):
                    kernel = state.split(",")[0]
                    cache = str(folder / f"cache-{what}-{n}-{kernel}-{r}")
                    env = _env("numpy" if state == "numpy" else kernel, cache)
                    if state == "auto, warm":  # fill the cache first, then time a new process
                        env["NUMBA_CACHE_DIR"] = str(folder / f"warm-{what}-{n}")
                    if what == "cli":
                        args = [calibkit, "audit", str(path), "--quiet"]
                    else:
                        args = [sys.executable, "-c", CALL, str(n), what]
                    if state == "auto, warm" and r == 0:
                        _run(args, env)
                    wall, inner = _run(args, env)
                    walls.append(wall)
                    if inner is not None:
                        calls.append(inner["call"])
                call = statistics.median(calls) if calls else None
                rows.append((f"{what} N={n:.0e}", state, statistics.median(walls), call))
                shown = "" if call is None else f"   call {call:8.3f} s"
                print(f"{what:>6} N={n:.0e}  {state:<12} process {rows[-1][2]:7.3f} s{shown}")
    print("\n| workload | kernel, numba cache | whole process | the call |")
    print("|---|---|---|---|")
    for name, state, wall, call in rows:
        print(f"| {name} | {state} | {wall:.2f} s | {'-' if call is None else f'{call:.3f} s'} |")


if __name__ == "__main__":
    main()
