"""Performance of target rows from their per-row estimates (probabilities or 0/1 draws).

With probabilities every count is its expectation and every ratio the ratio of expectations:
the expected confusion matrix of a two-class model is TP = sum over predicted-1 rows of q_i,
FP = sum over predicted-1 rows of (1 - q_i), FN = sum over predicted-0 rows of q_i, with q_i the
calibrated P(label = 1). The expected ROC AUC is the probability-weighted pair count

    AUC = sum_{i != j} q_i (1 - q_j) ([s_i > s_j] + [s_i = s_j] / 2) / sum_{i != j} q_i (1 - q_j),

over the model's scores s (its P(label = 1)); with 0/1 values of q it is the usual AUC
(Mann-Whitney, ties one half).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["NAMES", "Policy", "Values", "binary_metrics", "expected_auc", "threshold_metrics"]

#: The estimates by name (None where undefined).
Values = dict[str, float | None]

#: The estimated quantities, in the order results list them.
NAMES = (
    "accuracy",
    "coverage",
    "selective_risk",
    "cost",
    "precision",
    "recall",
    "f1",
    "roc_auc",
)


@dataclass(frozen=True)
class Policy:
    """Act when the model's top-label confidence >= threshold, defer otherwise."""

    threshold: float
    l_wrong: float | None
    l_defer: float | None


def _ratio(num: float, den: float) -> float | None:
    return None if den <= 0 else num / den


def threshold_metrics(
    n: int, n_act: int, right_acts: float, policy: Policy
) -> dict[str, float | None]:
    """Coverage, selective risk (the error among the ``n_act`` rows acted on, of which
    ``right_acts`` are right) and mean cost per row of the act/defer policy: l_wrong for each
    wrong act, l_defer for each deferral."""
    wrong_acts = n_act - right_acts
    out: dict[str, float | None] = {
        "coverage": n_act / n,
        "selective_risk": _ratio(wrong_acts, n_act),
        "cost": None,
    }
    if policy.l_wrong is not None and policy.l_defer is not None:
        out["cost"] = (policy.l_wrong * wrong_acts + policy.l_defer * (n - n_act)) / n
    return out


def binary_metrics(
    event: np.ndarray, predicted: np.ndarray, score: np.ndarray
) -> dict[str, float | None]:
    """Precision, recall, F1 of the predicted class 1 and ROC AUC of the score, from P(label = 1)
    per row (or 0/1 labels)."""
    pos = predicted == 1
    tp = float(event[pos].sum())
    fp = float(np.count_nonzero(pos)) - tp
    fn = float(event[~pos].sum())
    return {
        "precision": _ratio(tp, tp + fp),
        "recall": _ratio(tp, tp + fn),
        "f1": _ratio(2 * tp, 2 * tp + fp + fn),
        "roc_auc": expected_auc(score, event),
    }


def expected_auc(score: np.ndarray, q: np.ndarray) -> float | None:
    """The probability-weighted pair count above (one sort; None without both classes' mass).

    Examples
    --------
    >>> import numpy as np
    >>> expected_auc(np.array([0.2, 0.6, 0.9]), np.array([0.0, 1.0, 1.0]))
    1.0
    >>> round(expected_auc(np.array([0.2, 0.9]), np.array([0.5, 0.5])), 4)
    0.5
    """
    distinct, group = np.unique(score, return_inverse=True)
    pos = np.bincount(group, weights=q, minlength=distinct.shape[0])
    neg = np.bincount(group, weights=1.0 - q, minlength=distinct.shape[0])
    own = float(np.sum(q * (1.0 - q)))  # the pairs (i, i), left out of both sums
    neg_below = np.cumsum(neg) - neg
    ordered = float(pos @ neg_below)
    tied = 0.5 * (float(pos @ neg) - own)
    total = float(pos.sum() * neg.sum()) - own
    return None if total <= 0 else (ordered + tied) / total
