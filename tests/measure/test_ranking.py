"""The exact AUC: integer pair counts against brute force, ties, -0.0, and scikit-learn."""

from __future__ import annotations

import numpy as np
import pytest

import calibkit as ck
from calibkit.measure.ranking import pair_counts


def _brute(s: np.ndarray, y: np.ndarray) -> int:
    pos, neg = s[y], s[~y]
    diff = pos[:, None] - neg[None, :]
    return int(2 * np.sum(diff > 0) + np.sum(diff == 0))


@pytest.mark.parametrize("seed", range(12))
def test_pair_counts_equal_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 400))
    s = np.round(rng.normal(0, 1, n), int(rng.integers(0, 3)))  # many ties
    y = rng.random(n) < rng.uniform(0.1, 0.9)
    if y.all() or not y.any():
        y[0] = not y[0]
    twice_u, n_pos, n_neg = pair_counts(s, y)
    assert (twice_u, n_pos, n_neg) == (_brute(s, y), int(y.sum()), int((~y).sum()))


def test_all_equal_scores_are_one_half_and_minus_zero_ties_zero() -> None:
    assert ck.auc([0.3] * 5, [0, 1, 0, 1, 1]) == 0.5
    assert ck.auc([-0.0, 0.0, 1.0], [1, 0, 1]) == 0.75  # -0.0 == 0.0: a tie, one half
    assert ck.auc(np.array([1.0, 2.0], dtype=np.float32), [0, 1]) == 1.0


def test_one_class_is_refused() -> None:
    with pytest.raises(ck.InputError, match="every label is positive"):
        ck.auc([0.1, 0.2], [1, 1])


def test_equals_scikit_learn_on_large_data() -> None:
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(7)
    s = rng.uniform(0, 1, 200_000).round(4)
    y = rng.random(s.size) < s
    assert ck.auc(s, y) == pytest.approx(metrics.roc_auc_score(y, s), abs=1e-15)
