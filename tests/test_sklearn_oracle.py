"""scikit-learn as an independent oracle for the reliability table, Brier, log loss and AUC.

Every test draws random data (several seeds and sizes) and compares calibkit's number with the
one scikit-learn computes by its own code path.
"""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np
import pytest

import calibkit as ck

sklearn_calibration = pytest.importorskip("sklearn.calibration")
sklearn_metrics = pytest.importorskip("sklearn.metrics")
calibration_curve = sklearn_calibration.calibration_curve
brier_score_loss = sklearn_metrics.brier_score_loss
log_loss = sklearn_metrics.log_loss
roc_auc_score = sklearn_metrics.roc_auc_score

SEEDS = range(4)
SIZES = [7, 50, 333, 2000]
N_BINS = [1, 2, 3, 4, 5, 7, 10, 15, 20, 23]


def _data(seed: int, n: int, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Confidences and outcomes holding both outcomes.

    ``grid``: values k/20 (k = 0..20), so many ties and many values exactly on uniform edges
    (for n_bins dividing 20) and on 0 and 1. ``grid_no_zero``: k = 1..20. ``continuous``:
    uniform floats plus a few exact 0, 1 and 0.5.
    """
    rng = np.random.default_rng([seed, n, len(kind)])
    if kind == "grid":
        p = rng.integers(0, 21, n) / 20
    elif kind == "grid_no_zero":
        p = rng.integers(1, 21, n) / 20
    else:
        p = rng.random(n)
        p[: min(3, n)] = [0.0, 1.0, 0.5][: min(3, n)]
    y = (rng.random(n) < p).astype(np.int64)
    y[0], y[-1] = 0, 1  # both classes
    return p, y


def _assert_matches_sklearn(p: np.ndarray, y: np.ndarray, n_bins: int, strategy: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # quantile ties: both libraries may warn
        prob_true, prob_pred = calibration_curve(y, p, n_bins=n_bins, strategy=strategy)
        table = ck.reliability_bins(p, y, n_bins=n_bins, strategy=strategy)
    nonempty = table.count > 0
    assert int(nonempty.sum()) == len(prob_true), (table.edges, table.count)
    np.testing.assert_allclose(table.acc[nonempty], prob_true, rtol=1e-12, atol=0)
    np.testing.assert_allclose(table.conf[nonempty], prob_pred, rtol=1e-12, atol=0)
    assert table.count.sum() == len(p)
    # the rows carry the same numbers
    rows = [r for r in table.rows if r.count > 0]
    np.testing.assert_allclose([r.acc for r in rows], prob_true, rtol=1e-12, atol=0)
    np.testing.assert_allclose([r.conf for r in rows], prob_pred, rtol=1e-12, atol=0)


# --------------------------------------------------------------------------- reliability table


@pytest.mark.parametrize("kind", ["grid", "continuous"])
@pytest.mark.parametrize("n_bins", N_BINS)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("seed", SEEDS)
def test_uniform_bins_match_calibration_curve(seed, n, n_bins, kind):
    p, y = _data(seed, n, kind)
    _assert_matches_sklearn(p, y, n_bins, "uniform")


def test_uniform_edge_convention_pinned_by_values_on_edges():
    """Values exactly on every edge of 10 uniform bins: right-closed, as sklearn's searchsorted."""
    edges = np.linspace(0.0, 1.0, 11)
    p = np.repeat(edges, 3)
    y = np.tile([0, 1, 1], edges.size)
    _assert_matches_sklearn(p, y, 10, "uniform")
    table = ck.reliability_bins(p, y, n_bins=10)
    # 0 and 0.1 share the first bin [0, 0.1]; every later edge value closes its lower bin
    assert table.count.tolist() == [6] + [3] * 9


def _coprime_size(n: int, n_bins: int) -> int:
    """A size whose quantile positions (n - 1) k / M are never whole numbers (0 < k < M).

    At a whole position, np.quantile(k / M) and sklearn's np.percentile(100 * linspace) can
    round to either side of a data point (1 ulp), a rounding difference, not a convention one.
    """
    while math.gcd(n - 1, n_bins) != 1:
        n += 1
    return n


@pytest.mark.parametrize("kind", ["grid_no_zero", "continuous"])
@pytest.mark.parametrize("n_bins", N_BINS)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("seed", SEEDS)
def test_quantile_bins_match_calibration_curve(seed, n, n_bins, kind):
    p, y = _data(seed, _coprime_size(n, n_bins), kind)
    _assert_matches_sklearn(p, y, n_bins, "quantile")


def test_quantile_bins_with_ties_at_one_match_calibration_curve():
    # 40% of the values are exactly 1.0: the top quantile edges coincide with the outer edge 1
    rng = np.random.default_rng(7)
    p = np.r_[np.ones(40), rng.integers(1, 20, 61) / 20]
    y = (rng.random(p.size) < p).astype(int)
    y[0] = 0
    _assert_matches_sklearn(p, y, 10, "quantile")


def test_quantile_bins_keep_exact_zeros_as_their_own_group_like_sklearn():
    """When more than 1/M of the confidences are exactly 0, the first quantile edge is 0.

    scikit-learn then groups the exact zeros alone (searchsorted on inner edges [0, ...]);
    calibkit's quantile edges drop the inner edge 0 as a duplicate of the outer edge 0 and
    pool the zeros with the next bin (0, e2].
    """
    rng = np.random.default_rng(0)
    n = _coprime_size(201, 10)
    p = rng.integers(1, 21, n) / 20
    p[: n // 5] = 0.0  # 20% exact zeros, more than 1/10 of the data
    rng.shuffle(p)
    y = (rng.random(n) < p).astype(int)
    y[0], y[-1] = 0, 1
    _assert_matches_sklearn(p, y, 10, "quantile")


# --------------------------------------------------------------------------- Brier


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("seed", SEEDS)
def test_binary_brier_equals_brier_score_loss(seed, n):
    for kind in ("grid", "continuous"):
        p, y = _data(seed, n, kind)
        np.testing.assert_allclose(ck.brier(p, y), brier_score_loss(y, p), rtol=1e-12, atol=0)


def _multiclass(seed: int, n: int, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng([seed, n, n_classes])
    # bounded away from 0 so that sklearn's clipping of log loss at float eps never acts
    probs = 0.9 * rng.dirichlet(np.ones(n_classes), n) + 0.1 / n_classes
    labels = rng.integers(0, n_classes, n)
    labels[:n_classes] = np.arange(n_classes)  # every class present
    return probs, labels


def _brier_sum_over_classes(probs: np.ndarray, labels: np.ndarray) -> float:
    onehot = np.eye(probs.shape[1])[labels]
    return float(np.mean(np.sum((probs - onehot) ** 2, axis=1)))


_HAS_SCALE_BY_HALF = "scale_by_half" in inspect.signature(brier_score_loss).parameters


@pytest.mark.parametrize("n_classes", [2, 3, 5, 10])
@pytest.mark.parametrize("n", [10, 333, 2000])
@pytest.mark.parametrize("seed", SEEDS)
def test_multiclass_brier_is_the_sum_over_classes(seed, n, n_classes):
    probs, labels = _multiclass(seed, n, n_classes)
    got = ck.brier(probs, labels)
    np.testing.assert_allclose(got, _brier_sum_over_classes(probs, labels), rtol=1e-12)
    assert 0.0 <= got <= 2.0
    if n_classes == 2:  # (N, 2) input: twice the binary score of column 1
        np.testing.assert_allclose(got, 2.0 * ck.brier(probs[:, 1], labels), rtol=1e-12)
    if _HAS_SCALE_BY_HALF:
        classes = list(range(n_classes))
        # unscaled sklearn multiclass Brier is the same sum over classes (0 to 2) ...
        np.testing.assert_allclose(
            got, brier_score_loss(labels, probs, labels=classes, scale_by_half=False), rtol=1e-12
        )
        # ... and its default ("auto") halves it for two classes only
        default = brier_score_loss(labels, probs, labels=classes)
        np.testing.assert_allclose(got, default * (2.0 if n_classes == 2 else 1.0), rtol=1e-12)


# --------------------------------------------------------------------------- log loss


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("seed", SEEDS)
def test_binary_nll_equals_log_loss(seed, n):
    rng = np.random.default_rng([seed, n])
    p = rng.uniform(0.01, 0.99, n)
    y = (rng.random(n) < p).astype(int)
    y[0], y[-1] = 0, 1
    np.testing.assert_allclose(ck.nll(p, y), log_loss(y, p), rtol=1e-12)
    # the same forecast as an (N, 2) matrix
    np.testing.assert_allclose(ck.nll(np.c_[1 - p, p], y), log_loss(y, p), rtol=1e-12)


@pytest.mark.parametrize("n_classes", [2, 3, 5, 10])
@pytest.mark.parametrize("n", [10, 333, 2000])
@pytest.mark.parametrize("seed", SEEDS)
def test_multiclass_nll_equals_log_loss(seed, n, n_classes):
    probs, labels = _multiclass(seed, n, n_classes)
    expected = log_loss(labels, probs, labels=list(range(n_classes)))
    np.testing.assert_allclose(ck.nll(probs, labels), expected, rtol=1e-12)


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("n_classes", [2, 3, 7])
@pytest.mark.parametrize("n", [10, 333, 2000])
@pytest.mark.parametrize("seed", SEEDS)
def test_nll_from_logits_equals_log_loss_of_softmax(seed, n, n_classes):
    rng = np.random.default_rng([seed, n, n_classes, 1])
    logits = rng.normal(0.0, 3.0, (n, n_classes))  # smallest probability ~1e-12: not tiny
    labels = rng.integers(0, n_classes, n)
    labels[:n_classes] = np.arange(n_classes)
    probs = _softmax(logits)
    assert probs.min() > 1e-14
    expected = log_loss(labels, probs, labels=list(range(n_classes)))
    np.testing.assert_allclose(ck.nll(logits, labels, from_logits=True), expected, rtol=1e-12)
    # float32 logits: the log-softmax is taken in float64 of the same values
    z32 = logits.astype(np.float32)
    expected32 = log_loss(labels, _softmax(z32.astype(np.float64)), labels=list(range(n_classes)))
    np.testing.assert_allclose(ck.nll(z32, labels, from_logits=True), expected32, rtol=1e-12)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("seed", SEEDS)
def test_binary_nll_from_scores_equals_log_loss_of_sigmoid(seed, n):
    rng = np.random.default_rng([seed, n, 2])
    s = rng.normal(0.0, 4.0, n)
    y = rng.integers(0, 2, n)
    y[0], y[-1] = 0, 1
    p = 1.0 / (1.0 + np.exp(-s))
    np.testing.assert_allclose(ck.nll(s, y, from_logits=True), log_loss(y, p), rtol=1e-12)


# --------------------------------------------------------------------------- AUC


@pytest.mark.parametrize("kind", ["grid", "continuous", "coarse"])
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("seed", SEEDS)
def test_auc_equals_roc_auc_score(seed, n, kind):
    rng = np.random.default_rng([seed, n, len(kind), 3])
    if kind == "coarse":  # heavy ties: three distinct scores, ties across the classes
        s = rng.integers(0, 3, n).astype(float)
    elif kind == "grid":
        s = rng.integers(0, 21, n) / 20
    else:
        s = rng.normal(size=n)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-s))).astype(int)
    y[0], y[-1] = 0, 1
    np.testing.assert_allclose(ck.auc(s, y), roc_auc_score(y, s), rtol=1e-12, atol=1e-15)


def test_auc_all_tied_is_one_half():
    assert (
        ck.auc([0.3] * 6, [0, 1, 0, 1, 1, 0]) == 0.5 == roc_auc_score([0, 1, 0, 1, 1, 0], [0.3] * 6)
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_accuracy_equals_accuracy_score(seed):
    probs, labels = _multiclass(seed, 500, 4)
    expected = sklearn_metrics.accuracy_score(labels, probs.argmax(axis=1))
    assert ck.accuracy(probs, labels) == pytest.approx(expected, rel=1e-15)
