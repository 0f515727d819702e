"""Pieces of SQL text that every query of :mod:`._sql` is built from: float64 literals both
dialects read back exactly, the per-bin sums in numpy's order of operations, the bin number of
a value by comparison with the edges, and the largest of a few terms."""

from __future__ import annotations

import numpy as np


def bin_sums(c: str, o: str, *, weighted: bool = False) -> list[str]:
    """Per-bin sums of confidence ``c`` and outcome ``o``, in the order of
    :data:`calibkit._kernels.SUM_FIELDS` and with numpy's order of operations; ``weighted``:
    each term times the row's weight ``w``, then the sums of ``w`` and ``w * w``."""
    terms = [
        f"{c}",
        f"{o}",
        f"{c} * {c}",
        f"{c} * {o}",
        f"{c} * (1 - {c}) * ((1 - 2 * {c}) * (1 - 2 * {c}))",
    ]
    if not weighted:
        return [f"sum({t})" for t in terms]
    return [f"sum(({t}) * w)" for t in terms] + ["sum(w)", "sum(w * w)"]


def number(x: float) -> str:
    """A float64 literal that both dialects read back exactly, as DOUBLE (never DECIMAL)."""
    x = float(x)
    if not np.isfinite(x):
        raise ValueError(f"no SQL literal for {x}")
    text = repr(x)
    return text if "e" in text else text + "e0"


def greatest(terms: list[str]) -> str:
    """The largest of the terms (Spark's greatest needs two or more)."""
    return terms[0] if len(terms) == 1 else f"greatest({', '.join(terms)})"


def bin_expression(column: str, edges: np.ndarray, closed: str) -> str:
    """The bin number of ``column`` by comparison with the inner edges (as
    :func:`calibkit.bin_index`): ``(e_j, e_j+1]`` for ``closed="right"``, ``[e_j, e_j+1)`` for
    ``"left"``."""
    inner = np.asarray(edges, dtype=np.float64)[1:-1]
    op = ">" if closed == "right" else ">="

    def count(lo: int, hi: int) -> str:
        """How many of the (sorted) inner edges lo..hi lie below the value: a bisection, so a
        row meets about log2(M) comparisons instead of M - 1."""
        if lo == hi:
            return str(lo)
        mid = (lo + hi) // 2
        return (
            f"CASE WHEN {column} {op} {number(inner[mid])} THEN {count(mid + 1, hi)} "
            f"ELSE {count(lo, mid)} END"
        )

    return f"({count(0, inner.size)})"
