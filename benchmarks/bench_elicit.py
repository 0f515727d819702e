"""Is a stated-confidence run limited by the server or by the runner? Time `elicit` against the
loopback fake server (tests/stated/fake_llm_server.py) with a fixed server latency, at several
concurrency settings, and with no latency at all (the runner's own ceiling).

    .venv/bin/python benchmarks/bench_elicit.py [--items 400] [--latency 0.05]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "stated"))

from fake_llm_server import FakeLLMServer  # noqa: E402

from calibkit.stated import ReplyStore, elicit  # noqa: E402


def items(n: int) -> list[dict]:
    return [
        {"id": f"q{i}", "question": f"[item:q{i}] Is {i} even?", "options": ["yes", "no"]}
        for i in range(n)
    ]


def timed_run(n: int, latency: float, concurrency: int) -> tuple[float, int]:
    script = {f"q{i}": ["slow"] for i in range(n)} if latency > 0 else None
    with FakeLLMServer(script, max_requests=10 * n, lifetime=600.0, slow_s=latency) as server:
        with tempfile.TemporaryDirectory() as folder, ReplyStore(Path(folder) / "r.sqlite") as st:
            start = time.perf_counter()
            run = elicit(
                items(n),
                provider="openai",
                model="fake",
                store=st,
                base_url=server.openai_base_url,
                api_key_env="PATH",
                concurrency=concurrency,
                timeout=30.0,
            )
            seconds = time.perf_counter() - start
            return seconds, sum(r.status == "ok" for r in run.results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--latency", type=float, default=0.05)
    args = parser.parse_args()
    n, latency = args.items, args.latency
    print(f"{n} items; server latency {latency * 1000:.0f} ms per request")
    print(f"{'concurrency':>11}  {'seconds':>8}  {'items/s':>8}  {'ideal (server-bound)':>20}  ok")
    for concurrency in (1, 4, 16, 32):
        seconds, ok = timed_run(n, latency, concurrency)
        ideal = n * latency / concurrency
        print(f"{concurrency:>11}  {seconds:>8.2f}  {n / seconds:>8.1f}  {ideal:>18.2f} s  {ok}")
    seconds, ok = timed_run(n, 0.0, 16)
    print(
        f"no latency, concurrency 16: {seconds:.2f} s, {n / seconds:.0f} items/s "
        f"(the runner's own ceiling, SDK and SQLite included), {ok} ok"
    )


if __name__ == "__main__":
    main()
