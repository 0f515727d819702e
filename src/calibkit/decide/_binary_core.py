"""The pieces of a binary model's threshold on P(y = 1) that the choice and the table share:
the two error costs checked, the Bayes threshold (Elkan 2001), the confusion counts (and their
weights) of a threshold and their cost per case, and the checked P(y = 1) and labels."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _validate as v

__all__ = [
    "WEIGHT_FIELDS",
    "Confusion",
    "bayes_threshold",
    "binary_costs",
    "binary_inputs",
    "confusion_at",
    "cost_of",
    "count_text",
]


def binary_costs(
    *, l_false_positive: Any, l_false_negative: Any, where: str
) -> tuple[float, float]:
    """Both error costs: finite and positive."""
    for name, value in (
        ("l_false_positive", l_false_positive),
        ("l_false_negative", l_false_negative),
    ):
        if value is None:
            raise v.InputError(
                f"{where}: {name} is required: the cost of a false positive (flagging a case "
                "whose label is 0) and of a false negative (missing one whose label is 1), e.g. "
                "l_false_positive=1, l_false_negative=20."
            )
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float, np.integer, np.floating))
            or not (math.isfinite(float(value)) and float(value) > 0)
        ):
            raise v.InputError(
                f"{where}: {name} must be a positive number, got {value!r}; with a free error "
                "the best threshold is 0 or above every probability, and needs no data."
            )
    return float(l_false_positive), float(l_false_negative)


def bayes_threshold(*, l_false_positive: float, l_false_negative: float) -> float:
    """The Bayes threshold on a calibrated P(y = 1): flag when ``p >= l_fp / (l_fp + l_fn)``.

    Flagging costs ``(1 - p) l_false_positive`` in expectation and not flagging ``p
    l_false_negative``; they are equal at the threshold (Elkan, "The Foundations of
    Cost-Sensitive Learning", IJCAI 2001). Only as good as the calibration of p: check it on
    data with :func:`choose_binary_threshold`.

    Examples
    --------
    A missed malignancy costs 20 biopsies:

    >>> import calibkit as ck
    >>> round(ck.bayes_threshold(l_false_positive=1, l_false_negative=20), 4)
    0.0476
    >>> ck.bayes_threshold(l_false_positive=1, l_false_negative=1)
    0.5
    """
    fp, fn = binary_costs(
        l_false_positive=l_false_positive,
        l_false_negative=l_false_negative,
        where="bayes_threshold",
    )
    return fp / (fp + fn)


#: The weighted counterparts of the four confusion counts, as results name them.
WEIGHT_FIELDS = (
    "true_positive_weight",
    "false_positive_weight",
    "true_negative_weight",
    "false_negative_weight",
)


@dataclass(frozen=True)
class Confusion:
    """Counts of flagging when P(y = 1) >= threshold; with sample weights, ``weights`` holds
    the weights of the same four cells (tp, fp, tn, fn)."""

    true_positives: int
    false_positives: int
    true_negatives: int
    false_negatives: int
    weights: tuple[float, float, float, float] | None = None

    @property
    def n_flagged(self) -> int:
        return self.true_positives + self.false_positives

    def weighted(self) -> dict[str, float]:
        """The weights of the four cells under their result names (empty when unweighted)."""
        return {} if self.weights is None else dict(zip(WEIGHT_FIELDS, self.weights, strict=True))


def confusion_at(
    p: np.ndarray, y: np.ndarray, threshold: float, weight: np.ndarray | None = None
) -> Confusion:
    """The confusion counts on checked arrays (y: 0/1 or bool), and their weights."""
    flag = p >= threshold
    pos = y == 1
    tp = int(np.count_nonzero(flag & pos))
    fp = int(np.count_nonzero(flag & ~pos))
    fn = int(np.count_nonzero(pos)) - tp
    if weight is None:
        return Confusion(tp, fp, int(p.size) - tp - fp - fn, fn)
    cells = (flag & pos, flag & ~pos, ~flag & ~pos, ~flag & pos)
    w = tuple(float(weight[c].sum()) for c in cells)
    return Confusion(tp, fp, int(p.size) - tp - fp - fn, fn, weights=(w[0], w[1], w[2], w[3]))


def cost_of(c: Confusion, *, l_false_positive: float, l_false_negative: float) -> float:
    """Cost per case (per unit weight when weighted) of a confusion."""
    if c.weights is not None:
        tp, fp, tn, fn = c.weights
        return (fp * l_false_positive + fn * l_false_negative) / (tp + fp + tn + fn)
    n = c.true_positives + c.false_positives + c.true_negatives + c.false_negatives
    return (c.false_positives * l_false_positive + c.false_negatives * l_false_negative) / n


def count_text(k: int, noun: str) -> str:
    return f"{k} {noun}{'' if k == 1 else 's'}"


def binary_inputs(
    probs: Any, labels: Any, *, from_logits: bool, where: str, names: tuple[str, str]
) -> tuple[np.ndarray, np.ndarray]:
    """Checked P(y = 1) (float64) and 0/1 labels: 1-D P(y = 1), column 1 of (N, 2), or logits."""
    from ..forecasts import reduce_binary

    if not isinstance(from_logits, bool):
        raise v.InputError(f"{where}: from_logits must be True or False, got {from_logits!r}.")
    if probs is None or labels is None:
        missing = names[0] if probs is None else names[1]
        raise v.InputError(
            f"{where}: {missing} is required: the model's P(y = 1) (or logits with "
            "from_logits=True) and the 0/1 labels."
        )
    f = reduce_binary(probs, labels, from_logits=from_logits, where=where)
    return np.asarray(f.confidence, dtype=np.float64), f.outcome.astype(np.int8)
