"""The in-memory engine: a :class:`~calibkit.measure.summary.Summary` of arrays held in memory.

It is the reference the other engines are tested against, and the piece the streaming engine
applies to each chunk (:func:`chunk_summary`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .. import _kernels
from ..forecasts import Prepared
from ..measure.bins import BinStats, Edges
from ..measure.distinct import MAX_ROWS
from ..measure.pooled import pool_ties
from ..measure.ranking import Ranking
from ..measure.ranking import order_statistics as ordered
from ..measure.scores import score_sums
from ..measure.slope import slope_of
from ..measure.summary import Summary
from ._plan import Binning, classwise_names, needs, plan_edges

#: About how many times an audit reads its N forecasts (bins, deciles, scores, the ordering
#: behind the AUC and the deciles' edges, the slope's histogram and rounds): the work by which
#: it decides to load the numba kernels (from about 2e6 forecasts).
AUDIT_PASSES = 15


def columns_of(f: Prepared) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The (values, outcome) pairs a plan's columns name: "c" and, top-label, "p0", "p1", ..."""
    out = {"c": (f.conf, f.outcome)}
    if f.kind == "top-label":
        for k in range(f.n_classes):
            out[f"p{k}"] = (f.p[:, k], f.y == k)
    return out


def summarize(f: Prepared, binning: Binning, *, where: str = "audit") -> Summary:
    """The summary of prepared arrays, with exact quantile edges and the exact AUC.

    Examples
    --------
    >>> import numpy as np, calibkit as ck
    >>> from calibkit.forecasts import prepare
    >>> from calibkit.engines.memory import summarize, Binning
    >>> f = prepare(np.array([0.2, 0.7, 0.9]), np.array([0, 1, 1]), from_logits=False, where="x")
    >>> s = summarize(f, Binning(n_bins=2))
    >>> s.n, s.stats.count.tolist(), s.auc
    (3, [1, 2], 1.0)
    """
    _kernels.expect(f.conf.size * AUDIT_PASSES)
    cols = columns_of(f)
    ranking = Ranking(f.conf, f.outcome)  # ordered once: the AUC and the deciles' edges

    def order_statistics(request: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {
            c: ranking.order_statistics(ranks) if c == "c" else ordered(cols[c][0], ranks)
            for c, ranks in request.items()
        }

    wanted = needs(binning, kind=f.kind, n_classes=f.n_classes, where=where)
    edges = plan_edges(wanted, n=f.conf.size, order_statistics=order_statistics, where=where)
    auc = None if f.outcome.all() or not f.outcome.any() else ranking.auc()
    return replace(
        chunk_summary(f, edges, closed={k: w.closed for k, w in wanted.items()}),
        auc=auc,
        slope=slope_of(f.conf, f.outcome),
        pooled=pool_ties(f.conf, f.outcome) if f.conf.size <= MAX_ROWS else None,
    )


def chunk_summary(f: Prepared, edges: dict[str, Edges], *, closed: dict[str, str]) -> Summary:
    """The summary of one batch over given edges, without the AUC (every other field adds)."""
    cols = columns_of(f)

    def stats(name: str, column: str) -> BinStats:
        values, outcome = cols[column]
        return BinStats.of_checked(values, outcome, edges=edges[name].values, closed=closed[name])

    classwise = (
        tuple(stats(name, f"p{k}") for k, name in enumerate(classwise_names(f.n_classes)))
        if f.kind == "top-label"
        else ()
    )
    brier_sum, nll_sum = score_sums(
        f.p, f.scores, f.y, from_logits=f.from_logits, where="audit", stacklevel=5
    )
    return Summary(
        kind=f.kind,
        n_classes=f.n_classes,
        binning=edges["table"],
        stats=stats("table", "c"),
        deciles=stats("deciles", "c"),
        classwise=classwise,
        n_correct=int(np.count_nonzero(f.correct)),
        brier_sum=brier_sum,
        nll_sum=nll_sum,
        auc=None,
    )
