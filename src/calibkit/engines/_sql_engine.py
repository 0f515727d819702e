"""What DuckDB and Spark share: the audit's sums and the temperature fit as SQL aggregations.

A subclass says how to run a query (:meth:`SqlEngine.fetch`), what the input relation is called
and which types its columns have; everything else (checks, edges, bins, totals, the exact AUC,
the Newton iteration of the temperature fit, per-group sums for the monitor) is here, once.
Every query returns per-bin, per-group or scalar sums; the one exception is an audit whose
checked rows fit in memory on an engine that brings them there (:meth:`SqlEngine.held_rows`:
DuckDB), which is then summarised by the in-memory engine.
"""

from __future__ import annotations

import abc
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from .. import _kernels
from .._errors import CalibkitWarning, InputError
from ..forecasts import Prepared
from ..io import ColumnPlan
from ..measure import temperature as tm
from ..measure.bins import BinStats, Edges
from ..measure.slope import (
    GRID_CELLS,
    GRID_SPAN,
    GRID_STEPS,
    TERMS,
    CalibrationSlope,
    grid_start,
    slope_from_sums,
)
from ..measure.summary import Summary
from ._plan import Binning, Need, classwise_names, needs, plan_edges
from ._select import select_ranks
from ._sql import Query
from ._sql_cells import Dialect
from ._sql_terms import number
from .memory import summarize

#: Above this many rows DuckDB's order statistics come from histogram refinement, not
#: ``quantile_disc`` (which holds the column in memory).
QUANTILE_AGGREGATE_MAX = 1 << 24

#: The stages an engine audit reports to ``progress`` (name, done, total).
Progress = Callable[[str, int, int], None] | None


class SqlEngine(abc.ABC):
    """An input relation in a SQL engine, with the plan of its columns."""

    name: str
    dialect: Dialect

    def __init__(self, plan: ColumnPlan, types: dict[str, str], place: str) -> None:
        self.plan, self.types, self.place = plan, types, place

    @abc.abstractmethod
    def fetch(self, sql: str, params: Mapping[str, Any] | None = None) -> list[tuple[Any, ...]]:
        """Run one query, with ``params`` bound to its markers (:meth:`Dialect.param`); its
        (small) result as tuples."""

    @property
    @abc.abstractmethod
    def relation(self) -> str:
        """The input relation, as SQL (a table name or a table function)."""

    def query(self, by: str | None = None) -> Query:
        return Query(self.plan, self.dialect, self.relation, self.types, by)

    # ------------------------------------------------------------------ audit
    def summarize(self, binning: Binning, *, where: str, progress: Progress = None) -> Summary:
        """The :class:`Summary` of the whole input: the in-memory summary of the rows where
        :meth:`held_rows` holds them, else the checks' scan and a handful of aggregations."""
        q = self.query()
        steps = ["checks", "edges", "bins", "totals", "ranking", "calibration slope"]
        tick = _ticker(steps, progress)
        tick()
        held = self.held_rows(q, where)
        if isinstance(held, Prepared):  # the rows fit in memory: one read, calibkit's kernels
            steps[1:] = ["summary in memory"]
            tick()
            summary = summarize(held, binning, where=where, distinct=False)  # as the SQL path
            tick()
            return summary.with_engine(self.name)
        n = held
        tick()
        wanted = needs(binning, kind=q.kind, n_classes=q.n_classes, where=where)
        edges = self.edges(q, wanted, n, where)
        tick()
        stats = {name: self._stats(q, name, need, edges[name]) for name, need in wanted.items()}
        tick()
        totals = self.fetch(q.totals())[0]
        count, correct, brier_sum, nll_sum = self._totals(totals[:5], where)
        if count != n:
            raise InputError(
                f"{where}: the input changed while it was read ({n} then {count} rows)."
            )
        tick()
        if q.weighted:
            auc = weighted_auc(*self.fetch(q.weighted_ranking())[0])
        else:
            auc = auc_from_ranks(*self.fetch(q.ranking())[0])
        tick()
        slope = self._slope(q, n, n_certain=int(totals[5] or 0), n_failed=int(totals[6] or 0))
        tick()
        return Summary(
            kind=q.kind,
            n_classes=q.n_classes,
            binning=edges["table"],
            stats=stats["table"],
            deciles=stats["deciles"],
            classwise=tuple(stats[k] for k in classwise_names(q.n_classes) if k in stats),
            n_correct=correct,
            brier_sum=brier_sum,
            nll_sum=nll_sum,
            auc=auc,
            slope=slope,
            engine=self.name,
            correct_weight=float(totals[7] or 0.0) if q.weighted else None,
            spiegelhalter_variance=float(totals[8] or 0.0) if q.weighted else None,
        )

    def held_rows(self, q: Query, where: str) -> Prepared | int:
        """The checked rows as arrays in memory, where the engine brings rows that fit into
        Python (DuckDB, :meth:`DuckDBEngine.held_rows`); else their number, for sums in SQL
        (here: always, after the checks' scan)."""
        return self.checked_rows(q, where)

    def edges(self, q: Query, wanted: dict[str, Need], n: int, where: str) -> dict[str, Edges]:
        """The edges of every set of bins; with a weight column, quantile edges are weighted
        quantiles (:func:`calibkit.measure.weighted.weighted_quantiles`)."""
        if not q.weighted:
            return plan_edges(
                wanted, n=n, order_statistics=self._order_statistics(q, n), where=where
            )
        total = self.total_weight(q)

        def fetch(request: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            return {
                column: np.asarray(
                    self.fetch(q.weighted_order_statistics(column, ranks))[0], dtype=np.float64
                )
                for column, ranks in request.items()
            }

        return plan_edges(wanted, n=n, order_statistics=fetch, where=where, total_weight=total)

    def total_weight(self, q: Query) -> float:
        """The sum of the weight column."""
        return float(self.fetch(f"SELECT sum(w) FROM {q.r}")[0][0])

    def _slope(self, q: Query, n: int, *, n_certain: int, n_failed: int) -> CalibrationSlope:
        """The calibration slope fit: started from the fit on a fine logit histogram (one
        GROUP BY), then one scan per round of Newton steps (both fits at once; usually one)."""

        def evaluate(points: list[tuple[float, ...]]) -> list[np.ndarray]:
            row = self.fetch(q.slope_sums([(number(a), number(b)) for a, b, *_ in points]))[0]
            sums = np.array([float("nan") if x is None else float(x) for x in row])
            return [sums[TERMS * k : TERMS * (k + 1)] for k in range(len(points))]

        # the counts of outcomes 0 and 1 per cell (weighted: their weights)
        histogram: np.ndarray = np.zeros(
            (2, GRID_CELLS), dtype=np.float64 if q.weighted else np.int64
        )
        kind = float if q.weighted else int
        for cell, negatives, positives in self.fetch(q.slope_histogram(GRID_STEPS, GRID_SPAN)):
            histogram[:, int(cell)] += np.array([kind(negatives), kind(positives)])
        return slope_from_sums(
            evaluate,
            n=n,
            n_certain=n_certain,
            n_failed=n_failed,
            start=grid_start(histogram),
        )

    def checked_rows(self, q: Query, where: str) -> int:
        q.check_types(where, self.place)
        return q.raise_problems(self.fetch(q.check_query())[0], where, self.place)

    def _order_statistics(self, q: Query, n: int) -> Callable[[dict[str, np.ndarray]], dict]:
        """Order statistics by the engine's discrete quantile while that can hold the column
        (DuckDB, up to :data:`QUANTILE_AGGREGATE_MAX` rows), else by histogram refinement
        (:mod:`._select`: GROUP BY passes in bounded memory; always on Spark, whose
        ``percentile_disc`` keeps every distinct value in one executor's buffer)."""

        def fetch(request: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            out = {}
            for column, ranks in request.items():
                if self.dialect.name == "duckdb" and n <= QUANTILE_AGGREGATE_MAX:
                    (values,) = self.fetch(q.order_statistics(column, n, ranks))[0]
                else:
                    values = select_ranks(self.fetch, column, q.f, n, ranks)
                out[column] = np.asarray(values, dtype=np.float64)
            return out

        return fetch

    def _stats(self, q: Query, name: str, need: Need, edges: Edges) -> BinStats:
        if name.startswith("class"):
            sql = q.class_bins(int(name[5:]), edges.values, need.closed)
        else:
            sql = q.bins(edges.values, need.closed)
        return stats_from_rows(self.fetch(sql), edges.values, need.closed, weighted=q.weighted)

    @staticmethod
    def _totals(row: Sequence[Any], where: str) -> tuple[int, int, float, float]:
        count, correct, brier_sum, nll_sum, zeros = row
        nll = float(nll_sum or 0.0)
        if zeros:
            warnings.warn(
                f"{where}: {int(zeros)} {'row gives' if zeros == 1 else 'rows give'} the true "
                "class probability exactly 0, so the log loss is infinite.",
                CalibkitWarning,
                stacklevel=4,
            )
            nll = math.inf
        return int(count), int(correct), float(brier_sum), nll

    # ------------------------------------------------------------------ temperature
    def temperature_oracle(
        self, *, where: str
    ) -> tuple[Callable[[float], tm.Objective], Callable[[], bool], int]:
        """What the Newton iteration of the temperature fit asks, as aggregations: the NLL with
        its gradient and curvature at one beta, and whether the data are separable; and the
        number of classes."""
        q = self._logit_query(where)
        n = self.checked_rows(q, where)

        def evaluate(beta: float) -> tm.Objective:
            row = self.fetch(q.temperature_sums(number(beta)))[0]
            total = row[0] if q.weighted else n  # the rows, or their weight
            return tm.Objective(beta, row[1] / total, row[2] / total, row[3] / total)

        def separable() -> bool:
            return int(self.fetch(q.separable())[0][0] or 0) == 0

        return evaluate, separable, q.n_classes

    def fit_temperatures(self, by: str, groups: list[Any], *, where: str) -> dict[Any, Any]:
        """One temperature per group, all groups' Newton iterations in lock-step: each round is
        one aggregation grouped by ``by`` (a group whose fit fails gets its InputError).

        The group values are query parameters, never SQL text: a value such as ``C:\\data\\``
        or ``x' OR '1'='1`` is compared as the value it is on either engine."""
        q = self._logit_query(where, by)

        def evaluate(betas: dict[Any, float]) -> dict[Any, tm.Objective]:
            names = [f"g{i}" for i in range(len(betas))]
            cases = " ".join(
                f"WHEN {self.dialect.param(k)} THEN {number(b)}"
                for k, b in zip(names, betas.values(), strict=True)
            )
            sql = q.temperature_sums(f"CASE g {cases} ELSE 1.0e0 END")
            rows = self.fetch(sql, dict(zip(names, betas, strict=True)))
            return {
                g: tm.Objective(betas[g], f / n, grad / n, curv / n)
                for g, n, f, grad, curv in rows
                if g in betas
            }

        def separable(asked: list[Any]) -> dict[Any, bool]:
            found = {g: int(b or 0) == 0 for g, b in self.fetch(q.separable())}
            return {g: found[g] for g in asked}

        solvers = {g: tm.newton(where=f"{where}: group {g}") for g in groups}
        return tm.drive_many(solvers, evaluate=evaluate, separable=separable)

    def _logit_query(self, where: str, by: str | None = None) -> Query:
        if self.plan.kind != "logits":
            raise InputError(
                f"{where}: temperature scaling needs logits (or binary scores); "
                f"{self.place} gives {self.plan.kind}. Pass the logit columns (logits= / "
                "--logits)."
            )
        return self.query(by)


def auc_from_ranks(twice_rank_sum: Any, positives: Any, negatives: Any) -> float | None:
    """Mann-Whitney AUC from the sum over positives of (first + last rank of their ties), in
    exact integer arithmetic up to the final division; None without both outcomes."""
    pos, neg = int(positives or 0), int(negatives or 0)
    if pos == 0 or neg == 0:
        return None
    u_twice = int(twice_rank_sum) - pos * (pos + 1)
    return u_twice / (2 * pos * neg)


def weighted_auc(numerator: Any, positive_weight: Any, negative_weight: Any) -> float | None:
    """The weighted Mann-Whitney AUC from :meth:`Query.weighted_ranking`'s sums: the sum over
    positives of w (W- below + W- tied / 2), divided by W+ W-; None without weight on both
    outcomes."""
    pos, neg = float(positive_weight or 0.0), float(negative_weight or 0.0)
    if pos <= 0 or neg <= 0:
        return None
    return float(numerator) / (pos * neg)


def stats_from_rows(
    rows: list[tuple[Any, ...]], edges: np.ndarray, closed: str, *, weighted: bool = False
) -> BinStats:
    """BinStats from rows (bin, count, sums...) of a GROUP BY (empty bins absent); ``weighted``:
    the rows end with the sums of the weights and of their squares."""
    m = edges.size - 1
    count = np.zeros(m, dtype=np.int64)
    fields = len(_kernels.SUM_FIELDS)
    sums = np.zeros((fields + (2 if weighted else 0), m))
    for row in rows:
        b = int(row[0])
        count[b] = int(row[1])
        sums[:, b] = [float(x) for x in row[2:]]
    values = np.asarray(edges, dtype=np.float64)
    if not weighted:
        return BinStats(values, closed, count, *sums)
    return BinStats.of_sums(
        values, closed, count, sums[:fields], weight=sums[fields], weight_sq=sums[fields + 1]
    )


def _ticker(steps: list[str], progress: Progress) -> Callable[[], None]:
    state = {"done": 0}

    def tick() -> None:
        if progress is not None:
            i = state["done"]
            progress(steps[i] if i < len(steps) else "done", i, len(steps))
        state["done"] += 1

    return tick
