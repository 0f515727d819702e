"""How long calibkit takes to refuse hostile input: every reader, on the inputs of the bad-input
campaign, at growing sizes. Each line is one input; the time is the best of ``--repeat`` runs of
the whole call (read and refuse, or read and audit). The claim this measures: no input makes a
reader hang or run for minutes; refusals cost about a pass over the bytes.

Run: ``.venv/bin/python benchmarks/bench_bad_input.py [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import calibkit as ck
from calibkit import InputError
from calibkit.recalibrate.base import load_calibrator


def _time(call: Callable[[], object], repeat: int) -> tuple[float, str]:
    best, outcome = float("inf"), ""
    for _ in range(repeat):
        start = time.perf_counter()
        try:
            call()
            outcome = "read"
        except InputError as exc:
            outcome = "refused: " + str(exc)[:60]
        best = min(best, time.perf_counter() - start)
    return best, outcome


def cases(folder: Path) -> list[tuple[str, int, Callable[[], object]]]:
    out: list[tuple[str, int, Callable[[], object]]] = []
    for size in (1_000, 100_000, 1_000_000):
        deep = folder / f"deep_{size}.jsonl"
        deep.write_text('{"p": 0.5, "label": 1, "x": ' + "[" * size + "]" * size + "}\n")
        out.append(("JSON lines nested deep", size, lambda d=deep: ck.read_predictions(d)))
        quotes = folder / f"quotes_{size}.csv"
        quotes.write_text("p,label\n" + '"0.5",1\n' * (size // 8) + '"0\\"5",1\n')
        out.append(
            ("CSV with a backslash-escaped quote", size, lambda q=quotes: ck.read_predictions(q))
        )
        noise = folder / f"noise_{size}.parquet"
        noise.write_bytes(os.urandom(size))
        out.append(("random bytes as Parquet", size, lambda n=noise: ck.read_predictions(n)))
        wide = folder / f"wide_{size}.csv"
        wide.write_text(",".join(f"c{i}" for i in range(size // 10)) + "\n")
        out.append(
            ("a header of many columns, no rows", size, lambda w=wide: ck.read_predictions(w))
        )
        calibrator = folder / f"calibrator_{size}.json"
        calibrator.write_text('{"kind": ' + "[" * size + "]" * size + "}")
        out.append(("calibrator JSON nested deep", size, lambda c=calibrator: load_calibrator(c)))
        record = folder / f"record_{size}.json"
        record.write_text("[" * size + "]" * size)
        out.append(("record JSON nested deep", size, lambda r=record: ck.read_record(r)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    a = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        rows = []
        for name, size, call in cases(Path(tmp)):
            seconds, outcome = _time(call, a.repeat)
            rows.append((name, size, seconds, outcome))
            print(f"{name:<38} {size:>9,} bytes-ish  {seconds * 1e3:9.2f} ms  {outcome}")
    print(f"\nslowest input: {max(r[2] for r in rows) * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
