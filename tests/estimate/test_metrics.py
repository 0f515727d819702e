"""The expected confusion matrix and the probability-weighted AUC, against sums written out and
against scikit-learn."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from calibkit.estimate.metrics import Policy, binary_metrics, expected_auc, threshold_metrics


def _brute_auc(score, q):
    num = den = 0.0
    for i, j in itertools.permutations(range(len(score)), 2):
        w = q[i] * (1 - q[j])
        num += w * ((score[i] > score[j]) + 0.5 * (score[i] == score[j]))
        den += w
    return num / den


def test_expected_auc_is_the_weighted_pair_count():
    rng = np.random.default_rng(0)
    score = rng.choice([0.1, 0.3, 0.5, 0.7], size=25)  # many ties
    q = rng.uniform(size=25)
    assert expected_auc(score, q) == pytest.approx(_brute_auc(score, q), rel=1e-12)


def test_expected_auc_of_known_labels_is_the_auc():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng(1)
    score = np.round(rng.uniform(size=300), 2)
    y = rng.integers(0, 2, size=300)
    assert expected_auc(score, y.astype(float)) == pytest.approx(
        metrics.roc_auc_score(y, score), rel=1e-12
    )


def test_expected_auc_without_both_classes_is_none():
    assert expected_auc(np.array([0.2, 0.8]), np.array([1.0, 1.0])) is None


def test_expected_confusion_matrix_by_hand():
    # q = P(label 1); predicted 1, 0, 1: TP = 0.9 + 0.6, FP = 0.1 + 0.4, FN = 0.2
    got = binary_metrics(np.array([0.9, 0.2, 0.6]), np.array([1, 0, 1]), np.array([0.8, 0.3, 0.6]))
    assert got["precision"] == pytest.approx(1.5 / 2.0)
    assert got["recall"] == pytest.approx(1.5 / 1.7)
    assert got["f1"] == pytest.approx(3.0 / (3.0 + 0.5 + 0.2))


def test_threshold_metrics_by_hand():
    # 10 rows, 4 acted on of which 3 right: coverage 0.4, selective risk 1/4,
    # cost (2 * 1 wrong act + 0.5 * 6 deferrals) / 10
    got = threshold_metrics(10, 4, 3.0, Policy(0.8, 2.0, 0.5))
    assert got == {"coverage": 0.4, "selective_risk": 0.25, "cost": pytest.approx(0.5)}
    assert threshold_metrics(10, 0, 0.0, Policy(0.99, None, None))["selective_risk"] is None
