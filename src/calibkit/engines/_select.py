"""Exact order statistics of a column by histogram refinement: GROUP BY passes, bounded memory.

A discrete-quantile aggregate (DuckDB's ``quantile_disc``, Spark's ``percentile_disc``) keeps
the column in memory (Spark: its distinct values in one aggregation buffer), which fails on data
larger than memory or on a cluster's executors. Here each target rank is narrowed down instead:

1. every value interval still holding a target (at first [0, 1]) is cut into ``BUCKETS`` cells,
   k = floor((c - a) * scale), with one GROUP BY returning each cell's count, min and max;
2. the cell holding the rank becomes the next interval, [min, max] of the cell (the cell index is
   monotone in c, so [min, max] holds exactly that cell's values), with the count of values
   below it carried along;
3. an interval with at most ``FETCH_MAX`` values is fetched and sorted; one whose min equals its
   max has its answer.

Each round divides an interval's width by ``BUCKETS``, so a few rounds suffice (three for 1e8
uniform values); at most ``len(ranks) * BUCKETS`` rows and ``len(ranks) * FETCH_MAX`` values ever
reach Python. The arithmetic (a subtraction and a multiplication in float64, then floor) is
IEEE-exact in every engine, and the interval bounds are data values, so nothing depends on it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ._sql_terms import number

BUCKETS = 4096
FETCH_MAX = 8192


def select_ranks(
    fetch: Callable[[str], list[tuple[Any, ...]]],
    column: str,
    relation: str,
    n: int,
    ranks: np.ndarray,
) -> np.ndarray:
    """The values of 0-based ``ranks`` (sorted, unique) of ``column`` in ``relation`` (n rows,
    values in [0, 1])."""
    answers: dict[int, float] = {}
    # open intervals: (a, b, values below a, values in [a, b], ranks inside)
    todo = [(0.0, 1.0, 0, n, [int(r) for r in ranks])]
    while todo:
        small = [iv for iv in todo if iv[3] <= FETCH_MAX]
        large = [iv for iv in todo if iv[3] > FETCH_MAX]
        if small:
            inside = " OR ".join(f"({column} >= {number(a)} AND {column} <= {number(b)})"
                                 for a, b, *_ in small)  # fmt: skip
            values = np.sort(
                np.array(
                    [row[0] for row in fetch(f"SELECT {column} FROM {relation} WHERE {inside}")]
                )
            )
            for a, b, below, _, inner in small:
                members = values[(values >= a) & (values <= b)]
                for r in inner:
                    answers[r] = float(members[r - below])
        todo = _refine(fetch, column, relation, large) if large else []
        for a, b, _, _, inner in todo:
            if a == b:  # every value of the interval is the same: that is the answer
                answers.update((r, a) for r in inner)
        todo = [iv for iv in todo if iv[0] != iv[1]]
    return np.array([answers[int(r)] for r in ranks], dtype=np.float64)


def _refine(
    fetch: Callable[[str], list[tuple[Any, ...]]],
    column: str,
    relation: str,
    intervals: list[tuple[float, float, int, int, list[int]]],
) -> list[tuple[float, float, int, int, list[int]]]:
    """One GROUP BY: the cells of every interval, and for each target rank its cell."""
    which = " ".join(
        f"WHEN {column} >= {number(a)} AND {column} <= {number(b)} THEN {i}"
        for i, (a, b, *_) in enumerate(intervals)
    )
    cell = " ".join(
        f"WHEN {i} THEN least(CAST(floor(({column} - {number(a)}) * {number(BUCKETS / (b - a))})"
        f" AS BIGINT), {BUCKETS - 1})"
        for i, (a, b, *_) in enumerate(intervals)
    )
    rows = fetch(
        f"SELECT iv, k, count(*), min({column}), max({column}) FROM (SELECT {column}, iv, "
        f"CASE iv {cell} END AS k FROM (SELECT {column}, CASE {which} END AS iv "
        f"FROM {relation}) t0 WHERE iv IS NOT NULL) t1 GROUP BY iv, k"
    )
    out = []
    for i, (_, _, below, _, inner) in enumerate(intervals):
        cells = sorted((int(r[1]), int(r[2]), float(r[3]), float(r[4])) for r in rows if r[0] == i)
        counts = np.array([c[1] for c in cells])
        ends = below + np.cumsum(counts)  # values up to and including each cell
        for k in sorted({int(np.searchsorted(ends, r, side="right")) for r in inner}):
            _, count, lo, hi = cells[k]
            start = int(ends[k] - count)
            mine = [r for r in inner if start <= r < ends[k]]
            out.append((lo, hi, start, count, mine))
    return out
