"""A binary model's threshold on P(y = 1) from the costs of its two errors: the Bayes threshold
for a calibrated probability (Elkan 2001), the threshold that minimises the cost on data, and
the validation -> test table that compares them with acting on the argmax.

"Flag" a case (predict y = 1: biopsy, block, recall) when P(y = 1) >= threshold. A false
positive (flagged, y = 0) costs ``l_false_positive``, a false negative (not flagged, y = 1)
``l_false_negative``; right decisions cost nothing.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from .. import _display
from .. import _validate as v
from ._binary_core import (
    Confusion,
    bayes_threshold,
    binary_costs,
    binary_inputs,
    confusion_at,
    cost_of,
    count_text,
)
from ._format import threshold_text
from .coverage import sorted_steps
from .thresholds import without_weights

__all__ = [
    "BinaryPolicyRow",
    "BinaryPolicyTable",
    "BinaryThresholdChoice",
    "bayes_threshold",
    "binary_costs",
    "binary_policy_table",
    "choose_binary_threshold",
]


@dataclass(frozen=True)
class BinaryThresholdChoice:
    """The threshold on P(y = 1) that minimised the cost per case on the data it was chosen on.

    Flag when P(y = 1) >= ``threshold`` (``inf``: flag nothing). The counts are those of the
    choice on these data; ``bayes_threshold`` is ``l_fp / (l_fp + l_fn)`` and ``bayes_cost``
    its cost per case on the same data. A gap between the two thresholds (or the costs) measures
    miscalibration where the decision is made. With sample weights the costs are per unit
    weight, the counts stay raw and ``true_positive_weight`` ... ``false_negative_weight`` and
    ``weight`` are the weighted ones (None when unweighted).
    """

    threshold: float
    cost: float
    true_positives: int
    false_positives: int
    true_negatives: int
    false_negatives: int
    n: int
    l_false_positive: float
    l_false_negative: float
    bayes_threshold: float
    bayes_cost: float
    true_positive_weight: float | None = None
    false_positive_weight: float | None = None
    true_negative_weight: float | None = None
    false_negative_weight: float | None = None
    weight: float | None = None

    @property
    def n_flagged(self) -> int:
        return self.true_positives + self.false_positives

    @property
    def gap(self) -> float:
        """Empirical threshold minus the Bayes threshold (inf when nothing is flagged)."""
        return self.threshold - self.bayes_threshold

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = asdict(self)
        d["threshold"] = None if math.isinf(self.threshold) else self.threshold
        d["gap"] = None if math.isinf(self.gap) else self.gap
        d["n_flagged"] = self.n_flagged
        return without_weights(d, self.weight)

    def __str__(self) -> str:
        t = threshold_text(self.threshold, above="above every probability (flag none)")
        return (
            f"flag when P(y = 1) >= {t}: cost {self.cost:.4f} per case, {self.n_flagged} of "
            f"{self.n} flagged ({count_text(self.false_negatives, 'false negative')}, "
            f"{count_text(self.false_positives, 'false positive')}; l_false_positive = "
            f"{self.l_false_positive:g}, l_false_negative = "
            f"{self.l_false_negative:g}); the Bayes threshold "
            f"{threshold_text(self.bayes_threshold)} costs {self.bayes_cost:.4f} per case here"
        )


def choose_binary_threshold(
    probs: Any,
    labels: Any,
    *,
    l_false_positive: float,
    l_false_negative: float,
    from_logits: bool = False,
    sample_weight: Any = None,
) -> BinaryThresholdChoice:
    """The threshold on P(y = 1) minimising the empirical cost per case of a binary decision.

    Flag a case when ``P(y = 1) >= threshold``; a false positive costs ``l_false_positive``,
    a false negative ``l_false_negative``. Every observed probability is tried, and one value
    above the largest (flag nothing); equal probabilities are flagged together. Exact, in
    O(N log N): one sort, then the counts of every threshold as prefix sums. Among equally
    cheap thresholds the lower one (flagging more, missing fewer) is chosen. The Bayes
    threshold ``l_fp / (l_fp + l_fn)`` (:func:`bayes_threshold`) and its cost on these data
    come with it. Report the cost on held-out data (:func:`binary_policy_table`), not on the
    data the threshold was chosen on.

    Parameters
    ----------
    probs : array of shape (N,) or (N, 2)
        P(y = 1), or two columns whose second is P(y = 1); logits with ``from_logits=True``
        (1-D scores or (N, 2) logits).
    labels : array of shape (N,)
        The 0/1 labels (1 = the event the flag is for).
    l_false_positive, l_false_negative : float
        Positive costs of the two errors.
    sample_weight : array of shape (N,), keyword only
        Finite, non-negative weights: the cost is then per unit weight (weight of the false
        positives x l_fp + weight of the false negatives x l_fn, over the total weight); with
        whole weights, the choice on the data with each row repeated w times.

    Examples
    --------
    Six cases, a false negative costing four false positives (Bayes threshold 0.2): flagging
    the four at P >= 0.3 misses nothing and costs one false positive, 1 / 6 per case.

    >>> import calibkit as ck
    >>> c = ck.choose_binary_threshold([0.9, 0.6, 0.4, 0.3, 0.1, 0.05], [1, 1, 0, 1, 0, 0],
    ...                                l_false_positive=1, l_false_negative=4)
    >>> c.threshold, round(c.cost, 4), (c.false_positives, c.false_negatives)
    (0.3, 0.1667, (1, 0))

    The negative at 0.4 weighing 8: flagging it costs 8, missing the positive at 0.3 costs 4,
    so the threshold moves up to 0.6 (cost 4 / 13 per unit weight):

    >>> c = ck.choose_binary_threshold([0.9, 0.6, 0.4, 0.3, 0.1, 0.05], [1, 1, 0, 1, 0, 0],
    ...                                l_false_positive=1, l_false_negative=4,
    ...                                sample_weight=[1, 1, 8, 1, 1, 1])
    >>> c.threshold, round(c.cost, 4), c.false_negatives, c.false_negative_weight
    (0.6, 0.3077, 1, 1.0)
    """
    where = "choose_binary_threshold"
    l_fp, l_fn = binary_costs(
        l_false_positive=l_false_positive, l_false_negative=l_false_negative, where=where
    )
    p, y = binary_inputs(
        probs, labels, from_logits=from_logits, where=where, names=("probs", "labels")
    )
    w = v.sample_weight(sample_weight, n=p.shape[0], where=where)
    return choose_on(p, y, l_false_positive=l_fp, l_false_negative=l_fn, weight=w)


def choose_on(
    p: np.ndarray,
    y: np.ndarray,
    *,
    l_false_positive: float,
    l_false_negative: float,
    weight: np.ndarray | None = None,
) -> BinaryThresholdChoice:
    """:func:`choose_binary_threshold` of checked arrays, costs and weights."""
    l_fp, l_fn = l_false_positive, l_false_negative
    # in decreasing P: cumulative flagged and, among them, negatives (the "wrong" of the steps)
    steps = sorted_steps(p, y, weight)
    n, total = steps.n, steps.total
    positives = int(np.count_nonzero(y == 1))
    mass_pos = positives if weight is None else float(weight[y == 1].sum())
    flagged = np.concatenate(([0], steps.mass_acted))
    fp = np.concatenate(([0], steps.mass_wrong))
    fn = mass_pos - (flagged - fp)
    cost = (fp * l_fp + fn * l_fn) / total
    best = int(np.flatnonzero(cost == cost.min())[-1])  # the cheapest; ties: flag more
    threshold = math.inf if best == 0 else float(steps.threshold[best - 1])
    bayes = l_fp / (l_fp + l_fn)
    bayes_cost = cost_of(
        confusion_at(p, y, bayes, weight), l_false_positive=l_fp, l_false_negative=l_fn
    )
    if weight is None:
        tp = int(flagged[best] - fp[best])
        counts = Confusion(tp, int(fp[best]), n - positives - int(fp[best]), int(fn[best]))
    else:
        counts = confusion_at(p, y, threshold, weight)
    return BinaryThresholdChoice(
        threshold=threshold,
        cost=float(cost[best]),
        true_positives=counts.true_positives,
        false_positives=counts.false_positives,
        true_negatives=counts.true_negatives,
        false_negatives=counts.false_negatives,
        n=n,
        l_false_positive=l_fp,
        l_false_negative=l_fn,
        bayes_threshold=bayes,
        bayes_cost=bayes_cost,
        **counts.weighted(),
        **({} if weight is None else {"weight": float(total)}),
    )


@dataclass(frozen=True)
class BinaryPolicyRow:
    """One rule "flag when P(y = 1) >= threshold", its counts and cost per case on the held-out
    eval split (test), and ``choice_cost``, its cost per case on the split the thresholds were
    chosen on (validation). With sample weights the costs are per unit weight and
    ``true_positive_weight`` ... ``false_negative_weight`` the weights of the raw counts' cells
    on the eval split (None when unweighted)."""

    key: str
    policy: str
    threshold: float
    true_positives: int
    false_positives: int
    true_negatives: int
    false_negatives: int
    cost: float
    choice_cost: float
    true_positive_weight: float | None = None
    false_positive_weight: float | None = None
    true_negative_weight: float | None = None
    false_negative_weight: float | None = None

    @property
    def n_flagged(self) -> int:
        return self.true_positives + self.false_positives

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = asdict(self)
        d["threshold"] = None if math.isinf(self.threshold) else self.threshold
        d["n_flagged"] = self.n_flagged
        return without_weights(d, self.true_positive_weight)


@dataclass(frozen=True, eq=False)
class BinaryPolicyTable:
    """Thresholds on P(y = 1) chosen on one split (validation), judged on the held-out eval
    split (test).

    ``rows``: flag nothing, flag everything, act on the argmax (0.5), the Bayes threshold
    ``l_fp / (l_fp + l_fn)`` and the threshold chosen on validation (``choice``, with its
    counts there and the Bayes threshold's cost there). ``n`` counts the cases the threshold
    was chosen on, ``n_eval`` those it is reported on, ``eval_positives`` those of them with
    y = 1. With sample weights, ``weight`` and ``eval_weight`` are the two splits' total
    weights (None when unweighted) and every cost is per unit weight.
    """

    rows: tuple[BinaryPolicyRow, ...]
    l_false_positive: float
    l_false_negative: float
    bayes_threshold: float
    choice: BinaryThresholdChoice
    n: int
    n_eval: int
    eval_positives: int
    weight: float | None = None
    eval_weight: float | None = None

    def row(self, key: str) -> BinaryPolicyRow:
        """The row with this key: flag_none, flag_all, argmax, bayes or chosen."""
        for r in self.rows:
            if r.key == key:
                return r
        raise KeyError(f"no policy {key!r}; the table has {', '.join(r.key for r in self.rows)}")

    def to_dict(self) -> dict[str, Any]:
        return {
            "l_false_positive": self.l_false_positive,
            "l_false_negative": self.l_false_negative,
            "bayes_threshold": self.bayes_threshold,
            "n": self.n,
            "n_eval": self.n_eval,
            "eval_positives": self.eval_positives,
            **(
                {}
                if self.weight is None and self.eval_weight is None
                else {"weight": self.weight, "eval_weight": self.eval_weight}
            ),
            "rows": [r.to_dict() for r in self.rows],
            "choice": self.choice.to_dict(),
        }

    def header(self) -> str:
        return (
            f"binary threshold on P(y = 1): chosen on {self.n} validation cases, "
            f"reported on {self.n_eval} test cases ({self.eval_positives} with y = 1); a false "
            f"positive costs {self.l_false_positive:g}, a false negative "
            f"{self.l_false_negative:g} (Bayes threshold {threshold_text(self.bayes_threshold)})"
        )

    def table_rows(self) -> list[tuple[str, str, str, str, str, str, str]]:
        """Cells of each row: policy, threshold, flagged, false negatives, false positives,
        test cost, validation cost."""
        return [
            (
                r.policy,
                threshold_text(r.threshold),
                str(r.n_flagged),
                str(r.false_negatives),
                str(r.false_positives),
                f"{r.cost:.4f}",
                f"{r.choice_cost:.4f}",
            )
            for r in self.rows
        ]

    def notes(self) -> list[str]:
        c = self.choice
        gap = "flags nothing" if math.isinf(c.threshold) else f"gap {c.gap:+.4f} to Bayes"
        return [
            f"chosen on validation: flag when P(y = 1) >= "
            f"{threshold_text(c.threshold, above='above every probability')} at {c.cost:.4f} "
            f"per case there, where the Bayes threshold costs {c.bayes_cost:.4f} ({gap}; a gap "
            "measures miscalibration where the decision is made)."
        ]

    def verdict(self) -> str:
        """One line: the chosen threshold and what it costs on test, against the Bayes one."""
        chosen, bayes = self.row("chosen"), self.row("bayes")
        return (
            f"flag when P(y = 1) >= {threshold_text(chosen.threshold)} (chosen on "
            f"{self.n} cases): cost {chosen.cost:.4f} per case on the other "
            f"{self.n_eval}, {count_text(chosen.false_negatives, 'false negative')} and "
            f"{count_text(chosen.false_positives, 'false positive')}; the Bayes threshold "
            f"{threshold_text(bayes.threshold)} costs {bayes.cost:.4f}."
        )

    def _repr_html_(self) -> str:
        """What a notebook shows: the HTML report's section for this result."""
        return _display.html(self)

    def __str__(self) -> str:
        head = (
            "policy",
            "threshold",
            "flagged",
            "false neg.",
            "false pos.",
            "cost/case",
            "val. cost",
        )
        cells = [head, *self.table_rows()]
        widths = [max(len(row[j]) for row in cells) for j in range(len(head))]
        lines = [self.header()]
        for row in cells:
            first = row[0].ljust(widths[0])
            rest = "  ".join(cell.rjust(w) for cell, w in zip(row[1:], widths[1:], strict=True))
            lines.append(f"{first}  {rest}")
        lines.extend(self.notes())
        return "\n".join(lines)


def binary_policy_table(
    probs: Any,
    labels: Any,
    eval_probs: Any,
    eval_labels: Any,
    *,
    l_false_positive: float,
    l_false_negative: float,
    from_logits: bool = False,
    sample_weight: Any = None,
    eval_sample_weight: Any = None,
) -> BinaryPolicyTable:
    """Thresholds on P(y = 1) chosen on one split (validation), each rule's cost per case
    reported on the held-out eval split (test).

    Five rules "flag when P(y = 1) >= t": flag nothing, flag everything, the argmax (t = 0.5),
    the Bayes threshold ``l_fp / (l_fp + l_fn)`` (:func:`bayes_threshold`, right when P is
    calibrated) and the threshold that minimised the validation cost
    (:func:`choose_binary_threshold`). The eval labels choose nothing.

    Parameters
    ----------
    probs, labels : arrays
        The split the threshold is chosen on: P(y = 1) (1-D, or (N, 2) with P(y = 1) second;
        logits with ``from_logits=True``) and the 0/1 labels.
    eval_probs, eval_labels : arrays
        The held-out split every rule is reported on.
    l_false_positive, l_false_negative : float
        Positive costs of flagging a case with y = 0 and of missing one with y = 1.
    sample_weight, eval_sample_weight : arrays, keyword only
        Finite, non-negative weights of the two splits (either, both or neither): costs per
        unit weight, as :func:`choose_binary_threshold`.

    Examples
    --------
    >>> import numpy as np, calibkit as ck
    >>> rng = np.random.default_rng(0)
    >>> p = rng.uniform(0, 1, 4000); y = (rng.random(4000) < p).astype(int)
    >>> t = ck.binary_policy_table(p[:2000], y[:2000], p[2000:], y[2000:],
    ...                            l_false_positive=1, l_false_negative=9)
    >>> t.bayes_threshold, t.row("bayes").cost < t.row("argmax").cost
    (0.1, True)
    """
    where = "binary_policy_table"
    l_fp, l_fn = binary_costs(
        l_false_positive=l_false_positive, l_false_negative=l_false_negative, where=where
    )
    chosen_on = binary_inputs(
        probs,
        labels,
        from_logits=from_logits,
        where=f"{where} (validation)",
        names=("probs", "labels"),
    )
    held_out = binary_inputs(
        eval_probs,
        eval_labels,
        from_logits=from_logits,
        where=f"{where} (test)",
        names=("eval_probs", "eval_labels"),
    )
    weights = (
        v.sample_weight(sample_weight, n=chosen_on[0].size, where=f"{where} (validation)"),
        v.sample_weight(
            eval_sample_weight,
            n=held_out[0].size,
            where=f"{where} (test)",
            name="eval_sample_weight",
        ),
    )
    return binary_table_of(
        chosen_on, held_out, l_false_positive=l_fp, l_false_negative=l_fn, weights=weights
    )


def binary_table_of(
    chosen_on: tuple[np.ndarray, np.ndarray],
    held_out: tuple[np.ndarray, np.ndarray],
    *,
    l_false_positive: float,
    l_false_negative: float,
    weights: tuple[np.ndarray | None, np.ndarray | None] = (None, None),
) -> BinaryPolicyTable:
    """:func:`binary_policy_table` of checked splits (the one the threshold is chosen on, the
    held-out one it is reported on), costs and weights (None: every row counts once)."""
    costs = {"l_false_positive": l_false_positive, "l_false_negative": l_false_negative}
    choice = choose_on(chosen_on[0], chosen_on[1], **costs, weight=weights[0])
    bayes = l_false_positive / (l_false_positive + l_false_negative)
    rules = (
        ("flag_none", "flag nothing", math.inf),
        ("flag_all", "flag everything", 0.0),
        ("argmax", "argmax (P >= 0.5)", 0.5),
        ("bayes", "Bayes threshold (calibrated P)", bayes),
        ("chosen", "chosen on validation", choice.threshold),
    )
    rows = []
    for key, name, t in rules:
        on_eval = confusion_at(held_out[0], held_out[1], t, weights[1])
        rows.append(
            BinaryPolicyRow(
                key=key,
                policy=name,
                threshold=t,
                true_positives=on_eval.true_positives,
                false_positives=on_eval.false_positives,
                true_negatives=on_eval.true_negatives,
                false_negatives=on_eval.false_negatives,
                cost=cost_of(on_eval, **costs),
                choice_cost=cost_of(
                    confusion_at(chosen_on[0], chosen_on[1], t, weights[0]), **costs
                ),
                **on_eval.weighted(),
            )
        )
    return BinaryPolicyTable(
        rows=tuple(rows),
        l_false_positive=l_false_positive,
        l_false_negative=l_false_negative,
        bayes_threshold=bayes,
        choice=choice,
        n=int(chosen_on[0].size),
        n_eval=int(held_out[0].size),
        eval_positives=int(np.count_nonzero(held_out[1] == 1)),
        weight=None if weights[0] is None else float(weights[0].sum()),
        eval_weight=None if weights[1] is None else float(weights[1].sum()),
    )
