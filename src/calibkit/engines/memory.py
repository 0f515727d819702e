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
from ..measure.fit_tests import spiegelhalter_variance
from ..measure.pooled import Pooled, pool_ties
from ..measure.ranking import Ranking
from ..measure.ranking import order_statistics as ordered
from ..measure.scores import score_sums
from ..measure.slope import slope_of
from ..measure.summary import Summary
from ..measure.weighted import weighted_order_statistics
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


def summarize(
    f: Prepared, binning: Binning, *, where: str = "audit", distinct: bool = True
) -> Summary:
    """The summary of prepared arrays, with exact quantile edges and the exact AUC; with
    ``distinct`` (up to :data:`~calibkit.measure.distinct.MAX_ROWS` rows) also the forecasts
    pooled by value, for the measures without bins.

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
    w = f.weight
    # ordered once: the AUC and the deciles' edges
    ranking = Ranking(f.conf, f.outcome, sample_weight=w)

    def order_statistics(request: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if w is not None:  # real ranks of cumulative weight (weighted quantiles)
            return {c: weighted_order_statistics(cols[c][0], w, r) for c, r in request.items()}
        return {
            c: ranking.order_statistics(ranks) if c == "c" else ordered(cols[c][0], ranks)
            for c, ranks in request.items()
        }

    wanted = needs(binning, kind=f.kind, n_classes=f.n_classes, where=where)
    edges = plan_edges(
        wanted,
        n=f.conf.size,
        order_statistics=order_statistics,
        where=where,
        total_weight=None if w is None else float(w.sum()),
    )
    counted = f.outcome if w is None else f.outcome[w > 0]
    closed = {k: c.closed for k, c in wanted.items()}
    # the AUC and the bins of the confidence read off the ranking's order, where it has one
    on_c = [name for name, need in wanted.items() if need.column == "c"]
    auc, sums = ranking.sweep(
        [(edges[name].values, closed[name]) for name in on_c],
        auc=bool(counted.any() and not counted.all()),
    )
    known = {
        name: BinStats(edges[name].values, closed[name], count, *fields)
        for name, (count, fields) in zip(on_c, sums or (), strict=False)
    }
    return replace(
        chunk_summary(f, edges, closed=closed, known=known),
        auc=auc,
        slope=slope_of(f.conf, f.outcome, sample_weight=w),
        pooled=_pooled(f, ranking) if distinct and f.conf.size <= MAX_ROWS else None,
    )


def _pooled(f: Prepared, ranking: Ranking) -> Pooled:
    """The confidences pooled by value: merged off the ranking's order where it holds one
    (no second sort), else by :func:`~calibkit.measure.pooled.pool_ties`."""
    pooled = ranking.pooled()
    return pool_ties(f.conf, f.outcome, sample_weight=f.weight) if pooled is None else pooled


def chunk_summary(
    f: Prepared,
    edges: dict[str, Edges],
    *,
    closed: dict[str, str],
    known: dict[str, BinStats] | None = None,
) -> Summary:
    """The summary of one batch over given edges, without the AUC (every other field adds);
    the bin statistics in ``known`` are taken as they are (one pass fewer each)."""
    cols = columns_of(f)

    def stats(name: str, column: str) -> BinStats:
        if known and name in known:
            return known[name]
        values, outcome = cols[column]
        return BinStats.of_checked(
            values, outcome, edges=edges[name].values, closed=closed[name], sample_weight=f.weight
        )

    classwise = (
        tuple(stats(name, f"p{k}") for k, name in enumerate(classwise_names(f.n_classes)))
        if f.kind == "top-label"
        else ()
    )
    w = f.weight
    brier_sum, nll_sum = score_sums(
        f.p, f.scores, f.y, from_logits=f.from_logits, where="audit", stacklevel=5, sample_weight=w
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
        correct_weight=None if w is None else float(w[f.correct].sum()),
        spiegelhalter_variance=None if w is None else spiegelhalter_variance(f.conf, w),
    )
