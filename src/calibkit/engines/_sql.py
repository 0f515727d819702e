"""The SQL that DuckDB and Spark run: written once, in the dialect both understand.

Every per-row quantity of the audit (the event's confidence and outcome, whether the prediction
was right, the row's Brier score and log loss, each class's probability) is one SQL expression
over the columns a :class:`~calibkit.io.ColumnPlan` names; every aggregate is a GROUP BY on a
bin number computed by comparison with the edge array (exactly as :func:`calibkit.bin_index`).
The arithmetic follows the numpy engine operation for operation where it decides a bin (the
stable sigmoid, the max-shifted softmax), so the engines agree to rounding of the sums.

The two dialects differ only in quoting, the markers of query parameters, the name of a numbers
table and ``log1p``: see :class:`Dialect`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .. import _validate as v
from .._errors import InputError
from ..io import ColumnPlan, planned_roles
from ._sql_cells import _INF, Column, Dialect, mixed
from ._sql_terms import bin_expression, bin_sums, greatest, number


@dataclass(frozen=True)
class Query:
    """The row-level relation ``f`` of one input, as a WITH clause over a source relation.

    Columns of ``f``: ``c`` (confidence of the event), ``o`` (its outcome, 0/1), ``ok``
    (prediction right), ``br`` (Brier score of the full forecast), ``nl`` (log loss, NULL when
    the true class had probability 0), ``pz`` (1 when it had), ``y`` (label), ``p0``..``p{C-1}``
    (class probabilities, top-label input only), ``g`` (the group, with ``by``) and ``w`` (the
    row's weight, when the plan names a weight column). Without a weight column the queries are
    the unweighted ones, unchanged; with one, every sum weighs each row's term by ``w``.
    """

    plan: ColumnPlan
    dialect: Dialect
    source: str
    types: Mapping[str, str]
    by: str | None = None

    @property
    def n_classes(self) -> int:
        return max(2, len(self.plan.scores))

    @property
    def weighted(self) -> bool:
        """Whether the plan names a weight column (then ``r`` and ``f`` carry ``w``)."""
        return self.plan.weight is not None

    def _times_w(self, term: str) -> str:
        """``term`` times the row's weight (``term`` itself when unweighted)."""
        return f"({term}) * w" if self.weighted else term

    # ---------------------------------------------------------------- pieces
    @property
    def kind(self) -> str:
        return "top-label" if self.n_classes > 2 or len(self.plan.scores) > 1 else "binary"

    def _q(self, name: str | None) -> str:
        return self.dialect.quote(str(name))

    def columns(self) -> list[Column]:
        """The columns the plan reads, each with its SQL (see :class:`Column`)."""
        roles = planned_roles(self.plan)
        return [
            Column(
                name, role, self.types.get(name, "other"), self.dialect, k, name == self.plan.weight
            )
            for k, (name, role) in enumerate(roles.items())
        ]

    def typed(self) -> str:
        """``r``: the input columns renamed and read by the rules of :mod:`calibkit.io._rules`:
        s0.. (scores), y (label or outcome; for confidence input with a prediction, whether it
        equals the label), g (the group); and per read column k the counts of its problems:
        x{k} (text that is not an admitted form), m{k} (missing), n{k} (NaN), h{k} (text,
        for the prediction/label comparison)."""
        cols: list[str] = []
        plan = self.plan
        read = self.columns()
        by_name = {c.name: c for c in read}
        if plan.kind == "confidence":
            cols.append(f"{by_name[str(plan.confidence)].value} AS s0")
            if plan.correct is not None:
                cols.append(f"{by_name[plan.correct].value} AS y")
            else:
                pred, truth = by_name[str(plan.prediction)], by_name[str(plan.label)]
                cols.append(
                    f"CASE WHEN {pred.number} IS NOT NULL AND {truth.number} IS NOT NULL THEN "
                    f"(CASE WHEN {pred.number} = {truth.number} THEN 1.0e0 ELSE 0.0e0 END) "
                    f"WHEN {pred.text} = {truth.text} THEN 1.0e0 ELSE 0.0e0 END AS y"
                )
        else:
            cols += [f"{by_name[s].value} AS s{k}" for k, s in enumerate(plan.scores)]
            cols.append(f"{by_name[str(plan.label)].value} AS y")
        if plan.weight is not None:
            cols.append(f"{by_name[plan.weight].value} AS w")
        for c in read:
            cols += [f"{expr} AS {flag}{c.index}" for flag, expr in c.flags().items()]
        if self.by is not None:
            cols.append(f"{self.by} AS g")
        return f"SELECT {', '.join(cols)} FROM {self.source}"

    def check_types(self, where: str, place: str) -> None:
        """Column types each role can take (scores: numbers; labels: numbers or booleans;
        outcomes: also TRUE/FALSE text; CSV cells: any, read by the cell rules)."""
        allowed = {
            "numeric": ("number", "cell"),
            "label": ("number", "bool", "cell"),
            "outcome": ("number", "bool", "text", "cell"),
            "compare": ("number", "bool", "text", "cell"),
        }
        read = self.columns()
        for c in read:
            if c.kind in allowed[c.role]:
                continue
            if c.role == "outcome":
                raise InputError(
                    f"{where}: column {c.name!r} of {place} must hold 0/1 or TRUE/FALSE."
                )
            raise InputError(
                f"{where}: column {c.name!r} of {place} must hold numbers; it holds "
                f"{c.kind if c.kind != 'other' else 'another type'}. Fix the column's type "
                "(or choose another column)."
            )
        compared = [c for c in read if c.role == "compare"]
        if len(compared) == 2 and compared[0].kind != "cell":
            texts = [c.kind == "text" for c in compared]
            if texts[0] != texts[1]:
                text, number = compared if texts[0] else compared[::-1]
                raise mixed(text, number, where)

    def rows(self) -> str:
        """``f``: the per-row quantities (see the class docstring)."""
        c = self.n_classes
        g = (", w" if self.weighted else "") + (", g" if self.by is not None else "")
        if self.kind == "binary":
            logits = self.plan.kind == "logits"
            if logits:  # the stable sigmoid of calibkit.sigmoid
                p = "CASE WHEN s0 >= 0 THEN 1 / (1 + exp(-s0)) ELSE exp(s0) / (1 + exp(s0)) END"
            else:
                p = "s0"
            signed = "CASE WHEN y = 1 THEN s0 ELSE -s0 END"
            if logits:  # softplus(-m) = max(-m, 0) + log(1 + exp(-|m|))
                nl = f"greatest(-({signed}), 0) + ln(1 + exp(-abs({signed})))"
                pz = "0"
                ok = "CASE WHEN (s0 >= 0) = (y = 1) THEN 1 ELSE 0 END"
            else:
                true = "CASE WHEN y = 1 THEN s0 ELSE 1 - s0 END"
                nl = f"CASE WHEN {true} > 0 THEN -ln({true}) END"
                pz = f"CASE WHEN {true} = 0 THEN 1 ELSE 0 END"
                ok = "CASE WHEN (s0 >= 0.5e0) = (y = 1) THEN 1 ELSE 0 END"
            inner = (
                f"SELECT {p} AS c, y AS o, y, {nl} AS nl, {pz} AS pz, {ok} AS ok{g} FROM {self.r}"
            )
            return f"SELECT c, o, y, nl, pz, ok, (c - y) * (c - y) AS br{g} FROM ({inner}) t"
        top = greatest([f"s{k}" for k in range(c)])
        argmax = "CASE " + " ".join(f"WHEN s{k} = m THEN {k}" for k in range(c)) + " END"
        pick = "CASE CAST(y AS INT) " + " ".join(f"WHEN {k} THEN s{k}" for k in range(c)) + " END"
        stage = (
            f"SELECT *, {argmax} AS a, {pick} AS sy FROM (SELECT *, {top} AS m FROM {self.r}) t0"
        )
        if self.plan.kind == "logits":  # the max-shifted softmax of calibkit.softmax
            shifted = ", ".join(f"exp(s{k} - m) AS e{k}" for k in range(c))
            total = " + ".join(f"e{k}" for k in range(c))
            stage = f"SELECT *, {total} AS z FROM (SELECT *, {shifted} FROM ({stage}) t1) t2"
            probs = ", ".join(f"e{k} / z AS p{k}" for k in range(c))
            nl, pz = "m + ln(z) - sy", "0"
        else:
            probs = ", ".join(f"s{k} AS p{k}" for k in range(c))
            nl, pz = "CASE WHEN sy > 0 THEN -ln(sy) END", "CASE WHEN sy = 0 THEN 1 ELSE 0 END"
        with_p = f"SELECT {probs}, y, a, {nl} AS nl, {pz} AS pz{g} FROM ({stage}) t3"
        hit = "CASE WHEN a = CAST(y AS INT) THEN 1 ELSE 0 END"
        conf = "CASE " + " ".join(f"WHEN a = {k} THEN p{k}" for k in range(c)) + " END"
        squares = " + ".join(f"p{k} * p{k}" for k in range(c))
        pick_p = "CASE CAST(y AS INT) " + " ".join(f"WHEN {k} THEN p{k}" for k in range(c)) + " END"
        prob_cols = ", ".join(f"p{k}" for k in range(c))
        return (
            f"SELECT {conf} AS c, {hit} AS o, {hit} AS ok, y, nl, pz, "
            f"{squares} - 2 * {pick_p} + 1 AS br, {prob_cols}{g} FROM ({with_p}) t4"
        )

    @property
    def r(self) -> str:
        """The typed input as a subquery (inlined, never a CTE: an engine may materialise a CTE
        with every column, where a subquery lets it read only the columns a query uses)."""
        return f"({self.typed()}) r"

    @property
    def f(self) -> str:
        """The per-row quantities as a subquery."""
        return f"({self.rows()}) f"

    # ---------------------------------------------------------------- checks
    def problems(self) -> list[tuple[str, str]]:
        """(condition on r, what is wrong) pairs; each is counted over the rows before any sum.
        The cells of every read column first (text, missing, NaN), then the values."""
        plan, c = self.plan, self.n_classes
        scores = [f"s{k}" for k in range(len(plan.scores) or 1)]
        out: list[tuple[str, str]] = []
        for col in self.columns():
            flags = col.flags()
            if "x" in flags:
                must = "0/1 or TRUE/FALSE" if col.role == "outcome" else "numbers; it holds text"
                out.append((f"x{col.index} = 1", f"column {col.name!r} must hold {must}"))
            out.append(
                (f"m{col.index} = 1", f"{col.title} {col.name!r} has missing values (null/empty)")
            )
            if "n" in flags:
                out.append((f"n{col.index} = 1", f"{col.title} {col.name!r} has NaN values"))
        if self.by is not None:
            out.append(("g IS NULL", "the group (by=) is missing (null/empty)"))
        if plan.weight is not None:
            out.append((f"abs(w) = {_INF}", f"weight column {plan.weight!r} has infinite values"))
            out.append(("w < 0", f"weight column {plan.weight!r} has negative values"))
        named = list(plan.scores) if plan.kind != "confidence" else [str(plan.confidence)]
        for s, name in zip(scores, named, strict=True):
            if plan.kind == "logits":
                out.append((f"abs({s}) = {_INF}", f"logits column {name!r} has infinite values"))
            else:
                out.append((f"({s} < 0 OR {s} > 1)", f"column {name!r} has values outside [0, 1]"))
        if plan.kind == "confidence" and plan.correct is None:
            return out
        label = plan.correct if plan.correct is not None else plan.label
        what = "outcome" if plan.kind == "confidence" else "label"
        top = 1 if self.kind == "binary" else c - 1
        out.append(
            (
                f"(isnan(y) OR y < 0 OR y > {top} OR y <> floor(y))",
                f"{what} column {label!r} has values that are not "
                + ("0 or 1" if top == 1 else f"class indices 0..{top}"),
            )
        )
        if plan.kind == "probs" and len(scores) > 1:
            total = " + ".join(scores)
            out.append(
                (
                    f"abs({total} - 1) > 1.0e-3",
                    "rows of the probability columns do not sum to 1 (within 0.001); calibkit "
                    "does not renormalise silently (pass logits= if these are logits)",
                )
            )
        return out

    def _compared(self) -> list[Column]:
        """The prediction and label columns when both are CSV cells (their text is counted)."""
        compared = [c for c in self.columns() if c.role == "compare"]
        return compared if len(compared) == 2 and all(c.kind == "cell" for c in compared) else []

    def check_query(self) -> str:
        """One scan counting the rows that break each rule of :meth:`problems` (and, for a
        prediction compared with a label in a CSV, the text cells of each)."""
        conditions = [cond for cond, _ in self.problems()]
        conditions += [f"h{c.index} = 1" for c in self._compared()]
        if self.weighted:  # the last: rows of positive weight (none: every weight is zero)
            conditions.append("w > 0")
        counts = ", ".join(f"sum(CASE WHEN {cond} THEN 1 ELSE 0 END)" for cond in conditions)
        return f"SELECT count(*), {counts} FROM {self.r}"

    def raise_problems(self, row: tuple, where: str, place: str = "the input") -> int:
        """Raise :class:`InputError` naming the first broken rule and its row count; return N."""
        n = int(row[0])
        problems = self.problems()
        end = len(row) - 1 if self.weighted else len(row)
        counts, texts = row[1 : 1 + len(problems)], row[1 + len(problems) : end]
        values = next((i for i, (c, _) in enumerate(problems) if c[0] not in "xmn"), None)
        for i, ((_, what), bad) in enumerate(zip(problems, counts, strict=True)):
            if i == values:  # the cells are read: are prediction and label written alike?
                self._mixed(texts, where)
            if bad:
                bad = int(bad)
                rows = "row" if bad == 1 else "rows"
                raise InputError(
                    f"{where}: {what}: {bad} {rows} of {n}; calibkit does not drop rows "
                    "silently: remove or fill them first."
                )
        if values is None:
            self._mixed(texts, where)
        if n == 0:
            raise InputError(
                f"{where}: {place} has no rows (a header, or a schema, only); there is nothing "
                "to audit."
            )
        if self.weighted and not int(row[-1] or 0):
            raise InputError(v.every_weight_zero(str(self.plan.weight), where))
        return n

    def _mixed(self, texts: tuple, where: str) -> None:
        compared = self._compared()
        if compared and (int(texts[0] or 0) > 0) != (int(texts[1] or 0) > 0):
            text, number = compared if int(texts[0] or 0) else compared[::-1]
            raise mixed(text, number, where)

    # ---------------------------------------------------------------- aggregates
    def totals(self) -> str:
        """Rows, correct predictions, Brier and log-loss sums, rows whose true class had
        probability 0, forecasts of exactly 0 or 1, and those of them that failed (weighted: then
        the weight of the correct predictions and Spiegelhalter's variance)."""
        g = "g, " if self.by is not None else ""
        group = " GROUP BY g" if self.by is not None else ""
        certain = "CASE WHEN c <= 0 OR c >= 1 THEN 1 ELSE 0 END"
        failed = "CASE WHEN (c >= 1 AND o = 0) OR (c <= 0 AND o = 1) THEN 1 ELSE 0 END"
        if not self.weighted:
            return (
                f"SELECT {g}count(*), sum(ok), sum(br), sum(nl), sum(pz), sum({certain}), "
                f"sum({failed}) FROM {self.f}{group}"
            )
        # weighted: the scores times w; the counts of rows of positive weight (a row of weight
        # 0 is left out, as from the data with each row repeated w times); then sum(w * ok) and
        # Spiegelhalter's variance sum w^2 p (1 - p)(1 - 2p)^2
        counted = ", ".join(
            f"sum(CASE WHEN w > 0 THEN {x} ELSE 0 END)" for x in ("pz", certain, failed)
        )
        variance = "sum(w * w * (c * (1 - c) * ((1 - 2 * c) * (1 - 2 * c))))"
        return (
            f"SELECT {g}count(*), sum(ok), sum(br * w), sum(nl * w), {counted}, sum(ok * w), "
            f"{variance} FROM {self.f}{group}"
        )

    def slope_histogram(self, steps: int, span: float) -> str:
        """Counts of outcomes 0 and 1 per cell of the logit histogram a slope fit starts from
        (:func:`calibkit.measure.slope.grid_counts`), for the forecasts strictly inside (0, 1)."""
        x = "ln(c) - ln(1 - c)"
        cell = (
            f"CAST(round((greatest(least({x}, {number(span)}), {number(-span)}) + "
            f"{number(span)}) * {steps}) AS INT)"
        )
        counts = "sum(w) - sum(w * o), sum(w * o)" if self.weighted else "count(*) - sum(o), sum(o)"
        return (
            f"SELECT {cell} AS cell, {counts} FROM {self.f} WHERE c > 0 AND c < 1 GROUP BY {cell}"
        )

    def slope_sums(self, points: list[tuple[str, str]]) -> str:
        """For each (intercept, slope) point, the sums of
        :func:`calibkit.measure.slope.slope_terms` over the forecasts strictly inside (0, 1)
        (log-likelihood, gradient, information, the information's derivatives), ten columns a
        point, in one scan."""
        wc = ", w" if self.weighted else ""
        keep = f"o, x{wc}"
        inner = f"SELECT o, ln(c) - ln(1 - c) AS x{wc} FROM {self.f} WHERE c > 0 AND c < 1"
        etas = ", ".join(f"{a} + {b} * x AS e{k}" for k, (a, b) in enumerate(points))
        logs = ", ".join(
            f"-(greatest(-e{k}, 0) + ln(1 + exp(-abs(e{k})))) AS lp{k}, "
            f"-(greatest(e{k}, 0) + ln(1 + exp(-abs(e{k})))) AS lq{k}"
            for k in range(len(points))
        )
        probs = ", ".join(f"exp(lp{k}) AS p{k}" for k in range(len(points)))
        terms = [
            [
                f"CASE WHEN o = 1 THEN lp{k} ELSE lq{k} END",
                f"o - p{k}",
                f"(o - p{k}) * x",
                f"p{k} * (1 - p{k})",
                f"p{k} * (1 - p{k}) * x",
                f"p{k} * (1 - p{k}) * x * x",
                f"p{k} * (1 - p{k}) * (1 - 2 * p{k})",
                f"p{k} * (1 - p{k}) * (1 - 2 * p{k}) * x",
                f"p{k} * (1 - p{k}) * (1 - 2 * p{k}) * x * x",
                f"p{k} * (1 - p{k}) * (1 - 2 * p{k}) * x * x * x",
            ]
            for k in range(len(points))
        ]
        sums = ", ".join(f"sum({self._times_w(t)})" for point in terms for t in point)
        lps = ", ".join(f"lp{k}, lq{k}" for k in range(len(points)))
        return (
            f"SELECT {sums} FROM (SELECT {keep}, {lps}, {probs} FROM (SELECT {keep}, {logs} FROM "
            f"(SELECT {keep}, {etas} FROM ({inner}) t1) t2) t3) t4"
        )

    def bins(self, edges: np.ndarray, closed: str, column: str = "c", outcome: str = "o") -> str:
        """Per-bin count and sums of (``column``, ``outcome``) (and per group, with ``by``)."""
        b = bin_expression(column, edges, closed)
        g = "g, " if self.by is not None else ""
        sums = ", ".join(bin_sums(column, outcome, weighted=self.weighted))
        return (
            f"SELECT {g}b, count(*), {sums} FROM (SELECT *, {b} AS b FROM {self.f}) t GROUP BY {g}b"
        )

    def class_bins(self, k: int, edges: np.ndarray, closed: str) -> str:
        """:meth:`bins` of class ``k``'s probability for the event label == k."""
        return self.bins(edges, closed, f"p{k}", f"(CASE WHEN y = {k} THEN 1 ELSE 0 END)")

    def order_statistics(self, column: str, n: int, ranks: np.ndarray) -> str:
        """The order statistics of ``column`` at 0-based ``ranks``, as one list. The discrete
        quantile at level q is the order statistic of rank floor(n q) in DuckDB and ceil(n q) - 1
        in Spark: at q = (r + 1/2) / n both give rank r."""
        levels = ", ".join(number((r + 0.5) / n) for r in ranks)
        if self.dialect.name == "duckdb":
            return f"SELECT quantile_disc({column}, [{levels}]) FROM {self.f}"
        return (
            f"SELECT percentile_disc(array({levels})) WITHIN GROUP (ORDER BY {column}) "
            f"FROM {self.f}"
        )

    def weighted_order_statistics(self, column: str, ranks: np.ndarray) -> str:
        """The weighted order statistics of ``column`` at (real) ``ranks``, one column each:
        the smallest value whose cumulative weight (the values in order, rows of weight 0 left
        out) exceeds the rank, or the largest value (see
        :func:`calibkit.measure.weighted.weighted_quantiles`)."""
        picks = ", ".join(
            f"coalesce(min(CASE WHEN cw > {number(r)} THEN v END), max(v))" for r in ranks
        )
        frame = "ORDER BY v ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
        return (
            f"SELECT {picks} FROM (SELECT v, sum(wv) OVER ({frame}) AS cw FROM (SELECT "
            f"{column} AS v, sum(w) AS wv FROM {self.f} GROUP BY {column} HAVING sum(w) > 0) t0) t1"
        )

    def weighted_ranking(self) -> str:
        """The weighted Mann-Whitney AUC: over the distinct confidences in order, the weight of
        the negatives up to and including each (a window over the distinct values); the sum
        over positives of w (W- below + W- tied / 2), with W+ and W-. AUC = S / (W+ W-)."""
        frame = "ORDER BY c ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
        return (
            "SELECT sum(wp * (cum - wn / 2)), sum(wp), sum(wn) FROM (SELECT wp, wn, "
            f"sum(wn) OVER ({frame}) AS cum FROM (SELECT c, sum(w * o) AS wp, "
            f"sum(w * (1 - o)) AS wn FROM {self.f} GROUP BY c) t0) t1"
        )

    def ranking(self) -> str:
        """The exact Mann-Whitney AUC in one sort: for every positive, its average rank among
        all confidences, (first rank of its ties + last rank of its ties), summed as integers;
        with the numbers of positives and negatives. AUC = (S / 2 - P (P + 1) / 2) / (P N)."""
        frame = "ORDER BY c RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW"
        return (
            "SELECT sum(CASE WHEN o = 1 THEN lo + hi ELSE 0 END), sum(o), count(*) - sum(o) "
            f"FROM (SELECT o, rank() OVER (ORDER BY c) AS lo, count(*) OVER ({frame}) AS hi "
            f"FROM (SELECT c, CAST(o AS BIGINT) AS o FROM {self.f}) t0) t1"
        )

    def temperature_sums(self, beta: str) -> str:
        """Sums of the NLL at inverse temperature ``beta`` (an SQL expression per row, e.g. a
        literal or a CASE on the group) and its first two derivatives in beta, as
        :func:`calibkit.measure.temperature.evaluate` computes them."""
        g = "g, " if self.by is not None else ""
        group = " GROUP BY g" if self.by is not None else ""
        c = len(self.plan.scores)
        wc = "w, " if self.weighted else ""
        total = "sum(w)" if self.weighted else "count(*)"
        tw = self._times_w
        if c == 1:
            body = (
                f"SELECT {g}{wc}x, sg, x * sg * ({beta}) AS mg FROM (SELECT {g}{wc}s0 AS x, "
                f"CASE WHEN y = 1 THEN 1.0e0 ELSE -1.0e0 END AS sg FROM {self.r}) t0"
            )
            wrong = "exp(-(greatest(mg, 0) + ln(1 + exp(-abs(mg)))))"
            return (
                f"SELECT {g}{total}, "
                f"sum({tw('greatest(-mg, 0) + ln(1 + exp(-abs(mg)))')}), "
                f"sum({tw(f'-sg * x * {wrong}')}), sum({tw(f'x * x * {wrong} * (1 - {wrong})')}) "
                f"FROM ({body}) t1{group}"
            )
        top = greatest([f"s{k}" for k in range(c)])
        pick = "CASE CAST(y AS INT) " + " ".join(f"WHEN {k} THEN d{k}" for k in range(c)) + " END"
        shifted = ", ".join(f"s{k} - m AS d{k}" for k in range(c))
        weights = ", ".join(f"exp(({beta}) * d{k}) AS w{k}" for k in range(c))
        s0 = " + ".join(f"w{k}" for k in range(c))
        s1 = " + ".join(f"w{k} * d{k}" for k in range(c))
        s2 = " + ".join(f"w{k} * d{k} * d{k}" for k in range(c))
        b = f"({beta})"
        differences = ", ".join(f"d{k}" for k in range(c))
        stage = (
            f"SELECT {g}{wc}{b} AS beta, {pick} AS dy, {weights}, {differences} "
            f"FROM (SELECT *, {shifted} FROM (SELECT *, {top} AS m FROM {self.r}) t0) t1"
        )
        moments = (
            f"SELECT {g}{wc}beta, dy, {s0} AS z0, ({s1}) / ({s0}) AS z1, ({s2}) / ({s0}) AS z2 "
            f"FROM ({stage}) t2"
        )
        return (
            f"SELECT {g}{total}, sum({tw('ln(z0) - beta * dy')}), "
            f"sum({tw('z1 - dy')}), sum({tw('greatest(z2 - z1 * z1, 0)')}) "
            f"FROM ({moments}) t3{group}"
        )

    def separable(self) -> str:
        """One row per group: how many rows do not have their true class strictly ahead of all
        others (a non-positive binary margin). None anywhere: no finite temperature fits."""
        g = "g, " if self.by is not None else ""
        group = " GROUP BY g" if self.by is not None else ""
        c = len(self.plan.scores)
        if c == 1:
            behind = "CASE WHEN (CASE WHEN y = 1 THEN s0 ELSE -s0 END) > 0 THEN 0 ELSE 1 END"
        else:
            cases = " ".join(
                f"WHEN {k} THEN s{k} > {greatest([f's{j}' for j in range(c) if j != k])}"
                for k in range(c)
            )
            behind = f"CASE WHEN (CASE CAST(y AS INT) {cases} END) THEN 0 ELSE 1 END"
        if self.weighted:  # a row of weight 0 is left out
            behind = f"CASE WHEN w > 0 THEN {behind} ELSE 0 END"
        return f"SELECT {g}sum({behind}) FROM {self.r}{group}"
