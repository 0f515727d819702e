"""How fast do replies parse? Time ``parse_batch`` on 100,000 replies of four common forms, and
``parse_decision`` / ``parse_confidence`` on the 3,436 raw replies shipped with the tests.

    .venv/bin/python benchmarks/bench_parse.py [--n 100000] [--repeat 3]

The four forms: strict JSON with a probability per option, "Answer: B / Confidence: 85%" lines,
a "9/10" with no answer, and a reply with two conflicting numbers and no answer (two of the four
give an answer with a confidence, two are counted as "no answer"). The raw replies are those of
``tests/stated/test_parse.py`` (``tests/stated/data/raw_replies``, sources in its README.md).
Best of ``repeat`` runs after one warm-up (harness.timeit); the machine is shared, so absolute
times drift.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import harness as H  # noqa: E402

from calibkit.stated import parse_batch, parse_confidence, parse_decision  # noqa: E402

RAW = HERE.parent / "tests" / "stated" / "data" / "raw_replies"
FORMS = [
    '{\n"Reasoning": "Oxidants accept electrons.",\n"Answer": "C",\n"A": 0.05,\n"B": 0.05,'
    '\n"C": 0.85,\n"D": 0.05\n}',
    "Answer: B\nConfidence: 85%",
    "**Confidence Level:** 9/10 I am highly confident in this decision.",
    "I'm about 80% sure but it could be 60%",
]


def raw_replies() -> list[tuple[str, list[str] | None]]:
    """(reply, options) of every shipped raw reply; options None where only a confidence is read."""
    out: list[tuple[str, list[str] | None]] = []
    for path in sorted(RAW.glob("*.csv")):
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            columns = reader.fieldnames or []
            options = [c for c in "ABCDE" if c in columns] if "Answer" in columns else None
            out.extend((row["content"], options) for row in reader)
    return out


def parse_all(replies: list[tuple[str, list[str] | None]]) -> int:
    parsed = 0
    for text, options in replies:
        if options is None:
            parsed += parse_confidence(text).value is not None
        else:
            parsed += parse_decision(text, options) is not None
    return parsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000, help="replies in the batch")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    batch = (FORMS * (args.n // len(FORMS) + 1))[: args.n]
    t = H.timeit(parse_batch, batch, options="ABCD", repeat=args.repeat)
    rep = t.result
    print(
        f"parse_batch, {args.n:,} replies of four forms: {t.best:.3f} s "
        f"({t.best / args.n * 1e6:.1f} us per reply; first call {t.first:.3f} s); "
        f"parsed {rep.values.size:,}, reasons {rep.reasons}"
    )

    replies = raw_replies()
    if not replies:
        sys.exit(f"no raw replies under {RAW}")
    chars = sum(len(text) for text, _ in replies)
    t = H.timeit(parse_all, replies, repeat=args.repeat)
    print(
        f"raw replies, {len(replies):,} ({chars:,} characters): {t.best:.3f} s "
        f"({t.best / len(replies) * 1e6:.1f} us per reply); parsed {t.result:,}"
    )


if __name__ == "__main__":
    main()
