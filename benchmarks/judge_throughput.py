"""Judgements per second of calibkit.stated.judge() against the loopback fake server
(tests/stated/fake_llm_server.py) answering every request after 50 ms, at concurrency 1, 8, 32.

Run: PYTHONPATH=src python benchmarks/judge_throughput.py [--items 400] [--latency 0.05]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "stated"))

from fake_llm_server import FakeLLMServer  # noqa: E402

from calibkit.stated.judging import judge  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=400)
    ap.add_argument("--latency", type=float, default=0.05)
    a = ap.parse_args()
    os.environ["FAKE_KEY"] = "sk-fake"
    rows = [
        {"id": f"q{i}", "question": f"[item:q{i}] 2+2?", "gold": "4", "answer": "4"}
        for i in range(a.items)
    ]
    print(f"{a.items} items, {a.latency * 1000:g} ms per request")
    for concurrency in (1, 8, 32):
        with (
            tempfile.TemporaryDirectory() as d,
            FakeLLMServer(
                latency=a.latency, default="correct", max_requests=10 * a.items, lifetime=600
            ) as server,
        ):
            t0 = time.perf_counter()
            run = judge(
                rows,
                provider="openai",
                model="judge-1",
                store=Path(d) / "j.sqlite",
                base_url=server.openai_base_url,
                api_key_env="FAKE_KEY",
                concurrency=concurrency,
            )
            dt = time.perf_counter() - t0
            assert run.calls == a.items and all(g.correct for g in run.grades)
            print(f"concurrency {concurrency:>2}: {a.items / dt:7.1f} judgements/s ({dt:.2f} s)")


if __name__ == "__main__":
    main()
