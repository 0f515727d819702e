"""Are the stated-confidence parsers linear on their worst replies? Time `parse_confidence` and
`parse_decision` on each pathological family of the bad-input campaign (repeated cues, numbers
and confidence lines, brace-, quote- and fence-heavy text, unclosed and deep JSON, long blank
runs) at growing sizes, and print the time per character: a linear parser shows a flat column.
A reply over the limit (200,000 characters) is refused at once as "too long".

    .venv/bin/python benchmarks/bench_parse_worst.py [--sizes 1000,10000,100000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from calibkit.stated import MAX_REPLY_CHARS, decision_reason, parse_confidence


def _repeat(unit: str, n: int, tail: str = "") -> str:
    return (unit * (n // len(unit) + 1))[: max(0, n - len(tail))] + tail


#: family -> a reply of about n characters
FAMILIES: dict[str, Callable[[int], str]] = {
    "sure 50%": lambda n: _repeat("sure 50% ", n),
    "confidence 0.5": lambda n: _repeat("confidence 0.5 ", n),
    "Confidence: lines": lambda n: _repeat("Confidence: 0.5\n", n),
    "Answer: lines": lambda n: _repeat("Answer: A\nConfidence: 0.5\n", n),
    "{ only": lambda n: "{" * n,
    "{ and newlines": lambda n: _repeat("{\n", n),
    "} only": lambda n: "}" * n,
    "{} pairs": lambda n: _repeat("{x} ", n, '{"confidence": 0.4}'),
    "unclosed objects": lambda n: _repeat('{"a": "x", ', n),
    "open strings": lambda n: _repeat('{"', n),
    "quotes and braces": lambda n: _repeat('"{', n),
    "backslashes": lambda n: _repeat('{"a": "\\', n),
    "fences": lambda n: _repeat("```\n", n, '{"confidence": 0.3}'),
    "open fence": lambda n: "```json" + " " * (n - 26) + '{"confidence": 0.3}',
    "answer + blanks": lambda n: "Answer: A" + " " * (n - 20) + "b",
    "deep JSON": lambda n: '{"a":' * (n // 5),
    "deep arrays": lambda n: '{"answer": "A", "why": ' + "[" * (n // 2) + "]" * (n // 2) + "}",
}


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    print("time per character (ns) of parse_confidence / parse_decision; flat = linear")
    head = f"{'family':<20}" + "".join(f"{f'{n:,} chars':>22}" for n in sizes)
    print(head + f"  {'result at the largest'}")
    for name, make in FAMILIES.items():
        cells = []
        result = ""
        for n in sizes:
            text = make(n)
            c = best(lambda text=text: parse_confidence(text), args.repeat)
            d = best(lambda text=text: decision_reason(text, ["A", "B"]), args.repeat)
            cells.append(f"{c / len(text) * 1e9:>10.0f} / {d / len(text) * 1e9:<9.0f}")
            r = parse_confidence(text)
            result = f"{r.value}" if r else f"{r.reason}"
            reason = decision_reason(text, ["A", "B"])
            result += f" / {reason if isinstance(reason, str) else reason[1]}"
        print(f"{name:<20}" + "".join(f"{c:>22}" for c in cells) + f"  {result}")
    over = "0.5 " * (MAX_REPLY_CHARS // 4 + 1)
    seconds = best(lambda: parse_confidence(over), args.repeat)
    print(
        f"\na reply of {len(over):,} characters (over the limit of {MAX_REPLY_CHARS:,}): "
        f"{parse_confidence(over).reason!r} in {seconds * 1e6:.0f} us"
    )


if __name__ == "__main__":
    main()
